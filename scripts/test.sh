#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (packages), builds everything, and runs every test with CTest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
cd "$root/build/release"
ctest --output-on-failure -j"$(nproc)"
