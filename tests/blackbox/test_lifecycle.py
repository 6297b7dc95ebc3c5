"""The job lifecycle through the real server: enqueue, get, claim, heartbeat, complete, fail,
cancel, retry, idempotency, batch, list, queues, claim order, scheduling, tags, health."""

import re
import socket
import time
import unittest

from harness import (HOST, ServerTest, URL_SAFE_RE, now, raw_exchange, read_response,
                     wait_until)


class EnqueueGet(ServerTest):
    def test_enqueue_defaults_and_location(self):
        t0 = now()
        r = self.c.post("/jobs", {"payload": {"hello": "world", "n": [1, 2, 3]}})
        t1 = now()
        self.assertEqual(r.status, 201, r)
        self.assert_json_ct(r)
        j = r.json
        self.assert_job(j)
        self.assertEqual(r.header("location"), "/jobs/%d" % j["id"])
        self.assertEqual(j["queue"], "default")
        self.assertEqual(j["status"], "queued")
        self.assertEqual(j["payload"], {"hello": "world", "n": [1, 2, 3]})
        self.assertEqual(j["priority"], 0)
        self.assertEqual(j["attempts"], 0)
        self.assertEqual(j["max_attempts"], 5)
        self.assertEqual(j["fencing_token"], 0)
        self.assertIsNone(j["max_runtime_seconds"])
        self.assertEqual(j["requires"], [])
        self.assertIsNone(j["idempotency_key"])
        self.assertTrue(t0 <= j["created_at"] <= t1, j)
        self.assertTrue(t0 <= j["run_at"] <= t1, j)
        for f in ("claimed_at", "heartbeat_at", "lease_expires_at", "worker_id",
                  "finished_at", "result", "progress", "error_code", "error_detail"):
            self.assertIsNone(j[f], "%s should be null: %r" % (f, j))
        # The default queue is claimable without naming a queue.
        r = self.c.post("/claim", {"worker_id": "w-default"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual([x["id"] for x in r.json["jobs"]], [j["id"]])

    def test_enqueue_all_fields(self):
        t = now()
        j = self.enqueue({"k": "v"}, priority=-7, run_at=t + 100, max_attempts=3,
                         max_runtime_seconds=60, requires=["gpu", "x86"],
                         idempotency_key="key-1")
        self.assertEqual(j["queue"], self.q)
        self.assertEqual(j["priority"], -7)
        self.assertEqual(j["run_at"], t + 100)
        self.assertEqual(j["max_attempts"], 3)
        self.assertEqual(j["max_runtime_seconds"], 60)
        self.assertEqual(sorted(j["requires"]), ["gpu", "x86"])
        self.assertEqual(j["idempotency_key"], "key-1")
        self.assertEqual(self.get_job(j["id"]), j)

    def test_payload_any_json_round_trips(self):
        payloads = [
            "a string", 42, -3.25, True, [1, "two", None, {"x": []}],
            {"unicode": "h\u00e9llo \u2603 \U0001F600", "esc": "q\"b\\s/\n\t"},
            {"nested": {"a": {"b": {"c": [1, [2, [3]]]}}}},
            {"big": 12345678901234567890, "small": -9007199254740993, "f": 1.5e300},
        ]
        for p in payloads:
            j = self.enqueue(p)
            self.assertEqual(j["payload"], p)
            self.assertEqual(self.get_job(j["id"])["payload"], p)

    def test_get_matches_enqueue_and_ids_grow(self):
        a = self.enqueue({"i": 1})
        b = self.enqueue({"i": 2})
        self.assertGreater(b["id"], a["id"])
        self.assertEqual(self.get_job(a["id"]), a)
        self.assertEqual(self.get_job(b["id"]), b)

    def test_delay_seconds_sets_run_at(self):
        t0 = now()
        j = self.enqueue(delay_seconds=50)
        t1 = now()
        self.assertTrue(t0 + 50 <= j["run_at"] <= t1 + 50, j)
        self.assertEqual(j["status"], "queued")

    def test_health(self):
        r = self.c.get("/healthz")
        self.assertEqual(r.status, 200)
        self.assert_json_ct(r)
        self.assertEqual(r.json, {"status": "ok"})
        r = self.c.get("/readyz")
        self.assertEqual(r.status, 200)
        self.assert_json_ct(r)
        self.assertEqual(r.json, {"status": "ready"})

    def test_metrics_prometheus_text(self):
        self.enqueue()
        r = self.c.get("/metrics")
        self.assertEqual(r.status, 200)
        ct = r.header("content-type", "")
        self.assertTrue(ct.startswith("text/plain"), ct)
        text = r.body.decode("utf-8")
        self.assertTrue(text.endswith("\n"), text[-100:])
        samples = 0
        # Label values are quoted and may hold braces (route="/jobs/{id}").
        sample_re = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*'
                               r'(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})?'
                               r' [-+0-9.eEaInNf]+( -?\d+)?$')
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            self.assertRegex(line, sample_re)
            samples += 1
        self.assertGreater(samples, 0)


class ClaimHeartbeatComplete(ServerTest):
    def test_claim_sets_lease_and_hides_token(self):
        j = self.enqueue({"task": 1})
        t0 = now()
        c = self.claim_one("worker-a", lease_seconds=40)
        t1 = now()
        self.assertEqual(c["id"], j["id"])
        self.assertEqual(c["status"], "running")
        self.assertEqual(c["attempts"], 1)
        self.assertGreater(c["fencing_token"], j["fencing_token"])
        self.assertEqual(c["worker_id"], "worker-a")
        self.assertTrue(t0 <= c["claimed_at"] <= t1, c)
        self.assertTrue(t0 + 40 <= c["lease_expires_at"] <= t1 + 40, c)
        self.assertEqual(c["payload"], {"task": 1})
        self.assertGreaterEqual(len(c["lease_token"]), 16)
        g = self.get_job(j["id"])
        self.assertNotIn("lease_token", g)
        self.assertEqual(g["status"], "running")
        self.assertEqual(g["lease_expires_at"], c["lease_expires_at"])
        for x in self.list_all("queue=" + self.q):
            self.assertNotIn("lease_token", x)
        # Nothing more to claim.
        self.claim("worker-b", expect=0)

    def test_default_lease_is_30s(self):
        self.enqueue()
        t0 = now()
        c = self.claim_one()
        t1 = now()
        self.assertTrue(t0 + 30 <= c["lease_expires_at"] <= t1 + 30, c)

    def test_tokens_differ_per_claim(self):
        for _ in range(3):
            self.enqueue()
        jobs = self.claim(max_jobs=3, expect=3)
        tokens = {x["lease_token"] for x in jobs}
        self.assertEqual(len(tokens), 3)

    def test_heartbeat_extends_lease_and_stores_progress(self):
        j = self.enqueue()
        c = self.claim_one(lease_seconds=5)
        # Without lease_seconds the claim's lease length (5) is used again.
        t0 = now()
        h = self.act(j["id"], "heartbeat", {"lease_token": c["lease_token"]}).json
        t1 = now()
        self.assertTrue(t0 + 5 <= h["lease_expires_at"] <= t1 + 5, h)
        self.assertEqual(h["status"], "running")
        self.assertIsNone(h["progress"])
        t0 = now()
        r = self.act(j["id"], "heartbeat", {"lease_token": c["lease_token"], "lease_seconds": 100,
                                            "progress": {"done": 10, "of": 20}})
        t1 = now()
        h = r.json
        self.assertEqual(h["status"], "running")
        self.assertTrue(t0 + 100 <= h["lease_expires_at"] <= t1 + 100, h)
        self.assertGreater(h["lease_expires_at"], c["lease_expires_at"])
        self.assertEqual(h["progress"], {"done": 10, "of": 20})
        self.assertTrue(t0 <= h["heartbeat_at"] <= t1, h)
        self.assertNotIn("lease_token", h)
        self.assertEqual(self.get_job(j["id"])["progress"], {"done": 10, "of": 20})
        # Progress not sent: the stored progress stays.
        h2 = self.act(j["id"], "heartbeat", {"lease_token": c["lease_token"],
                                             "lease_seconds": 100}).json
        self.assertEqual(h2["progress"], {"done": 10, "of": 20})
        self.assertEqual(h2["attempts"], 1)
        self.assertEqual(h2["fencing_token"], c["fencing_token"])

    def test_complete_keeps_result_and_is_idempotent(self):
        j = self.enqueue()
        c = self.claim_one()
        t0 = now()
        r = self.act(j["id"], "complete", {"lease_token": c["lease_token"],
                                           "result": {"answer": 42, "list": [1, 2]}})
        t1 = now()
        done = r.json
        self.assertEqual(done["status"], "succeeded")
        self.assertEqual(done["result"], {"answer": 42, "list": [1, 2]})
        self.assertTrue(t0 <= done["finished_at"] <= t1, done)
        self.assertNotIn("lease_token", done)
        self.assertEqual(self.get_job(j["id"]), done)
        # Same token again: 200, nothing changes (even with another result).
        again = self.act(j["id"], "complete", {"lease_token": c["lease_token"],
                                               "result": {"answer": 0}}).json
        self.assertEqual(again, done)
        self.assertEqual(self.get_job(j["id"]), done)
        # Another token: lease_lost.
        r = self.c.post("/jobs/%d/complete" % j["id"], {"lease_token": "x" * 32})
        self.assert_error(r, 409, "lease_lost")
        # The finished job cannot be heartbeated or failed with the old token.
        r = self.c.post("/jobs/%d/heartbeat" % j["id"], {"lease_token": c["lease_token"]})
        self.assert_error(r, 409, "lease_lost")
        r = self.c.post("/jobs/%d/fail" % j["id"], {"lease_token": c["lease_token"]})
        self.assert_error(r, 409, "lease_lost")
        self.assertEqual(self.get_job(j["id"]), done)

    def test_complete_without_result(self):
        j = self.enqueue()
        c = self.claim_one()
        done = self.act(j["id"], "complete", {"lease_token": c["lease_token"]}).json
        self.assertEqual(done["status"], "succeeded")
        self.assertIsNone(done["result"])


class FailRetryCancel(ServerTest):
    def test_fail_with_retry_uses_backoff(self):
        j = self.enqueue()
        c = self.claim_one()
        t0 = now()
        r = self.act(j["id"], "fail", {"lease_token": c["lease_token"], "error_code": "boom",
                                       "error_detail": {"trace": ["a", "b"]}})
        t1 = now()
        f = r.json
        self.assertEqual(f["status"], "queued")
        self.assertEqual(f["attempts"], 1)
        self.assertEqual(f["error_code"], "boom")
        self.assertEqual(f["error_detail"], {"trace": ["a", "b"]})
        # First retry: backoff-base 2 * 2^0 = 2 s, plus up to 10% jitter.
        self.assertTrue(t0 + 2 <= f["run_at"] <= t1 + 3, f)
        self.assertNotIn("lease_token", f)
        # Not due yet.
        self.claim(expect=0)
        # The old token is dead.
        r = self.c.post("/jobs/%d/heartbeat" % j["id"], {"lease_token": c["lease_token"]})
        self.assert_error(r, 409, "lease_lost")

    def test_backoff_grows_with_attempts(self):
        j = self.enqueue()
        c = self.claim_one()
        self.act(j["id"], "fail", {"lease_token": c["lease_token"], "retry_in_seconds": 0})
        c = self.claim_one()
        self.assertEqual(c["attempts"], 2)
        t0 = now()
        f = self.act(j["id"], "fail", {"lease_token": c["lease_token"]}).json
        t1 = now()
        # Second retry: 2 * 2^1 = 4 s plus up to 10%.
        self.assertEqual(f["status"], "queued")
        self.assertTrue(t0 + 4 <= f["run_at"] <= t1 + 5, f)

    def test_fail_retry_in_seconds_exact(self):
        j = self.enqueue()
        c = self.claim_one()
        t0 = now()
        f = self.act(j["id"], "fail", {"lease_token": c["lease_token"],
                                       "retry_in_seconds": 100}).json
        t1 = now()
        self.assertEqual(f["status"], "queued")
        self.assertTrue(t0 + 100 <= f["run_at"] <= t1 + 100, f)
        # retry_in_seconds 0: due at once.
        j2 = self.enqueue()
        c2 = self.claim_one()
        self.assertEqual(c2["id"], j2["id"])
        self.act(j2["id"], "fail", {"lease_token": c2["lease_token"], "retry_in_seconds": 0})
        again = self.claim_one()
        self.assertEqual(again["id"], j2["id"])
        self.assertEqual(again["attempts"], 2)

    def test_fail_without_retry_fails(self):
        j = self.enqueue()
        c = self.claim_one()
        t0 = now()
        f = self.act(j["id"], "fail", {"lease_token": c["lease_token"], "retry": False,
                                       "error_code": "fatal", "error_detail": "bad input"}).json
        t1 = now()
        self.assertEqual(f["status"], "failed")
        self.assertEqual(f["error_code"], "fatal")
        self.assertEqual(f["error_detail"], "bad input")
        self.assertTrue(t0 <= f["finished_at"] <= t1, f)
        self.claim(expect=0)
        r = self.c.post("/jobs/%d/fail" % j["id"], {"lease_token": c["lease_token"]})
        self.assert_error(r, 409, "lease_lost")

    def test_attempts_exhausted_fails(self):
        j = self.enqueue(max_attempts=2)
        c = self.claim_one()
        f = self.act(j["id"], "fail", {"lease_token": c["lease_token"],
                                       "retry_in_seconds": 0}).json
        self.assertEqual(f["status"], "queued")
        c = self.claim_one()
        self.assertEqual(c["attempts"], 2)
        f = self.act(j["id"], "fail", {"lease_token": c["lease_token"],
                                       "retry_in_seconds": 0}).json
        self.assertEqual(f["status"], "failed")
        self.assertEqual(f["attempts"], 2)
        self.claim(expect=0)

    def test_max_attempts_one(self):
        j = self.enqueue(max_attempts=1)
        c = self.claim_one()
        f = self.act(j["id"], "fail", {"lease_token": c["lease_token"]}).json
        self.assertEqual(f["status"], "failed")

    def test_cancel_queued(self):
        j = self.enqueue()
        r = self.act(j["id"], "cancel")
        self.assert_json_ct(r)
        self.assertEqual(r.json["status"], "cancelled")
        self.assertIsNotNone(r.json["finished_at"])
        self.claim(expect=0)
        self.assertEqual(self.get_job(j["id"])["status"], "cancelled")

    def test_cancel_running_kills_lease(self):
        j = self.enqueue()
        c = self.claim_one()
        r = self.act(j["id"], "cancel", {})
        self.assertEqual(r.json["status"], "cancelled")
        for action in ("heartbeat", "complete", "fail"):
            r = self.c.post("/jobs/%d/%s" % (j["id"], action), {"lease_token": c["lease_token"]})
            self.assert_error(r, 409, "lease_lost")
        self.assertEqual(self.get_job(j["id"])["status"], "cancelled")

    def test_cancel_finished_conflicts(self):
        done = self.enqueue()
        c = self.claim_one()
        self.act(done["id"], "complete", {"lease_token": c["lease_token"]})
        failed = self.enqueue()
        c = self.claim_one()
        self.act(failed["id"], "fail", {"lease_token": c["lease_token"], "retry": False})
        cancelled = self.enqueue()
        self.act(cancelled["id"], "cancel")
        for j, status in ((done, "succeeded"), (failed, "failed"), (cancelled, "cancelled")):
            r = self.c.post("/jobs/%d/cancel" % j["id"])
            self.assert_error(r, 409, "conflict")
            self.assertEqual(self.get_job(j["id"])["status"], status)

    def test_retry_failed_and_cancelled(self):
        j = self.enqueue(max_attempts=1)
        c = self.claim_one()
        self.act(j["id"], "fail", {"lease_token": c["lease_token"]})
        t0 = now()
        r = self.act(j["id"], "retry").json
        t1 = now()
        self.assertEqual(r["status"], "queued")
        self.assertEqual(r["attempts"], 0)
        self.assertTrue(t0 <= r["run_at"] <= t1, r)
        c2 = self.claim_one()
        self.assertEqual(c2["id"], j["id"])
        self.assertEqual(c2["attempts"], 1)
        self.assertGreater(c2["fencing_token"], c["fencing_token"])
        self.act(j["id"], "cancel")
        r = self.act(j["id"], "retry").json
        self.assertEqual(r["status"], "queued")
        self.assertEqual(r["attempts"], 0)
        self.assertEqual(self.claim_one()["id"], j["id"])

    def test_retry_conflicts_unless_failed_or_cancelled(self):
        queued = self.enqueue()
        r = self.c.post("/jobs/%d/retry" % queued["id"])
        self.assert_error(r, 409, "conflict")
        c = self.claim_one()
        r = self.c.post("/jobs/%d/retry" % queued["id"])
        self.assert_error(r, 409, "conflict")
        self.act(queued["id"], "complete", {"lease_token": c["lease_token"]})
        r = self.c.post("/jobs/%d/retry" % queued["id"])
        self.assert_error(r, 409, "conflict")
        self.assertEqual(self.get_job(queued["id"])["status"], "succeeded")

    def test_fencing_token_grows_and_never_resets(self):
        j = self.enqueue(max_attempts=2)
        seen = [j["fencing_token"]]
        c = self.claim_one()
        seen.append(c["fencing_token"])
        self.act(j["id"], "fail", {"lease_token": c["lease_token"], "retry_in_seconds": 0})
        c = self.claim_one()
        seen.append(c["fencing_token"])
        self.act(j["id"], "fail", {"lease_token": c["lease_token"], "retry_in_seconds": 0})
        self.assertEqual(self.get_job(j["id"])["status"], "failed")
        self.act(j["id"], "retry")
        self.assertEqual(self.get_job(j["id"])["fencing_token"], seen[-1])
        c = self.claim_one()
        seen.append(c["fencing_token"])
        self.assertEqual(c["attempts"], 1)
        self.assertEqual(seen, sorted(set(seen)), "fencing tokens must strictly grow: %r" % seen)

    def test_progress_survives_requeue(self):
        j = self.enqueue()
        c = self.claim_one()
        self.act(j["id"], "heartbeat", {"lease_token": c["lease_token"],
                                        "progress": {"cursor": "page-7"}})
        f = self.act(j["id"], "fail", {"lease_token": c["lease_token"],
                                       "retry_in_seconds": 0}).json
        self.assertEqual(f["progress"], {"cursor": "page-7"})
        c2 = self.claim_one("worker-b")
        self.assertEqual(c2["progress"], {"cursor": "page-7"})


class BackoffPolicy(ServerTest):
    server_args = ("--backoff-base", "100", "--backoff-max", "150")

    def test_backoff_base_and_max(self):
        j = self.enqueue(max_attempts=5)
        c = self.claim_one()
        t0 = now()
        f = self.act(j["id"], "fail", {"lease_token": c["lease_token"]}).json
        t1 = now()
        # attempts 1: 100 * 2^0 = 100 s, plus up to 10% jitter.
        self.assertTrue(t0 + 100 <= f["run_at"] <= t1 + 111, f)
        self.act(j["id"], "cancel")
        self.act(j["id"], "retry")
        c = self.claim_one()
        self.act(j["id"], "fail", {"lease_token": c["lease_token"], "retry_in_seconds": 0})
        c = self.claim_one()
        self.assertEqual(c["attempts"], 2)
        t0 = now()
        f = self.act(j["id"], "fail", {"lease_token": c["lease_token"]}).json
        t1 = now()
        # attempts 2: min(150, 100 * 2^1) = 150 s, plus up to 10%.
        self.assertTrue(t0 + 150 <= f["run_at"] <= t1 + 166, f)


class BigBodies(ServerTest):
    def test_large_payload_round_trips(self):
        big = "x" * 900000
        j = self.enqueue({"blob": big})
        self.assertEqual(self.get_job(j["id"])["payload"]["blob"], big)
        c = self.claim_one()
        self.assertEqual(c["payload"]["blob"], big)
        done = self.act(j["id"], "complete", {"lease_token": c["lease_token"],
                                              "result": {"blob": big}}).json
        self.assertEqual(done["result"]["blob"], big)

    def test_default_limit_is_1_mib(self):
        head = b'{"queue": "%s", "payload": "' % self.q.encode()
        pad = 1048576 - len(head) - 2
        r = self.c.request("POST", "/jobs", raw=head + b"y" * pad + b'"}',
                           headers={"Content-Type": "application/json"})
        self.assertEqual(r.status, 201, r)
        data = head + b"y" * (pad + 1) + b'"}'
        r = raw_exchange(self.server.port,
                         b"POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(data) + data)
        self.assert_error(r, 413, "payload_too_large")

    def test_expect_100_continue(self):
        # curl sends "Expect: 100-continue" with bodies over 1 KiB.
        body = b'{"queue": "%s", "payload": "%s"}' % (self.q.encode(), b"z" * 5000)
        s = socket.create_connection((HOST, self.server.port), timeout=10)
        try:
            s.sendall(b"POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Expect: 100-continue\r\nContent-Length: %d\r\n"
                      b"Connection: close\r\n\r\n" % len(body))
            interim = b""
            deadline = time.monotonic() + 5
            while b"\r\n\r\n" not in interim and time.monotonic() < deadline:
                chunk = s.recv(4096)
                if not chunk:
                    break
                interim += chunk
            self.assertTrue(interim.startswith(b"HTTP/1.1 100"), interim)
            s.sendall(body)
            r = read_response(s, timeout=10)
        finally:
            s.close()
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json["payload"], "z" * 5000)

    def test_query_string_on_job_path(self):
        j = self.enqueue()
        r = self.c.get("/jobs/%d?verbose=1" % j["id"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["id"], j["id"])


class IdempotencyBatch(ServerTest):
    def test_idempotency_key(self):
        a = self.enqueue({"v": 1}, idempotency_key="order-17")
        r = self.c.post("/jobs", {"queue": self.q, "payload": {"v": 2},
                                  "idempotency_key": "order-17"})
        self.assertEqual(r.status, 200, r)
        self.assert_job(r.json)
        self.assertEqual(r.json["id"], a["id"])
        self.assertEqual(r.json["payload"], {"v": 1})
        self.assertEqual(len(self.list_all("queue=" + self.q)), 1)
        # Another queue: a new job.
        b = self.enqueue({"v": 3}, queue=self.queue("other"), idempotency_key="order-17")
        self.assertNotEqual(b["id"], a["id"])
        # Another key, same queue: a new job.
        c = self.enqueue({"v": 4}, idempotency_key="order-18")
        self.assertNotIn(c["id"], (a["id"], b["id"]))
        self.assertEqual(len(self.list_all("queue=" + self.q)), 2)

    def test_idempotency_key_still_matches_after_claim(self):
        a = self.enqueue(idempotency_key="k")
        self.claim_one()
        r = self.c.post("/jobs", {"queue": self.q, "payload": 1, "idempotency_key": "k"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["id"], a["id"])
        self.assertEqual(r.json["status"], "running")
        self.assertNotIn("lease_token", r.json)

    def test_batch_creates_all_in_order(self):
        body = {"jobs": [{"queue": self.q, "payload": {"i": i}, "priority": i} for i in range(5)]}
        r = self.c.post("/jobs/batch", body)
        self.assertEqual(r.status, 201, r)
        self.assert_json_ct(r)
        jobs = r.json["jobs"]
        self.assertEqual(len(jobs), 5)
        for i, j in enumerate(jobs):
            self.assert_job(j)
            self.assertEqual(j["payload"], {"i": i})
            self.assertEqual(j["priority"], i)
            self.assertEqual(j["status"], "queued")
            self.assertEqual(self.get_job(j["id"]), j)
        self.assertEqual(len({j["id"] for j in jobs}), 5)

    def test_batch_default_queue_and_fields(self):
        q2 = self.queue("b")
        r = self.c.post("/jobs/batch", {"jobs": [{"payload": "x", "queue": q2,
                                                  "delay_seconds": 100},
                                                 {"payload": "y", "queue": q2,
                                                  "requires": ["a"]}]})
        self.assertEqual(r.status, 201, r)
        a, b = r.json["jobs"]
        self.assertGreaterEqual(a["run_at"], now() + 98)
        self.assertEqual(b["requires"], ["a"])

    def test_batch_bad_element_creates_nothing(self):
        good = {"queue": self.q, "payload": 1}
        r = self.c.post("/jobs/batch", {"jobs": [good, good, {"queue": self.q,
                                                              "payload": 1, "priority": "high"},
                                                 good]})
        self.assert_error(r, 400, "invalid_request", mentions="2")
        r = self.c.post("/jobs/batch", {"jobs": [good, {"queue": self.q}]})
        self.assert_error(r, 400, "invalid_request", mentions="1")
        r = self.c.post("/jobs/batch", {"jobs": [good, good, good, "not an object"]})
        self.assert_error(r, 400, "invalid_request", mentions="3")
        self.assertEqual(self.list_all("queue=" + self.q), [])

    def test_batch_of_1000(self):
        body = {"jobs": [{"queue": self.q, "payload": i} for i in range(1000)]}
        r = self.c.post("/jobs/batch", body)
        self.assertEqual(r.status, 201, r)
        self.assertEqual([j["payload"] for j in r.json["jobs"]], list(range(1000)))


class ListQueues(ServerTest):
    def test_list_pages_every_job_once(self):
        q = self.q
        ids = [j["id"] for j in self.c.post("/jobs/batch", {"jobs": [
            {"queue": q, "payload": i} for i in range(25)]}).json["jobs"]]
        other = self.enqueue(queue=self.queue("other"))
        seen = self.list_all("queue=" + q, limit=10)
        self.assertEqual([j["id"] for j in seen], sorted(ids))
        for j in seen:
            self.assert_job(j)
            self.assertEqual(j["queue"], q)
        # First page: 10 jobs and a cursor.
        r = self.c.get("/jobs?queue=%s&limit=10" % q)
        self.assertEqual(len(r.json["jobs"]), 10)
        self.assertIsInstance(r.json["next_cursor"], str)
        self.assertRegex(r.json["next_cursor"], URL_SAFE_RE)
        # Without a queue filter, both queues' jobs appear, ordered by id.
        everything = self.list_all("status=queued", limit=7)
        all_ids = [j["id"] for j in everything]
        self.assertEqual(all_ids, sorted(all_ids))
        self.assertEqual(len(all_ids), len(set(all_ids)))
        self.assertTrue(set(ids) | {other["id"]} <= set(all_ids))

    def test_list_default_limit_100(self):
        self.c.post("/jobs/batch", {"jobs": [{"queue": self.q, "payload": i}
                                             for i in range(120)]})
        r = self.c.get("/jobs?queue=" + self.q)
        self.assertEqual(r.status, 200, r)
        self.assert_json_ct(r)
        self.assertEqual(len(r.json["jobs"]), 100)
        self.assertIsNotNone(r.json["next_cursor"])
        rest = self.c.get("/jobs?queue=%s&cursor=%s" % (self.q, r.json["next_cursor"]))
        self.assertEqual(len(rest.json["jobs"]), 20)

    def test_list_status_filter(self):
        for i in range(6):
            self.enqueue({"i": i})
        claimed = self.claim(max_jobs=3, expect=3)
        c0 = claimed[0]
        self.act(c0["id"], "complete", {"lease_token": c0["lease_token"]})
        last = self.list_all("queue=%s&status=queued" % self.q)
        cancel_id = last[-1]["id"]
        self.act(cancel_id, "cancel")
        counts = {}
        for st in ("queued", "running", "succeeded", "failed", "cancelled"):
            got = self.list_all("queue=%s&status=%s" % (self.q, st), limit=2)
            for j in got:
                self.assertEqual(j["status"], st)
            counts[st] = len(got)
        self.assertEqual(counts, {"queued": 2, "running": 2, "succeeded": 1, "failed": 0,
                                  "cancelled": 1})

    def test_list_scheduled_job_is_queued(self):
        j = self.enqueue(delay_seconds=300)
        got = self.list_all("queue=%s&status=queued" % self.q)
        self.assertEqual([x["id"] for x in got], [j["id"]])

    def test_list_empty_queue(self):
        r = self.c.get("/jobs?queue=" + self.queue("none"))
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json["jobs"], [])
        self.assertIsNone(r.json["next_cursor"])

    def test_queues_stats(self):
        q = self.q
        t = now()
        self.enqueue(run_at=t - 100)
        self.enqueue()
        self.enqueue(delay_seconds=500)
        done = self.enqueue(run_at=t - 200, priority=10)
        c = self.claim_one()
        self.assertEqual(c["id"], done["id"])
        self.act(done["id"], "complete", {"lease_token": c["lease_token"]})
        c = self.claim_one()  # the run_at t-100 one
        j5 = self.enqueue(priority=-1)
        self.act(j5["id"], "cancel")
        future_q = self.queue("future")
        self.enqueue(queue=future_q, delay_seconds=500)

        r = self.c.get("/queues")
        self.assertEqual(r.status, 200, r)
        self.assert_json_ct(r)
        rows = {row["name"]: row for row in r.json["queues"]}
        self.assertIn(q, rows)
        row = rows[q]
        self.assertEqual(set(row), {"name", "queued", "running", "succeeded", "failed",
                                    "cancelled", "blocked", "oldest_queued_age_seconds",
                                    "paused"})
        self.assertEqual((row["queued"], row["running"], row["succeeded"], row["failed"],
                          row["cancelled"]), (2, 1, 1, 0, 1))
        for k in ("queued", "running", "succeeded", "failed", "cancelled",
                  "oldest_queued_age_seconds"):
            self.assertTrue(type(row[k]) is int, row)
        # The oldest due queued job was enqueued with run_at = now at about t.
        self.assertTrue(0 <= row["oldest_queued_age_seconds"] <= now() - t + 1, row)
        frow = rows[future_q]
        self.assertEqual(frow["queued"], 1)
        self.assertEqual(frow["oldest_queued_age_seconds"], 0)
        self.assertNotIn(self.queue("never-used"), rows)

    def test_queue_age_of_old_job(self):
        t = now()
        self.enqueue(run_at=t - 100)
        rows = {row["name"]: row for row in self.c.get("/queues").json["queues"]}
        age = rows[self.q]["oldest_queued_age_seconds"]
        self.assertTrue(100 <= age <= now() - t + 101, age)


class ClaimRules(ServerTest):
    def test_claim_order_priority_run_at_id(self):
        t = now()
        a = self.enqueue({"n": "a"}, run_at=t - 10)
        b = self.enqueue({"n": "b"}, priority=5)
        c = self.enqueue({"n": "c"}, priority=5, run_at=t - 50)
        d = self.enqueue({"n": "d"}, run_at=t - 20)
        e = self.enqueue({"n": "e"}, run_at=t - 20)
        f = self.enqueue({"n": "f"}, priority=-3, run_at=t - 1000)
        g = self.enqueue({"n": "g"}, priority=2147483647)
        expected = [g, c, b, d, e, a, f]
        got = [self.claim_one()["id"] for _ in expected]
        self.assertEqual(got, [x["id"] for x in expected])
        self.claim(expect=0)

    def test_claim_batch_follows_order(self):
        lo = self.enqueue(priority=1)
        hi = self.enqueue(priority=9)
        mid = self.enqueue(priority=5)
        jobs = self.claim(max_jobs=2, expect=2)
        self.assertEqual({x["id"] for x in jobs}, {hi["id"], mid["id"]})
        self.assertEqual(self.claim_one()["id"], lo["id"])

    def test_max_jobs(self):
        for i in range(5):
            self.enqueue({"i": i})
        first = self.claim(max_jobs=3, expect=3)
        second = self.claim(max_jobs=3, expect=2)
        self.claim(max_jobs=3, expect=0)
        ids = [x["id"] for x in first + second]
        self.assertEqual(len(set(ids)), 5)

    def test_queues_multi_claim(self):
        q1, q2, q3 = self.queue("1"), self.queue("2"), self.queue("3")
        a = self.enqueue(queue=q1)
        b = self.enqueue(queue=q2, priority=3)
        self.enqueue(queue=q3, priority=100)
        jobs = self.claim(queues=[q1, q2], max_jobs=10)
        self.assertEqual([x["id"] for x in jobs], [b["id"], a["id"]])
        self.assertEqual(len(self.claim(queue=q3, expect=1)), 1)

    def test_claim_other_queue_sees_nothing(self):
        self.enqueue()
        self.claim(queue=self.queue("empty"), expect=0)
        self.assertEqual(len(self.claim(expect=1)), 1)

    def test_delay_seconds_not_claimable_until_due(self):
        t_enq = time.monotonic()
        j = self.enqueue(delay_seconds=2)
        self.claim(expect=0)
        got = wait_until(lambda: self.claim(), 8, 0.1, "the delayed job to become claimable")
        elapsed = time.monotonic() - t_enq
        self.assertEqual(got[0]["id"], j["id"])
        self.assertGreaterEqual(elapsed, 0.9)
        self.assertGreaterEqual(now(), j["run_at"])

    def test_run_at_not_claimable_until_due(self):
        t = now()
        j = self.enqueue(run_at=t + 2)
        self.claim(expect=0)
        got = wait_until(lambda: self.claim(), 8, 0.1, "the scheduled job")
        self.assertEqual(got[0]["id"], j["id"])
        self.assertGreaterEqual(now(), t + 2)

    def test_run_at_in_past_and_zero(self):
        j = self.enqueue(run_at=0)
        self.assertEqual(j["run_at"], 0)
        self.assertEqual(self.claim_one()["id"], j["id"])

    def test_requires_and_capabilities(self):
        gpu = self.enqueue({"n": "gpu"}, requires=["gpu", "cuda"])
        self.claim(expect=0, capabilities=["gpu"])
        self.claim(expect=0)
        c = self.claim_one(capabilities=["cpu", "cuda", "gpu"])
        self.assertEqual(c["id"], gpu["id"])
        plain = self.enqueue({"n": "plain"})
        self.assertEqual(self.claim_one(capabilities=["anything"])["id"], plain["id"])
        plain2 = self.enqueue({"n": "plain2"})
        self.assertEqual(self.claim_one()["id"], plain2["id"])

    def test_requires_skips_to_eligible_job(self):
        hi = self.enqueue(priority=10, requires=["special"])
        lo = self.enqueue(priority=1)
        self.assertEqual(self.claim_one(capabilities=["x"])["id"], lo["id"])
        self.assertEqual(self.claim_one(capabilities=["special"])["id"], hi["id"])


if __name__ == "__main__":
    unittest.main()
