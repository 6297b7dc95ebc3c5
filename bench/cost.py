#!/usr/bin/env python3
"""CPU cost of the lifecycle, a measure that other load on the machine does not distort much
(unlike jobs/s): the CPU seconds per 1,000 lifecycle jobs (enqueue, claim, complete) of the
PostgreSQL processes behind one jobqd (backends, WAL writer, checkpointer: the children of the
postmaster, from /proc) and of jobqd itself.

  python3 bench/cost.py --pg --variant new build/jobqd "" \
      --variant main-noevents OTHER/jobqd "DROP TRIGGER ..."
                     PostgreSQL of the JOBQ_TEST_PG_* variables (scripts/pg_cluster.sh); each
                     variant is a label, a jobqd and SQL run on the database after that jobqd
                     migrated it ("" for none)
  python3 bench/cost.py --variant new build/jobqd ""      SQLite (--sync full) in a temp dir
  --jobs N --clients C --rounds R   R rounds of N jobs by C threads; prints each round and the
                                    median of each variant (the variants take turns)
  --statements N     PostgreSQL: instead of jobqd, N jobs made, claimed and completed by
                     SQL statements, each committed, in one DO block on the database the jobqd
                     migrated: the backend's CPU microseconds per job of the statements and
                     their triggers (the medians and minimums of the rounds)

Each round of the lifecycle starts a fresh database and jobqd, runs --warmup jobs, then reads
the CPU of the processes before and after N jobs. Python standard library only.
"""

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from servers import Jobqd, stop_process  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """utime + stime of pid in seconds (0 when it is gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def children(ppid):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == ppid:
            out.append(int(d))
    return out


def pg_cpu(postmaster):
    """CPU seconds of the postmaster's children, by pid (a backend that ended is missed: the
    round keeps jobqd's connections open)."""
    return {p: cpu_seconds(p) for p in children(postmaster)}


def lifecycle(addr, n, clients, queue):
    """n jobs through enqueue, claim and complete by `clients` threads. Returns the seconds."""
    left = [n]
    lock = threading.Lock()
    errors = []

    def call(c, path, body):
        c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        if r.status >= 300:
            raise RuntimeError("%s: %d %s" % (path, r.status, data[:200]))
        return json.loads(data) if data else None

    def worker(i):
        host, port = addr.rsplit(":", 1)
        c = http.client.HTTPConnection(host, int(port), timeout=30)
        try:
            while True:
                with lock:
                    if left[0] <= 0:
                        return
                    left[0] -= 1
                call(c, "/jobs", {"queue": queue, "payload": {"i": i}})
                got = call(c, "/claim", {"worker_id": "cost-%d" % i, "queue": queue,
                                         "max_jobs": 1, "wait_seconds": 1})
                for j in got["jobs"]:
                    call(c, "/jobs/%d/complete" % j["id"], {"lease_token": j["lease_token"]})
        except Exception as e:  # reported by the caller
            errors.append(e)
        finally:
            c.close()

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError("lifecycle failed: %s" % errors[0])
    return time.monotonic() - t0


def psql(url, sql):
    bindir = os.environ.get("JOBQ_TEST_PG_BIN", "")
    subprocess.run([os.path.join(bindir, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url,
                    "-c", sql], check=True, stdout=subprocess.DEVNULL)


def pg_url(dbname):
    return "postgresql://%s@/%s?host=%s&port=%s" % (
        os.environ["JOBQ_TEST_PG_USER"], dbname, os.environ["JOBQ_TEST_PG_HOST"],
        os.environ["JOBQ_TEST_PG_PORT"])


# One job's statements as jobqd's enqueue, claim and complete change the row (status 1 -> 2 ->
# 3, the attempt's fields), each a transaction of its own: the triggers fire three times a job
# (synchronous_commit off: the backend's CPU, not its waits for the disk).
STATEMENTS = """SET synchronous_commit = off;
DO $$ DECLARE jid bigint; BEGIN
 FOR i IN 1..%d LOOP
  INSERT INTO jobq_jobs (queue, status, payload, run_at, max_attempts, created_at)
   VALUES ('cost', 1, '{}', 0, 3, 0) RETURNING id INTO jid;
  COMMIT;
  UPDATE jobq_jobs SET status = 2, attempts = attempts + 1, fencing_token = fencing_token + 1,
   claimed_at = 1, lease_expires_at = 100, lease_seconds = 99, lease_token = 'token',
   worker_id = 'w' WHERE id = jid;
  COMMIT;
  UPDATE jobq_jobs SET status = 3, finished_at = 2, ended_at = 2, attempt_outcome = 1,
   lease_token = NULL, result = '{}' WHERE id = jid;
  COMMIT;
 END LOOP;
END $$"""


def statements_us(db, n):
    """CPU microseconds per job of STATEMENTS on database db: the backend's utime + stime
    (/proc) around the DO block, in one psql session."""
    bindir = os.environ.get("JOBQ_TEST_PG_BIN", "")
    p = subprocess.Popen([os.path.join(bindir, "psql"), "-X", "-q", "-A", "-t", "-v",
                          "ON_ERROR_STOP=1", "-d", db], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        p.stdin.write("SELECT pg_backend_pid();\n")
        p.stdin.flush()
        pid = int(p.stdout.readline())
        before = cpu_seconds(pid)
        p.stdin.write(STATEMENTS % n + ";\nSELECT 'done';\n")
        p.stdin.flush()
        if p.stdout.readline().strip() != "done":
            raise RuntimeError("the statements failed on %s" % db)
        after = cpu_seconds(pid)
    finally:
        p.stdin.close()
        p.wait()
    return (after - before) * 1e6 / n


def migrated_db(jobqd, work, sql):
    """A fresh database migrated by jobqd, then sql run on it. Returns (name, url)."""
    dbname = "cost_%d_%d" % (os.getpid(), int(time.time() * 1000000) % 100000000)
    psql(os.environ["JOBQ_TEST_PG_URL"], "CREATE DATABASE %s" % dbname)
    db = pg_url(dbname)
    server = Jobqd(os.path.abspath(jobqd), work, sync="full", db=db).start()
    stop_process(server.proc, "jobqd")
    if sql:
        psql(db, sql)
    return dbname, db


def drop_db(dbname):
    psql(os.environ["JOBQ_TEST_PG_URL"], "DROP DATABASE %s WITH (FORCE)" % dbname)


def one_round(a, v, work):
    db = None
    postmaster = None
    if a.pg:
        dbname = "cost_%d_%d" % (os.getpid(), int(time.time() * 1000) % 1000000)
        psql(os.environ["JOBQ_TEST_PG_URL"], "CREATE DATABASE %s" % dbname)
        db = pg_url(dbname)
        with open(os.path.join(os.environ["JOBQ_TEST_PG_DATA"], "postmaster.pid")) as f:
            postmaster = int(f.readline())
    server = Jobqd(os.path.abspath(v["jobqd"]), work, sync="full", db=db).start()
    try:
        if v["sql"]:
            psql(db, v["sql"])
        lifecycle(server.addr, a.warmup, a.clients, "cost")
        pg0 = pg_cpu(postmaster) if postmaster else {}
        j0 = cpu_seconds(server.pid)
        wall = lifecycle(server.addr, a.jobs, a.clients, "cost")
        j1 = cpu_seconds(server.pid)
        pg1 = pg_cpu(postmaster) if postmaster else {}
    finally:
        stop_process(server.proc, "jobqd")
        if a.pg:
            psql(os.environ["JOBQ_TEST_PG_URL"], "DROP DATABASE %s WITH (FORCE)" % dbname)
    pg = sum(v - pg0.get(p, 0.0) for p, v in pg1.items())
    k = 1000.0 / a.jobs
    return {"pg": pg * k, "jobqd": (j1 - j0) * k, "wall": wall * k}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variant", nargs=3, action="append", required=True,
                   metavar=("LABEL", "JOBQD", "SQL"))
    p.add_argument("--pg", action="store_true", help="PostgreSQL (JOBQ_TEST_PG_* variables)")
    p.add_argument("--statements", type=int, default=0)
    p.add_argument("--jobs", type=int, default=3000)
    p.add_argument("--warmup", type=int, default=300)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    variants = [{"label": v[0], "jobqd": v[1], "sql": v[2], "rows": []} for v in a.variant]
    with tempfile.TemporaryDirectory(prefix="jobq-cost-") as tmp:
        if a.statements:
            for i, v in enumerate(variants):
                v["db"] = migrated_db(v["jobqd"], os.path.join(tmp, "m%d" % i), v["sql"])
            try:
                for r in range(a.rounds):
                    for v in variants:
                        us = statements_us(v["db"][1], a.statements)
                        v["rows"].append(us)
                        print("%s round %d: %.1f CPU us per job" % (v["label"], r + 1, us),
                              flush=True)
            finally:
                for v in variants:
                    drop_db(v["db"][0])
            for v in variants:
                print("%s: CPU us per job of statements and triggers: median %.1f, min %.1f"
                      % (v["label"], statistics.median(v["rows"]), min(v["rows"])))
            return
        for r in range(a.rounds):
            for i, v in enumerate(variants):
                row = one_round(a, v, os.path.join(tmp, "r%d-%d" % (r, i)))
                v["rows"].append(row)
                print("%s round %d: CPU s per 1,000 jobs: postgres %.3f, jobqd %.3f; wall %.2f s"
                      % (v["label"], r + 1, row["pg"], row["jobqd"], row["wall"]), flush=True)
    for v in variants:
        med = {k: statistics.median(r[k] for r in v["rows"]) for k in v["rows"][0]}
        print("%s: median of %d: CPU s per 1,000 jobs: postgres %.3f, jobqd %.3f; wall %.2f s"
              % (v["label"], a.rounds, med["pg"], med["jobqd"], med["wall"]))


if __name__ == "__main__":
    main()
