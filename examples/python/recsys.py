#!/usr/bin/env python3
"""A recommendation model written in PyTorch: sparse features looked up in one large embedding
table, a bottom MLP for the dense features, their concatenation through a top MLP of alike
blocks, and a click classifier. Traced with autopar.from_torch and searched on one 8-GPU H100
node, where the table is what must be sharded.

    PYTHONPATH=build/release/python python3 examples/python/recsys.py
"""

import sys

import torch
import torch.nn.functional as F
from torch import nn

import autopar


class TopBlock(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.fc = nn.Linear(hidden, hidden)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x))


class RecSys(nn.Module):
    def __init__(self, rows=10_000_000, width=128, sparse=26, dense=13, hidden=1024, blocks=4):
        super().__init__()
        # Left uninitialised (skip_init): the pages of a 5 GB table that tracing never reads are
        # never touched.
        self.embedding = nn.utils.skip_init(nn.Embedding, rows, width)
        self.bottom = nn.Linear(dense, width)
        self.top_in = nn.Linear((sparse + 1) * width, hidden)
        self.top = nn.Sequential(*(TopBlock(hidden) for _ in range(blocks)))
        self.click = nn.Linear(hidden, 2)

    def forward(self, sparse_ids, dense, labels):
        looked_up = self.embedding(sparse_ids).flatten(1)
        x = torch.cat([looked_up, F.relu(self.bottom(dense))], dim=1)
        x = self.top(F.relu(self.top_in(x)))
        return F.cross_entropy(self.click(x), labels)


def example_inputs(batch, rows, sparse=26, dense=13):
    return (torch.randint(0, rows, (batch, sparse)), torch.randn(batch, dense),
            torch.randint(0, 2, (batch,)))


def main():
    graph = autopar.from_torch(RecSys(), example_inputs(4096, 10_000_000), name="recsys")
    print(graph)
    best = autopar.search(model=graph, cluster="dgx-h100", gbs=32768)
    print(f"step {best.step_seconds:.3f} s, peak {best.estimate['peak_memory_bytes'] / 2**30:.2f} "
          f"GiB, fits: {best.fits}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
