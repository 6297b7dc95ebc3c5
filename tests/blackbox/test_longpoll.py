"""Long polls: a parked claim returns as soon as a job arrives (or comes due), returns [] when
its wait runs out, and hundreds of parked claims do not hold up other requests."""

import json
import socket
import threading
import time
import unittest

from harness import HOST, ServerTest, read_response


def claim_request(body):
    data = json.dumps(body).encode()
    return (b"POST /claim HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(data)) + data


class LongPoll(ServerTest):
    def parked_claim(self, result, **fields):
        """Run a claim on its own connection in a thread; result gets the jobs and the
        monotonic time the answer arrived."""
        def run():
            c = self.server.client(timeout=90)
            try:
                body = {"worker_id": "parked", "queue": self.q}
                body.update(fields)
                body = {k: v for k, v in body.items() if v is not None}
                r = c.post("/claim", body)
                result["status"] = r.status
                result["jobs"] = r.json["jobs"] if r.status == 200 else r.body
            except Exception as e:
                result["error"] = repr(e)
            finally:
                result["t"] = time.monotonic()
                c.close()
        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t

    def test_enqueue_wakes_parked_claim(self):
        result = {}
        t = self.parked_claim(result, wait_seconds=10)
        time.sleep(0.5)  # let the claim arrive and park (if not, it simply finds the job)
        self.assertTrue(t.is_alive(), "claim returned before any job existed: %r" % result)
        t_enq = time.monotonic()
        j = self.enqueue({"wake": 1})
        t.join(timeout=12)
        self.assertFalse(t.is_alive())
        self.assertEqual(result.get("status"), 200, result)
        self.assertEqual([x["id"] for x in result["jobs"]], [j["id"]])
        self.assertLess(result["t"] - t_enq, 1.0, "parked claim answered %.2fs after enqueue"
                        % (result["t"] - t_enq))
        self.assertIn("lease_token", result["jobs"][0])

    def test_batch_enqueue_wakes_parked_claim(self):
        result = {}
        t = self.parked_claim(result, wait_seconds=10, max_jobs=5)
        time.sleep(0.5)
        t_enq = time.monotonic()
        r = self.c.post("/jobs/batch", {"jobs": [{"queue": self.q, "payload": i}
                                                 for i in range(3)]})
        self.assertEqual(r.status, 201, r)
        t.join(timeout=12)
        self.assertEqual(result.get("status"), 200, result)
        self.assertGreaterEqual(len(result["jobs"]), 1)
        self.assertLess(result["t"] - t_enq, 1.0)

    def test_other_queue_does_not_wake_wrongly(self):
        result = {}
        t = self.parked_claim(result, wait_seconds=2)
        time.sleep(0.3)
        self.enqueue(queue=self.queue("elsewhere"))
        t.join(timeout=10)
        self.assertEqual(result.get("status"), 200, result)
        self.assertEqual(result["jobs"], [])

    def test_job_in_second_queue_wakes_multi_queue_claim(self):
        result = {}
        t = self.parked_claim(result, wait_seconds=10,
                              queues=[self.queue("a"), self.queue("b")], queue=None)
        time.sleep(0.3)
        t_enq = time.monotonic()
        j = self.enqueue(queue=self.queue("b"))
        t.join(timeout=12)
        self.assertEqual(result.get("status"), 200, result)
        self.assertEqual([x["id"] for x in result["jobs"]], [j["id"]])
        self.assertLess(result["t"] - t_enq, 1.0)

    def test_ineligible_job_does_not_satisfy_claim(self):
        result = {}
        t = self.parked_claim(result, wait_seconds=2, capabilities=["cpu"])
        time.sleep(0.3)
        j = self.enqueue(requires=["gpu"])
        t.join(timeout=10)
        self.assertEqual(result.get("status"), 200, result)
        self.assertEqual(result["jobs"], [])
        self.assertEqual(self.get_job(j["id"])["status"], "queued")

    def test_parked_claimers_each_get_one_job(self):
        n = 8
        results = [{} for _ in range(n)]
        threads = [self.parked_claim(results[i], wait_seconds=15, worker_id="p%d" % i)
                   for i in range(n)]
        time.sleep(0.5)
        ids = []
        for i in range(n):
            ids.append(self.enqueue({"i": i})["id"])
            time.sleep(0.05)
        for t in threads:
            t.join(timeout=20)
        got = []
        for r in results:
            self.assertEqual(r.get("status"), 200, r)
            self.assertLessEqual(len(r["jobs"]), 1)
            got.extend(x["id"] for x in r["jobs"])
        self.assertEqual(sorted(got), sorted(ids), "every job to exactly one parked claimer")

    def test_empty_wait_returns_after_wait(self):
        c = self.server.client()
        t0 = time.monotonic()
        r = c.post("/claim", {"worker_id": "w", "queue": self.q, "wait_seconds": 1})
        elapsed = time.monotonic() - t0
        c.close()
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json, {"jobs": []})
        self.assertGreaterEqual(elapsed, 0.9)
        self.assertLess(elapsed, 3.0)

    def test_zero_wait_returns_at_once(self):
        t0 = time.monotonic()
        self.assertEqual(self.claim(wait_seconds=0), [])
        self.assertLess(time.monotonic() - t0, 0.5)

    def test_delayed_job_wakes_parked_claim(self):
        result = {}
        t = self.parked_claim(result, wait_seconds=10)
        time.sleep(0.3)
        t_enq = time.monotonic()
        j = self.enqueue(delay_seconds=2)
        t.join(timeout=12)
        self.assertEqual(result.get("status"), 200, result)
        self.assertEqual([x["id"] for x in result["jobs"]], [j["id"]])
        waited = result["t"] - t_enq
        self.assertGreaterEqual(waited, 0.9, "claimed before the job was due")
        self.assertLess(waited, 4.0, "the due job did not wake the parked claim")

    def test_parked_polls_do_not_block_others(self):
        n = 200
        socks = []
        try:
            for i in range(n):
                s = socket.create_connection((HOST, self.server.port), timeout=30)
                socks.append(s)
                s.sendall(claim_request({"worker_id": "p%d" % i, "queue": self.queue("idle"),
                                         "wait_seconds": 3}))
            time.sleep(0.3)
            c = self.server.client()
            t0 = time.monotonic()
            j = self.enqueue()
            g = self.get_job(j["id"])
            h = c.get("/healthz")
            elapsed = time.monotonic() - t0
            c.close()
            self.assertEqual(g["id"], j["id"])
            self.assertEqual(h.status, 200)
            self.assertLess(elapsed, 1.0, "enqueue+get took %.2fs with %d parked polls"
                            % (elapsed, n))
            # Another claim on a queue with work returns at once, too.
            t0 = time.monotonic()
            self.assertEqual(len(self.claim(expect=1)), 1)
            self.assertLess(time.monotonic() - t0, 1.0)
            # Every parked poll ends with an empty list when its wait runs out.
            for s in socks:
                r = read_response(s, timeout=20)
                self.assertEqual(r.status, 200, r)
                self.assertEqual(r.json, {"jobs": []})
        finally:
            for s in socks:
                s.close()


if __name__ == "__main__":
    unittest.main()
