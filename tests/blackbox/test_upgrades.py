"""Upgrades (docs/upgrades.md). On PostgreSQL, a rolling upgrade under load: three jobqd of
the previous release (PREV, built once from `git archive PREV` under build/prev-PREV/) on one
database, producers and workers on every process, then each process replaced in turn by this
build, whose first start migrates the schema. Every acknowledged enqueue is completed, no
request is answered 5xx for more than a second in total, the old processes keep serving on the
migrated schema until they are replaced, and one more old process started on it refuses with a
message that says why. On SQLite, the upgrade is a stop and a start: the old process's jobs
are all there after the new one migrated the file, and the old build then refuses the file.

Every loop and wait is bounded. Building PREV takes a minute or two the first time (cached
after); the test then runs in about 20 s.
"""
import fcntl
import os
import sqlite3
import subprocess
import unittest

from harness import Client, Server, backend, jobqd_path, wait_until
from test_pg_processes import ARGS, CLIENT_TIMEOUT, Q, Load

PREV = "db649be"  # the previous release: its schema is older than this build's on both backends
PREV_SCHEMA = {"pg": 10, "sqlite": 11}  # its schema versions
HERE = os.path.dirname(os.path.abspath(__file__))
REFUSED = "is newer than this program's"  # what an old process says on a newer schema


def prev_jobqd():
    """The jobqd of PREV: built from `git archive PREV` into build/prev-PREV/ next to this
    build's jobqd the first time (under a file lock: the two backends' runs may ask at once),
    reused after. Raises unittest.SkipTest when this checkout's git history lacks PREV."""
    root = os.path.abspath(os.path.join(HERE, "..", ".."))
    out = os.path.join(os.path.dirname(os.path.abspath(jobqd_path())), "prev-" + PREV)
    exe = os.path.join(out, "build", "jobqd")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.access(exe, os.X_OK):
            return exe
        if subprocess.run(["git", "-C", root, "cat-file", "-e", PREV + "^{commit}"],
                          capture_output=True).returncode != 0:
            raise unittest.SkipTest("commit %s (the previous release) is not in this checkout's "
                                    "history (a shallow clone?)" % PREV)
        src = os.path.join(out, "src")
        os.makedirs(src, exist_ok=True)
        archive = subprocess.run(["git", "-C", root, "archive", "--format=tar", PREV],
                                 capture_output=True, check=True, timeout=120).stdout
        subprocess.run(["tar", "-x", "-C", src], input=archive, check=True, timeout=120)
        log = open(os.path.join(out, "build.log"), "wb")
        with log:
            for cmd in (["cmake", "-S", src, "-B", os.path.join(out, "build"),
                         "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DJOBQ_CLI=OFF",
                         "-DJOBQ_BENCH=OFF"],
                        ["cmake", "--build", os.path.join(out, "build"), "--target", "jobqd",
                         "-j%d" % (os.cpu_count() or 2)]):
                if subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT,
                                  timeout=900).returncode != 0:
                    raise AssertionError("building %s failed: see %s" % (PREV, log.name))
        return exe


def seconds_of_5xx(times, gap=1.0):
    """The seconds during which answers were 5xx: the answers' times in bursts (two answers
    less than `gap` apart are one burst), each burst from its first to its last, plus the
    clients' 0.1 s pause after each."""
    total, start, last = 0.0, None, None
    for t in sorted(times):
        if last is None or t - last >= gap:
            if last is not None:
                total += last - start + 0.1
            start = t
        last = t
    return total if last is None else total + last - start + 0.1


class Upgrade(unittest.TestCase):
    def setUp(self):
        self.prev = prev_jobqd()

    def server(self, exe=None, db=None):
        srv = Server(ARGS, db=db, exe=exe)
        self.addCleanup(srv.cleanup)
        return srv

    def version(self, srv):
        if backend() == "pg":
            return int(srv.sql("SELECT max(version) FROM jobq_schema"))
        con = sqlite3.connect("file:%s?mode=ro" % srv.db, uri=True)
        try:
            return con.execute("PRAGMA user_version").fetchone()[0]
        finally:
            con.close()

    def assert_old_refused(self, db):
        """An old process started now on the migrated schema exits, saying why."""
        old = self.server(self.prev, db)
        with self.assertRaises(AssertionError) as e:
            old.start()
        self.assertIn(REFUSED, str(e.exception))

    @unittest.skipIf(backend() != "pg", "a rolling upgrade needs several processes: PostgreSQL")
    def test_rolling_upgrade_under_load(self):
        first = self.server(self.prev)  # owns the database: cleaned up last
        first.start()
        s = [first] + [self.server(self.prev, first.db).start() for _ in range(2)]
        self.assertEqual(self.version(first), PREV_SCHEMA["pg"])
        load = Load(s, per_producer=100000, pace=0.005)
        load.start()
        self.addCleanup(load.stop.set)
        self.addCleanup(load.enough.set)
        wait_until(lambda: len(load.acked) >= 200 and load.claims, 30,
                   what="the load to be under way")
        olds = list(s)
        for i in range(3):
            acked = len(load.acked)
            load.down.add(i)  # its clients move on, as behind a load balancer
            self.assertEqual(s[i].terminate(), 0, s[i].log_tail())
            s[i].proc = None
            s[i] = self.server(db=first.db).start()
            load.down.discard(i)
            if i == 0:
                self.assertGreater(self.version(first), PREV_SCHEMA["pg"])
                self.assertIn("schema migrated from version %d" % PREV_SCHEMA["pg"],
                              s[0].log_tail(200))
                self.assert_old_refused(first.db)
            # The processes still old served on the migrated schema meanwhile.
            wait_until(lambda: len(load.acked) >= acked + 200, 30,
                       what="enqueues to go on after replacing process %d" % i)
            for j in range(i + 1, 3):
                c = Client(s[j].port, timeout=CLIENT_TIMEOUT)
                r = c.post("/jobs", {"queue": Q + "-old", "payload": j})
                c.close()
                self.assertEqual(r.status, 201, r)
        load.enough.set()
        wait_until(lambda: load.producers_done == 3 or load.bad, 60,
                   what="the producers to end")
        acked = load.wait_completed()
        load.finish(self)
        self.assertEqual(load.bad, [])
        down = seconds_of_5xx([t for t, _, _ in load.unavailable])
        self.assertLessEqual(down, 1.0, "answered 503 for %.2f s: %r" % (down, load.unavailable))
        n = first.sql("SELECT count(*) FROM jobq_jobs WHERE queue = '%s' AND status = 3" % Q)
        self.assertEqual(int(n), len(acked))
        for srv in olds + s:  # the old ones worked on the migrated schema without an error
            self.assertEqual([line for line in srv.log_tail(100000).splitlines()
                              if " error " in line], [], srv.exe or "this build")
        print("\n%d jobs acknowledged and completed, %d completes, %d answers 503 (%.2f s), "
              "%d connections refused or reset" % (len(acked), len(load.completes),
                                                   len(load.unavailable), down,
                                                   len(load.conn_errors)))
        for srv in s:
            srv.stop_checked()

    @unittest.skipIf(backend() != "sqlite", "the SQLite upgrade: a stop and a start")
    def test_sqlite_upgrade_keeps_every_job(self):
        old = self.server(self.prev).start()
        self.assertEqual(self.version(old), PREV_SCHEMA["sqlite"])
        c = old.client()
        ids = [c.post("/jobs", {"queue": Q, "payload": i}).json["id"] for i in range(50)]
        r = c.post("/claim", {"worker_id": "w", "queue": Q, "max_jobs": 10})
        c.close()
        self.assertEqual(len(r.json["jobs"]), 10, r)
        old.stop_checked()
        new = self.server(db=old.db).start()
        self.assertGreater(self.version(new), PREV_SCHEMA["sqlite"])
        c = new.client()
        got = {j["id"]: j["status"] for j in c.get("/jobs?queue=%s&limit=100" % Q).json["jobs"]}
        self.assertEqual(set(got), set(ids))
        self.assertEqual(sorted(got.values()).count("running"), 10)
        for j in r.json["jobs"]:  # the leases taken before the upgrade still hold
            done = c.post("/jobs/%d/complete" % j["id"], {"lease_token": j["lease_token"]})
            self.assertEqual(done.status, 200, done)
        c.close()
        new.stop_checked()
        self.assert_old_refused(old.db)


if __name__ == "__main__":
    unittest.main()
