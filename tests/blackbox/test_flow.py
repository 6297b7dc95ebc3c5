"""Flow control (API.md "Flow control"): the new enqueue fields as the job object shows them,
their bounds, and expiring jobs (never claimed after the deadline, cancelled as "expired" by
the sweeper). Both backends."""

import re
import sqlite3
import time
import unittest

from harness import ServerTest, backend, now, wait_until

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
    """expires_at / expires_in_seconds: a job still queued (or blocked) at its deadline is
    never claimed, and the sweeper cancels it with error_code "expired" within one
    --sweep-interval; a running job is not expired by it."""

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
        # 3 s: the twin below is enqueued with the same deadline, still ahead on a loaded
        # machine (an expires_at at or before now is refused).
        run = self.enqueue(expires_in_seconds=3)
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

    def test_blocked_job_expires_and_its_dependents_follow(self):
        parent = self.enqueue()
        j = self.enqueue(depends_on=[parent["id"]], expires_in_seconds=2)
        self.assertEqual(j["status"], "blocked")
        child = self.enqueue(depends_on=[j["id"]])
        self.wait_expired(j["id"], j["expires_at"])
        c = self.get_job(child["id"])
        self.assertEqual((c["status"], c["error_code"]), ("cancelled", "dependency_failed"), c)
        self.assertIn(str(j["id"]), c["error_detail"])
        row = self.queue_row(self.q)
        self.assertEqual((row["queued"], row["blocked"], row["cancelled"]), (1, 0, 2), row)

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


def metric(test, name, queue):
    """The value of the sample name{queue="queue"} in GET /metrics, or None."""
    text = test.c.get("/metrics").body.decode()
    m = re.search(r'^%s\{queue="%s"\} (\S+)$' % (name, re.escape(queue)), text, re.M)
    return float(m.group(1)) if m else None


class Snooze(ServerTest):
    """POST /jobs/{id}/snooze: back to queued after `seconds` without spending an attempt,
    recorded as "snoozed"; with pause_key the job's concurrency key waits as long."""

    def snooze(self, job_id, token, seconds, status=200, **more):
        body = {"lease_token": token, "seconds": seconds}
        body.update(more)
        return self.act(job_id, "snooze", body, status=status)

    def history(self, job_id):
        r = self.c.get("/jobs/%d/attempts" % job_id)
        self.assertEqual(r.status, 200, r)
        return [(a["attempt"], a["outcome"]) for a in r.json["attempts"]]

    def paused_until(self, key):
        """The key's paused_until as stored (no API shows it yet), or None."""
        if backend() == "pg":
            out = self.server.sql("SELECT paused_until FROM jobq_keys WHERE key = '%s'" % key)
            return int(out) if out else None
        con = sqlite3.connect("file:%s?mode=ro" % self.server.db, uri=True)
        try:
            row = con.execute("SELECT paused_until FROM keys WHERE key = ?", (key,)).fetchone()
        finally:
            con.close()
        return row[0] if row else None

    def test_snooze_requeues_without_spending_an_attempt(self):
        j = self.enqueue()
        c = self.claim_one()
        self.assertEqual((c["attempts"], c["fencing_token"]), (1, 1))
        t = now()
        s = self.snooze(j["id"], c["lease_token"], 30).json
        self.assertEqual(s["status"], "queued")
        self.assertTrue(t + 30 <= s["run_at"] <= now() + 30, s)
        self.assertEqual((s["attempts"], s["fencing_token"]), (0, 1))
        self.assertIsNone(s["lease_expires_at"])
        self.assertIsNone(s["error_code"])
        self.claim(expect=0)  # not due before run_at
        self.assertEqual(self.history(j["id"]), [(1, "snoozed")])
        row = {r["name"]: r for r in self.c.get("/queues").json["queues"]}[self.q]
        self.assertEqual((row["queued"], row["running"]), (1, 0), row)
        self.assertEqual(metric(self, "jobq_jobs_snoozed_total", self.q), 1)

    def test_snooze_zero_is_claimable_at_once(self):
        j = self.enqueue()
        c = self.claim_one()
        self.snooze(j["id"], c["lease_token"], 0)
        c2 = self.claim_one()
        self.assertEqual(c2["id"], j["id"])
        self.assertEqual((c2["attempts"], c2["fencing_token"]), (1, 2))
        self.assertNotEqual(c2["lease_token"], c["lease_token"])
        self.assertEqual(self.history(j["id"]), [(1, "snoozed"), (1, "running")])
        done = self.act(j["id"], "complete", {"lease_token": c2["lease_token"]}).json
        self.assertEqual((done["status"], done["attempts"]), ("succeeded", 1))

    def test_lease_lost_and_not_found(self):
        j = self.enqueue()
        c = self.claim_one()
        r = self.snooze(j["id"], "0" * 32, 5, status=409)
        self.assert_error(r, 409, "lease_lost")
        self.snooze(j["id"], c["lease_token"], 0)
        r = self.snooze(j["id"], c["lease_token"], 0, status=409)  # a snoozed lease is gone
        self.assert_error(r, 409, "lease_lost")
        c2 = self.claim_one()
        self.act(j["id"], "complete", {"lease_token": c2["lease_token"]})
        r = self.snooze(j["id"], c2["lease_token"], 0, status=409)
        self.assert_error(r, 409, "lease_lost")
        self.assertEqual(self.get_job(j["id"])["status"], "succeeded")
        r = self.snooze(j["id"] + 10 ** 6, c2["lease_token"], 0, status=404)
        self.assert_error(r, 404, "not_found")

    def test_lease_lost_after_the_lease_expired(self):
        j = self.enqueue()
        c = self.claim_one(lease_seconds=1)
        wait_until(lambda: time.time() >= c["lease_expires_at"], 5, 0.05, "the lease to end")
        r = self.snooze(j["id"], c["lease_token"], 0, status=409)
        self.assert_error(r, 409, "lease_lost")

    def test_bad_bodies_name_the_field(self):
        j = self.enqueue()
        c = self.claim_one()
        t = c["lease_token"]
        cases = [
            ({"lease_token": t}, "seconds"),
            ({"lease_token": t, "seconds": -1}, "seconds"),
            ({"lease_token": t, "seconds": 31536001}, "seconds"),
            ({"lease_token": t, "seconds": "5"}, "seconds"),
            ({"lease_token": t, "seconds": 5, "pause_key": "yes"}, "pause_key"),
            ({"seconds": 5}, "lease_token"),
        ]
        for body, field in cases:
            r = self.c.post("/jobs/%d/snooze" % j["id"], body)
            self.assert_error(r, 400, "invalid_request", field)
        self.assertEqual(self.get_job(j["id"])["status"], "running")
        s = self.snooze(j["id"], t, 31536000).json
        self.assertGreaterEqual(s["run_at"], now() + 31536000 - 5)

    def test_pause_key_pauses_the_jobs_key(self):
        key = "tenant:%s" % self.q
        j = self.enqueue(concurrency_key=key)
        k = self.enqueue(concurrency_key=key)
        tokens = {x["id"]: x["lease_token"] for x in self.claim(max_jobs=2, expect=2)}
        t = now()
        self.snooze(j["id"], tokens[j["id"]], 120, pause_key=True)
        until = self.paused_until(key)
        self.assertIsNotNone(until)
        self.assertTrue(t + 120 <= until <= now() + 120, until)
        # Another job of the key snoozed shorter, with pause_key: the pause is not shortened.
        self.snooze(k["id"], tokens[k["id"]], 5, pause_key=True)
        self.assertEqual(self.paused_until(key), until)
        # Without pause_key, or without a key, nothing is paused.
        other = "tenant:%s:other" % self.q
        o = self.enqueue(concurrency_key=other)
        c = self.claim_one()
        self.assertEqual(c["id"], o["id"])
        self.snooze(o["id"], c["lease_token"], 60)
        self.assertIsNone(self.paused_until(other))


if __name__ == "__main__":
    unittest.main()
