"""Operating (API.md "Operating"): pause/resume/purge, and GET /queues from kept-up counts
(paused and blocked fields, a paused empty queue listed). Both backends. The attempt history
is test_attempts (no lock: it makes no load and waits for nothing held to a second)."""

import threading
import time
import unittest

from harness import Client, Server, ServerTest, backend


def queue_row(test, name):
    r = test.c.get("/queues")
    test.assertEqual(r.status, 200, r)
    rows = [q for q in r.json["queues"] if q["name"] == name]
    return rows[0] if rows else None


class QueueControls(ServerTest):

    def test_pause_skips_claims_and_resume_restores_them(self):
        self.enqueue()
        r = self.c.post("/queues/%s/pause" % self.q)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["name"], self.q)
        self.assertIs(r.json["paused"], True)
        self.assertEqual(r.json["queued"], 1)
        self.assertEqual(r.json["blocked"], 0)
        self.assertEqual(self.c.post("/queues/%s/pause" % self.q).status, 200)  # twice: 200
        self.claim(expect=0)
        self.claim(expect=0, queues=[self.q, self.queue("other")])
        self.enqueue()  # enqueues still work
        self.assertEqual(queue_row(self, self.q)["queued"], 2)
        self.assertIs(queue_row(self, self.q)["paused"], True)
        r = self.c.post("/queues/%s/resume" % self.q)
        self.assertEqual(r.status, 200, r)
        self.assertIs(r.json["paused"], False)
        self.claim(expect=2, max_jobs=5)

    def test_paused_queue_seen_by_every_process_claim(self):
        """A second client on the same server, and (pg) the pause is in the database: the
        claim statement itself skips the queue."""
        self.enqueue()
        self.assertEqual(self.c.post("/queues/%s/pause" % self.q).status, 200)
        if backend() == "pg":
            self.assertEqual(self.server.sql(
                "SELECT paused FROM jobq_queues WHERE name = '%s'" % self.q), "t")
        c2 = Client(self.server.port)
        try:
            r = c2.post("/claim", {"worker_id": "x", "queue": self.q})
            self.assertEqual(r.json, {"jobs": []})
        finally:
            c2.close()

    def test_resume_wakes_a_parked_long_poll(self):
        self.enqueue()
        self.assertEqual(self.c.post("/queues/%s/pause" % self.q).status, 200)
        got = {}

        def poll():
            c = Client(self.server.port, timeout=40)
            try:
                t0 = time.monotonic()
                r = c.post("/claim", {"worker_id": "p", "queue": self.q, "wait_seconds": 20})
                got["elapsed"] = time.monotonic() - t0
                got["jobs"] = r.json["jobs"]
            finally:
                c.close()

        t = threading.Thread(target=poll)
        t.start()
        time.sleep(1.0)  # parked, the queue paused
        t_resume = time.monotonic()
        self.assertEqual(self.c.post("/queues/%s/resume" % self.q).status, 200)
        t.join(timeout=30)
        self.assertFalse(t.is_alive())
        self.assertEqual(len(got["jobs"]), 1, got)
        self.assertLess(time.monotonic() - t_resume, 3.0, "the resume did not wake the poll")

    def test_paused_empty_queue_is_listed(self):
        name = self.queue("empty")
        self.assertIsNone(queue_row(self, name))
        r = self.c.post("/queues/%s/pause" % name)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json, {"name": name, "queued": 0, "running": 0, "succeeded": 0,
                                  "failed": 0, "cancelled": 0, "blocked": 0,
                                  "oldest_queued_age_seconds": 0, "paused": True})
        self.assertEqual(queue_row(self, name), r.json)
        r = self.c.post("/queues/%s/resume" % name)
        self.assertIs(r.json["paused"], False)
        self.assertIsNone(queue_row(self, name))  # holds no job and is not paused

    def test_bad_names(self):
        for path in ("/queues/bad%20name/pause", "/queues/" + "x" * 129 + "/resume"):
            self.assert_error(self.c.post(path), 400, "invalid_request", "name")
        self.assertEqual(self.c.get("/queues/%s/pause" % self.q).status, 405)

    def test_purge_by_status(self):
        keep = [self.enqueue() for _ in range(2)]
        gone = [self.enqueue() for _ in range(3)]
        future = self.enqueue(delay_seconds=3600)
        running = self.claim_one()
        self.assertEqual(running["id"], keep[0]["id"])
        for j in gone:  # cancelled
            self.act(j["id"], "cancel")
        r = self.c.request("DELETE", "/queues/%s/jobs?status=cancelled" % self.q)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json, {"deleted": 3})
        for j in gone:
            self.assertEqual(self.c.get("/jobs/%d" % j["id"]).status, 404)
        r = self.c.request("DELETE", "/queues/%s/jobs?status=queued" % self.q)
        self.assertEqual(r.json, {"deleted": 2})  # keep[1] and the future one
        self.assertEqual(self.c.get("/jobs/%d" % future["id"]).status, 404)
        self.assertEqual(self.get_job(running["id"])["status"], "running")
        row = queue_row(self, self.q)
        self.assertEqual((row["queued"], row["running"], row["cancelled"]), (0, 1, 0))
        r = self.c.request("DELETE", "/queues/%s/jobs?status=blocked" % self.q)
        self.assertEqual(r.json, {"deleted": 0})
        r = self.c.request("DELETE", "/queues/%s/jobs?status=succeeded" % self.queue("none"))
        self.assertEqual(r.json, {"deleted": 0})

    def test_purge_bad_status(self):
        for q in ("", "?status=running", "?status=nope", "?status="):
            r = self.c.request("DELETE", "/queues/%s/jobs%s" % (self.q, q))
            self.assert_error(r, 400, "invalid_request", "status")

    def test_purge_many_in_batches(self):
        n = 2500
        for i in range(0, n, 500):
            r = self.c.post("/jobs/batch", {"jobs": [{"queue": self.q, "payload": k}
                                                     for k in range(500)]})
            self.assertEqual(r.status, 201, r)
        self.assertEqual(queue_row(self, self.q)["queued"], n)
        r = self.c.request("DELETE", "/queues/%s/jobs?status=queued" % self.q, timeout=60)
        self.assertEqual(r.json, {"deleted": n})
        self.assertIsNone(queue_row(self, self.q))


class KeptUpCounts(ServerTest):

    def test_counts_follow_every_transition(self):
        jobs = [self.enqueue() for _ in range(4)]
        later = self.enqueue(delay_seconds=3600)
        a = self.claim_one()
        b = self.claim_one()
        self.act(a["id"], "complete", {"lease_token": a["lease_token"]})
        self.act(b["id"], "fail", {"lease_token": b["lease_token"], "retry": False})
        self.act(jobs[2]["id"], "cancel")
        row = queue_row(self, self.q)
        self.assertEqual({k: row[k] for k in ("queued", "running", "succeeded", "failed",
                                              "cancelled")},
                         {"queued": 2, "running": 0, "succeeded": 1, "failed": 1,
                          "cancelled": 1})
        self.act(b["id"], "retry")
        self.act(jobs[2]["id"], "retry")
        self.act(later["id"], "cancel")
        row = queue_row(self, self.q)
        self.assertEqual((row["queued"], row["failed"], row["cancelled"]), (3, 0, 1))
        if backend() == "pg":  # the kept-up table agrees with a count of the jobs
            counted = self.server.sql(
                "SELECT count(*) FILTER (WHERE status = 1) FROM jobq_jobs WHERE queue = '%s'"
                % self.q)
            self.assertEqual(int(counted), 3)


class SharedThroughput(ServerTest):
    """GET /stats/throughput on one process counts what every process on the database did
    (PostgreSQL: each publishes its buckets every few seconds); on SQLite there is one."""
    server_args = ("--sweep-interval", "1")

    def totals(self, client):
        r = client.get("/stats/throughput")
        self.assertEqual(r.status, 200, r)
        pts = r.json["points"]
        return (sum(p["enqueued"] for p in pts), sum(p["succeeded"] for p in pts))

    def test_another_process_sees_the_enqueues(self):
        if backend() != "pg":
            self.skipTest("one process per SQLite file: its own counters are the whole picture")
        other = Server(self.server_args, db=self.server.db)
        self.addCleanup(other.cleanup)
        other.start()
        oc = other.client()
        self.addCleanup(oc.close)
        base_here, base_other = self.totals(self.c), self.totals(oc)
        for _ in range(5):
            self.enqueue()
        c = self.claim_one()
        self.act(c["id"], "complete", {"lease_token": c["lease_token"]})
        want = (base_other[0] + 5, base_other[1] + 1)
        deadline = time.monotonic() + 20
        got = self.totals(oc)
        while got != want and time.monotonic() < deadline:
            time.sleep(0.5)
            got = self.totals(oc)
        self.assertEqual(got, want, "the other process's chart misses this one's work")
        self.assertEqual(self.totals(self.c), (base_here[0] + 5, base_here[1] + 1))
        other.stop_checked()


if __name__ == "__main__":
    unittest.main()
