#!/usr/bin/env bash
# The quality figure of the fast searches: the estimated step time of the plans sharding
# propagation and the recursive search choose, over the plan of the exact ILP search:
#   - a transformer block (bench/llama_block.yaml, no annotations) at 4, 8 and 16 devices;
#   - seed 002's MLP (no annotations) at 4, 8 and 16 devices, and its FFN (two annotations, for
#     8 devices) at 8.
# The recursive search runs at the default mem_coeff (0.1) and, in the last columns, with
# --mem-coeff fastest: the fastest plan that fits among seed 000's ladder (0.1 x 4^k), the rung a
# user tuning mem_coeff for speed would keep.
# Usage: bench/search_quality.sh [AUTOPAR_BINARY]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
autopar=${1:-$root/build/release/autopar}
step() {  # devices model-args... -> step time in ms
  local devices=$1
  shift
  local nodes=$((devices > 8 ? 2 : 1))
  "$autopar" plan "$@" --nodes "$nodes" --devices "$devices" --json |
    python3 -c 'import json, sys; print("%.4f" % (json.load(sys.stdin)["estimate"]["step_time_s"] * 1000))'
}
ratio() { awk "BEGIN {printf \"%.3f\", $1 / $2}"; }
fastest_coeff() {  # devices model-args... -> the mem_coeff --mem-coeff fastest chose
  local devices=$1
  shift
  local nodes=$((devices > 8 ? 2 : 1))
  "$autopar" plan "$@" --nodes "$nodes" --devices "$devices" --search recursive_programming \
    --mem-coeff fastest | sed -n 's/^mem_coeff fastest: \([0-9.]*\).*/\1/p'
}
row() {  # name devices model-args...
  local name=$1 devices=$2
  shift 2
  local ilp propagation recursive best best_coeff
  ilp=$(step "$devices" "$@" --search ilp)
  propagation=$(step "$devices" "$@" --search sharding_propagation)
  recursive=$(step "$devices" "$@" --search recursive_programming)
  best=$(step "$devices" "$@" --search recursive_programming --mem-coeff fastest)
  best_coeff=$(fastest_coeff "$devices" "$@")
  printf '%-7s %-8s %10s %12s %10s %9s %9s %10s %9s\n' "$name" "$devices" "$ilp" "$propagation" \
    "$recursive" "$(ratio "$propagation" "$ilp")" "$(ratio "$recursive" "$ilp")" "$best_coeff" \
    "$(ratio "$best" "$ilp")"
}
printf '%-7s %-8s %10s %12s %10s %9s %9s %10s %9s\n' model devices ilp_ms propagation recursive \
  prop/ilp rec/ilp fastest fastest/ilp
for devices in 4 8 16; do
  row block "$devices" --config "$root/bench/llama_block.yaml"
done
for devices in 4 8 16; do
  row mlp "$devices" --model "$root/examples/graphs/mlp.json"
done
row ffn 8 --model "$root/examples/graphs/ffn.json"
