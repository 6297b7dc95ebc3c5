"""Failover without manual steps (PostgreSQL only).

A primary and its synchronous streaming standby on loopback, made by
`scripts/pg_cluster.sh start` and `standby` in directories of this test (never the shared test
cluster), and one jobqd on the multi-host URI
`postgresql://jobq@127.0.0.1:P1,127.0.0.1:P2/DB?target_session_attrs=read-write`.
Producers and workers run against it; mid-load the primary is stopped (immediate mode: a
crash, no shutdown checkpoint) and, once jobqd has been seen answering 503, the standby is
promoted. Asserted:

- while no primary exists every answer is 503 `unavailable` (never 500, never a hang past the
  client's time-out), and /readyz says 503;
- jobqd writes to the new primary by itself within FOLLOW_BOUND seconds of the promotion
  (the measured figure is printed);
- every acknowledged enqueue (201, or 200 for a retry with the same idempotency_key) exists
  afterwards, exactly once per key; every acknowledged claim and complete (200) holds: the job
  is `succeeded` with the worker's result, claimed once (synchronous replication is what
  makes this true);
- workers carry on: claims and completes succeed after the promotion, and every
  acknowledged job gets completed, but for orphans of an ambiguous claim (its commit reached
  the standby, its answer was a 503): those stay `running` for the worker that saw the 503
  until their lease ends, as when a worker dies (a handful at most).

Under SQLite the test skips. It needs PostgreSQL's server programs (pg_basebackup among them):
the bin directory in JOBQ_TEST_PG_BIN, else the newest /usr/lib/postgresql/*/bin.
"""

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import harness

HERE = os.path.dirname(os.path.abspath(__file__))
PG_CLUSTER = os.path.join(HERE, "..", "..", "scripts", "pg_cluster.sh")
SCRIPT_TIMEOUT = 240.0  # seconds for one pg_cluster.sh call (each of its waits is bounded)
TOOL_TIMEOUT = 60.0     # seconds for one pg_ctl or psql call
CLIENT_TIMEOUT = 10.0   # every request of this test answers within this, or it is a hang
FOLLOW_BOUND = 15.0     # seconds from the promotion to jobqd's first write on the new primary
LEASE = 120             # lease_seconds of every claim: no lease ends during the test
PRODUCERS = 2
WORKERS = 3
WARM_COMPLETES = 30     # acknowledged completes before the primary is stopped
GAP_503S = 20           # 503 answers seen by the load before the standby is promoted
AFTER_COMPLETES = 30    # completes of jobs claimed after the promotion, at least
MAX_ORPHANS = 2 * WORKERS  # claims in flight when the primary died (max_jobs 2 per claim)
PHASE_TIMEOUT = 30.0    # seconds for each load phase to reach its count
DB = "jobq_failover"


def short_tmp():
    """A parent directory for the two clusters: its paths go into unix socket names (80
    characters at most, plain), so TMPDIR is used only when it is short and plain."""
    base = tempfile.gettempdir()
    if len(base) > 40 or not all(ch.isalnum() or ch in "/._-" for ch in base):
        base = "/tmp"
    return tempfile.mkdtemp(prefix="jobq-fo-", dir=base)


def read_env(path):
    """The KEY=value lines of a DIR/env file written by pg_cluster.sh."""
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("export ") and "=" in line:
                k, v = line[len("export "):].split("=", 1)
                out[k] = v.strip("'")
    return out


class Cluster:
    """One PostgreSQL server made by pg_cluster.sh in `path` (its env file read back)."""

    def __init__(self, path):
        self.path = path
        self.env = {}

    @property
    def port(self):
        return int(self.env["JOBQ_TEST_PG_PORT"])

    @property
    def data(self):
        return self.env["JOBQ_TEST_PG_DATA"]

    def tool(self, name):
        return os.path.join(self.env["JOBQ_TEST_PG_BIN"], name)

    def script(self, *args):
        env = dict(os.environ)
        if os.environ.get("JOBQ_TEST_PG_BIN"):
            env["JOBQ_PG_BIN"] = os.environ["JOBQ_TEST_PG_BIN"]
        try:
            p = subprocess.run(["bash", PG_CLUSTER] + list(args), stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=SCRIPT_TIMEOUT, env=env)
        except subprocess.TimeoutExpired:
            raise AssertionError("pg_cluster.sh %s timed out" % " ".join(args))
        if p.returncode != 0:
            raise AssertionError("pg_cluster.sh %s failed (%d): %s"
                                 % (" ".join(args), p.returncode, (p.stdout + p.stderr).strip()))
        if args[0] != "stop":
            self.env = read_env(os.path.join(self.path, "env"))

    def psql(self, sql, db="postgres"):
        cmd = [self.tool("psql"), "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", self.path,
               "-p", str(self.port), "-U", self.env["JOBQ_TEST_PG_USER"], "-d", db, "-c", sql]
        try:
            p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=TOOL_TIMEOUT, env=dict(os.environ, PGCONNECT_TIMEOUT="10"))
        except subprocess.TimeoutExpired:
            raise AssertionError("psql on %s timed out: %s" % (self.path, sql))
        if p.returncode != 0:
            raise AssertionError("psql on %s failed: %s\n%s" % (self.path, sql, p.stderr.strip()))
        return p.stdout.strip()

    def pg_ctl(self, *args):
        """pg_ctl on this data directory, as its owner (postgres refuses root). Returns the
        seconds it took."""
        prefix = []
        if os.geteuid() == 0:
            owner = pwd.getpwuid(os.stat(self.data).st_uid).pw_name
            if owner != "root":
                prefix = ["runuser", "-u", owner, "--"]
        cmd = prefix + [self.tool("pg_ctl"), "-D", self.data, "-w", "-t", "%d" % TOOL_TIMEOUT]
        t0 = time.monotonic()
        try:
            p = subprocess.run(cmd + list(args), stdin=subprocess.DEVNULL, capture_output=True,
                               text=True, timeout=TOOL_TIMEOUT + 10)
        except subprocess.TimeoutExpired:
            raise AssertionError("pg_ctl %s timed out" % " ".join(args))
        if p.returncode != 0:
            raise AssertionError("pg_ctl %s failed (%d): %s"
                                 % (" ".join(args), p.returncode, (p.stdout + p.stderr).strip()))
        return time.monotonic() - t0

    def log_tail(self, n=15):
        try:
            with open(os.path.join(self.path, "postgres.log"), "rb") as f:
                return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-n:])
        except OSError:
            return "(no log)"


class Load:
    """What the producers and workers saw, under one lock. Every answer is classified: the
    acknowledged ones are remembered, 503s counted (with when), anything else is a problem."""

    def __init__(self):
        self.lock = threading.Lock()
        self.stop_producers = threading.Event()
        self.stop_workers = threading.Event()
        self.acked = {}        # idempotency key -> job id (201, or 200 on a retry)
        self.claimed = {}      # job id -> (lease token, worker, monotonic time of the claim)
        self.completed = {}    # job id -> result sent, acknowledged with 200
        self.claim_503 = set()  # workers that had a claim answered 503 (it may have committed)
        self.n503 = 0
        self.last_503 = None   # monotonic time of the last 503
        self.max_503_latency = 0.0
        self.problems = []     # descriptions of answers that break the contract

    def problem(self, what):
        with self.lock:
            if len(self.problems) < 50:
                self.problems.append(what)

    def count(self, what):
        with self.lock:
            return len(getattr(self, what))

    def classify(self, what, r, elapsed, ok):
        """Returns True for an answer with a status in `ok`, False for a 503 `unavailable`
        (counted); anything else is recorded as a problem (and returns None)."""
        if r.status in ok:
            return True
        if r.status == 503:
            code = (r.json or {}).get("error", {}).get("code") if isinstance(r.json, dict) \
                else None
            if code != "unavailable":
                self.problem("%s: 503 with code %r: %r" % (what, code, r))
                return None
            with self.lock:
                self.n503 += 1
                self.last_503 = time.monotonic()
                self.max_503_latency = max(self.max_503_latency, elapsed)
            return False
        self.problem("%s: %r" % (what, r))
        return None


def timed(client, method, path, body, load, what):
    """One request; a time-out or a dropped connection is recorded as a problem (None)."""
    t0 = time.monotonic()
    try:
        r = client.request(method, path, body=body)
    except Exception as e:  # socket.timeout, a reset, http.client errors: all are failures
        load.problem("%s: no answer within %.0fs: %r" % (what, CLIENT_TIMEOUT, e))
        client.close()
        return None, time.monotonic() - t0
    return r, time.monotonic() - t0


def producer(port, queue, name, load):
    """Enqueue jobs with idempotency keys; a 503 is retried with the same key until it is
    acknowledged (the documented client behaviour for ambiguous commits)."""
    c = harness.Client(port, timeout=CLIENT_TIMEOUT)
    n = 0
    try:
        while not load.stop_producers.is_set():
            n += 1
            key = "%s-%d" % (name, n)
            body = {"queue": queue, "payload": {"key": key}, "idempotency_key": key}
            deadline = time.monotonic() + PHASE_TIMEOUT
            while True:
                r, dt = timed(c, "POST", "/jobs", body, load, "enqueue " + key)
                if r is None:
                    return
                ok = load.classify("enqueue " + key, r, dt, (200, 201))
                if ok is None:
                    return
                if ok:
                    if r.json.get("idempotency_key") != key:
                        load.problem("enqueue %s answered another job: %r" % (key, r))
                        return
                    with load.lock:
                        load.acked[key] = r.json["id"]
                    break
                if time.monotonic() > deadline:
                    load.problem("enqueue %s: still 503 after %.0fs" % (key, PHASE_TIMEOUT))
                    return
                time.sleep(0.05)
            time.sleep(0.01)  # keep the queue short on a small machine
    finally:
        c.close()


def worker(port, queue, name, load):
    """Claim and complete; a complete that answers 503 is repeated with the same token until
    200 (complete is idempotent for the same token)."""
    c = harness.Client(port, timeout=CLIENT_TIMEOUT)
    try:
        while not load.stop_workers.is_set():
            body = {"worker_id": name, "queue": queue, "lease_seconds": LEASE, "max_jobs": 2,
                    "wait_seconds": 1}
            r, dt = timed(c, "POST", "/claim", body, load, "claim by " + name)
            if r is None:
                return
            ok = load.classify("claim by " + name, r, dt, (200,))
            if ok is None:
                return
            if not ok:
                with load.lock:
                    load.claim_503.add(name)
                time.sleep(0.05)
                continue
            for job in r.json["jobs"]:
                jid, token = job["id"], job["lease_token"]
                with load.lock:
                    if jid in load.claimed:
                        load.problem("job %d claimed twice: %r then by %s"
                                     % (jid, load.claimed[jid], name))
                    load.claimed[jid] = (token, name, time.monotonic())
                result = {"by": name, "id": jid}
                deadline = time.monotonic() + PHASE_TIMEOUT
                while True:
                    what = "complete %d by %s" % (jid, name)
                    cr, dt = timed(c, "POST", "/jobs/%d/complete" % jid,
                                   {"lease_token": token, "result": result}, load, what)
                    if cr is None:
                        return
                    ok = load.classify(what, cr, dt, (200,))
                    if ok is None:
                        return
                    if ok:
                        with load.lock:
                            load.completed[jid] = result
                        break
                    if time.monotonic() > deadline:
                        load.problem("%s: still 503 after %.0fs" % (what, PHASE_TIMEOUT))
                        return
                    time.sleep(0.05)
    finally:
        c.close()


class PgFailoverTest(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        if harness.backend() != "pg":
            self.skipTest("PostgreSQL only: failover from a primary to its synchronous "
                          "standby (run with JOBQ_TEST_BACKEND=pg)")
        self.root = short_tmp()
        self.addCleanup(shutil.rmtree, self.root, True)
        os.chmod(self.root, 0o755)  # the clusters' owner (postgres when root) walks through it
        self.primary = Cluster(os.path.join(self.root, "p"))
        self.standby = Cluster(os.path.join(self.root, "s"))
        # Cleanups run last-in first: the standby, then the primary (stop is a no-op on a
        # directory that is not there, and removes a stopped cluster's directory).
        self.addCleanup(self.primary.script, "stop", self.primary.path)
        self.addCleanup(self.standby.script, "stop", self.standby.path)
        t0 = time.monotonic()
        self.primary.script("start", self.primary.path)
        self.primary.psql('CREATE DATABASE "%s"' % DB)
        self.standby.script("standby", self.primary.path, self.standby.path)
        self.pair_seconds = time.monotonic() - t0
        self.assertEqual(self.primary.psql(
            "SELECT sync_state FROM pg_stat_replication"), "sync")
        self.assertEqual(self.standby.psql("SELECT pg_is_in_recovery()"), "t")
        self.assertEqual(self.standby.psql(
            "SELECT count(*) FROM pg_database WHERE datname = '%s'" % DB), "1")

    def start_jobqd(self, args=()):
        url = ("postgresql://jobq@127.0.0.1:%d,127.0.0.1:%d/%s?target_session_attrs=read-write"
               % (self.primary.port, self.standby.port, DB))
        srv = harness.Server(list(args), db=url)
        self.addCleanup(srv.cleanup)
        srv.start()
        return srv

    def wait_count(self, load, what, n, phase):
        """Wait (bounded) until `what` of the load holds n entries, failing early on a
        problem."""
        def enough():
            if load.problems:
                raise AssertionError("%s: %s" % (phase, load.problems))
            return load.count(what) >= n
        harness.wait_until(enough, PHASE_TIMEOUT, 0.05, "%s (%d %s)" % (phase, n, what))

    def test_standby_down_answers_503_not_a_hang(self):
        """The synchronous standby is gone and the primary is up: a commit waits for a
        confirmation that does not come (statement_timeout does not cover that wait). jobqd
        gives up after --pg-statement-timeout and answers 503 `unavailable`: the write may be
        on the primary alone, so it is not acknowledged; a retry with the same
        idempotency_key finds it once the standby is back."""
        srv = self.start_jobqd(["--pg-statement-timeout", "2000"])
        c = srv.client(timeout=CLIENT_TIMEOUT)
        self.addCleanup(c.close)
        self.assertEqual(c.post("/jobs", {"queue": "sb", "payload": 0}).status, 201)
        self.standby.pg_ctl("stop", "-m", "immediate")
        t0 = time.monotonic()
        r = c.post("/jobs", {"queue": "sb", "payload": 1, "idempotency_key": "k1"})
        took = time.monotonic() - t0
        self.assertEqual(r.status, 503, r)
        self.assertEqual(r.json["error"]["code"], "unavailable", r)
        self.assertGreater(took, 1.5)
        self.assertLess(took, 8.0)
        self.assertIn("a synchronous standby that does not confirm", srv.log_tail(50))
        # Back with its standby, the same request is answered and the job exists once.
        self.standby.pg_ctl("start", "-l", os.path.join(self.standby.path, "postgres.log"))
        harness.wait_until(lambda: self.primary.psql(
            "SELECT sync_state FROM pg_stat_replication") == "sync", PHASE_TIMEOUT, 0.2,
            "the standby to be synchronous again")
        r = c.post("/jobs", {"queue": "sb", "payload": 1, "idempotency_key": "k1"})
        self.assertIn(r.status, (200, 201), r)
        r = c.get("/jobs?queue=sb")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(len(r.json["jobs"]), 2, r.json)
        srv.stop_checked(self)

    def test_failover_to_the_synchronous_standby(self):
        srv = self.start_jobqd()
        queue = "failover"
        load = Load()
        probe = srv.client(timeout=CLIENT_TIMEOUT)
        self.addCleanup(probe.close)
        producers = [threading.Thread(target=producer, args=(srv.port, queue, "p%d" % i, load),
                                    daemon=True) for i in range(PRODUCERS)]
        workers = [threading.Thread(target=worker, args=(srv.port, queue, "w%d" % i, load),
                                    daemon=True) for i in range(WORKERS)]

        def stop_load():
            load.stop_producers.set()
            load.stop_workers.set()
            for t in producers + workers:
                t.join(timeout=PHASE_TIMEOUT + 2 * CLIENT_TIMEOUT)
        self.addCleanup(stop_load)
        for t in producers + workers:
            t.start()

        try:
            # 1. Load on the primary.
            self.wait_count(load, "completed", WARM_COMPLETES, "warm-up")

            # 2. The primary dies mid-load: no primary until the standby is promoted.
            t_stop = time.monotonic()
            stop_seconds = self.primary.pg_ctl("-m", "immediate", "stop")
            before_gap = load.n503
            harness.wait_until(lambda: load.problems or load.n503 - before_gap >= GAP_503S,
                               PHASE_TIMEOUT, 0.05, "%d 503 answers without a primary"
                               % GAP_503S)
            self.assertEqual(load.problems, [], "answers while there was no primary")
            r = probe.get("/readyz")
            self.assertEqual(r.status, 503, r)
            r = probe.post("/jobs", {"queue": "probe", "payload": {}})
            self.assertEqual(r.status, 503, r)
            self.assertEqual(r.json["error"]["code"], "unavailable", r)

            # 3. Promote the standby; jobqd must write there by itself.
            promote_seconds = self.standby.pg_ctl("promote")
            t_promoted = time.monotonic()
            self.assertEqual(self.standby.psql("SELECT pg_is_in_recovery()"), "f")

            def writes():
                r = probe.post("/jobs", {"queue": "probe", "payload": {}})
                if r.status == 201:
                    return r
                self.assertEqual(r.status, 503, r)
                self.assertEqual(r.json["error"]["code"], "unavailable", r)
                return None
            harness.wait_until(writes, FOLLOW_BOUND, 0.05,
                               "jobqd to write to the new primary")
            t_follow = time.monotonic()
            follow = t_follow - t_promoted
            gap_503s = load.n503 - before_gap
            r = probe.get("/readyz")
            self.assertEqual(r.status, 200, r)

            # 4. Workers carry on: claims made after the promotion get completed.
            def after():
                if load.problems:
                    raise AssertionError("after the promotion: %s" % load.problems)
                with load.lock:
                    return sum(1 for jid, (_, _, at) in load.claimed.items()
                               if at > t_follow and jid in load.completed) >= AFTER_COMPLETES
            harness.wait_until(after, PHASE_TIMEOUT, 0.05,
                               "%d completes of jobs claimed after the promotion"
                               % AFTER_COMPLETES)
            last_503_after_follow = (load.last_503 - t_follow
                                     if load.last_503 and load.last_503 > t_follow else 0.0)

            # 5. Producers stop; workers drain the queue, then stop.
            load.stop_producers.set()
            for t in producers:
                t.join(timeout=PHASE_TIMEOUT + 2 * CLIENT_TIMEOUT)
                self.assertFalse(t.is_alive(), "a producer did not stop")

            def drained():
                if load.problems:
                    raise AssertionError("draining: %s" % load.problems)
                with load.lock:
                    left = set(load.acked.values()) - set(load.completed)
                    claimed = set(load.claimed)
                if len(left) > MAX_ORPHANS:
                    return None
                # What is left must be orphans: jobs whose claim committed while its answer
                # was a 503 (the primary died between its flush and its reply). They run on
                # the new primary, for a worker that saw a claim answer 503 and so does not
                # know it holds them, until their lease ends.
                for jid in left:
                    if jid in claimed:
                        return None
                    r = probe.get("/jobs/%d" % jid)
                    if r.status != 200 or r.json["status"] != "running":
                        return None
                    if r.json["worker_id"] not in load.claim_503:
                        return None  # a claim whose answer is on its way
                return (sorted(left),)  # a tuple: true even when nothing is left
            orphans, = harness.wait_until(
                drained, PHASE_TIMEOUT, 0.1, "the workers to complete every acknowledged job "
                "but the orphans of claims answered 503 (at most %d)" % MAX_ORPHANS)
            load.stop_workers.set()
            for t in workers:
                t.join(timeout=PHASE_TIMEOUT + 2 * CLIENT_TIMEOUT)
                self.assertFalse(t.is_alive(), "a worker did not stop")
            # Looked at again with the workers stopped: an orphan is claimed by none of them.
            orphans = [jid for jid in orphans if jid not in load.claimed]
            for jid in orphans:
                r = probe.get("/jobs/%d" % jid)
                self.assertEqual(r.status, 200, r)
                self.assertEqual(r.json["status"], "running", r)
                self.assertIn(r.json["worker_id"], load.claim_503, r)
        except BaseException:
            sys.stderr.write("\n--- jobqd log ---\n%s\n--- primary log ---\n%s\n"
                             "--- standby log ---\n%s\n"
                             % (srv.log_tail(40), self.primary.log_tail(),
                                self.standby.log_tail()))
            raise

        self.assertEqual(load.problems, [])
        sys.stderr.write(
            "\nfailover: pair made in %.1fs; primary stopped (immediate) in %.2fs; %d answers "
            "503 unavailable without a primary (the slowest %.3fs); promoted in %.2fs; jobqd "
            "wrote to the new primary %.2fs after the promotion (%.2fs after the stop); last "
            "503 %.2fs after that; %d jobs acknowledged, %d completed, %d orphaned by an "
            "ambiguous claim\n"
            % (self.pair_seconds, stop_seconds, gap_503s, load.max_503_latency,
               promote_seconds, follow, t_follow - t_stop, last_503_after_follow,
               len(load.acked), len(load.completed), len(orphans)))
        self.assertLessEqual(follow, FOLLOW_BOUND)
        self.assertGreaterEqual(gap_503s, GAP_503S)
        self.assertLess(load.max_503_latency, CLIENT_TIMEOUT)

        # Nothing acknowledged was lost: each key once, every acknowledged completion kept.
        c = srv.client()
        self.addCleanup(c.close)
        jobs, cursor = [], None
        for _ in range(1000):
            r = c.get("/jobs?queue=%s&limit=1000%s"
                      % (queue, "&cursor=" + cursor if cursor else ""))
            self.assertEqual(r.status, 200, r)
            jobs.extend(r.json["jobs"])
            cursor = r.json["next_cursor"]
            if cursor is None:
                break
        by_key = {}
        for j in jobs:
            by_key.setdefault(j["idempotency_key"], []).append(j["id"])
        dup = {k: v for k, v in by_key.items() if len(v) > 1}
        self.assertEqual(dup, {}, "one idempotency key, several jobs")
        self.assertEqual({k: v[0] for k, v in by_key.items()}, load.acked,
                         "the jobs in the queue are not the acknowledged ones")
        for jid, result in sorted(load.completed.items()):
            r = c.get("/jobs/%d" % jid)
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json["status"], "succeeded", r)
            self.assertEqual(r.json["result"], result, r)
            self.assertEqual(r.json["worker_id"], load.claimed[jid][1], r)
        for key, jid in load.acked.items():
            if jid not in orphans:
                self.assertIn(jid, load.completed, "acknowledged job %d (%s) never completed"
                              % (jid, key))
        srv.stop_checked()


if __name__ == "__main__":
    unittest.main()
