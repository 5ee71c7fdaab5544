#!/usr/bin/env python3
"""Whole-process wall time of short autopar commands: what a user waits for, start-up included.

Runs each command N times (after one untimed warm-up run, so the page cache holds the binary and
its libraries) and prints the median, the minimum and the maximum in milliseconds, and how many
shared libraries the binary loads (ldd).

    bench/startup.py [--binary build/release/autopar] [--runs 10]
"""

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

COMMANDS = {
    "models": ["models"],
    "estimate": ["estimate", "--model", "llama2-7b", "--tp", "2", "--dp", "4", "--gbs", "32"],
}


def timed_run(argv):
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"startup: {' '.join(argv)} exited {done.returncode}: {done.stderr.decode()}")
    return elapsed


def shared_libraries(binary):
    listing = subprocess.run(["ldd", binary], capture_output=True, text=True, check=False)
    return len([line for line in listing.stdout.splitlines() if line.strip()])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=str(ROOT / "build/release/autopar"))
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    if args.runs < 1 or args.runs > 1000:
        sys.exit("startup: --runs: expected a whole number from 1 to 1000")
    print(f"{args.binary}: {shared_libraries(args.binary)} shared libraries (ldd)")
    print(f"{'command':<10} {'median ms':>10} {'min ms':>8} {'max ms':>8}  ({args.runs} runs)")
    for name, verb in COMMANDS.items():
        argv = [args.binary, *verb]
        timed_run(argv)
        times = [timed_run(argv) * 1e3 for _ in range(args.runs)]
        print(f"{name:<10} {statistics.median(times):>10.1f} {min(times):>8.1f} {max(times):>8.1f}")


if __name__ == "__main__":
    main()
