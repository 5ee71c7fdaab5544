#!/usr/bin/env bash
# Signals a running `autopar run|check --ranks 2` and reports what is left, for faults.test.
#   signal_launcher.sh BINARY PLAN VERB ACTION [STEPS]
#   ACTION: TERM | INT | KILL   that signal to the launcher, once rank 0 has printed a step
#           STOP                SIGSTOP to rank 1 (the run has --timeout 3)
# (`check` runs the unsharded model first, in the launcher: give it STEPS it can finish.)
# Prints the launcher's exit status and output, then "ranks left: N" (ranks of this run still
# alive 5 s after the signal) and "result dirs left: N" (check's temporary result directories).
set -u
binary=$1 plan=$2 verb=$3 action=$4 steps=${5:-100000}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$binary" "$verb" --plan "$plan" --ranks 2 --steps "$steps" --timeout 3 >"$out" 2>&1 &
launcher=$!
# The ranks run `run --plan PLAN ... --timeout 3`: find them by the plan path.
for _ in $(seq 1 600); do
  grep -q "^rank 0 step" "$out" && break
  sleep 0.1
done
ranks=$(pgrep -f -- "run --plan $plan" | grep -vx "$launcher" | tr '\n' ' ')
# The launcher's store directory: a SIGKILLed launcher cannot remove it, so this script does.
store=$(for pid in $ranks; do tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null |
  sed -n 's/^AUTOPAR_STORE=file://p'; done | sort -u)
result_dirs=$(for pid in $ranks; do tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null |
  grep -A1 -- '^--result-dir$' | tail -1; done | sort -u)
if [[ "$action" == STOP ]]; then
  rank1=$(for pid in $ranks; do
    tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'RANK=1' && echo "$pid"
  done)
  kill -STOP "$rank1"
else
  kill "-$action" "$launcher"
fi
signalled=$(date +%s%N)
wait "$launcher"
echo "exit $?"
echo "ended after $((($(date +%s%N) - signalled) / 1000000000)) s"
cat "$out"
sleep 5
left=0
for pid in $ranks; do
  # A zombie is dead; a stopped rank left behind is not.
  state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)
  [[ -n "$state" && "$state" != Z ]] && left=$((left + 1))
done
echo "ranks left: $left"
dirs=0
for dir in $result_dirs; do [[ -e "$dir" ]] && dirs=$((dirs + 1)); done
echo "result dirs left: $dirs"
[[ "$action" == KILL && -n "$store" ]] && rm -rf "$(dirname "$store")"
exit 0
