#!/usr/bin/env python3
"""Whole-process time and peak memory of `autopar search` as the model's layer count grows.

A LLaMA-7B-shaped layer (hidden 4096, FFN 11008, 32 heads, sequence 4096, SwiGLU) stacked 100,
400, 800 and 1,000 times (--layers to choose), searched on 16 nodes of the default preset
(128 A100s) with a global batch of 512. Each count runs N times; the script prints the median
wall time, the peak resident memory (getrusage's largest child so far, which is why the counts
ascend), and both as ratios to the first count, so growth in layers reads directly (issue 20: 800 layers at most 12x 100 layers).
The layer-level search alone (the exact placement at 100, 1,000 and 10,000 layers) is measured by
`plan_bench --benchmark_filter=PlaceLayersExactLayers`.

    bench/layer_scaling.py [--binary build/release/autopar] [--runs 3] [--layers 100,800,1000]
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LAYER = dict(hidden_size=4096, ffn_hidden_size=11008, num_attention_heads=32, num_kv_heads=32,
             vocab_size=32000, seq_length=4096, swiglu=True)


def timed_search(binary, model, out):
    """(wall seconds, peak resident bytes) of one search."""
    argv = [binary, "search", "--model", model, "--nodes", "16", "--gbs", "512", "--out", out]
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, stderr = child.communicate()
    elapsed = time.perf_counter() - start
    if child.returncode != 0:
        sys.exit(f"layer_scaling: {' '.join(argv)} exited {child.returncode}: "
                 f"{stderr.decode().strip()}")
    # ru_maxrss of the children waited for so far: the largest, so runs go largest model last.
    return elapsed, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


def layer_counts(text):
    try:
        counts = [int(field) for field in text.split(",")]
    except ValueError:
        sys.exit(f"layer_scaling: --layers: expected whole numbers separated by commas, "
                 f"got '{text[:100]}'")
    if not counts or any(c < 1 or c > 2048 for c in counts) or counts != sorted(counts):
        sys.exit("layer_scaling: --layers: expected ascending counts from 1 to 2048 (docs/limits.md)")
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=str(ROOT / "build/release/autopar"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--layers", default="100,400,800,1000")
    args = parser.parse_args()
    if args.runs < 1 or args.runs > 100:
        sys.exit("layer_scaling: --runs: expected a whole number from 1 to 100")
    counts = layer_counts(args.layers)
    print(f"{'layers':>7} {'median s':>9} {'x first':>8} {'peak MiB':>9} {'x first':>8}"
          f"  ({args.runs} runs each, {os.cpu_count()} cores)")
    first = None
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "config.json")
        for layers in counts:
            model = os.path.join(scratch, f"layers{layers}.json")
            with open(model, "w") as file:
                json.dump(dict(LAYER, num_layers=layers), file)
            runs = [timed_search(args.binary, model, out) for _ in range(args.runs)]
            seconds = statistics.median(r[0] for r in runs)
            peak = max(r[1] for r in runs) / 2**20
            first = first or (seconds, peak)
            print(f"{layers:>7} {seconds:>9.2f} {seconds / first[0]:>7.1f}x {peak:>9.0f} "
                  f"{peak / first[1]:>7.1f}x", flush=True)


if __name__ == "__main__":
    main()
