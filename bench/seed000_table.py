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
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AUTOPAR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "release", "autopar")

# Each row as MindFormers 1.2.0 shipped it, max_device_memory included (mindspore-lab/mindformers: research/baichuan2,
# research/qwen finetune yamls, configs/llama2 pretrain yamls, each with its "_auto_parallel" twin):
# the settings both yamls of a pair share, then the semi-auto yaml's and the auto yaml's own. The
# auto yamls drop data_parallel and model_parallel and multiply batch_size by data_parallel, so
# both runs train the same global batch; LLaMA2-70B's keeps its pipeline (auto_pipeline False).
#   model preset, seed's SpeedUp (%), nodes of 8 devices, shared, semi-auto, auto
ROWS = [
    ("baichuan2-7b", 97.4, 1,
     dict(seq_length=4096, recompute=False, recompute_slice_activation=True, vocab_emb_dp=True,
          max_device_memory="59GB"),
     dict(data_parallel=8, model_parallel=1, batch_size=1), dict(batch_size=8, mem_coeff=0.01)),
    ("baichuan2-13b", 98.0, 1,
     dict(seq_length=4096, recompute=True, recompute_slice_activation=True, vocab_emb_dp=True,
          max_device_memory="59GB"),
     dict(data_parallel=8, model_parallel=1, batch_size=1), dict(batch_size=8, mem_coeff=0.01)),
    ("qwen-7b", 96.2, 1,
     dict(seq_length=8192, recompute=True, vocab_emb_dp=False, micro_batch_interleave_num=4),
     dict(data_parallel=2, model_parallel=4, batch_size=1, max_device_memory="57GB"),
     dict(batch_size=2, mem_coeff=4.5, max_device_memory="60GB")),
    ("qwen-14b", 111.3, 1,
     dict(seq_length=8192, recompute=True, recompute_slice_activation=True, vocab_emb_dp=False,
          micro_batch_interleave_num=4, max_device_memory="59GB"),
     dict(data_parallel=1, model_parallel=8, batch_size=2), dict(batch_size=2, mem_coeff=4.5)),
    ("llama2-7b", 101.2, 1,
     dict(seq_length=4096, recompute=False, recompute_slice_activation=True, vocab_emb_dp=True,
          gradient_accumulation_steps=8, max_device_memory="58GB"),
     dict(data_parallel=8, model_parallel=1, batch_size=1), dict(batch_size=8, mem_coeff=0.1)),
    ("llama2-13b", 99.8, 1,
     dict(seq_length=4096, recompute=True, recompute_slice_activation=True, vocab_emb_dp=True,
          max_device_memory="58GB"),
     dict(data_parallel=8, model_parallel=1, batch_size=2), dict(batch_size=16, mem_coeff=0.1)),
    ("llama2-70b", 93.5, 8,
     dict(seq_length=4096, recompute=False, recompute_slice_activation=True, vocab_emb_dp=False,
          use_seq_parallel=True,
          data_parallel=2, model_parallel=4, pipeline_stage=8, micro_batch_num=128, batch_size=1),
     dict(max_device_memory="54GB"), dict(mem_coeff=0.1, auto_pipeline=False, max_device_memory="58GB")),
]
PARALLEL_CONFIG = ("data_parallel", "model_parallel", "pipeline_stage", "micro_batch_num",
                   "micro_batch_interleave_num", "gradient_accumulation_steps",
                   "use_seq_parallel", "vocab_emb_dp", "mem_coeff")


def run_yaml(model, settings, mode):
    """The run yaml of one side of a row: semi-auto (mode 1) or auto (mode 2), both with
    MindFormers' full batch and optimizer parallel."""
    search = "" if mode == 1 else "  search_mode: recursive_programming\n"
    if "auto_pipeline" in settings:
        search += f"  auto_pipeline: {settings['auto_pipeline']}\n"
    parallel = "".join(f"  {key}: {settings[key]}\n" for key in PARALLEL_CONFIG if key in settings)
    return (f"use_parallel: True\nparallel:\n  parallel_mode: {mode}\n{search}"
            f"  full_batch: True\n  enable_parallel_optimizer: True\n"
            f"parallel_config:\n{parallel}"
            f"recompute_config:\n  recompute: {settings['recompute']}\n"
            f"  recompute_slice_activation: {settings.get('recompute_slice_activation', False)}\n"
            f"runner_config:\n  batch_size: {settings['batch_size']}\n"
            f"context:\n  max_device_memory: \"{settings['max_device_memory']}\"\n"
            f"model:\n  model_config:\n    model_preset: {model}\n"
            f"    seq_length: {settings['seq_length']}\n")


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
    # The most ways a projection's weight is cut: the model parallelism the plan took.
    weight_cut = max((math.prod(op["strategy"][1]) for op in result["ops"]
                      if op["kind"] == "MatMul" and len(op["strategy"]) > 1), default=1)
    return {"throughput": estimate["samples_per_step"] / estimate["step_time_s"],
            "weight_cut": weight_cut,
            "strategies": strategies, "weighted": weighted,
            "fits": estimate["fits"], "moved": moved, "stages": len(result["estimate"]["stages"])}


def main():
    print("| model | semi | mem_coeff | seed SpeedUp | autopar SpeedUp | agrees | "
          "moved per step, semi / auto |")
    print("|---|---|---|---|---|---|---|")
    agreeing = 0
    with tempfile.TemporaryDirectory() as scratch:
        planned = []
        for model, seed, nodes, shared, semi_only, auto_only in ROWS:
            semi_settings = {**shared, **semi_only}
            auto_settings = {**shared, **auto_only}
            semi = plan(run_yaml(model, semi_settings, 1), nodes, scratch, model + "-semi")
            auto = plan(run_yaml(model, auto_settings, 2), nodes, scratch, model + "-auto")
            planned.append((semi_settings, auto_settings, semi, auto))
        # The rows whose two yamls give the same plan op for op: what the seed measured for them
        # is the spread of MindSpore's runs, which no plan carries.
        same_plan = [f"{row[0]} {row[1]:.1f}%" for row, (_, _, semi, auto) in zip(ROWS, planned)
                     if semi["strategies"] == auto["strategies"]]
        for (model, seed, *_), (semi_settings, auto_settings, semi, auto) in zip(ROWS, planned):
            dp, mp = semi_settings["data_parallel"], semi_settings["model_parallel"]
            pp, mem_coeff = semi_settings.get("pipeline_stage", 1), auto_settings["mem_coeff"]
            speedup = 100 * auto["throughput"] / semi["throughput"]
            same_side = (speedup >= 100) == (seed >= 100)
            close = abs(speedup - seed) <= 10
            agreeing += same_side and close
            verdict = "yes" if same_side and close else (
                "no: " + ("other side of 100%" if not same_side else "more than 10 points off"))
            if not (same_side and close) and semi["strategies"] == auto["strategies"]:
                # A plan has no cost for the mode that made it: the seed's gap is MindSpore's.
                verdict += ("; the search chose the semi-auto plan op for op, so the gap the "
                            "seed measured is the run time's, not the plan's (the seed's rows "
                            f"with the same plan in both modes: {', '.join(same_plan)})")
            elif not (same_side and close) and auto["weight_cut"] > mp:
                # The search took more model parallelism than the semi-auto layout.
                verdict += (f"; the search cuts the weights {auto['weight_cut']} ways where the "
                            f"semi-auto layout's model_parallel is {mp}, and moves "
                            f"{auto['moved'] / semi['moved']:.1f}x its bytes per step")
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
