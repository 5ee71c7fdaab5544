#!/usr/bin/env python3
"""Device groups (docs/cluster-format.md): plans across groups and the availability question.

For each case, runs `autopar search` N times and prints the whole process's median wall time,
the plan table's rows (each group alone, the plans sharing the batch, the pipelines across
groups) and the chosen plan, and the speed-up of the best plan across groups over the fastest
group alone. LLaMA2-13B unless the case names another model.

    bench/device_groups.py [--binary build/release/autopar] [--runs 3]
"""

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIXED = str(ROOT.parent / "shared" / "examples" / "mixed-cluster.yaml")
THREE = str(ROOT / "examples" / "clusters" / "three-kinds.yaml")

CASES = {
    "mixed, fastest": ["--model", "llama2-13b", "--cluster", MIXED, "--gbs", "256"],
    "mixed, LLaMA2-70B, fastest": ["--model", "llama2-70b", "--cluster", MIXED, "--gbs", "256"],
    "mixed, cost": ["--model", "llama2-13b", "--cluster", MIXED, "--gbs", "256",
                    "--objective", "cost"],
    "3 kinds x 64 nodes, fastest": ["--model", "llama2-13b", "--cluster", THREE, "--gbs", "1024",
                                    "--available", "h100=64,a100-80=64,a100-40=64"],
    "3 kinds x 64 nodes, cost, >= 1M tokens/s": [
        "--model", "llama2-13b", "--cluster", THREE, "--gbs", "1024", "--objective", "cost",
        "--min-tokens-per-s", "1000000"],
    "3 kinds x 64 nodes, fastest, <= $1000/hour": [
        "--model", "llama2-13b", "--cluster", THREE, "--gbs", "1024",
        "--max-dollars-per-hour", "1000"],
}

ROW = re.compile(r"^(\S.*?)\s{2,}(\d+)\s{2}(.*?)\s{2,}([\d.]+ s|-)\s+(\d+|-)\s+([\d.]+|-)\s+"
                 r"([\d.]+|-)(\s+<- chosen)?$")


def run(binary, arguments):
    start = time.perf_counter()
    done = subprocess.run([binary, "search", *arguments, "--out", "/dev/null"],
                          capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"device_groups: search {' '.join(arguments)} exited {done.returncode}: "
                 f"{done.stderr}")
    return elapsed, done.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=str(ROOT / "build" / "release" / "autopar"))
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for name, arguments in CASES.items():
        times = []
        for _ in range(args.runs):
            elapsed, out = run(args.binary, arguments)
            times.append(elapsed)
        rows = [ROW.match(line) for line in out.splitlines()]
        rows = [row for row in rows if row]
        chosen = next((line for line in out.splitlines() if line.startswith("chosen:")), "")
        print(f"## {name}: median {statistics.median(times):.2f} s over {args.runs} runs "
              f"(min {min(times):.2f}, max {max(times):.2f})")
        print("| plan | devices | configuration | step | tokens/s | $/hour | $/M tokens |")
        print("|---|---|---|---|---|---|---|")
        for row in rows:
            mark = " (chosen)" if row.group(8) else ""
            print(f"| {row.group(1)}{mark} | {row.group(2)} | {row.group(3)} | {row.group(4)} | "
                  f"{row.group(5)} | {row.group(6)} | {row.group(7)} |")
        print(chosen)
        steps = {row.group(1): float(row.group(4)[:-2]) for row in rows if row.group(4) != "-"}
        alone = [step for plan, step in steps.items() if plan.endswith(" alone")]
        shared = [step for plan, step in steps.items() if "+" in plan]
        pipelines = [step for plan, step in steps.items() if plan.endswith(" pipeline")]
        if alone and shared:
            print(f"sharing the batch: {min(alone) / min(shared):.2f}x the fastest group alone")
        if alone and pipelines:
            print(f"a pipeline across groups: {min(alone) / min(pipelines):.2f}x the fastest "
                  "group alone")
        print()


if __name__ == "__main__":
    main()
