#!/usr/bin/env bash
# Build the libFuzzer targets with clang and fuzz for SECONDS in all (default 60), split
# between fuzz_http (raw HTTP into the in-process server), fuzz_parse (router, JSON and
# field readers) and fuzz_zone (TZif files, POSIX TZ rules, cron expressions):
#   tests/fuzz/run.sh [SECONDS] [BUILD_DIR]      e.g. tests/fuzz/run.sh 3600 for an hour
#   tests/fuzz/run.sh --build-only [BUILD_DIR]    build the targets, fuzz nothing (a later run
#                                                 finds them built: scripts/test.sh builds
#                                                 them while the tests run)
# BUILD_DIR defaults to build-fuzz/. The seed corpus tests/fuzz/corpus/<target>/ is read,
# never written: new inputs go to BUILD_DIR/fuzz-corpus/<target>/ (kept between runs, so a
# longer run starts where the last stopped). A crash or failed invariant stops the run, leaves
# the input in BUILD_DIR/fuzz-artifacts/<target>/ and exits 1. Keep it as a regression test:
#   cp BUILD_DIR/fuzz-artifacts/http/crash-... tests/fuzz/corpus/http/   (then fix the bug;
#   ctest -R fuzz.replay runs the corpus in every build, gcc included)
# Sanitizer options come from ASAN_OPTIONS/UBSAN_OPTIONS when set (scripts/test.sh sets them).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

build_only=0
if [ "${1:-}" = --build-only ]; then
    build_only=1
    shift
    set -- 60 "$@"
fi
seconds=${1:-60}
dir=${2:-build-fuzz}
cc=${FUZZ_CC:-clang}
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 2 ]; then
    echo "usage: tests/fuzz/run.sh [SECONDS >= 2 | --build-only] [BUILD_DIR]" >&2
    exit 2
fi
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "fuzz: $cc not found: run scripts/deps.sh" >&2
    exit 1
fi

echo "== fuzz: build ($dir/, $cc, -fsanitize=fuzzer,address,undefined)"
cmake -S . -B "$dir" -DCMAKE_C_COMPILER="$cc" -DJOBQ_FUZZ=ON -DJOBQ_SANITIZE=OFF \
    -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}" >/dev/null
cmake --build "$dir" -j"$(nproc)" --target fuzz_http fuzz_parse fuzz_zone fuzz_sqs
if [ "$build_only" -eq 1 ]; then
    exit 0
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# fuzz_http runs far fewer inputs a second (a connection each): it gets the larger share.
http_seconds=$((seconds * 3 / 5))
zone_seconds=$((seconds / 10))
sqs_seconds=$((seconds / 10))
parse_seconds=$((seconds - http_seconds - zone_seconds - sqs_seconds))
failed=0
for target in http parse zone sqs; do
    t=$parse_seconds
    max_len=8192
    if [ "$target" = http ]; then
        t=$http_seconds
        max_len=16384
    elif [ "$target" = zone ]; then
        t=$zone_seconds
    elif [ "$target" = sqs ]; then
        t=$sqs_seconds
    fi
    if [ "$t" -lt 1 ]; then
        continue
    fi
    work="$dir/fuzz-corpus/$target"
    art="$dir/fuzz-artifacts/$target"
    scratch=$(mktemp -d)
    mkdir -p "$work" "$art"
    echo "== fuzz: fuzz_$target for ${t}s"
    # -timeout: one input hanging this long is a failure. TMPDIR: fuzz_http's database.
    log="$dir/fuzz-$target.log"
    if ! TMPDIR="$scratch" "$dir/tests/fuzz/fuzz_$target" -max_total_time="$t" -timeout=25 \
            -max_len="$max_len" -dict=tests/fuzz/jobq.dict -artifact_prefix="$art/" \
            -print_final_stats=1 "$work" "tests/fuzz/corpus/$target" >"$log" 2>&1; then
        failed=1
        tail -n 60 "$log"
        echo "fuzz: fuzz_$target FAILED; the input is in $art/ (log: $log)"
    else
        grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' "$log" || true
    fi
    rm -rf "$scratch"
done
# The last line is the summary scripts/test.sh shows.
if [ "$failed" -ne 0 ]; then
    echo "FAILED (fuzzing found a crash or a broken invariant)"
    exit 1
fi
echo "OK (fuzzed ${seconds}s: no crash, no broken invariant)"
