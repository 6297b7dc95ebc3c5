#!/usr/bin/env bash
# Install dependencies, build, and run jobqd on 127.0.0.1:8080 with its database in ./data/.
# Extra arguments are passed to jobqd (e.g. --log-level debug).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/deps.sh
bash scripts/build.sh build
mkdir -p data
exec build/jobqd --listen 127.0.0.1:8080 --db ./data/jobq.db "$@"
