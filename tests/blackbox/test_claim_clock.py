"""A claim that waited is decided at the time it runs (issue 11 §3), on PostgreSQL with two
jobqd processes on one database: process A has one pooled connection, held by a dedup
enqueue that waits for its key's advisory lock (taken from psql); claims sent to A meanwhile
wait behind it. Once the lock goes, they must run at the database's clock of that moment,
not at their arrival's: a job that expired while they waited is not taken, claimed_at and
the lease start when the claim ran, and a rate limit of 2 per 2 s admits 2 jobs between A's
late claim and a claim on process B right after it (decided at arrival, A's claim counted
in a second B's window had already left: 4 jobs).

Every wait is bounded: the lock's holder sleeps at most LOCK_HOLD seconds and is cancelled as
soon as the claims have waited past the expiry."""
import os
import subprocess
import threading
import time
import unittest

from harness import Server, backend, psql, wait_until

ARGS = ["--sweep-interval", "3600", "--log-level", "warn"]  # no sweep expires the job first
LOCK_HOLD = 30  # seconds psql holds the lock at most (cancelled much sooner)
CLIENT_TIMEOUT = 30.0


def dedup_lock_sql(queue, key):
    """The transaction-long lock an enqueue of (queue, dedup key) takes (PG_DEDUP_LOCK)."""
    return "pg_advisory_xact_lock(hashtextextended('%s' || E'\\n' || '%s', 0))" % (queue, key)


class LateClaims(unittest.TestCase):
    def setUp(self):
        if backend() != "pg":
            self.skipTest("two processes share only a PostgreSQL database")
        self.a = Server(ARGS + ["--pool-size", "1"])
        self.addCleanup(self.a.cleanup)  # LIFO: A (owner of the database) goes last
        self.a.start()
        self.b = Server(ARGS, db=self.a.db)
        self.addCleanup(self.b.cleanup)
        self.b.start()
        self.dbname = self.a.db_name

    def call(self, srv, method, path, body=None):
        c = srv.client(timeout=CLIENT_TIMEOUT)
        try:
            return c.request(method, path, body=body)
        finally:
            c.close()

    def enqueue(self, srv, body):
        r = self.call(srv, "POST", "/jobs", dict({"payload": {}}, **body))
        self.assertEqual(r.status, 201, r)
        return r.json

    def activity(self, where):
        return int(psql(self.dbname, "SELECT count(*) FROM pg_stat_activity WHERE datname = "
                        "current_database() AND " + where))

    def hold_lock(self, queue, key):
        """Start a psql session that takes the dedup lock of (queue, key) and sleeps with it;
        return once it holds it. The process is ended at cleanup."""
        sql = "BEGIN; SELECT %s; SELECT pg_sleep(%d); COMMIT;" % (dedup_lock_sql(queue, key),
                                                                 LOCK_HOLD)
        cmd = ["psql", "-X", "-q", "-At", "-h", os.environ["JOBQ_TEST_PG_HOST"],
               "-p", os.environ["JOBQ_TEST_PG_PORT"], "-U", os.environ["JOBQ_TEST_PG_USER"],
               "-d", self.dbname, "-c", sql]
        bindir = os.environ.get("JOBQ_TEST_PG_BIN")
        if bindir:
            cmd[0] = os.path.join(bindir, "psql")
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        self.addCleanup(lambda: (p.kill(), p.wait(10)))
        wait_until(lambda: self.activity("wait_event = 'PgSleep'") == 1, 15,
                   what="psql to hold the dedup lock")
        return p

    def in_thread(self, fn, *args):
        out = {}

        def run():
            try:
                out["r"] = fn(*args)
            except Exception as e:  # the joining test reports it
                out["e"] = e
            out["at"] = time.time()

        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t, out

    def answer(self, t, out):
        t.join(CLIENT_TIMEOUT + 5)
        self.assertFalse(t.is_alive(), "a request did not end")
        if "e" in out:
            raise out["e"]
        return out["r"]

    def test_claims_that_waited_run_at_the_clock_of_their_run(self):
        r = self.call(self.b, "PUT", "/limits/rk", {"rate": {"jobs": 2, "per_seconds": 2}})
        self.assertIn(r.status, (200, 201), r)
        for _ in range(4):
            self.enqueue(self.b, {"queue": "rq", "concurrency_key": "rk"})
        plain = self.enqueue(self.b, {"queue": "pq"})["id"]

        holder = self.hold_lock("dq", "dk")
        enq = self.in_thread(self.call, self.a, "POST", "/jobs",
                             {"queue": "dq", "payload": {}, "dedup": {"key": "dk",
                                                                      "mode": "active"}})
        wait_until(lambda: self.activity("wait_event = 'advisory'") == 1, 15,
                   what="process A's only connection to wait for the dedup lock")

        # The job expires in 1 to 2 s; the claims are sent now, before it, and wait.
        sent = time.time()
        expires = int(sent) + 2
        expiring = self.enqueue(self.b, {"queue": "eq", "expires_at": expires})["id"]
        claim = {"worker_id": "w", "lease_seconds": 30, "max_jobs": 4}
        late_e = self.in_thread(self.call, self.a, "POST", "/claim", dict(claim, queue="eq"))
        late_p = self.in_thread(self.call, self.a, "POST", "/claim", dict(claim, queue="pq"))
        late_r = self.in_thread(self.call, self.a, "POST", "/claim", dict(claim, queue="rq"))
        self.assertLess(time.time(), expires - 0.3, "the claims were not sent before expiry")

        # Past the expiry, the lock goes (the holder's sleep cancelled): A runs them all.
        wait_until(lambda: time.time() >= expires + 0.3, 5, what="the job to expire")
        self.assertTrue(all(t.is_alive() for t, _ in (late_e, late_p, late_r)),
                        "a claim on A was answered before the lock went")
        psql(self.dbname, "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE "
             "datname = current_database() AND wait_event = 'PgSleep'")
        holder.wait(15)

        r = self.answer(*late_r)
        self.assertEqual(r.status, 200, r)
        on_b = self.call(self.b, "POST", "/claim", dict(claim, queue="rq"))
        self.assertEqual(on_b.status, 200, on_b)
        self.assertEqual(len(r.json["jobs"]) + len(on_b.json["jobs"]), 2,
                         "2 per 2 s: A's late claim took %d, B's right after it %d"
                         % (len(r.json["jobs"]), len(on_b.json["jobs"])))

        r = self.answer(*late_e)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["jobs"], [], "a job claimed after its expires_at %d" % expires)
        self.assertEqual(self.call(self.b, "GET", "/jobs/%d" % expiring).json["status"],
                         "queued")

        r = self.answer(*late_p)
        self.assertEqual(r.status, 200, r)
        self.assertEqual([j["id"] for j in r.json["jobs"]], [plain])
        job = r.json["jobs"][0]
        self.assertGreaterEqual(job["claimed_at"], expires, "claimed_at is the arrival's")
        self.assertLess(int(sent), expires)
        self.assertEqual(job["lease_expires_at"], job["claimed_at"] + 30)

        r = self.answer(*enq)
        self.assertEqual(r.status, 201, r)
        self.a.stop_checked(self)
        self.b.stop_checked(self)


if __name__ == "__main__":
    unittest.main()
