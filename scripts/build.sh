#!/usr/bin/env bash
# Configure and build jobq: scripts/build.sh [DIR] [cmake args...]
# DIR defaults to build/. Extra arguments go to cmake's configure step, e.g.
#   scripts/build.sh build-asan -DJOBQ_SANITIZE=ON
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

dir=build
if [ "$#" -gt 0 ]; then
    dir=$1
    shift
fi

cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}" "$@"
cmake --build "$dir" -j"$(nproc)"
