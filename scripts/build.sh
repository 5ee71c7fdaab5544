#!/usr/bin/env bash
# Configures and builds autopar (Release, Ninja) in build/release. Extra arguments go to
# `cmake --build`, e.g. `scripts/build.sh --target autopar`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build/release"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" -j"$(nproc)" "$@"
