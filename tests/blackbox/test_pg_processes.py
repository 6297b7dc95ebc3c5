"""Several jobqd processes on one PostgreSQL database (API.md "Storage selection"): three
processes with producers and workers spread over them claim every job exactly once and
complete it once; one of them killed with SIGKILL mid-load loses nothing acknowledged, its
clients carry on elsewhere and the sweeper role moves to a survivor; PostgreSQL restarted
mid-load makes writes answer 503 `unavailable` and /readyz not ready while it is down, and
every process recovers by itself without losing an acknowledged job.

Producers send an idempotency_key with every job, so a retry after an unanswered request
(a killed process, an ambiguous 503) never creates a second job: every job in the database
is an acknowledged one. Every loop and wait is bounded. The restart test stops the whole test
cluster: like every pg_stop() test it must not share the cluster with tests running at once.
"""
import http.client
import os
import re
import threading
import time
import unittest

from harness import Server, backend, pg_start, pg_stop, wait_until

Q = "load"
LEASE = 4  # seconds: workers' leases under faults; a claim lost with a process ends this fast
ARGS = ["--sweep-interval", "1", "--backoff-base", "0", "--log-level", "debug"]
CALL_DEADLINE = 60.0  # seconds one logical request may keep retrying (503s, dead processes)
CLIENT_TIMEOUT = 15.0  # no single answer may take longer (wait_seconds 1 included)
CONN_ERRORS = (OSError, AssertionError, http.client.HTTPException)  # Client's failures
SWEPT_RE = re.compile(r"sweep: promoted \d+, requeued [1-9]")


class Load:
    """Producers (one per process, `per_producer` jobs each, paced) and workers (two per
    process) over `servers`. A thread keeps to its process until that one is marked down,
    then moves to the next live one. Everything seen is recorded under `lock`."""

    def __init__(self, servers, per_producer, pace=0.004, lease=LEASE):
        self.servers = servers
        self.per_producer = per_producer
        self.pace = pace
        self.lease = lease
        self.down = set()  # indices of processes we killed
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.enough = threading.Event()  # producers end early (before per_producer) when set
        self.acked = {}  # idempotency key -> job id (201, or 200 for a retried key)
        self.claims = []  # dicts: id, token, fencing, claimed_at, lease_expires_at
        self.completes = []  # (job id, token, status, error code)
        self.bad = []  # answers or failures the contract does not allow
        self.conn_errors = []  # (server index, path, repr): connection failures
        self.unavailable = []  # (time.monotonic(), server index, path): 503 unavailable
        self.moved = []  # (thread name, from, to)
        self.served_after_move = {}  # thread name -> requests answered after its first move
        self.producers_done = 0
        self.threads = []

    def start(self):
        n = len(self.servers)
        for i in range(n):
            self.threads.append(threading.Thread(target=self._guard, args=(self._producer, i),
                                                 name="p%d" % i))
            for k in range(2):
                self.threads.append(threading.Thread(target=self._guard, args=(self._worker, i),
                                                     name="w%d.%d" % (i, k)))
        for t in self.threads:
            t.daemon = True
            t.start()

    def finish(self, testcase):
        self.stop.set()
        for t in self.threads:
            t.join(CALL_DEADLINE + CLIENT_TIMEOUT)
            testcase.assertFalse(t.is_alive(), "thread %s did not end" % t.name)

    def _guard(self, fn, srv):
        try:
            fn(srv)
        except Exception as e:  # a thread's surprise fails the test instead of hanging it
            with self.lock:
                self.bad.append((threading.current_thread().name, repr(e)))

    def wait_completed(self, timeout=60):
        """Wait (bounded) until every acknowledged job is completed, or something went wrong
        (bad); returns the acknowledged ids. Raises AssertionError naming the missing ones."""
        acked = set(self.acked.values())
        try:
            wait_until(lambda: acked <= self.completed_ids() or self.bad, timeout, 0.1,
                       what="every acknowledged job to be completed")
        except AssertionError as e:
            missing = sorted(acked - self.completed_ids())
            raise AssertionError("%s: %d never completed, e.g. %r"
                                 % (e, len(missing), missing[:10]))
        return acked

    def completed_ids(self):
        with self.lock:
            return {c[0] for c in self.completes if c[2] == 200}

    def call(self, state, method, path, body=None, stop_aware=False):
        """One logical request from a thread (state: dict with srv and client): retries
        503 `unavailable` on the same process and connection failures on the next live one,
        until CALL_DEADLINE. Returns the Response, or None (recorded in bad, or stopping)."""
        deadline = time.monotonic() + CALL_DEADLINE
        while time.monotonic() < deadline:
            if stop_aware and self.stop.is_set():
                return None
            if state["srv"] in self.down:
                self._move(state)
            try:
                r = state["client"].request(method, path, body=body)
            except CONN_ERRORS as e:
                state["client"].close()
                with self.lock:
                    self.conn_errors.append((state["srv"], path, repr(e)))
                if state["srv"] not in self.down:
                    time.sleep(0.1)  # a live process failed us: recorded, then try again
                continue
            if state.get("moved"):
                name = threading.current_thread().name
                with self.lock:
                    self.served_after_move[name] = self.served_after_move.get(name, 0) + 1
            if r.status == 503:
                code = (r.json or {}).get("error", {}).get("code")
                with self.lock:
                    self.unavailable.append((time.monotonic(), state["srv"], path))
                    if code != "unavailable":
                        self.bad.append(("503 without code unavailable", path, r))
                time.sleep(0.1)
                continue
            if r.status >= 500:
                with self.lock:
                    self.bad.append((method, path, r))
                time.sleep(0.1)
                continue
            return r
        with self.lock:
            self.bad.append(("no answer within %.0fs" % CALL_DEADLINE, method, path))
        return None

    def _move(self, state):
        old = state["srv"]
        state["client"].close()
        for step in range(1, len(self.servers)):
            new = (old + step) % len(self.servers)
            if new not in self.down:
                state["srv"] = new
                state["client"] = self.servers[new].client(timeout=CLIENT_TIMEOUT)
                state["moved"] = True
                with self.lock:
                    self.moved.append((threading.current_thread().name, old, new))
                return
        raise AssertionError("no live process left")

    def _state(self, srv):
        return {"srv": srv, "client": self.servers[srv].client(timeout=CLIENT_TIMEOUT)}

    def _producer(self, srv):
        pno = srv
        state = self._state(srv)
        try:
            for i in range(self.per_producer):
                if self.enough.is_set():
                    return
                key = "p%d-%d" % (pno, i)
                body = {"queue": Q, "payload": {"p": pno, "i": i}, "idempotency_key": key}
                r = self.call(state, "POST", "/jobs", body)
                if r is None:
                    return
                if r.status not in (200, 201) or not isinstance(r.json, dict):
                    with self.lock:
                        self.bad.append(("enqueue", key, r))
                    return
                with self.lock:
                    self.acked[key] = r.json["id"]
                time.sleep(self.pace)
        finally:
            state["client"].close()
            with self.lock:
                self.producers_done += 1

    def _worker(self, srv):
        state = self._state(srv)
        name = threading.current_thread().name
        body = {"worker_id": name, "queue": Q, "max_jobs": 5, "lease_seconds": self.lease,
                "wait_seconds": 1}
        try:
            while not self.stop.is_set():
                r = self.call(state, "POST", "/claim", body, stop_aware=True)
                if r is None:
                    return
                if r.status != 200:
                    with self.lock:
                        self.bad.append(("claim", r))
                    time.sleep(0.1)
                    continue
                for j in r.json["jobs"]:
                    with self.lock:
                        self.claims.append({
                            "id": j["id"], "token": j["lease_token"],
                            "fencing": j["fencing_token"], "claimed_at": j["claimed_at"],
                            "lease_expires_at": j["lease_expires_at"]})
                    done = self.call(state, "POST", "/jobs/%d/complete" % j["id"],
                                     {"lease_token": j["lease_token"], "result": name})
                    if done is None:
                        continue
                    code = (done.json or {}).get("error", {}).get("code")
                    with self.lock:
                        self.completes.append((j["id"], j["lease_token"], done.status, code))
                        if not (done.status == 200 or (done.status == 409
                                                       and code == "lease_lost")):
                            self.bad.append(("complete", j["id"], done))
        finally:
            state["client"].close()


class ThreeProcesses(unittest.TestCase):
    def setUp(self):
        if backend() != "pg":
            self.skipTest("several processes share only a PostgreSQL database")
        self.s = []
        for i in range(3):
            srv = Server(ARGS, db=self.s[0].db if self.s else None)
            self.addCleanup(srv.cleanup)  # LIFO: the first one (owner of the db) goes last
            srv.start()
            self.s.append(srv)

    def status(self, srv, method, path, body=None):
        c = self.s[srv].client(timeout=CLIENT_TIMEOUT)
        try:
            return c.request(method, path, body=body)
        finally:
            c.close()

    def run_load(self, load, fault=None, at=0.3):
        """Start the load; once `at` of the jobs are acknowledged and some claimed, call
        fault(); then wait (bounded) until every acknowledged job is completed."""
        total = load.per_producer * len(self.s)
        load.start()
        self.addCleanup(load.stop.set)
        if fault is not None:
            wait_until(lambda: len(load.acked) >= at * total and load.claims, 30,
                       what="the load to be under way")
            fault()
        wait_until(lambda: load.producers_done == len(self.s) or load.bad, 90,
                   what="the producers to finish")
        self.assertEqual(load.bad, [])
        self.assertEqual(len(load.acked), total)
        load.wait_completed()
        load.finish(self)
        self.assertEqual(load.bad, [])

    def check_exactly_once(self, load, single_claims):
        acked = load.acked
        ids = set(acked.values())
        self.assertEqual(len(ids), len(acked), "two idempotency keys got one job")
        claims = {}
        for c in load.claims:
            claims.setdefault(c["id"], []).append(c)
        self.assertEqual(set(claims), ids, "claimed jobs are exactly the acknowledged ones")
        ok = {}
        for job_id, token, status, _ in load.completes:
            if status == 200:
                ok.setdefault(job_id, set()).add(token)
        for job_id in ids:
            seen = sorted(claims[job_id], key=lambda c: c["fencing"])
            if single_claims:
                self.assertEqual(len(seen), 1, "job %d claimed more than once: %r"
                                 % (job_id, seen))
            fences = [c["fencing"] for c in seen]
            self.assertEqual(len(set(fences)), len(fences), seen)
            for a, b in zip(seen, seen[1:]):  # a re-claim only once the earlier lease ended
                self.assertGreaterEqual(b["claimed_at"], a["lease_expires_at"],
                                        "job %d claimed twice at once: %r" % (job_id, seen))
            self.assertEqual(ok.get(job_id), {seen[-1]["token"]},
                             "job %d: not completed exactly once, by its last claim: %r"
                             % (job_id, seen))
        # The database holds exactly the acknowledged jobs, all succeeded.
        live = next(i for i in range(3) if i not in load.down)
        c = self.s[live].client()
        self.addCleanup(c.close)
        r = c.get("/jobs?queue=%s&status=succeeded&limit=1000" % Q)
        self.assertEqual(r.status, 200, r)
        self.assertIsNone(r.json["next_cursor"])
        self.assertEqual({j["id"] for j in r.json["jobs"]}, ids)
        self.assertEqual(self.s[0].sql("SELECT count(*) FROM jobq_jobs WHERE queue = '%s'"
                                       % Q), str(len(ids)))

    def stop_all(self, load):
        for i, srv in enumerate(self.s):
            if i not in load.down:
                srv.stop_checked()

    def test_every_job_claimed_once_and_completed_once(self):
        load = Load(self.s, per_producer=150, pace=0, lease=30)
        self.run_load(load)
        self.assertEqual(load.conn_errors, [])
        self.assertEqual(load.unavailable, [])
        self.assertTrue(all(c[2] == 200 for c in load.completes), "a lease was lost")
        self.check_exactly_once(load, single_claims=True)
        self.stop_all(load)

    def ghost_claims(self, srv, queue, n, lease):
        """Enqueue n jobs in `queue` and claim them on process srv, never to complete them:
        their leases can end only through a sweeper. Returns the claimed jobs."""
        c = self.s[srv].client()
        self.addCleanup(c.close)
        for i in range(n):
            self.assertEqual(c.post("/jobs", {"queue": queue, "payload": i}).status, 201)
        r = c.post("/claim", {"worker_id": "ghost", "queue": queue, "max_jobs": n,
                              "lease_seconds": lease})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(len(r.json["jobs"]), n, r)
        return r.json["jobs"]

    def wait_requeued(self, srv, jobs, timeout):
        """Wait until every job of `jobs` (claims) is queued again with error_code
        lease_expired, seen from process srv, and not before its lease ended."""
        c = self.s[srv].client()
        self.addCleanup(c.close)

        def requeued():
            got = [c.get("/jobs/%d" % j["id"]).json for j in jobs]
            return got if all(g["status"] == "queued" for g in got) else None

        got = wait_until(requeued, timeout, 0.1, "the expired leases to be requeued")
        for j, g in zip(jobs, got):
            self.assertEqual(g["error_code"], "lease_expired", g)
            self.assertGreaterEqual(g["run_at"], j["lease_expires_at"], g)
            self.assertIsNone(g["lease_expires_at"], g)

    def log_from(self, srv, offset):
        with open(self.s[srv].log_path, "rb") as f:
            f.seek(offset)
            return f.read().decode("utf-8", "replace")

    def swept_by(self, procs, offsets, what):
        """The processes of `procs` whose log (from offsets[i], else its start) has a sweep
        that requeued leases. The sweeper logs after its transaction commits, so a requeue
        can be visible a moment before its line: wait for it, bounded."""
        def found():
            return [i for i in procs if SWEPT_RE.search(self.log_from(i, offsets.get(i, 0)))]
        return wait_until(found, 5, 0.05, what)

    def test_sigkill_of_one_process_mid_load(self):
        # Which process sweeps? Leases that only a sweeper can end, then its log says.
        first = []
        for i in range(3):
            first += self.ghost_claims(i, "ghost1.%d" % i, 1, lease=1)
        self.wait_requeued(0, first, 15)
        sweepers = self.swept_by(range(3), {}, "a process to log the requeue")
        victim = sweepers[-1]
        survivors = [i for i in range(3) if i != victim]
        load = Load(self.s, per_producer=200)
        late = []
        offsets = {}

        def kill():
            # Leases granted by the victim just before it dies must still end.
            late.extend(self.ghost_claims(victim, "ghost2", 3, lease=2))
            for i in survivors:
                offsets[i] = os.path.getsize(self.s[i].log_path)
            load.down.add(victim)
            self.assertEqual(self.s[victim].kill9(), -9)

        self.run_load(load, fault=kill, at=0.4)
        # A survivor took the sweeper role: the victim's leases were requeued, by a survivor.
        self.wait_requeued(survivors[0], late, 15)
        self.swept_by(survivors, offsets, "a survivor to log a sweep that requeued leases")
        # Only the killed process failed connections; its clients carried on elsewhere.
        self.assertEqual([e for e in load.conn_errors if e[0] != victim], [])
        moved = {m[0] for m in load.moved}
        self.assertIn("p%d" % victim, moved)
        self.assertTrue(all(m[1] == victim for m in load.moved), load.moved)
        self.assertGreater(load.served_after_move.get("p%d" % victim, 0), 0)
        self.assertEqual(load.unavailable, [])
        self.check_exactly_once(load, single_claims=False)
        self.stop_all(load)

    def test_postgresql_restart_mid_load(self):
        load = Load(self.s, per_producer=200)
        self.run_load(load, fault=lambda: self.pg_stop_and_start(load, {}), at=0.25)
        # Every answer came within the client's time-out, none a 5xx but 503 unavailable
        # (load.bad), and no connection failed.
        self.assertEqual(load.conn_errors, [])
        self.assertEqual(self.s[0].sql("SELECT count(*) FROM jobq_jobs WHERE queue = 'probe'"),
                         "0")
        self.check_exactly_once(load, single_claims=False)
        for srv in self.s:
            self.assertIsNone(srv.proc.poll(), "jobqd exited")
        self.stop_all(load)

    def pg_stop_and_start(self, load, outage):
        pg_stop()
        outage["down"] = time.monotonic()
        try:
            for i in range(3):
                r = self.status(i, "POST", "/jobs", {"queue": "probe", "payload": i})
                self.assertEqual(r.status, 503, r)
                self.assertEqual(r.json["error"]["code"], "unavailable", r)
                r = self.status(i, "GET", "/readyz")
                self.assertEqual(r.status, 503, r)
                self.assertEqual(r.json["error"]["code"], "unavailable", r)
            # Stay down until the load's own writes have met the outage on every process.
            wait_until(lambda: {u[1] for u in load.unavailable
                                if u[0] >= outage["down"] and u[2] == "/jobs"} == {0, 1, 2},
                       20, what="every process to answer a producer 503")
        finally:  # never leave the cluster down
            pg_start()
        for i in range(3):  # nobody restarts them: each process recovers by itself
            wait_until(lambda: self.status(i, "GET", "/readyz").status == 200, 30, 0.1,
                       "process %d ready again" % i)
            r = self.status(i, "POST", "/jobs", {"queue": "after", "payload": i})
            self.assertEqual(r.status, 201, r)


if __name__ == "__main__":
    unittest.main()
