"""Process life: SIGTERM answers parked long polls with an empty list and exits 0; data
survives a restart on the same database; the command line and JOBQ_* environment."""

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

from harness import (HOST, Client, Server, ServerTest, TestDatabase, backend, jobqd_path,
                     psql, read_response, wait_until)

CONTRACT_FLAGS = ("--listen", "--db", "--sweep-interval", "--retention", "--sync",
                  "--max-body-bytes", "--backoff-base", "--backoff-max", "--auth-token-file")
CONTRACT_ENV = ("JOBQ_LISTEN", "JOBQ_DB", "JOBQ_SWEEP_INTERVAL", "JOBQ_RETENTION", "JOBQ_SYNC",
                "JOBQ_MAX_BODY_BYTES", "JOBQ_BACKOFF_BASE", "JOBQ_BACKOFF_MAX",
                "JOBQ_AUTH_TOKEN_FILE")


class Shutdown(ServerTest):
    server_per_test = True

    def test_sigterm_answers_parked_polls_and_exits_0(self):
        socks = []
        try:
            for i in range(5):
                s = socket.create_connection((HOST, self.server.port), timeout=30)
                socks.append(s)
                data = json.dumps({"worker_id": "p%d" % i, "queue": self.q,
                                   "wait_seconds": 30}).encode()
                s.sendall(b"POST /claim HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          b"Content-Length: %d\r\n\r\n" % len(data) + data)
            time.sleep(0.5)  # let them park
            t0 = time.monotonic()
            self.server.proc.send_signal(signal.SIGTERM)
            for s in socks:
                r = read_response(s, timeout=10)
                self.assertEqual(r.status, 200, r)
                self.assertEqual(r.json, {"jobs": []})
            self.assertLess(time.monotonic() - t0, 5.0, "parked polls were not woken promptly")
            code = self.server.proc.wait(timeout=10)
            self.assertLess(time.monotonic() - t0, 8.0)
            self.assertEqual(code, 0, self.server.log_tail())
            self.server.terminate()
            self.server.proc = None
        finally:
            for s in socks:
                s.close()

    def test_sigint_exits_0(self):
        self.enqueue()
        self.c.close()
        self.server.proc.send_signal(signal.SIGINT)
        self.assertEqual(self.server.proc.wait(timeout=10), 0, self.server.log_tail())
        self.server.terminate()
        self.server.proc = None

    def test_idle_keepalive_connection_does_not_block_exit(self):
        self.enqueue()  # self.c stays open, idle, on a keep-alive connection
        t0 = time.monotonic()
        self.server.stop_checked()
        self.assertLess(time.monotonic() - t0, 8.0)


class StoreCallOutlivesStop(unittest.TestCase):
    """A write still waiting on the database when the stop timeout (10 s) runs out: jobqd
    abandons it (PostgreSQL: the statement is cancelled), answers it 503, stops the HTTP
    server only once no connection is suspended on the store, and exits 0; nothing is half
    written."""

    def test_write_blocked_past_the_stop_timeout_is_abandoned(self):
        if backend() != "pg":
            self.skipTest("a lock another session holds: PostgreSQL (SQLite waits at most "
                          "100 ms on a lock, and jobqd is the only process on its file)")
        srv = Server(args=["--pg-statement-timeout", "120000"])
        self.addCleanup(srv.cleanup)
        srv.start()
        holder = threading.Thread(target=psql, args=(srv.db_name,
                                  "BEGIN; LOCK TABLE jobq_jobs IN ACCESS EXCLUSIVE MODE;"
                                  " SELECT pg_sleep(60)"), kwargs={"timeout": 90, "check": False})
        holder.start()
        self.addCleanup(holder.join, 90)
        self.addCleanup(psql, srv.db_name, "SELECT pg_terminate_backend(pid) FROM "
                        "pg_stat_activity WHERE query LIKE '%pg_sleep(60)%' AND pid <> "
                        "pg_backend_pid()", check=False)
        wait_until(lambda: psql(srv.db_name, "SELECT count(*) FROM pg_locks WHERE "
                                "mode = 'AccessExclusiveLock' AND granted") != "0",
                   20, what="the table lock")
        answers = []

        def blocked_enqueue():
            c = srv.client(timeout=60)
            try:
                answers.append(c.post("/jobs", {"queue": "stuck", "payload": 1}))
            except OSError as e:
                answers.append(e)
            finally:
                c.close()

        t = threading.Thread(target=blocked_enqueue)
        t.start()
        self.addCleanup(t.join, 60)
        wait_until(lambda: psql(srv.db_name, "SELECT count(*) FROM pg_stat_activity WHERE "
                                "application_name = 'jobqd' AND wait_event_type = 'Lock'")
                   != "0", 20, what="the enqueue to wait on the lock")
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        code = srv.proc.wait(timeout=40)
        took = time.monotonic() - t0
        t.join(30)
        self.assertEqual(code, 0, srv.log_tail())
        self.assertGreater(took, 9.0)   # it waited the stop timeout first
        self.assertLess(took, 16.0)     # then the cancelled statement ended at once
        self.assertEqual(len(answers), 1)
        r = answers[0]
        self.assertFalse(isinstance(r, Exception), r)
        self.assertEqual(r.status, 503, r)
        self.assertEqual(r.json["error"]["code"], "unavailable")
        log = srv.log_tail(200)
        self.assertIn("abandoning the calls in progress", log)
        srv.proc = None
        # Nothing of the abandoned write remains once the lock is gone.
        psql(srv.db_name, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
             "query LIKE '%pg_sleep(60)%' AND pid <> pg_backend_pid()", check=False)
        holder.join(30)
        self.assertEqual(psql(srv.db_name, "SELECT count(*) FROM jobq_jobs"), "0")


class Persistence(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="jobq-persist-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.database = TestDatabase(self.dir)  # a SQLite file in self.dir, or a pg database
        self.addCleanup(self.database.drop)
        self.db = self.database.url

    def start(self):
        srv = Server(db=self.db)
        self.addCleanup(srv.cleanup)
        srv.start()
        return srv

    def test_data_survives_restart(self):
        srv = self.start()
        c = srv.client()
        r = c.post("/jobs", {"queue": "persist", "payload": {"keep": "me"}, "priority": 3,
                             "idempotency_key": "once"})
        self.assertEqual(r.status, 201, r)
        kept = r.json
        r = c.post("/jobs", {"queue": "persist", "payload": "run me"})
        self.assertEqual(r.status, 201, r)
        r = c.post("/claim", {"worker_id": "w", "queue": "persist"})
        self.assertEqual(r.status, 200, r)
        running = r.json["jobs"][0]
        self.assertEqual(running["id"], kept["id"])
        r = c.post("/jobs/%d/heartbeat" % running["id"],
                   {"lease_token": running["lease_token"], "progress": 50,
                    "lease_seconds": 600})
        self.assertEqual(r.status, 200, r)
        before = c.get("/jobs/%d" % kept["id"]).json
        c.close()
        srv.stop_checked()

        srv2 = self.start()
        c2 = srv2.client()
        r = c2.get("/jobs/%d" % kept["id"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json, before)
        self.assertEqual(r.json["payload"], {"keep": "me"})
        self.assertEqual(r.json["progress"], 50)
        # The idempotency key is remembered.
        r = c2.post("/jobs", {"queue": "persist", "payload": 0, "idempotency_key": "once"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["id"], kept["id"])
        # The lease held before the restart is still the lease.
        r = c2.post("/jobs/%d/complete" % kept["id"], {"lease_token": running["lease_token"],
                                                       "result": "after restart"})
        self.assertEqual(r.status, 200, r)
        # New ids keep growing.
        r = c2.post("/jobs", {"queue": "persist", "payload": 2})
        self.assertGreater(r.json["id"], kept["id"] + 1)
        c2.close()
        srv2.stop_checked()


class CommandLine(unittest.TestCase):
    def run_jobqd(self, args, env=None, timeout=10):
        e = {k: v for k, v in os.environ.items() if not k.startswith("JOBQ_")}
        e.update(env or {})
        return subprocess.run([jobqd_path()] + list(args), stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=timeout, env=e)

    def test_help_lists_every_setting(self):
        p = self.run_jobqd(["--help"])
        self.assertEqual(p.returncode, 0, p.stderr)
        text = (p.stdout + p.stderr).decode()
        for flag in CONTRACT_FLAGS:
            self.assertIn(flag, text)
        for var in CONTRACT_ENV:
            self.assertIn(var, text)

    def test_bad_value_fails_naming_the_key(self):
        tmp = tempfile.mkdtemp(prefix="jobq-cli-")
        self.addCleanup(shutil.rmtree, tmp, True)
        db = os.path.join(tmp, "x.db")
        for args, key in ((["--sweep-interval", "abc"], "sweep-interval"),
                          (["--sync", "sometimes"], "sync"),
                          (["--max-body-bytes", "-5"], "max-body-bytes"),
                          (["--listen", "nonsense"], "listen"),
                          (["--no-such-flag", "1"], "no-such-flag")):
            p = self.run_jobqd(args + ["--db", db])
            self.assertNotEqual(p.returncode, 0, args)
            self.assertIn(key, (p.stdout + p.stderr).decode(), args)
        p = self.run_jobqd(["--db", db], env={"JOBQ_SWEEP_INTERVAL": "never",
                                              "JOBQ_LISTEN": "127.0.0.1:1"})
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("JOBQ_SWEEP_INTERVAL", (p.stdout + p.stderr).decode())

    def test_environment_configures_server(self):
        srv = Server(args=("--max-body-bytes", "2048"), via_env=True)
        self.addCleanup(srv.cleanup)
        srv.start()
        if backend() == "sqlite":
            self.assertTrue(os.path.exists(srv.db))
        else:  # JOBQ_DB named this database: jobqd made its tables in it
            self.assertNotEqual(srv.sql("SELECT count(*) FROM pg_tables WHERE schemaname "
                                        "NOT IN ('pg_catalog', 'information_schema')"), "0")
        c = Client(srv.port)
        r = c.post("/jobs", {"payload": "x" * 3000})
        self.assertEqual(r.status, 413, r)
        c.close()
        srv.stop_checked()

    def test_env_overridden_by_flag(self):
        srv = Server(args=("--max-body-bytes", "100000"), via_env=True,
                     env={"JOBQ_MAX_BODY_BYTES": "2048"})
        self.addCleanup(srv.cleanup)
        srv.start()
        c = Client(srv.port)
        r = c.post("/jobs", {"payload": "x" * 3000})
        self.assertEqual(r.status, 201, r)
        c.close()
        srv.stop_checked()


class StopUnderLoad(unittest.TestCase):
    """SIGTERM while clients keep sending requests on many connections, over and over, with a
    pool of HTTP threads: every stop exits 0 (libmicrohttpd's quiesce with a thread pool on
    epoll raced its workers and aborted, about one stop in a few hundred)."""

    ROUNDS = int(os.environ.get("JOBQ_STOP_ROUNDS", "12"))
    CLIENTS = 6

    def test_sigterm_under_load_exits_0(self):
        srv = Server(args=("--threads", "4"))
        self.addCleanup(srv.cleanup)
        for rnd in range(self.ROUNDS):
            srv.start() if rnd == 0 else srv.restart()
            stop = threading.Event()

            def hammer():
                for _ in range(5000):  # bounded; ends sooner when the server goes away
                    if stop.is_set():
                        return
                    try:
                        c = Client(srv.port, timeout=5)
                        for _ in range(20):
                            c.get("/healthz")
                        c.close()
                    except (OSError, AssertionError, http.client.HTTPException):
                        return

            threads = [threading.Thread(target=hammer) for _ in range(self.CLIENTS)]
            for t in threads:
                t.start()
            time.sleep(0.3)
            code = srv.terminate()
            stop.set()
            for t in threads:
                t.join(timeout=30)
            self.assertEqual(code, 0, "round %d\n%s" % (rnd, srv.log_tail()))
            srv.proc = None


@unittest.skipIf(backend() != "pg", "PostgreSQL only: news from another process")
class StopWhileAnotherProcessNotifies(unittest.TestCase):
    """Two processes on one database: B enqueues without pause to the queue on which A has
    claims parked, so A's listener keeps delivering B's news into A's wait queue; A is stopped
    with SIGTERM, again and again. The listener lives until the store is closed, so the wait
    queue it delivers into must outlive the store: every stop exits 0 (under AddressSanitizer
    a notification delivered into a freed wait queue aborts the process)."""

    ROUNDS = int(os.environ.get("JOBQ_STOP_ROUNDS", "12"))

    def test_sigterm_while_the_other_process_notifies_exits_0(self):
        b = Server()
        self.addCleanup(b.cleanup)
        b.start()
        a = Server(db=b.db)
        self.addCleanup(a.cleanup)
        q = "notify-%d" % os.getpid()
        stop = threading.Event()
        sent = [0]

        def produce():
            c = Client(b.port, timeout=10)
            for i in range(200000):  # bounded; ends when the test says so
                if stop.is_set():
                    break
                r = c.post("/jobs", {"queue": q, "payload": {"i": i}})
                if r.status != 201:
                    break
                sent[0] += 1
            c.close()

        producer = threading.Thread(target=produce)
        producer.start()
        self.addCleanup(producer.join, 60)
        self.addCleanup(stop.set)
        for rnd in range(self.ROUNDS):
            a.start() if rnd == 0 else a.restart()
            socks = []
            try:
                for i in range(4):
                    s = socket.create_connection((HOST, a.port), timeout=30)
                    socks.append(s)
                    data = json.dumps({"worker_id": "p%d" % i, "queue": q,
                                       "wait_seconds": 30, "lease_seconds": 1}).encode()
                    s.sendall(b"POST /claim HTTP/1.1\r\nHost: x\r\n"
                              b"Content-Type: application/json\r\n"
                              b"Content-Length: %d\r\n\r\n" % len(data) + data)
                before = sent[0]
                wait_until(lambda: sent[0] >= before + 20, 10, what="B enqueues")
                code = a.terminate()
                self.assertEqual(code, 0, "round %d\n%s" % (rnd, a.log_tail()))
                a.proc = None
            finally:
                for s in socks:
                    s.close()
        stop.set()
        producer.join(60)
        self.assertGreater(sent[0], 0)


if __name__ == "__main__":
    unittest.main()
