#!/usr/bin/env bash
# The tree is the architecture (server/store/store.h is the seam): no SQLite symbol outside
# server/store/sqlite/, no libpq symbol outside server/store/pg/, and no backend header
# included by api/, main.c or the domain code in server/ (store.c alone opens the backends
# through their *_open.h). Prints each offending line; exits non-zero when there is one.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

bad=0
report() { # $1: what is wrong; stdin: grep -n output
    local lines
    lines=$(cat)
    if [ -n "$lines" ]; then
        echo "layers: $1:"
        echo "$lines" | sed 's/^/  /'
        bad=1
    fi
}

code=$(find api server main.c -type f \( -name '*.c' -o -name '*.h' \) | sort)
outside() { echo "$code" | grep -v "^server/store/$1/" || true; }

# report runs in this shell (not a pipeline's subshell), so that it can set bad.
report "SQLite outside server/store/sqlite/" < <(outside sqlite |
    xargs grep -nE '\bsqlite3(_[a-z_]+)?\b|<sqlite3\.h>|SQLITE_[A-Z]' /dev/null)
report "libpq outside server/store/pg/" < <(outside pg |
    xargs grep -nE '\bPQ[a-z]+\(|\bPG(conn|result|notify)\b|libpq-fe\.h|CONNECTION_(OK|BAD)' /dev/null)
report "a backend header outside server/store/" < <(echo "$code" | grep -v '^server/store/' |
    xargs grep -nE '#include "(sqlite|pg)_' /dev/null)
report "the seam includes a backend's private header" < <(echo "$code" |
    grep '^server/store/[^/]*$' | xargs grep -nE '#include "(sqlite|pg)_' /dev/null |
    grep -vE '"(sqlite|pg)_open\.h"')

if [ "$bad" -eq 0 ]; then
    echo "layers: ok ($(echo "$code" | wc -l) files)"
fi
exit "$bad"
