#!/usr/bin/env bash
# Solves the IOPDDL contest instances in shared/data/iopddl under their contest timeouts and
# prints, per instance, the cost, the ratio to the best known cost, whether the solution is
# feasible (checked by `autopar iopddl --evaluate`), the lower bound the solver proved (CBC's or
# the Lagrangian search's), the wall time and the peak RSS.
# Usage: bench/iopddl_contest.sh [AUTOPAR_BINARY] [INSTANCES...]   (default: A G M S)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
autopar=${1:-$root/build/release/autopar}
shift || true
data="$root/../shared/data/iopddl"
instances=("${@:-A G M S}")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
printf '%-9s %16s %16s %7s %9s %16s %8s %10s\n' instance cost best ratio feasible bound wall_s \
  rss_MiB
for name in ${instances[*]}; do
  file="$data/asplos-2025-iopddl-$name.json.gz"
  read -r best timeout < <(python3 -c "import json,sys; d=json.load(open('$data/best_costs.json'))['instances']['$name']; print(d['best_known_cost'], d['timeout_s'])")
  /usr/bin/time -f '%e %M' -o "$scratch/time" "$autopar" iopddl "$file" "$timeout" \
    >"$scratch/solution" 2>"$scratch/log" || true
  if "$autopar" iopddl --evaluate "$file" "$scratch/solution" >"$scratch/eval" 2>&1; then
    feasible=yes
  else
    feasible=no
  fi
  cost=$(awk '/^cost/ {print $2}' "$scratch/eval")
  read -r wall rss <"$scratch/time"
  ratio=$(python3 -c "print(f'{${cost:-0}/$best:.4f}')")
  if grep -q '(optimal)' "$scratch/log"; then
    bound=$cost
  else
    bound=$(grep -o 'lower bound [0-9]*' "$scratch/log" | awk '{print $3}' | tail -1)
  fi
  printf '%-9s %16s %16s %7s %9s %16s %8s %10s\n' "$name" "${cost:-none}" "$best" "$ratio" \
    "$feasible" "${bound:-none}" "$wall" "$((rss / 1024))"
done
