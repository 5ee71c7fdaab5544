#!/usr/bin/env bash
# Sets up, builds the autopar command, and runs the main job on a built-in default: LLaMA2-7B on
# one DGX-A100 (8 x A100-80GB) with Megatron-style tensor parallelism 2 and data parallelism 4.
# Any arguments replace the default ones, e.g. `scripts/run.sh plan --model gpt3-175b --nodes 8 --tp 8`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" >/dev/null
"$root/scripts/build.sh" --target autopar >/dev/null
if (($# == 0)); then
  set -- plan --model llama2-7b --cluster dgx-a100-80g --tp 2
fi
exec "$root/build/release/autopar" "$@"
