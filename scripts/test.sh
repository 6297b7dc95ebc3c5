#!/usr/bin/env bash
# Install dependencies, build, and run every test twice: a normal build (build/) and an
# AddressSanitizer + UndefinedBehaviorSanitizer build (build-asan/) whose findings fail the
# tests. Warnings are errors (JOBQ_WERROR=OFF in the environment turns that off).
# Exits non-zero if anything failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

werror=${JOBQ_WERROR:-ON}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

bash scripts/deps.sh

failed=0

echo "== build (build/)"
bash scripts/build.sh build -DJOBQ_WERROR="$werror" -DJOBQ_SANITIZE=OFF
echo "== ctest (build/)"
if ! (cd build && ctest --output-on-failure --no-tests=error 2>&1) | tee "$logs/plain.log"; then
    failed=1
fi

# LeakSanitizer needs ptrace-like access to the process; some sandboxes forbid it. Probe once
# with a program that leaks: if the leak is reported, leaks fail the tests; if not, say so.
probe_dir=$(mktemp -d)
printf '#include <stdlib.h>\nvoid *volatile p;\nint main(void){p=malloc(64);p=0;return 0;}\n' \
    >"$probe_dir/leak.c"
detect_leaks=0
if cc -fsanitize=address -g "$probe_dir/leak.c" -o "$probe_dir/leak" 2>/dev/null; then
    if ASAN_OPTIONS=detect_leaks=1 "$probe_dir/leak" 2>&1 | grep -q 'detected memory leaks'; then
        detect_leaks=1
    fi
fi
rm -rf "$probe_dir"
if [ "$detect_leaks" -eq 0 ]; then
    echo "note: LeakSanitizer cannot run here (ptrace restricted?): detect_leaks=0"
fi
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:detect_leaks=$detect_leaks:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export LSAN_OPTIONS="exitcode=23"

echo "== build (build-asan/, address + undefined sanitizers)"
bash scripts/build.sh build-asan -DJOBQ_WERROR="$werror" -DJOBQ_SANITIZE=ON
echo "== ctest (build-asan/; format and openapi checks ran above)"
if ! (cd build-asan && ctest --output-on-failure --no-tests=error -LE static 2>&1) \
        | tee "$logs/asan.log"; then
    failed=1
fi

echo "== summary"
for run in plain asan; do
    line=$(grep -E 'tests passed, [0-9]+ tests failed out of' "$logs/$run.log" | tail -n 1 || true)
    echo "$run: ${line:-no ctest summary}"
done
if [ "$failed" -ne 0 ]; then
    echo "FAILED"
    exit 1
fi
echo "all tests passed"
