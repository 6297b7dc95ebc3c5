#!/usr/bin/env python3
"""Workflow costs: how long a batch with dependencies takes to enqueue, and how fast workers
run a graph, for one jobqd or several side by side (before/after a change). Not a test: it
prints numbers.

    python3 bench/workflow.py --jobqd new=build/jobqd --jobqd old=/tmp/old/jobqd \\
        [--db postgres://...] [--runs 3] [--batches 5] [--workers 4]

Each run starts every jobqd in turn (a fresh SQLite file with --sync full, or the PostgreSQL
database --db names, each run in queues of its own) and, on each:
1. enqueues --batches batches of 1,000 jobs (POST /jobs/batch), each job depending on two jobs
   of the earlier batches and on one earlier element of its own batch (a ref): the median
   time of one batch;
2. drains the graph with --workers threads (claim max_jobs 10, complete each): jobs/s.
It prints the medians over the runs, and each jobqd's ratio to the first one."""

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from servers import Conn, Jobqd  # noqa: E402

BATCH = 1000


def enqueue_graph(c, queue, batches, rnd):
    """The batches of the graph; the seconds each batch took."""
    ids, took = [], []
    for b in range(batches):
        jobs = []
        for i in range(BATCH):
            deps = rnd.sample(ids, 2) if ids else []
            if i > 0:
                deps.append("r%d" % rnd.randrange(max(0, i - 10), i))
            j = {"queue": queue, "payload": {"b": b, "i": i}, "ref": "r%d" % i}
            if deps:
                j["depends_on"] = deps
            jobs.append(j)
        t0 = time.perf_counter()
        got = json.loads(c.call("POST", "/jobs/batch", {"jobs": jobs}))
        took.append(time.perf_counter() - t0)
        ids += [j["id"] for j in got["jobs"]]
    return took


def drain(port, queue, total, workers):
    """Jobs per second of workers threads running every job of queue (total of them)."""
    done, lock, stop = [0], threading.Lock(), threading.Event()

    def work(k):
        c = Conn(port)
        deadline = time.monotonic() + 600
        while not stop.is_set() and time.monotonic() < deadline:
            got = json.loads(c.call("POST", "/claim", {"worker_id": "w%d" % k, "queue": queue,
                                                       "max_jobs": 10, "wait_seconds": 1}))
            for j in got["jobs"]:
                c.call("POST", "/jobs/%d/complete" % j["id"], {"lease_token": j["lease_token"]})
                with lock:
                    done[0] += 1
                    if done[0] >= total:
                        stop.set()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=work, args=(k,)) for k in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if done[0] < total:
        raise RuntimeError("only %d of %d jobs ran" % (done[0], total))
    return total / (time.perf_counter() - t0)


def one(binary, db, run, label, a):
    wd = tempfile.mkdtemp(prefix="jobq-workflow-")
    srv = Jobqd(binary, wd, sync=None if db else "full", db=db).start()
    try:
        queue = "bench.wf.%s.%d.%d" % (label, run, os.getpid())
        took = enqueue_graph(Conn(srv.port), queue, a.batches, random.Random(run))
        rate = drain(srv.port, queue, a.batches * BATCH, a.workers)
        return statistics.median(took) * 1000, rate
    finally:
        srv.stop()
        shutil.rmtree(wd, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobqd", action="append", required=True, help="LABEL=PATH (repeat)")
    ap.add_argument("--db", help="a PostgreSQL URL (default: SQLite in a temporary directory)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--batches", type=int, default=5)
    ap.add_argument("--workers", type=int, default=4)
    a = ap.parse_args()
    bins = [x.split("=", 1) for x in a.jobqd]
    res = {label: ([], []) for label, _ in bins}
    for run in range(a.runs):
        order = bins if run % 2 == 0 else bins[::-1]  # take turns: neither always goes first
        for label, path in order:
            ms, rate = one(path, a.db, run, label, a)
            res[label][0].append(ms)
            res[label][1].append(rate)
            print("run %d %s: batch of %d with dependencies %.0f ms, graph drained at %.0f "
                  "jobs/s" % (run + 1, label, BATCH, ms, rate), flush=True)
    backend = "postgresql" if a.db else "sqlite"
    first = bins[0][0]
    f_ms, f_rate = statistics.median(res[first][0]), statistics.median(res[first][1])
    print("%s, medians of %d runs:" % (backend, a.runs))
    for label, _ in bins:
        ms, rate = statistics.median(res[label][0]), statistics.median(res[label][1])
        print("  %-10s batch %7.0f ms (x%.2f of %s)   drain %6.0f jobs/s (x%.2f)"
              % (label, ms, ms / f_ms, first, rate, rate / f_rate))


if __name__ == "__main__":
    main()
