"""jobqd migrate (README "Moving from SQLite to PostgreSQL"): every job of a SQLite database,
in every status, is copied into an empty PostgreSQL database and reads back identical from a
jobqd started on it; a running job's lease still works with its token; new ids continue after
the highest id the SQLite database ever gave; a second migrate into the same database is
refused; bad input gives one clear line and a non-zero exit, never the password.

The copy needs a PostgreSQL database: under JOBQ_TEST_BACKEND=pg always (run_backend.py skips
without a cluster); under SQLite only when the test cluster's variables are set (else those
tests are skipped). The bad-input tests that need no server run everywhere."""

import hashlib
import itertools
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
import time
import unittest

from harness import (START_TIMEOUT, WRAPPER, Client, Server, TestDatabase, free_port,
                     jobqd_path, pg_missing, pg_url, psql, wait_until)

SECRET = "s3cretpw"
UNREACHABLE = "postgresql://jobq:%s@127.0.0.1:1/jobq" % SECRET
_db_counter = itertools.count(1)


def migrate(*args, timeout=START_TIMEOUT * 3):
    """Run `jobqd migrate ARGS` without any JOBQ_* variable. Returns (code, stdout, stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBQ_")}
    p = subprocess.run(WRAPPER + [jobqd_path(), "migrate"] + list(args),
                       stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=timeout)
    return (p.returncode, p.stdout.decode("utf-8", "replace"),
            p.stderr.decode("utf-8", "replace"))


def sqs_queue_attributes(port, create=False):
    """The attributes of the SQS FIFO queue mig-sqs.fifo as the SQS listener on port answers
    them (created first when `create`)."""
    c = Client(port)
    try:
        def call(action, body):
            r = c.request("POST", "/", raw=json.dumps(body).encode(), headers={
                "Content-Type": "application/x-amz-json-1.0",
                "X-Amz-Target": "AmazonSQS." + action})
            if r.status != 200:
                raise AssertionError("%s -> %r" % (action, r))
            return r.json
        if create:
            call("CreateQueue", {"QueueName": "mig-sqs.fifo", "Attributes": {
                "FifoQueue": "true", "ContentBasedDeduplication": "true",
                "VisibilityTimeout": "7"}})
        url = call("GetQueueUrl", {"QueueName": "mig-sqs.fifo"})["QueueUrl"]
        return call("GetQueueAttributes", {"QueueUrl": url, "AttributeNames": ["All"]})
    finally:
        c.close()


class PgDatabase(TestDatabase):
    """A fresh database in the PostgreSQL test cluster, whatever backend the tests run on."""

    def __init__(self):  # pylint: disable=super-init-not-called
        self.name = "jobq_m_%d_%d" % (os.getpid(), next(_db_counter))
        psql("postgres", 'CREATE DATABASE "%s"' % self.name)
        self.url = pg_url(self.name)


def needs_pg(f):
    return unittest.skipIf(pg_missing() is not None,
                           "needs the PostgreSQL test cluster: %s" % pg_missing())(f)


def sqlite_jobq(tc, jobs=0, subdir=""):
    """A jobq SQLite database in a temporary directory (in `subdir` of it), made by a jobqd
    that is stopped again, holding `jobs` jobs (payloads 0, 1, ...). Returns its path."""
    d = tempfile.mkdtemp(prefix="jobq-migrate-")
    tc.addCleanup(shutil.rmtree, d, True)
    if subdir:
        os.mkdir(os.path.join(d, subdir))
    srv = Server(db=os.path.join(d, subdir, "jobq.db"))
    tc.addCleanup(srv.cleanup)
    srv.start()
    c = srv.client()
    for start in range(0, jobs, 1000):
        r = c.post("/jobs/batch", {"jobs": [{"payload": i}
                                            for i in range(start, min(jobs, start + 1000))]})
        tc.assertEqual(r.status, 201, r)
    c.close()
    srv.stop_checked()
    return srv.db


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def hidden_columns_sqlite(path):
    """{id: (lease_token, lease_seconds, deadline_at)} read from a SQLite file, read-only."""
    con = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        rows = con.execute("SELECT id, lease_token, lease_seconds, deadline_at FROM jobs")
        return {r[0]: tuple("" if v is None else str(v) for v in r[1:]) for r in rows}
    finally:
        con.close()


def hidden_columns_pg(db):
    out = {}
    for line in db.sql("SELECT id, lease_token, lease_seconds, deadline_at FROM jobq_jobs"
                       " ORDER BY id").splitlines():
        f = line.split("|")
        out[int(f[0])] = tuple(f[1:])
    return out


def list_every_job(c):
    """GET /jobs page after page: every job, in id order."""
    jobs, cursor = [], None
    for _ in range(100):  # bounded: a few thousand jobs at most here
        r = c.get("/jobs?limit=1000" + ("&cursor=" + cursor if cursor else ""))
        assert r.status == 200, r
        jobs.extend(r.json["jobs"])
        cursor = r.json["next_cursor"]
        if cursor is None:
            return jobs
    raise AssertionError("paging did not end")


def queue_counts(c):
    """GET /queues without the ages (they follow the clock)."""
    r = c.get("/queues")
    assert r.status == 200, r
    return {q["name"]: {k: v for k, v in q.items() if k != "oldest_queued_age_seconds"}
            for q in r.json["queues"]}


def attempts_of(c, jobs):
    """GET /jobs/{id}/attempts of every job, by label."""
    out = {}
    for label, i in jobs.items():
        r = c.get("/jobs/%d/attempts" % i)
        assert r.status == 200, r
        out[label] = r.json["attempts"]
    return out


class Source:
    """A SQLite jobqd filled with jobs in every status, then stopped. `jobs` maps a label to
    the job's id; `before` holds GET /jobs/{id} of every job as the SQLite jobqd answered."""

    BULK = 1200  # more than two batches of the copy (STORE_COPY_BATCH_ROWS: 500)

    def __init__(self, add_cleanup):
        self.dir = tempfile.mkdtemp(prefix="jobq-migrate-")
        add_cleanup(shutil.rmtree, self.dir, True)
        self.path = os.path.join(self.dir, "jobq.db")
        self.sqs_port = free_port()
        self.srv = Server(["--sqs-listen", "127.0.0.1:%d" % self.sqs_port], db=self.path)
        add_cleanup(self.srv.cleanup)
        self.srv.start()
        self.c = self.srv.client()
        add_cleanup(self.c.close)
        self.jobs = {}
        self.tokens = {}

    def post(self, path, body=None, status=200):
        r = self.c.post(path, body)
        if r.status != status:
            raise AssertionError("%s %r -> %r (expected %d)" % (path, body, r, status))
        return r.json

    def enqueue(self, label, **fields):
        body = {"queue": "mig-" + label, "payload": {"label": label}}
        body.update(fields)
        j = self.post("/jobs", body, 201)
        self.jobs[label] = j["id"]
        return j["id"]

    def claim(self, label, **fields):
        body = {"worker_id": "worker-" + label, "queue": "mig-" + label, "lease_seconds": 900}
        body.update(fields)
        jobs = self.post("/claim", body)["jobs"]
        if len(jobs) != 1:
            raise AssertionError("claim %r -> %r" % (body, jobs))
        self.tokens[label] = jobs[0]["lease_token"]
        return jobs[0]["lease_token"]

    def fill(self):
        self.enqueue("queued", priority=3, idempotency_key="idem-1",
                     payload={"s": "é \" \\ \n\t {a,b} NULL , ' ;", "n": [1, 2.5, None]})
        self.enqueue("scheduled", priority=-2, delay_seconds=3600, requires=["gpu"])
        self.enqueue("tags", priority=7, requires=["gpu", "ssd"], payload="tagged",
                     traceparent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                     tracestate="congo=t61rcWkgMzE")
        i = self.enqueue("running", priority=10, requires=["gpu"], max_runtime_seconds=3000)
        t = self.claim("running", capabilities=["gpu"])
        self.post("/jobs/%d/heartbeat" % i, {"lease_token": t, "progress": {"pct": 40}})
        i = self.enqueue("succeeded")
        t = self.claim("succeeded")
        self.post("/jobs/%d/complete" % i, {"lease_token": t, "result": {"ok": True, "n": [1]}})
        i = self.enqueue("failed", max_attempts=3)
        t = self.claim("failed")
        self.post("/jobs/%d/fail" % i, {"lease_token": t, "retry": False, "error_code": "boom",
                                        "error_detail": {"line": 7, "msg": "a \"quote\""}})
        i = self.enqueue("cancelled")
        self.post("/jobs/%d/cancel" % i)
        i = self.enqueue("cancelled_running")
        self.claim("cancelled_running")
        self.post("/jobs/%d/cancel" % i)
        # Requeued twice by its worker: attempts 2, fencing_token 2, error and progress kept.
        i = self.enqueue("requeued", max_attempts=5)
        t = self.claim("requeued")
        self.post("/jobs/%d/fail" % i, {"lease_token": t, "error_code": "flaky",
                                        "retry_in_seconds": 0})
        t = self.claim("requeued")
        self.post("/jobs/%d/heartbeat" % i, {"lease_token": t, "progress": {"step": 2}})
        self.post("/jobs/%d/fail" % i, {"lease_token": t, "error_code": "flaky-again",
                                        "retry_in_seconds": 3600})
        # Failed, then retried by hand: queued again with attempts 0.
        i = self.enqueue("retried")
        t = self.claim("retried")
        self.post("/jobs/%d/fail" % i, {"lease_token": t, "retry": False, "error_code": "x"})
        self.post("/jobs/%d/retry" % i)
        for start in range(0, self.BULK, 1000):
            n = min(1000, self.BULK - start)
            self.post("/jobs/batch", {"jobs": [{"queue": "mig-bulk", "payload": {"i": start + k},
                                                "priority": k % 5} for k in range(n)]}, 201)
        # A paused queue (with a job) and one resumed again.
        self.enqueue("paused")
        self.post("/queues/mig-paused/pause")
        self.post("/queues/mig-resumed/pause")
        self.post("/queues/mig-resumed/resume")
        self.fill_limits_and_schedules()
        self.before_sqs = sqs_queue_attributes(self.sqs_port, create=True)
        # The highest id, deleted below as retention would: its id must never come back.
        self.last = self.enqueue("deleted")

    def fill_limits_and_schedules(self):
        """Limits (one with a rate window in use, one pattern), a key paused by a snooze with
        pause_key while another job of it is due, a schedule that has ticked (last_run_at,
        last_job_id) and a paused one."""
        self.put("/limits/mig:a", {"max_running": 2, "rate": {"jobs": 5, "per_seconds": 86400}})
        self.put("/limits/mig:t*", {"max_running": 1})
        self.enqueue("keyed", concurrency_key="mig:a")
        self.enqueue("keyed_due", queue="mig-keyed", concurrency_key="mig:a")
        t = self.claim("keyed")  # the older of the two
        self.post("/jobs/%d/snooze" % self.jobs["keyed"],
                  {"lease_token": t, "seconds": 3600, "pause_key": True})
        self.put("/schedules/mig-every", {"every_seconds": 1, "job": {
            "queue": "mig-sched", "payload": {"from": "schedule"}}})
        wait_until(lambda: self.c.get("/schedules/mig-every").json["last_job_id"] is not None,
                   15, what="the schedule's first tick")
        # Replaced: last_run_at and last_job_id stay, the next tick is a year away.
        self.put("/schedules/mig-every", {"every_seconds": 31536000, "catch_up": "all",
                                          "overlap": "skip",
                                          "job": {"queue": "mig-sched", "payload": 2}})
        self.put("/schedules/mig-cron", {"cron": "0 3 * * MON", "paused": True,
                                         "job": {"queue": "mig-sched", "payload": 3}})

    def put(self, path, body):
        r = self.c.request("PUT", path, body=body)
        if r.status != 200:
            raise AssertionError("PUT %s %r -> %r" % (path, body, r))
        return r.json

    def snapshot(self):
        """GET of every job, the whole list and the queue counts, as the SQLite jobqd sees."""
        self.before = {label: self.c.get("/jobs/%d" % i).json for label, i in self.jobs.items()}
        self.before_list = list_every_job(self.c)
        self.before_queues = queue_counts(self.c)
        self.before_attempts = attempts_of(self.c, self.jobs)
        self.before_limits = self.c.get("/limits").json
        self.before_schedules = self.c.get("/schedules").json

    def stop_and_delete_last(self):
        self.srv.stop_checked()
        con = sqlite3.connect(self.path)
        con.execute("DELETE FROM jobs WHERE id = ?", (self.last,))
        con.commit()
        con.close()
        del self.jobs["deleted"]
        self.before.pop("deleted")
        self.before_attempts.pop("deleted")
        self.before_list = [j for j in self.before_list if j["id"] != self.last]
        self.before_queues.pop("mig-deleted")


def sqlite_migrations():
    """The SQL of each SQLite migration, read from server/store/sqlite/sqlite_schema.c. They
    are append only and never edited: the first v of them make the schema v as the jobqd of
    that schema left it."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    with open(os.path.join(root, "server", "domain", "job.h"), encoding="utf-8") as f:
        macros = dict(re.findall(r'#define (\w+) "([^"]*)"', f.read()))
    with open(os.path.join(root, "server", "store", "sqlite", "sqlite_schema.c"),
              encoding="utf-8") as f:
        src = f.read()
    body = src[src.index("migrations[] = {"):]
    body = body[body.index("{") + 1:body.index("\n};")]
    out, cur = [], []
    for m in re.finditer(r'/\*.*?\*/|"((?:[^"\\]|\\.)*)"|(\w+)|(,)', body, re.S):
        if m.group(1) is not None:
            cur.append(m.group(1).replace('\\"', '"').replace("\\\\", "\\"))
        elif m.group(2):
            cur.append(macros[m.group(2)])
        elif m.group(3):
            out.append("".join(cur))
            cur = []
    if cur:
        out.append("".join(cur))
    return out


def old_schema_file(path, version, now):
    """A jobq SQLite file at schema `version`, made as its jobqds made it: migration 1, jobs in
    every status, then each later migration with what its schema brought (attempt history and
    a paused queue at 4, limits and a keyed job at 6, a blocked job at 8, a schedule at 10)."""
    migrations = sqlite_migrations()
    con = sqlite3.connect(path)
    con.executescript(migrations[0])
    cols = ("id, queue, status, payload, priority, run_at, attempts, max_attempts, "
            "fencing_token, requires, idempotency_key, created_at, claimed_at, heartbeat_at, "
            "lease_expires_at, lease_seconds, lease_token, worker_id, finished_at, result, "
            "progress, error_code, error_detail")
    t, day = now, 86400
    rows = [
        (1, "old-a", 1, '{"n":1}', 2, t - 100, 0, 5, 0, None, "idem-1", t - 100, None, None,
         None, None, None, None, None, None, None, None, None),
        (2, "old-b", 0, '"later"', 0, t + day, 0, 5, 0, '["gpu"]', None, t - 90, None, None,
         None, None, None, None, None, None, None, None, None),
        (3, "old-b", 2, '[1,2]', 1, t - 80, 1, 5, 1, None, None, t - 80, t - 50, t - 40,
         t + day, day, "old-token-0123456789abcdef", "w-old", None, None, '{"pct":5}', None,
         None),
        (4, "old-a", 3, '{}', 0, t - 70, 1, 5, 1, None, None, t - 70, t - 60, None, None, None,
         None, "w-old", t - 55, '{"ok":true}', None, None, None),
        (5, "old-a", 4, '{}', 0, t - 45, 2, 2, 2, None, None, t - 60, t - 30, None, None, None,
         None, "w-old", t - 29, None, None, "boom", '"again"'),
        (6, "old-c", 5, 'null', 0, t - 20, 0, 5, 0, None, None, t - 20, None, None, None, None,
         None, None, t - 20, None, None, None, None),
    ]
    con.executemany("INSERT INTO jobs (%s) VALUES (%s)" % (cols, ", ".join("?" * 23)), rows)
    for v in range(2, version + 1):
        con.executescript(migrations[v - 1])
        if v == 4:
            con.executemany("INSERT INTO attempts VALUES (?, ?, ?, 'w-old', ?, ?, ?, ?, ?)", [
                (3, 1, 1, t - 50, None, 0, None, None),
                (4, 1, 1, t - 60, t - 55, 1, None, None),
                (5, 1, 1, t - 40, t - 35, 3, "flaky", None),
                (5, 2, 2, t - 30, t - 29, 2, "boom", '"again"')])
            con.execute("UPDATE jobs SET ended_at = finished_at, attempt_outcome = status - 2"
                        " WHERE id IN (4, 5)")
            con.execute("INSERT INTO queues VALUES ('old-c', 1, ?)", (t - 10,))
        elif v == 6:
            con.execute("INSERT INTO limits VALUES ('old:*', 1, NULL, NULL, ?),"
                        " ('old:a', NULL, 5, 60, ?)", (t - 10, t - 10))
            con.execute("INSERT INTO keys VALUES ('old:a', ?)", (t + 3600,))
            # The key is paused (a snooze with pause_key): its lane closed until then.
            con.execute("INSERT INTO lanes (queue, requires, ckey, check_at, open_at)"
                        " VALUES ('old-k', '', 'old:a', 0, ?)", (t + 3600,))
            con.execute("INSERT INTO jobs (id, queue, status, payload, run_at, max_attempts,"
                        " created_at, concurrency_key, expires_at, dedup_key, dedup_mode, lane)"
                        " VALUES (7, 'old-k', 1, '7', ?, 5, ?, 'old:a', ?, 'd-7', 1,"
                        " last_insert_rowid())", (t - 5, t - 5, t + day))
        elif v == 8:
            con.execute("INSERT INTO jobs (id, queue, status, payload, run_at, max_attempts,"
                        " created_at, depends_on, on_dep_failure, deps_pending)"
                        " VALUES (8, 'old-a', 6, '8', ?, 5, ?, '[1]', 1, 1)", (t - 4, t - 4))
            con.execute("INSERT INTO deps VALUES (1, 8, 0)")
            con.execute("UPDATE jobs SET has_dependents = 1 WHERE id = 1")
        elif v == 10:
            con.execute("INSERT INTO schedules VALUES ('old-s', '{\"payload\":1}', '0 3 * * *',"
                        " NULL, 'Europe/Berlin', 1, 0, 0, ?, NULL, NULL, ?, ?, 1)",
                        (t + 3 * day, t - 10, t - 10))
            con.execute("INSERT INTO ticker VALUES (1, ?)", (t - 5,))
    if version >= 4:  # kept by triggers at schema 4 only; after it, by each write
        con.execute("DELETE FROM counts")
        con.execute("INSERT INTO counts SELECT queue, status, count(*) FROM jobs"
                    " GROUP BY queue, status")
    con.execute("PRAGMA user_version = %d" % version)
    con.commit()
    con.close()


def every_answer(db):
    """Every job, its attempts, the queues, limits and schedules as a jobqd on db answers."""
    srv = Server(db=db)
    try:
        srv.start()
        c = srv.client()
        jobs = list_every_job(c)
        out = {"jobs": jobs, "attempts": attempts_of(c, {j["id"]: j["id"] for j in jobs}),
               "queues": queue_counts(c), "limits": c.get("/limits").json,
               "schedules": c.get("/schedules").json}
        c.close()
        srv.stop_checked()
    finally:
        srv.cleanup()
    return out


@needs_pg
class OlderSchemas(unittest.TestCase):
    """A file last written at any older schema is copied as it is (it is only read): what the
    jobqd on the copy answers is what a jobqd answers on that file once it upgraded it."""

    maxDiff = None

    def migrate_schema(self, version):
        d = tempfile.mkdtemp(prefix="jobq-migrate-old-")
        self.addCleanup(shutil.rmtree, d, True)
        path = os.path.join(d, "jobq.db")
        old_schema_file(path, version, int(time.time()))
        before = sha256(path)
        target = PgDatabase()
        self.addCleanup(target.drop)
        code, out, err = migrate("--from", path, "--db", target.url)
        self.assertEqual(code, 0, out + err)
        self.assertEqual(sha256(path), before)
        self.assertIn("copied %d jobs" % (6 + (version >= 6) + (version >= 8)), out)
        got = every_answer(target.url)
        upgraded = os.path.join(d, "upgraded.db")
        shutil.copy(path, upgraded)
        want = every_answer(upgraded)
        self.assertEqual(got, want)
        statuses = {j["status"] for j in got["jobs"]}
        self.assertTrue({"queued", "running", "succeeded", "failed", "cancelled"} <= statuses)
        self.assertEqual(len(got["limits"]["limits"]), 2 if version >= 6 else 0)
        self.assertEqual(len(got["schedules"]["schedules"]), 1 if version >= 10 else 0)
        if version >= 4:
            self.assertEqual([a["outcome"] for a in got["attempts"][5]], ["retried", "failed"])
            self.assertEqual([a["outcome"] for a in got["attempts"][3]], ["running"])
            self.assertTrue(got["queues"]["old-c"]["paused"])


def _schema_case(version):
    def test(self):
        self.migrate_schema(version)
    test.__doc__ = "A file last written at schema %d." % version
    return test


for _v in range(1, len(sqlite_migrations())):
    setattr(OlderSchemas, "test_schema_%d" % _v, _schema_case(_v))


@needs_pg
class MigrateEverything(unittest.TestCase):
    """One SQLite database with jobs in every status, copied once into PostgreSQL; a jobqd
    on the copy is read (setUpClass) before any test changes it."""

    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.src = Source(cls.addClassCleanup)
        src = cls.src
        src.fill()
        src.snapshot()
        src.stop_and_delete_last()
        cls.src_hash = sha256(src.path)
        cls.src_hidden = hidden_columns_sqlite(src.path)
        cls.target = PgDatabase()
        cls.addClassCleanup(cls.target.drop)
        cls.code, cls.out, cls.err = migrate("--from", src.path, "--db", cls.target.url)
        if cls.code != 0:
            raise AssertionError("migrate failed (%d): %s%s" % (cls.code, cls.out, cls.err))
        cls.pg_hidden = hidden_columns_pg(cls.target)
        cls.sqs_port = free_port()
        cls.srv = Server(["--sqs-listen", "127.0.0.1:%d" % cls.sqs_port], db=cls.target.url)
        cls.addClassCleanup(cls.srv.cleanup)
        cls.srv.start()
        cls.after_sqs = sqs_queue_attributes(cls.sqs_port)
        c = cls.srv.client()
        cls.after = {label: c.get("/jobs/%d" % i).json for label, i in src.jobs.items()}
        cls.after_list = list_every_job(c)
        cls.after_queues = queue_counts(c)
        cls.after_attempts = attempts_of(c, src.jobs)
        cls.after_limits = c.get("/limits").json
        cls.after_schedules = c.get("/schedules").json
        c.close()

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop_checked()

    def setUp(self):
        self.c = self.srv.client()
        self.addCleanup(self.c.close)

    def test_every_job_reads_back_identical(self):
        self.assertEqual(len(self.after), len(self.src.jobs))
        for label in self.src.jobs:
            self.assertEqual(self.after[label], self.src.before[label], label)
        statuses = {j["status"] for j in self.after.values()}
        self.assertEqual(statuses, {"queued", "running", "succeeded", "failed", "cancelled"})
        self.assertEqual(self.after["requeued"]["attempts"], 2)
        self.assertEqual(self.after["requeued"]["fencing_token"], 2)
        self.assertEqual(self.after["requeued"]["progress"], {"step": 2})
        self.assertEqual(self.after["retried"]["attempts"], 0)
        self.assertEqual(self.after["running"]["progress"], {"pct": 40})
        self.assertEqual(self.after["tags"]["requires"], ["gpu", "ssd"])
        self.assertEqual((self.after["tags"]["traceparent"], self.after["tags"]["tracestate"]),
                         ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                          "congo=t61rcWkgMzE"))

    def test_the_whole_list_and_the_queue_counts_match(self):
        self.assertEqual(len(self.after_list), len(self.src.before_list))
        self.assertEqual(self.after_list, self.src.before_list)
        self.assertEqual(self.after_queues, self.src.before_queues)
        self.assertEqual(self.after_queues["mig-bulk"]["queued"], Source.BULK)

    def test_attempt_history_and_paused_queues_are_copied(self):
        self.assertEqual(self.after_attempts, self.src.before_attempts)
        outcomes = [a["outcome"] for a in self.after_attempts["requeued"]]
        self.assertEqual(outcomes, ["retried", "retried"])
        self.assertEqual([a["outcome"] for a in self.after_attempts["running"]], ["running"])
        self.assertEqual(self.after_attempts["failed"][0]["error_code"], "boom")
        self.assertTrue(self.after_queues["mig-paused"]["paused"])
        self.assertNotIn("mig-resumed", self.after_queues)
        self.assertIn("with %d attempt history entries" % sum(
            len(v) for v in self.src.before_attempts.values()), self.out)

    def test_sqs_queues_are_copied(self):
        self.assertEqual(self.after_sqs, self.src.before_sqs)
        self.assertEqual(self.after_sqs["Attributes"]["FifoQueue"], "true")
        self.assertEqual(self.after_sqs["Attributes"]["VisibilityTimeout"], "7")

    def test_limits_key_pauses_and_schedules_are_copied(self):
        self.assertEqual(self.after_limits, self.src.before_limits)
        limits = {lim["key"]: lim for lim in self.after_limits["limits"]}
        self.assertEqual(sorted(limits), ["mig:a", "mig:t*"])
        self.assertEqual(limits["mig:a"]["rate"], {"jobs": 5, "per_seconds": 86400})
        self.assertIsNotNone(limits["mig:a"]["paused_until"])
        self.assertEqual(self.after_schedules, self.src.before_schedules)
        sched = {s["name"]: s for s in self.after_schedules["schedules"]}
        self.assertEqual(sorted(sched), ["mig-cron", "mig-every"])
        self.assertIsNotNone(sched["mig-every"]["last_job_id"])
        self.assertIsNotNone(sched["mig-every"]["last_run_at"])
        self.assertTrue(sched["mig-cron"]["paused"])
        self.assertIn("2 limits and 2 schedules", self.out)

    def test_a_paused_key_stays_paused(self):
        """The job of the snoozed key that is due is not claimed: the pause came along."""
        r = self.c.post("/claim", {"worker_id": "w", "queue": "mig-keyed"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["jobs"], [])
        r = self.c.get("/jobs/%d" % self.src.jobs["keyed_due"])
        self.assertEqual(r.json["status"], "queued")

    def test_columns_the_api_never_shows_are_copied(self):
        """The lease token, the claim's lease length and the runtime deadline."""
        pg = self.pg_hidden
        self.assertEqual(pg, self.src_hidden)
        running = self.src.jobs["running"]
        self.assertEqual(pg[running][0], self.src.tokens["running"])
        self.assertEqual(pg[running][1], "900")
        self.assertNotEqual(pg[running][2], "")  # deadline_at: claimed_at + 3000

    def test_the_source_is_only_read(self):
        self.assertEqual(sha256(self.src.path), self.src_hash)
        self.assertIn("copied %d jobs" % len(self.src_hidden), self.out)
        self.assertIn("new ids start after %d" % self.src.last, self.out)

    def test_the_running_lease_goes_on_with_its_token(self):
        i, token = self.src.jobs["running"], self.src.tokens["running"]
        r = self.c.post("/jobs/%d/heartbeat" % i, {"lease_token": "x" * 32})
        self.assertEqual(r.status, 409, r)
        self.assertEqual(r.json["error"]["code"], "lease_lost")
        r = self.c.post("/jobs/%d/heartbeat" % i, {"lease_token": token,
                                                   "progress": {"pct": 90}})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["progress"], {"pct": 90})
        r = self.c.post("/jobs/%d/complete" % i, {"lease_token": token, "result": "done"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["status"], "succeeded")
        self.assertEqual(r.json["fencing_token"], 1)
        r = self.c.get("/jobs/%d/attempts" % i)  # the copied entry ends as on SQLite
        self.assertEqual([a["outcome"] for a in r.json["attempts"]], ["succeeded"])

    def test_new_ids_continue_after_the_highest_ever_given(self):
        r = self.c.post("/jobs", {"queue": "after", "payload": 1})
        self.assertEqual(r.status, 201, r)
        self.assertGreater(r.json["id"], self.src.last)

    def test_claims_keep_run_at_and_tags(self):
        # The scheduled job (run_at in an hour) and the requeued one (retry in an hour).
        for label in ("scheduled", "requeued"):
            r = self.c.post("/claim", {"worker_id": "w", "queue": "mig-" + label,
                                       "capabilities": ["gpu"]})
            self.assertEqual(r.json["jobs"], [], label)
        r = self.c.post("/claim", {"worker_id": "w", "queue": "mig-tags",
                                   "capabilities": ["gpu"]})
        self.assertEqual(r.json["jobs"], [])
        r = self.c.post("/claim", {"worker_id": "w", "queue": "mig-tags",
                                   "capabilities": ["ssd", "gpu"]})
        self.assertEqual([j["id"] for j in r.json["jobs"]], [self.src.jobs["tags"]])
        r = self.c.post("/claim", {"worker_id": "w", "queue": "mig-bulk", "max_jobs": 3})
        self.assertEqual([j["priority"] for j in r.json["jobs"]], [4, 4, 4])

    def test_a_second_migrate_into_the_same_database_is_refused(self):
        held = self.target.sql("SELECT count(*) FROM jobq_jobs")
        code, out, err = migrate("--from", self.src.path, "--db", self.target.url)
        self.assertEqual(code, 1, out + err)
        last = err.strip().splitlines()[-1]
        self.assertTrue(last.startswith("jobqd migrate: "), err)
        self.assertIn("already holds", last)
        self.assertIn("without jobs", last)
        self.assertEqual(self.target.sql("SELECT count(*) FROM jobq_jobs"), held)


class BadInput(unittest.TestCase):
    """Each mistake: exit 1, and one line on stderr saying what is wrong."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="jobq-migrate-bad-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def refused(self, args, says, lines=1):
        code, out, err = migrate(*args)
        self.assertEqual(code, 1, out + err)
        self.assertEqual(out, "")
        got = err.strip().splitlines()
        self.assertLessEqual(len(got), lines, err)
        self.assertTrue(got[-1].startswith("jobqd migrate: "), err)
        self.assertIn(says, got[-1])
        self.assertNotIn(SECRET, err)
        return got[-1]

    def test_missing_from(self):
        self.refused(["--db", UNREACHABLE], "--from PATH is required")

    def test_missing_db(self):
        self.refused(["--from", self.path("x.db")], "--db URL is required")

    def test_db_that_is_not_postgresql(self):
        self.refused(["--from", self.path("x.db"), "--db", self.path("y.db")],
                     "--db must be a PostgreSQL URL")

    def test_unknown_argument(self):
        self.refused(["--from", "x.db", "--fast"], 'unknown argument "--fast"')

    def test_from_that_does_not_exist_is_not_created(self):
        self.refused(["--from", self.path("none.db"), "--db", UNREACHABLE],
                     "No such file or directory")
        self.assertEqual(os.listdir(self.dir), [])

    def test_from_that_is_not_sqlite(self):
        with open(self.path("notes.txt"), "w") as f:
            f.write("hello\n" * 100)
        self.refused(["--from", self.path("notes.txt"), "--db", UNREACHABLE],
                     "is not a SQLite database")
        self.assertEqual(os.listdir(self.dir), ["notes.txt"])  # no lock file beside it

    def test_from_that_is_not_a_jobq_database(self):
        con = sqlite3.connect(self.path("other.db"))
        con.execute("CREATE TABLE jobs_of_someone_else (x)")
        con.commit()
        con.close()
        self.refused(["--from", self.path("other.db"), "--db", UNREACHABLE],
                     "is not a jobq database")

    def test_unreachable_postgresql_never_shows_the_password(self):
        line = self.refused(["--from", sqlite_jobq(self, 1), "--db", UNREACHABLE],
                            "cannot connect to postgresql://jobq:***@127.0.0.1:1/jobq", lines=2)
        self.assertNotIn(SECRET, line)

    def test_from_in_use_by_a_running_jobqd(self):
        srv = Server(db=self.path("busy.db"))
        self.addCleanup(srv.cleanup)
        srv.start()
        self.refused(["--from", srv.db, "--db", UNREACHABLE], "is in use by a running jobqd")
        c = srv.client()  # unharmed
        self.assertEqual(c.post("/jobs", {"payload": 1}).status, 201)
        c.close()
        srv.stop_checked()

    def test_help(self):
        code, out, err = migrate("--help")
        self.assertEqual(code, 0, err)
        self.assertIn("--from PATH", out)
        self.assertIn("--db URL", out)


@needs_pg
class AllOrNothing(unittest.TestCase):
    def test_a_copy_that_fails_midway_leaves_the_target_without_jobs(self):
        db = sqlite_jobq(self, 800)
        # Job 700, in the second batch, holds bytes PostgreSQL refuses (not UTF-8).
        con = sqlite3.connect(db)
        con.execute("UPDATE jobs SET payload = CAST(x'22ff22' AS TEXT) WHERE id = 700")
        con.commit()
        con.close()
        target = PgDatabase()
        self.addCleanup(target.drop)
        code, out, err = migrate("--from", db, "--db", target.url)
        self.assertEqual(code, 1, out + err)
        self.assertIn("writing to the target failed after 500 jobs", err.splitlines()[-1])
        self.assertEqual(target.sql("SELECT count(*) FROM jobq_jobs"), "0")
        # Mended, it goes through at once: nothing of the failed copy is in the way.
        con = sqlite3.connect(db)
        con.execute("UPDATE jobs SET payload = '700' WHERE id = 700")
        con.commit()
        con.close()
        code, out, err = migrate("--from", db, "--db", target.url)
        self.assertEqual(code, 0, out + err)
        self.assertEqual(target.sql("SELECT count(*) FROM jobq_jobs"), "800")


def read_only_mounts():
    """None when this process can bind-mount a directory read-only in a mount namespace of
    its own (root, unshare), else why not."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return "needs root and unshare"
    p = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"],
                       capture_output=True, timeout=30)
    return None if p.returncode == 0 else "unshare --mount failed"


@needs_pg
class ReadOnlySource(unittest.TestCase):
    def test_a_source_on_a_read_only_mount(self):
        """As `docker run -v VOLUME:/var/lib/jobq:ro` gives it: SQLite cannot make the -shm
        file it needs to read a WAL database there, so migrate opens it immutable."""
        why = read_only_mounts()
        if why:
            self.skipTest(why)
        d = os.path.dirname(os.path.dirname(sqlite_jobq(self, 1, "data")))
        os.mkdir(os.path.join(d, "ro"))
        target = PgDatabase()
        self.addCleanup(target.drop)
        env = {k: v for k, v in os.environ.items() if not k.startswith("JOBQ_")}
        script = ('mount --bind "$1/data" "$1/ro" && mount -o remount,ro,bind "$1/ro" && '
                  'exec "$2" migrate --from "$1/ro/jobq.db" --db "$3"')
        p = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                            script, "sh", d, jobqd_path(), target.url],
                           stdin=subprocess.DEVNULL, capture_output=True, env=env,
                           timeout=START_TIMEOUT * 3)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"copied 1 jobs", p.stdout)
        self.assertEqual(sorted(os.listdir(os.path.join(d, "data"))), ["jobq.db", "jobq.db.lock"])


@needs_pg
class EmptyAndEnvironment(unittest.TestCase):
    def test_an_empty_database_migrates_and_ids_start_at_one(self):
        db = sqlite_jobq(self)
        target = PgDatabase()
        self.addCleanup(target.drop)
        # --db from JOBQ_DB, as in a container that runs jobqd on PostgreSQL.
        env = {k: v for k, v in os.environ.items() if not k.startswith("JOBQ_")}
        env["JOBQ_DB"] = target.url
        p = subprocess.run(WRAPPER + [jobqd_path(), "migrate", "--from", db],
                           stdin=subprocess.DEVNULL, capture_output=True, env=env,
                           timeout=START_TIMEOUT * 3)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"copied 0 jobs", p.stdout)
        srv = Server(db=target.url)
        self.addCleanup(srv.cleanup)
        srv.start()
        c = Client(srv.port)
        self.addCleanup(c.close)
        self.assertEqual(c.post("/jobs", {"payload": 1}).json["id"], 1)
        wait_until(lambda: c.get("/readyz").status == 200, 10, what="ready")
        srv.stop_checked()


if __name__ == "__main__":
    unittest.main()
