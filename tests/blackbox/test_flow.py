"""Flow control (API.md "Flow control"): the new enqueue fields as the job object shows them,
their bounds, and expiring jobs (never claimed after the deadline, cancelled as "expired" by
the sweeper). Both backends."""

import time
import unittest

from harness import ServerTest, now, wait_until


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


if __name__ == "__main__":
    unittest.main()
