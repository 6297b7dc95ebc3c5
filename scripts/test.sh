#!/usr/bin/env bash
# Install dependencies, build, and run every test twice: a normal build (build/) and an
# AddressSanitizer + UndefinedBehaviorSanitizer build (build-asan/) whose findings fail the
# tests. Warnings are errors (JOBQ_WERROR=OFF in the environment turns that off).
# LeakSanitizer is on when the machine allows it; JOBQ_REQUIRE_LSAN=1 makes it an error when
# it does not. JOBQ_VALGRIND=1 also runs the black-box suite against build/jobqd under
# valgrind (slow; valgrind must be installed). Exits non-zero if anything failed.
# Both ctest runs test SQLite and PostgreSQL: a throwaway PostgreSQL cluster
# (scripts/pg_cluster.sh) runs in a temporary directory for the whole script and is stopped and
# removed when it ends, however it ends; its JOBQ_TEST_PG_* variables (JOBQ_TEST_PG_URL: its
# maintenance database, for the unit tests) and JOBQ_REQUIRE_PG=1 are exported, so that the
# pg black-box variants (blackbox.pg.*) run and fail rather than skip.
# Time (CONTRIBUTING.md, "The suite's time"): each ctest run runs JOBQ_TEST_JOBS tests at once
# (default: one more than the CPUs; tests that measure time or load are serialised in
# tests/CMakeLists.txt), the sanitizer and fuzz builds compile at nice 19 while the plain
# tests run, and the ten slowest tests of the run are printed at the end.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

werror=${JOBQ_WERROR:-ON}
jobs=${JOBQ_TEST_JOBS:-$(($(nproc) + 1))}
fuzz_seconds=${JOBQ_FUZZ_SECONDS:-60}
started=$(date +%s)
logs=$(mktemp -d)
pgdir=""
bg_pid=""
pg_cluster="$PWD/scripts/pg_cluster.sh"
cleanup() {
    if [ -n "$bg_pid" ]; then # the background builds (their own process group)
        kill -- "-$bg_pid" 2>/dev/null || true
        wait "$bg_pid" 2>/dev/null || true
    fi
    if [ -n "$pgdir" ]; then
        bash "$pg_cluster" stop "$pgdir" >/dev/null 2>&1 || echo "warning: $pgdir not removed"
    fi
    rm -rf "$logs"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

bash scripts/deps.sh

echo "== PostgreSQL test cluster"
pgdir=$(mktemp -d /tmp/jobq-pg.XXXXXX)
bash "$pg_cluster" start "$pgdir"
set -a
# shellcheck source=/dev/null
. "$pgdir/env"
set +a
export JOBQ_REQUIRE_PG=1

failed=0

echo "== build (build/)"
bash scripts/build.sh build -DJOBQ_WERROR="$werror" -DJOBQ_SANITIZE=OFF

# The sanitizer build and the fuzz targets compile while the plain tests run, at nice 19: the
# tests mostly wait, and a runnable test process always goes before a niced compiler, so
# their timings stay theirs. set -m: the builds get a process group of their own, which
# cleanup() ends when the script stops early.
echo "== build (build-asan/ and build-fuzz/, in the background at nice 19)"
set -m
(
    nice -n 19 bash scripts/build.sh build-asan -DJOBQ_WERROR="$werror" -DJOBQ_SANITIZE=ON &&
        if [ "$fuzz_seconds" -gt 0 ]; then
            nice -n 19 bash tests/fuzz/run.sh --build-only build-fuzz
        fi
) >"$logs/builds.log" 2>&1 &
bg_pid=$!
set +m

echo "== ctest (build/, $jobs at once)"
if ! (cd build && ctest --output-on-failure --no-tests=error -j "$jobs" 2>&1) \
        | tee "$logs/plain.log"; then
    failed=1
fi

# LeakSanitizer needs ptrace-like access to the process; some sandboxes forbid it. Probe once
# with a program that leaks: if the leak is reported, leaks fail the tests; if not, say so.
probe_dir=$(mktemp -d)
printf '#include <stdlib.h>\nvoid *volatile p;\nint main(void){p=malloc(64);p=0;return 0;}\n' \
    >"$probe_dir/leak.c"
detect_leaks=0
if cc -fsanitize=address -g "$probe_dir/leak.c" -o "$probe_dir/leak" 2>/dev/null; then
    # The probe exits non-zero when LSan reports: capture first, then look (pipefail).
    probe_out=$(ASAN_OPTIONS=detect_leaks=1 "$probe_dir/leak" 2>&1 || true)
    if grep -q 'detected memory leaks' <<<"$probe_out"; then
        detect_leaks=1
    fi
fi
rm -rf "$probe_dir"
if [ "$detect_leaks" -eq 0 ]; then
    echo "note: LeakSanitizer cannot run here (ptrace restricted?): detect_leaks=0"
    if [ "${JOBQ_REQUIRE_LSAN:-0}" = 1 ]; then
        echo "JOBQ_REQUIRE_LSAN=1 but LeakSanitizer does not work here"
        exit 1
    fi
else
    # jobqd inherits ASAN_OPTIONS: a leak makes it exit with LSAN_OPTIONS' exitcode (23) after
    # SIGTERM, and the black-box harness fails any test whose server does not exit 0.
    echo "note: LeakSanitizer is on (detect_leaks=1)"
fi
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:detect_leaks=$detect_leaks:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export LSAN_OPTIONS="exitcode=23"

echo "== build (build-asan/, address + undefined sanitizers; build-fuzz/): waiting for it"
bg_status=0
wait "$bg_pid" || bg_status=$?
bg_pid=""
if [ "$bg_status" -ne 0 ]; then
    tail -n 60 "$logs/builds.log"
    echo "the background builds failed (exit $bg_status)"
    exit 1
fi
echo "== ctest (build-asan/, $jobs at once; format and openapi checks ran above)"
if ! (cd build-asan && ctest --output-on-failure --no-tests=error -LE static -j "$jobs" 2>&1) \
        | tee "$logs/asan.log"; then
    failed=1
fi

runs="plain asan"
if [ "${JOBQ_VALGRIND:-0}" = 1 ]; then
    echo "== black-box suite under valgrind (build/jobqd)"
    runs="$runs valgrind"
    vg="valgrind --leak-check=full --errors-for-leak-kinds=definite,possible --error-exitcode=99"
    vg="$vg --exit-on-first-error=yes" # an invalid access ends jobqd at once: its test fails
    if ! command -v valgrind >/dev/null 2>&1; then
        echo "JOBQ_VALGRIND=1 but valgrind is not installed" | tee "$logs/valgrind.log"
        failed=1
    elif ! (export JOBQD="$PWD/build/jobqd" PYTHONDONTWRITEBYTECODE=1 JOBQD_WRAPPER="$vg" &&
            cd tests/blackbox && python3 -m unittest discover -s . -p 'test_*.py' 2>&1) \
            | tee "$logs/valgrind.log"; then
        failed=1
    fi
fi

# libFuzzer (clang): build the fuzz targets and fuzz for JOBQ_FUZZ_SECONDS (default 60, 0
# skips); the corpus replays already ran in both ctest runs (fuzz.replay.*).
if [ "$fuzz_seconds" -gt 0 ]; then
    echo "== fuzz (build-fuzz/, clang, ${fuzz_seconds}s)"
    runs="$runs fuzz"
    if ! bash tests/fuzz/run.sh "$fuzz_seconds" build-fuzz 2>&1 | tee "$logs/fuzz.log"; then
        failed=1
    fi
fi

# ctest's own time of each test, from both runs' lines "Test #N: NAME ...  Passed  1.23 sec".
echo "== the ten slowest tests (CONTRIBUTING.md: the suite's time)"
for run in plain asan; do
    awk -v run="$run" '/ Test +#[0-9]+: / && $NF == "sec" {
        for (i = 1; i <= NF; i++) if ($i ~ /^#[0-9]+:$/) { print $(NF - 1), run, $(i + 1); break }
    }' "$logs/$run.log"
done | sort -rn | awk 'NR <= 10 { printf "%9.1f s  %-5s  %s\n", $1, $2, $3 }'
echo "whole run: $(($(date +%s) - started)) s (budget: 1800 s on a clean 2-core machine)"

echo "== summary"
for run in $runs; do
    line=$(grep -E 'tests passed, [0-9]+ tests failed out of|^(OK|FAILED)' "$logs/$run.log" \
        | tail -n 1 || true)
    echo "$run: ${line:-no test summary}"
done
if [ "$failed" -ne 0 ]; then
    echo "== PostgreSQL test cluster log (last 20 lines)"
    tail -n 20 "$pgdir/postgres.log" 2>/dev/null || true
    echo "FAILED"
    exit 1
fi
echo "all tests passed"
