#!/usr/bin/env bash
# The quality figure of the fast searches: the estimated step time of the plans sharding
# propagation and the recursive search choose for a transformer block, over the plan of the exact
# ILP search, at 4, 8 and 16 devices (no annotations).
# Usage: bench/search_quality.sh [AUTOPAR_BINARY]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
autopar=${1:-$root/build/release/autopar}
step() {  # devices search -> step time in ms
  local nodes=$(($1 > 8 ? 2 : 1))
  "$autopar" plan --config "$root/bench/llama_block.yaml" --nodes "$nodes" --devices "$1" \
    --search "$2" --json |
    python3 -c 'import json, sys; print("%.3f" % (json.load(sys.stdin)["estimate"]["step_time_s"] * 1000))'
}
printf '%-8s %12s %12s %12s %10s %10s\n' devices ilp_ms propagation recursive prop/ilp rec/ilp
for devices in 4 8 16; do
  ilp=$(step "$devices" ilp)
  propagation=$(step "$devices" sharding_propagation)
  recursive=$(step "$devices" recursive_programming)
  printf '%-8s %12s %12s %12s %10s %10s\n' "$devices" "$ilp" "$propagation" "$recursive" \
    "$(awk "BEGIN {printf \"%.3f\", $propagation / $ilp}")" \
    "$(awk "BEGIN {printf \"%.3f\", $recursive / $ilp}")"
done
