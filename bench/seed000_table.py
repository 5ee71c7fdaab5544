#!/usr/bin/env python3
"""Seed 000's benchmark table, replayed: for each of its seven rows, the semi-auto run yaml
(MindFormers' default settings: full batch, optimizer parallel, the row's parallel_config) against
the same yaml in auto-parallel mode (`search_mode: recursive_programming` with the row's mem_coeff
and `auto_pipeline`), planned by `autopar plan --config` on the Ascend preset. The SpeedUp is the
ratio of throughputs (samples per second, auto over semi), as the seed defines it.

Each row prints autopar's SpeedUp beside the seed's, whether it is on the seed's side of 100% and
within 10 points, and what the two plans move per step (redistribution bytes per device), the
figure that says why a row is off.

Usage: bench/seed000_table.py [AUTOPAR]   (default build/release/autopar)
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AUTOPAR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "release", "autopar")

# model preset, semi dp, mp, pp, auto mem_coeff, nodes of 8 devices, seed's SpeedUp (%)
ROWS = [
    ("baichuan2-7b", 8, 1, 1, 0.01, 1, 97.4),
    ("baichuan2-13b", 8, 1, 1, 0.01, 1, 98.0),
    ("qwen-7b", 2, 4, 1, 4.5, 1, 96.2),
    ("qwen-14b", 1, 8, 1, 4.5, 1, 111.3),
    ("llama2-7b", 8, 1, 1, 0.1, 1, 101.2),
    ("llama2-13b", 8, 1, 1, 0.1, 1, 99.8),
    ("llama2-70b", 2, 4, 8, 0.1, 8, 93.5),
]
MICRO_BATCHES = 16  # with a pipeline: seed 000's LLaMA2-70B yaml


def run_yaml(model, dp, mp, pp, mode, mem_coeff):
    """MindFormers' default run yaml for the row, semi-auto (mode 1) or auto (mode 2): full batch,
    optimizer parallel and full recompute (MindFormers' pretraining yamls set all three), and a
    batch of 8 samples per micro-batch (batch_size 8 / dp), so that the auto search may cut it
    over a node's 8 devices as the semi-auto layout does over dp."""
    search = "" if mode == 1 else (
        "  search_mode: recursive_programming\n  auto_pipeline: True\n")
    coeff = "" if mode == 1 else f"  mem_coeff: {mem_coeff}\n"
    return (f"use_parallel: True\nparallel:\n  parallel_mode: {mode}\n{search}"
            f"  full_batch: True\n  enable_parallel_optimizer: True\n"
            f"parallel_config:\n  data_parallel: {dp}\n  model_parallel: {mp}\n"
            f"  pipeline_stage: {pp}\n  micro_batch_num: {MICRO_BATCHES if pp > 1 else 1}\n{coeff}"
            f"recompute_config:\n  recompute: True\n"
            f"runner_config:\n  batch_size: {8 // dp}\n"
            f"model:\n  model_config:\n    model_preset: {model}\n")


def plan(yaml_text, nodes, scratch, name):
    path = os.path.join(scratch, name + ".yaml")
    with open(path, "w") as f:
        f.write(yaml_text)
    done = subprocess.run([AUTOPAR, "plan", "--config", path, "--cluster", "ascend-910b-node",
                           "--nodes", str(nodes), "--json"],
                          capture_output=True, text=True, cwd=ROOT)
    if done.returncode not in (0, 3):
        sys.exit(f"{name}: {done.stderr.strip()}")
    result = json.loads(done.stdout)
    estimate = result["estimate"]
    moved = sum(r["bytes_per_device"] for r in result["redistributions"])
    strategies = [(op["name"], op["strategy"], op["stage"]) for op in result["ops"]]
    # The ops holding a weight matrix (projections, embedding, head): the search's own choices.
    weighted = [(op["name"], op["strategy"]) for op in result["ops"]
                if any(i["tensor"].endswith(".weight") and len(i["dim_axes"]) >= 2
                       for i in op["inputs"])]
    return {"throughput": estimate["samples_per_step"] / estimate["step_time_s"],
            "strategies": strategies, "weighted": weighted,
            "fits": estimate["fits"], "moved": moved, "stages": len(result["estimate"]["stages"])}


def main():
    print("| model | semi | mem_coeff | seed SpeedUp | autopar SpeedUp | agrees | "
          "moved per step, semi / auto |")
    print("|---|---|---|---|---|---|---|")
    agreeing = 0
    with tempfile.TemporaryDirectory() as scratch:
        for model, dp, mp, pp, mem_coeff, nodes, seed in ROWS:
            semi = plan(run_yaml(model, dp, mp, pp, 1, mem_coeff), nodes, scratch, model + "-semi")
            auto = plan(run_yaml(model, dp, mp, pp, 2, mem_coeff), nodes, scratch, model + "-auto")
            speedup = 100 * auto["throughput"] / semi["throughput"]
            same_side = (speedup >= 100) == (seed >= 100)
            close = abs(speedup - seed) <= 10
            agreeing += same_side and close
            verdict = "yes" if same_side and close else (
                "no: " + ("other side of 100%" if not same_side else "more than 10 points off"))
            if not (same_side and close) and semi["strategies"] == auto["strategies"]:
                # A plan has no cost for the mode that made it: the seed's gap is MindSpore's.
                verdict += ("; the search chose the semi-auto plan op for op, so the gap the "
                            "seed measured is the run time's, not the plan's")
            elif not (same_side and close) and semi["weighted"] == auto["weighted"]:
                # The search's own choices are the semi-auto cuts; only what propagation gives
                # the ops between them differs.
                verdict += ("; the search chose the semi-auto cuts for every weight, which "
                            "cannot beat the semi-auto plan by the seed's margin; the gap left is "
                            "the layouts propagation gives the ops between them (norms, "
                            "residuals)")
            fits = "" if semi["fits"] and auto["fits"] else (
                f" (does not fit: {'semi' if not semi['fits'] else ''}"
                f"{' auto' if not auto['fits'] else ''})")
            print(f"| {model} | dp={dp}, mp={mp}, pp={pp} | {mem_coeff} | {seed:.1f}% | "
                  f"{speedup:.1f}%{fits} | {verdict} | {semi['moved'] / 2**30:.2f} GiB / "
                  f"{auto['moved'] / 2**30:.2f} GiB (auto: {auto['stages']} stages) |")
    print(f"\n{agreeing} of {len(ROWS)} rows on the seed's side of 100% and within 10 points")


if __name__ == "__main__":
    main()
