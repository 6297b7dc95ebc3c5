"""Zombie workers: a lease that expires goes to someone else, and the old holder can no
longer heartbeat, complete or fail; max_runtime_seconds is enforced the same way."""

import time
import unittest

from harness import ServerTest, now, wait_until


class ExpiredLease(ServerTest):
    server_args = ("--sweep-interval", "1", "--backoff-base", "1", "--backoff-max", "1")

    def test_expired_lease_goes_to_next_worker(self):
        j = self.enqueue({"work": "x"})
        a = self.claim_one("worker-a", lease_seconds=1)
        # The sweeper requeues it (lease_expired) within a sweep interval of expiry.
        requeued = wait_until(
            lambda: (lambda g: g if g["status"] != "running" else None)(self.get_job(j["id"])),
            12, 0.1, "the sweeper to requeue the expired job")
        # Within one --sweep-interval (1 s) of the expiry, plus slack for a busy machine.
        self.assertLessEqual(time.time(), a["lease_expires_at"] + 1 + 2.5)
        self.assertEqual(requeued["status"], "queued")
        self.assertEqual(requeued["error_code"], "lease_expired")
        self.assertEqual(requeued["attempts"], 1)
        # A's token is dead for everything.
        r = self.c.post("/jobs/%d/heartbeat" % j["id"], {"lease_token": a["lease_token"]})
        self.assert_error(r, 409, "lease_lost")
        # Worker B gets it once the backoff (1 s) is over.
        b = wait_until(lambda: self.claim("worker-b", lease_seconds=30), 10, 0.1,
                       "worker B to claim the requeued job")[0]
        self.assertEqual(b["id"], j["id"])
        self.assertEqual(b["worker_id"], "worker-b")
        self.assertEqual(b["attempts"], 2)
        self.assertGreater(b["fencing_token"], a["fencing_token"])
        self.assertNotEqual(b["lease_token"], a["lease_token"])
        # The zombie A wakes up: heartbeat, complete and fail all answer lease_lost.
        r = self.c.post("/jobs/%d/heartbeat" % j["id"], {"lease_token": a["lease_token"],
                                                         "progress": {"a": 1}})
        self.assert_error(r, 409, "lease_lost")
        r = self.c.post("/jobs/%d/complete" % j["id"], {"lease_token": a["lease_token"],
                                                        "result": "from A"})
        self.assert_error(r, 409, "lease_lost")
        r = self.c.post("/jobs/%d/fail" % j["id"], {"lease_token": a["lease_token"]})
        self.assert_error(r, 409, "lease_lost")
        g = self.get_job(j["id"])
        self.assertEqual(g["status"], "running")
        self.assertEqual(g["worker_id"], "worker-b")
        self.assertIsNone(g["progress"])
        # B finishes; the result is B's.
        done = self.act(j["id"], "complete", {"lease_token": b["lease_token"],
                                              "result": "from B"}).json
        self.assertEqual(done["status"], "succeeded")
        self.assertEqual(done["result"], "from B")
        r = self.c.post("/jobs/%d/complete" % j["id"], {"lease_token": a["lease_token"],
                                                        "result": "from A"})
        self.assert_error(r, 409, "lease_lost")
        self.assertEqual(self.get_job(j["id"])["result"], "from B")

    def test_heartbeat_keeps_lease_alive(self):
        j = self.enqueue()
        a = self.claim_one("worker-a", lease_seconds=2)
        deadline = time.monotonic() + 4.5
        beats = 0
        while time.monotonic() < deadline:
            self.act(j["id"], "heartbeat", {"lease_token": a["lease_token"]})
            beats += 1
            time.sleep(0.4)
        self.assertGreater(beats, 5)
        g = self.get_job(j["id"])
        self.assertEqual(g["status"], "running")
        self.assertEqual(g["attempts"], 1)
        self.act(j["id"], "complete", {"lease_token": a["lease_token"]})

    def test_expired_with_attempts_exhausted_fails(self):
        j = self.enqueue(max_attempts=1)
        self.claim_one("worker-a", lease_seconds=1)
        g = wait_until(
            lambda: (lambda x: x if x["status"] != "running" else None)(self.get_job(j["id"])),
            12, 0.1, "the sweeper to fail the expired job")
        self.assertEqual(g["status"], "failed")
        self.assertEqual(g["error_code"], "lease_expired")
        self.assertIsNotNone(g["finished_at"])

    def test_max_runtime_enforced(self):
        j = self.enqueue(max_runtime_seconds=2, max_attempts=1)
        t_claim = time.monotonic()
        c = self.claim_one("worker-a", lease_seconds=60)

        def beat_until_lost():
            r = self.c.post("/jobs/%d/heartbeat" % j["id"], {"lease_token": c["lease_token"]})
            if r.status == 200:
                return None
            return r

        r = wait_until(beat_until_lost, 10, 0.2, "heartbeats to hit max_runtime_seconds")
        self.assert_error(r, 409, "lease_lost")
        self.assertGreaterEqual(time.monotonic() - t_claim, 0.9)
        self.assertGreaterEqual(now(), c["claimed_at"] + 2)
        g = wait_until(
            lambda: (lambda x: x if x["status"] != "running" else None)(self.get_job(j["id"])),
            10, 0.1, "the sweeper to time the job out")
        self.assertEqual(g["status"], "failed")
        self.assertEqual(g["error_code"], "timeout")
        r = self.c.post("/jobs/%d/complete" % j["id"], {"lease_token": c["lease_token"]})
        self.assert_error(r, 409, "lease_lost")

    def test_max_runtime_requeues_while_attempts_remain(self):
        j = self.enqueue(max_runtime_seconds=1, max_attempts=3)
        self.claim_one("worker-a", lease_seconds=60)
        g = wait_until(
            lambda: (lambda x: x if x["status"] != "running" else None)(self.get_job(j["id"])),
            12, 0.1, "the sweeper to requeue the timed-out job")
        self.assertEqual(g["status"], "queued")
        self.assertEqual(g["error_code"], "timeout")
        b = wait_until(lambda: self.claim("worker-b"), 10, 0.1, "worker B's claim")[0]
        self.assertEqual(b["id"], j["id"])
        self.assertEqual(b["attempts"], 2)


class Retention(ServerTest):
    server_args = ("--sweep-interval", "1", "--retention", "1")

    def test_old_finished_jobs_are_deleted(self):
        done = self.enqueue()
        c = self.claim_one()
        self.act(done["id"], "complete", {"lease_token": c["lease_token"]})
        cancelled = self.enqueue()
        self.act(cancelled["id"], "cancel")
        failed = self.enqueue(max_attempts=1)
        c = self.claim_one()
        self.act(failed["id"], "fail", {"lease_token": c["lease_token"]})
        queued = self.enqueue(delay_seconds=3600)

        def gone(job_id):
            return self.c.get("/jobs/%d" % job_id).status == 404

        wait_until(lambda: gone(done["id"]) and gone(cancelled["id"]), 10, 0.1,
                   "the sweeper to delete old succeeded and cancelled jobs")
        r = self.c.get("/jobs/%d" % done["id"])
        self.assert_error(r, 404, "not_found")
        self.assertEqual(self.get_job(failed["id"])["status"], "failed")
        self.assertEqual(self.get_job(queued["id"])["status"], "queued")


class ExpiredNotYetSwept(ServerTest):
    # A sweeper that practically never runs: the lease check must not depend on it.
    server_args = ("--sweep-interval", "600")

    def test_dead_lease_is_lost_at_once(self):
        j = self.enqueue()
        c = self.claim_one("worker-a", lease_seconds=1)
        # Wait (bounded, by the clock, not for the sweeper) until the lease is past.
        wait_until(lambda: time.time() >= c["lease_expires_at"] + 0.05, 5, 0.05,
                   "the lease to pass")
        for action in ("heartbeat", "complete", "fail"):
            r = self.c.post("/jobs/%d/%s" % (j["id"], action), {"lease_token": c["lease_token"]})
            self.assert_error(r, 409, "lease_lost")

    def test_past_max_runtime_is_lost_at_once(self):
        j = self.enqueue(max_runtime_seconds=1)
        c = self.claim_one("worker-a", lease_seconds=300)
        wait_until(lambda: time.time() >= c["claimed_at"] + 1 + 0.05, 5, 0.05,
                   "max runtime to pass")
        for action in ("heartbeat", "complete", "fail"):
            r = self.c.post("/jobs/%d/%s" % (j["id"], action), {"lease_token": c["lease_token"]})
            self.assert_error(r, 409, "lease_lost")

    def test_live_lease_still_works(self):
        j = self.enqueue()
        c = self.claim_one("worker-a", lease_seconds=300)
        self.act(j["id"], "heartbeat", {"lease_token": c["lease_token"]})
        self.act(j["id"], "complete", {"lease_token": c["lease_token"]})


if __name__ == "__main__":
    unittest.main()
