#!/usr/bin/env python3
"""A small GPT written in PyTorch, traced with autopar.from_torch and searched on one 8-GPU H100
node: the traced blocks are pipelined and sharded like a preset transformer's layers.

    PYTHONPATH=build/release/python python3 examples/python/gpt.py
"""

import math
import sys

import torch
import torch.nn.functional as F
from torch import nn

import autopar


class Block(nn.Module):
    """Pre-norm attention (causal, by an additive mask) and a GeLU MLP."""

    def __init__(self, hidden, heads, seq):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(hidden)
        self.q = nn.Linear(hidden, hidden)
        self.k = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.norm2 = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, 4 * hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * hidden, hidden)
        mask = torch.full((seq, seq), float("-inf")).triu(1)
        self.register_buffer("causal_mask", mask)

    def forward(self, x):
        b, s, h = x.size(0), x.size(1), x.size(2)  # torch.fx traces size(), not unpacking
        d = h // self.heads
        y = self.norm1(x)
        q = self.q(y).view(b, s, self.heads, d).transpose(1, 2)
        k = self.k(y).view(b, s, self.heads, d).transpose(1, 2)
        v = self.v(y).view(b, s, self.heads, d).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d) + self.causal_mask
        context = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, s, h)
        x = x + self.proj(context)
        return x + self.fc2(self.act(self.fc1(self.norm2(x))))


class GPT(nn.Module):
    def __init__(self, vocab=32000, hidden=1024, heads=16, layers=4, seq=1024):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.pos = nn.Parameter(torch.zeros(seq, hidden))
        self.blocks = nn.ModuleList(Block(hidden, heads, seq) for _ in range(layers))
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, tokens, labels):
        x = self.embed(tokens) + self.pos
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten())


def example_inputs(batch, seq, vocab):
    tokens = torch.randint(0, vocab, (batch, seq))
    return tokens, torch.randint(0, vocab, (batch, seq))


def main():
    model = GPT()
    graph = autopar.from_torch(model, example_inputs(2, 1024, 32000), name="gpt")
    print(graph)
    best = autopar.search(model=graph, cluster="dgx-h100", gbs=64)
    print(f"step {best.step_seconds:.3f} s, peak {best.estimate['peak_memory_bytes'] / 2**30:.2f} "
          f"GiB, fits: {best.fits}")
    stages = best.estimate["stages"]
    print(f"{len(stages)} pipeline stages, the last blocks of each: "
          f"{[stage['blocks'][1] or '(head)' for stage in stages]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
