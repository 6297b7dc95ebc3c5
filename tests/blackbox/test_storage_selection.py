"""Storage selection (API.md "Storage selection"): --db takes a SQLite path or a PostgreSQL
URL; a second jobqd on one SQLite file refuses to start; any number share one PostgreSQL
database (a job enqueued on one is claimed once, from another, and wakes a long poll parked
there); a database that cannot be reached stops start-up with one clear line that never
shows the password."""
import os
import statistics
import subprocess
import threading
import time
import unittest

from harness import (START_TIMEOUT, WRAPPER, Server, backend, jobqd_path, now, sqlite_only,
                     wait_until)


def run_to_exit(args, timeout=START_TIMEOUT):
    """Run jobqd expecting it to refuse to start. Returns (exit code, output text)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBQ_")}
    p = subprocess.run(WRAPPER + [jobqd_path(), "--listen", "127.0.0.1:0"] + args,
                       stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=timeout)
    return p.returncode, (p.stdout + p.stderr).decode("utf-8", "replace")


def parked(srv):
    """1 when a claim is parked on srv (its metrics say so)."""
    c = srv.client()
    try:
        return b"jobq_waiting_claims 1" in c.get("/metrics").body
    finally:
        c.close()


def park_claim(srv, queue, clock):
    """A claim on queue parked on srv by a thread (waiting up to 20 s). Returns the thread and
    a dict that gets the answer ("r") and clock() when it came ("t")."""
    out = {}

    def park():
        c = srv.client(timeout=30)
        out["r"] = c.post("/claim", {"worker_id": "w", "queue": queue, "wait_seconds": 20})
        out["t"] = clock()
        c.close()

    t = threading.Thread(target=park)
    t.start()
    wait_until(lambda: parked(srv), 10, what="the claim parked")
    return t, out


class TwoProcesses(unittest.TestCase):
    def setUp(self):
        self.a = Server()
        self.addCleanup(self.a.cleanup)
        self.a.start()

    @sqlite_only("the SQLite lock file: one process per file")
    def test_second_jobqd_on_one_sqlite_file_refuses(self):
        code, out = run_to_exit(["--db", self.a.db])
        self.assertEqual(code, 1, out)
        self.assertIn("in use by another jobqd process", out)
        self.assertIn(self.a.db + ".lock", out)
        # The first one is unharmed, and once it stops the file is free again.
        c = self.a.client()
        self.assertEqual(c.post("/jobs", {"payload": 1}).status, 201)
        c.close()
        self.a.stop_checked()
        b = Server(db=self.a.db)
        self.addCleanup(b.cleanup)
        b.start()
        c = b.client()
        self.assertEqual(c.get("/jobs/1").status, 200)
        c.close()
        b.stop_checked()

    def test_processes_share_one_postgresql_database(self):
        if backend() != "pg":
            self.skipTest("several processes share only a PostgreSQL database")
        b = Server(db=self.a.db)
        self.addCleanup(b.cleanup)
        b.start()
        ca, cb = self.a.client(), b.client()
        self.addCleanup(ca.close)
        self.addCleanup(cb.close)
        ids = [ca.post("/jobs", {"queue": "shared", "payload": i}).json["id"]
               for i in range(20)]
        got = []
        for _ in range(40):  # bounded: 20 jobs, both claim
            for c in (cb, ca):
                r = c.post("/claim", {"worker_id": "w", "queue": "shared", "max_jobs": 3})
                self.assertEqual(r.status, 200, r.body)
                for j in r.json["jobs"]:
                    got.append(j["id"])
                    done = c.post("/jobs/%d/complete" % j["id"],
                                  {"lease_token": j["lease_token"]})
                    self.assertEqual(done.status, 200, done.body)
            if len(got) >= len(ids):
                break
        self.assertEqual(sorted(got), sorted(ids))  # each exactly once
        self.assertEqual(cb.get("/jobs/%d" % ids[0]).json["status"], "succeeded")

    def test_enqueue_on_one_wakes_a_long_poll_on_another(self):
        if backend() != "pg":
            self.skipTest("several processes share only a PostgreSQL database")
        b = Server(db=self.a.db)
        self.addCleanup(b.cleanup)
        b.start()
        delays = []
        for i in range(5):
            q = "wake-%d" % i
            t, out = park_claim(b, q, time.monotonic)
            ca = self.a.client()
            t0 = time.monotonic()
            self.assertEqual(ca.post("/jobs", {"queue": q, "payload": i}).status, 201)
            ca.close()
            t.join(25)
            self.assertFalse(t.is_alive())
            self.assertEqual(len(out["r"].json["jobs"]), 1, out["r"].body)
            delays.append(out["t"] - t0)
        # NOTIFY, not the 1-2 s re-check, wakes it: the median is well under a second.
        self.assertLess(statistics.median(delays), 0.5, delays)

    def test_delayed_job_on_one_wakes_a_long_poll_on_another_at_run_at(self):
        """A job enqueued on a for later (run_at) wakes a claim parked on b when its time
        comes: a's sweeper, poked for that run_at, announces the queue; b's own re-check
        (every 1-2 s) would be late by up to 2 s."""
        if backend() != "pg":
            self.skipTest("several processes share only a PostgreSQL database")
        b = Server(db=self.a.db)
        self.addCleanup(b.cleanup)
        b.start()
        late = []
        for i in range(3):
            q = "later-%d" % i
            t, out = park_claim(b, q, time.time)
            run_at = int(time.time()) + 3
            ca = self.a.client()
            r = ca.post("/jobs", {"queue": q, "payload": i, "run_at": run_at})
            ca.close()
            self.assertEqual(r.status, 201, r.body)
            t.join(25)
            self.assertFalse(t.is_alive())
            self.assertEqual(len(out["r"].json["jobs"]), 1, out["r"].body)
            late.append(out["t"] - run_at)
        # Not before its time, and soon after it (a second of slack for the sweeper's
        # whole-second clock), every time.
        self.assertGreaterEqual(min(late), 0.0, late)
        self.assertLess(max(late), 1.0, late)


class TerminatedConnections(unittest.TestCase):
    def test_pg_terminate_backend_is_invisible_to_clients(self):
        if backend() != "pg":
            self.skipTest("PostgreSQL's server-side connections")
        srv = Server(["--pool-size", "2"])
        self.addCleanup(srv.cleanup)
        srv.start()
        c = srv.client()
        self.addCleanup(c.close)
        for round_ in range(3):
            for i in range(4):  # every pooled connection is in use at some point
                self.assertEqual(c.post("/jobs", {"queue": "t", "payload": i}).status, 201)
            killed = srv.sql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                             "WHERE datname = current_database() AND pid <> pg_backend_pid()")
            self.assertGreaterEqual(int(killed), 2, "pool and listener connections")
            # Every request after the kill succeeds: dead idle connections are replaced.
            r = c.post("/jobs", {"queue": "t", "payload": "after"})
            self.assertEqual(r.status, 201, r.body)
            r = c.post("/claim", {"worker_id": "w", "queue": "t", "max_jobs": 2})
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual(len(r.json["jobs"]), 2)
            for j in r.json["jobs"]:
                done = c.post("/jobs/%d/complete" % j["id"], {"lease_token": j["lease_token"]})
                self.assertEqual(done.status, 200, done.body)
            self.assertEqual(c.get("/jobs/%d" % r.json["jobs"][0]["id"]).status, 200)
            self.assertEqual(c.get("/readyz").status, 200)
        srv.stop_checked()


class BadDatabase(unittest.TestCase):
    def test_unreachable_postgresql_stops_start_up_without_the_password(self):
        t0 = now()
        code, out = run_to_exit(["--db", "postgresql://jobq:s3cretpw@127.0.0.1:1/jobq"])
        self.assertEqual(code, 1, out)
        self.assertIn("cannot open the database", out)
        self.assertIn("***", out)
        self.assertNotIn("s3cretpw", out)
        self.assertLess(now() - t0, 30)


if __name__ == "__main__":
    unittest.main()
