"""Dedup modes on enqueue (API.md "Flow control": `dedup` {key, mode, seconds}), both backends:
each mode's rule (active answers a queued or running job, not a finished one; window answers a
job of the last `seconds`; debounce replaces the payload of a queued job never claimed and
pushes its run_at, else creates one due at now + seconds), 201 when created and 200 with the
job otherwise, batches whose later elements see the earlier ones, idempotency_key first, the
job object's "dedup", bad input naming the field, and the same key fired from 32 connections
at once creating exactly one job, also from three jobqd processes on one PostgreSQL
database."""

import threading
import unittest

from harness import Client, Server, ServerTest, backend, now, wait_until

RACERS = 32


def dedup(key, mode, seconds=None):
    d = {"key": key, "mode": mode}
    if seconds is not None:
        d["seconds"] = seconds
    return d


def fire_at_once(ports, body, n=RACERS):
    """POST body to /jobs from n connections (spread over ports) released together.
    Returns the answers as (status, job id) in no order; a failure of a request is raised."""
    clients = [Client(ports[i % len(ports)]) for i in range(n)]
    go = threading.Barrier(n)
    out, errors = [], []
    lock = threading.Lock()

    def one(c):
        try:
            c.get("/healthz")  # connected before the barrier: they really go together
            go.wait(timeout=30)
            r = c.post("/jobs", body)
            with lock:
                out.append((r.status, r.json.get("id") if isinstance(r.json, dict) else r))
        except Exception as e:  # reported by the caller
            with lock:
                errors.append(repr(e))

    threads = [threading.Thread(target=one, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for c in clients:
        c.close()
    if errors or any(t.is_alive() for t in threads):
        raise AssertionError("racing enqueues failed: %r" % errors[:5])
    return out


class Jobs:
    """What both classes below share (mixed into a ServerTest)."""

    def jobs_of_queue(self):
        return self.list_all("queue=" + self.q)

    def race(self, body, ports=None):
        answers = fire_at_once(ports or [self.server.port], body)
        statuses = sorted(s for s, _ in answers)
        self.assertEqual(statuses, [200] * (RACERS - 1) + [201], answers)
        self.assertEqual(len({i for _, i in answers}), 1, answers)
        jobs = [j for j in self.jobs_of_queue() if j["dedup"]["key"] == body["dedup"]["key"]]
        self.assertEqual([j["id"] for j in jobs], [answers[0][1]])
        return jobs[0]


class DedupModes(Jobs, ServerTest):
    def post(self, status, **fields):
        return self.enqueue(status=status, **fields)

    def test_job_object_shows_dedup(self):
        a = self.post(201, dedup=dedup("a", "active"))
        self.assertEqual(a["dedup"], {"key": "a", "mode": "active", "seconds": None})
        w = self.post(201, dedup=dedup("w", "window", 30))
        self.assertEqual(w["dedup"], {"key": "w", "mode": "window", "seconds": 30})
        d = self.post(201, dedup=dedup("d", "debounce", 0))
        self.assertEqual(d["dedup"], {"key": "d", "mode": "debounce", "seconds": 0})
        self.assertEqual(self.get_job(w["id"])["dedup"], w["dedup"])
        self.assertEqual(self.claim_one()["dedup"], a["dedup"])  # oldest first

    def test_active_answers_a_queued_or_running_job(self):
        first = self.post(201, payload={"n": 1}, dedup=dedup("k", "active"))
        again = self.post(200, payload={"n": 2}, dedup=dedup("k", "active"))
        self.assertEqual(again["id"], first["id"])
        self.assertEqual(again["payload"], {"n": 1})  # answered, not changed
        self.assertEqual(again["status"], "queued")
        c = self.claim_one()
        self.assertEqual(c["id"], first["id"])
        running = self.post(200, dedup=dedup("k", "active"))
        self.assertEqual((running["id"], running["status"]), (first["id"], "running"))
        self.act(first["id"], "complete", {"lease_token": c["lease_token"]})
        # Finished: it no longer counts.
        second = self.post(201, dedup=dedup("k", "active"))
        self.assertGreater(second["id"], first["id"])
        self.act(second["id"], "cancel")
        third = self.post(201, dedup=dedup("k", "active"))
        self.assertGreater(third["id"], second["id"])
        # Per queue: the same key elsewhere is another key.
        other = self.enqueue(status=201, queue=self.queue("other"), dedup=dedup("k", "active"))
        self.assertNotEqual(other["id"], third["id"])
        # A job due later counts as queued.
        later = self.post(201, delay_seconds=3600, dedup=dedup("later", "active"))
        self.assertEqual(self.post(200, dedup=dedup("later", "active"))["id"], later["id"])
        self.assertEqual(len(self.jobs_of_queue()), 4)

    def test_window_answers_a_job_of_the_last_seconds(self):
        first = self.post(201, dedup=dedup("w", "window", 2))
        hit = self.post(200, dedup=dedup("w", "window", 2))
        self.assertEqual(hit["id"], first["id"])
        # Finished or not, it counts while in the window.
        c = self.claim_one()
        self.act(first["id"], "complete", {"lease_token": c["lease_token"]})
        answers = []

        def created():
            r = self.c.post("/jobs", {"queue": self.q, "payload": 1,
                                      "dedup": dedup("w", "window", 2)})
            answers.append((r.status, r.json["id"], r.json["created_at"]))
            return r.status == 201

        wait_until(created, 10, 0.1, "the 2 s window to pass")
        for status, job_id, _ in answers[:-1]:
            self.assertEqual((status, job_id), (200, first["id"]))
        new_id, new_created = answers[-1][1], answers[-1][2]
        self.assertGreater(new_id, first["id"])
        self.assertGreaterEqual(new_created - first["created_at"], 2)
        self.assertEqual(self.post(200, dedup=dedup("w", "window", 2))["id"], new_id)
        # A longer window from a later enqueue still sees the first job.
        self.assertEqual(self.post(200, dedup=dedup("w", "window", 3600))["id"], new_id)
        self.assertEqual(len(self.jobs_of_queue()), 2)

    def test_debounce_replaces_payload_and_pushes_run_at(self):
        before = now()
        first = self.post(201, payload={"n": 1}, dedup=dedup("d", "debounce", 60))
        self.assertGreaterEqual(first["run_at"], before + 60)
        self.assertLessEqual(first["run_at"], now() + 60)
        second = self.post(200, payload={"n": 2}, dedup=dedup("d", "debounce", 120))
        self.assertEqual(second["id"], first["id"])
        self.assertEqual(second["payload"], {"n": 2})
        self.assertGreaterEqual(second["run_at"], first["run_at"] + 60)
        self.assertEqual(second["status"], "queued")
        got = self.get_job(first["id"])
        self.assertEqual((got["payload"], got["run_at"]), ({"n": 2}, second["run_at"]))
        self.claim(expect=0)  # not due
        # seconds 0: due now, claimed at once with the last payload.
        third = self.post(200, payload={"n": 3}, dedup=dedup("d", "debounce", 0))
        self.assertEqual(third["id"], first["id"])
        self.assertLessEqual(third["run_at"], now())
        c = self.claim_one()
        self.assertEqual((c["id"], c["payload"]), (first["id"], {"n": 3}))
        # Claimed: never replaced; a new job is created after it.
        before = now()
        fourth = self.post(201, payload={"n": 4}, dedup=dedup("d", "debounce", 30))
        self.assertGreater(fourth["id"], first["id"])
        self.assertGreaterEqual(fourth["run_at"], before + 30)
        self.assertEqual(self.get_job(first["id"])["payload"], {"n": 3})
        # Requeued by a failure (claimed once): not replaced either.
        self.act(first["id"], "fail", {"lease_token": c["lease_token"], "retry_in_seconds": 0})
        fifth = self.post(200, payload={"n": 5}, dedup=dedup("d", "debounce", 30))
        self.assertEqual(fifth["id"], fourth["id"])
        self.assertEqual(self.get_job(first["id"])["payload"], {"n": 3})
        self.assertEqual(len(self.jobs_of_queue()), 2)
        q = [row for row in self.c.get("/queues").json["queues"] if row["name"] == self.q]
        self.assertEqual((q[0]["queued"], q[0]["running"]), (2, 0))

    def test_batch_elements_see_the_earlier_ones(self):
        r = self.c.post("/jobs/batch", {"jobs": [
            {"queue": self.q, "payload": 1, "dedup": dedup("a", "active")},
            {"queue": self.q, "payload": 2, "dedup": dedup("a", "active")},
            {"queue": self.q, "payload": 3},
            {"queue": self.q, "payload": 4, "dedup": dedup("d", "debounce", 10)},
            {"queue": self.q, "payload": 5, "dedup": dedup("d", "debounce", 20)},
            {"queue": self.q, "payload": 6, "dedup": dedup("w", "window", 60)},
            {"queue": self.q, "payload": 7, "dedup": dedup("w", "window", 60)},
        ]})
        self.assertEqual(r.status, 201, r)
        j = r.json["jobs"]
        self.assertEqual(len(j), 7)
        self.assertEqual((j[1]["id"], j[1]["payload"]), (j[0]["id"], 1))
        self.assertEqual((j[4]["id"], j[4]["payload"]), (j[3]["id"], 5))
        self.assertEqual(j[6]["id"], j[5]["id"])
        self.assertEqual(len({x["id"] for x in j}), 4)
        # A second batch: every element hits; still 201 with each element's job.
        r = self.c.post("/jobs/batch", {"jobs": [
            {"queue": self.q, "payload": 8, "dedup": dedup("a", "active")},
            {"queue": self.q, "payload": 9, "dedup": dedup("w", "window", 60)},
        ]})
        self.assertEqual(r.status, 201, r)
        self.assertEqual([x["id"] for x in r.json["jobs"]], [j[0]["id"], j[5]["id"]])
        self.assertEqual(len(self.jobs_of_queue()), 4)

    def test_idempotency_key_comes_first(self):
        first = self.post(201, payload=1, idempotency_key="i1",
                          dedup=dedup("d", "debounce", 60))
        # The same idempotency_key: its job as it is (no debounce).
        same = self.post(200, payload=2, idempotency_key="i1", dedup=dedup("d", "debounce", 60))
        self.assertEqual((same["id"], same["payload"], same["run_at"]),
                         (first["id"], 1, first["run_at"]))
        # Another idempotency_key: the dedup decides.
        other = self.post(200, payload=3, idempotency_key="i2", dedup=dedup("d", "debounce", 60))
        self.assertEqual((other["id"], other["payload"], other["idempotency_key"]),
                         (first["id"], 3, "i1"))
        self.assertEqual(len(self.jobs_of_queue()), 1)

    def test_bad_dedup_names_the_field(self):
        cases = [
            ({"dedup": "k"}, "dedup"),
            ({"dedup": {"mode": "active"}}, "dedup.key"),
            ({"dedup": {"key": "", "mode": "active"}}, "dedup.key"),
            ({"dedup": {"key": "k" * 201, "mode": "active"}}, "dedup.key"),
            ({"dedup": {"key": 5, "mode": "active"}}, "dedup.key"),
            ({"dedup": {"key": "k"}}, "dedup.mode"),
            ({"dedup": {"key": "k", "mode": "sometimes"}}, "dedup.mode"),
            ({"dedup": {"key": "k", "mode": "window"}}, "dedup.seconds"),
            ({"dedup": {"key": "k", "mode": "window", "seconds": 0}}, "dedup.seconds"),
            ({"dedup": {"key": "k", "mode": "window", "seconds": 31536001}}, "dedup.seconds"),
            ({"dedup": {"key": "k", "mode": "debounce"}}, "dedup.seconds"),
            ({"dedup": {"key": "k", "mode": "debounce", "seconds": -1}}, "dedup.seconds"),
            ({"dedup": {"key": "k", "mode": "debounce", "seconds": "5"}}, "dedup.seconds"),
            ({"dedup": dedup("k", "debounce", 5), "run_at": now() + 60}, "run_at"),
            ({"dedup": dedup("k", "debounce", 5), "delay_seconds": 5}, "delay_seconds"),
        ]
        for extra, field in cases:
            body = {"queue": self.q, "payload": 1}
            body.update(extra)
            r = self.c.post("/jobs", body)
            self.assert_error(r, 400, "invalid_request", mentions=field)
            r = self.c.post("/jobs/batch", {"jobs": [{"queue": self.q, "payload": 0}, body]})
            self.assert_error(r, 400, "invalid_request", mentions="jobs[1]." + field)
        self.assertEqual(self.jobs_of_queue(), [])
        # active takes no seconds: any given is ignored.
        j = self.post(201, dedup={"key": "k", "mode": "active", "seconds": 5})
        self.assertEqual(j["dedup"]["seconds"], None)

    def test_32_connections_at_once_make_one_job_per_mode(self):
        for mode, seconds in (("active", None), ("window", 3600), ("debounce", 60)):
            with self.subTest(mode=mode):
                body = {"queue": self.q, "payload": {"m": mode},
                        "dedup": dedup("race-" + mode, mode, seconds)}
                self.race(body)


@unittest.skipIf(backend() != "pg", "several processes share only a PostgreSQL database")
class DedupAcrossProcesses(Jobs, ServerTest):
    """The race, from three jobqd processes on one PostgreSQL database."""

    def setUp(self):
        super().setUp()
        self.others = []
        for _ in range(2):
            srv = Server(db=self.server.db)
            self.addCleanup(srv.cleanup)
            srv.start()
            self.others.append(srv)

    def tearDown(self):
        for srv in self.others:
            srv.stop_checked(self)
        super().tearDown()

    def test_32_connections_at_once_make_one_job_per_mode(self):
        ports = [self.server.port] + [s.port for s in self.others]
        for round_ in range(3):
            for mode, seconds in (("active", None), ("window", 3600), ("debounce", 60)):
                with self.subTest(mode=mode, round=round_):
                    body = {"queue": self.q, "payload": {"m": mode},
                            "dedup": dedup("race-%s-%d" % (mode, round_), mode, seconds)}
                    self.race(body, ports)


if __name__ == "__main__":
    unittest.main()
