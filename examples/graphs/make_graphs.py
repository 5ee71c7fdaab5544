#!/usr/bin/env python3
"""Writes the example graphs that are not decoder transformers (docs/graph-format.md):

  vit_encoder.json        a ViT-Base-style image encoder: patch embedding, 16 encoder blocks
                          ("encoder.layer.<i>": pre-norm attention and GeLU MLP), mean pooling,
                          a 1,000-class head (bf16, batch 64)
  recsys.json             a recommendation model with a large embedding table (seed 001's
                          setting): 26 sparse features looked up in one 10M x 128 table, a bottom
                          MLP for 13 dense features, 16 top-MLP blocks ("top.layer.<i>") and a
                          click head (fp32, batch 2,048)
  vit_encoder_small.json  the same shapes of graph, small and in fp32, for `autopar check` on
  recsys_small.json       CPU ranks (tests/runtime/check.test)

Each block is tagged, so `autopar search` pipelines the blocks and `autopar plan` can place them.
Run from the repository root: examples/graphs/make_graphs.py (the files are checked in; a test
regenerates them and compares).
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


class Graph:
    def __init__(self, name, description, dtype):
        self.name, self.description, self.dtype = name, description, dtype
        self.tensors, self.ops = [], []

    def tensor(self, name, shape, role="parameter", dtype=None):
        self.tensors.append({"name": name, "shape": shape, "dtype": dtype or self.dtype, "role": role})
        return name

    def op(self, name, kind, inputs, block=None, **attrs):
        op = {"name": name, "kind": kind, "inputs": inputs, "outputs": [name]}
        if attrs:
            op["attrs"] = attrs
        if block:
            op["block"] = block
        self.ops.append(op)
        return name

    def linear(self, name, x, fan_in, fan_out, block=None, bias=True):
        y = self.op(f"{name}.matmul", "MatMul", [x, self.tensor(f"{name}.weight", [fan_in, fan_out])], block)
        if not bias:
            return y
        return self.op(f"{name}.bias_add", "Add", [y, self.tensor(f"{name}.bias", [fan_out])], block)

    def layer_norm(self, name, x, width, block=None):
        gamma = self.tensor(f"{name}.weight", [width])
        beta = self.tensor(f"{name}.bias", [width])
        return self.op(name, "LayerNorm", [x, gamma, beta], block, epsilon=1e-6)

    def json(self):
        return {"format": "autopar.graph", "version": 1, "name": self.name,
                "description": self.description, "tensors": self.tensors, "ops": self.ops}


def vit_encoder(name, batch, patches, patch_features, hidden, heads, ffn, layers, classes, dtype):
    g = Graph(name, f"ViT-style encoder: {layers} blocks, hidden {hidden}, {heads} heads, "
                    f"{patches} patches, {classes} classes", dtype)
    pixels = g.tensor("patches", [batch, patches, patch_features], role="input")
    labels = g.tensor("labels", [batch], role="input", dtype="int64")
    x = g.linear("patch_embed", pixels, patch_features, hidden)
    x = g.op("pos_embed", "Add", [x, g.tensor("pos_embed.weight", [patches, hidden])])
    for i in range(layers):
        block = f"encoder.layer.{i}"
        p = f"layer{i}"
        h = g.layer_norm(f"{p}.attn_norm", x, hidden, block)
        q = g.linear(f"{p}.attn.q_proj", h, hidden, hidden, block)
        k = g.linear(f"{p}.attn.k_proj", h, hidden, hidden, block)
        v = g.linear(f"{p}.attn.v_proj", h, hidden, hidden, block)
        a = g.op(f"{p}.attn.attention", "FlashAttention", [q, k, v], block, num_heads=heads,
                 causal=False)
        o = g.linear(f"{p}.attn.o_proj", a, hidden, hidden, block)
        x = g.op(f"{p}.attn.residual", "Add", [x, o], block)
        h = g.layer_norm(f"{p}.mlp_norm", x, hidden, block)
        h = g.linear(f"{p}.mlp.fc1", h, hidden, ffn, block)
        h = g.op(f"{p}.mlp.act", "GeLU", [h], block)
        h = g.linear(f"{p}.mlp.fc2", h, ffn, hidden, block)
        x = g.op(f"{p}.mlp.residual", "Add", [x, h], block)
    x = g.layer_norm("final_norm", x, hidden)
    x = g.op("pool", "ReduceMean", [x], axes=[1])
    logits = g.linear("head", x, hidden, classes)
    g.op("loss", "CrossEntropy", [logits, labels])
    return g


def recsys(name, batch, rows, width, sparse, dense, hidden, layers, dtype):
    g = Graph(name, f"Recommendation model: {sparse} sparse features in one {rows} x {width} "
                    f"table, {dense} dense features, {layers} top-MLP blocks of {hidden}", dtype)
    ids = g.tensor("sparse_ids", [batch, sparse], role="input", dtype="int64")
    dense_in = g.tensor("dense", [batch, dense], role="input")
    labels = g.tensor("labels", [batch], role="input", dtype="int64")
    table = g.tensor("embedding.weight", [rows, width])
    looked_up = g.op("embedding", "Gather", [table, ids])
    flat = g.op("flatten", "Reshape", [looked_up], new_shape=[batch, sparse * width])
    d = g.op("bottom.act", "ReLU", [g.linear("bottom.fc", dense_in, dense, width)])
    x = g.op("interaction", "Concat", [flat, d], axis=1)
    x = g.op("top.in.act", "ReLU", [g.linear("top.in", x, (sparse + 1) * width, hidden)])
    for i in range(layers):
        block = f"top.layer.{i}"
        h = g.linear(f"top{i}.fc", x, hidden, hidden, block)
        x = g.op(f"top{i}.act", "ReLU", [h], block)
    logits = g.linear("click", x, hidden, 2)
    g.op("loss", "CrossEntropy", [logits, labels])
    return g


GRAPHS = {
    "vit_encoder.json": lambda: vit_encoder("vit_encoder", 64, 196, 768, 768, 12, 3072, 16, 1000,
                                            "bf16"),
    "vit_encoder_small.json": lambda: vit_encoder("vit_encoder_small", 8, 8, 16, 32, 4, 64, 2, 10,
                                                  "fp32"),
    "recsys.json": lambda: recsys("recsys", 2048, 10_000_000, 128, 26, 13, 1024, 16, "fp32"),
    "recsys_small.json": lambda: recsys("recsys_small", 8, 64, 8, 4, 4, 32, 2, "fp32"),
}


def render(graph):
    """One op or tensor per line, as the hand-written examples read."""
    doc = graph.json()
    lines = ["{"]
    for key in ("format", "version", "name", "description"):
        lines.append(f"  {json.dumps(key)}: {json.dumps(doc[key])},")
    for key in ("tensors", "ops"):
        lines.append(f"  {json.dumps(key)}: [")
        items = [f"    {json.dumps(item)}" for item in doc[key]]
        lines.append(",\n".join(items))
        lines.append("  ]," if key == "tensors" else "  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for name, build in GRAPHS.items():
        text = render(build())
        path = HERE / name
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        sys.exit(f"make_graphs: {', '.join(stale)} differ from what the script writes; run "
                 "examples/graphs/make_graphs.py")


if __name__ == "__main__":
    main()
