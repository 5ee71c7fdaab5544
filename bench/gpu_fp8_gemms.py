#!/usr/bin/env python3
"""fp8 against bf16 GEMMs on a real GPU, at the per-device shapes of the published fp8 runs.

The cost model prices an fp8 GEMM (Transformer Engine's, through cuBLASLt) as its bf16 twin divided
by one measured speed-up, fp8_matmul_speedup: every fp8 GEMM is the same multiple faster, whatever
its shape. This times both on the GPU at the linear layers' shapes of dgxc's GPT-3 175B (TP 4,
sequence 2048), Llama 3.1 8B (TP 1, CP 2, sequence 8192) and Llama 3.1 70B (TP 4, CP 2), each
layer's forward GEMM and its two backward ones (data gradient, weight gradient), and prints the
measured speed-up beside the model's.

  bench/gpu_fp8_gemms.py measure OUT     on the GPU machine (PyTorch): times every GEMM, writes OUT
  bench/gpu_fp8_gemms.py compare [MEASURED]
                                         here: the measured speed-ups beside the cost model's
                                         (default bench/data/gpu_fp8_gemms_h100.json)
fp8 is E4M3 for both operands with per-tensor scales and a bf16 output (torch._scaled_mm, the
cuBLASLt call Transformer Engine makes; its backward multiplies E5M2 gradients, which run at the
same rate). Results: BENCHMARKS.md.
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MEASURED = os.path.join(ROOT, "bench", "data", "gpu_fp8_gemms_h100.json")

# (model, layer, tokens M, input width K, output width N) per device.
LINEARS = [
    ("gpt3-175b tp4", "qkv", 2048, 12288, 9216),
    ("gpt3-175b tp4", "proj", 2048, 3072, 12288),
    ("gpt3-175b tp4", "fc1", 2048, 12288, 12288),
    ("gpt3-175b tp4", "fc2", 2048, 12288, 12288),
    ("llama3.1-8b tp1 cp2", "qkv", 4096, 4096, 6144),
    ("llama3.1-8b tp1 cp2", "proj", 4096, 4096, 4096),
    ("llama3.1-8b tp1 cp2", "fc1", 4096, 4096, 28672),
    ("llama3.1-8b tp1 cp2", "fc2", 4096, 14336, 4096),
    ("llama3.1-70b tp4 cp2", "qkv", 4096, 8192, 2560),
    ("llama3.1-70b tp4 cp2", "proj", 4096, 2048, 8192),
    ("llama3.1-70b tp4 cp2", "fc1", 4096, 8192, 14336),
    ("llama3.1-70b tp4 cp2", "fc2", 4096, 7168, 8192),
]


def gemms(m, k, n):
    """The forward GEMM and the backward's two, as (pass, rows, depth, columns)."""
    return [("fwd", m, k, n), ("dgrad", m, n, k), ("wgrad", k, m, n)]


def measure(out_path):
    import gpu_timing
    import torch

    device = torch.device("cuda")
    torch.manual_seed(0)

    def timed(fn):
        return gpu_timing.timed(fn, repeats=7, inner=20, warmup=5)

    rows = []
    for model, layer, m, k, n in LINEARS:
        for gemm, rows_, depth, cols in gemms(m, k, n):
            a = torch.randn(rows_, depth, device=device, dtype=torch.bfloat16)
            # cuBLASLt's fp8 GEMM takes the second operand column-major: a transposed view.
            b = torch.randn(cols, depth, device=device, dtype=torch.bfloat16).t()
            bf16_s = timed(lambda: a @ b)
            a8 = a.to(torch.float8_e4m3fn)
            b8 = b.t().contiguous().to(torch.float8_e4m3fn).t()
            one = torch.ones((), device=device, dtype=torch.float32)
            fp8_s = timed(lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one,
                                                   out_dtype=torch.bfloat16))
            rows.append({"model": model, "layer": layer, "gemm": gemm, "m": rows_, "k": depth,
                         "n": cols, "bf16_s": bf16_s, "fp8_s": fp8_s})
            print(rows[-1], flush=True)
            del a, b, a8, b8
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "cuda": torch.version.cuda, "gemms": rows}
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)


def model_speedup():
    """The cost model's fp8 / bf16 GEMM speed-up (data/cost_model.json's fp8_matmul_speedup, which
    this measurement set; before, a fitted fp8 efficiency made it 1.898 on H100)."""
    constants = json.load(open(os.path.join(ROOT, "data", "cost_model.json")))
    return constants["fp8_matmul_speedup"]


def compare(measured_path):
    measured = json.load(open(measured_path))
    predicted = model_speedup()
    print(f"Measured on {measured['device']} (PyTorch {measured['torch']}, CUDA "
          f"{measured['cuda']}). The cost model's fp8 / bf16 speed-up of every GEMM "
          f"(fp8_matmul_speedup): {predicted:.3f}.\n")
    print("| model | layer | GEMM | M x K x N | bf16 TFLOP/s | fp8 TFLOP/s | speed-up |")
    print("|---|---|---|---|---|---|---|")
    by_model = {}
    for row in measured["gemms"]:
        flops = 2.0 * row["m"] * row["k"] * row["n"]
        speedup = row["bf16_s"] / row["fp8_s"]
        model = by_model.setdefault(row["model"], [0.0, 0.0])
        model[0] += row["bf16_s"]
        model[1] += row["fp8_s"]
        print(f"| {row['model']} | {row['layer']} | {row['gemm']} | {row['m']} x {row['k']} x "
              f"{row['n']} | {flops / row['bf16_s'] / 1e12:.0f} | {flops / row['fp8_s'] / 1e12:.0f} "
              f"| {speedup:.2f} |")
    print("\n| model | its layer's GEMMs, fp8 / bf16 speed-up | the cost model's |")
    print("|---|---|---|")
    for model, (bf16_s, fp8_s) in by_model.items():
        print(f"| {model} | {bf16_s / fp8_s:.3f} | {predicted:.3f} |")
    bf16_s = sum(row["bf16_s"] for row in measured["gemms"])
    fp8_s = sum(row["fp8_s"] for row in measured["gemms"])
    print(f"| every GEMM | {bf16_s / fp8_s:.3f} | {predicted:.3f} |")


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "measure" and len(sys.argv) == 3:
        measure(sys.argv[2])
    elif len(sys.argv) >= 2 and sys.argv[1] == "compare":
        compare(sys.argv[2] if len(sys.argv) > 2 else DEFAULT_MEASURED)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
