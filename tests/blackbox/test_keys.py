"""Limits enforced by the claim (API.md "Flow control"): max_running and the sliding rate
window per concurrency key, exact and pattern limits, a saturated key that never blocks the
others (nor do requirements a claimer cannot meet), and parked long polls woken when a key
has room again (a job of it ends, its limit is deleted). Workers count a job as running from
the claim's answer until just before they send its complete, so their count never exceeds
what the server counts: a count above max_running is the server's fault. On PostgreSQL the
same holds for workers spread over three jobqd processes on one database. Both backends."""

import re
import threading
import time
import unittest
from urllib.parse import quote

from harness import Server, ServerTest, backend, wait_until

WORKER_DEADLINE = 90.0  # seconds a worker pool may take to drain its jobs


def put_limit(client, key, body):
    r = client.request("PUT", "/limits/" + quote(key, safe=""), body)
    assert r.status == 200, "PUT /limits/%s %r -> %r" % (key, body, r)
    return r.json


def enqueue_many(client, queue, n, **fields):
    ids = []
    for start in range(0, n, 1000):
        jobs = [dict({"queue": queue, "payload": i}, **fields)
                for i in range(start, min(n, start + 1000))]
        r = client.post("/jobs/batch", {"jobs": jobs})
        assert r.status == 201, r
        ids.extend(j["id"] for j in r.json["jobs"])
    return ids


class Pool:
    """Worker threads over `clients` (one client each) that claim from queue, hold each job
    `hold` seconds and complete it, until `total` jobs are done or the deadline passes.
    running[key] is the client-side count of jobs of each key between claim and complete;
    peak[key] its highest value; claimed_at[key] the server's claimed_at of each claim."""

    def __init__(self, clients, queue, total, hold=0.05, max_jobs=2):
        self.clients, self.queue, self.total = clients, queue, total
        self.hold, self.max_jobs = hold, max_jobs
        self.lock = threading.Lock()
        self.running, self.peak, self.claimed_at = {}, {}, {}
        self.done = 0
        self.errors = []
        self.deadline = time.monotonic() + WORKER_DEADLINE

    def _work(self, idx):
        c = self.clients[idx]
        while time.monotonic() < self.deadline:
            with self.lock:
                if self.done >= self.total or self.errors:
                    return
            r = c.post("/claim", {"worker_id": "w%d" % idx, "queue": self.queue,
                                  "max_jobs": self.max_jobs, "wait_seconds": 1}, timeout=30)
            if r.status != 200:
                with self.lock:
                    self.errors.append(("claim", r.status, r.body))
                return
            jobs = r.json["jobs"]
            with self.lock:
                for j in jobs:
                    k = j["concurrency_key"]
                    self.running[k] = self.running.get(k, 0) + 1
                    self.peak[k] = max(self.peak.get(k, 0), self.running[k])
                    self.claimed_at.setdefault(k, []).append(j["claimed_at"])
            time.sleep(self.hold)
            for j in jobs:
                with self.lock:
                    self.running[j["concurrency_key"]] -= 1
                r = c.post("/jobs/%d/complete" % j["id"], {"lease_token": j["lease_token"]})
                with self.lock:
                    if r.status != 200:
                        self.errors.append(("complete", r.status, r.body))
                    self.done += 1

    def run(self):
        threads = [threading.Thread(target=self._work, args=(i,)) for i in range(len(self.clients))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(WORKER_DEADLINE + 40)
        return not any(t.is_alive() for t in threads)


def max_in_window(times, seconds):
    """The most claims in any `seconds` consecutive whole seconds."""
    times = sorted(times)
    best, lo = 0, 0
    for hi, t in enumerate(times):
        while times[lo] <= t - seconds:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


class KeyLimits(ServerTest):
    def clients(self, n):
        cs = [self.server.client(timeout=30) for _ in range(n)]
        for c in cs:
            self.addCleanup(c.close)
        return cs

    def test_max_running_holds_and_other_keys_flow(self):
        a, b = self.queue("a"), self.queue("b")
        put_limit(self.c, a, {"max_running": 2})
        enqueue_many(self.c, self.q, 24, concurrency_key=a)
        enqueue_many(self.c, self.q, 24, concurrency_key=b)
        enqueue_many(self.c, self.q, 8)
        pool = Pool(self.clients(8), self.q, 56, hold=0.08)
        self.assertTrue(pool.run(), "workers did not finish")
        self.assertEqual(pool.errors, [])
        self.assertEqual(pool.done, 56)
        self.assertLessEqual(pool.peak[a], 2, pool.peak)
        self.assertEqual(pool.peak[a], 2, "the limited key ran below its limit: %r" % pool.peak)
        self.assertGreater(pool.peak[b], 2, "an unlimited key was held back: %r" % pool.peak)
        r = self.c.get("/limits/" + quote(a, safe=""))
        self.assertEqual(r.json["running"], 0)

    def test_rate_window_holds(self):
        k = self.queue("rate")
        put_limit(self.c, k, {"rate": {"jobs": 3, "per_seconds": 2}})
        enqueue_many(self.c, self.q, 10, concurrency_key=k)
        pool = Pool(self.clients(4), self.q, 10, hold=0.01, max_jobs=3)
        self.assertTrue(pool.run(), "workers did not finish")
        self.assertEqual(pool.errors, [])
        times = pool.claimed_at[k]
        self.assertEqual(len(times), 10)
        self.assertLessEqual(max_in_window(times, 2), 3, sorted(times))
        self.assertGreaterEqual(max(times) - min(times), 6, "10 claims at 3 per 2 s: 3 windows")

    def test_pattern_and_exact_limits(self):
        vip, other = self.queue("t:vip"), self.queue("t:a")
        put_limit(self.c, self.queue("t:*"), {"max_running": 1})
        put_limit(self.c, vip, {"max_running": 3})
        enqueue_many(self.c, self.q, 5, concurrency_key=vip)
        enqueue_many(self.c, self.q, 5, concurrency_key=other)
        jobs = self.claim(max_jobs=10)
        keys = [j["concurrency_key"] for j in jobs]
        self.assertEqual(keys.count(vip), 3, keys)
        self.assertEqual(keys.count(other), 1, keys)

    def test_saturated_key_never_blocks_other_keys(self):
        hot, free = self.queue("hot"), self.queue("free")
        put_limit(self.c, hot, {"max_running": 1})
        enqueue_many(self.c, self.q, 3000, concurrency_key=hot, priority=10)
        enqueue_many(self.c, self.q, 10, concurrency_key=free)
        self.assertEqual(self.claim_one()["concurrency_key"], hot)
        started = time.monotonic()
        got = []
        for _ in range(10):
            got.extend(self.claim(max_jobs=1))
        took = time.monotonic() - started
        self.assertEqual([j["concurrency_key"] for j in got], [free] * 10)
        self.assertLess(took, 10.0, "ten claims past a saturated key took %.1f s" % took)
        self.assertEqual(self.claim(), [])

    def test_unmet_requirements_never_block_a_claimer(self):
        enqueue_many(self.c, self.q, 2000, requires=["gpu"], priority=5)
        plain = enqueue_many(self.c, self.q, 3)
        got = self.claim(max_jobs=3)
        self.assertEqual([j["id"] for j in got], plain)
        gpu = self.claim(capabilities=["gpu", "x"])
        self.assertEqual(gpu[0]["requires"], ["gpu"])

    def long_poll(self, out, queue=None):
        c = self.server.client(timeout=30)
        try:
            r = c.post("/claim", {"worker_id": "parked", "queue": queue or self.q,
                                  "wait_seconds": 20}, timeout=30)
            out.append((time.monotonic(), r))
        finally:
            c.close()

    def parked_claim_woken_by(self, action):
        k = self.queue("k")
        put_limit(self.c, k, {"max_running": 1})
        enqueue_many(self.c, self.q, 2, concurrency_key=k)
        first = self.claim_one()
        out = []
        t = threading.Thread(target=self.long_poll, args=(out,))
        t.start()
        time.sleep(0.5)  # parked (a claim that came early finds the key full, and parks)
        self.assertEqual(out, [], "the claim should wait: the key is full")
        at = time.monotonic()
        action(first, k)
        t.join(30)
        self.assertEqual(len(out), 1)
        done_at, r = out[0]
        self.assertEqual(r.status, 200, r)
        self.assertEqual(len(r.json["jobs"]), 1, r)
        self.assertLess(done_at - at, 5.0, "the parked claim was not woken")

    def test_end_of_a_job_wakes_a_parked_claim(self):
        self.parked_claim_woken_by(lambda j, k: self.act(
            j["id"], "complete", {"lease_token": j["lease_token"]}))

    def waiting_claims(self):
        r = self.c.get("/metrics")
        self.assertEqual(r.status, 200, r)
        m = re.search(r"^jobq_waiting_claims (\d+)$", r.body.decode("utf-8"), re.M)
        return int(m.group(1)) if m else -1

    def test_end_of_a_job_wakes_a_claim_parked_on_another_queue(self):
        """A job of queue A runs with the key's one slot; a long poll on queue B, where a job
        of the same key waits, parks. The job's end in A wakes it at once: well before the
        parked claim looks again by itself (PostgreSQL: 1 to 2 s after it parked)."""
        k, other = self.queue("k"), self.queue("b")
        put_limit(self.c, k, {"max_running": 1})
        enqueue_many(self.c, self.q, 1, concurrency_key=k)
        waiting = enqueue_many(self.c, other, 1, concurrency_key=k)
        first = self.claim_one()
        out = []
        t = threading.Thread(target=self.long_poll, args=(out, other))
        t.start()
        wait_until(lambda: self.waiting_claims() == 1, 10, what="the claim on B parked")
        self.assertEqual(out, [], "the claim should wait: the key is full")
        at = time.monotonic()
        self.act(first["id"], "complete", {"lease_token": first["lease_token"]})
        t.join(30)
        self.assertEqual(len(out), 1)
        done_at, r = out[0]
        self.assertEqual(r.status, 200, r)
        self.assertEqual([j["id"] for j in r.json["jobs"]], waiting, r)
        self.assertLess(done_at - at, 0.6, "the parked claim was not woken by the job's end")

    def test_window_freeing_a_slot_wakes_a_parked_claim(self):
        """API.md: "When a running job of a key ends or its window frees a slot, parked long
        polls are woken." The key's one claim per 2 s is spent (the job already ended): a long
        poll parks and is answered when the window frees the slot, not at its 20 s end."""
        k = self.queue("w")
        put_limit(self.c, k, {"rate": {"jobs": 1, "per_seconds": 2}})
        enqueue_many(self.c, self.q, 2, concurrency_key=k)
        first = self.claim_one()
        self.act(first["id"], "complete", {"lease_token": first["lease_token"]})
        started = time.monotonic()
        got = self.claim(wait_seconds=20, expect=1)
        took = time.monotonic() - started
        self.assertGreaterEqual(got[0]["claimed_at"], first["claimed_at"] + 2, got)
        self.assertLess(took, 6.0, "the parked claim was not woken when the window freed a slot")

    def test_deleting_the_limit_releases_waiting_jobs(self):
        def delete(j, k):
            r = self.c.request("DELETE", "/limits/" + quote(k, safe=""))
            self.assertEqual(r.status, 200, r)
        self.parked_claim_woken_by(delete)


@unittest.skipUnless(backend() == "pg", "several processes share a PostgreSQL database")
class KeyLimitsAcrossProcesses(unittest.TestCase):
    """Three jobqd processes on one database, 30 workers over them: max_running and the rate
    hold for every key, and the keys without a limit keep flowing."""

    def setUp(self):
        self.servers = []
        for i in range(3):
            srv = Server(("--sweep-interval", "1"), db=self.servers[0].db if self.servers else None)
            self.addCleanup(srv.cleanup)
            srv.start()
            self.servers.append(srv)

    def test_limits_hold_across_processes(self):
        q = "keys-%d" % time.monotonic_ns()
        c = self.servers[0].client()
        self.addCleanup(c.close)
        limited = ["lim:%d" % i for i in range(3)]
        put_limit(c, "lim:*", {"max_running": 2})
        put_limit(c, "rate", {"rate": {"jobs": 4, "per_seconds": 1}})
        for k in limited:
            enqueue_many(c, q, 20, concurrency_key=k)
        enqueue_many(c, q, 12, concurrency_key="rate")
        enqueue_many(c, q, 40, concurrency_key="free")
        clients = []
        for i in range(30):
            cl = self.servers[i % 3].client(timeout=30)
            self.addCleanup(cl.close)
            clients.append(cl)
        pool = Pool(clients, q, 112, hold=0.1, max_jobs=2)
        self.assertTrue(pool.run(), "workers did not finish")
        self.assertEqual(pool.errors, [])
        self.assertEqual(pool.done, 112)
        for k in limited:
            self.assertLessEqual(pool.peak[k], 2, (k, pool.peak))
        self.assertLessEqual(max_in_window(pool.claimed_at["rate"], 1), 4,
                             sorted(pool.claimed_at["rate"]))
        self.assertGreater(pool.peak["free"], 2, pool.peak)
        for srv in self.servers:
            srv.stop_checked(self)


if __name__ == "__main__":
    unittest.main()
