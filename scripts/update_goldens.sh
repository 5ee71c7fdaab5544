#!/usr/bin/env bash
# Regenerates the golden plans in tests/golden from the current build. Review the diff
# (`git diff tests/golden`) before committing: a golden changes only when a plan should.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" --target autopar >/dev/null
autopar="$root/build/release/autopar"
cd "$root"
while read -r name args; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  # shellcheck disable=SC2086
  "$autopar" $args --json >"tests/golden/$name.plan.json"
  echo "wrote tests/golden/$name.plan.json"
done <tests/golden/cases.txt
