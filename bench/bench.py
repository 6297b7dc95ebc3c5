#!/usr/bin/env python3
"""Run every benchmark scenario against jobq (on SQLite with --sync full and normal; on
PostgreSQL with 1, 2 and 3 jobqd processes sharing one database) and its peers (beanstalkd with
an fsynced binlog and in memory; a PostgreSQL SKIP LOCKED queue driven by pgbench with
synchronous_commit on and off, and the same queue with leases), in the same run, then print
one table.

Started by bench/run.sh, which installs what is missing and builds jobqd and jobq-bench;
`bench/run.sh --help` lists the options. Every server is started fresh for every scenario (a
PostgreSQL cluster once per run and system, with a new table, or for jobq a new database, per
scenario) on loopback in a temporary directory, and stopped afterwards. Results go to --out:
raw.tsv (every run), table.tsv (medians), table.txt (the printed table), chart data for
bench/chart.sh.
"""

import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import pgdriver
import report
from servers import (Beanstalkd, ConnCounter, DelayProxy, Jobqd, Postgres, ServerError,
                     pg_bindir)

SCENARIOS = ["enqueue", "drain", "lifecycle", "lifecycle-paced", "batch", "claim-empty",
             "claim-history", "longpoll", "hol-unlimited", "hol"]
SYSTEMS = report.ORDER_SYS
KIND = {"jobq-full": "jobq", "jobq-normal": "jobq", "jobq-sqs": "jobq-sqs", "jobq-pg-1": "jobq-pg", "jobq-pg-2": "jobq-pg",
        "jobq-pg-3": "jobq-pg", "jobq-pg-1-rtt": "jobq-pg-rtt", "jobq-pg-3-rtt": "jobq-pg-rtt",
        "beanstalkd-f0": "beanstalkd", "beanstalkd-mem": "beanstalkd",
        "pg-sync-on": "postgres", "pg-sync-off": "postgres", "pg-lease": "postgres-lease"}
# What --systems runs when not given (the delay-proxy systems only when asked for).
DEFAULT_SYSTEMS = ",".join(s for s in SYSTEMS if KIND[s] != "jobq-pg-rtt")
SUPPORTED = {
    "jobq": set(SCENARIOS),
    "jobq-sqs": {"lifecycle"},
    "jobq-pg": set(SCENARIOS) - {"claim-history"},
    "jobq-pg-rtt": set(SCENARIOS) - {"claim-history"},
    "beanstalkd": {"enqueue", "drain", "lifecycle", "lifecycle-paced", "longpoll"},
    "postgres": {"enqueue", "drain", "lifecycle", "lifecycle-paced", "batch"},
    "postgres-lease": {"drain", "lifecycle", "lifecycle-paced"},
}


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="bench/run.sh", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="2 s per scenario and a 100,000-job history (development)")
    ap.add_argument("--smoke", action="store_true",
                    help="jobq --sync normal only, 0.3 s per scenario, a tiny history, no chart")
    ap.add_argument("--runs", type=int, default=1, help="runs of everything; medians (default 1)")
    ap.add_argument("--duration", type=float, help="measured seconds per scenario (default 10)")
    ap.add_argument("--warmup", type=float, help="seconds before each measurement (default 1)")
    ap.add_argument("--producers", type=int, default=16)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--paced-rate", type=float, default=1000.0,
                    help="jobs/s of the paced lifecycle (default 1000)")
    ap.add_argument("--finished", type=int, help="claim-history: finished jobs (default 1000000)")
    ap.add_argument("--delayed", type=int, help="claim-history: delayed jobs (default 100000)")
    ap.add_argument("--saturated", type=int,
                    help="hol: queued jobs of the saturated key ahead of the free ones "
                    "(default 100000)")
    ap.add_argument("--history-timeout", type=float, default=1200.0,
                    help="bound in seconds of building the history table (default 1200)")
    ap.add_argument("--pool-size", type=int, default=8,
                    help="jobq on PostgreSQL: --pool-size of each jobqd (default 8)")
    ap.add_argument("--rtt-ms", type=float, default=1.0,
                    help="jobq-pg-N-rtt: the round trip the delay proxy (jobq-delay) puts on "
                    "the link between each jobqd and PostgreSQL (default 1 ms)")
    ap.add_argument("--systems", default=DEFAULT_SYSTEMS,
                    help="comma-separated, from: %s (or jobq, jobq-pg, beanstalkd, postgres, "
                    "postgres-lease)" % ", ".join(SYSTEMS))
    ap.add_argument("--scenarios", default=",".join(SCENARIOS),
                    help="comma-separated, from: %s" % ", ".join(SCENARIOS))
    ap.add_argument("--out", default=None, help="results directory (default build-bench/results)")
    ap.add_argument("--jobqd", required=True, help="the jobqd binary")
    ap.add_argument("--bench", required=True, help="the jobq-bench binary")
    ap.add_argument("--token", default=None, help="bearer token for jobq, if it needs one")
    ap.add_argument("--baseline", action="append", default=[], metavar="REV",
                    help="also run the jobqd of git revision REV (any commit; bench/run.sh builds "
                    "it in build-bench/baseline-SHA/, Release, once) beside the current one: "
                    "each jobq system selected gains a twin SYSTEM@SHA, run right after it in "
                    "every run, and the table a column `x SHA` (current / baseline jobs/s). "
                    "Repeat it or separate revisions by commas for several. bench/bench.py "
                    "itself takes NAME=JOBQD (a built binary; bench/run.sh passes that on too)")
    args = ap.parse_args(argv)
    if args.smoke:
        defaults = dict(duration=0.3, warmup=0.1, finished=2000, delayed=200, saturated=2000)
        if args.systems == DEFAULT_SYSTEMS:  # not chosen: jobq-normal alone
            args.systems = "jobq-normal"
    elif args.quick:
        defaults = dict(duration=2.0, warmup=0.5, finished=100000, delayed=10000,
                        saturated=100000)
    else:
        defaults = dict(duration=10.0, warmup=1.0, finished=1000000, delayed=100000,
                        saturated=100000)
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    systems = []
    for s in args.systems.split(","):
        s = s.strip()
        match = [x for x in SYSTEMS if x == s or KIND[x] == s]
        if not match:
            ap.error("unknown system %r" % s)
        systems += [m for m in match if m not in systems]
    baselines = []
    for b in args.baseline:
        for spec in b.split(","):
            name, sep, path = spec.partition("=")
            if not sep or not name or not path or "@" in name:
                ap.error("--baseline %r: NAME=JOBQD (bench/run.sh builds REV and passes this)"
                         % spec)
            baselines.append((name, path))
    # Each jobq system, then its twins on the baselines' binaries (run right after it).
    args.jobqd_of = {}
    for s in systems:
        args.jobqd_of[s] = args.jobqd
        if KIND[s] in ("jobq", "jobq-pg", "jobq-pg-rtt"):
            args.jobqd_of.update(("%s@%s" % (s, name), path) for name, path in baselines)
    systems = list(args.jobqd_of)
    args.systems = systems
    args.scenarios = [s.strip() for s in args.scenarios.split(",")]
    for s in args.scenarios:
        if s not in SCENARIOS:
            ap.error("unknown scenario %r" % s)
    if not 1 <= args.runs <= 9:
        ap.error("--runs: 1 to 9")
    # Enough due jobs that a drain or claim run does not run dry on a fast system.
    args.prefill = max(2000, int(12000 * args.duration))
    return args


class Bench:
    def __init__(self, args, tmp):
        self.args, self.tmp = args, tmp
        self.history = {}  # jobqd binary -> (snapshot directory of its history table, jobs)
        self.rows = []
        self.n = 0
        # jobq-delay, built beside the generator (bench/CMakeLists.txt)
        self.delay_bin = os.path.join(os.path.dirname(os.path.abspath(args.bench)), "jobq-delay")

    def gen(self, system, label, scenario, addr, extra, pid=None, timeout=None, db_pid=None):
        """Run jobq-bench once (addr and pid: one, or several comma-separated; db_pid: the
        postmaster behind them); returns its result fields (a dict), or raises."""
        a = self.args
        cmd = [a.bench, "--system", system, "--label", label, "--scenario", scenario,
               "--duration", str(a.duration), "--warmup", str(a.warmup),
               "--producers", str(a.producers), "--workers", str(a.workers)]
        if addr:
            cmd += ["--addr", addr]
        if pid:
            cmd += ["--pid", str(pid)]
        if db_pid:
            cmd += ["--db-pid", str(db_pid)]
        if a.token and system == "jobq":
            cmd += ["--token", a.token]
        cmd += [str(x) for x in extra]
        limit = timeout or (a.duration + a.warmup + 180)
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             timeout=limit)
        for line in out.stderr.splitlines():
            print("    " + line, flush=True)
        res = report.parse_result(out.stdout)
        if res is None:
            raise ServerError("jobq-bench gave no result (exit %d)" % out.returncode)
        if out.returncode != 0:
            res["failed"] = "1"
        return res

    def workdir(self, label, scenario):
        self.n += 1
        return os.path.join(self.tmp, "%03d-%s-%s" % (self.n, label.replace("@", "-"), scenario))

    # jobq ---------------------------------------------------------------------------------
    def build_history(self, jobqd):
        """The history table, built by jobqd (a baseline's own: an older jobqd may not open a
        newer schema)."""
        a = self.args
        wd = os.path.join(self.tmp, "history-%d" % len(self.history))
        print("  building the history table: %d finished + %d delayed jobs (bound %.0f s)"
              % (a.finished, a.delayed, a.history_timeout), flush=True)
        srv = Jobqd(jobqd, wd, "normal", token=a.token).start()
        try:
            res = self.gen("jobq", "jobq", "history", srv.addr,
                           ["--finished", a.finished, "--delayed", a.delayed,
                            "--timeout", a.history_timeout],
                           timeout=a.history_timeout + 300)
        finally:
            srv.stop()
        print("  history table built in %s s (%s jobs)" % (res["prefill_s"], res["prefilled"]),
              flush=True)
        self.history[jobqd] = (wd, int(res["prefilled"]))
        if jobqd == a.jobqd:
            self.history_s = float(res["prefill_s"])
            self.history_jobs = int(res["prefilled"])
        return self.history[jobqd]

    def jobq_args(self, scenario):
        """jobq-bench's scenario and options for one of jobq's scenarios."""
        a = self.args
        return {
            "enqueue": ("enqueue", []),
            "drain": ("drain", ["--prefill", a.prefill]),
            "lifecycle": ("lifecycle", ["--wait", 1]),
            "lifecycle-paced": ("lifecycle", ["--wait", 1, "--rate", a.paced_rate]),
            "batch": ("batch", ["--batch", 100, "--max-jobs", 10, "--wait", 1]),
            "claim-empty": ("claim", ["--prefill", a.prefill]),
            "claim-history": ("claim", ["--prefill", a.prefill]),
            "longpoll": ("longpoll", []),
            "hol-unlimited": ("hol", ["--prefill", a.prefill, "--saturated", 0]),
            "hol": ("hol", ["--prefill", a.prefill, "--saturated", a.saturated]),
        }[scenario]

    def fill_timeout(self, scenario):
        """The bound of jobq-bench for a scenario: hol fills the saturated key's jobs and the
        free ones first (jobq-bench's own --timeout, 900 s, bounds each fill)."""
        a = self.args
        return a.duration + a.warmup + 1200 if scenario.startswith("hol") else None

    def jobq(self, label, scenario):
        a = self.args
        sync = "full" if report.base(label) == "jobq-full" else "normal"
        jobqd = a.jobqd_of[label]
        snapshot, history_jobs = None, None
        if scenario == "claim-history":
            snapshot, history_jobs = self.history.get(jobqd) or self.build_history(jobqd)
        srv = Jobqd(jobqd, self.workdir(label, scenario), sync, snapshot, a.token).start()
        try:
            gscen, extra = self.jobq_args(scenario)
            res = self.gen("jobq", label, gscen, srv.addr, extra, pid=srv.pid,
                           timeout=self.fill_timeout(scenario))
        finally:
            problems = stop_jobqd([srv])
        res["log_problems"] = str(problems)
        if scenario == "claim-history":
            res["history_jobs"] = str(history_jobs)
        return res

    def jobq_sqs(self, label, scenario):
        """jobq-sqs: jobq-full's jobqd (--sync full) with an SQS listener, driven through it
        in the AWS JSON protocol (bench/sqs.c: SendMessage, ReceiveMessage, DeleteMessage)."""
        srv = Jobqd(self.args.jobqd_of[label], self.workdir(label, scenario), "full",
                    sqs=True).start()
        try:
            gscen, extra = self.jobq_args(scenario)
            res = self.gen("sqs", label, gscen, srv.sqs_addr, extra, pid=srv.pid)
        finally:
            problems = stop_jobqd([srv])
        res["log_problems"] = str(problems)
        return res

    def jobq_pg(self, pg, label, scenario):
        """jobq-pg-N: N jobqd processes on one new database of the cluster pg; the generator's
        connections spread over them. Also counts each process's connections to the database
        (jobqd names itself by the URL's application_name), samples how many of them are
        active (in a transaction's statement) and idle, watches PostgreSQL's CPU, and reads
        each jobqd's own figures of its transactions in flight and round trips (/metrics).
        jobq-pg-N-rtt: the same through a delay proxy of --rtt-ms round trip."""
        a = self.args
        nproc = int(re.match(r"jobq-pg-(\d+)", report.base(label)).group(1))
        wd = self.workdir(label, scenario)
        db = "jobq_%d" % self.n
        names = ["jobqd-%d" % k for k in range(1, nproc + 1)]
        pg.create_db(db)
        servers, counter, conns, proxy = [], None, {}, None
        try:
            host = None
            if KIND[report.base(label)] == "jobq-pg-rtt":
                proxy = DelayProxy(self.delay_bin, pg, os.path.join(wd, "proxy"),
                                   int(a.rtt_ms * 1000)).start()
                host = proxy.dir
            # one after the other: the first creates the schema
            for name in names:
                servers.append(Jobqd(a.jobqd_of[label], os.path.join(wd, name), token=a.token,
                                     db=pg.url(db, name, host), pool_size=a.pool_size))
                servers[-1].start()
            counter = ConnCounter(pg, db).start()
            before = [s.pg_figures() for s in servers]
            gscen, extra = self.jobq_args(scenario)
            res = self.gen("jobq", label, gscen, ",".join(s.addr for s in servers), extra,
                           pid=",".join(str(s.pid) for s in servers), db_pid=pg.pid,
                           timeout=self.fill_timeout(scenario))
            res.update(pg_figures(before, [s.pg_figures() for s in servers]))
        finally:
            if counter:
                conns = counter.stop()
            problems = stop_jobqd(servers)
            if proxy:
                proxy.stop()
            pg.drop_db(db)
        res["log_problems"] = str(problems)
        res["db_conns"] = str(max(conns.get(n, 0) for n in names))
        res["db_procs"] = str(len([n for n in names if conns.get(n)]))
        res["db_active"] = "%.2f" % counter.mean_state("active", names)
        res["db_idle"] = "%.2f" % counter.mean_state("idle", names)
        shares = counter.wait_shares(names)
        for field, kind in (("db_on_cpu", "CPU"), ("db_lock", "Lock:"), ("db_lwlock", "LWLock:"),
                            ("db_io", "IO:")):
            res[field] = "%.2f" % sum(v for w, v in shares.items() if w.startswith(kind))
        top = sorted(shares.items(), key=lambda kv: -kv[1])[:6]
        print("    %s %s: waits of jobq's active backends: %s" % (
            scenario, label, ", ".join("%s %.0f%%" % (w, 100 * v) for w, v in top) or "none"),
            flush=True)
        res["pool_size"] = str(a.pool_size)
        others = {k: v for k, v in conns.items() if k not in names}
        if others:
            print("    other connections to %s: %s" % (db, others), flush=True)
        return res

    # beanstalkd ---------------------------------------------------------------------------
    def beanstalkd(self, label, scenario):
        a = self.args
        binlog = "f0" if label == "beanstalkd-f0" else None
        wd = self.workdir(label, scenario)
        extra = []
        if scenario == "drain":
            extra = ["--prefill", a.prefill]
            if binlog:
                # Fill a binlog without fsync, then measure with -f0 on it: the jobs are in the
                # binlog either way, and filling it one fsync per put would take minutes.
                fill = Beanstalkd(wd, "nosync").start()
                try:
                    self.gen("beanstalkd", label, "drain", fill.addr,
                             extra + ["--prefill-only"])
                finally:
                    fill.stop()
                extra = ["--no-prefill"]
        srv = Beanstalkd(wd, binlog).start()
        try:
            gscen, more = {
                "enqueue": ("enqueue", []),
                "drain": ("drain", []),
                "lifecycle": ("lifecycle", ["--wait", 1]),
                "lifecycle-paced": ("lifecycle", ["--wait", 1, "--rate", a.paced_rate]),
                "longpoll": ("longpoll", []),
            }[scenario]
            return self.gen("beanstalkd", label, gscen, srv.addr, extra + more, pid=srv.pid)
        finally:
            srv.stop()

    # one run ------------------------------------------------------------------------------
    def run_once(self, run):
        a = self.args
        for group in groups(a.systems, run):
            first = group[0]
            kind = KIND[report.base(first)]
            scens = turns([s for s in a.scenarios if s in SUPPORTED[kind]], run)
            if not scens:
                continue
            pg = None
            if kind in ("postgres", "postgres-lease", "jobq-pg", "jobq-pg-rtt"):  # same settings
                try:  # one cluster for a system and its twins (a new database per scenario)
                    pg = Postgres(os.path.join(self.tmp, "pg-%s-%d" % (
                        report.base(first), run))).init()
                    pg.start("off" if first == "pg-sync-off" else "on")
                except (ServerError, OSError) as e:
                    print("  %-16s %-15s FAILED: %s" % ("(all)", first, e), flush=True)
                    for scen in scens:
                        for label in group:
                            self.rows.append({"scenario": scen, "system": label,
                                              "run": str(run), "failed": "1"})
                    continue
            try:
                for scen in scens:
                    for label in group:
                        self.rows.append(self.run_one(run, kind, pg, label, scen))
            finally:
                if pg:
                    pg.stop()
                    shutil.rmtree(pg.workdir, ignore_errors=True)

    def run_one(self, run, kind, pg, label, scen):
        """One scenario of one system; its result row (failed: "1" when it failed)."""
        t0 = time.monotonic()
        try:
            if kind == "jobq":
                res = self.jobq(label, scen)
            elif kind == "jobq-sqs":
                res = self.jobq_sqs(label, scen)
            elif kind in ("jobq-pg", "jobq-pg-rtt"):
                res = self.jobq_pg(pg, label, scen)
            elif kind == "beanstalkd":
                res = self.beanstalkd(label, scen)
            else:
                res = pgdriver.run(pg, self, label, scen)
        except Exception as e:  # one scenario's failure must not end the run
            print("  %-16s %-15s FAILED: %s: %s" % (scen, label, type(e).__name__, e),
                  flush=True)
            res = {"scenario": scen, "system": label, "failed": "1"}
        res["scenario"], res["system"], res["run"] = scen, label, str(run)
        print("  %-16s %-15s %s  (%.0f s)" % (scen, label, report.brief(res),
                                             time.monotonic() - t0), flush=True)
        return res


def groups(systems, run):
    """The systems of run `run`, each with its baseline twins (SYSTEM@NAME) in one group: they
    run scenario by scenario in turn, and take turns at going first from one run to the next,
    so that neither always meets the machine in the state the other left it in."""
    out = []
    for s in systems:
        if out and report.base(s) == report.base(out[-1][0]):
            out[-1].append(s)
        else:
            out.append([s])
    k = run - 1
    return [g[k % len(g):] + g[:k % len(g)] for g in out]


def turns(scens, run):
    """hol and its reference hol-unlimited take turns at going first from one run to the next
    (on this machine the second of two such scenarios ran up to a quarter faster, whichever it
    was)."""
    if "hol" not in scens or "hol-unlimited" not in scens or run % 2:
        return scens
    i, j = scens.index("hol"), scens.index("hol-unlimited")
    out = list(scens)
    out[i], out[j] = out[j], out[i]
    return out


def pg_figures(before, after):
    """From each jobqd's figures before and after a run (Jobqd.pg_figures): the transactions
    in flight on average (all processes together), calls per transaction and round trips
    per call."""
    d = {k: sum(b2.get(k, 0) - b1.get(k, 0) for b1, b2 in zip(before, after))
         for k in ("jobq_pg_in_flight_seconds_total", "jobq_store_commits_total",
                   "jobq_store_ops_total", "jobq_pg_round_trips_total", "wall")}
    if d["wall"] <= 0 or d["jobq_store_ops_total"] <= 0:
        return {}
    return {"inflight": "%.2f" % (d["jobq_pg_in_flight_seconds_total"] * len(after) / d["wall"]),
            "ops_per_tx": "%.1f" % (d["jobq_store_ops_total"] /
                                    max(1, d["jobq_store_commits_total"])),
            "trips_per_op": "%.2f" % (d["jobq_pg_round_trips_total"] /
                                      d["jobq_store_ops_total"])}


def stop_jobqd(servers):
    """Stop every server, print what each logged at warn or error (the first few lines), and
    return how many such lines there were; raises the first failure to stop after stopping all."""
    failure, count = None, 0
    for srv in servers:
        if srv.proc is None:  # never started
            continue
        try:
            srv.stop()
        except ServerError as e:
            failure = failure or e
        lines = srv.problems()
        count += len(lines)
        if lines:
            print("    jobqd %s logged %d warn/error line(s):" % (srv.workdir, len(lines)))
            for line in lines[:3]:
                print("      " + line[:300])
    if failure:
        raise failure
    return count


def command_output(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = (out.stdout or out.stderr or "").strip().splitlines()
    return lines[0] if lines else ""


def machine():
    """What the numbers were taken on: CPU, memory, kernel, disk, versions."""
    cpu, mem = "?", "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name")), "?")
        with open("/proc/meminfo") as f:
            mem = "%.0f GiB" % (int(f.readline().split()[1]) / 1024 / 1024)
    except OSError:
        pass
    bindir = pg_bindir()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    df = command_output(["sh", "-c", "df -h --output=source,fstype,size %s | tail -n 1"
                         % tempfile.gettempdir()])
    return {
        "cpu": "%s, %d cores" % (cpu, os.cpu_count() or 0),
        "memory": mem,
        "kernel": command_output(["uname", "-sr"]),
        "disk": " ".join(df.split()),
        "jobq": command_output(["git", "-C", root, "describe", "--always", "--dirty"]),
        "sqlite": command_output(["pkg-config", "--modversion", "sqlite3"]),
        "libmicrohttpd": command_output(["pkg-config", "--modversion", "libmicrohttpd"]),
        "beanstalkd": command_output(["beanstalkd", "-v"]),
        "postgresql": command_output([os.path.join(bindir, "postgres"), "--version"])
        if bindir else "",
    }


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def main(argv):
    args = parse_args(argv)
    out = args.out or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                   "build-bench", "results")
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="jobq-bench-")
    os.chmod(tmp, 0o755)  # PostgreSQL runs as the postgres user in a directory inside
    bench = Bench(args, tmp)
    started = time.time()
    load_start = loadavg()
    try:
        for run in range(1, args.runs + 1):
            print("== run %d of %d: %s; %s" % (run, args.runs, ", ".join(args.systems),
                                              ", ".join(args.scenarios)), flush=True)
            bench.run_once(run)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(started)),
        "elapsed_s": "%.0f" % (time.time() - started),
        "runs": str(args.runs), "duration_s": str(args.duration), "warmup_s": str(args.warmup),
        "producers": str(args.producers), "workers": str(args.workers),
        "paced_rate": str(args.paced_rate),
        "history": "%d finished + %d delayed" % (args.finished, args.delayed),
        "history_s": "%.1f" % getattr(bench, "history_s", math.nan),
        "history_jobs": str(getattr(bench, "history_jobs", "")),
        "command": os.environ.get("JOBQ_BENCH_COMMAND", "bench/bench.py " + " ".join(argv)),
        "load_start": load_start, "load_end": loadavg(),
    }
    meta.update(machine())
    text = report.write(out, bench.rows, meta)
    print(text)
    failed = [r for r in bench.rows if r.get("failed")]
    if failed:
        print("%d scenario run(s) failed: %s" % (len(failed), ", ".join(
            "%s/%s" % (r["scenario"], r["system"]) for r in failed)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
