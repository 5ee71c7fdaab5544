"""Timing kernels on a GPU with CUDA events, for bench/gpu_kernels.py and bench/gpu_fp8_gemms.py
(run on the GPU machine; PyTorch only)."""
import statistics


def timed(fn, repeats, inner, warmup):
    """Median over `repeats` of the mean time of `inner` back-to-back calls of `fn`, in seconds,
    after `warmup` calls."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            fn()
        stop.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(stop) / 1e3 / inner)
    return statistics.median(samples)
