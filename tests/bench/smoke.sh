#!/usr/bin/env bash
# Run bench/run.sh --smoke (jobq --sync normal, every scenario, 0.3 s each, a tiny history
# table) against $JOBQD with $JOBQ_BENCH_BIN, then check its results: a table row per scenario
# with numbers, throughput above zero where throughput is measured, latencies where they are,
# no failed scenario. Timings are never compared with anything.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
: "${JOBQD:?set JOBQD to the jobqd binary}"
: "${JOBQ_BENCH_BIN:?set JOBQ_BENCH_BIN to the jobq-bench binary}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

if ! bash "$root/bench/run.sh" --smoke --out "$out" >"$out/run.log" 2>&1; then
    cat "$out/run.log"
    echo "FAIL: bench/run.sh --smoke exited non-zero"
    exit 1
fi
cat "$out/run.log"

python3 - "$out" <<'PY'
import math, os, sys

out = sys.argv[1]
scenarios = ["enqueue", "drain", "lifecycle", "lifecycle-paced", "batch", "claim-empty",
             "claim-history", "longpoll", "hol-unlimited", "hol"]
problems = []
with open(os.path.join(out, "table.tsv")) as f:
    header = f.readline().rstrip("\n").split("\t")
    rows = [dict(zip(header, line.rstrip("\n").split("\t"))) for line in f if line.strip()]
seen = {r["scenario"]: r for r in rows if r["system"] == "jobq-normal"}


def number(r, k):
    try:
        v = float(r.get(k, ""))
    except ValueError:
        return math.nan
    return v


for s in scenarios:
    r = seen.get(s)
    if r is None:
        problems.append("no row for scenario %s" % s)
        continue
    if r.get("failed") not in ("0", ""):
        problems.append("%s: %s failed run(s)" % (s, r["failed"]))
    count = number(r, "count")
    if not count > 0:
        problems.append("%s: count %r is not above zero" % (s, r.get("count")))
    for k in ("jobs_s", "p50_ms", "p99_ms"):
        v = number(r, k)
        if math.isnan(v) or v <= 0:
            problems.append("%s: %s %r is not a number above zero" % (s, k, r.get(k)))
    if number(r, "p99_ms") < number(r, "p50_ms"):
        problems.append("%s: p99 below p50" % s)
    if s == "lifecycle" and not number(r, "rss_peak_mb") > 0:
        problems.append("lifecycle: no server memory measured")
    if s == "lifecycle" and math.isnan(number(r, "cpu_pct")):
        problems.append("lifecycle: no server CPU measured")
    if s.startswith("hol") and not number(r, "first_claim_ms") > 0:
        problems.append("%s: no first_claim_ms" % s)
    if s == "claim-history" and not number(r, "history_jobs") >= 2200:
        problems.append("claim-history: history table has %r jobs, want 2200"
                        % r.get("history_jobs"))
with open(os.path.join(out, "table.txt")) as f:
    text = f.read()
for s in scenarios:
    if not any(line.startswith(s + " ") for line in text.splitlines()):
        problems.append("printed table has no line for %s" % s)
for name in ("raw.tsv", "chart_jobs.tsv", "chart_p99.tsv"):
    if not os.path.getsize(os.path.join(out, name)):
        problems.append("%s is empty" % name)
if problems:
    print("FAIL:\n  " + "\n  ".join(problems))
    sys.exit(1)
print("bench smoke: %d scenarios, table well-formed" % len(scenarios))
PY
