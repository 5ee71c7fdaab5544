#!/usr/bin/env bash
# Issue 7's ranking check: on this machine, a small GPT (examples/models/gpt-small-h256.json) on 2
# CPU ranks under DP 2, TP 2 and PP 2 (global batch 4, micro-batch 1). The planner predicts each
# step time from a block table `autopar profile` measures here (the closed form of `estimate
# --closed-form --profile`); `autopar run` measures each plan. Prints predicted and measured
# medians and both rankings.
# Usage: bench/runtime_ranking.sh [BUILD_DIR] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
repeats=${2:-3}
autopar=$build/autopar
model=examples/models/gpt-small-h256.json
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$autopar" profile --model "$model" --cluster cpu-host --tp 1,2 --mbs 1 --out "$work/profile.json" \
  | grep -v '^rank'

declare -A shape=([dp2]="--tp 1 --pp 1 --dp 2" [tp2]="--tp 2 --pp 1 --dp 1" [pp2]="--tp 1 --pp 2 --dp 1")
declare -A planArgs=([dp2]="--micro-batches 2" [tp2]="--tp 2 --micro-batches 4"
                     [pp2]="--pipeline-stages 2 --micro-batches 4")
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

printf '%-5s %14s %14s\n' plan "predicted ms" "measured ms"
for plan in dp2 tp2 pp2; do
  # shellcheck disable=SC2086
  predicted=$("$autopar" estimate --model "$model" --cluster cpu-host ${shape[$plan]} --mbs 1 \
                --gbs 4 --closed-form --profile "$work/profile.json" \
              | awk '/^closed form/ {v=$4; if ($5=="s") v*=1000; print v}')
  # shellcheck disable=SC2086
  "$autopar" plan --model "$model" --cluster cpu-host --devices 2 ${planArgs[$plan]} \
    --out "$work/$plan.json" >/dev/null
  runs=()
  for ((r = 0; r < repeats; r++)); do
    # Steps 1-5 of 6 (step 0 warms up), rank 0's time; the median of each run.
    runs+=("$("$autopar" run --plan "$work/$plan.json" --ranks 2 --steps 6 \
               | awk '/^rank 0 step [1-9]/ {print $8}' | median)")
  done
  measured=$(printf '%s\n' "${runs[@]}" | median)
  printf '%-5s %14.1f %14.1f   (runs: %s)\n' "$plan" "$predicted" "$measured" "${runs[*]}"
  echo "$plan $predicted $measured" >>"$work/table"
done
echo "predicted ranking: $(sort -k2 -g "$work/table" | awk '{printf "%s ", $1}')"
echo "measured ranking:  $(sort -k3 -g "$work/table" | awk '{printf "%s ", $1}')"
