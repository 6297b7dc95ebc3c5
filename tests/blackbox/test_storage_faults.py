"""Storage faults answer 503, never crash, never corrupt: the database locked by another
process past the retry budget, the disk full (the database on a small tmpfs this test
mounts), the database file made read-only. Requests get 503 `unavailable`, /readyz turns 503,
reads keep working, and service resumes by itself once the fault is gone; the database
passes PRAGMA integrity_check afterwards.

The disk tests mount a tmpfs, which needs root (CI and the dev machine run the tests as
root); they are skipped, saying why, only where mounting is not permitted. Every mount is
unmounted in the test's cleanup, also when the test fails.

The read-only test changes the database file's mode. Root ignores file modes, so run as
root it starts jobqd as the user "nobody" (setpriv), in a directory of its own. A read-only
remount of the file system cannot be had instead: Linux refuses it (busy) while SQLite holds
the database files open for writing.

Each of these faults is one of the SQLite file, so every test here is SQLite only: skipped,
saying why, under JOBQ_TEST_BACKEND=pg."""

import errno
import os
import pwd
import shutil
import sqlite3
import stat
import subprocess
import tempfile
import time
import unittest

import harness
from harness import Server, sqlite_only, wait_until

BUSY_BUDGET = 2.0   # seconds a write may take to give up on a locked database
READYZ_BUDGET = 1.0  # seconds /readyz may take while the database is locked
BIG = "x" * (96 * 1024)  # a payload that fills a 4 MiB disk in a few dozen jobs
HEAL_DEADLINE = 15.0  # seconds to heal once the fault is gone (reopens: one a second at most)


def run(cmd):
    return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=30)


def mount_permitted():
    """(True, "") when this process may mount a tmpfs, else (False, why)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return False, "mounting a tmpfs needs root"
    if shutil.which("mount") is None or shutil.which("umount") is None:
        return False, "no mount/umount command"
    d = tempfile.mkdtemp(prefix="jobq-mount-probe-")
    try:
        r = run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", d])
        if r.returncode != 0:
            return False, "mount -t tmpfs is not permitted here: %s" % r.stderr.strip()
        run(["umount", d])
        return True, ""
    finally:
        try:
            os.rmdir(d)
        except OSError:
            pass


MOUNT_OK, MOUNT_WHY = mount_permitted()


def unprivileged_ids():
    """(uid, gid) of "nobody" to run jobqd as when this process is root, else None (file
    modes bind this process already)."""
    if os.geteuid() != 0:
        return None
    pw = pwd.getpwnam("nobody")
    return pw.pw_uid, pw.pw_gid


class UserServer(Server):
    """A Server whose jobqd runs with the ids given (uid, gid), through setpriv, or as this
    process when ids is None."""

    def __init__(self, ids, *args, **kw):
        super().__init__(*args, **kw)
        self.prefix = []
        if ids is not None:
            self.prefix = ["setpriv", "--reuid=%d" % ids[0], "--regid=%d" % ids[1],
                           "--clear-groups", "--"]

    def start(self, port=None):
        saved = harness.WRAPPER  # the harness puts it in front of jobqd: put setpriv first
        harness.WRAPPER = self.prefix + saved
        try:
            return super().start(port)
        finally:
            harness.WRAPPER = saved

    def run_as(self, cmd):
        """Run cmd with jobqd's ids; returns the CompletedProcess."""
        return run(self.prefix + cmd)


def fill_disk(path):
    """Write `path` until the file system has no free block left. Returns bytes written."""
    written = 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for size in (1 << 20, 64 << 10, 4 << 10):  # tmpfs hands out 4 KiB pages
            chunk = b"\0" * size
            for _ in range(100000):  # bounded: far more than a small disk holds
                try:
                    n = os.write(fd, chunk)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    break
                written += n
                if n < size:
                    break
    finally:
        os.close(fd)
    return written


def integrity(db):
    con = sqlite3.connect(db)
    try:
        return con.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        con.close()


def job_count(db):
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT count(*) FROM jobs").fetchone()[0]
    finally:
        con.close()


class StorageFaultTest(unittest.TestCase):
    """A fresh jobqd per test, its database wherever the test puts it."""

    maxDiff = None

    def start_server(self, db, args=()):
        srv = Server(args, db=db)
        self.addCleanup(srv.cleanup)  # runs before the unmount registered earlier
        srv.start()
        c = srv.client()
        self.addCleanup(c.close)
        return srv, c

    def mount_tmpfs(self, size):
        d = tempfile.mkdtemp(prefix="jobq-tmpfs-")
        r = run(["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", d])
        if r.returncode != 0:
            os.rmdir(d)
            self.fail("mount -t tmpfs failed: %s" % r.stderr.strip())
        self.addCleanup(self.unmount, d)
        return d

    def unmount(self, d):
        """Always leaves nothing mounted: a lazy unmount when a process still holds it."""
        if run(["umount", d]).returncode != 0:
            run(["umount", "-l", d])
        try:
            os.rmdir(d)
        except OSError:
            pass

    def remount(self, d, opts):
        r = run(["mount", "-o", "remount," + opts, d])
        self.assertEqual(r.returncode, 0, "remount %s: %s" % (opts, r.stderr.strip()))

    def enqueue(self, c, queue, payload, status=201):
        r = c.post("/jobs", {"queue": queue, "payload": payload})
        self.assertEqual(r.status, status, r)
        return r

    def assert_unavailable(self, r):
        self.assertEqual(r.status, 503, r)
        self.assertEqual(r.header("content-type", "").split(";")[0], "application/json", r)
        self.assertIsInstance(r.json, dict, r)
        self.assertEqual(r.json.get("error", {}).get("code"), "unavailable", r)

    def assert_ready(self, c):
        r = c.get("/readyz")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json, {"status": "ready"})

    def assert_readable(self, c, jobs):
        """Every job in jobs ({id: payload}) answers GET with its payload, whole."""
        for jid, payload in jobs.items():
            r = c.get("/jobs/%d" % jid)
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json["payload"], payload, "job %d" % jid)

    def stop_and_check(self, srv, db, jobs):
        srv.stop_checked()
        self.assertEqual(integrity(db), "ok")
        self.assertEqual(job_count(db), jobs)


class BusyDatabase(StorageFaultTest):
    @sqlite_only("another process holds the SQLite file's write lock")
    def test_locked_by_another_process(self):
        tmp = tempfile.mkdtemp(prefix="jobq-busy-")
        self.addCleanup(shutil.rmtree, tmp, True)
        db = os.path.join(tmp, "jobq.db")
        srv, c = self.start_server(db)
        first = self.enqueue(c, "busy", {"n": 1}).json
        self.assert_ready(c)

        other = sqlite3.connect(db, timeout=10, isolation_level=None)
        self.addCleanup(other.close)
        other.execute("BEGIN IMMEDIATE")  # WAL: holds the write lock until ROLLBACK
        try:
            t = time.monotonic()
            r = c.post("/jobs", {"queue": "busy", "payload": {"n": 2}})
            took = time.monotonic() - t
            self.assert_unavailable(r)
            self.assertLess(took, BUSY_BUDGET, "a locked database held the request %.2fs" % took)
            self.assert_unavailable(c.post("/claim", {"worker_id": "w", "queue": "busy"}))
            self.assert_unavailable(c.post("/jobs/%d/cancel" % first["id"]))

            t = time.monotonic()
            r = c.get("/readyz")
            took = time.monotonic() - t
            self.assert_unavailable(r)
            self.assertLess(took, READYZ_BUDGET, "/readyz took %.2fs" % took)

            # Reads never wait for the writer.
            self.assert_readable(c, {first["id"]: {"n": 1}})
            r = c.get("/jobs?queue=busy")
            self.assertEqual(r.status, 200, r)
            self.assertEqual([j["id"] for j in r.json["jobs"]], [first["id"]])
            self.assertEqual(c.get("/healthz").status, 200)
        finally:
            other.execute("ROLLBACK")

        # The lock is gone: the very next write goes through, no restart.
        second = self.enqueue(c, "busy", {"n": 3}).json
        self.assert_ready(c)
        self.assertEqual(c.post("/claim", {"worker_id": "w", "queue": "busy"}).status, 200)
        self.assertGreater(second["id"], first["id"])
        self.stop_and_check(srv, db, 2)


@unittest.skipUnless(MOUNT_OK, MOUNT_WHY)
class DiskFull(StorageFaultTest):
    @sqlite_only("the SQLite file on a tmpfs that fills up")
    def test_disk_fills_up_then_grows(self):
        mnt = self.mount_tmpfs("4m")
        db = os.path.join(mnt, "jobq.db")
        srv, c = self.start_server(db)
        created = {}
        refused = None
        for i in range(200):  # 4 MiB / 96 KiB: the disk is full long before
            payload = {"i": i, "blob": BIG}
            r = c.post("/jobs", {"queue": "full", "payload": payload})
            if r.status != 201:
                refused = r
                break
            created[r.json["id"]] = payload
        self.assertIsNotNone(refused, "4 MiB never filled up")
        self.assert_unavailable(refused)
        self.assertGreater(len(created), 3)
        # Alive, and everything acknowledged is there, whole.
        self.assertEqual(c.get("/healthz").status, 200)
        self.assert_readable(c, created)

        self.remount(mnt, "size=64m")  # room again
        payload = {"i": "after", "blob": BIG}
        r = self.enqueue(c, "full", payload)
        created[r.json["id"]] = payload
        self.assert_ready(c)
        self.assert_readable(c, created)
        self.stop_and_check(srv, db, len(created))

    @sqlite_only("the SQLite file on a tmpfs that fills up")
    def test_full_disk_readyz_and_recovery(self):
        mnt = self.mount_tmpfs("4m")
        db = os.path.join(mnt, "jobq.db")
        srv, c = self.start_server(db)
        jobs = {}
        for i in range(3):
            payload = {"i": i, "blob": BIG}
            jobs[self.enqueue(c, "full", payload).json["id"]] = payload
        self.assert_ready(c)

        # Another file takes every free block: no write of jobqd finds room.
        filler = os.path.join(mnt, "filler")
        self.assertGreater(fill_disk(filler), 0)
        self.assert_unavailable(c.post("/jobs", {"queue": "full", "payload": {"small": 1}}))
        self.assert_unavailable(c.post("/jobs", {"queue": "full", "payload": {"blob": BIG}}))
        self.assert_unavailable(c.post("/claim", {"worker_id": "w", "queue": "full"}))
        r = c.get("/readyz")
        self.assert_unavailable(r)
        self.assert_unavailable(c.get("/readyz"))  # still, with no write traffic
        self.assertEqual(c.get("/healthz").status, 200)
        self.assert_readable(c, jobs)

        os.remove(filler)  # the space comes back: readyz and writes recover by themselves
        self.assert_ready(c)
        payload = {"i": "after", "blob": BIG}
        jobs[self.enqueue(c, "full", payload).json["id"]] = payload
        self.assert_readable(c, jobs)
        self.stop_and_check(srv, db, len(jobs))


class ReadOnlyDatabase(StorageFaultTest):
    def start_as(self, ids, db):
        """Start jobqd on db with the ids given; skipped, saying why, where that user cannot
        run it or write db's directory (a build or temp directory closed to it)."""
        srv = UserServer(ids, db=db)
        self.addCleanup(srv.cleanup)
        if ids is not None and shutil.which("setpriv") is None:
            self.skipTest("no setpriv to run jobqd as an unprivileged user")
        who = "uid %d" % ids[0] if ids is not None else "this user"
        r = srv.run_as([harness.jobqd_path(), "--version"])
        if r.returncode != 0:
            self.skipTest("jobqd cannot run as %s: %s" % (who, r.stderr.strip()))
        if srv.run_as(["test", "-w", os.path.dirname(db)]).returncode != 0:
            self.skipTest("%s cannot write %s" % (who, os.path.dirname(db)))
        srv.start()
        return srv

    def client(self, srv):
        c = srv.client()
        self.addCleanup(c.close)
        return c

    def seed(self):
        """A database with two queued jobs in queue "ro", made by a jobqd (running as the
        unprivileged user when this is root) that is stopped again, in a directory that
        user owns. Returns (srv, db, {id: payload})."""
        ids = unprivileged_ids()
        tmp = tempfile.mkdtemp(prefix="jobq-ro-")
        self.addCleanup(shutil.rmtree, tmp, True)
        if ids is not None:
            os.chown(tmp, ids[0], ids[1])
        db = os.path.join(tmp, "jobq.db")
        srv = self.start_as(ids, db)
        c = srv.client()
        jobs = {}
        try:
            for n in (1, 2):
                jobs[self.enqueue(c, "ro", {"n": n}).json["id"]] = {"n": n}
        finally:
            c.close()
        srv.stop_checked()
        return srv, db, jobs

    def make_read_only(self, srv, db):
        """The fault: the database file loses its write permission. While jobqd is down: a
        running one keeps its open descriptors. SQLite then opens the file read-only."""
        os.chmod(db, 0o444)
        self.assertNotEqual(srv.run_as(["test", "-w", db]).returncode, 0,
                            "the database file is still writable for jobqd's user")

    def assert_leftovers(self, srv, db):
        """A read-only jobqd leaves its -wal and -shm behind, the -wal made by SQLite with
        the database file's mode: not writable for jobqd's user. (A new connection finding
        it so would stay read-only even on a writable database file.)"""
        names = sorted(n for n in os.listdir(os.path.dirname(db))
                       if n not in ("jobq.db", "jobq.db.lock"))  # the lock file stays
        self.assertEqual(names, ["jobq.db-shm", "jobq.db-wal"])
        self.assertNotEqual(srv.run_as(["test", "-w", db + "-wal"]).returncode, 0)

    def assert_clean_stop(self, srv, db, jobs):
        """Stopped with exit 0, the database whole, and no -wal or -shm left that would keep
        the next start read-only: jobqd's last connection, writable, removed them."""
        self.stop_and_check(srv, db, len(jobs))
        self.assertEqual(sorted(os.listdir(os.path.dirname(db))), ["jobq.db", "jobq.db.lock"])
        self.assertTrue(os.stat(db).st_mode & stat.S_IWUSR)

    @sqlite_only("the SQLite file made read-only")
    def test_database_file_made_read_only(self):
        srv, db, jobs = self.seed()
        first, second = sorted(jobs)
        self.make_read_only(srv, db)
        srv.restart()
        c = self.client(srv)
        self.assert_unavailable(c.get("/readyz"))  # at once, before any write was tried
        self.assert_unavailable(c.post("/jobs", {"queue": "ro", "payload": {"n": 3}}))
        self.assert_unavailable(c.post("/claim", {"worker_id": "w", "queue": "ro"}))
        self.assert_unavailable(c.post("/jobs/%d/cancel" % second))
        self.assert_readable(c, jobs)
        r = c.get("/jobs?queue=ro")
        self.assertEqual(r.status, 200, r)
        self.assertEqual([j["id"] for j in r.json["jobs"]], [first, second])
        self.assertEqual([j["status"] for j in r.json["jobs"]], ["queued", "queued"])
        self.assertEqual(c.get("/healthz").status, 200)
        self.assert_unavailable(c.get("/readyz"))
        c.close()
        srv.stop_checked()
        self.assert_leftovers(srv, db)

        # Started again on those files, still read-only: the same. Then the fault goes away
        # and /readyz alone (no write traffic) brings writes back, with no restart.
        srv.restart()
        c = self.client(srv)
        self.assert_unavailable(c.get("/readyz"))
        self.assert_unavailable(c.post("/jobs", {"queue": "ro", "payload": {"n": 3}}))
        self.assert_readable(c, jobs)
        os.chmod(db, 0o644)
        wait_until(lambda: c.get("/readyz").status == 200, HEAL_DEADLINE,
                   what="/readyz 200 after the database file is writable again")
        self.assert_ready(c)
        jobs[self.enqueue(c, "ro", {"n": 4}).json["id"]] = {"n": 4}
        r = c.post("/claim", {"worker_id": "w", "queue": "ro"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual([j["id"] for j in r.json["jobs"]], [first])
        r = c.post("/jobs/%d/cancel" % second)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["status"], "cancelled")
        self.assert_readable(c, jobs)
        self.assert_clean_stop(srv, db, jobs)

    @sqlite_only("the SQLite file made read-only")
    def test_writable_again_before_a_restart(self):
        srv, db, jobs = self.seed()
        self.make_read_only(srv, db)
        srv.restart()
        c = self.client(srv)
        self.assert_unavailable(c.get("/readyz"))
        c.close()
        srv.stop_checked()
        self.assert_leftovers(srv, db)
        # Fixed while jobqd is down: the next start is ready at once, its files not writable
        # no matter (it gives them their write permission back).
        os.chmod(db, 0o644)
        srv.restart()
        c = self.client(srv)
        self.assert_ready(c)
        jobs[self.enqueue(c, "ro", {"n": 3}).json["id"]] = {"n": 3}
        self.assert_readable(c, jobs)
        self.assert_clean_stop(srv, db, jobs)


if __name__ == "__main__":
    unittest.main()
