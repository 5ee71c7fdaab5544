#!/usr/bin/env python3
"""Predicted peak memory of every published run under two autopar binaries.

Runs each configurable row of calibration.jsonl and development.jsonl (bench/published.py's
configurations) through `autopar estimate --json` with both binaries and prints, as a Markdown
table, every row whose predicted peak exceeds its device memory under either, then how many of
the runs (all of which ran) each binary predicts not to fit, and the spread of the change.
Flags the older binary does not know (FLAGS_SINCE) are left out for it.

usage: bench/memory_compare.py OLD_AUTOPAR NEW_AUTOPAR
"""
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import published  # noqa: E402

GIB = 2 ** 30
# Switches newer than the older binaries this compares against, left out when running those
# (flag -> how many values follow it).
FLAGS_SINCE = {"--fp8-param-gather": 0, "--optimizer-state": 1}


def without_new_flags(flags):
    kept, skip = [], 0
    for flag in flags:
        if skip:
            skip -= 1
        elif flag in FLAGS_SINCE:
            skip = FLAGS_SINCE[flag]
        else:
            kept.append(flag)
    return kept


def peak_gib(autopar, config, scratch, old):
    config = dict(config, flags=without_new_flags(config["flags"]) if old else config["flags"])
    out, failure = published.estimate(autopar, config, scratch)
    if out is None:
        raise SystemExit(f"{autopar}: {config['row']['id']}: {failure}")
    return max(out["peak_memory_bytes"]) / GIB, out["device_memory_bytes"] / GIB


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    old, new = sys.argv[1:]
    configs = [c for c, _ in map(published.configure, published.load_rows("")) if c]
    with tempfile.TemporaryDirectory() as scratch:
        def one(config):
            return (config["row"]["id"], peak_gib(old, config, scratch, True),
                    peak_gib(new, config, scratch, False))
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            results = list(pool.map(one, configs))
    print("| row | device | before | after |\n|---|---|---|---|")
    for rid, (before, device), (after, _) in results:
        if before > device or after > device:
            print(f"| {rid} | {device:.0f} GiB | {before:.2f} | {after:.2f} |")
    over_before = sum(before > device for _, (before, device), _ in results)
    over_after = sum(after > device for _, _, (after, device) in results)
    print(f"predicted over device memory although they ran: before {over_before}, "
          f"after {over_after} of {len(results)}")
    changes = [after / before - 1 for _, (before, _), (after, _) in results]
    print(f"peak change: median {100 * statistics.median(changes):+.1f}%, "
          f"min {100 * min(changes):+.1f}%, max {100 * max(changes):+.1f}%")


if __name__ == "__main__":
    main()
