#!/usr/bin/env python3
"""jobq under faults: the chaos scenarios of the public PostgreSQL job-queue benchmark
(github.com/hardbyte/postgresql-job-queue-benchmarking: phases baseline / fault / recovery,
its verdict the median completion rate in the recovery phase over the baseline's), our own
code after its design, plus what it cannot see: a per-job ledger audited at the end.

Each scenario starts fresh servers in a temporary directory: jobqd processes (two on a
PostgreSQL database of its own, in one cluster that runs from scenario to scenario, or one on
a SQLite file), a fixed-rate producer in this process, and
two worker processes (`chaos.py worker`, each starting on its own jobqd) whose threads
claim, work (heartbeating long jobs), complete, retry and fail over between the jobqd
processes. Then

  baseline   the load alone;
  fault      the fault (killed workers, killed jobqd, PostgreSQL stopped, backends
             terminated, connection slots taken, network faults through bench/delay.c);
  recovery   the load alone again, measured from the fault's end (for a PostgreSQL stop or
             a partition: from when PostgreSQL accepts connections again);
  drain      the producer stops; every acknowledged job must be finished;

and an audit of the ledger: every acknowledged enqueue (idempotency key -> id, kept by the
producer) and every claim and accepted complete with its lease token (kept by the workers,
one JSON line each in a file that survives a SIGKILL of the worker). Per scenario:

  recovery ratio   median completion rate in the recovery phase / in the baseline;
  recover s        from the fault's end to the first window whose completion rate is at
                   least 0.95 of the baseline's (rates are counted over windows of 1 s, or
                   of 50 jobs at the producer's rate when it is lower: 1.7 s for long jobs);
  lost             acknowledged jobs not succeeded at the end (or not in the database);
  doubled          jobs with two accepted completes of different leases, or one accepted
                   with a lease older than a later claim of the job (a stale lease);
  re-executed      jobs claimed more than once (allowed: delivery is at least once).

A scenario passes with 0 lost, 0 doubled, a ratio >= 0.95 and recovery within 5 s.
Any run exits 1 when a scenario lost or doubled a job, left jobs unfinished at the end of
the drain, or had a fault that should stop every completion (killed workers, PostgreSQL
stopped, a partition) show no second without one: a fault that did not bite tests nothing.
`--short` runs every scenario with short phases (the ctest test bench.chaos); the timings
are printed, not judged (the shared test machine is too noisy for them). Python standard
library only.

  python3 bench/chaos.py --jobqd build/jobqd --delay build/bench/jobq-delay [--short]
      [--only NAME[,NAME...]] [--json FILE]
"""

import argparse
import http.client
import json
import os
import queue
import random
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from servers import DelayProxy, Postgres, ServerError, free_port, pg_bindir  # noqa: E402

HOST = "127.0.0.1"
QUEUE = "chaos"
CT = {"Content-Type": "application/json"}
RETRYABLE = (OSError, http.client.HTTPException, ValueError)


# ---- the clients: a failover HTTP client, the worker process, the producer ----------------

class Failover:
    """One keep-alive connection to one of the jobqd ports; a request that fails (no
    connection, a time-out, 5xx) moves to the next port and tries again until a deadline."""

    def __init__(self, ports, home, timeout):
        self.ports, self.i, self.timeout = ports, home % len(ports), timeout
        self.conn = None
        self.errors = 0  # 5xx other than 503 (a bug of ours, never a fault's effect)

    def _next(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        self.i = (self.i + 1) % len(self.ports)

    def call(self, method, path, body, deadline, stop=None):
        """(status, json) of the first answer below 500, or None at the deadline (or when
        stop is set)."""
        data = json.dumps(body).encode() if body is not None else None
        while time.monotonic() < deadline:
            if stop is not None and stop.is_set():
                return None
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection(HOST, self.ports[self.i],
                                                           timeout=self.timeout)
                self.conn.request(method, path, body=data, headers=CT if data else {})
                r = self.conn.getresponse()
                raw = r.read()
                if r.status < 500:
                    return r.status, json.loads(raw) if raw else None
                if r.status != 503:
                    self.errors += 1
            except RETRYABLE:
                pass
            self._next()
            time.sleep(0.05)
        return None


class Ledger:
    """Append-only JSON lines, one write() each on an O_APPEND file: what was written before
    a SIGKILL of the process is kept."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def add(self, **ev):
        ev["t"] = time.time()
        os.write(self.fd, (json.dumps(ev) + "\n").encode())


def work_one(cl, led, job, a, stop):
    """Run one claimed job: sleep its work time, heartbeating every lease / 3 when it is
    long; complete it (retried with the same token until accepted or refused)."""
    token, jid = job["lease_token"], job["id"]
    end = time.monotonic() + random.uniform(a.work_min, a.work_max)
    beat = a.lease / 3.0
    while True:
        left = end - time.monotonic()
        if left <= 0:
            break
        time.sleep(min(left, beat))
        if end - time.monotonic() <= 0:
            break
        r = cl.call("POST", "/jobs/%d/heartbeat" % jid, {"lease_token": token},
                    time.monotonic() + a.lease)
        if r is not None and r[0] == 409:
            led.add(ev="lease_lost", id=jid, token=token)
            return
    r = cl.call("POST", "/jobs/%d/complete" % jid, {"lease_token": token, "result": 1},
                time.monotonic() + 120)
    if r is not None:
        code = ((r[1] or {}).get("error") or {}).get("code")
        led.add(ev="done", id=jid, token=token, status=r[0], code=code)


def worker_main(a):
    """`chaos.py worker`: a.threads threads claiming from a.ports (starting at a.home) until
    SIGTERM, then the jobs in hand are finished and the process exits 0."""
    ports = [int(p) for p in a.ports.split(",")]
    led = Ledger(a.ledger)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    def run(n):
        cl = Failover(ports, a.home, timeout=5.0)
        body = {"worker_id": "w%d.%d" % (a.home, n), "queue": QUEUE, "lease_seconds": a.lease,
                "wait_seconds": 1, "max_jobs": 1}
        while not stop.is_set():
            r = cl.call("POST", "/claim", body, time.monotonic() + 3600, stop)
            if r is None:
                break
            if r[0] != 200:
                led.add(ev="bad", what="claim", status=r[0], body=r[1])
                time.sleep(0.1)
                continue
            for j in r[1]["jobs"]:
                led.add(ev="claim", id=j["id"], token=j["lease_token"],
                        fencing=j["fencing_token"])
                work_one(cl, led, j, a, None)
        if cl.errors:
            led.add(ev="bad", what="5xx other than 503", count=cl.errors)

    threads = [threading.Thread(target=run, args=(n,), daemon=True) for n in range(a.threads)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        for t in threads:
            t.join(0.2)
    return 0


class Producer:
    """Enqueues at a fixed rate: a ticker makes one idempotency key every 1/rate s and
    sender threads send each (retried, failing over, until acknowledged: the key makes a
    retry safe). acked: key -> (id, time acknowledged)."""

    SENDERS = 16

    def __init__(self, ports, rate):
        self.ports, self.rate = ports, rate
        self.keys = queue.Queue()
        self.stop = threading.Event()
        self.acked = {}
        self.bad = []
        self.lock = threading.Lock()
        self.threads = []

    def start(self):
        self.threads = [threading.Thread(target=self._tick, daemon=True)]
        self.threads += [threading.Thread(target=self._send, args=(n,), daemon=True)
                         for n in range(self.SENDERS)]
        for t in self.threads:
            t.start()

    def _tick(self):
        t0, n = time.monotonic(), 0
        while not self.stop.is_set():
            due = t0 + n / self.rate
            wait = due - time.monotonic()
            if wait > 0:
                self.stop.wait(wait)
                continue
            self.keys.put("k%d" % n)
            n += 1
        for _ in range(self.SENDERS):
            self.keys.put(None)

    def _send(self, n):
        cl = Failover(self.ports, n, timeout=5.0)
        while True:
            key = self.keys.get()
            if key is None:
                break
            # max_attempts: a job that faults re-run many times is re-executed, not failed
            body = {"queue": QUEUE, "payload": {"k": key}, "idempotency_key": key,
                    "max_attempts": 100}
            r = cl.call("POST", "/jobs", body, time.monotonic() + 300)
            with self.lock:
                if r is not None and r[0] in (200, 201):
                    self.acked[key] = (r[1]["id"], time.time())
                else:
                    self.bad.append(("enqueue", key, r))
        if cl.errors:
            with self.lock:
                self.bad.append(("5xx other than 503", cl.errors))

    def finish(self, timeout):
        self.stop.set()
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.1, deadline - time.monotonic()))
        if any(t.is_alive() for t in self.threads):
            self.bad.append(("producer did not finish within %.0f s" % timeout,))


# ---- the servers -------------------------------------------------------------------------

class Jobqd:
    """jobqd on a fixed loopback port (kept across restarts, so clients find it again)."""

    def __init__(self, binary, workdir, db, extra=()):
        self.binary, self.workdir, self.db, self.extra = binary, workdir, db, list(extra)
        self.port = free_port()
        self.proc = None
        os.makedirs(workdir, exist_ok=True)

    def start(self, timeout=30.0):
        log = open(os.path.join(self.workdir, "jobqd.log"), "ab")
        cmd = [self.binary, "--listen", "%s:%d" % (HOST, self.port), "--db", self.db,
               "--log-level", "warn", "--sweep-interval", "1", "--backoff-base", "0"]
        self.proc = subprocess.Popen(cmd + self.extra, stdout=log, stderr=log,
                                     stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerError("jobqd exited with %s at start (%s)"
                                  % (self.proc.returncode, self.workdir))
            try:
                c = http.client.HTTPConnection(HOST, self.port, timeout=1)
                c.request("GET", "/healthz")
                if c.getresponse().status == 200:
                    c.close()
                    return self
            except RETRYABLE:
                pass
            time.sleep(0.05)
        raise ServerError("jobqd did not answer /healthz within %.0f s" % timeout)

    def kill(self):
        self.proc.kill()
        self.proc.wait()

    def stop(self):
        """SIGTERM; returns the exit code (SIGKILL after 30 s: then -9)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


class Worker:
    """A worker process (`chaos.py worker`) whose ledger is workdir/ledger.<home>."""

    def __init__(self, ports, home, workdir, load):
        self.ports, self.home, self.load = ports, home, load
        self.ledger = os.path.join(workdir, "ledger.%d" % home)
        self.proc = None

    def start(self):
        l = self.load
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "worker",
             "--ports", ",".join(str(p) for p in self.ports), "--home", str(self.home),
             "--threads", str(l["threads"]), "--lease", str(l["lease"]),
             "--work-min", str(l["work"][0]), "--work-max", str(l["work"][1]),
             "--ledger", self.ledger], stdin=subprocess.DEVNULL)
        return self

    def kill(self):
        self.proc.kill()
        self.proc.wait()

    def stop(self, timeout):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return "killed after %.0f s" % timeout
        return None if self.proc.returncode in (0, -9) else "exit %s" % self.proc.returncode


class PgWire:
    """One PostgreSQL connection on the cluster's unix socket (trust authentication) that
    speaks just enough of the protocol for the faults: the start-up and simple queries.
    Raises PgError when the server refuses (too many clients, shutting down)."""

    class PgError(Exception):
        pass

    def __init__(self, pg, dbname):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(10)
        self.s.connect(os.path.join(pg.sock, ".s.PGSQL.%d" % pg.port))
        p = b"user\0postgres\0database\0%s\0application_name\0chaos\0\0" % dbname.encode()
        self.s.sendall(struct.pack("!ii", 8 + len(p), 196608) + p)
        self._ready(startup=True)

    def _read(self, n):
        out = b""
        while len(out) < n:
            b = self.s.recv(n - len(out))
            if not b:
                raise PgWire.PgError("connection closed")
            out += b
        return out

    def _ready(self, startup=False):
        rows, err = [], None
        while True:
            head = self._read(5)
            body = self._read(struct.unpack("!i", head[1:])[0] - 4)
            if head[:1] == b"E":
                err = body.decode(errors="replace")
                if startup:
                    raise PgWire.PgError(err)
            elif head[:1] == b"D":
                cols, off = [], 2
                for _ in range(struct.unpack("!h", body[:2])[0]):
                    n = struct.unpack("!i", body[off:off + 4])[0]
                    off += 4
                    cols.append(None if n < 0 else body[off:off + n].decode())
                    off += max(n, 0)
                rows.append(cols)
            elif head[:1] == b"Z":
                if err:
                    raise PgWire.PgError(err)
                return rows

    def query(self, sql):
        q = sql.encode() + b"\0"
        self.s.sendall(b"Q" + struct.pack("!i", 4 + len(q)) + q)
        return self._ready()

    def close(self):
        self.s.close()


# ---- the scenarios -----------------------------------------------------------------------

SHORT_LOAD = {"rate": 40, "threads": 4, "lease": 3, "work": (0.001, 0.001)}
FULL_LOAD = {"rate": 150, "threads": 4, "lease": 5, "work": (0.001, 0.001)}
SHORT_LONG = {"rate": 5, "threads": 10, "lease": 2, "work": (0.5, 2.5)}
FULL_LONG = {"rate": 30, "threads": 80, "lease": 5, "work": (0.5, 5.0)}


class Run:
    """One scenario's servers, clients, phases and audit."""

    def __init__(self, args, name, backend, load, fault, fault_s, root, pg=None,
                 proxies=False, pool=None, max_connections=100, stops=False):
        self.a, self.name, self.backend, self.load = args, name, backend, load
        self.fault, self.fault_s = fault, fault_s
        self.dir = os.path.join(root, name)
        os.makedirs(self.dir)
        self.pg, self.proxies_on, self.pool = pg, proxies, pool
        self.max_connections = max_connections
        self.stops = stops  # the fault stops every completion: a second with none must show
        self.jobqd, self.workers, self.proxies = [], [], []
        self.fault_end = None
        self.notes = []

    # servers and clients
    def start(self):
        a = self.a
        if self.backend == "pg":
            # The cluster stays up between scenarios (a database each) unless one needs
            # another max_connections: a start and a stop less per scenario.
            if self.pg.chaos_max != self.max_connections:
                if self.pg.chaos_max is not None:
                    self.pg.stop()
                self.pg.chaos_max = None
                self.pg.start("on", max_connections=self.max_connections)
                self.pg.chaos_max = self.max_connections
            self.dbname = "chaos_" + self.name.replace("-", "_")
            self.pg.create_db(self.dbname)
            for i in range(2):
                host = None
                if self.proxies_on:
                    p = DelayProxy(a.delay, self.pg, os.path.join(self.dir, "proxy%d" % i), 0)
                    self.proxies.append(p.start())
                    host = p.dir
                url = self.pg.url(self.dbname, "jobqd%d" % i, host)
                extra = ["--pool-size", str(self.pool)] if self.pool else []
                self.jobqd.append(Jobqd(a.jobqd, os.path.join(self.dir, "jobqd%d" % i), url,
                                        extra))
        else:
            d = os.path.join(self.dir, "jobqd0")
            self.jobqd.append(Jobqd(a.jobqd, d, os.path.join(d, "jobq.db"),
                                    ["--sync", "full"]))
        for j in self.jobqd:
            j.start()
        self.ports = [j.port for j in self.jobqd]
        # Two worker processes whatever the number of jobqd: the same capacity on SQLite.
        self.workers = [Worker(self.ports, i, self.dir, self.load).start() for i in range(2)]
        self.producer = Producer(self.ports, self.load["rate"])

    def stop(self):
        problems = []
        for w in self.workers:
            why = w.stop(60)
            if why:
                problems.append("worker %d: %s" % (w.home, why))
        for i, j in enumerate(self.jobqd):
            rc = j.stop()
            if rc != 0:
                problems.append("jobqd%d exited %s after SIGTERM" % (i, rc))
        for p in self.proxies:
            p.stop()
        return problems

    # phases
    def run(self):
        s = self.a.scale
        self.start()
        try:
            self.producer.start()
            self.t_base = time.time()
            time.sleep(s["baseline"])
            self.t_fault = time.time()
            self.fault_end = self.fault(self)
            self.t_recovery = time.time()
            time.sleep(s["recovery"])
            self.t_end = time.time()
            self.producer.finish(s["drain"])
            self.drained, self.jobs = None, {}
            try:
                self.drained = self.drain(s["drain"])
                self.jobs = self.list_jobs()
            except ServerError as e:  # every job then counts as lost: said in problems
                self.notes.append("the audit could not read the jobs: %s" % e)
        finally:
            self.problems = self.stop()
        return self.audit()

    def request(self, method, path, timeout=10.0):
        cl = Failover(self.ports, 0, timeout=5.0)
        r = cl.call(method, path, {} if method == "POST" else None, time.monotonic() + timeout)
        if r is None:
            raise ServerError("%s %s: no answer within %.0f s" % (method, path, timeout))
        return r

    def drain(self, timeout):
        """Waits until nothing of the queue is queued or running. Returns the seconds it
        took, or None."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            st, body = self.request("GET", "/queues")
            q = [x for x in body["queues"] if x["name"] == QUEUE]
            if not q or q[0]["queued"] + q[0]["running"] == 0:
                return time.monotonic() - t0
            time.sleep(0.2)
        return None

    def list_jobs(self):
        jobs, cursor = {}, None
        for _ in range(10000):
            path = "/jobs?queue=%s&limit=1000" % QUEUE
            if cursor:
                path += "&cursor=" + urllib.parse.quote(cursor)
            st, body = self.request("GET", path)
            for j in body["jobs"]:
                jobs[j["id"]] = j
            cursor = body.get("next_cursor")
            if not cursor:
                break
        return jobs

    # the audit
    def read_ledgers(self):
        claims, accepted, bad = {}, {}, []
        done_at = {}
        for w in self.workers:
            if not os.path.exists(w.ledger):
                continue
            with open(w.ledger) as f:
                for line in f:
                    try:
                        ev = json.loads(line)
                    except ValueError:  # a line cut by SIGKILL: only the last one can be
                        continue
                    if ev["ev"] == "claim":
                        claims.setdefault(ev["id"], {})[ev["token"]] = ev["fencing"]
                    elif ev["ev"] == "done" and ev["status"] == 200:
                        accepted.setdefault(ev["id"], set()).add(ev["token"])
                        done_at[ev["id"]] = min(done_at.get(ev["id"], ev["t"]), ev["t"])
                    elif ev["ev"] == "done" and ev["status"] != 409:
                        bad.append(ev)
                    elif ev["ev"] == "bad":
                        bad.append(ev)
        return claims, accepted, sorted(done_at.values()), bad

    def audit(self):
        claims, accepted, done, bad = self.read_ledgers()
        acked = {jid for jid, _ in self.producer.acked.values()}
        lost = sorted(j for j in acked if self.jobs.get(j, {}).get("status") != "succeeded")
        doubled = []
        for jid, tokens in accepted.items():
            fences = claims.get(jid, {})
            last = max(list(fences.values()) + [self.jobs.get(jid, {}).get("fencing_token", 0)])
            if len(tokens) > 1 or any(fences.get(t, -1) < last for t in tokens):
                doubled.append(jid)
        reexec = sum(1 for c in claims.values() if len(c) > 1)
        w = self.window()
        base = self.rates(done, self.t_base + self.a.scale["warmup"], self.t_fault, w)
        reco = self.rates(done, self.t_recovery, self.t_end, w)
        during = self.rates(done, self.t_fault, self.t_recovery, 1.0)
        base_med = statistics.median(base) if base else 0.0
        ratio = statistics.median(reco) / base_med if reco and base_med else 0.0
        return {
            "scenario": self.name, "backend": self.backend, "jobs": len(acked),
            "baseline_per_s": base_med, "ratio": ratio,
            "fault_min_per_s": min(during) if during else None,
            "recover_s": self.recover(done, base_med), "lost": len(lost),
            "doubled": len(doubled), "reexecuted": reexec,
            "drained": self.drained is not None,
            "bit": not self.stops or (bool(during) and min(during) == 0),
            "unacked": len(set(self.jobs) - acked),
            "problems": self.problems + [repr(b) for b in bad + self.producer.bad][:20],
            "notes": self.notes, "lost_ids": lost[:20], "doubled_ids": doubled[:20],
        }

    def window(self):
        """The seconds over which a rate is counted: 1, or long enough for 50 completions at
        the producer's rate (fewer make the medians mostly noise); 1 in a short run, whose
        timings are not judged."""
        return 1.0 if self.a.short else max(1.0, 50.0 / self.load["rate"])

    @staticmethod
    def rates(done, t0, t1, w):
        """Completions per second in each whole window of w seconds in [t0, t1)."""
        n = int((t1 - t0) / w)
        per = [0] * max(n, 0)
        for t in done:
            k = int((t - t0) / w) if t >= t0 else -1
            if 0 <= k < n:
                per[k] += 1
        return [c / w for c in per]

    def recover(self, done, base):
        """Seconds from the fault's end to the first window whose completion rate reaches
        0.95 of the baseline's."""
        if not base:
            return None
        w = self.window()
        need = 0.95 * base * w
        t, lo, hi = self.fault_end, 0, 0
        while t + w <= self.t_end + self.a.scale["drain"]:
            while lo < len(done) and done[lo] < t:
                lo += 1
            while hi < len(done) and done[hi] < t + w:
                hi += 1
            if hi - lo >= need:
                return max(0.0, t - self.fault_end)
            t += 0.1
        return None


# ---- the faults: each runs the fault phase and returns when the fault ended ------------

def f_worker_kill(r):
    """Every worker process SIGKILLed (jobs in hand die with it), restarted after a while."""
    for w in r.workers:
        w.kill()
    time.sleep(r.fault_s)
    for w in r.workers:
        w.start()
    return time.time()


def f_jobqd_kill(r):
    """A jobqd SIGKILLed and restarted every period (each in turn), for fault_s."""
    period = r.a.scale["kill_period"]
    end, k = time.monotonic() + r.fault_s, 0
    ended = time.time()
    while True:
        j = r.jobqd[k % len(r.jobqd)]
        j.kill()
        j.start()
        ended = time.time()
        k += 1
        if time.monotonic() + period > end:
            break
        time.sleep(period)
    r.notes.append("%d kills" % k)
    return ended


def f_pg_stop(r):
    """PostgreSQL stopped (fast shutdown), started again on its port fault_s later. The
    fault ends when it accepts connections (pg_ctl start -w)."""
    r.pg.stop()
    time.sleep(r.fault_s)
    r.pg.start("on", max_connections=r.max_connections, same_port=True)
    return time.time()


def f_pg_terminate(r):
    """pg_terminate_backend twice a second on every backend of jobq's database."""
    ctl = PgWire(r.pg, "postgres")
    end, n = time.monotonic() + r.fault_s, 0
    while time.monotonic() < end:
        rows = ctl.query("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                         "WHERE datname = '%s' AND pid <> pg_backend_pid()" % r.dbname)
        n += int(rows[0][0])
        time.sleep(0.5)
    ctl.close()
    r.notes.append("%d backends terminated" % n)
    return time.time()


def take_slots(pg, held):
    """Opens idle connections to pg until it refuses one (appended to held)."""
    for _ in range(2000):
        try:
            held.append(PgWire(pg, "postgres"))
        except (PgWire.PgError, OSError):
            return


def f_slots(r):
    """Every free connection slot of the cluster taken by idle clients for fault_s."""
    held = []
    try:
        take_slots(r.pg, held)
        r.notes.append("%d idle clients" % len(held))
        time.sleep(r.fault_s)
    finally:
        for c in held:
            c.close()
    return time.time()


def f_pool(r):
    """Every free slot taken by idle clients, then every connection of jobqd terminated, its
    slots taken as they free up: jobqd has no connection and can open none for fault_s."""
    ctl, held = PgWire(r.pg, "postgres"), []
    try:
        take_slots(r.pg, held)
        killed, deadline = 0, time.monotonic() + 5
        while time.monotonic() < deadline:  # jobqd may win a freed slot: again, until none
            rows = ctl.query("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                             "WHERE datname = '%s'" % r.dbname)
            if int(rows[0][0]) == 0:
                break
            killed += int(rows[0][0])
            time.sleep(0.05)
            take_slots(r.pg, held)
        r.notes.append("%d of jobqd's connections terminated, %d idle clients"
                       % (killed, len(held)))
        time.sleep(r.fault_s)
    finally:
        for c in held + [ctl]:
            c.close()
    return time.time()


def proxy_fault(on, off="pass"):
    def fault(r):
        for p in r.proxies:
            p.send(on)
        time.sleep(r.fault_s)
        for p in r.proxies:
            p.send(off)
        return time.time()
    fault.__doc__ = "jobq-delay's mode %r between jobqd and PostgreSQL for fault_s" % on
    return fault


# name: (backend, load, fault, fault seconds (full, short), options)
SCENARIOS = [
    ("pg-worker-kill", "pg", "load", f_worker_kill, (20, 3), {"stops": True}),
    ("pg-jobqd-kill-20s", "pg", "load", f_jobqd_kill, (60, 4), {}),
    ("pg-stop-30s", "pg", "load", f_pg_stop, (30, 3), {"stops": True}),
    ("pg-terminate-backends", "pg", "load", f_pg_terminate, (20, 3), {}),
    ("pg-slots-taken", "pg", "load", f_slots, (20, 3), {}),
    ("sqlite-worker-kill", "sqlite", "load", f_worker_kill, (20, 3), {"stops": True}),
    ("sqlite-jobqd-kill-20s", "sqlite", "load", f_jobqd_kill, (60, 4), {}),
    ("pg-long-worker-kill", "pg", "long", f_worker_kill, (20, 3), {}),
    ("pg-long-jobqd-kill-20s", "pg", "long", f_jobqd_kill, (60, 4), {}),
    ("sqlite-long-worker-kill", "sqlite", "long", f_worker_kill, (20, 3), {}),
    ("sqlite-long-jobqd-kill-20s", "sqlite", "long", f_jobqd_kill, (60, 4), {}),
    ("pg-latency-50ms", "pg", "load", proxy_fault("delay 50000", "delay 0"), (10, 3),
     {"proxies": True}),
    ("pg-partition-hold-30s", "pg", "load", proxy_fault("hold"), (30, 3),
     {"proxies": True, "stops": True}),
    ("pg-partition-reset-30s", "pg", "load", proxy_fault("reset"), (30, 3),
     {"proxies": True, "stops": True}),
    ("pg-pool-exhaustion", "pg", "load", f_pool, (20, 3),
     {"pool": 32, "max_connections": 40, "stops": True}),
]

SCALES = {
    "full": {"baseline": 20, "recovery": 30, "warmup": 3, "drain": 120, "kill_period": 20},
    # The suite's run (bench.chaos): every fault at its short length; the phases around it
    # only long enough for the audit (a window of baseline before the fault, jobs in hand when
    # it lands, a second of load after it; the drain finishes every job). Not a measure.
    "short": {"baseline": 1.5, "recovery": 1, "warmup": 0.5, "drain": 60, "kill_period": 2},
}


def passed(x):
    return (x["lost"] == 0 and x["doubled"] == 0 and x["ratio"] >= 0.95
            and x["recover_s"] is not None and x["recover_s"] <= 5.0 and x["drained"])


def line(x, secs):
    """One scenario's result as a line of progress."""
    rec = "never" if x["recover_s"] is None else "%.1f s" % x["recover_s"]
    out = "%-28s %5.0f s  fault min/s %.0f  ratio %.2f  recover %s  lost %d  doubled %d  " \
        "re-executed %d" % (x["scenario"], secs, x["fault_min_per_s"], x["ratio"], rec,
                            x["lost"], x["doubled"], x["reexecuted"])
    if x["notes"]:
        out += "  (" + "; ".join(x["notes"]) + ")"
    if x["problems"]:
        out += "  PROBLEMS: %s" % x["problems"]
    return out


def table(results):
    out = ["| scenario | jobs | baseline/s | fault min/s | recovery ratio | recover s | lost | "
           "doubled | re-executed | pass |", "|---|---|---|---|---|---|---|---|---|---|"]
    for x in results:
        rec = "never" if x["recover_s"] is None else "%.1f" % x["recover_s"]
        low = "-" if x["fault_min_per_s"] is None else "%d" % x["fault_min_per_s"]
        out.append("| %s | %d | %.0f | %s | %.2f | %s | %d | %d | %d | %s |" % (
            x["scenario"], x["jobs"], x["baseline_per_s"], low, x["ratio"], rec, x["lost"],
            x["doubled"], x["reexecuted"], "yes" if passed(x) else "**no**"))
    return "\n".join(out)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        ap = argparse.ArgumentParser()
        ap.add_argument("mode")
        ap.add_argument("--ports", required=True)
        ap.add_argument("--home", type=int, required=True)
        ap.add_argument("--threads", type=int, required=True)
        ap.add_argument("--lease", type=int, required=True)
        ap.add_argument("--work-min", type=float, required=True)
        ap.add_argument("--work-max", type=float, required=True)
        ap.add_argument("--ledger", required=True)
        return worker_main(ap.parse_args())
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobqd", default=os.path.join(here, "..", "build", "jobqd"))
    ap.add_argument("--delay", default=os.path.join(here, "..", "build", "bench", "jobq-delay"))
    ap.add_argument("--short", action="store_true", help="short phases (the ctest test)")
    ap.add_argument("--only", help="comma-separated scenario names")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the servers are stopped
    a.scale = SCALES["short" if a.short else "full"]
    loads = {"load": SHORT_LOAD if a.short else FULL_LOAD,
             "long": SHORT_LONG if a.short else FULL_LONG}
    chosen = [s for s in SCENARIOS if not a.only or s[0] in a.only.split(",")]
    if not chosen:
        ap.error("no scenario named %s" % a.only)
    if not pg_bindir():
        if os.environ.get("JOBQ_REQUIRE_PG") == "1":
            print("PostgreSQL's initdb not found and JOBQ_REQUIRE_PG=1")
            return 1
        print("PostgreSQL's initdb not found: only the SQLite scenarios run")
        chosen = [s for s in chosen if s[1] != "pg"]
    root = tempfile.mkdtemp(prefix="jobq-chaos-")
    os.chmod(root, 0o755)  # PostgreSQL runs as its own user under root
    pg = None
    results = []
    try:
        if any(s[1] == "pg" for s in chosen):
            pg = Postgres(os.path.join(root, "pg")).init()
            pg.chaos_max = None  # the max_connections it runs with (Run.start); None: stopped
        for name, backend, load, fault, secs, opts in chosen:
            t0 = time.monotonic()
            r = Run(a, name, backend, loads[load], fault, secs[1 if a.short else 0], root,
                    pg=pg, **opts)
            x = r.run()
            results.append(x)
            print(line(x, time.monotonic() - t0), flush=True)
    finally:
        if pg is not None and os.path.exists(os.path.join(pg.data, "postmaster.pid")):
            pg.stop()
        if not a.keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print("kept", root)
    print()
    print(table(results))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    bad = [x for x in results if x["lost"] or x["doubled"] or not x["drained"] or not x["bit"]]
    for x in bad:
        print("FAIL %s: lost %s doubled %s drained %s fault stopped completions %s" % (
            x["scenario"], x["lost_ids"], x["doubled_ids"], x["drained"], x["bit"]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
