#!/usr/bin/env python3
"""Prints docs/recursive-programming.md's mem_coeff table: LLaMA2-7B on one DGX A100 under
`autopar plan --search recursive_programming --mem-coeff M` for M = 0.01 x 4^k, with the first
layer's q_proj strategy, the step time and the peak memory per device.

Usage: bench/recursive_mem_coeff_table.py [AUTOPAR]   (default build/release/autopar)"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AUTOPAR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "release", "autopar")


def strategy_text(strategy):
    return "(" + ",".join("(" + ",".join(str(c) for c in cuts) + ")" for cuts in strategy) + ")"


print("| mem_coeff | q_proj strategy | step time | peak memory per device |")
print("|---|---|---|---|")
for mem_coeff in ("0.01", "0.16", "2.56", "10.24", "40.96"):
    done = subprocess.run([AUTOPAR, "plan", "--model", "llama2-7b", "--search",
                           "recursive_programming", "--mem-coeff", mem_coeff, "--json"],
                          capture_output=True, text=True, cwd=ROOT)
    if done.returncode not in (0, 3):
        sys.exit(f"mem_coeff {mem_coeff}: {done.stderr.strip()}")
    plan = json.loads(done.stdout)
    q_proj = next(op for op in plan["ops"] if op["name"] == "layer0.attn.q_proj")
    estimate = plan["estimate"]
    peak = estimate["peak_memory_bytes"] / 2**30
    fits = "fits" if estimate["fits"] else "does not fit"
    print(f"| {mem_coeff} | {strategy_text(q_proj['strategy'])} | "
          f"{estimate['step_time_s']:.3f} s | {peak:.2f} GiB ({fits}) |")
