"""Results of bench/bench.py: the result lines of jobq-bench, medians over runs, the table
with the ratios against each peer, the issue's targets, and the files bench/chart.sh draws.
"""

import math
import os
import statistics

PEERS = ["beanstalkd-f0", "beanstalkd-mem", "pg-sync-on", "pg-sync-off", "pg-lease"]
PEER_SHORT = {"beanstalkd-f0": "x bs-f0", "beanstalkd-mem": "x bs-mem", "pg-sync-on": "x pg-on",
              "pg-sync-off": "x pg-off", "pg-lease": "x pg-lease"}
ORDER_SCEN = ["enqueue", "drain", "lifecycle", "lifecycle-paced", "batch", "claim-empty",
              "claim-history", "longpoll", "hol-unlimited", "hol"]
# jobq on PostgreSQL with 1, 2 and 3 jobqd processes sharing one database
JOBQ_PG = ["jobq-pg-1", "jobq-pg-2", "jobq-pg-3"]
# ... with a fixed round trip between jobqd and PostgreSQL (bench.py --rtt-ms, jobq-delay)
JOBQ_PG_RTT = ["jobq-pg-1-rtt", "jobq-pg-3-rtt"]
# jobq-full's jobqd driven through its SQS listener (--sqs-listen) instead of the native API
JOBQ_SQS = ["jobq-sqs"]
ORDER_SYS = ["jobq-full", "jobq-normal"] + JOBQ_SQS + JOBQ_PG + JOBQ_PG_RTT + PEERS


def base(sysname):
    """The system a label names: jobq-full for jobq-full and for its baseline twin
    jobq-full@NAME (the same system on the jobqd of another revision)."""
    return sysname.split("@", 1)[0]


def baseline(sysname):
    """NAME of a baseline twin SYSTEM@NAME, None for a system of the current build."""
    return sysname.split("@", 1)[1] if "@" in sysname else None


def present(keys):
    """The systems among keys ((scenario, system) pairs), in table order: ORDER_SYS, each
    followed by its baseline twins in the order they came."""
    seen = []
    for _, s in keys:
        if s not in seen:
            seen.append(s)
    return sorted(seen, key=lambda s: (ORDER_SYS.index(base(s)), baseline(s) is not None,
                                       seen.index(s)))


# Scenarios whose jobs/s is set by the generator, not by the server: no throughput ratio.
FIXED_RATE = {"lifecycle-paced", "longpoll"}
# rss_*: the largest jobqd process; cpu_*: all of them; db_*: the PostgreSQL cluster behind
# jobq-pg (db_conns: the most connections one jobqd process held, db_procs: how many processes
# held any); log_problems: lines jobqd logged at warn or error; first_claim_ms, ten_claims_ms
# (hol): 10 jobs of a free key enqueued behind the saturated key's, claimed one by one.
NUMERIC = ["jobs_s", "p50_ms", "p99_ms", "p999_ms", "max_ms", "count", "errors", "window_s",
           "prefill_s", "prefilled", "backlog", "rss_peak_mb", "rss_hwm_mb", "cpu_pct",
           "cpu_us_per_job", "gen_cpu_pct", "history_jobs", "db_cpu_pct", "db_mem_mb",
           "db_conns", "db_procs", "pool_size", "log_problems", "first_claim_ms",
           "ten_claims_ms", "inflight", "ops_per_tx", "trips_per_op", "db_active", "db_idle",
           "db_on_cpu", "db_lock", "db_lwlock", "db_io"]


def parse_result(text):
    """The fields of the last `result` line of jobq-bench's output, or None."""
    res = None
    for line in (text or "").splitlines():
        parts = line.rstrip("\n").split("\t")
        if parts and parts[0] == "result":
            res = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
    return res


def num(v):
    try:
        x = float(v)
    except (TypeError, ValueError):
        return math.nan
    return x


def brief(r):
    if r.get("failed") and "jobs_s" not in r:
        return "failed"
    s = "%10s jobs/s  p50 %8s ms  p99 %8s ms" % (r.get("jobs_s", "-"), r.get("p50_ms", "-"),
                                                 r.get("p99_ms", "-"))
    if "rss_peak_mb" in r:
        s += "  rss %s MB  cpu %s%%" % (r["rss_peak_mb"], r.get("cpu_pct", "-"))
    if r.get("failed"):
        s += "  (FAILED)"
    return s


def medians(rows):
    """{(scenario, system): {field: median}} over the runs that did not fail."""
    groups = {}
    for r in rows:
        groups.setdefault((r["scenario"], r["system"]), []).append(r)
    out = {}
    for key, rs in groups.items():
        ok = [r for r in rs if not r.get("failed")] or rs
        m = {"runs": len(ok), "failed": len(rs) - len([r for r in rs if not r.get("failed")])}
        for f in NUMERIC:
            vals = [num(r.get(f)) for r in ok]
            vals = [v for v in vals if not math.isnan(v)]
            m[f] = statistics.median(vals) if vals else math.nan
        out[key] = m
    return out


def fmt(v, digits=1):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if digits == 0 or abs(v) >= 1000:
        return "{:,.0f}".format(v)
    return "%.*f" % (digits, v)


def ratio(a, b):
    if math.isnan(a) or math.isnan(b) or b <= 0:
        return "-"
    return "%.2fx" % (a / b)


def table_rows(med):
    """The main table; `x pg-1`: jobs/s of 2 and 3 jobqd processes on PostgreSQL divided by
    those of one."""
    scens = [s for s in ORDER_SCEN if any(k[0] == s for k in med)]
    systems = present(med)
    peers = [p for p in PEERS if p in systems]
    scaling = "jobq-pg-1" in systems and any(base(p) in JOBQ_PG[1:] for p in systems)
    names = []  # the baselines, in the order they came
    for sysname in systems:
        if baseline(sysname) and baseline(sysname) not in names:
            names.append(baseline(sysname))
    rows = []
    for s in scens:
        for sysname in systems:
            m = med.get((s, sysname))
            if not m:
                continue
            jobs = m["jobs_s"]
            row = [s, sysname, "-" if s == "longpoll" else fmt(jobs, 0), fmt(m["p50_ms"], 2),
                   fmt(m["p99_ms"], 2)]
            # the peers; one process of the same build (x pg-1); the same system on each
            # baseline (x NAME, the current build's rows only)
            refs = [(p, sysname.startswith("jobq")) for p in peers]
            if scaling:
                one = "jobq-pg-1" + sysname[len(base(sysname)):]
                refs.append((one, base(sysname) in JOBQ_PG[1:]))
            refs += [("%s@%s" % (sysname, n), not baseline(sysname)) for n in names]
            for ref, mine in refs:
                pm = med.get((s, ref))
                if mine and pm and s not in FIXED_RATE:
                    row.append(ratio(jobs, pm["jobs_s"]))
                else:
                    row.append("")
            if m["failed"]:
                row[1] += " (%d failed)" % m["failed"]
            rows.append(row)
    return ["scenario", "system", "jobs/s", "p50 ms", "p99 ms"] + [PEER_SHORT[p] for p in peers] \
        + (["x pg-1"] if scaling else []) + ["x " + n for n in names], rows


def render(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)] if rows else \
        [len(h) for h in header]
    lines = ["  ".join(str(c).ljust(w) if i < 2 else str(c).rjust(w)
                       for i, (c, w) in enumerate(zip(r, widths))).rstrip()
             for r in [header] + rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def resources(med):
    """The lifecycle's resources. jobq on PostgreSQL: the largest jobqd's memory, the CPU of all
    of them, PostgreSQL's CPU apart, and the most database connections one process held."""
    header = ["system (lifecycle)", "jobs/s", "server RSS peak MB", "server CPU % of a core",
              "server CPU us/job", "generator CPU %"]
    pg = any(base(k[1]) in JOBQ_PG + JOBQ_PG_RTT for k in med)
    if pg:
        # in flight: jobqd's write transactions running, on average (its /metrics), all
        # processes together; active/idle: jobq's backends in pg_stat_activity, sampled at
        # 5 Hz; calls/tx: write calls per transaction; trips/call: round trips per call;
        # active on CPU, Lock, LWLock, IO: shares of the active backends' samples with no wait
        # event, waiting on a heavyweight lock, on a lightweight lock, on I/O
        header += ["PostgreSQL CPU %", "db conns/process", "tx in flight", "backends active",
                   "backends idle", "calls/tx", "trips/call", "active on CPU", "Lock", "LWLock",
                   "IO"]
    rows = []
    for sysname in present(med):
        m = med.get(("lifecycle", sysname))
        if m:
            rows.append([sysname, fmt(m["jobs_s"], 0), fmt(m["rss_peak_mb"]), fmt(m["cpu_pct"]),
                         fmt(m["cpu_us_per_job"]), fmt(m["gen_cpu_pct"])])
            if pg:
                db_cpu = m["cpu_pct"] if sysname.startswith("pg-") else m["db_cpu_pct"]
                rows[-1] += [fmt(db_cpu), fmt(m["db_conns"], 0), fmt(m["inflight"], 2),
                             fmt(m["db_active"], 2), fmt(m["db_idle"], 2), fmt(m["ops_per_tx"]),
                             fmt(m["trips_per_op"], 2), fmt(m["db_on_cpu"], 2),
                             fmt(m["db_lock"], 2), fmt(m["db_lwlock"], 2), fmt(m["db_io"], 2)]
    return header, rows


def targets(med):
    """The issue's targets, checked against the medians (informational: not a test)."""
    out = []

    def get(s, sysname, f="jobs_s"):
        m = med.get((s, sysname))
        return m[f] if m else math.nan

    def check(name, value, goal, op=">=", unit="x"):
        if math.isnan(value):
            return
        met = {">=": value >= goal, "<": value < goal, "<=": value <= goal}[op]
        if unit == "x":
            text = "%.2fx (target %s %.1fx)" % (value, op, goal)
        elif unit:
            text = "%.1f %s (target %s %g %s)" % (value, unit, op, goal, unit)
        else:
            text = "%g (target %s %g)" % (value, op, goal)
        out.append("%-64s %s  %s" % (name, text, "met" if met else "MISSED"))

    def largest(sysname, *fields):
        """The largest of fields of sysname over every scenario (NaN when none)."""
        vals = [num(m[f]) for (s, sy), m in med.items() if sy == sysname for f in fields]
        vals = [x for x in vals if not math.isnan(x)]
        return max(vals) if vals else math.nan

    full, normal = get("lifecycle", "jobq-full"), get("lifecycle", "jobq-normal")
    check("lifecycle: jobq --sync full / beanstalkd -f0", full / get("lifecycle",
                                                                   "beanstalkd-f0"), 3)
    check("lifecycle: jobq --sync full / pg synchronous_commit=on",
          full / get("lifecycle", "pg-sync-on"), 2)
    check("lifecycle: jobq --sync normal / beanstalkd in memory",
          normal / get("lifecycle", "beanstalkd-mem"), 0.5)
    for sysname in ("jobq-full", "jobq-normal"):
        check("claim with 1M finished + 100k delayed / empty (%s)" % sysname,
              get("claim-history", sysname) / get("claim-empty", sysname), 0.8)
        check("long-poll wake latency p99 (%s)" % sysname, get("longpoll", sysname, "p99_ms"),
              10, op="<", unit="ms")
        check("paced 1,000 jobs/s lifecycle latency p99 (%s)" % sysname,
              get("lifecycle-paced", sysname, "p99_ms"), 20, op="<", unit="ms")
        check("jobqd resident memory, largest of any scenario (%s)" % sysname,
              largest(sysname, "rss_peak_mb", "rss_hwm_mb"), 64, op="<", unit="MB")
    for sysname in ["jobq-full", "jobq-normal"] + JOBQ_PG:
        check("hol: claims behind a saturated key's jobs / unlimited queue (%s)" % sysname,
              get("hol", sysname) / get("hol-unlimited", sysname), 0.5)
        check("hol: first claim of 10 free jobs behind the saturated key (%s)" % sysname,
              get("hol", sysname, "first_claim_ms"), 100, op="<", unit="ms")
    one = get("lifecycle", "jobq-pg-1")
    check("lifecycle: jobq on PostgreSQL (1 process) / pg sync_commit=on",
          one / get("lifecycle", "pg-sync-on"), 1)
    for n in (2, 3):
        check("lifecycle: jobq on PostgreSQL, %d processes / 1 process" % n,
              get("lifecycle", "jobq-pg-%d" % n) / one, 1)
    check("lifecycle: jobq on PostgreSQL (1 process), a round trip of --rtt-ms / direct",
          get("lifecycle", "jobq-pg-1-rtt") / one, 0.8)
    for sysname in JOBQ_PG:
        check("jobqd resident memory, largest process, any scenario (%s)" % sysname,
              largest(sysname, "rss_peak_mb", "rss_hwm_mb"), 64, op="<", unit="MB")
        check("db connections of one jobqd, most in any scenario (%s)" % sysname,
              largest(sysname, "db_conns"), largest(sysname, "pool_size") + 1, op="<=", unit="")
    return out


def write(outdir, rows, meta):
    """Write raw.tsv, table.tsv, table.txt and the chart data; return the table's text."""
    fields = ["run", "scenario", "system"] + NUMERIC + ["failed"]
    with open(os.path.join(outdir, "raw.tsv"), "w") as f:
        f.write("\t".join(fields) + "\n")
        for r in rows:
            f.write("\t".join(str(r.get(k, "")) for k in fields) + "\n")
    med = medians(rows)
    with open(os.path.join(outdir, "table.tsv"), "w") as f:
        cols = ["scenario", "system", "runs", "failed"] + NUMERIC
        f.write("\t".join(cols) + "\n")
        systems = present(med)
        for (s, sysname), m in sorted(med.items(), key=lambda kv: (
                ORDER_SCEN.index(kv[0][0]), systems.index(kv[0][1]))):
            f.write("\t".join([s, sysname] + [fmt_tsv(m[c]) for c in cols[2:]]) + "\n")
    write_chart_data(outdir, med)
    header, trows = table_rows(med)
    rheader, rrows = resources(med)
    parts = ["jobq benchmark, %s; %s run(s), medians; %s s per scenario after %s s warm-up; "
             "%s producers + %s workers" % (meta["date"], meta["runs"], meta["duration_s"],
                                            meta["warmup_s"], meta["producers"],
                                            meta["workers"]),
             "machine: %s, %s; %s; disk %s" % (meta.get("cpu"), meta.get("memory"),
                                                 meta.get("kernel"), meta.get("disk")),
             "versions: jobq %s, SQLite %s, libmicrohttpd %s, %s, %s" % (
                 meta.get("jobq"), meta.get("sqlite"), meta.get("libmicrohttpd"),
                 meta.get("beanstalkd"), meta.get("postgresql")),
             "load average (1, 5, 15 min) before the benchmark started: %s (above ~0.5: something "
             "else was running on the 2 cores); at its end: %s" % (meta.get("load_start"),
                                                                    meta.get("load_end")),
             "", render(header, trows), "", render(rheader, rrows)]
    t = targets(med)
    if t:
        parts += ["", "targets of the issue (informational):"] + t
    if meta.get("history_s", "nan") != "nan":
        parts += ["", "claim-history table: %s jobs asked (%s in the table), built through the API in %s s"
                  % (meta["history"], meta.get("history_jobs", "?"), meta["history_s"])]
    if any(k[1].startswith("pg-") for k in med):
        parts += ["PostgreSQL's memory is the sum of the PSS of the postmaster and its "
                  "children (shared buffers counted once)."]
    if any(base(k[1]) in JOBQ_PG for k in med):
        parts += ["jobq-pg-N: N jobqd processes on one PostgreSQL database (synchronous_commit=on, "
                  "like pg-sync-on); server memory is the largest process's, server CPU theirs "
                  "together, PostgreSQL's CPU apart."]
    text = "\n".join(parts) + "\n"
    with open(os.path.join(outdir, "table.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(outdir, "meta.tsv"), "w") as f:
        for k, v in meta.items():
            f.write("%s\t%s\n" % (k, v))
    return text


def fmt_tsv(v):
    if isinstance(v, float):
        return "" if math.isnan(v) else ("%.3f" % v).rstrip("0").rstrip(".")
    return str(v)


def write_chart_data(outdir, med):
    """chart_jobs.tsv and chart_p99.tsv: one row per scenario, one column per system, "-" where
    a system has no such scenario."""
    systems = present(med)
    for name, field, skip in (("chart_jobs.tsv", "jobs_s", FIXED_RATE),
                              ("chart_p99.tsv", "p99_ms", {"enqueue", "claim-empty",
                                                            "claim-history"})):
        with open(os.path.join(outdir, name), "w") as f:
            f.write("scenario\t" + "\t".join(systems) + "\n")
            for s in ORDER_SCEN:
                if s in skip or not any(k[0] == s for k in med):
                    continue
                vals = []
                for sysname in systems:
                    m = med.get((s, sysname))
                    v = m[field] if m else math.nan
                    vals.append("-" if math.isnan(v) else "%.3f" % v)
                f.write(s + "\t" + "\t".join(vals) + "\n")
