"""Workflows case by case (API.md "Workflows"): depends_on with ids and, inside a batch,
refs; on_dependency_failure; the blocked status; release when the last dependency succeeds,
the cancel of "cancel" dependents down the graph when one fails, "run" dependents that run
anyway; a dependency already finished at enqueue; cancel of a blocked job; the retry that
resumes a failed workflow; GET /jobs/{id}/dependencies and /dependents; a batch with a
completion callback; long polls woken by a release; purges; bad input refused with nothing
created; a chain longer than one transaction visits; on PostgreSQL two dependencies of one
job retried or cancelled at once through two processes, and an insert behind a row lock.

Split from test_workflows (the large graphs, which hold the lock "load") so that it holds no
lock under parallel ctest: it makes no heavy load, and its one bound on time (a parked claim
woken within 10 s of the release that frees its job) is seconds above what a busy machine
takes (CONTRIBUTING.md "The suite's time")."""

import re
import threading
import time
import unittest

from harness import REQUEST_TIMEOUT, Server, backend, psql, wait_until
from test_workflows import WorkflowTest


def detail(dep):
    """The error_detail of a job cancelled because dependency dep did not succeed: a text
    that names it."""
    return "dependency %d did not succeed" % dep


class BadInput(WorkflowTest):
    def test_refusals_name_the_field_and_create_nothing(self):
        a = self.enqueue()["id"]
        missing = a + 1000000
        self.refused("/jobs", {"queue": self.q, "payload": 1, "depends_on": [a, missing]},
                     "job %d does not exist" % missing)
        self.refused("/jobs", {"queue": self.q, "payload": 1, "depends_on": [a, "x"]},
                     "depends_on[1]")
        self.refused("/jobs", {"queue": self.q, "payload": 1, "depends_on": [0]},
                     "depends_on[0]")
        self.refused("/jobs", {"queue": self.q, "payload": 1, "depends_on": a},
                     "depends_on")
        self.refused("/jobs", {"queue": self.q, "payload": 1,
                               "depends_on": list(range(1, 1002))}, "depends_on")
        self.refused("/jobs", {"queue": self.q, "payload": 1, "depends_on": [a],
                               "on_dependency_failure": "skip"}, "on_dependency_failure")
        el = {"queue": self.q, "payload": 1}
        self.refused("/jobs/batch", {"jobs": [dict(el, ref="a"), dict(el, depends_on=["b"])]},
                     'jobs[1].depends_on[0]: no element of the batch has ref "b"')
        self.refused("/jobs/batch", {"jobs": [dict(el, ref="a"), dict(el), dict(el, ref="a")]},
                     'jobs[2].ref: "a" is also jobs[0].ref')
        self.refused("/jobs/batch", {"jobs": [dict(el, ref="a", depends_on=["c"]),
                                              dict(el, ref="b", depends_on=["a"]),
                                              dict(el, ref="c", depends_on=["b"])]},
                     "depends_on: a cycle")
        self.refused("/jobs/batch", {"jobs": [dict(el), dict(el, ref="s", depends_on=["s"])]},
                     "jobs[1].depends_on: a cycle")
        # An unknown id in a later element: the earlier ones are not created either.
        self.refused("/jobs/batch", {"jobs": [dict(el, ref="a"), dict(el, depends_on=[a]),
                                              dict(el, depends_on=["a", missing])]},
                     "jobs[2].depends_on: job %d does not exist" % missing)
        self.refused("/jobs/batch", {"jobs": [dict(el), dict(el, on_dependency_failure=1)]},
                     "jobs[1].on_dependency_failure")
        self.refused("/jobs/batch", {"jobs": [dict(el, depends_on=[a] * 1001)]},
                     "jobs[0].depends_on must be an array of at most 1000")
        self.refused("/jobs/batch", {"jobs": [dict(el, ref="r" * 201)]}, "jobs[0].ref")
        # At the limit: 1000 entries (repeats count once) and a ref of 200 bytes are taken.
        ids = [j["id"] for j in self.batch([{} for _ in range(999)])] + [a]
        j = self.enqueue(depends_on=ids)
        self.assertEqual((j["status"], sorted(j["depends_on"])), ("blocked", sorted(ids)))
        jobs = self.batch([{"ref": "r" * 200}, {"depends_on": ["r" * 200, a, a]}])
        self.assertEqual(sorted(jobs[1]["depends_on"]), sorted([jobs[0]["id"], a]))

    def test_no_dependencies_shows_empty(self):
        j = self.enqueue()
        self.assertEqual((j["status"], j["depends_on"], j["on_dependency_failure"]),
                         ("queued", [], "cancel"))
        r = self.c.get("/jobs/%d/dependencies" % j["id"])
        self.assertEqual((r.status, r.json), (200, {"dependencies": []}))
        r = self.c.get("/jobs/%d/dependents" % j["id"])
        self.assertEqual((r.status, r.json), (200, {"dependents": [], "more": False}))
        for kind in ("dependencies", "dependents"):
            self.assert_error(self.c.get("/jobs/987654321/%s" % kind), 404, "not_found")
        # The mode is kept with dependencies only, whichever way the batch is written.
        jobs = self.batch([{"ref": "a", "on_dependency_failure": "run"},
                           {"depends_on": ["a"], "on_dependency_failure": "run"}])
        self.assertEqual([j["on_dependency_failure"] for j in jobs], ["cancel", "run"])


class Graphs(WorkflowTest):
    def test_chain_runs_in_order_and_blocked_is_listed(self):
        a = self.enqueue({"step": "a"})["id"]
        b = self.enqueue({"step": "b"}, depends_on=[a])
        c = self.enqueue({"step": "c"}, depends_on=[b["id"]])
        self.assertEqual((b["status"], b["depends_on"]), ("blocked", [a]))
        self.assertEqual(c["status"], "blocked")
        listed = [j["id"] for j in self.list_all("queue=%s&status=blocked" % self.q)]
        self.assertEqual(listed, [b["id"], c["id"]])
        row = {q["name"]: q for q in self.c.get("/queues").json["queues"]}[self.q]
        self.assertEqual((row["queued"], row["blocked"]), (1, 2))
        # Only a is claimable, however many are asked for.
        self.run_one(a, {"a": 1})
        self.assertEqual(self.status_of(b["id"]), "queued")
        self.assertEqual(self.status_of(c["id"]), "blocked")
        self.run_one(b["id"])
        self.run_one(c["id"])
        self.claim(expect=0)
        row = {q["name"]: q for q in self.c.get("/queues").json["queues"]}[self.q]
        self.assertEqual((row["succeeded"], row["blocked"]), (3, 0))

    def test_diamond_in_one_batch_children_first(self):
        jobs = self.batch([
            {"ref": "bottom", "depends_on": ["left", "right"]},
            {"ref": "left", "depends_on": ["top"]},
            {"ref": "right", "depends_on": ["top"]},
            {"ref": "top"},
        ])
        bottom, left, right, top = [j["id"] for j in jobs]
        self.assertEqual([j["status"] for j in jobs], ["blocked", "blocked", "blocked", "queued"])
        self.assertEqual(sorted(jobs[0]["depends_on"]), sorted([left, right]))
        self.assertEqual(jobs[1]["depends_on"], [top])
        self.run_one(top)
        got = self.claim(max_jobs=10, expect=2)
        self.assertEqual(sorted(j["id"] for j in got), sorted([left, right]))
        self.finish(got[0])
        self.assertEqual(self.status_of(bottom), "blocked")
        self.finish(got[1])
        self.run_one(bottom)
        kids = self.c.get("/jobs/%d/dependents" % top).json
        self.assertEqual([(k["id"], k["status"]) for k in kids["dependents"]],
                         [(left, "succeeded"), (right, "succeeded")])

    def test_failure_cancels_down_the_graph_and_run_dependents_run(self):
        jobs = self.batch([
            {"ref": "a"},
            {"ref": "b", "depends_on": ["a"]},
            {"ref": "c", "depends_on": ["b"]},
            {"ref": "cleanup", "depends_on": ["a"], "on_dependency_failure": "run"},
            {"ref": "after_c", "depends_on": ["c"], "on_dependency_failure": "run"},
        ])
        a, b, c, cleanup, after_c = [j["id"] for j in jobs]
        self.fail_for_good(self.claim_one())
        jb, jc = self.get_job(b), self.get_job(c)
        self.assertEqual((jb["status"], jb["error_code"], jb["error_detail"]),
                         ("cancelled", "dependency_failed", detail(a)))
        self.assertEqual((jc["status"], jc["error_code"], jc["error_detail"]),
                         ("cancelled", "dependency_failed", detail(b)))
        # The "run" dependents are released: the clean-up at once, after_c once c is cancelled.
        got = self.claim(max_jobs=10, expect=2)
        self.assertEqual(sorted(j["id"] for j in got), sorted([cleanup, after_c]))
        deps = self.c.get("/jobs/%d/dependencies" % cleanup).json["dependencies"]
        self.assertEqual([(d["id"], d["status"]) for d in deps], [(a, "failed")])

    def test_dependency_finished_at_enqueue_counts_at_once(self):
        done = self.enqueue({"x": 1})["id"]
        self.run_one(done, {"fine": True})
        bad = self.enqueue({"x": 2})["id"]
        self.fail_for_good(self.claim_one())
        gone = self.enqueue({"x": 3})["id"]
        self.act(gone, "cancel")
        j = self.enqueue(depends_on=[done])
        self.assertEqual(j["status"], "queued")
        j = self.enqueue(depends_on=[done, bad])
        self.assertEqual((j["status"], j["error_code"], j["error_detail"]),
                         ("cancelled", "dependency_failed", detail(bad)))
        j = self.enqueue(depends_on=[gone], on_dependency_failure="run")
        self.assertEqual(j["status"], "queued")
        j = self.enqueue(depends_on=[gone])
        self.assertEqual((j["status"], j["error_code"]), ("cancelled", "dependency_failed"))
        # In a batch too, and an element depending on such an element is cancelled with it.
        jobs = self.batch([{"ref": "x", "depends_on": [bad]}, {"depends_on": ["x"]}])
        self.assertEqual([j["status"] for j in jobs], ["cancelled", "cancelled"])
        self.assertEqual(jobs[1]["error_detail"], detail(jobs[0]["id"]))

    def test_cancel_of_a_blocked_job(self):
        a = self.enqueue()["id"]
        b = self.enqueue(depends_on=[a])["id"]
        c = self.enqueue(depends_on=[b])["id"]
        j = self.act(b, "cancel").json
        self.assertEqual(j["status"], "cancelled")
        jc = self.get_job(c)
        self.assertEqual((jc["status"], jc["error_detail"]),
                         ("cancelled", detail(b)))
        self.act(b, "cancel", status=409)
        self.run_one(a)
        self.claim(expect=0)

    def test_retry_resumes_a_failed_workflow(self):
        jobs = self.batch([{"ref": "a"}, {"ref": "b", "depends_on": ["a"]},
                           {"ref": "c", "depends_on": ["b"]},
                           {"ref": "d", "depends_on": ["a", "c"]}])
        a, b, c, d = [j["id"] for j in jobs]
        self.fail_for_good(self.claim_one())
        self.assertEqual([self.status_of(x) for x in (b, c, d)], ["cancelled"] * 3)
        j = self.act(a, "retry").json
        self.assertEqual(j["status"], "queued")
        self.assertEqual([self.status_of(x) for x in (b, c, d)], ["blocked"] * 3)
        for x in (a, b, c, d):
            self.run_one(x)
        self.assertEqual([self.status_of(x) for x in (a, b, c, d)], ["succeeded"] * 4)

    def test_parked_long_poll_is_woken_by_a_release(self):
        a = self.enqueue()["id"]
        b = self.enqueue(depends_on=[a])["id"]
        ja = self.claim_one()
        self.parked_claim_woken(lambda: self.finish(ja), b)

    def test_parked_long_poll_is_woken_by_a_purge_release(self):
        parents = self.queue("parents")
        a = self.enqueue(queue=parents)["id"]
        b = self.enqueue(depends_on=[a], on_dependency_failure="run")["id"]
        self.parked_claim_woken(
            lambda: self.c.request("DELETE", "/queues/%s/jobs?status=queued" % parents), b)

    def parked_claim_woken(self, release, expect_id):
        """A claim parked on the class's queue (nothing claimable: expect_id is blocked) is
        woken with expect_id soon after release() releases it."""
        got = {}

        def park():
            c = self.server.client(timeout=REQUEST_TIMEOUT + 30)
            try:
                t0 = time.monotonic()
                r = c.post("/claim", {"worker_id": "parked", "queue": self.q,
                                      "wait_seconds": 30}, timeout=REQUEST_TIMEOUT + 30)
                got["r"], got["t"] = r, time.monotonic() - t0
            finally:
                c.close()

        t = threading.Thread(target=park)
        t.start()
        # It parks: it finds nothing (expect_id is blocked).
        wait_until(lambda: re.search(r"(?m)^jobq_waiting_claims [1-9]",
                                     self.c.get("/metrics").body.decode()), 10, 0.05,
                   "the claim to park")
        t_done = time.monotonic()
        release()
        t.join(40)
        self.assertFalse(t.is_alive())
        r = got["r"]
        self.assertEqual(r.status, 200, r)
        self.assertEqual([j["id"] for j in r.json["jobs"]], [expect_id])
        self.assertLess(time.monotonic() - t_done, 10, "the parked claim was not woken")

    def test_release_run_at_and_a_queue_of_blocked_jobs(self):
        a = self.enqueue()["id"]
        other = self.queue("after")
        future = int(time.time()) + 1000
        later = self.enqueue(queue=other, depends_on=[a], run_at=future)
        past = self.enqueue(queue=other, depends_on=[a], run_at=100)
        self.assertEqual((later["status"], later["run_at"]), ("blocked", future))
        # A queue that holds only blocked jobs is listed, with nothing due.
        row = {q["name"]: q for q in self.c.get("/queues").json["queues"]}[other]
        self.assertEqual((row["queued"], row["blocked"], row["oldest_queued_age_seconds"]),
                         (0, 2, 0))
        # Released: run_at = max(its run_at, now).
        self.run_one(a)
        jl, jp = self.get_job(later["id"]), self.get_job(past["id"])
        self.assertEqual((jl["status"], jl["run_at"]), ("queued", future))
        self.assertEqual(jp["status"], "queued")
        self.assert_near(jp["run_at"], int(time.time()))
        self.assertEqual([j["id"] for j in self.claim(queue=other, max_jobs=10)], [past["id"]])

    def test_purge_blocked(self):
        a = self.enqueue()["id"]
        b = self.enqueue(depends_on=[a])["id"]
        r = self.c.request("DELETE", "/queues/%s/jobs?status=blocked" % self.q)
        self.assertEqual((r.status, r.json["deleted"]), (200, 1), r)
        self.assert_error(self.c.get("/jobs/%d" % b), 404, "not_found")
        self.assertEqual(self.status_of(a), "queued")

    def test_purge_of_a_queued_parent_settles_its_dependents_as_a_cancel(self):
        parents = self.queue("parents")
        a = self.enqueue(queue=parents)["id"]
        b = self.enqueue(depends_on=[a])["id"]
        c = self.enqueue(depends_on=[b])["id"]
        run = self.enqueue(depends_on=[a], on_dependency_failure="run")["id"]
        r = self.c.request("DELETE", "/queues/%s/jobs?status=queued" % parents)
        self.assertEqual((r.status, r.json["deleted"]), (200, 1), r)
        self.assert_error(self.c.get("/jobs/%d" % a), 404, "not_found")
        jb, jc = self.get_job(b), self.get_job(c)
        self.assertEqual((jb["status"], jb["error_code"], jb["error_detail"]),
                         ("cancelled", "dependency_failed", detail(a)))
        self.assertEqual((jc["status"], jc["error_code"], jc["error_detail"]),
                         ("cancelled", "dependency_failed", detail(b)))
        self.assertEqual(self.status_of(run), "queued")
        self.run_one(run)
        self.claim(expect=0)

    def test_retry_after_a_purge_leaves_the_dependent_cancelled(self):
        """d waits for a and for x; a fails (d cancelled by it), x is purged: a retry of a
        that then succeeds leaves d cancelled, by x."""
        other = self.queue("other")
        a = self.enqueue()["id"]
        x = self.enqueue(queue=other)["id"]
        d = self.enqueue(queue=other, depends_on=[a, x])["id"]
        self.fail_for_good(self.claim_one())
        self.assertEqual(self.get_job(d)["error_detail"], detail(a))
        r = self.c.request("DELETE", "/queues/%s/jobs?status=queued" % other)
        self.assertEqual((r.status, r.json["deleted"]), (200, 1), r)
        self.act(a, "retry")
        self.run_one(a)
        jd = self.get_job(d)
        self.assertEqual((jd["status"], jd["error_code"], jd["error_detail"]),
                         ("cancelled", "dependency_failed", detail(x)))


class CompletionCallback(WorkflowTest):
    def test_callback_runs_once_after_every_member_and_reads_them(self):
        n = 20
        members = [{"ref": "m%d" % i, "payload": {"i": i}} for i in range(n)]
        callback = {"payload": {"callback": True}, "on_dependency_failure": "run",
                    "depends_on": ["m%d" % i for i in range(n)]}
        jobs = self.batch(members + [callback])
        cb = jobs[-1]["id"]
        ids = [j["id"] for j in jobs[:-1]]
        self.assertEqual(jobs[-1]["status"], "blocked")
        outcome = {}
        claimed_cb = []
        for _ in range(2 * n):  # bounded: each round finishes at least one member
            got = self.claim(max_jobs=3)
            if not got:
                break
            for j in got:
                if j["id"] == cb:
                    claimed_cb.append(j)
                    self.assertEqual(sorted(outcome), sorted(ids), "callback before the end")
                    continue
                i = j["payload"]["i"]
                if i % 5 == 4:
                    self.fail_for_good(j)
                    outcome[j["id"]] = ("failed", None)
                else:
                    self.finish(j, {"double": 2 * i})
                    outcome[j["id"]] = ("succeeded", {"double": 2 * i})
                if len(outcome) < n:
                    self.assertEqual(self.status_of(cb), "blocked")
        self.assertEqual(len(claimed_cb), 1, "the callback ran %d times" % len(claimed_cb))
        deps = self.c.get("/jobs/%d/dependencies" % cb).json["dependencies"]
        self.assertEqual({d["id"]: (d["status"], d["result"]) for d in deps}, outcome)
        self.assertEqual([d["id"] for d in deps], sorted(ids))
        self.finish(claimed_cb[0], {"seen": len(deps)})
        self.claim(expect=0)


class DeepChain(WorkflowTest):
    """A chain longer than one transaction visits (DEPEND_STEP_MAX, 1000): the cancel of its
    descendants and their return to blocked on retry are finished by the sweeper."""

    server_args = ("--sweep-interval", "1")
    LENGTH = 2500

    def queue_row(self):
        rows = {q["name"]: q for q in self.c.get("/queues").json["queues"]}
        return rows.get(self.q, {})

    def test_cancel_and_retry_down_a_long_chain(self):
        ids = []
        for start in range(0, self.LENGTH, 1000):
            jobs = []
            for g in range(start, min(start + 1000, self.LENGTH)):
                j = {"ref": "r%d" % g, "payload": {"g": g}}
                if g > start:
                    j["depends_on"] = ["r%d" % (g - 1)]
                elif g > 0:
                    j["depends_on"] = [ids[-1]]
                jobs.append(j)
            ids += [j["id"] for j in self.batch(jobs)]
        self.assertEqual(self.queue_row()["blocked"], self.LENGTH - 1)
        root = self.claim_one()
        self.assertEqual(root["id"], ids[0])
        self.fail_for_good(root)
        wait_until(lambda: self.queue_row()["cancelled"] == self.LENGTH - 1, 60, 0.2,
                   "every descendant cancelled")
        last = self.get_job(ids[-1])
        self.assertEqual((last["error_code"], last["error_detail"]),
                         ("dependency_failed", detail(ids[-2])))
        self.act(ids[0], "retry")
        wait_until(lambda: self.queue_row()["blocked"] == self.LENGTH - 1, 60, 0.2,
                   "every descendant blocked again")
        self.assertEqual(self.claim(max_jobs=10, expect=1)[0]["id"], ids[0])


@unittest.skipUnless(backend() == "pg", "several processes share a PostgreSQL database")
class ConcurrentRetries(unittest.TestCase):
    """Two dependencies of one job changed at once through two jobqd processes (a retry and
    a retry, a retry and a cancel), TRIALS times each: the dependent ends as its
    dependencies say every time."""

    TRIALS = 20

    def setUp(self):
        self.servers = []
        for _ in range(2):
            srv = Server(db=self.servers[0].db if self.servers else None)
            self.addCleanup(srv.cleanup)  # LIFO: the first one (owner of the db) goes last
            srv.start()
            self.servers.append(srv)
        self.clients = [srv.client() for srv in self.servers]
        for c in self.clients:
            self.addCleanup(c.close)
        self.q = "race-%d" % time.monotonic_ns()

    def workflow(self, n):
        """Jobs a and b (each alone in its queue) and d depending on both ("cancel")."""
        qs = ["%s-%d-%s" % (self.q, n, x) for x in "abd"]
        r = self.clients[0].post("/jobs/batch", {"jobs": [
            {"queue": qs[0], "payload": 0, "ref": "a"},
            {"queue": qs[1], "payload": 0, "ref": "b"},
            {"queue": qs[2], "payload": 0, "depends_on": ["a", "b"]}]})
        self.assertEqual(r.status, 201, r)
        return [j["id"] for j in r.json["jobs"]], qs

    def end(self, queue, expect_id, ok):
        c = self.clients[0]
        jobs = c.post("/claim", {"worker_id": "w", "queue": queue}).json["jobs"]
        self.assertEqual([j["id"] for j in jobs], [expect_id])
        body = {"lease_token": jobs[0]["lease_token"]}
        if not ok:
            body.update({"error_code": "boom", "retry": False})
        r = c.post("/jobs/%d/%s" % (expect_id, "complete" if ok else "fail"), body)
        self.assertEqual(r.status, 200, r)

    def at_once(self, first, second):
        """POST first (a path) to process 0 and second to process 1 from two threads at
        once; both must answer 200."""
        start = threading.Barrier(2, timeout=30)
        answers = [None, None]

        def send(i, path):
            start.wait()
            answers[i] = self.clients[i].post(path, None)

        threads = [threading.Thread(target=send, args=(i, p))
                   for i, p in enumerate((first, second))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(REQUEST_TIMEOUT + 30)
            self.assertFalse(t.is_alive())
        for r in answers:
            self.assertEqual(r.status, 200, r)

    def state(self, job_id):
        j = self.clients[1].get("/jobs/%d" % job_id).json
        return j["status"], j.get("error_detail")

    def test_two_retries_release_the_dependent(self):
        for n in range(self.TRIALS):
            (a, b, d), qs = self.workflow(n)
            self.end(qs[0], a, ok=False)
            self.end(qs[1], b, ok=False)
            self.assertEqual(self.state(d)[0], "cancelled")
            self.at_once("/jobs/%d/retry" % a, "/jobs/%d/retry" % b)
            self.assertEqual(self.state(d)[0], "blocked", "trial %d" % n)
            self.end(qs[0], a, ok=True)
            self.end(qs[1], b, ok=True)
            self.assertEqual(self.state(d)[0], "queued", "trial %d" % n)

    def test_retry_and_cancel_leave_the_dependent_cancelled(self):
        for n in range(self.TRIALS):
            (a, b, d), qs = self.workflow(n)
            self.end(qs[0], a, ok=False)
            self.at_once("/jobs/%d/retry" % a, "/jobs/%d/cancel" % b)
            self.end(qs[0], a, ok=True)
            self.assertEqual(self.state(d), ("cancelled", detail(b)), "trial %d" % n)


@unittest.skipUnless(backend() == "pg", "a row lock another session holds: PostgreSQL")
class StatementTimeout(unittest.TestCase):
    """An enqueue with dependencies (and a dedup and an idempotency key: the path that goes
    element by element) whose insert waits on a row lock past the statement timeout is run
    again, not answered 500: the failed statement is not read as a taken key."""

    def test_insert_behind_a_lock_is_retried(self):
        srv = Server(args=["--pg-statement-timeout", "1000"])
        self.addCleanup(srv.cleanup)
        srv.start()
        c = srv.client(timeout=60)
        self.addCleanup(c.close)
        q = "st-%d" % time.monotonic_ns()
        parent = c.post("/jobs", {"queue": q, "payload": 0})
        self.assertEqual(parent.status, 201, parent)
        lane = c.post("/jobs", {"queue": q, "payload": 0, "requires": ["x"]})
        self.assertEqual(lane.status, 201, lane)  # its lane's row is the one held below
        holder = threading.Thread(target=psql, args=(
            srv.db_name, "BEGIN; SELECT 1 FROM jobq_lanes WHERE queue = '%s' FOR UPDATE; "
            "SELECT pg_sleep(2.5)" % q), kwargs={"timeout": 30, "check": False})
        holder.start()
        self.addCleanup(holder.join, 30)
        wait_until(lambda: psql(srv.db_name, "SELECT count(*) FROM pg_stat_activity WHERE "
                                "query LIKE '%pg_sleep(2.5)%' AND state = 'active' AND pid <> "
                                "pg_backend_pid()") != "0", 10, 0.05, "the lock holder")
        body = {"queue": q, "payload": 1, "requires": ["x"], "idempotency_key": "k",
                "dedup": {"key": "d", "mode": "active"}, "depends_on": [parent.json["id"]]}
        r = c.post("/jobs", body)
        self.assertIn(r.status, (201, 503), r)  # 503 once its tries ran out: never 500
        holder.join(30)
        r = c.post("/jobs", body)
        self.assertIn(r.status, (200, 201), r)
        self.assertEqual(r.json["status"], "blocked", r)
        jobs = c.get("/jobs?queue=%s&status=blocked" % q).json["jobs"]
        self.assertEqual([j["id"] for j in jobs], [r.json["id"]])


if __name__ == "__main__":
    unittest.main()
