#!/usr/bin/env python3
"""A ViT-style image encoder written in PyTorch (patches cut by reshape and permute, a linear patch
embedding, encoder blocks, mean pooling, a classifier), traced with autopar.from_torch and searched
on one DGX H100 node.

    PYTHONPATH=build/release/python python3 examples/python/vit.py
"""

import math
import sys

import torch
import torch.nn.functional as F
from torch import nn

import autopar


class EncoderBlock(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.norm2 = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, 4 * hidden)
        self.fc2 = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        b, n, h = x.size(0), x.size(1), x.size(2)  # torch.fx traces size(), not unpacking
        d = h // self.heads
        qkv = self.qkv(self.norm1(x)).view(b, n, 3, self.heads, d).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0:1].reshape(b, self.heads, n, d), qkv[1:2].reshape(b, self.heads, n, d), \
            qkv[2:3].reshape(b, self.heads, n, d)
        attention = (q @ k.transpose(-2, -1) / math.sqrt(d)).softmax(dim=-1)
        x = x + self.proj((attention @ v).transpose(1, 2).reshape(b, n, h))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class ViT(nn.Module):
    def __init__(self, image=224, patch=16, channels=3, hidden=768, heads=12, layers=4,
                 classes=1000):
        super().__init__()
        self.patch = patch
        self.patches = (image // patch) ** 2
        self.embed = nn.Linear(channels * patch * patch, hidden)
        self.pos = nn.Parameter(torch.zeros(self.patches, hidden))
        self.blocks = nn.Sequential(*(EncoderBlock(hidden, heads) for _ in range(layers)))
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, images, labels):
        b, c, height, width = (images.size(i) for i in range(4))
        p = self.patch
        patches = images.reshape(b, c, height // p, p, width // p, p).permute(0, 2, 4, 1, 3, 5)
        x = self.embed(patches.reshape(b, self.patches, c * p * p)) + self.pos
        x = self.norm(self.blocks(x)).mean(dim=1)
        return F.cross_entropy(self.head(x), labels)


def example_inputs(batch, image, classes, channels=3):
    return torch.randn(batch, channels, image, image), torch.randint(0, classes, (batch,))


def main():
    graph = autopar.from_torch(ViT(), example_inputs(8, 224, 1000), name="vit")
    print(graph)
    best = autopar.search(model=graph, cluster="dgx-h100", gbs=256)
    print(f"step {best.step_seconds:.3f} s, peak {best.estimate['peak_memory_bytes'] / 2**30:.2f} "
          f"GiB, fits: {best.fits}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
