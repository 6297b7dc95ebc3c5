"""Many workers at once: 1,200 jobs, 16 threads each with its own keep-alive connection,
claiming 1..5 at a time and completing. Every job is completed exactly once and never given
to two claimers."""

import random
import threading
import time
import unittest

from harness import ServerTest

JOBS = 1200
THREADS = 16
DEADLINE = 150.0


class ManyWorkers(ServerTest):
    def test_every_job_completed_exactly_once(self):
        ids = []
        for start in range(0, JOBS, 400):
            body = {"jobs": [{"queue": self.q, "payload": {"n": n}, "priority": n % 7}
                             for n in range(start, start + 400)]}
            r = self.c.post("/jobs/batch", body)
            self.assertEqual(r.status, 201, r)
            ids.extend(j["id"] for j in r.json["jobs"])
        self.assertEqual(len(set(ids)), JOBS)

        lock = threading.Lock()
        claimed = {}        # job id -> worker
        double = []         # (id, first worker, second worker)
        bad_answers = []    # unexpected responses
        completed = []
        stop_at = time.monotonic() + DEADLINE

        def worker(n):
            name = "w%02d" % n
            rng = random.Random(n)
            c = self.server.client()
            try:
                for _ in range(JOBS):  # bounded: never more rounds than jobs
                    if time.monotonic() > stop_at:
                        bad_answers.append((name, "deadline"))
                        return
                    r = c.post("/claim", {"worker_id": name, "queue": self.q,
                                          "max_jobs": rng.randint(1, 5), "lease_seconds": 120})
                    if r.status != 200:
                        bad_answers.append((name, "claim", r.status, r.body[:200]))
                        return
                    jobs = r.json["jobs"]
                    if not jobs:
                        return
                    with lock:
                        for j in jobs:
                            if j["id"] in claimed:
                                double.append((j["id"], claimed[j["id"]], name))
                            else:
                                claimed[j["id"]] = name
                    for j in jobs:
                        r = c.post("/jobs/%d/complete" % j["id"],
                                   {"lease_token": j["lease_token"], "result": {"by": name}})
                        if r.status != 200 or r.json.get("status") != "succeeded":
                            bad_answers.append((name, "complete", j["id"], r.status,
                                                r.body[:200]))
                        else:
                            with lock:
                                completed.append(j["id"])
            except Exception as e:  # reported below; a thread must not die silently
                bad_answers.append((name, "exception", repr(e)))
            finally:
                c.close()

        threads = [threading.Thread(target=worker, args=(n,), daemon=True)
                   for n in range(THREADS)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=max(1.0, stop_at - time.monotonic() + 5))
        elapsed = time.monotonic() - t0
        self.assertFalse(any(t.is_alive() for t in threads), "workers still running")
        self.assertEqual(bad_answers, [])
        self.assertEqual(double, [], "jobs given to two claimers")
        self.assertEqual(sorted(completed), sorted(ids))
        self.assertEqual(len(set(claimed.values())) > 1, True, "only one worker got jobs")
        print("\n%d jobs by %d workers in %.1fs" % (JOBS, THREADS, elapsed))

        done = self.list_all("queue=%s&status=succeeded" % self.q)
        self.assertEqual(sorted(j["id"] for j in done), sorted(ids))
        for j in done:
            self.assertEqual(j["attempts"], 1)
            self.assertEqual(j["result"], {"by": claimed[j["id"]]})
        self.assertEqual(self.list_all("queue=%s&status=running" % self.q), [])
        self.assertEqual(self.list_all("queue=%s&status=queued" % self.q), [])
        rows = {row["name"]: row for row in self.c.get("/queues").json["queues"]}
        self.assertEqual(rows[self.q]["succeeded"], JOBS)
        self.assertEqual(rows[self.q]["queued"], 0)


if __name__ == "__main__":
    unittest.main()
