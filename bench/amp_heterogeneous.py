#!/usr/bin/env python3
"""AMP's measured runs (Li et al., NeurIPS'22) side by side with autopar's predictions and choices.

AMP trained a 24-layer GPT-2 (hidden 1024, sequence 1024, global batch 32, fp16, DeepSpeed's
pipeline engine over Megatron-LM v1.1.5, no ZeRO, no recompute) on two AWS clusters of 16 GPUs and
published the measured iteration time of every strategy it tried (DachengLi1/AMP@72eeea4,
src/results/*_results.txt, `r_cost`: the mean step time of iterations 20-40; inf where the trial
failed): a homogeneous one, 4 g4dn.12xlarge (16 T4), and a heterogeneous one, 3 p3.8xlarge
(12 V100) and 1 g4dn.12xlarge (4 T4). bench/data/amp holds the model, both clusters as autopar
files, and the measured rows (`extract` regenerates them from a mirror of the repository).

For the homogeneous cluster every measured strategy is priced with `autopar estimate` (its TP, PP,
DP, micro-batch and layer partition); the script prints each beside its measured time, then the
ranking agreement (Spearman), the error, the verdict on the trials that failed, and `autopar
search`'s choice with the measured time of that same strategy. For the heterogeneous cluster it
prints `autopar search`'s plan across the two kinds beside AMP's best measured strategy, and the
predicted and measured ratio of the two clusters' best steps.

    python3 bench/amp_heterogeneous.py [--binary build/release/autopar]
    python3 bench/amp_heterogeneous.py extract MIRROR_GIT_DIR   # rewrites bench/data/amp/measured.json
"""

import argparse
import json
import math
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from published import spearman  # noqa: E402  (the rank correlation bench/published.py reports)

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data" / "amp"
MODEL = DATA / "gpt2-amp.json"
HOMOGENEOUS = DATA / "g4dn-t4.yaml"
HETEROGENEOUS = DATA / "p3-g4dn.yaml"
MEASURED = DATA / "measured.json"
COMMIT = "72eeea45518d88997dd33c0db4a885a7eeec1d15"
RESULTS = {"homogeneous": "src/results/homogeneous_results.txt",
           "heterogeneous": "src/results/het_cluster_results.txt"}
# AMP's layer list (src/cost_homo.py, _layer): embedding, a no-op, the 24 transformer layers, two
# no-ops, the output embedding and a no-op; a partition's boundaries index it.
FIRST_LAYER, LAYERS = 2, 24
FLAGS = ["--framework", "megatron-deepspeed", "--precision", "fp16", "--gbs", "32"]
ROW = re.compile(r"Simulating result: None, \[([\d, ]+)\], (\d+), \{'mp_deg': tensor\(\[(\d+)\.\]\), "
                 r"'dp_deg': tensor\(\[(\d+)\.\]\), 'pp_deg': tensor\(\[(\d+)\.\]\)\}, with p_cost: "
                 r"tensor\(\[([\d.]+)\]\), r_cost: (\S+)")


def layers_per_stage(partition):
    """Transformer layers on each stage of an AMP partition (boundaries into AMP's layer list)."""
    stages = []
    for start, end in zip(partition, partition[1:]):
        stages.append(sum(1 for i in range(start, end) if FIRST_LAYER <= i < FIRST_LAYER + LAYERS))
    return stages


def extract(mirror):
    rows = []
    for cluster, path in RESULTS.items():
        text = subprocess.run(["git", "--git-dir", mirror, "show", f"{COMMIT}:{path}"],
                              check=True, capture_output=True, text=True).stdout
        for match in ROW.finditer(text):
            partition = [int(x) for x in match.group(1).split(",")]
            measured = match.group(7)
            rows.append({"cluster": cluster, "mbs": int(match.group(2)), "tp": int(match.group(3)),
                         "dp": int(match.group(4)), "pp": int(match.group(5)),
                         "partition": partition, "layers": layers_per_stage(partition),
                         "amp_predicted_s": float(match.group(6)),
                         "measured_s": None if measured == "inf" else float(measured)})
    data = {"source": f"DachengLi1/AMP@{COMMIT}",
            "files": list(RESULTS.values()),
            "measured": "r_cost: mean step seconds of iterations 20-40 of a real trial; null where "
                        "the trial failed (r_cost inf)",
            "rows": rows}
    MEASURED.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{len(rows)} rows written to {MEASURED.relative_to(ROOT)}")


def autopar(binary, *args):
    done = subprocess.run([binary, *args], capture_output=True, text=True)
    return done.returncode, done.stdout, done.stderr


def estimate_args(row):
    """`autopar estimate`'s arguments for an AMP strategy on the homogeneous cluster."""
    args = ["--model", str(MODEL), "--cluster", str(HOMOGENEOUS), "--tp", str(row["tp"]),
            "--pp", str(row["pp"]), "--dp", str(row["dp"]), "--mbs", str(row["mbs"]), *FLAGS]
    if row["pp"] > 1:
        args += ["--llm-layers", ",".join(map(str, row["layers"]))]
    return args


def estimate(binary, row, cost_model=None):
    args = ["estimate", *estimate_args(row), "--json"]
    if cost_model:
        args += ["--cost-model", cost_model]
    code, out, err = autopar(binary, *args)
    if code not in (0, 3):
        return {"error": err.strip().splitlines()[-1] if err.strip() else f"exit {code}"}
    result = json.loads(out)
    return {"step_s": result["step_time_s"], "verdict": result["memory_verdict"],
            "peak_gib": max(result["peak_memory_bytes"]) / 2**30}


def shape(row):
    return f"TP {row['tp']} PP {row['pp']} DP {row['dp']} MBS {row['mbs']}"


def agreement(priced):
    """MAPE, median error, signed error and Spearman of (row, estimate) pairs that ran."""
    measured = [r["measured_s"] for r, _ in priced]
    predicted = [g["step_s"] for _, g in priced]
    errors = [(p - m) / m for p, m in zip(predicted, measured)]
    return (statistics.mean(abs(e) for e in errors), statistics.median(abs(e) for e in errors),
            statistics.mean(errors), spearman(predicted, measured))


def homogeneous(binary, rows):
    print("Homogeneous: 4 g4dn.12xlarge (16 T4), every measured strategy priced by autopar estimate")
    print(f"{'strategy':<24} {'layers':<26} {'measured':>9} {'autopar':>9} {'error':>7}  memory")
    priced = []
    refused = []
    for row in rows:
        got = estimate(binary, row)
        measured = row["measured_s"]
        text = f"{measured:9.2f}" if measured is not None else f"{'failed':>9}"
        if "error" in got:
            refused.append(row)
            continue
        error = f"{(got['step_s'] - measured) / measured:+7.1%}" if measured else f"{'':>7}"
        layers = str(row["layers"]) if row["pp"] > 1 else ""
        print(f"{shape(row):<24} {layers[:26]:<26} {text} {got['step_s']:9.3f} {error}  "
              f"{got['verdict']} ({got['peak_gib']:.1f} GiB)")
        priced.append((row, got))
    ran = [(r, g) for r, g in priced if r["measured_s"] is not None]
    mape, median, signed, rho = agreement(ran)
    amp = spearman([r["amp_predicted_s"] for r, _ in ran], [r["measured_s"] for r, _ in ran])
    print(f"\n{len(ran)} strategies that ran: MAPE {mape:.1%}, median {median:.1%}, signed "
          f"{signed:+.1%}; Spearman {rho:.2f} (AMP's own cost model, profiled on these GPUs: "
          f"{amp:.2f})")
    failed = [(r, g) for r, g in priced if r["measured_s"] is None]
    for row, got in failed:
        print(f"AMP's trial of {shape(row)} failed (r_cost inf); autopar: {got['verdict']}, "
              f"{got['peak_gib']:.1f} GiB of 14.9")
    print(f"{len(refused)} strategies have fewer micro-batches than stages, which autopar refuses "
          f"and DeepSpeed runs ({sum(r['measured_s'] is not None for r in refused)} of them ran)")
    best = min(ran, key=lambda rg: rg[0]["measured_s"])
    print(f"fastest measured: {shape(best[0])} layers {best[0]['layers']} at "
          f"{best[0]['measured_s']:.2f} s (autopar {best[1]['step_s']:.3f} s)")
    pick = min(ran, key=lambda rg: rg[1]["step_s"])
    order = sorted(r["measured_s"] for r, _ in ran)
    print(f"autopar's fastest of those that ran: {shape(pick[0])} at {pick[1]['step_s']:.3f} s, "
          f"measured {pick[0]['measured_s']:.2f} s ({order.index(pick[0]['measured_s']) + 1} of "
          f"{len(order)}, {pick[0]['measured_s'] / order[0]:.2f}x the fastest)")
    return best[0]["measured_s"], min(g["step_s"] for _, g in ran), ran


def calibrated(binary, ran, directory):
    """Calibrates on one measured strategy per family (TP degree, with or without a pipeline), as
    a user with a few runs of their own would, and prices the rest with the fitted constants."""
    fit, seen = [], set()
    for row, _ in ran:
        if (row["tp"], row["pp"] > 1) not in seen:
            seen.add((row["tp"], row["pp"] > 1))
            fit.append(row)
    runs = Path(directory) / "amp_runs.jsonl"
    runs.write_text("".join(json.dumps({"estimate": " ".join(estimate_args(r)),
                                        "step_time_s": r["measured_s"]}) + "\n" for r in fit))
    model = str(Path(directory) / "t4.json")
    code, out, err = autopar(binary, "calibrate", str(runs), "--fit",
                             "matmul_efficiency,memory_efficiency", "--out", model)
    if code != 0:
        sys.exit(f"autopar calibrate failed: {err.strip()}")
    for line in out.splitlines():
        if "->" in line and "error" not in line:
            print("  fitted " + line.strip())
    held = [(r, estimate(binary, r, model)) for r, _ in ran if r not in fit]
    mape, median, signed, rho = agreement(held)
    print(f"calibrated on {len(fit)} measured strategies (`autopar calibrate --fit "
          f"matmul_efficiency,memory_efficiency`), the other {len(held)}: MAPE {mape:.1%}, median "
          f"{median:.1%}, signed {signed:+.1%}; Spearman {rho:.2f}")
    return model


def search_choice(binary, cluster, cost_model=None):
    extra = ["--cost-model", cost_model] if cost_model else []
    code, out, err = autopar(binary, "search", "--model", str(MODEL), "--cluster", str(cluster),
                             *FLAGS, *extra)
    if code != 0:
        sys.exit(f"autopar search failed: {err.strip()}")
    return out


def homogeneous_choice(binary, rows, cost_model=None, label="shipped constants"):
    out = search_choice(binary, HOMOGENEOUS, cost_model)
    top = re.search(r"^\s+1\s+(\d+)\s+\d+\s+(\d+)\s+(\d+)\s+\d+\s+\S+\s+(\d+)\s+\S+\s+\S+\s+(\d+)"
                    r"\s+([\d.]+) (ms|s)", out, re.M)
    tp, pp, dp, mbs, zero = (int(top.group(i)) for i in range(1, 6))
    seconds = float(top.group(6)) / (1000 if top.group(7) == "ms" else 1)
    same = [r for r in rows if (r["tp"], r["pp"], r["dp"], r["mbs"]) == (tp, pp, dp, mbs)]
    ran = sorted(r["measured_s"] for r in rows if r["measured_s"] is not None)
    if not same:
        text = "not among AMP's measured strategies"
    elif all(r["measured_s"] is None for r in same):
        text = "AMP's trial of it failed (r_cost inf)"
    else:
        measured = min(r["measured_s"] for r in same if r["measured_s"] is not None)
        text = (f"measured {measured:.2f} s, {ran.index(measured) + 1} of {len(ran)}, "
                f"{measured / ran[0]:.2f}x the fastest")
    print(f"autopar search ({label}) chooses TP {tp} PP {pp} DP {dp} MBS {mbs} ZeRO {zero}, "
          f"predicted {seconds:.3f} s; {text}")


def heterogeneous(binary, rows, homogeneous_best, homogeneous_predicted):
    print("\nHeterogeneous: 3 p3.8xlarge (12 V100) + 1 g4dn.12xlarge (4 T4)")
    out = search_choice(binary, HETEROGENEOUS)
    for line in out.splitlines():
        if re.match(r"^(v100|t4|plan)\b", line) or line.startswith("chosen:"):
            print("  " + line)
    chosen = re.search(r"^\S.*?\s{2,}\d+\s{2}.*?\s{2,}([\d.]+) s.*<- chosen$", out, re.M)
    ran = [r for r in rows if r["measured_s"] is not None]
    best = min(ran, key=lambda r: r["measured_s"])
    print(f"AMP's fastest measured: {shape(best)} layers {best['layers']} at "
          f"{best['measured_s']:.2f} s ({len(ran)} strategies ran, "
          f"{len(rows) - len(ran)} failed)")
    predicted = float(chosen.group(1))
    print(f"best step, heterogeneous over homogeneous: measured {best['measured_s']:.2f} / "
          f"{homogeneous_best:.2f} = {best['measured_s'] / homogeneous_best:.2f}; autopar "
          f"{predicted:.3f} / {homogeneous_predicted:.3f} = "
          f"{predicted / homogeneous_predicted:.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs="?", default="compare", choices=["compare", "extract"])
    parser.add_argument("mirror", nargs="?", help="extract: the AMP repository's git directory")
    parser.add_argument("--binary", default=str(ROOT / "build" / "release" / "autopar"))
    args = parser.parse_args()
    if args.command == "extract":
        if not args.mirror:
            sys.exit("extract needs the AMP repository's git directory")
        extract(args.mirror)
        return
    rows = json.loads(MEASURED.read_text())["rows"]
    same_cluster = [r for r in rows if r["cluster"] == "homogeneous"]
    best, predicted, ran = homogeneous(args.binary, same_cluster)
    homogeneous_choice(args.binary, same_cluster)
    with tempfile.TemporaryDirectory() as directory:
        model = calibrated(args.binary, ran, directory)
        homogeneous_choice(args.binary, same_cluster, model, "calibrated")
    heterogeneous(args.binary, [r for r in rows if r["cluster"] == "heterogeneous"], best,
                  predicted)


if __name__ == "__main__":
    main()
