"""A jobqd whose clock lags its store's: libfaketime (LD_PRELOAD, FAKETIME=-30) shows the
process the time 30 s before it is. Every time the store keeps for a job is on the store's
clock, so a lagging host shortens no delay:
- on PostgreSQL the store's clock is the database's (the test cluster runs on this machine,
  so it is the test's own clock): a job enqueued with delay_seconds is handed out no earlier
  than delay_seconds after it was enqueued, by that clock, and so is a failed job's retry;
  created_at, claimed_at, heartbeat_at, lease_expires_at, finished_at and a retried job's
  run_at are the database's time;
- on SQLite the store's clock is the process's own (the faked one): the same holds by it.
And the SQS listener checks a SigV4 date on the store's clock too (SigV4OnTheStoreClock).
Every wait is bounded; claims are polled with a deadline.
"""

import os
import shutil
import tempfile
import time
import unittest

import test_sqs_auth
from harness import WRAPPER, Client, Server, ServerTest, backend, faketime_env, free_port

LAG = 30  # seconds the jobqd's clock is behind the test's
DELAY = 5  # delay_seconds and retry_in_seconds of the jobs below
POLL = 0.1  # seconds between two claims while waiting for a job to come due


@unittest.skipIf(WRAPPER, "LD_PRELOAD would reach the wrapper as well as jobqd")
class LaggingHost(ServerTest):
    server_args = ("--sweep-interval", "1")

    @classmethod
    def setUpClass(cls):
        cls.server = Server(cls.server_args, env=faketime_env(-LAG))
        try:
            cls.server.start()
        except Exception:
            cls.server.cleanup()
            raise

    def store_now(self):
        """The store's clock, in epoch seconds (a float)."""
        return time.time() - (0 if backend() == "pg" else LAG)

    def claim_when_due(self, job, bound):
        """Claim from self.q every POLL seconds until a job comes (at most `bound` seconds).
        Asserts it is `job` and returns it with the store's time it was answered at."""
        deadline = time.monotonic() + bound
        while True:
            jobs = self.claim()
            if jobs:
                answered = self.store_now()
                self.assertEqual([j["id"] for j in jobs], [job["id"]], jobs)
                return jobs[0], answered
            self.assertLess(time.monotonic(), deadline,
                            "job %d (run_at %d) not handed out within %.0fs (store time %.1f)"
                            % (job["id"], job["run_at"], bound, self.store_now()))
            time.sleep(POLL)

    def assert_due_no_earlier(self, job, since, answered):
        """job, handed out at store time `answered`, was due DELAY seconds after store time
        `since` (whole seconds: run_at is the second after which the job is due, so it may be
        handed out up to 1 s less than DELAY after `since`) and was not handed out before."""
        self.assertGreaterEqual(job["run_at"], int(since) + DELAY, job)
        self.assertGreaterEqual(answered, job["run_at"], "handed out before its run_at")
        self.assertGreaterEqual(answered - since, DELAY - 1, "the delay was shortened")
        self.assertLess(answered - since, DELAY + 3, "handed out late")

    def test_the_lag_is_real(self):
        """jobqd does see the time LAG seconds early (else the tests below prove nothing)."""
        j = self.enqueue()
        self.assert_near(j["created_at"], int(self.store_now()), 2)
        if backend() == "pg":
            self.assertRegex(self.server.log_tail(200),
                             r"this host's clock is (29|30)\d\d\d ms behind the database's")

    def test_a_delay_holds_on_the_store_clock(self):
        since = self.store_now()
        j = self.enqueue(delay_seconds=DELAY)
        self.assertEqual(self.claim(), [], "handed out at once")
        self.assertEqual(j["run_at"] - j["created_at"], DELAY, j)
        got, answered = self.claim_when_due(j, DELAY + 5)
        self.assert_due_no_earlier(j, since, answered)
        self.assert_near(got["claimed_at"], int(answered), 1)

    def test_a_batch_delay_holds_on_the_store_clock(self):
        since = self.store_now()
        r = self.c.post("/jobs/batch", {"jobs": [{"queue": self.q, "payload": 1,
                                                  "delay_seconds": DELAY}]})
        self.assertEqual(r.status, 201, r)
        j = r.json["jobs"][0]
        self.assertEqual(self.claim(), [], "handed out at once")
        self.assertEqual(j["run_at"] - j["created_at"], DELAY, j)
        _, answered = self.claim_when_due(j, DELAY + 5)
        self.assert_due_no_earlier(j, since, answered)

    def test_leases_and_retries_follow_the_store_clock(self):
        j = self.enqueue()
        got = self.claim_one(lease_seconds=40)
        self.assertEqual(got["id"], j["id"])
        now = int(self.store_now())
        self.assert_near(got["claimed_at"], now, 2)
        self.assertEqual(got["lease_expires_at"] - got["claimed_at"], 40, got)
        hb = self.act(j["id"], "heartbeat", {"lease_token": got["lease_token"],
                                             "lease_seconds": 50}).json
        self.assert_near(hb["heartbeat_at"], now, 2)
        self.assertEqual(hb["lease_expires_at"] - hb["heartbeat_at"], 50, hb)
        # A worker's retry_in_seconds is a delay too.
        since = self.store_now()
        failed = self.act(j["id"], "fail", {"lease_token": got["lease_token"],
                                            "retry_in_seconds": DELAY}).json
        self.assertEqual(failed["status"], "queued", failed)
        self.assertEqual(self.claim(), [], "a retry handed out at once")
        again, answered = self.claim_when_due(failed, DELAY + 5)
        self.assert_due_no_earlier(failed, since, answered)
        # Cancel's finished_at and retry's run_at (= now: claimable at once).
        cancelled = self.act(j["id"], "cancel").json
        self.assert_near(cancelled["finished_at"], int(self.store_now()), 2)
        retried = self.act(j["id"], "retry").json
        self.assert_near(retried["run_at"], int(self.store_now()), 2)
        self.assertEqual(self.claim_one()["id"], j["id"])


SIGV4_LAG = 20 * 60  # past SigV4's 15 minutes


@unittest.skipIf(WRAPPER, "LD_PRELOAD would reach the wrapper as well as jobqd")
class SigV4OnTheStoreClock(unittest.TestCase):
    """The SQS listener checks a request's X-Amz-Date against the store's clock: a jobqd
    whose host lags 20 minutes accepts a request signed now on PostgreSQL (the database's
    clock, this test's), and refuses it as RequestExpired on SQLite (the process's clock is
    the store's there)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="jobq-sigv4-")
        tokens = os.path.join(cls.tmp, "tokens")
        with open(tokens, "w") as f:
            f.write("%s:admin\n" % test_sqs_auth.pair(test_sqs_auth.ADMIN))
        os.chmod(tokens, 0o600)
        cls.sqs_port = free_port()
        cls.server = Server(("--auth-token-file", tokens,
                             "--sqs-listen", "127.0.0.1:%d" % cls.sqs_port),
                            env=faketime_env(-SIGV4_LAG))
        try:
            cls.server.start()
        except Exception:
            cls.server.cleanup()
            shutil.rmtree(cls.tmp, True)
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            cls.server.stop_checked()
        finally:
            cls.server.cleanup()
            shutil.rmtree(cls.tmp, True)

    def test_date_checked_on_the_store_clock(self):
        body = b'{"QueueName": "sigv4-clock"}'
        hdrs = test_sqs_auth.sign("POST", "127.0.0.1:%d" % self.sqs_port, "/", {
            "Content-Type": "application/x-amz-json-1.0",
            "X-Amz-Target": "AmazonSQS.CreateQueue"}, body, test_sqs_auth.ADMIN)
        c = Client(self.sqs_port)
        self.addCleanup(c.close)
        r = c.request("POST", "/", raw=body, headers=hdrs)
        if backend() == "pg":
            self.assertEqual(r.status, 200, r)
        else:
            self.assertEqual(r.status, 400, r)
            self.assertEqual(r.header("x-amzn-query-error"), "RequestExpired;Sender", r)


if __name__ == "__main__":
    unittest.main()
