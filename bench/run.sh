#!/usr/bin/env bash
# The jobq benchmark, in one command:
#   bash bench/run.sh              every scenario, jobq (SQLite --sync full, normal; PostgreSQL
#                                  with 1, 2, 3 jobqd processes) and the peers, 10 s per
#                                  scenario, one run (about 15 minutes)
#   bash bench/run.sh --runs 3     the same three times, medians (what BENCHMARKS.md shows)
#   bash bench/run.sh --quick      2 s per scenario, a smaller history table (development)
#   bash bench/run.sh --help       every option (bench/bench.py)
#   bash bench/run.sh --baseline f37c957 --systems jobq-full --scenarios lifecycle --runs 3
#                                  the same systems on the jobqd of another commit too, in the
#                                  same run: jobq-full and jobq-full@f37c957 take turns, and the
#                                  table gains `x f37c957` (current / baseline jobs/s). REV is
#                                  any commit (repeat --baseline, or commas, for several); its
#                                  tree is taken with `git archive` and built once in
#                                  build-bench/baseline-SHA/ (Release), reused afterwards.
# Installs from Debian what is missing (beanstalkd, postgresql, gnuplot, the build tools),
# builds jobqd and the load generator jobq-bench in build-bench/ (Release), runs everything,
# prints the table, and leaves raw.tsv, table.tsv, table.txt and chart.png in
# build-bench/results/ (or --out DIR).
#
# JOBQD=path and JOBQ_BENCH_BIN=path use binaries built elsewhere (the smoke test does), and
# then nothing is built; with --systems jobq nothing is installed either.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

for a in "$@"; do
    if [ "$a" = --help ] || [ "$a" = -h ]; then
        exec python3 bench/bench.py --help
    fi
done

want_peers=1
want_chart=1
out=build-bench/results
prev=
for a in "$@"; do
    case "$a" in
    --smoke | --no-chart) want_chart=0 ;;
    esac
    if [ "$prev" = --systems ]; then
        case ",$a," in
        *,beanstalkd* | *,pg-* | *,postgres* | *,jobq-pg*) ;;
        *) want_peers=0 ;;
        esac
    fi
    if [ "$prev" = --out ]; then
        out=$a
    fi
    case "$a" in
    --systems=*) case ",${a#--systems=}," in *,beanstalkd* | *,pg-* | *,postgres* | *,jobq-pg*) ;; *) want_peers=0 ;; esac ;;
    --out=*) out=${a#--out=} ;;
    --smoke) want_peers=0 ;;
    esac
    prev=$a
done
args=()
baselines=()
prev=
for a in "$@"; do
    if [ "$prev" = --baseline ]; then
        baselines+=("$a")
    elif [ "$a" != --no-chart ] && [ "$a" != --baseline ]; then
        case "$a" in
        --baseline=*) baselines+=("${a#--baseline=}") ;;
        *) args+=("$a") ;;
        esac
    fi
    prev=$a
done

installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

missing=()
need() { # need PACKAGE [COMMAND]: install PACKAGE unless COMMAND (or the package) is there
    if [ -n "${2:-}" ] && command -v "$2" >/dev/null 2>&1; then
        return
    fi
    installed "$1" || missing+=("$1")
}
need python3 python3
if [ -z "${JOBQD:-}" ] || [ -z "${JOBQ_BENCH_BIN:-}" ]; then
    for p in build-essential cmake pkg-config libmicrohttpd-dev libsqlite3-dev libcjson-dev \
        libpq-dev; do
        need "$p"
    done
fi
if [ "$want_peers" = 1 ]; then
    need beanstalkd beanstalkd
    # initdb, postgres and pgbench: Debian's postgresql-NN, which postgresql depends on
    if ! ls /usr/lib/postgresql/*/bin/pgbench >/dev/null 2>&1; then
        missing+=(postgresql)
    fi
fi
if [ "$want_chart" = 1 ]; then
    need gnuplot-nox gnuplot
fi
if [ "${#missing[@]}" -gt 0 ]; then
    echo "run.sh: installing ${missing[*]}"
    sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        sudo=(sudo -n)
    fi
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 update -q
    "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends \
        "${missing[@]}"
fi

jobqd=${JOBQD:-}
gen=${JOBQ_BENCH_BIN:-}
if [ -z "$jobqd" ]; then
    echo "run.sh: building jobqd (build-bench/jobq, Release)"
    cmake -S . -B build-bench/jobq -DCMAKE_BUILD_TYPE=Release -DJOBQ_BENCH=OFF -DJOBQ_CLI=OFF \
        >/dev/null
    cmake --build build-bench/jobq -j2 --target jobqd >/dev/null
    jobqd=build-bench/jobq/jobqd
fi
if [ -z "$gen" ]; then
    echo "run.sh: building jobq-bench (build-bench/gen, Release)"
    cmake -S bench -B build-bench/gen -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build build-bench/gen -j2 >/dev/null
    gen=build-bench/gen/jobq-bench
fi

# --baseline REV: jobqd at commit REV, built once in build-bench/baseline-SHA/ (REV=JOBQD: that
# binary, as bench.py takes it).
for spec in ${baselines[@]+"${baselines[@]}"}; do
    for rev in ${spec//,/ }; do
        if [ "${rev#*=}" != "$rev" ]; then
            args+=(--baseline "$rev")
            continue
        fi
        sha=$(git rev-parse --short=7 --verify -q "$rev^{commit}") || {
            echo "run.sh: --baseline $rev: no such commit" >&2
            exit 2
        }
        dir=build-bench/baseline-$sha
        if [ ! -x "$dir/build/jobqd" ]; then
            echo "run.sh: building jobqd at $sha ($dir, Release)"
            rm -rf "$dir"
            mkdir -p "$dir/src"
            git archive "$sha" | tar -x -C "$dir/src"
            cmake -S "$dir/src" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DJOBQ_BENCH=OFF \
                -DJOBQ_CLI=OFF >/dev/null
            cmake --build "$dir/build" -j2 --target jobqd >/dev/null
        fi
        args+=(--baseline "$sha=$dir/build/jobqd")
    done
done

rc=0
export PYTHONDONTWRITEBYTECODE=1
export JOBQ_BENCH_COMMAND="bash bench/run.sh $*"
python3 bench/bench.py --jobqd "$jobqd" --bench "$gen" "${args[@]}" || rc=$?
if [ "$want_chart" = 1 ] && [ -f "$out/chart_jobs.tsv" ]; then
    bash bench/chart.sh "$out" || rc=1
fi
exit "$rc"
