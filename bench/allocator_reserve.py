#!/usr/bin/env python3
"""What-if for the runtime reserve's allocator share (data/cost_model.json, allocator_reserve).

autopar adds allocator_reserve x the tensors a step allocates and frees (activations, workspaces,
collective buffers, gradients outside a contiguous buffer) to every stage: PyTorch's caching
allocator fragments those, not the state allocated once (planner::transientStageBytes). For every
published row with a measured peak (torchtitan's, whose FSDP2 frees the gradients every step),
this prints the error of the peak autopar predicts now, of the peak with the reserve taken as
FRACTION x that transient part, and of the peak under the earlier model, 5% of the whole peak.

usage: bench/allocator_reserve.py AUTOPAR [FRACTION ...]
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import published  # noqa: E402  (the same configurations as bench/published.py)

GIB = 2 ** 30


def stage_at_peak(autopar, config, scratch):
    out, failure = published.estimate(autopar, config, scratch)
    if out is None:
        raise SystemExit(f"{config['row']['id']}: {failure}")
    return max(out["stages"], key=lambda stage: stage["peak_memory_bytes"])


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    autopar = sys.argv[1]
    fractions = [float(f) for f in sys.argv[2:]] or [0.05, 0.10]
    reserve = json.load(open(os.path.join(os.path.dirname(__file__), "..", "data",
                                          "cost_model.json")))["allocator_reserve"]
    rows = published.load_rows("")
    measured = []
    with tempfile.TemporaryDirectory() as scratch:
        for row in rows:
            config, _ = published.configure(row)
            if config is None or row.get("peak_memory") is None:
                continue
            stage = stage_at_peak(autopar, config, scratch)
            persistent = stage["parameters_bytes"] + stage["optimizer_bytes"]
            transient = (stage["gradients_bytes"] + stage["activations_bytes"] +
                         stage["workspace_bytes"] + stage["communication_bytes"])
            fixed = stage["runtime_bytes"] - reserve * transient
            measured.append((row["id"], published.measured_peak_gib(row) * GIB,
                             stage["peak_memory_bytes"], persistent, transient, fixed))
    print(f"{len(measured)} rows with a measured peak; now: {reserve:.0%} of the transient part")

    def report(label, predicted):
        errors = [p / m - 1 for (_, m, *_), p in zip(measured, predicted)]
        mape = 100 * sum(abs(e) for e in errors) / len(errors)
        signed = 100 * sum(errors) / len(errors)
        within = sum(abs(e) <= 0.10 for e in errors)
        print(f"{label:<34} MAPE {mape:4.1f}%  signed {signed:+5.1f}%  worst {100 * min(errors):+6.1f}%"
              f"  within 10%: {within} of {len(errors)}")

    report("now", [peak for _, _, peak, *_ in measured])
    report("5% of the whole peak (before)", [
        1.05 * (persistent + transient) + fixed
        for _, _, _, persistent, transient, fixed in measured])
    for fraction in fractions:
        report(f"{fraction:.0%} of the transient part", [
            persistent + transient + fixed + fraction * transient
            for _, _, _, persistent, transient, fixed in measured])


if __name__ == "__main__":
    main()
