#!/usr/bin/env python3
"""One 22B layer's forward plus backward, as Korthikanti et al. 2022 Table 4 times it, from
autopar estimate: (step of 8 layers - step of 4 layers) / 4, less the optimizer step, on one
DGX A100 node at TP 8, micro-batch 4, one micro-batch, with the flags bench/calibration.py gives
Korthikanti et al.'s rows (fp16, unfused attention, asynchronous tensor-parallel all-reduce).

Usage: bench/table4_layers.py [AUTOPAR_BINARY]   (default build/release/autopar)
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "..", "shared", "data", "published", "calibration.jsonl")
GPT_22B = {"hidden_size": 6144, "ffn_hidden_size": 24576, "num_attention_heads": 64,
           "num_kv_heads": 64, "vocab_size": 51200, "seq_length": 2048, "swiglu": False,
           "tied_embeddings": True, "hidden_dropout": 0.1}
SETTINGS = [("no recompute", "baseline_no_recompute", ["--recompute", "none"]),
            ("sequence parallel", "sequence_parallel", ["--recompute", "none",
                                                         "--sequence-parallel"]),
            ("full recompute", "baseline_full_recompute", ["--recompute", "full"]),
            ("selective recompute", "selective_recompute", ["--recompute", "selective"]),
            ("selective + sequence parallel", "selective_plus_sequence",
             ["--recompute", "selective", "--sequence-parallel"])]


def step_less_optimizer(autopar, scratch, layers, flags):
    path = os.path.join(scratch, f"gpt22b-{layers}.json")
    with open(path, "w") as file:
        json.dump(dict(GPT_22B, num_layers=layers, name=f"gpt22b-{layers}"), file)
    done = subprocess.run([autopar, "estimate", "--model", path, "--cluster", "dgx-a100-80g",
                           "--tp", "8", "--pp", "1", "--dp", "1", "--mbs", "4", "--gbs", "4",
                           "--precision", "fp16", "--attention", "unfused",
                           "--async-tensor-model-parallel-allreduce", "--json"] + flags,
                          capture_output=True, text=True, check=True)
    result = json.loads(done.stdout)
    return result["step_time_s"] - result["optimizer_s"]


def main():
    autopar = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "release",
                                                                  "autopar")
    published = {}
    for line in open(DATA):
        row = json.loads(line)
        if "_t4_22B_layer_" in row["id"]:
            published[row["id"].split("_t4_22B_layer_")[1]] = \
                row["other_metrics"]["layer_fwd_plus_bwd_ms"]
    print("| setting | published | predicted | error |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for name, key, flags in SETTINGS:
            layer = (step_less_optimizer(autopar, scratch, 8, flags) -
                     step_less_optimizer(autopar, scratch, 4, flags)) / 4 * 1000
            print(f"| {name} | {published[key]:.1f} ms | {layer:.1f} ms | "
                  f"{100 * (layer / published[key] - 1):+.1f}% |")


if __name__ == "__main__":
    main()
