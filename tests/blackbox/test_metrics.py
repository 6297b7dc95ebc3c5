"""GET /metrics and GET /stats/throughput (issue 10, item 3): after traffic that touches every
counter (a lease expiry and a max-runtime timeout included, through short leases and a 1 s
sweep interval), the per-queue job counters hold exactly what happened, the request histogram
is labelled by route pattern and status code, the claim-wait histogram saw a parked long
poll, the backend's own figures are there, `promtool check metrics` accepts the text, and
/stats/throughput's points add up to the counters. Under PostgreSQL, two processes on one
database each report their own counters and the same gauges.

Each test has a server of its own (exact counts). Every wait is bounded (wait_until)."""
import re
import shutil
import subprocess
import threading
import unittest

from harness import Server, ServerTest, backend, now, wait_until

SAMPLE_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
COUNTERS = ("enqueued", "claimed", "succeeded", "failed", "retried", "lease_expired",
            "timed_out", "cancelled")
ARGS = ("--sweep-interval", "1", "--backoff-base", "0")


def parse(text):
    """{(name, ((label, value), ...)): float} of every sample; labels sorted."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE_RE.match(line)
        if not m:
            raise AssertionError("not a sample line: %r" % line)
        labels = tuple(sorted(LABEL_RE.findall(m.group(3) or "")))
        out[(m.group(1), labels)] = float(m.group(4))
    return out


def promtool_check(testcase, text):
    promtool = shutil.which("promtool")
    testcase.assertIsNotNone(promtool, "promtool not found: scripts/deps.sh installs prometheus")
    p = subprocess.run([promtool, "check", "metrics"], input=text.encode(), capture_output=True,
                       timeout=60)
    testcase.assertEqual(p.returncode, 0, "promtool check metrics:\n%s%s"
                         % (p.stdout.decode(), p.stderr.decode()))


class MetricsTest(ServerTest):
    server_args = ARGS
    server_per_test = True

    def scrape(self):
        r = self.c.get("/metrics")
        self.assertEqual(r.status, 200, r)
        return r.body.decode("utf-8")

    def counter(self, samples, what, queue):
        return samples.get(("jobq_jobs_%s_total" % what, (("queue", queue),)))

    def traffic(self):
        """Touch every counter in self.q; returns what each should read."""
        q = self.q
        jobs = [self.enqueue(queue=q) for _ in range(3)]
        self.enqueue(queue=q, idempotency_key="once")
        self.enqueue(queue=q, idempotency_key="once", status=200)  # not a new job
        c = self.claim("w1", q, max_jobs=4, expect=4)
        by_id = {j["id"]: j for j in c}
        a, b, d, e = sorted(by_id)
        self.act(a, "complete", {"lease_token": by_id[a]["lease_token"]})
        self.act(a, "complete", {"lease_token": by_id[a]["lease_token"]})  # a repeat
        self.act(b, "fail", {"lease_token": by_id[b]["lease_token"], "retry": True,
                             "retry_in_seconds": 3600})
        self.act(d, "fail", {"lease_token": by_id[d]["lease_token"], "retry": False})
        self.act(e, "cancel")
        self.act(e, "cancel", status=409)
        # A lease that expires (1 s, last attempt: failed) and one past max runtime (requeued).
        x = self.enqueue(queue=q, max_attempts=1)
        self.claim_one("w2", q, lease_seconds=1)
        t = self.enqueue(queue=q, max_runtime_seconds=1)
        self.claim_one("w3", q, lease_seconds=60)
        wait_until(lambda: self.get_job(x["id"])["status"] == "failed"
                   and self.get_job(t["id"])["status"] == "queued"
                   and self.get_job(t["id"])["error_code"] == "timeout", 30, 0.1,
                   "the sweeper to end the expired and the timed-out leases")
        # The sweeper counts what a sweep ended once its store_sweep returns, which on
        # PostgreSQL follows the retention transaction: a moment after the jobs read as ended.
        def swept():
            s = parse(self.scrape())
            return self.counter(s, "lease_expired", q) == 1 and self.counter(s, "timed_out", q) == 1
        wait_until(swept, 30, 0.1, "the sweeper's counters")
        self.assertEqual(self.get_job(x["id"])["error_code"], "lease_expired")
        self.assertEqual(len(jobs), 3)
        return {"enqueued": 6, "claimed": 6, "succeeded": 1, "failed": 2, "retried": 2,
                "lease_expired": 1, "timed_out": 1, "cancelled": 1}

    def test_counters_histograms_and_promtool(self):
        want = self.traffic()
        # A long poll that parks 1 s and answers empty; a request no route answers.
        self.claim("w4", self.queue("idle"), wait_seconds=1, expect=0)
        self.assertEqual(self.c.get("/no/such/path").status, 404)
        text = self.scrape()
        promtool_check(self, text)
        s = parse(text)
        got = {k: self.counter(s, k, self.q) for k in COUNTERS}
        self.assertEqual(got, want, text)
        for k in COUNTERS:
            self.assertIn("# TYPE jobq_jobs_%s_total counter" % k, text)
        # The gauges still come from the store.
        self.assertEqual(s[("jobq_jobs", (("queue", self.q), ("status", "failed")))], 2)
        self.assertEqual(s[("jobq_jobs", (("queue", self.q), ("status", "queued")))], 2)
        self.assertEqual(s[("jobq_queue_paused", (("queue", self.q),))], 0)
        # Request durations by route pattern and status.
        def count(method, route, code):
            return s.get(("jobq_http_request_duration_seconds_count",
                          (("code", code), ("method", method), ("route", route))))
        self.assertEqual(count("POST", "/jobs", "201"), 6)
        self.assertEqual(count("POST", "/jobs", "200"), 1)
        self.assertEqual(count("POST", "/jobs/{id}/complete", "200"), 2)
        self.assertEqual(count("POST", "/jobs/{id}/cancel", "409"), 1)
        self.assertEqual(count("other", "other", "404"), 1)
        self.assertGreaterEqual(count("GET", "/jobs/{id}", "200"), 3)
        self.assertIsNone(count("POST", "/jobs/{id}/heartbeat", "200"))  # never called
        inf = s[("jobq_http_request_duration_seconds_bucket",
                 (("code", "201"), ("le", "+Inf"), ("method", "POST"), ("route", "/jobs")))]
        self.assertEqual(inf, 6)
        # The parked poll waited about 1 s; the other claims never parked.
        self.assertEqual(s[("jobq_claim_wait_seconds_count", (("result", "empty"),))], 1)
        self.assertEqual(s[("jobq_claim_wait_seconds_bucket",
                            (("le", "0.5"), ("result", "empty")))], 0)
        self.assertEqual(s[("jobq_claim_wait_seconds_bucket",
                            (("le", "2.5"), ("result", "empty")))], 1)
        self.assertEqual(s[("jobq_claim_wait_seconds_bucket",
                            (("le", "0.001"), ("result", "jobs")))], 3)
        self.assertEqual(s[("jobq_waiting_claims", ())], 0)
        self.assertGreater(s[("jobq_store_commits_total", ())], 0)
        self.assertIn(("jobq_store_retries_total", ()), s)
        self.assertEqual(s[("jobq_store_errors_total", ())], 0)
        self.assertEqual(s[("jobq_http_connections_max", ())], 4096)
        self.assertGreaterEqual(s[("jobq_http_connections", ())], 1)
        r = self.c.post("/queues/%s/pause" % self.q)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(parse(self.scrape())[("jobq_queue_paused", (("queue", self.q),))], 1)
        if backend() == "pg":
            self.assertGreaterEqual(s[("jobq_pg_pool_connections", ())], 1)
            self.assertGreaterEqual(s[("jobq_pg_connects_total", ())], 2)  # pool + listener
            self.assertIn(("jobq_pg_notifications_sent_total", ()), s)
            self.assertIn(("jobq_pg_clock_skew_seconds", ()), s)
            # measured at the first connect already, then by the listener's probes
            self.assertGreater(s[("jobq_pg_round_trip_seconds", ())], 0)
            self.assertLess(s[("jobq_pg_round_trip_seconds", ())], 1)
            self.assertNotIn(("jobq_sqlite_readers", ()), s)
        else:
            self.assertGreaterEqual(s[("jobq_sqlite_readers", ())], 1)
            self.assertGreater(s[("jobq_sqlite_wal_bytes", ())], 0)
            self.assertNotIn(("jobq_pg_pool_connections", ()), s)

    def test_parked_poll_is_a_gauge_and_passes_promtool(self):
        """A scrape while a claim is parked: jobq_waiting_claims 1, and the text (with a queue
        name that needs no escaping but has every allowed character) passes promtool."""
        q = self.queue("A-z_0.9:x")
        self.enqueue(queue=q)
        c = self.server.client(timeout=30)
        done = []
        th = threading.Thread(target=lambda: done.append(
            c.post("/claim", {"worker_id": "p", "queue": self.queue("empty"),
                              "wait_seconds": 3})))
        th.start()
        try:
            wait_until(lambda: "\njobq_waiting_claims 1\n" in self.scrape(), 10, 0.05,
                       "the claim to park")
            text = self.scrape()
            promtool_check(self, text)
            s = parse(text)
            self.assertEqual(self.counter(s, "enqueued", q), 1)
        finally:
            th.join(30)
            c.close()
        self.assertFalse(th.is_alive())
        self.assertEqual(done[0].status, 200)

    def test_limit_gauges(self):
        """Per limit key (never per job key): max_running, running, the due jobs a claim held
        back, a paused key; the text passes promtool."""
        q = self.q
        exact, pattern = q + ":solo", q + ":t*"
        self.assertEqual(self.c.request("PUT", "/limits/" + exact, {"max_running": 1}).status, 200)
        self.assertEqual(self.c.request("PUT", "/limits/" + pattern,
                                        {"rate": {"jobs": 1, "per_seconds": 3600}}).status, 200)
        for key in (exact, exact, exact, q + ":t1", q + ":t1", q + ":t2"):
            self.enqueue(queue=q, concurrency_key=key)
        got = self.claim("w1", q, max_jobs=10)
        self.assertEqual(sorted(j["concurrency_key"] for j in got),
                         sorted([exact, q + ":t1", q + ":t2"]))
        self.claim("w1", q, max_jobs=10, expect=0)  # passes the closed keys by
        t2 = [j for j in got if j["concurrency_key"] == q + ":t2"][0]
        self.act(t2["id"], "snooze", {"lease_token": t2["lease_token"], "seconds": 600,
                                      "pause_key": True})
        text = self.scrape()
        promtool_check(self, text)
        s = parse(text)
        lim = lambda name, key: s.get((name, (("limit", key),)))
        self.assertEqual(s[("jobq_limits", ())], 2)
        self.assertEqual(lim("jobq_limit_max_running", exact), 1)
        self.assertIsNone(lim("jobq_limit_max_running", pattern))  # a rate alone
        self.assertEqual(lim("jobq_limit_running", exact), 1)
        self.assertEqual(lim("jobq_limit_running", pattern), 1)
        self.assertEqual(lim("jobq_limit_held_jobs", exact), 2)
        self.assertEqual(lim("jobq_limit_held_jobs", pattern), 1)  # t1's second job
        self.assertEqual(lim("jobq_limit_paused", exact), 0)
        self.assertEqual(lim("jobq_limit_paused", pattern), 1)
        self.assertFalse([k for k in s if ("limit", q + ":t1") in k[1]], "no job key label")

    def test_throughput(self):
        start = now()
        self.traffic()
        r = self.c.get("/stats/throughput")
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.header("content-type", "").startswith("application/json"))
        body = r.json
        self.assertEqual(sorted(body), ["points", "step_seconds"])
        self.assertEqual(body["step_seconds"], 10)
        points = body["points"]
        self.assertEqual(len(points), 90)
        for i, p in enumerate(points):
            self.assertEqual(sorted(p), ["at", "enqueued", "failed", "succeeded"])
            self.assertEqual(p["at"] % 10, 0)
            if i:
                self.assertEqual(p["at"], points[i - 1]["at"] + 10)
        end = now()
        self.assertGreaterEqual(points[-1]["at"], end - 10 - 1)
        self.assertLessEqual(points[-1]["at"], end)
        totals = {k: sum(p[k] for p in points) for k in ("enqueued", "succeeded", "failed")}
        self.assertEqual(totals, {"enqueued": 6, "succeeded": 1, "failed": 2})
        # Nothing before the traffic started.
        self.assertEqual(sum(p["enqueued"] for p in points if p["at"] < start - 10), 0)


@unittest.skipIf(backend() != "pg", "several processes share only a PostgreSQL database")
class ProcessesTest(ServerTest):
    """Two jobqd on one database: each counts what it did; both show the same gauges."""
    server_args = ARGS

    def test_each_process_counts_its_own(self):
        other = Server(ARGS, db=self.server.db)
        self.addCleanup(other.cleanup)
        other.start()
        oc = other.client()
        self.addCleanup(oc.close)
        for _ in range(2):
            self.enqueue()
        r = oc.post("/claim", {"worker_id": "b", "queue": self.q, "max_jobs": 2})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(len(r.json["jobs"]), 2)
        mine = parse(self.c.get("/metrics").body.decode())
        theirs = parse(oc.get("/metrics").body.decode())
        q = (("queue", self.q),)
        self.assertEqual(mine[("jobq_jobs_enqueued_total", q)], 2)
        self.assertEqual(mine[("jobq_jobs_claimed_total", q)], 0)
        self.assertEqual(theirs.get(("jobq_jobs_enqueued_total", q)), 0)
        self.assertEqual(theirs[("jobq_jobs_claimed_total", q)], 2)
        running = ("jobq_jobs", (("queue", self.q), ("status", "running")))
        self.assertEqual(mine[running], 2)
        self.assertEqual(theirs[running], 2)
        other.stop_checked()


if __name__ == "__main__":
    unittest.main()
