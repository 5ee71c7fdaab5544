#!/usr/bin/env python3
"""One 22B layer's forward plus backward, as Korthikanti et al. 2022 Table 4 times it, from
autopar estimate: (step of 8 layers - step of 4 layers) / 4, less the optimizer step. Each Table 4
row of calibration.jsonl is configured as bench/calibration.py configures a row (its parallel
sizes, recompute, precision and framework flags, Megatron's GPT dimensions), with 4 and 8 layers.

Usage: bench/table4_layers.py [AUTOPAR_BINARY]   (default build/release/autopar)
"""
import json
import os
import subprocess
import sys
import tempfile

import calibration


def step_less_optimizer(autopar, scratch, row, layers):
    path = os.path.join(scratch, f"{row['id']}-{layers}.json")
    with open(path, "w") as file:
        json.dump(dict(calibration.dimensions(row), num_layers=layers), file)
    flags = ["--cluster", "dgx-a100-80g", "--tp", row["tp"], "--pp", row["pp"], "--dp", row["dp"],
             "--mbs", row["micro_batch_size"], "--gbs", row["global_batch_size"],
             "--recompute", calibration.recompute_of(row),
             "--precision", calibration.precision_of(row, [])]
    flags += calibration.framework_flags(row)
    if row["sequence_parallel"]:
        flags.append("--sequence-parallel")
    done = subprocess.run([autopar, "estimate", "--model", path, "--json"] +
                          [str(flag) for flag in flags],
                          capture_output=True, text=True, check=True)
    result = json.loads(done.stdout)
    return result["step_time_s"] - result["optimizer_s"]


def main():
    autopar = sys.argv[1] if len(sys.argv) > 1 else os.path.join(calibration.ROOT, "build",
                                                                  "release", "autopar")
    rows = [json.loads(line) for line in open(calibration.DATA)]
    print("| setting | published | predicted | error |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for row in rows:
            if "_t4_22B_layer_" not in row["id"]:
                continue
            published = row["other_metrics"]["layer_fwd_plus_bwd_ms"]
            layer = (step_less_optimizer(autopar, scratch, row, 8) -
                     step_less_optimizer(autopar, scratch, row, 4)) / 4 * 1000
            setting = row["id"].split("_t4_22B_layer_")[1].replace("_", " ")
            print(f"| {setting} | {published:.1f} ms | {layer:.1f} ms | "
                  f"{100 * (layer / published - 1):+.1f}% |")


if __name__ == "__main__":
    main()
