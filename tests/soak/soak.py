#!/usr/bin/env python3
"""Soak test: run many job lifecycles (enqueue, claim, complete) through jobqd and watch its
resident memory. Python standard library only.

Each of --threads threads owns a keep-alive connection and a queue of its own, and loops:
enqueue --batch jobs with one POST /jobs/batch, claim them with POST /claim (max_jobs 100),
complete each with POST /jobs/{id}/complete. Every --sample-every lifecycles the main thread
reads VmRSS (and VmHWM, threads, open fds) of the server from /proc/<pid>/ and prints a row;
at the end it prints first/min/max/last RSS and the growth after warm-up, checks through
GET /queues that every job succeeded, and exits 1 when something failed or the RSS grew by
more than --max-growth-kb after warm-up (the first --warmup fraction of the run): the largest
sample after warm-up minus the first one.

Start a server itself (a temporary database, --sync normal unless --sync says otherwise):
    python3 tests/soak/soak.py --jobqd build/jobqd --jobs 200000
or watch one that runs already:
    python3 tests/soak/soak.py --port 8080 --pid "$(pidof jobqd)" --jobs 200000
"""

import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HOST = "127.0.0.1"


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def proc_stats(pid):
    """VmRSS and VmHWM in kB, thread count and open fds of a process."""
    out = {"rss": None, "hwm": None, "threads": None, "fds": None}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, val = line.partition(":")
            if key == "VmRSS":
                out["rss"] = int(val.split()[0])
            elif key == "VmHWM":
                out["hwm"] = int(val.split()[0])
            elif key == "Threads":
                out["threads"] = int(val.split()[0])
    try:
        out["fds"] = len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        pass
    return out


class Api:
    """One keep-alive connection; any failure is fatal for the soak."""

    def __init__(self, port):
        self.conn = http.client.HTTPConnection(HOST, port, timeout=60)

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else {}
        self.conn.request(method, path, body=data, headers=headers)
        resp = self.conn.getresponse()
        raw = resp.read()
        return resp.status, json.loads(raw.decode()) if raw else None

    def close(self):
        self.conn.close()


class Soak:
    def __init__(self, args, port):
        self.args = args
        self.port = port
        self.lock = threading.Lock()
        self.reserved = 0   # lifecycles handed out to threads
        self.done = 0       # lifecycles completed
        self.per_queue = {}
        self.errors = []
        self.stop = threading.Event()

    def take(self, n):
        with self.lock:
            n = min(n, self.args.jobs - self.reserved)
            self.reserved += n
            return n

    def fail(self, msg):
        with self.lock:
            self.errors.append(msg)
        self.stop.set()

    def thread(self, t):
        q = "soak-%d-%d" % (os.getpid(), t)
        api = Api(self.port)
        seq = 0
        try:
            while not self.stop.is_set():
                n = self.take(self.args.batch)
                if n <= 0:
                    return
                jobs = []
                for _ in range(n):
                    seq += 1
                    jobs.append({"queue": q, "payload": {"seq": seq, "pad": "x" * (seq % 200)}})
                st, js = api.call("POST", "/jobs/batch", {"jobs": jobs})
                if st != 201:
                    return self.fail("batch enqueue -> %d %r" % (st, js))
                left = n
                while left > 0 and not self.stop.is_set():
                    st, js = api.call("POST", "/claim", {"worker_id": "soak-%d" % t, "queue": q,
                                                         "max_jobs": min(100, left),
                                                         "lease_seconds": 300})
                    if st != 200 or not js["jobs"]:
                        return self.fail("claim -> %d %r (%d left)" % (st, js, left))
                    for job in js["jobs"]:
                        st, rj = api.call("POST", "/jobs/%d/complete" % job["id"],
                                          {"lease_token": job["lease_token"],
                                           "result": {"ok": job["payload"]["seq"]}})
                        if st != 200 or rj["status"] != "succeeded":
                            return self.fail("complete -> %d %r" % (st, rj))
                    left -= len(js["jobs"])
                    with self.lock:
                        self.done += len(js["jobs"])
                        self.per_queue[q] = self.per_queue.get(q, 0) + len(js["jobs"])
        except Exception as e:  # any transport error ends the soak
            self.fail("thread %d: %r" % (t, e))
        finally:
            api.close()

    def check_counts(self):
        api = Api(self.port)
        try:
            st, js = api.call("GET", "/queues")
        finally:
            api.close()
        if st != 200:
            return ["GET /queues -> %d" % st]
        have = {x["name"]: x for x in js["queues"]}
        bad = []
        for q, n in sorted(self.per_queue.items()):
            x = have.get(q)
            got = (x["succeeded"], x["queued"], x["running"]) if x else None
            if got != (n, 0, 0):
                bad.append("queue %s: (succeeded, queued, running) = %r, expected %r"
                           % (q, got, (n, 0, 0)))
        return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobqd", default=os.environ.get("JOBQD"),
                    help="start this daemon on a temporary database (default $JOBQD)")
    ap.add_argument("--sync", default="normal", choices=("full", "normal"),
                    help="--sync of the started daemon (default normal, for speed)")
    ap.add_argument("--server-arg", action="append", default=[],
                    help="one more argument for the started daemon (repeatable)")
    ap.add_argument("--port", type=int, help="use a running server on 127.0.0.1:PORT")
    ap.add_argument("--pid", type=int, help="the running server's pid (with --port)")
    ap.add_argument("--jobs", type=int, default=200000, help="lifecycles (default 200000)")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--batch", type=int, default=200, help="jobs per batch enqueue (1-1000)")
    ap.add_argument("--sample-every", type=int, default=10000, help="lifecycles per RSS row")
    ap.add_argument("--warmup", type=float, default=0.25,
                    help="fraction of the run before the growth check starts (default 0.25)")
    ap.add_argument("--max-growth-kb", type=int, default=8192,
                    help="largest RSS growth after warm-up that passes (default 8192)")
    args = ap.parse_args()
    if not 1 <= args.batch <= 1000 or args.jobs < 1 or args.threads < 1:
        ap.error("--batch 1..1000, --jobs and --threads at least 1")

    proc = tmpdir = log = None
    if args.port:
        if not args.pid:
            ap.error("--port needs --pid")
        port, pid = args.port, args.pid
    else:
        if not args.jobqd:
            ap.error("give --jobqd PATH (or $JOBQD), or --port and --pid")
        tmpdir = tempfile.mkdtemp(prefix="jobq-soak-")
        port = free_port()
        cmd = [args.jobqd, "--listen", "%s:%d" % (HOST, port), "--db",
               os.path.join(tmpdir, "soak.db"), "--sync", args.sync,
               "--log-level", "warn"] + args.server_arg
        log = open(os.path.join(tmpdir, "jobqd.log"), "wb")
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT)
        pid = proc.pid
        print("# started: %s" % " ".join(cmd), flush=True)
        deadline = time.monotonic() + 30
        while True:
            try:
                api = Api(port)
                st, _ = api.call("GET", "/healthz")
                api.close()
                if st == 200:
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                print("jobqd did not start", file=sys.stderr)
                return 1
            time.sleep(0.1)

    soak = Soak(args, port)
    print("# %d lifecycles, %d threads, batch %d, jobqd pid %d"
          % (args.jobs, args.threads, args.batch, pid), flush=True)
    print("%10s %8s %8s %10s %10s %8s %6s" % ("lifecycles", "secs", "rate/s", "VmRSS_kB",
                                            "VmHWM_kB", "threads", "fds"), flush=True)
    rows = []

    def sample(t0):
        s = proc_stats(pid)
        el = time.monotonic() - t0
        rows.append((soak.done, s["rss"]))
        print("%10d %8.1f %8.0f %10d %10d %8d %6s" % (soak.done, el, soak.done / el if el else 0,
                                                      s["rss"], s["hwm"], s["threads"],
                                                      s["fds"]), flush=True)

    t0 = time.monotonic()
    sample(t0)
    threads = [threading.Thread(target=soak.thread, args=(i,)) for i in range(args.threads)]
    for t in threads:
        t.start()
    next_row = args.sample_every
    while any(t.is_alive() for t in threads):
        time.sleep(0.05)
        if soak.done >= next_row:
            sample(t0)
            while next_row <= soak.done:
                next_row += args.sample_every
    for t in threads:
        t.join()
    if rows[-1][0] != soak.done:
        sample(t0)
    elapsed = time.monotonic() - t0

    errors = list(soak.errors)
    if soak.done != args.jobs:
        errors.append("%d lifecycles done, %d asked" % (soak.done, args.jobs))
    if not soak.errors:
        errors += soak.check_counts()
    rss = [r for _, r in rows]
    warm = [r for n, r in rows if n >= args.warmup * args.jobs] or rss[-1:]
    growth = max(warm) - warm[0]  # a steady leak makes the late samples the largest
    print("# done: %d lifecycles in %.1f s (%.0f/s)" % (soak.done, elapsed, soak.done / elapsed))
    print("# VmRSS kB: first %d, min %d, max %d, last %d" % (rss[0], min(rss), max(rss), rss[-1]))
    print("# after warm-up (from %d lifecycles): first %d, min %d, max %d, last %d; "
          "growth (max - first) %+d kB, limit %d"
          % (int(args.warmup * args.jobs), warm[0], min(warm), max(warm), warm[-1], growth,
             args.max_growth_kb))
    if growth > args.max_growth_kb:
        errors.append("RSS grew by %d kB after warm-up (limit %d)" % (growth, args.max_growth_kb))

    if proc is not None:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        print("# jobqd exit code after SIGTERM: %s" % code)
        if code != 0:
            errors.append("jobqd exited %s" % code)
        log.close()
        if errors:
            print("# jobqd log kept in %s" % tmpdir)
        else:
            shutil.rmtree(tmpdir, ignore_errors=True)
    for e in errors:
        print("FAIL: %s" % e)
    print("# result: %s" % ("FAIL" if errors else "PASS"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
