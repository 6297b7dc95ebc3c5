"""Attempt history (API.md "Operating"): GET /jobs/{id}/attempts, one entry per claim with
each outcome (retried, lease expired, cancelled, succeeded, timeout, failed), 404 for an
unknown job, removed with the job, the newest 1,000 kept. Both backends.

Split from test_operating, which holds the lock "load" for its parked long polls and its
two processes, so that it holds none under parallel ctest: it makes no load (its longest
case, the 1,000 attempts, is 2,000 requests one after another) and its waits for the sweeper
are bounded at 15 s (CONTRIBUTING.md "The suite's time")."""

import time
import unittest

from harness import ServerTest, backend


def attempts(test, job_id, status=200):
    r = test.c.get("/jobs/%d/attempts" % job_id)
    test.assertEqual(r.status, status, r)
    if status != 200:
        return r
    test.assertEqual(set(r.json), {"attempts"}, r)
    for a in r.json["attempts"]:
        test.assertEqual(set(a), {"attempt", "worker_id", "claimed_at", "ended_at", "outcome",
                                  "error_code", "error_detail"}, a)
    return r.json["attempts"]



class Attempts(ServerTest):
    server_args = ("--sweep-interval", "1", "--backoff-base", "1", "--backoff-max", "1")

    def test_one_entry_per_claim_with_each_outcome(self):
        job = self.enqueue(max_attempts=10)
        self.assertEqual(attempts(self, job["id"]), [])
        # 1: failed with retry
        c = self.claim_one("w1")
        run = attempts(self, job["id"])
        self.assertEqual(len(run), 1)
        self.assertEqual(run[0]["outcome"], "running")
        self.assertIsNone(run[0]["ended_at"])
        self.assertEqual(run[0]["worker_id"], "w1")
        self.assertEqual(run[0]["attempt"], 1)
        self.assertEqual(run[0]["claimed_at"], c["claimed_at"])
        self.act(c["id"], "fail", {"lease_token": c["lease_token"], "error_code": "boom",
                                   "error_detail": {"line": 3}, "retry_in_seconds": 0})
        # 2: lease expired (the sweeper)
        c = self.claim_one("w2", lease_seconds=1)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and self.get_job(c["id"])["status"] == "running":
            time.sleep(0.2)
        self.assertEqual(self.get_job(c["id"])["error_code"], "lease_expired")
        # 3: cancelled while running, after a hand retry: 4: completed
        deadline = time.monotonic() + 15
        c = None
        while time.monotonic() < deadline and c is None:  # the backoff: up to ~1 s
            jobs = self.claim("w3")
            c = jobs[0] if jobs else None
            if c is None:
                time.sleep(0.2)
        self.assertIsNotNone(c)
        self.act(c["id"], "cancel")
        self.act(c["id"], "retry")
        c = self.claim_one("w4")
        self.act(c["id"], "complete", {"lease_token": c["lease_token"], "result": 1})
        got = attempts(self, job["id"])
        self.assertEqual([a["outcome"] for a in got],
                         ["retried", "lease_expired", "cancelled", "succeeded"])
        self.assertEqual([a["worker_id"] for a in got], ["w1", "w2", "w3", "w4"])
        self.assertEqual([a["attempt"] for a in got], [1, 2, 3, 1])  # retry resets attempts
        self.assertEqual(got[0]["error_code"], "boom")
        self.assertEqual(got[0]["error_detail"], {"line": 3})
        self.assertEqual(got[1]["error_code"], "lease_expired")
        for a in got[2:]:
            self.assertIsNone(a["error_code"])
            self.assertIsNone(a["error_detail"])
        for a in got:
            self.assertIsNotNone(a["ended_at"])
            self.assertGreaterEqual(a["ended_at"], a["claimed_at"])

    def test_timeout_and_final_failure(self):
        job = self.enqueue(max_attempts=1, max_runtime_seconds=1)
        self.claim_one("w1", lease_seconds=600)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and self.get_job(job["id"])["status"] == "running":
            time.sleep(0.2)
        self.assertEqual(self.get_job(job["id"])["status"], "failed")
        got = attempts(self, job["id"])
        self.assertEqual([(a["outcome"], a["error_code"]) for a in got], [("timeout", "timeout")])
        job = self.enqueue(max_attempts=5)
        c = self.claim_one("w1")
        self.act(c["id"], "fail", {"lease_token": c["lease_token"], "retry": False,
                                   "error_code": "fatal"})
        self.assertEqual([a["outcome"] for a in attempts(self, job["id"])], ["failed"])

    def test_unknown_job_is_404(self):
        self.assert_error(attempts(self, 987654321, status=404), 404, "not_found")

    def test_removed_with_the_job(self):
        job = self.enqueue()
        c = self.claim_one()
        self.act(c["id"], "cancel")
        self.assertEqual(len(attempts(self, job["id"])), 1)
        r = self.c.request("DELETE", "/queues/%s/jobs?status=cancelled" % self.q)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json, {"deleted": 1})
        attempts(self, job["id"], status=404)
        if backend() == "pg":
            self.assertEqual(self.server.sql(
                "SELECT count(*) FROM jobq_attempts WHERE job_id = %d" % job["id"]), "0")

    def test_keeps_the_newest_1000(self):
        job = self.enqueue(max_attempts=1000)
        for i in range(1001):
            c = self.claim_one("w%d" % i)
            if i < 1000:
                self.act(c["id"], "fail", {"lease_token": c["lease_token"],
                                           "retry_in_seconds": 0})
            if i == 999:  # the 1000th attempt failed the job: a hand retry allows one more
                self.assertEqual(self.get_job(job["id"])["status"], "failed")
                self.act(job["id"], "retry")
        got = attempts(self, job["id"])
        self.assertEqual(len(got), 1000)
        self.assertEqual(got[0]["worker_id"], "w1")  # w0's was dropped
        self.assertEqual(got[-1]["worker_id"], "w1000")
        self.assertEqual(got[-1]["outcome"], "running")


if __name__ == "__main__":
    unittest.main()
