#!/usr/bin/env bash
# Builds the parsers' libFuzzer targets (clang, ASan + UBSan) in build/fuzz and runs each for
# SECONDS_PER_TARGET (default 10) over its seed corpus: the repository's examples that
# fuzz/seeds.txt lists, the inputs in fuzz/regressions/TARGET that once failed, and what earlier
# runs added to build/fuzz/corpus/TARGET. Fails when any target crashes, hangs (> 10 s on one
# input), leaks, trips a sanitizer or a check of its own; the input is saved as
# build/fuzz/artifacts/TARGET-crash-... and the target's log is printed. docs/fuzzing.md.
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   e.g. scripts/fuzz.sh 60 graph_json
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-10}
shift || true
build="$root/build/fuzz"

"$root/scripts/setup.sh"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DAUTOPAR_BUILD_FUZZERS=ON \
    -DCMAKE_CXX_COMPILER=clang++ >/dev/null
fi
cmake --build "$build" -j"$(nproc)"

shopt -s nullglob
mkdir -p "$build/corpus" "$build/artifacts" "$build/logs"
failed=()
while read -r target patterns; do
  [[ -z "$target" || "$target" == \#* ]] && continue
  if (($# > 0)) && [[ " $* " != *" $target "* ]]; then continue; fi
  corpus="$build/corpus/$target"
  mkdir -p "$corpus"
  for pattern in $patterns "fuzz/regressions/$target/*"; do
    for file in "$root"/$pattern; do cp -f "$file" "$corpus/"; done
  done
  flags=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
         -artifact_prefix="$build/artifacts/$target-")
  [[ -f "$root/fuzz/dicts/$target.dict" ]] && flags+=(-dict="$root/fuzz/dicts/$target.dict")
  log="$build/logs/$target.log"
  if "$build/fuzz/${target}_fuzzer" "${flags[@]}" "$corpus" >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    echo "fuzz: $target: ok, $runs inputs in ${seconds} s, $coverage, corpus $(ls "$corpus" | wc -l)"
  else
    echo "fuzz: $target: FAILED (log: $log)"
    tail -n 40 "$log"
    failed+=("$target")
  fi
done <"$root/fuzz/seeds.txt"

if ((${#failed[@]} > 0)); then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}"
  exit 1
fi
echo "fuzz: all targets passed"
