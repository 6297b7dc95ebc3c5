"""Crash durability: jobqd is killed with SIGKILL in the middle of a load of producers and
workers, several times, and restarted on the same database each time. After every restart:

- every enqueue that got a 2xx exists, with its payload intact;
- every complete that got a 2xx is still `succeeded`, with its result;
- no job was completed (2xx) under two different lease tokens, and no job that got a 2xx
  complete was ever handed out by a claim again;
- a request whose answer was lost to the crash is retried after the restart: an enqueue with
  its idempotency_key (200 or 201, never a second job), a complete with the same lease token
  (200 while the lease is live or when the complete had been applied, else 409 lease_lost);
  never a 5xx once the server is up.
After the last stop (SIGTERM, exit 0), `PRAGMA integrity_check` on the file says "ok".

--sync full (the default): SQLite syncs the WAL on every commit, so an acknowledged write
survives a process crash, an OS crash and a power cut.

--sync normal: in WAL mode SQLite then syncs only at checkpoints. A commit is written to the
WAL (in the OS page cache) before the answer goes out, so a process crash (SIGKILL, abort, OOM
kill) loses nothing: the kernel still holds and writes those pages, and the same checks hold.
What --sync normal may lose is the last transactions acknowledged before a power cut or an OS
crash; it never loses integrity (the WAL's frame checksums drop a torn tail and the database
comes back as of an earlier commit).

Under the pg backend (JOBQ_TEST_BACKEND=pg) the test with the default durability runs
against PostgreSQL, without --sync (a SQLite flag) and without the final PRAGMA
integrity_check (a check of the SQLite file); the --sync normal test is SQLite only.

The random schedule is seeded from $JOBQ_CRASH_SEED when set (the seed is printed).
"""

import http.client
import json
import os
import random
import sqlite3
import sys
import threading
import time
import unittest

from harness import HOST, Server, backend, sqlite_args, sqlite_only, wait_until

KILLS = 4               # SIGKILLs per test
PRODUCERS = 2
WORKERS = 3
LOAD_EXTRA = (0.0, 0.8)  # seconds of load after the minimum below, before the kill
MIN_ENQUEUES = 30       # acked enqueues per round before a kill may happen
MIN_COMPLETES = 10      # acked completes per round before a kill may happen
LOAD_TIMEOUT = 30.0     # deadline to reach the minimum load
CALL_TIMEOUT = 15.0     # socket timeout of one request
JOIN_TIMEOUT = 40.0


class Down(Exception):
    """The request got no answer (connection refused, reset, closed, timed out)."""


class Conn:
    """One keep-alive connection that never retries: a transport failure raises Down, and the
    outcome of that request is unknown."""

    def __init__(self, port):
        self.port = port
        self.conn = None

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def call(self, method, path, body=None):
        if self.conn is None:
            self.conn = http.client.HTTPConnection(HOST, self.port, timeout=CALL_TIMEOUT)
        data = None
        headers = {}
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        try:
            self.conn.request(method, path, body=data, headers=headers)
            resp = self.conn.getresponse()
            raw = resp.read()
        except (OSError, http.client.HTTPException) as e:
            self.close()
            raise Down(repr(e))
        if resp.will_close:
            self.close()
        try:
            js = json.loads(raw.decode("utf-8")) if raw else None
        except ValueError:
            js = None
        return resp.status, js


def error_code(js):
    if isinstance(js, dict) and isinstance(js.get("error"), dict):
        return js["error"].get("code")
    return None


class Ledger:
    """What the clients were told, shared by the load threads (under one lock)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.enqueued = {}        # job id -> payload, for every 2xx enqueue
        self.keys = {}            # idempotency_key -> job id, for every 2xx keyed enqueue
        self.unknown_enq = {}     # idempotency_key -> body: enqueues that got no answer
        self.completed = {}       # job id -> (token, result), for every 2xx complete
        self.tokens = {}          # job id -> set of tokens that got a 2xx complete
        self.pending = []         # (job id, token, result): completes that got no answer
        self.fences = {}          # job id -> the highest fencing_token a claim returned
        self.errors = []          # broken promises, reported at the end
        self.round_enq = 0
        self.round_done = 0
        self.lease_lost = 0
        self.retried_ok = 0
        self.retried_lost = 0

    def error(self, msg):
        with self.lock:
            if len(self.errors) < 50:
                self.errors.append(msg)

    def ack_enqueue(self, job, payload, key=None):
        with self.lock:
            jid = job.get("id") if isinstance(job, dict) else None
            if not isinstance(jid, int):
                self.errors.append("enqueue answer without an id: %r" % (job,))
                return
            if job.get("payload") != payload:
                self.errors.append("enqueue answer has payload %r, sent %r"
                                   % (job.get("payload"), payload))
            if jid in self.enqueued and self.enqueued[jid] != payload:
                self.errors.append("job %d acked for two payloads" % jid)
            self.enqueued[jid] = payload
            if key is not None:
                if self.keys.get(key, jid) != jid:
                    self.errors.append("idempotency_key %s gave jobs %d and %d"
                                       % (key, self.keys[key], jid))
                self.keys[key] = jid
            self.round_enq += 1

    def ack_complete(self, jid, token, result, job):
        with self.lock:
            if not isinstance(job, dict) or job.get("status") != "succeeded":
                self.errors.append("complete of %d answered 2xx with %r" % (jid, job))
            elif job.get("result") != self.completed.get(jid, (token, result))[1]:
                self.errors.append("complete of %d answered result %r" % (jid, job.get("result")))
            self.tokens.setdefault(jid, set()).add(token)
            self.completed.setdefault(jid, (token, result))
            self.round_done += 1

    def claimed(self, job):
        with self.lock:
            jid = job.get("id")
            if jid in self.completed:
                self.errors.append("job %r was claimed again after a 2xx complete: %r"
                                   % (jid, job))
            fence = job.get("fencing_token")
            if not isinstance(fence, int) or fence <= self.fences.get(jid, 0):
                self.errors.append("job %r claimed with fencing_token %r after %r (it must grow "
                                   "with every claim, across restarts too)"
                                   % (jid, fence, self.fences.get(jid)))
            else:
                self.fences[jid] = fence


class CrashBase:
    """The crash test; subclasses pick --sync."""

    sync = "full"

    def setUp(self):
        seed = int(os.environ.get("JOBQ_CRASH_SEED", "0")) or random.randrange(1, 1 << 30)
        sys.stderr.write("\n[%s] JOBQ_CRASH_SEED=%d\n" % (self.id(), seed))
        self.rnd = random.Random(seed)
        self.server = Server(list(sqlite_args("--sync", self.sync)) + [
            "--sweep-interval", "1", "--backoff-base", "1", "--backoff-max", "1"])
        self.addCleanup(self.server.cleanup)
        self.server.start()
        self.q = "crash-%s-%d" % (self.sync, seed)
        self.ledger = Ledger()

    # ----- the load ------------------------------------------------------------------------

    def producer(self, pid, rnd, stop):
        led = self.ledger
        conn = Conn(self.server.port)
        n = 0
        try:
            while not stop.is_set():
                n += 1
                tag = "%s.p%d.%d" % (self.round_tag, pid, n)
                if rnd.random() < 0.5:
                    payload = {"tag": tag, "text": "caf\u00e9 \u2713 " + "x" * rnd.randrange(300),
                               "nest": [1, {"a": None, "b": True, "c": -2.5}]}
                    body = {"queue": self.q, "payload": payload, "idempotency_key": tag,
                            "priority": rnd.randrange(-3, 4)}
                    try:
                        st, js = conn.call("POST", "/jobs", body)
                    except Down:
                        with led.lock:
                            led.unknown_enq[tag] = body
                        time.sleep(0.02)
                        continue
                    if st in (200, 201):
                        led.ack_enqueue(js, payload, tag)
                    else:
                        led.error("POST /jobs -> %d %r" % (st, js))
                else:
                    payloads = [{"tag": "%s.%d" % (tag, i), "i": i} for i in
                                range(rnd.randrange(2, 12))]
                    body = {"jobs": [{"queue": self.q, "payload": p} for p in payloads]}
                    try:
                        st, js = conn.call("POST", "/jobs/batch", body)
                    except Down:
                        time.sleep(0.02)
                        continue
                    if st == 201 and isinstance(js, dict) and \
                            len(js.get("jobs") or ()) == len(payloads):
                        for job, p in zip(js["jobs"], payloads):
                            led.ack_enqueue(job, p)
                    else:
                        led.error("POST /jobs/batch -> %d %r" % (st, js))
        finally:
            conn.close()

    def worker(self, wid, rnd, stop):
        led = self.ledger
        conn = Conn(self.server.port)
        name = "%s.w%d" % (self.round_tag, wid)
        # Worker 0 takes one-second leases: some expire (in the load or across a restart) and
        # the sweeper hands the job to another worker; the others' leases outlive the test.
        lease = 1 if wid == 0 else 120
        try:
            while not stop.is_set():
                try:
                    st, js = conn.call("POST", "/claim", {"worker_id": name, "queue": self.q,
                                                          "max_jobs": rnd.randrange(1, 6),
                                                          "lease_seconds": lease})
                except Down:
                    time.sleep(0.02)
                    continue
                if st != 200 or not isinstance(js, dict) or not isinstance(js.get("jobs"), list):
                    led.error("POST /claim -> %d %r" % (st, js))
                    continue
                if not js["jobs"]:
                    time.sleep(0.01)
                    continue
                for job in js["jobs"]:
                    led.claimed(job)
                for job in js["jobs"]:
                    jid, tok = job["id"], job["lease_token"]
                    result = {"by": name, "job": jid, "tok": tok[:10]}
                    try:
                        st, rj = conn.call("POST", "/jobs/%d/complete" % jid,
                                           {"lease_token": tok, "result": result})
                    except Down:
                        with led.lock:
                            led.pending.append((jid, tok, result))
                        continue
                    if st == 200:
                        led.ack_complete(jid, tok, result, rj)
                    elif st == 409 and error_code(rj) == "lease_lost":
                        with led.lock:
                            led.lease_lost += 1
                    else:
                        led.error("complete %d -> %d %r" % (jid, st, rj))
        finally:
            conn.close()

    def run_round(self, r):
        """Load the server, then SIGKILL it once the round did some work."""
        led = self.ledger
        self.round_tag = "r%d" % r
        with led.lock:
            led.round_enq = led.round_done = 0
        stop = threading.Event()
        threads = [threading.Thread(target=self.producer,
                                    args=(i, random.Random(self.rnd.random()), stop))
                   for i in range(PRODUCERS)]
        threads += [threading.Thread(target=self.worker,
                                     args=(i, random.Random(self.rnd.random()), stop))
                    for i in range(WORKERS)]
        extra = self.rnd.uniform(*LOAD_EXTRA)
        for t in threads:
            t.start()
        def enough_work():
            code = self.server.proc.poll()
            if code is not None:
                raise AssertionError("jobqd died by itself (exit %r) in round %d\n--- jobqd log "
                                     "---\n%s" % (code, r, self.server.log_tail()))
            return led.round_enq >= MIN_ENQUEUES and led.round_done >= MIN_COMPLETES

        try:
            wait_until(enough_work, LOAD_TIMEOUT, 0.02, "round %d to do some work" % r)
            time.sleep(extra)  # a random moment in the load (not a wait for a condition)
        finally:
            code = self.server.kill9()
            stop.set()
            for t in threads:
                t.join(JOIN_TIMEOUT)
        self.assertFalse(any(t.is_alive() for t in threads), "load threads did not stop")
        self.assertEqual(code, -9, "jobqd was not running at the kill (exit %r)\n%s"
                         % (code, self.server.log_tail()))

    # ----- after a restart -----------------------------------------------------------------

    def retry_lost_answers(self):
        """Retry, on the restarted server, every request whose answer the crash took."""
        led = self.ledger
        conn = Conn(self.server.port)
        try:
            with led.lock:
                unknown, led.unknown_enq = led.unknown_enq, {}
                pending, led.pending = led.pending, []
            for key, body in sorted(unknown.items()):
                st, js = conn.call("POST", "/jobs", body)
                self.assertIn(st, (200, 201), "retried enqueue %s -> %d %r" % (key, st, js))
                led.ack_enqueue(js, body["payload"], key)
            for jid, tok, result in pending:
                st, js = conn.call("POST", "/jobs/%d/complete" % jid,
                                   {"lease_token": tok, "result": result})
                if st == 200:
                    led.ack_complete(jid, tok, result, js)
                    led.retried_ok += 1
                else:
                    self.assertEqual((st, error_code(js)), (409, "lease_lost"),
                                     "retried complete of %d after restart: %r" % (jid, js))
                    # lease_lost is right only if this complete was not the one applied: a
                    # repeat of an applied complete is an idempotent 200.
                    st, g = conn.call("GET", "/jobs/%d" % jid)
                    self.assertEqual(st, 200, g)
                    self.assertFalse(g["status"] == "succeeded" and g["result"] == result,
                                     "job %d was completed with this token, yet its retry "
                                     "got lease_lost: %r" % (jid, g))
                    led.retried_lost += 1
        finally:
            conn.close()

    def list_queue(self, conn):
        jobs = {}
        cursor = None
        for _ in range(1000):
            path = "/jobs?queue=%s&limit=1000" % self.q
            if cursor:
                path += "&cursor=" + cursor
            st, js = conn.call("GET", path)
            self.assertEqual(st, 200, js)
            for j in js["jobs"]:
                self.assertNotIn(j["id"], jobs, "GET /jobs listed job %d twice" % j["id"])
                jobs[j["id"]] = j
            cursor = js["next_cursor"]
            if cursor is None:
                return jobs
        self.fail("GET /jobs paging did not end")

    def verify(self, final=False):
        led = self.ledger
        self.assertEqual(led.errors, [], "broken promises during the load")
        conn = Conn(self.server.port)
        try:
            jobs = self.list_queue(conn)
            for jid, payload in led.enqueued.items():
                self.assertIn(jid, jobs, "acked job %d is gone after a crash" % jid)
                self.assertEqual(jobs[jid]["payload"], payload, "payload of job %d" % jid)
            for key, jid in led.keys.items():
                self.assertEqual(jobs[jid]["idempotency_key"], key)
            seen = {}
            for j in jobs.values():
                k = j["idempotency_key"]
                if k is not None:
                    self.assertNotIn(k, seen, "two jobs for idempotency_key %s" % k)
                    seen[k] = j["id"]
            for jid, toks in led.tokens.items():
                self.assertEqual(len(toks), 1, "job %d completed under tokens %r" % (jid, toks))
            for jid, (tok, result) in led.completed.items():
                j = jobs[jid]
                self.assertEqual(j["status"], "succeeded", "acked complete of %d lost: %r"
                                 % (jid, j))
                self.assertEqual(j["result"], result, "result of job %d" % jid)
            if final:
                # The stored token is the acked one: repeating its complete is an idempotent
                # 200 that changes nothing, whatever result it carries.
                for jid, (tok, result) in sorted(led.completed.items()):
                    st, js = conn.call("POST", "/jobs/%d/complete" % jid,
                                       {"lease_token": tok, "result": "again"})
                    self.assertEqual(st, 200, "repeat complete of %d: %r" % (jid, js))
                    self.assertEqual(js["result"], result)
                    self.assertEqual(js["finished_at"], jobs[jid]["finished_at"])
            return jobs
        finally:
            conn.close()

    def test_sigkill_under_load_loses_nothing_acked(self):
        for r in range(KILLS):
            self.run_round(r)
            self.server.restart()
            self.retry_lost_answers()
            self.verify()
        jobs = self.verify(final=True)
        led = self.ledger
        sys.stderr.write("[%s] %d jobs, %d acked enqueues, %d acked completes, %d lease_lost, "
                         "%d completes retried after restart (%d ok, %d lease_lost)\n"
                         % (self.id(), len(jobs), len(led.enqueued), len(led.completed),
                            led.lease_lost, led.retried_ok + led.retried_lost, led.retried_ok,
                            led.retried_lost))
        self.assertGreater(len(led.completed), KILLS * MIN_COMPLETES - 1)
        self.server.stop_checked()
        if backend() == "sqlite":
            with sqlite3.connect(self.server.db) as db:
                self.assertEqual(db.execute("PRAGMA integrity_check").fetchall(), [("ok",)])
            db.close()

    def test_complete_retried_after_restart(self):
        """A worker whose complete failed because the server was down retries it after the
        restart with the same token: 200 while the lease is live, 409 lease_lost once it is
        not; never a 5xx."""
        conn = Conn(self.server.port)
        self.addCleanup(conn.close)
        st, _ = conn.call("POST", "/jobs/batch", {"jobs": [
            {"queue": self.q, "payload": {"n": 1}, "max_attempts": 1},
            {"queue": self.q, "payload": {"n": 2}, "max_attempts": 1}]})
        self.assertEqual(st, 201)
        st, js = conn.call("POST", "/claim", {"worker_id": "long", "queue": self.q,
                                              "lease_seconds": 300})
        self.assertEqual(st, 200)
        (a,) = js["jobs"]
        st, js = conn.call("POST", "/claim", {"worker_id": "short", "queue": self.q,
                                              "lease_seconds": 1})
        self.assertEqual(st, 200)
        (b,) = js["jobs"]
        self.assertEqual(self.server.kill9(), -9)
        for job in (a, b):
            with self.assertRaises(Down):
                conn.call("POST", "/jobs/%d/complete" % job["id"],
                          {"lease_token": job["lease_token"], "result": "r"})
        self.server.restart()
        conn.port = self.server.port
        st, js = conn.call("POST", "/jobs/%d/complete" % a["id"],
                           {"lease_token": a["lease_token"], "result": {"ok": 1}})
        self.assertEqual(st, 200, js)
        self.assertEqual((js["status"], js["result"], js["attempts"]),
                         ("succeeded", {"ok": 1}, 1))
        # B's one-second lease is dead by now or soon: lease_lost at once, before or after the
        # sweeper failed the job (max_attempts 1); never a 5xx.
        wait_until(lambda: time.time() >= b["lease_expires_at"] + 0.05, 10, 0.05, "B's expiry")
        st, js = conn.call("POST", "/jobs/%d/complete" % b["id"],
                           {"lease_token": b["lease_token"], "result": {"ok": 2}})
        self.assertEqual((st, error_code(js)), (409, "lease_lost"), js)
        g = wait_until(lambda: (lambda s, j: j if j["status"] != "running" else None)(
            *conn.call("GET", "/jobs/%d" % b["id"])), 10, 0.1, "the sweeper to fail B")
        self.assertEqual((g["status"], g["error_code"]), ("failed", "lease_expired"))
        conn.close()
        self.server.stop_checked()


class CrashSyncFull(CrashBase, unittest.TestCase):
    sync = "full"


@sqlite_only("--sync normal, SQLite's WAL sync mode")
class CrashSyncNormal(CrashBase, unittest.TestCase):
    """--sync normal: a process crash still loses nothing acked (see the module docstring);
    only a power cut or an OS crash may lose the last acknowledged transactions."""

    sync = "normal"


if __name__ == "__main__":
    unittest.main()
