#!/usr/bin/env python3
"""What the Python package costs against the command: `import autopar` in a fresh interpreter,
and each call in-process against the same command as a whole process, medians of N runs.

    bench/python_api.py [--build build/release] [--runs 10]

Prints one line per measurement: its median, minimum and maximum in milliseconds.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CALLS = {
    "estimate": (["estimate", "--model", "llama2-7b", "--tp", "2", "--dp", "4", "--gbs", "32",
                  "--json"],
                 lambda autopar: autopar.estimate(model="llama2-7b", tp=2, dp=4, gbs=32)),
    "search": (["search", "--model", "llama2-70b", "--nodes", "16", "--gbs", "512", "--json",
                "--out", os.devnull],
               lambda autopar: autopar.search(model="llama2-70b", nodes=16, gbs=512)),
}


def timed(action, runs):
    action()  # warm-up: the page cache holds the libraries, the preset tables are built
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples), min(samples), max(samples)


def line(what, figures):
    median, low, high = figures
    print(f"{what:<44} {median:8.1f} ms  ({low:.1f}-{high:.1f})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=str(ROOT / "build" / "release"))
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    package = str(Path(args.build) / "python")
    sys.path.insert(0, package)
    import autopar  # noqa: E402  (from the build given)

    environment = {**os.environ, "PYTHONPATH": package}
    line("python3 -c 'import autopar' (whole process)",
         timed(lambda: subprocess.run([sys.executable, "-c", "import autopar"], check=True,
                                      env=environment), args.runs))
    line("python3 -c 'pass' (the interpreter alone)",
         timed(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), args.runs))
    binary = str(Path(args.build) / "autopar")
    for name, (words, call) in CALLS.items():
        line(f"autopar.{name}(...) in-process",
             timed(lambda call=call: call(autopar), args.runs))
        line(f"autopar {name} ... --json (whole process)",
             timed(lambda words=words: subprocess.run([binary, *words], check=True,
                                                      stdout=subprocess.DEVNULL), args.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
