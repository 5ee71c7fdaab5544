#!/usr/bin/env python3
"""A preset searched and exported from Python: LLaMA2-7B on one DGX-A100 node, the best
configuration's launch script and MindFormers yaml, and the same configuration estimated.

    PYTHONPATH=build/release/python python3 examples/python/search_preset.py
"""

import sys

import autopar


def main():
    best = autopar.search(model="llama2-7b", nodes=1, gbs=32)
    print(best)
    print(f"throughput {best.throughput:.0f} tokens/s")
    print(best.launch_script.splitlines()[1])
    estimate = autopar.estimate(model="llama2-7b", tp=best.tp, pp=best.pp, dp=best.dp,
                                mbs=best.micro_batch_size, zero=best.zero, gbs=32,
                                sequence_parallel=best.sequence_parallel)
    print(estimate)
    try:
        autopar.plan(model="gpt3-175b", cluster="dgx-h100", nodes=8, tp=8)
    except autopar.DoesNotFit as error:
        print(error.message.splitlines()[0])
        for fix in error.fixes:
            print(f"  fits with {fix['keywords']}: step {fix['step_time_s']:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
