#!/usr/bin/env bash
# ctest openapi.lint: the pinned @redocly/cli (package-lock.json) lints openapi.yaml.
# Install it with scripts/deps.sh (npm ci in tests/openapi).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
spec=${1:-$here/../../openapi.yaml}
redocly=$here/node_modules/.bin/redocly
if [ ! -x "$redocly" ]; then
    echo "openapi.lint: $redocly is missing: run scripts/deps.sh (npm ci in tests/openapi)" >&2
    exit 1
fi
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true NO_COLOR=1
exec "$redocly" lint --config "$here/redocly.yaml" --format stylish "$spec"
