#!/usr/bin/env python3
"""The search's closed-form screen against the full model (cost model + pipeline simulator).

For a sweep of configurations across schedules (1F1B, interleaved, zero-bubble H1), ZeRO stages,
recompute, context and expert parallelism, runs `autopar estimate --closed-form --json` and
prints, per configuration and in summary, the screen's step time and peak memory relative to the
full model's.

    bench/screen_vs_simulator.py [--binary build/release/autopar] [--limit N] [--worst 15]
"""

import argparse
import itertools
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def sweep():
    """(model, cluster args, configuration args) triples, every one a valid configuration:
    LLaMA2-7B over TP/PP/DP/CP shapes, the three schedules, recompute, ZeRO 0-3, micro-batch
    sizes and overlapped gradient reduction; Mixtral-8x7B over EP shapes."""
    dense = []
    for (tp, pp, dp, cp), schedule, recompute, zero, mbs in itertools.product(
            [(2, 2, 2, 1), (1, 4, 2, 1), (2, 4, 1, 1), (2, 1, 2, 2), (1, 2, 2, 2), (4, 2, 1, 1)],
            ["1f1b", "interleaved", "zb-h1"], ["none", "selective", "full"], [0, 1, 2, 3],
            [1, 2]):
        overlap_choices = [False, True] if zero <= 1 else [False]
        if pp == 1 and schedule != "1f1b":
            continue
        if pp > 1 and zero >= 2:
            continue  # neither Megatron-LM nor DeepSpeed pipelines ZeRO 2 and 3
        if dp == 1 and zero > 0:
            continue
        args = ["--tp", tp, "--pp", pp, "--dp", dp, "--cp", cp, "--mbs", mbs,
                "--recompute", recompute, "--zero", zero, "--gbs", dp * mbs * 8]
        if schedule == "interleaved":
            args += ["--vpp", 2]
        if schedule == "zb-h1":
            args += ["--zero-bubble"]
        if tp > 1:
            args += ["--sequence-parallel"]
        for overlap in overlap_choices:
            dense.append(("llama2-7b", ["--seq", 4096],
                          args + (["--overlap-grad-reduce"] if overlap else [])))
    moe = []
    for (tp, pp, dp, ep), recompute, zero in itertools.product(
            [(2, 2, 2, 2), (1, 2, 4, 4), (2, 1, 4, 2), (1, 1, 8, 8)], ["none", "full"], [0, 1]):
        args = ["--tp", tp, "--pp", pp, "--dp", dp, "--ep", ep, "--mbs", 1,
                "--recompute", recompute, "--zero", zero, "--gbs", dp * 8]
        if tp > 1:
            args += ["--sequence-parallel"]
        moe.append(("examples/models/mixtral-8x7b-config.json", ["--seq", 4096, "--nodes", 1], args))
    return dense + moe


def run(binary, model, cluster, args):
    argv = [binary, "estimate", "--model", model, *map(str, cluster), *map(str, args),
            "--closed-form", "--json"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 3):  # 3: does not fit, still estimated
        return None, done.stderr.strip()
    out = json.loads(done.stdout)
    return out, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=str(ROOT / "build/release/autopar"))
    parser.add_argument("--limit", type=int, default=0, help="first N configurations only")
    parser.add_argument("--worst", type=int, default=15, help="configurations to list")
    args = parser.parse_args()
    configs = sweep()
    if args.limit > 0:
        configs = configs[:args.limit]
    rows, refused = [], []
    for model, cluster, config in configs:
        out, error = run(args.binary, model, cluster, config)
        if out is None:
            refused.append((model, config, error))
            continue
        full, screen = out["step_time_s"], out["closed_form"]["step_time_s"]
        peak, screen_peak = out["peak_memory_bytes"], out["closed_form"]["peak_memory_bytes"]
        rows.append((screen / full - 1, max(screen_peak) / max(peak) - 1 if isinstance(peak, list)
                     else screen_peak / peak - 1, model, config))
    if not rows:
        sys.exit("screen_vs_simulator: no configuration was estimated; first error: "
                 f"{refused[0][2] if refused else 'none'}")
    step_errors = [abs(r[0]) for r in rows]
    print(f"{len(rows)} configurations estimated ({len(refused)} refused)")
    print(f"step time, screen vs full model: median |error| {100 * statistics.median(step_errors):.2f}%, "
          f"mean {100 * statistics.mean(step_errors):.2f}%, max {100 * max(step_errors):.2f}%, "
          f"within 2%: {sum(e <= 0.02 for e in step_errors)} of {len(rows)}")
    peak_errors = [abs(r[1]) for r in rows]
    print(f"peak memory: median |error| {100 * statistics.median(peak_errors):.2f}%, "
          f"max {100 * max(peak_errors):.2f}%")
    print(f"\nworst {args.worst} by step time:")
    for step, peak, model, config in sorted(rows, key=lambda r: -abs(r[0]))[:args.worst]:
        print(f"  {100 * step:+6.2f}% step {100 * peak:+6.2f}% peak  {Path(model).stem} "
              f"{' '.join(map(str, config))}")
    for model, config, error in refused[:5]:
        print(f"  refused: {Path(model).stem} {' '.join(map(str, config))}: {error}")


if __name__ == "__main__":
    main()
