#!/usr/bin/env bash
# Draw the benchmark's chart: jobs/s (top) and p99 latency (bottom, log scale) per scenario
# for jobq and the peers, from the medians bench/bench.py wrote.
#   bash bench/chart.sh [RESULTS_DIR]     (default build-bench/results) -> RESULTS_DIR/chart.png
# Needs gnuplot (Debian: gnuplot-nox; bench/run.sh installs it).
set -euo pipefail
dir=${1:-build-bench/results}
jobs=$dir/chart_jobs.tsv
p99=$dir/chart_p99.tsv
for f in "$jobs" "$p99"; do
    if [ ! -s "$f" ]; then
        echo "chart.sh: $f missing: run bench/run.sh first" >&2
        exit 1
    fi
done
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "chart.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2
    exit 1
fi
ncols=$(head -n 1 "$jobs" | awk -F'\t' '{print NF}')
# One colour per system, whatever columns the run has: jobq blues (on PostgreSQL purples, darker
# with more processes), beanstalkd reds, PostgreSQL greens (dark: durable setting, light:
# relaxed).
colors=$(head -n 1 "$jobs" | tr '\t' '\n' | tail -n +2 | while read -r s; do
    case "$s" in
    jobq-full) echo "#08519c" ;;
    jobq-normal) echo "#6baed6" ;;
    jobq-pg-1) echo "#9e9ac8" ;;
    jobq-pg-2) echo "#6a51a3" ;;
    jobq-pg-3) echo "#3f007d" ;;
    beanstalkd-f0) echo "#a50f15" ;;
    beanstalkd-mem) echo "#fc9272" ;;
    pg-sync-on) echo "#006d2c" ;;
    pg-sync-off) echo "#74c476" ;;
    *@*) echo "#bdbdbd" ;; # a baseline build (bench/run.sh --baseline)
    *) echo "#777777" ;;
    esac
done | tr '\n' ' ')
title=$(grep -E '^date' "$dir/meta.tsv" 2>/dev/null | cut -f2 || true)
runs=$(grep -E '^runs' "$dir/meta.tsv" 2>/dev/null | cut -f2 || true)

gnuplot <<GP
set terminal pngcairo size 1400,1000 font "DejaVu Sans,11" noenhanced
set output "$dir/chart.png"
set datafile separator "\t"
set datafile missing "-"
colors = "$colors"
set key outside right top vertical
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set xtics nomirror
set multiplot layout 2,1 title "jobq vs beanstalkd and PostgreSQL SKIP LOCKED, $title (medians of $runs run(s))"
set title "throughput (jobs/s, log scale, higher is better)"
set ylabel "jobs/s"
set logscale y
set format y "%.0f"
set yrange [100:*]
plot for [c=2:$ncols] "$jobs" using c:xtic(1) title columnheader(c) lc rgb word(colors, c-1)
set title "p99 latency (ms, log scale, lower is better): drain = claim->complete, lifecycle and batch = enqueue->complete, longpoll = enqueue->claim answer"
set ylabel "ms"
set yrange [*:*]
set format y "%g"
plot for [c=2:$ncols] "$p99" using c:xtic(1) title columnheader(c) lc rgb word(colors, c-1)
unset multiplot
GP
echo "chart.sh: wrote $dir/chart.png"
