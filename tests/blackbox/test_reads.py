"""Slow reads do not starve the rest. GET /stats/throughput reads a table (jobq_throughput)
that claims, completes and enqueues never touch; a psql session holds an ACCESS EXCLUSIVE
lock on it, so every such read waits in PostgreSQL. With more of them waiting than jobqd has
HTTP threads (--threads) and more than its pool has connections, an enqueue, claim and
complete must still each answer within CYCLE_BUDGET: reads run on reader threads of their
own, in a bounded queue (past it: 503 at once), and leave the writer its pooled connections.
Once the lock goes, every read that was queued answers 200; at a stop, the reads still
waiting answer 503 and jobqd exits 0.

PostgreSQL only: under SQLite a read never waits for another session (WAL), and jobqd is
the only process on its file, so there is no way to make a read slow from outside."""

import signal
import threading
import time
import unittest

from harness import Server, backend, psql, wait_until

CYCLE_BUDGET = 2.0  # seconds each of enqueue, claim and complete may take
LOCK_SQL = ("BEGIN; LOCK TABLE jobq_throughput IN ACCESS EXCLUSIVE MODE; "
            "SELECT pg_sleep(120)")
READ_QUEUE_PER_THREAD = 64  # queued reads per --threads (api/http.h)


@unittest.skipIf(backend() != "pg", "PostgreSQL only: a read that another session makes "
                 "wait (SQLite readers never wait for a writer, and jobqd is the only "
                 "process on its file)")
class SlowReads(unittest.TestCase):
    def start(self, *args):
        srv = Server(args=["--pg-statement-timeout", "60000"] + list(args))
        self.addCleanup(srv.cleanup)
        srv.start()
        self.srv = srv
        return srv

    def hold_lock(self):
        """Lock jobq_throughput from a psql session until the test's cleanup ends it."""
        srv = self.srv
        holder = threading.Thread(target=psql, args=(srv.db_name, LOCK_SQL),
                                  kwargs={"timeout": 150, "check": False}, daemon=True)
        holder.start()
        self.addCleanup(holder.join, 30)
        self.addCleanup(self.release)
        wait_until(lambda: psql(srv.db_name, "SELECT count(*) FROM pg_locks l JOIN pg_class c "
                                "ON c.oid = l.relation WHERE c.relname = 'jobq_throughput' "
                                "AND l.mode = 'AccessExclusiveLock' AND l.granted") != "0",
                   20, what="the lock on jobq_throughput")

    def release(self):
        psql(self.srv.db_name, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
             "query LIKE '%pg_sleep(120)%' AND pid <> pg_backend_pid()", check=False)

    def waiting(self):
        """jobqd's sessions waiting on a lock."""
        return int(psql(self.srv.db_name, "SELECT count(*) FROM pg_stat_activity WHERE "
                        "application_name = 'jobqd' AND wait_event_type = 'Lock'"))

    def slow_reads(self, n):
        """Start n GET /stats/throughput, each on its own connection; returns (answers,
        threads): answers gets (status, error code or None, seconds) as they come."""
        answers = []

        def read():
            c = self.srv.client(timeout=120)
            t0 = time.monotonic()
            try:
                r = c.get("/stats/throughput")
                code = r.json["error"]["code"] if r.status != 200 and r.json else None
                answers.append((r.status, code, time.monotonic() - t0))
            except (OSError, AssertionError) as e:
                answers.append((repr(e), None, time.monotonic() - t0))
            finally:
                c.close()

        threads = [threading.Thread(target=read, daemon=True) for _ in range(n)]
        for t in threads:
            t.start()
        self.addCleanup(self.join, threads)  # runs before the lock's cleanup: release first
        return answers, threads

    def join(self, threads):
        self.release()
        for t in threads:
            t.join(60)

    def timed(self, c, method, path, body=None):
        """One request that must answer 2xx within CYCLE_BUDGET."""
        t0 = time.monotonic()
        try:
            r = c.request(method, path, body=body, timeout=CYCLE_BUDGET + 3)
        except OSError as e:
            self.fail("%s %s: no answer within %.0fs while slow reads wait (%r)"
                      % (method, path, CYCLE_BUDGET + 3, e))
        took = time.monotonic() - t0
        self.slowest = max(getattr(self, "slowest", 0.0), took)
        self.assertLess(r.status, 300, "%s %s -> %r" % (method, path, r))
        self.assertLess(took, CYCLE_BUDGET, "%s %s took %.2fs while slow reads wait"
                        % (method, path, took))
        return r.json

    def cycle(self, queue, rounds=3):
        """Enqueue, claim and complete `rounds` jobs, each step within CYCLE_BUDGET, on a new
        connection (it must be accepted and served too)."""
        c = self.srv.client(timeout=30)
        try:
            for i in range(rounds):
                job = self.timed(c, "POST", "/jobs", {"queue": queue, "payload": i})
                got = self.timed(c, "POST", "/claim", {"worker_id": "w", "queue": queue})
                self.assertEqual([j["id"] for j in got["jobs"]], [job["id"]])
                done = self.timed(c, "POST", "/jobs/%d/complete" % job["id"],
                                  {"lease_token": got["jobs"][0]["lease_token"]})
                self.assertEqual(done["status"], "succeeded")
        finally:
            c.close()
        print("\n%s: slowest step %.3fs with %d jobqd sessions waiting on the lock"
              % (self._testMethodName, self.slowest, self.waiting()))

    def writes_go_on(self, queue, reads, waiting):
        """Hold the lock, start `reads` slow reads, wait until `waiting` of jobqd's sessions
        wait on the lock, then cycle() while none of the reads has answered; once the lock is
        gone every read answers 200, and jobqd stops cleanly."""
        self.hold_lock()
        answers, threads = self.slow_reads(reads)
        wait_until(lambda: self.waiting() >= waiting, 20,
                   what="%d reads waiting on the lock" % waiting)
        self.cycle(queue)
        self.assertEqual(answers, [], "a read answered while the lock was held")
        self.join(threads)
        self.assertEqual(sorted(a[0] for a in answers), [200] * reads, answers)
        self.srv.stop_checked()

    def test_claims_and_completes_answer_while_slow_reads_fill_every_thread(self):
        self.start("--threads", "4")
        self.writes_go_on("fill", reads=16, waiting=4)  # 4x --threads

    def test_reads_leave_the_writer_its_connections(self):
        # 8 reader threads and 3 pooled connections: reads may take only what the writer
        # and the sweeper do not need (pg_pool.c), so the writes still get one. (No read
        # waits past the checkout timeout here: a 503 would show.)
        self.start("--threads", "8", "--pool-size", "3", "--pg-checkout-timeout", "20000")
        self.writes_go_on("share", reads=12, waiting=1)

    def test_reads_past_the_queue_answer_503_at_once(self):
        srv = self.start("--threads", "1")
        self.hold_lock()
        accepted = 1 + READ_QUEUE_PER_THREAD  # one running on the reader thread, the queue
        extra = 7
        answers, threads = self.slow_reads(accepted + extra)
        wait_until(lambda: len(answers) >= extra, 20, what="the reads past the queue")
        self.assertTrue(all(a[:2] == (503, "unavailable") for a in answers), answers)
        self.assertTrue(all(a[2] < 10 for a in answers), answers)
        self.cycle("bound", rounds=1)
        self.join(threads)
        statuses = [a[0] for a in answers]
        # The reader thread takes the first read off the queue at once; should the queue
        # have filled before it did, one more read is refused.
        self.assertIn(statuses.count(503), (extra, extra + 1), answers)
        self.assertEqual(statuses.count(200), len(answers) - statuses.count(503), answers)
        srv.stop_checked()

    def test_stop_answers_the_waiting_reads_and_exits_0(self):
        srv = self.start("--threads", "1")
        self.hold_lock()
        answers, threads = self.slow_reads(10)
        wait_until(lambda: self.waiting() >= 1, 20, what="a read waiting on the lock")
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        code = srv.proc.wait(timeout=40)
        took = time.monotonic() - t0
        for t in threads:
            t.join(30)
        self.assertEqual(code, 0, srv.log_tail())
        self.assertLess(took, 16.0)  # the stop timeout (10 s), then every read ends at once
        self.assertEqual([a[:2] for a in answers], [(503, "unavailable")] * 10, answers)
        srv.terminate()
        srv.proc = None


if __name__ == "__main__":
    unittest.main()
