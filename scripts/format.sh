#!/usr/bin/env bash
# Check (default) or fix the C formatting of every .c/.h under server/ api/ cli/ tests/ and main.c,
# with the repository's .clang-format.
#   scripts/format.sh          check: clang-format --dry-run --Werror, non-zero on any difference
#   scripts/format.sh --fix    rewrite the files in place (clang-format -i)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mode=check
if [ "${1:-}" = "--fix" ]; then
    mode=fix
fi
clang_format=${CLANG_FORMAT:-clang-format}
if ! command -v "$clang_format" >/dev/null 2>&1; then
    echo "format: $clang_format not found: run scripts/deps.sh" >&2
    exit 1
fi

files=()
while IFS= read -r -d '' f; do
    files+=("$f")
done < <(find server api cli tests -type f \( -name '*.c' -o -name '*.h' \) \
             -not -path '*/node_modules/*' -print0 2>/dev/null | sort -z)
if [ -f main.c ]; then
    files+=(main.c)
fi
if [ "${#files[@]}" -eq 0 ]; then
    echo "format: no C files found" >&2
    exit 1
fi

if [ "$mode" = fix ]; then
    "$clang_format" -i "${files[@]}"
    echo "format: formatted ${#files[@]} files"
else
    "$clang_format" --dry-run --Werror "${files[@]}"
    echo "format: ${#files[@]} files clean"
fi
