#!/usr/bin/env python3
"""Superseded by bench/published.py, which runs both calibration.jsonl and development.jsonl and
cross-validates per source; kept for bench/table4_layers.py and the figures of BENCHMARKS.md's
earlier sections.

Runs every row of shared/data/published/calibration.jsonl through `autopar estimate` and
prints the predicted figure beside the published one, per row, with the mean absolute percentage
error (MAPE) per table and overall.

Usage: bench/calibration.py [AUTOPAR_BINARY] [--rows PREFIX] [--cost-model FILE]
       bench/calibration.py [AUTOPAR_BINARY] --fit [--write]
       bench/calibration.py [AUTOPAR_BINARY] --hold-out PREFIX

--fit refits the constants of data/cost_model.json by coordinate descent (each constant scaled
by 0.8, 0.9, 1.1 and 1.25 in turn, kept when the MAPE falls, until a sweep gains less than
FIT_TOLERANCE points of MAPE) and prints them; --write stores them in data/cost_model.json. The
fit minimises the MAPE over every configurable row, Table 2's DeepSpeed ZeRO-3 rows included (the
model now has their per-parameter gathers on NCCL rings and DeepSpeed's list-API collectives;
list_collective_copy_seconds is fitted on them alone). Each constant stays within the physical
range BOUNDS gives.

--hold-out PREFIX is the out-of-sample check: it fits on every row whose id does not start with
PREFIX, from data/cost_model.json's values (or from --cost-model FILE's), and prints the held-out
rows predicted under the result (korthikanti2022_t5 holds out Table 5).

Which figure is compared follows each row's metric_definition:
  - Narayanan et al. 2021 Tables 1 and 2: teraFLOP/s per GPU counting the recomputed forward
    pass, against autopar's hardware_tflops_per_gpu.
  - Korthikanti et al. 2022 Table 5 and Section 6.3: iteration time, against step_time_s.
  - Megatron-LM README (H100): model teraFLOP/s per GPU, against tflops_per_gpu.
Rows the data cannot configure are listed as skipped with the reason: Table 4 (one layer's
forward and backward, not a step) and the README's strong-scaling rows (no parallel config).
Where a row leaves a setting unstated, the assumption is printed in its line:
  - Table 2's PTD-P rows give only the model-parallel size: TP 8 x PP (size / 8), as Table 1.
  - Table 2 states no recompute; its FLOP formula assumes full recompute, so full it is.
  - README rows state no micro-batch, recompute or sequence parallel: micro-batch 1, no
    recompute, sequence parallel with TP > 1, distributed optimizer (ZeRO 1), bf16.
"""
import concurrent.futures
import datetime
import json
import os
import subprocess
import sys
import tempfile

# The row mapping both scripts share (recompute, precision, --framework and the flags a row
# states) is bench/published.py's.
from published import framework_flags, precision_of, recompute_of

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "..", "shared", "data", "published", "calibration.jsonl")


def configure(row):
    """(estimate flags, assumptions, metric, published value), or (None, reason)."""
    rid = row["id"]
    if "_t4_" in rid:
        return None, "Table 4 times one layer's forward and backward, not a training step"
    if row.get("tp") is None and row.get("dp") is None:
        return None, "no parallel configuration published"
    notes = []
    tp, pp, dp = row.get("tp"), row.get("pp"), row.get("dp")
    if tp is None or pp is None:
        model_parallel = row["other_metrics"]["model_parallel_size"]
        tp, pp = 8, model_parallel // 8
        notes.append(f"TP 8 x PP {pp} assumed")
    mbs = row.get("micro_batch_size")
    if mbs is None:
        mbs = 1
        notes.append("mbs 1 assumed")
    readme = rid.startswith("megatron_readme")
    sequence_parallel = bool(row.get("sequence_parallel"))
    zero = 0
    if readme:
        sequence_parallel = tp > 1
        zero = 1
        notes.append("SP with TP>1, ZeRO 1 assumed")
    if "zero3" in rid:
        zero = 3
    gpu = row["gpu_type"]
    cluster = "dgx-h100" if "H100" in gpu else "dgx-a100-80g"
    precision = precision_of(row, notes)
    flags = ["--cluster", cluster, "--tp", tp, "--pp", pp, "--dp", dp, "--mbs", mbs,
             "--gbs", row["global_batch_size"], "--recompute", recompute_of(row),
             "--zero", zero, "--precision", precision]
    flags += framework_flags(row)
    if row.get("vpp"):
        flags += ["--vpp", row["vpp"]]
    if sequence_parallel:
        flags.append("--sequence-parallel")
    if row.get("iteration_time_s") is not None:
        return (flags, notes, "step_time_s", row["iteration_time_s"]), None
    if rid.startswith("narayanan2021"):
        return (flags, notes, "hardware_tflops_per_gpu", row["tflops_per_gpu"]), None
    return (flags, notes, "tflops_per_gpu", row["tflops_per_gpu"]), None


def dimensions(row):
    """Every row is Megatron-LM's GPT: GeLU, LayerNorm, learned positions, biases, the word
    embedding shared with the output layer, and --hidden-dropout's default 0.1 after attention
    and after the MLP (no row states other settings)."""
    return {"name": row["id"], "num_layers": row["num_layers"], "hidden_size": row["hidden_size"],
            "ffn_hidden_size": row.get("ffn_hidden_size") or 4 * row["hidden_size"],
            "num_attention_heads": row["num_attention_heads"],
            "num_kv_heads": row.get("num_kv_heads") or row["num_attention_heads"],
            "vocab_size": row["vocab_size"], "seq_length": row["seq_length"], "swiglu": False,
            "tied_embeddings": True, "hidden_dropout": 0.1}


def table_of(rid):
    if rid.startswith("narayanan2021_t1"):
        return "Narayanan T1"
    if rid.startswith("narayanan2021_t2"):
        return "Narayanan T2"
    if rid.startswith("korthikanti2022_t5"):
        return "Korthikanti T5"
    if rid.startswith("korthikanti2022"):
        return "Korthikanti 6.3"
    return "Megatron README H100"


def predict(autopar, rows, scratch, cost_model=None):
    """Per row: (row, metric, published, predicted, notes, fits) or (row, None, reason)."""
    def one(row):
        config, reason = configure(row)
        if config is None:
            return (row, None, f"skipped: {reason}")
        flags, notes, metric, published = config
        dims = os.path.join(scratch, row["id"] + ".json")
        with open(dims, "w") as file:
            json.dump(dimensions(row), file)
        command = [autopar, "estimate", "--model", dims, "--json"] + [str(f) for f in flags]
        if cost_model:
            command += ["--cost-model", cost_model]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode not in (0, 3):
            return (row, None, f"failed: {done.stderr.strip()}")
        result = json.loads(done.stdout)
        return (row, metric, published, result[metric], notes, result["fits"])
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return list(pool.map(one, rows))


def mape(results, without_zero3=False):
    errors = [abs(r[3] / r[2] - 1) for r in results
              if r[1] is not None and not (without_zero3 and "zero3" in r[0]["id"])]
    return 100 * sum(errors) / len(errors)


# Per-device overrides fitted on that device's rows. The H100 rows (Megatron-LM README, 2024) come
# from a newer software stack than the A100 rows (2021-2022: no FlashAttention, no overlap of
# tensor-parallel communication), so their attention and matmul efficiencies are fitted apart;
# H100's larger tiles and 132 SMs (A100: 108) need larger GEMMs to fill, so its tile_dim too.
DEVICE_KEYS = {"H100": ["matmul_efficiency", "attention_efficiency", "tile_dim"]}

# The fit stays within what the hardware allows: large GEMMs reach at most about 85% of dense
# peak, streaming kernels about 90% of HBM bandwidth (NVIDIA's GEMM and STREAM figures), and
# attention at least 20%. A GEMM dim of tile_dim runs at half efficiency: at most twice cuBLAS's
# widest tile (256). An unbounded fit drifts outside (matmul 0.93 on H100, memory 0.996),
# absorbing effects the model does not have. A list-API collective's per-rank copy costs at least
# one CUDA launch (a few microseconds) and at most the ~20 us NVIDIA's Nsight Systems guide
# times for one PyTorch element-wise op end to end.
BOUNDS = {"matmul_efficiency": (0.4, 0.85), "attention_efficiency": (0.2, 0.85),
          "vector_efficiency": (0.05, 0.6), "memory_efficiency": (0.5, 0.9),
          "tile_dim": (8.0, 512.0), "list_collective_copy_seconds": (2e-6, 2e-5)}


def with_values(model, values):
    """The cost model with `values` ({key or (device, key): value}) put in."""
    result = json.loads(json.dumps(model))
    for key, value in values.items():
        if isinstance(key, tuple):
            result.setdefault("devices", {}).setdefault(key[0], {})[key[1]] = value
        else:
            result[key] = value
    return result


# A sweep that lowers the MAPE by less than this many percentage points ends the fit: past it the
# descent creeps (tile_dim gained 0.01 points a sweep for six sweeps in the 2026-11-24 refit).
FIT_TOLERANCE = 0.05


def rows_moved_by(key, rows):
    """The rows a constant can move: a device's override only that device's rows; a global
    efficiency that every device overrides (matmul, attention) only the other devices' rows; the
    list-API copy only the rows whose framework calls list collectives."""
    def device_of(row):
        return "H100" if "H100" in row["gpu_type"] else "A100-SXM4-80GB"
    if isinstance(key, tuple):
        return [row for row in rows if device_of(row) == key[0]]
    if key == "list_collective_copy_seconds":
        return [row for row in rows if "megatron-deepspeed" in framework_flags(row)]
    overridden = {device for device, names in DEVICE_KEYS.items() if key in names}
    return [row for row in rows if device_of(row) not in overridden]


def fit(autopar, rows, scratch, write, start=None):
    """Fits from the values of `start` (a cost-model file; data/cost_model.json by default)."""
    model_path = os.path.join(ROOT, "data", "cost_model.json")
    model = json.load(open(start or model_path))
    keys = ["matmul_efficiency", "attention_efficiency", "vector_efficiency",
            "memory_efficiency", "tile_dim", "list_collective_copy_seconds"]
    keys += [(device, key) for device, names in DEVICE_KEYS.items() for key in names]
    candidate = os.path.join(scratch, "candidate.json")

    def evaluate(values, subset):
        """Results of `subset` under `values`, by row id."""
        with open(candidate, "w") as file:
            json.dump(with_values(model, values), file)
        return {result[0]["id"]: result for result in
                predict(autopar, subset, scratch, candidate)}

    def current(key):
        if isinstance(key, tuple):
            return model.get("devices", {}).get(key[0], {}).get(key[1], model[key[1]])
        return model[key]

    values = {key: current(key) for key in keys}
    results = evaluate(values, rows)
    best = mape(list(results.values()))
    print(f"start: MAPE {best:.2f}% {values}", flush=True)
    changed = True
    while changed:
        changed = False
        before = best
        for key in keys:
            for factor in (0.8, 0.9, 1.1, 1.25):
                trial = dict(values)
                trial[key] = values[key] * factor
                low, high = BOUNDS[key[1] if isinstance(key, tuple) else key]
                if not low <= trial[key] <= high:
                    continue
                # Only the rows the constant moves are run again.
                trial_results = dict(results)
                trial_results.update(evaluate(trial, rows_moved_by(key, rows)))
                result = mape(list(trial_results.values()))
                if result < best - 1e-6:
                    best, values, results, changed = result, trial, trial_results, True
                    print(f"  {key} x{factor}: MAPE {best:.2f}%", flush=True)
        changed = changed and before - best >= FIT_TOLERANCE
    print(f"fitted: MAPE {best:.2f}% {values}")
    if write:
        model = with_values(model, {key: float(f"{value:.4g}") for key, value in values.items()})
        model["fitted"] = (f"bench/calibration.py --fit --write on "
                           f"{datetime.date.today().isoformat()}: MAPE {best:.2f}% over every "
                           f"configurable row of calibration.jsonl")
        with open(model_path, "w") as file:
            json.dump(model, file, indent=2)
            file.write("\n")
        print(f"wrote {model_path}; rebuild to compile it in")
    return with_values(model, values)


def main():
    args = sys.argv[1:]
    autopar = os.path.join(ROOT, "build", "release", "autopar")
    prefix, cost_model, hold_out = "", None, None
    for option in ("--rows", "--cost-model", "--hold-out"):
        if option in args:
            value = args[args.index(option) + 1]
            del args[args.index(option):args.index(option) + 2]
            if option == "--rows":
                prefix = value
            elif option == "--cost-model":
                cost_model = value
            else:
                hold_out = value
    fitting, write = "--fit" in args, "--write" in args
    args = [a for a in args if a not in ("--fit", "--write")]
    if args:
        autopar = args[0]
    rows = [json.loads(line) for line in open(DATA) if line.strip()]
    rows = [row for row in rows if row["id"].startswith(prefix)]
    with tempfile.TemporaryDirectory() as scratch:
        if fitting:
            fit(autopar, rows, scratch, write)
            return
        if hold_out:
            train = [row for row in rows if not row["id"].startswith(hold_out)]
            fitted = fit(autopar, train, scratch, False, start=cost_model)
            cost_model = os.path.join(scratch, "held_out_fit.json")
            with open(cost_model, "w") as file:
                json.dump(fitted, file)
            rows = [row for row in rows if row["id"].startswith(hold_out)]
            print(f"\nheld out: {len(rows)} rows starting {hold_out}, under the fit above\n")
        results = predict(autopar, rows, scratch, cost_model)
    print(f"{'row':<48} {'metric':<24} {'published':>10} {'predicted':>10} {'error':>8}  notes")
    errors = {}
    for result in results:
        row = result[0]
        if result[1] is None:
            print(f"{row['id']:<48} {result[2]}")
            continue
        _, metric, published, predicted, notes, fits = result
        error = predicted / published - 1
        errors.setdefault(table_of(row["id"]), []).append(error)
        if not fits:
            notes = notes + ["over device memory"]
        print(f"{row['id']:<48} {metric:<24} {published:>10.2f} {predicted:>10.2f} "
              f"{100 * error:>+7.1f}%  {'; '.join(notes)}")
    print()
    everything = []
    for table, values in errors.items():
        everything += values
        table_mape = 100 * sum(abs(e) for e in values) / len(values)
        worst = 100 * max(abs(e) for e in values)
        print(f"{table:<24} rows {len(values):>3}  MAPE {table_mape:5.1f}%  max {worst:5.1f}%")
    if everything:
        print(f"{'overall':<24} rows {len(everything):>3}  MAPE {mape(results):5.1f}%")
        print(f"{'without ZeRO-3 rows':<24} rows "
              f"{sum(1 for r in results if r[1] is not None and 'zero3' not in r[0]['id']):>3}"
              f"  MAPE {mape(results, without_zero3=True):5.1f}%")


if __name__ == "__main__":
    main()
