#!/usr/bin/env bash
# Install what jobq needs to build, run and test, on Debian 12 as root (or with sudo).
# Only what is missing is installed; `apt-get update` runs only when something is.
# Then the pinned OpenAPI linter (tests/openapi) and the dashboard test's browser driver
# (tests/ui) are installed with `npm ci` if absent.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export DEBIAN_FRONTEND=noninteractive

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO=(sudo -n)
    fi
fi

installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

# openssl: the CLI that tests/blackbox/test_tls.py makes its throwaway certificates with.
# clang, libclang-rt-dev (libFuzzer's runtime): the fuzz targets (tests/fuzz/run.sh).
# libpq-dev: the PostgreSQL backend's client library. postgresql: the server (initdb, pg_ctl)
# and client (psql) programs of the throwaway test cluster (scripts/pg_cluster.sh); the
# package's system cluster is never used. jq (with curl): the shell client in examples/shell,
# which tests/blackbox/test_examples.py runs, as it runs examples/node with the node below.
# chromium: the headless browser that tests/blackbox/test_ui.py drives the dashboard in
# (through playwright-core, below).
# libssl-dev: webhook signatures and https deliveries (server/whsign.c, api/whpost.c).
# libcurl4-openssl-dev: the HTTP client library of the `jobq` command-line client (cli/).
# prometheus: for its promtool, which checks /metrics (tests/blackbox/test_metrics.py) and
# the example alert rules (docs/alerts.yml, ctest static.alerts); its service is never used.
# faketime (libfaketime): tests/blackbox/test_clock_skew.py runs jobqd with a clock that lags.
# tzdata: /usr/share/zoneinfo, the time zones of schedules (server/zoneinfo.h); the unit tests
# of server/domain/tz.c and cron.c read it and fail without it.
# python3-boto3, awscli: real SQS clients of the query protocol, which
# tests/blackbox/test_sqs.py drives the SQS listener with (boto3 through /usr/bin/python3).
packages=(build-essential cmake pkg-config libmicrohttpd-dev libsqlite3-dev libcjson-dev curl libssl-dev
          python3 clang-format openssl clang libclang-rt-dev libpq-dev postgresql jq chromium
          libcurl4-openssl-dev prometheus faketime tzdata python3-boto3 awscli)
missing=()
for p in "${packages[@]}"; do
    installed "$p" || missing+=("$p")
done
# Node may come from another repository (e.g. nodesource, whose nodejs bundles npm): any
# node and npm on PATH will do.
if ! command -v node >/dev/null 2>&1; then
    installed nodejs || missing+=(nodejs)
fi
if ! command -v npm >/dev/null 2>&1; then
    installed npm || missing+=(npm)
fi

if [ "${#missing[@]}" -gt 0 ]; then
    echo "deps: installing ${missing[*]}"
    "${SUDO[@]}" apt-get update -q
    "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
else
    echo "deps: system packages present"
fi

if [ ! -x tests/openapi/node_modules/.bin/redocly ]; then
    echo "deps: installing the pinned OpenAPI linter (npm ci in tests/openapi)"
    (cd tests/openapi && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
fi
# The dashboard test's browser driver; --ignore-scripts: it never downloads a browser of its
# own, the test runs Debian's chromium.
if [ ! -f tests/ui/node_modules/playwright-core/package.json ]; then
    echo "deps: installing the pinned browser driver (npm ci in tests/ui)"
    (cd tests/ui && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
fi
# The SQS front end's test drives it with the AWS SDK for JavaScript and sqs-consumer,
# unchanged (tests/blackbox/test_sqs.py runs tests/sqs/sqs.mjs).
if [ ! -f tests/sqs/node_modules/@aws-sdk/client-sqs/package.json ] ||
    [ ! -f tests/sqs/node_modules/sqs-consumer/package.json ]; then
    echo "deps: installing the pinned AWS SDK and sqs-consumer (npm ci in tests/sqs)"
    (cd tests/sqs && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
fi
# The webhook test verifies every delivery with the Standard Webhooks reference verifier
# (tests/blackbox/test_webhooks.py runs tests/webhooks/receiver.mjs).
if [ ! -f tests/webhooks/node_modules/standardwebhooks/package.json ]; then
    echo "deps: installing the pinned standardwebhooks verifier (npm ci in tests/webhooks)"
    (cd tests/webhooks && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
fi
