#!/usr/bin/env python3
"""Prints docs/estimate.md's expert-parallelism table: Mixtral-8x7B (its config.json) on 64
A100-80GB, TP 2, PP 4, DP 8, selective recompute, ZeRO 1, at EP 1, 2, 4 and 8: the full model's
step, the closed form's, and stage 0's peak memory.

Usage: bench/mixtral_ep_table.py [AUTOPAR]   (default build/release/autopar)"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AUTOPAR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "release", "autopar")

print("| `--ep` | step (s) | closed form (s) | stage 0 peak (GiB) |")
print("|---|---|---|---|")
for ep in (1, 2, 4, 8):
    done = subprocess.run(
        [AUTOPAR, "estimate", "--model", "examples/models/mixtral-8x7b-config.json", "--nodes",
         "8", "--tp", "2", "--pp", "4", "--dp", "8", "--ep", str(ep), "--gbs", "256", "--seq",
         "4096", "--sequence-parallel", "--recompute", "selective", "--zero", "1",
         "--closed-form", "--json"], capture_output=True, text=True, cwd=ROOT)
    if done.returncode not in (0, 3):
        sys.exit(f"--ep {ep}: {done.stderr.strip()}")
    estimate = json.loads(done.stdout)
    print(f"| {ep} | {estimate['step_time_s']:.3f} | "
          f"{estimate['closed_form']['step_time_s']:.3f} | "
          f"{estimate['peak_memory_bytes'][0] / 2**30:.2f} |")
