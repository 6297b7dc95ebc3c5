#!/usr/bin/env python3
"""Operating costs (issue 10): what a scrape costs with many jobs stored, and how long other
writers stall while a queue is purged. Not a test: it prints numbers.

    python3 bench/operating.py --jobqd build-bench/jobq/jobqd [--db URL] [--jobs 1000000]
        [--purge 200000]

1. Loads --jobs queued jobs over 10 queues (POST /jobs/batch, 1,000 each), then times 50
   GET /queues and 50 GET /metrics (median and max).
2. Loads --purge jobs into one more queue, then, while DELETE /queues/Q/jobs?status=queued
   runs, a writer enqueues single jobs into another queue one after the other: the longest
   of those enqueues (the write stall) and their median, next to the same writer's figures
   without a purge.
SQLite (a file in a temporary directory, --sync full) unless --db gives a PostgreSQL URL."""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from servers import Conn, Jobqd  # noqa: E402


def load(port, queue, n):
    c = Conn(port)
    for i in range(0, n, 1000):
        k = min(1000, n - i)
        c.call("POST", "/jobs/batch", {"jobs": [{"queue": queue, "payload": {"i": i + j}}
                                                for j in range(k)]})


def timed(c, method, path, rounds=50):
    ms = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        c.call(method, path)
        ms.append((time.perf_counter() - t0) * 1000)
    return statistics.median(ms), max(ms)


def writer(port, stop, out):
    c = Conn(port)
    while not stop.is_set():
        t0 = time.perf_counter()
        c.call("POST", "/jobs", {"queue": "bench.writer", "payload": 1})
        out.append((time.perf_counter() - t0) * 1000)


def stall(port, seconds=None, purge_queue=None):
    """Enqueue latencies (ms) of a writer during seconds, or during a purge."""
    stop, lat = threading.Event(), []
    t = threading.Thread(target=writer, args=(port, stop, lat))
    t.start()
    deleted, took = None, None
    try:
        if purge_queue:
            t0 = time.perf_counter()
            raw = Conn(port).call("DELETE", "/queues/%s/jobs?status=queued" % purge_queue)
            took = time.perf_counter() - t0
            deleted = json.loads(raw)["deleted"]
        else:
            time.sleep(seconds)
    finally:
        stop.set()
        t.join()
    return lat, deleted, took


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobqd", required=True)
    ap.add_argument("--db", help="a PostgreSQL URL (default: SQLite in a temporary directory)")
    ap.add_argument("--jobs", type=int, default=1000000)
    ap.add_argument("--purge", type=int, default=200000)
    a = ap.parse_args()
    wd = tempfile.mkdtemp(prefix="jobq-operating-")
    srv = Jobqd(a.jobqd, wd, sync=None if a.db else "full", db=a.db).start()
    try:
        backend = "postgresql" if a.db else "sqlite"
        t0 = time.time()
        per = a.jobs // 10
        threads = [threading.Thread(target=load, args=(srv.port, "bench.q%d" % k, per))
                   for k in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print("%s: loaded %d jobs in %.0f s" % (backend, per * 10, time.time() - t0))
        c = Conn(srv.port)
        for path in ("/queues", "/metrics"):
            med, mx = timed(c, "GET", path)
            print("%s: GET %s with %d jobs: median %.2f ms, max %.2f ms"
                  % (backend, path, per * 10, med, mx))
        load(srv.port, "bench.purge", a.purge)
        base, _, _ = stall(srv.port, seconds=5)
        lat, deleted, took = stall(srv.port, purge_queue="bench.purge")
        print("%s: enqueue without a purge: %d writes, median %.2f ms, max %.2f ms"
              % (backend, len(base), statistics.median(base), max(base)))
        print("%s: purge of %d jobs took %.1f s; enqueues meanwhile: %d, median %.2f ms, "
              "longest (the write stall) %.2f ms" % (backend, deleted, took, len(lat),
                                                    statistics.median(lat), max(lat)))
    finally:
        srv.stop()
        shutil.rmtree(wd, ignore_errors=True)


if __name__ == "__main__":
    main()
