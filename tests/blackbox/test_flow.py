"""Flow control (API.md "Flow control"): the new enqueue fields as the job object shows them,
their bounds, and expiring jobs (never claimed after the deadline, cancelled as "expired" by
the sweeper). Both backends."""

import re
import time
import unittest

from harness import ServerTest, now, wait_until

SWEEP = 1  # --sweep-interval of the classes that wait for the sweeper
# How long after its expires_at a job must read cancelled: the second it expires in (the
# clock's resolution), one sweep interval, and slack for a loaded machine.
EXPIRY_SLACK = 1 + SWEEP + 8


class JobFields(ServerTest):
    def test_new_fields_are_null_when_unset(self):
        j = self.enqueue()
        self.assertIsNone(j["concurrency_key"])
        self.assertIsNone(j["expires_at"])
        self.assertIsNone(j["dedup"])
        self.assertEqual(self.get_job(j["id"])["concurrency_key"], None)

    def test_concurrency_key_and_expiry_are_kept(self):
        at = now() + 3600
        j = self.enqueue(concurrency_key="tenant:42/a*", expires_at=at)
        self.assertEqual(j["concurrency_key"], "tenant:42/a*")
        self.assertEqual(j["expires_at"], at)
        got = self.get_job(j["id"])
        self.assertEqual((got["concurrency_key"], got["expires_at"]), ("tenant:42/a*", at))
        c = self.claim_one()
        self.assertEqual(c["concurrency_key"], "tenant:42/a*")

    def test_expires_in_seconds_is_resolved_at_enqueue(self):
        before = now()
        j = self.enqueue(expires_in_seconds=600)
        self.assertGreaterEqual(j["expires_at"], before + 600)
        self.assertLessEqual(j["expires_at"], now() + 600 + 1)
        self.assertEqual(self.get_job(j["id"])["expires_at"], j["expires_at"])

    def test_batch_elements_keep_their_fields(self):
        r = self.c.post("/jobs/batch", {"jobs": [
            {"queue": self.q, "payload": 1, "concurrency_key": "k1"},
            {"queue": self.q, "payload": 2, "expires_in_seconds": 60},
        ]})
        self.assertEqual(r.status, 201, r)
        a, b = r.json["jobs"]
        self.assertEqual((a["concurrency_key"], a["expires_at"]), ("k1", None))
        self.assertEqual(b["concurrency_key"], None)
        self.assertIsInstance(b["expires_at"], int)

    def test_bad_values_name_the_field(self):
        cases = [
            ({"concurrency_key": ""}, "concurrency_key"),
            ({"concurrency_key": "k" * 201}, "concurrency_key"),
            ({"concurrency_key": 7}, "concurrency_key"),
            ({"expires_at": now() - 10}, "expires_at"),
            ({"expires_at": 4102444800}, "expires_at"),
            ({"expires_at": now() + 60, "expires_in_seconds": 60}, "expires_in_seconds"),
            ({"expires_in_seconds": 0}, "expires_in_seconds"),
            ({"expires_in_seconds": 31536001}, "expires_in_seconds"),
        ]
        for extra, field in cases:
            body = {"queue": self.q, "payload": 1}
            body.update(extra)
            r = self.c.post("/jobs", body)
            self.assert_error(r, 400, "invalid_request", field)
        r = self.c.post("/jobs/batch", {"jobs": [
            {"queue": self.q, "payload": 1},
            {"queue": self.q, "payload": 2, "expires_at": now() - 1},
        ]})
        self.assert_error(r, 400, "invalid_request", "jobs[1].expires_at")
        r = self.c.get("/jobs?queue=%s" % self.q)
        self.assertEqual(r.json["jobs"], [], "a refused request created nothing")


class Expiry(ServerTest):
    """expires_at / expires_in_seconds: a job still queued at its deadline is never claimed,
    and the sweeper cancels it with error_code "expired" within one --sweep-interval; a
    running job is not expired by it."""

    server_args = ("--sweep-interval", str(SWEEP))

    def wait_expired(self, job_id, expires_at):
        def cancelled():
            j = self.get_job(job_id)
            return j if j["status"] == "cancelled" else None
        j = wait_until(cancelled, expires_at - time.time() + EXPIRY_SLACK, 0.1,
                       "job %d to be cancelled as expired" % job_id)
        self.assertEqual(j["error_code"], "expired", j)
        self.assertIsNone(j["error_detail"], j)
        self.assertEqual(j["attempts"], 0, j)
        # finished in the second it was swept: at or after the deadline, within the slack
        self.assertGreaterEqual(j["finished_at"], expires_at, j)
        self.assertLessEqual(j["finished_at"], expires_at + EXPIRY_SLACK, j)
        return j

    def queue_row(self, queue):
        rows = {row["name"]: row for row in self.c.get("/queues").json["queues"]}
        return rows.get(queue)

    def test_queued_job_is_never_claimed_after_its_deadline(self):
        j = self.enqueue(expires_in_seconds=1)
        keep = self.enqueue(expires_in_seconds=3600)
        # Wait for the deadline (not for the sweeper): from then on a claim passes it by.
        wait_until(lambda: time.time() >= j["expires_at"], 5, 0.05, "the deadline")
        got = self.claim_one()
        self.assertEqual(got["id"], keep["id"], "the expired job was claimed")
        self.claim(expect=0)
        self.wait_expired(j["id"], j["expires_at"])
        listed = [x["id"] for x in self.list_all("status=cancelled&queue=%s" % self.q)]
        self.assertEqual(listed, [j["id"]])
        row = self.queue_row(self.q)
        self.assertEqual((row["queued"], row["running"], row["cancelled"]), (0, 1, 1), row)

    def test_running_job_is_not_expired(self):
        run = self.enqueue(expires_in_seconds=1)
        c = self.claim_one()
        self.assertEqual(c["id"], run["id"])
        # A queued twin with the same deadline: once the sweeper cancelled it, a sweep after
        # the deadline has run and passed the running job by.
        twin = self.enqueue(expires_at=run["expires_at"])
        self.wait_expired(twin["id"], twin["expires_at"])
        self.assertEqual(self.get_job(run["id"])["status"], "running")
        self.act(run["id"], "heartbeat", {"lease_token": c["lease_token"]})
        done = self.act(run["id"], "complete", {"lease_token": c["lease_token"]}).json
        self.assertEqual(done["status"], "succeeded")
        row = self.queue_row(self.q)
        self.assertEqual((row["queued"], row["running"], row["succeeded"], row["cancelled"]),
                         (0, 0, 1, 1), row)

    def test_job_due_after_its_deadline_is_cancelled(self):
        j = self.enqueue(delay_seconds=60, expires_in_seconds=2)
        self.assertGreater(j["run_at"], j["expires_at"])
        self.wait_expired(j["id"], j["expires_at"])
        self.assertEqual(self.list_all("status=queued&queue=%s" % self.q), [])
        row = self.queue_row(self.q)
        self.assertEqual((row["queued"], row["cancelled"]), (0, 1), row)

    def test_expired_jobs_are_counted_in_metrics(self):
        jobs = [self.enqueue(expires_in_seconds=1) for _ in range(3)]
        for j in jobs:
            self.wait_expired(j["id"], j["expires_at"])
        # Counted once store_sweep returns (on PostgreSQL after the retention transaction).
        line = re.compile(r'^jobq_jobs_expired_total\{queue="%s"\} (\S+)$' % re.escape(self.q),
                          re.M)

        def counted():
            m = line.search(self.c.get("/metrics").body.decode())
            return m and float(m.group(1)) == 3
        wait_until(counted, 10, 0.1, "jobq_jobs_expired_total to count 3")
        self.assertIn("# TYPE jobq_jobs_expired_total counter", self.c.get("/metrics").body.decode())


if __name__ == "__main__":
    unittest.main()
