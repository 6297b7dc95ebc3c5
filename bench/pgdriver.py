"""The PostgreSQL peers: a plain FOR UPDATE SKIP LOCKED queue (bench/pg/*.sql) driven by
pgbench, with no HTTP in between. pg-sync-on and pg-sync-off claim and complete a job in one
transaction; pg-lease claims it with a lease in one and completes it in a second, as a queue
whose claims can be lost must (bench/pg/lease.sql, claim_lease.sql). Producers and workers
are two pgbench processes of --producers and --workers clients running at once. Throughput
and the enqueue -> complete latency come from the table itself (created_at, done_at),
counted inside the same window as the load generator's (after the warm-up); enqueue and drain
latencies come from pgbench's per-transaction log (one claim and complete). jobq-bench watches
the postmaster and its children meanwhile.
"""

import glob
import math
import os
import resource
import subprocess
import time

import report
from servers import ServerError

PG_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pg")


def sql_file(name):
    return os.path.join(PG_DIR, name)


def quantiles(values, qs):
    if not values:
        return [0.0 for _ in qs]
    values = sorted(values)
    return [values[min(len(values) - 1, max(0, math.ceil(q * len(values)) - 1))] for q in qs]


def log_latencies(prefix, t_from, t_to):
    """Latencies (ms) of pgbench -l transactions that ended in [t_from, t_to) (Unix time)."""
    lat = []
    for path in glob.glob(prefix + ".[0-9]*"):  # pgbench -l: PREFIX.PID[.THREAD]
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) < 6:
                    continue
                end = int(p[4]) + int(p[5]) / 1e6
                if t_from <= end < t_to:
                    lat.append(int(p[2]) / 1000.0)
    return lat


def table_stats(pg, t_from, t_to, column):
    """Count, p50, p99, p99.9 (ms) of enqueue -> complete for rows whose `column` lies in the
    window, and the last such time."""
    row = pg.psql(
        "SELECT count(*), coalesce(extract(epoch FROM max({c})), 0),"
        " coalesce(percentile_cont(ARRAY[0.5, 0.99, 0.999]) WITHIN GROUP"
        " (ORDER BY extract(epoch FROM done_at - created_at) * 1000), ARRAY[0,0,0]::float8[])"
        " FROM jobs WHERE {c} >= to_timestamp({a}) AND {c} < to_timestamp({b})"
        .format(c=column, a=t_from, b=t_to))
    count, last, arr = row.split("|")
    q = [float(x) for x in arr.strip("{}").split(",")]
    return int(count), float(last), q


def run(pg, bench, label, scenario):
    a = bench.args
    work = bench.workdir(label, scenario)
    os.makedirs(work, exist_ok=True)
    pg.psql(file=sql_file("schema.sql"))
    claim = "claim.sql"
    if report.base(label) == "pg-lease":
        pg.psql(file=sql_file("lease.sql"))
        claim = "claim_lease.sql"
    prefilled = 0
    t_fill = time.monotonic()
    if scenario == "drain":
        pg.psql("INSERT INTO jobs (payload) SELECT '{\"t\": 0}' FROM generate_series(1, %d)"
                % a.prefill)
        pg.psql("VACUUM ANALYZE jobs")
        prefilled = a.prefill
    prefill_s = time.monotonic() - t_fill

    # pgbench -T takes whole seconds: run past the window and count inside it only.
    total = int(math.ceil(a.warmup + a.duration + 0.5))
    base = pg.pgbench_cmd() + ["-n", "-T", str(total), "-j", "1", "postgres"]
    producers = base + ["-c", str(a.producers)]
    workers = base + ["-c", str(a.workers)]
    backlog = 4 * a.workers
    jobs = []  # (name, command)
    if scenario == "enqueue":
        jobs.append(("prod", producers + ["-f", sql_file("insert.sql"), "-l",
                                          "--log-prefix", os.path.join(work, "prod")]))
    elif scenario == "drain":
        jobs.append(("work", workers + ["-f", sql_file(claim), "-l",
                                        "--log-prefix", os.path.join(work, "work")]))
    elif scenario == "lifecycle":
        jobs.append(("prod", producers + ["-f", sql_file("insert_bounded.sql"),
                                          "-D", "backlog=%d" % backlog]))
        jobs.append(("work", workers + ["-f", sql_file(claim)]))
    elif scenario == "lifecycle-paced":
        jobs.append(("prod", producers + ["-f", sql_file("insert.sql"),
                                          "-R", "%g" % a.paced_rate]))
        jobs.append(("work", workers + ["-f", sql_file(claim)]))
    elif scenario == "batch":
        backlog = max(4 * a.workers * 10, 200)
        jobs.append(("prod", producers + ["-f", sql_file("batch_insert.sql"), "-D", "batch=100",
                                          "-D", "backlog=%d" % backlog]))
        jobs.append(("work", workers + ["-f", sql_file("batch_claim.sql"), "-D",
                                        "max_jobs=10"]))
    else:
        raise ServerError("no PostgreSQL driver for %s" % scenario)

    t0 = time.time()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    procs = []
    for name, cmd in jobs:
        f = open(os.path.join(work, "pgbench-%s.txt" % name), "w")
        procs.append((name, subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT,
                                             cwd=work), f))
    watch = subprocess.Popen(
        [a.bench, "--system", "watch", "--scenario", "watch", "--label", label,
         "--duration", str(a.duration), "--warmup", str(a.warmup), "--pid", str(pg.pid),
         "--children"], stdout=subprocess.PIPE, text=True)
    failed = 0
    for name, p, f in procs:
        try:
            rc = p.wait(total + 120)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = -9
        f.close()
        if rc != 0:
            failed = 1
            with open(os.path.join(work, "pgbench-%s.txt" % name)) as out:
                print("    pgbench %s exited %d: %s" % (name, rc, out.read()[-500:]))
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    w_out, _ = watch.communicate(timeout=total + 120)
    res = report.parse_result(w_out) or {}
    # pgbench is the load generator here: its CPU over its whole run
    gen_cpu = (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
    res["gen_cpu_pct"] = "%.1f" % (100 * gen_cpu / (time.time() - t0))

    t_from, t_to = t0 + a.warmup, t0 + a.warmup + a.duration
    window = a.duration
    if scenario == "enqueue":
        count = int(pg.psql("SELECT count(*) FROM jobs WHERE created_at >= to_timestamp(%f)"
                            " AND created_at < to_timestamp(%f)" % (t_from, t_to)))
        q = quantiles(log_latencies(os.path.join(work, "prod"), t_from, t_to),
                      [0.5, 0.99, 0.999])
    elif scenario == "drain":
        count, last, _ = table_stats(pg, t_from, t_to, "done_at")
        left = int(pg.psql("SELECT count(*) FROM jobs WHERE done_at IS NULL"))
        if left == 0 and last > t_from:  # ran dry before the end: up to the last one
            window = last - t_from
            t_to = last
        q = quantiles(log_latencies(os.path.join(work, "work"), t_from, t_to),
                      [0.5, 0.99, 0.999])
    else:
        count, _, q = table_stats(pg, t_from, t_to, "done_at")
    res.update({
        "jobs_s": "%.1f" % (count / window if window > 0 else 0),
        "p50_ms": "%.3f" % q[0], "p99_ms": "%.3f" % q[1], "p999_ms": "%.3f" % q[2],
        "count": str(count), "errors": "0", "window_s": "%.3f" % window,
        "prefill_s": "%.3f" % prefill_s, "prefilled": str(prefilled), "backlog": str(backlog),
    })
    cpu = float(res.get("cpu_pct", "nan"))
    if count and not math.isnan(cpu):
        res["cpu_us_per_job"] = "%.1f" % (cpu / 100 * window * 1e6 / count)
    if failed:
        res["failed"] = "1"
    return res
