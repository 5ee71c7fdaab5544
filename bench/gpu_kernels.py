#!/usr/bin/env python3
"""The cost model's per-op times against the same kernels timed on a real GPU.

autopar's constants are fitted on end-to-end published runs; this checks the per-op times they
give against kernels measured one by one, out of sample. For a few layers (LLaMA2-7B whole on one
H100 under torchtitan's code path, at micro-batch 1 and 2; the TP-8 shard of a LLaMA2-70B layer
under Megatron-Core's) each op of the first layer, the embedding and the head is planned by
`autopar plan --json` (its forward_s and backward_s), then run at the same per-device shape on
the GPU with PyTorch: GEMMs through cuBLAS (what Transformer Engine's bf16 GEMM runs too), the
attention core through scaled_dot_product_attention with the backend the profile names
(FlashAttention-2 for torchtitan, cuDNN for Megatron-Core), the rest as torchtitan writes them in
eager mode (one kernel or a few per op). The whole first layer is also run as one eager module, so
the sum of its ops can be compared with the layer they make.

Three steps, so the GPU machine needs only PyTorch:
  bench/gpu_kernels.py spec [AUTOPAR] [SPEC]       plans the cases here, writes SPEC
                                                   (default bench/data/gpu_kernels_spec.json)
  bench/gpu_kernels.py measure SPEC OUT            on the GPU machine: times every op, writes OUT
  bench/gpu_kernels.py compare [AUTOPAR [SPEC MEASURED]]
                                                   plans the cases again here and prints their
                                                   times against MEASURED (default the H100's
                                                   file in bench/data/), run at SPEC's shapes
SPEC also keeps the predictions of the build that wrote it; compare prints the current build's.
Results and the GPU they ran on: BENCHMARKS.md.
"""
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "bench", "data")

# (case name, model, devices, tp, micro-batch, framework, attention backend)
CASES = [
    ("llama2-7b tp1 mbs1 torchtitan", "llama2-7b", 1, 1, 1, "torchtitan", "flash"),
    ("llama2-7b tp1 mbs2 torchtitan", "llama2-7b", 1, 1, 2, "torchtitan", "flash"),
    ("llama2-7b tp1 mbs1 megatron-core", "llama2-7b", 1, 1, 1, "megatron-core", "cudnn"),
    ("llama2-70b tp8 mbs1 megatron-core", "llama2-70b", 8, 8, 1, "megatron-core", "cudnn"),
]
# The profiles that run elementwise ops fused (docs/frameworks.md, "fused elementwise"): their
# norms, rotary, SiLU, products and residual adds run inside bigger kernels, which this script
# does not build; it runs them eager, as an upper bound, and leaves them out of the summary.
FUSED_ELEMENTWISE = {"megatron-core"}
ELEMENTWISE = {"RMSNorm", "Rotary", "SiLU", "Mul", "Add"}
CLUSTER = "dgx-h100"
FIRST_LAYER = "llm.layer.0"


def model_dims(autopar, model):
    """The preset's row of `autopar models`: layers, hidden, heads, kv heads, ffn, vocab, seq."""
    listing = subprocess.run([autopar, "models"], capture_output=True, text=True, check=True)
    for line in listing.stdout.splitlines():
        fields = line.split()
        if fields and fields[0] == model:
            keys = ("layers", "hidden", "heads", "kv", "ffn", "vocab", "seq")
            return dict(zip(keys, map(int, fields[1:8])))
    sys.exit(f"autopar models lists no {model}")


def global_width(name, dims):
    """The last dimension of an op's output, from its name in the transformer preset."""
    head_dim = dims["hidden"] // dims["heads"]
    widths = {"q_proj": dims["heads"] * head_dim, "k_proj": dims["kv"] * head_dim,
              "v_proj": dims["kv"] * head_dim, "q_rotary": dims["heads"] * head_dim,
              "k_rotary": dims["kv"] * head_dim, "flash_attention": dims["heads"] * head_dim,
              "gate_proj": dims["ffn"], "up_proj": dims["ffn"], "act": dims["ffn"],
              "mul": dims["ffn"], "lm_head": dims["vocab"]}
    return widths.get(name.split(".")[-1], dims["hidden"])


def local_op(op, dims, micro_batch, seq):
    """The per-device shapes one op runs at: global shapes divided by its strategy."""
    strategy = op["strategy"]
    cut = strategy[0]
    kind = op["kind"]
    spec = {"name": op["name"], "kind": kind, "forward_s": op["forward_s"],
            "backward_s": op["backward_s"]}
    b, s = micro_batch // cut[0], seq // cut[1]
    if kind == "Gather":  # table [vocab, hidden], tokens [b, s]
        table = strategy[0]
        tokens = strategy[1]
        spec.update(rows=dims["vocab"] // table[0], width=dims["hidden"] // table[1],
                    b=micro_batch // tokens[0], s=seq // tokens[1])
    elif kind == "MatMul":
        weight = strategy[1]
        k = (dims["ffn"] if op["name"].endswith("down_proj") else dims["hidden"]) // weight[0]
        spec.update(b=b, s=s, k=k, n=global_width(op["name"], dims) // weight[1])
    elif kind == "FlashAttention":
        head_dim = dims["hidden"] // dims["heads"]
        spec.update(b=b, s=s, heads=dims["heads"] // cut[2], kv=dims["kv"] // strategy[1][2],
                    head_dim=head_dim)
    elif kind == "CrossEntropy":
        spec.update(b=b, s=s, width=dims["vocab"] // cut[2])
    else:  # RMSNorm, Rotary, SiLU, Mul, Add: elementwise over [b, s, width]
        width = global_width(op["name"], dims) // (cut[2] if len(cut) > 2 else 1)
        spec.update(b=b, s=s, width=width)
        if kind == "Rotary":
            spec["head_dim"] = dims["hidden"] // dims["heads"]
    return spec


def make_spec(autopar):
    """Every case's ops: name, kind, per-device shape and the plan's forward_s and backward_s."""
    cases = []
    for name, model, devices, tp, micro_batch, framework, attention in CASES:
        dims = model_dims(autopar, model)
        command = [autopar, "plan", "--model", model, "--cluster", CLUSTER, "--devices",
                   str(devices), "--tp", str(tp), "--micro-batch", str(micro_batch),
                   "--framework", framework, "--json"]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode not in (0, 3):  # 3: does not fit, which per-op times do not need
            sys.exit(f"{name}: {done.stderr.strip()}")
        planned = [op for op in json.loads(done.stdout)["ops"]
                   if op["block"] in (FIRST_LAYER, "embedding", "head")]
        cases.append({"case": name, "command": " ".join(command[1:]), "attention": attention,
                      "fused_elementwise": framework in FUSED_ELEMENTWISE,
                      "layer": FIRST_LAYER,
                      "ops": [local_op(op, dims, micro_batch, dims["seq"]) for op in planned],
                      "blocks": {op["name"]: op["block"] for op in planned}})
    return {"cluster": CLUSTER, "cases": cases}


def write_spec(autopar, path):
    spec = make_spec(autopar)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(spec, f, indent=1)
    os.replace(path + ".tmp", path)
    print(f"wrote {path}: {sum(len(c['ops']) for c in spec['cases'])} ops in "
          f"{len(spec['cases'])} cases")


def shapes(spec):
    """What the GPU ran: every op's name, kind and shape, without the predicted times."""
    return [[{k: v for k, v in op.items() if not k.endswith("_s")} for op in case["ops"]]
            for case in spec["cases"]]


# ---------------------------------------------------------------------------------------------
# On the GPU machine (PyTorch only).

def measure(spec_path, out_path):
    import gpu_timing
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    device = torch.device("cuda")
    dtype = torch.bfloat16
    torch.manual_seed(0)
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}

    def timed(fn):
        return gpu_timing.timed(fn, repeats=5, inner=10, warmup=3)

    gqa_mode = {}

    def attend(q, k, v, attention):
        """Causal attention with the profile's backend; grouped K and V are passed as they are
        where the backend takes them (enable_gqa), else repeated per query head (torchtitan's
        repeat_kv), and the way taken is recorded."""
        with sdpa_kernel(backends[attention]):
            if k.shape[1] == q.shape[1]:
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)
            if gqa_mode.get(attention, "native") == "native":
                try:
                    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                    gqa_mode[attention] = "native"
                    return out
                except RuntimeError:
                    gqa_mode[attention] = "repeated"
            groups = q.shape[1] // k.shape[1]
            return F.scaled_dot_product_attention(q, k.repeat_interleave(groups, dim=1),
                                                  v.repeat_interleave(groups, dim=1),
                                                  is_causal=True)

    def rand(*shape, grad=True):
        return torch.randn(*shape, device=device, dtype=dtype, requires_grad=grad)

    def rotation(s, head_dim):
        """A random rotation per position and pair, as complex numbers (torchtitan's freqs_cis)."""
        return torch.polar(torch.ones(s, 1, head_dim // 2, device=device),
                           torch.rand(s, 1, head_dim // 2, device=device))

    def rotary(x, head_dim, freqs):
        """torchtitan's apply_rotary_emb: pairs as complex numbers, times the rotation."""
        b, s, width = x.shape
        pairs = torch.view_as_complex(x.float().reshape(b, s, width // head_dim, head_dim // 2, 2))
        return torch.view_as_real(pairs * freqs).flatten(3).reshape(b, s, width).type_as(x)

    def build(op, attention):
        """(forward function returning the output, the tensors whose gradients backward makes)."""
        kind = op["kind"]
        if kind == "Gather":
            table = rand(op["rows"], op["width"])
            tokens = torch.randint(0, op["rows"], (op["b"], op["s"]), device=device)
            return (lambda: F.embedding(tokens, table)), [table]
        if kind == "MatMul":
            x, w = rand(op["b"], op["s"], op["k"]), rand(op["k"], op["n"])
            return (lambda: x @ w), [x, w]
        if kind == "FlashAttention":
            b, s, d = op["b"], op["s"], op["head_dim"]
            q = rand(b, s, op["heads"], d).transpose(1, 2)
            k = rand(b, s, op["kv"], d).transpose(1, 2)
            v = rand(b, s, op["kv"], d).transpose(1, 2)
            return (lambda: attend(q, k, v, attention)), [q, k, v]
        if kind == "CrossEntropy":
            logits = rand(op["b"] * op["s"], op["width"])
            labels = torch.randint(0, op["width"], (op["b"] * op["s"],), device=device)
            return (lambda: F.cross_entropy(logits.float(), labels)), [logits]
        x = rand(op["b"], op["s"], op["width"])
        if kind == "RMSNorm":
            weight = rand(op["width"])
            return (lambda: F.rms_norm(x, (op["width"],), weight, 1e-5)), [x, weight]
        if kind == "Rotary":
            d = op["head_dim"]
            freqs = rotation(op["s"], d)
            return (lambda: rotary(x, d, freqs)), [x]
        if kind == "SiLU":
            return (lambda: F.silu(x)), [x]
        y = rand(op["b"], op["s"], op["width"])
        if kind == "Mul":
            return (lambda: x * y), [x, y]
        if kind == "Add":
            return (lambda: x + y), [x, y]
        raise ValueError(f"no kernel for {kind}")

    def time_op(op, attention):
        forward, leaves = build(op, attention)
        forward_s = timed(lambda: forward())
        out = forward()
        grad = torch.randn_like(out) if out.dim() else torch.ones_like(out)
        backward_s = timed(lambda: torch.autograd.grad(out, leaves, grad, retain_graph=True))
        del out, grad, leaves
        torch.cuda.empty_cache()
        return forward_s, backward_s

    def time_layer(case):
        """The first layer as one eager module (torchtitan's TransformerBlock order)."""
        ops = {op["name"].split(".", 1)[1] if "." in op["name"] else op["name"]: op
               for op in case["ops"] if case["blocks"][op["name"]] == case["layer"]}
        attn_op = ops["attn.flash_attention"]
        b, s, d = attn_op["b"], attn_op["s"], attn_op["head_dim"]
        hidden = ops["attn.q_proj"]["k"]
        weights = {name: rand(op["k"], op["n"]) for name, op in ops.items()
                   if op["kind"] == "MatMul"}
        norms = {name: rand(hidden) for name in ("attn_norm", "mlp_norm")}
        freqs = rotation(s, d)
        x = rand(b, s, hidden)

        def layer():
            h = F.rms_norm(x, (hidden,), norms["attn_norm"], 1e-5)
            q = rotary(h @ weights["attn.q_proj"], d, freqs).view(b, s, -1, d).transpose(1, 2)
            k = rotary(h @ weights["attn.k_proj"], d, freqs).view(b, s, -1, d).transpose(1, 2)
            v = (h @ weights["attn.v_proj"]).view(b, s, -1, d).transpose(1, 2)
            a = attend(q, k, v, case["attention"])
            r = x + a.transpose(1, 2).reshape(b, s, -1) @ weights["attn.o_proj"]
            m = F.rms_norm(r, (hidden,), norms["mlp_norm"], 1e-5)
            gated = F.silu(m @ weights["mlp.gate_proj"]) * (m @ weights["mlp.up_proj"])
            return r + gated @ weights["mlp.down_proj"]

        leaves = [x, *weights.values(), *norms.values()]
        forward_s = timed(layer)
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        out = layer()
        saved = torch.cuda.memory_allocated() - before - out.numel() * out.element_size()
        grad = torch.randn_like(out)
        backward_s = timed(lambda: torch.autograd.grad(out, leaves, grad, retain_graph=True))
        return {"forward_s": forward_s, "backward_s": backward_s, "saved_bytes": saved}

    spec = json.load(open(spec_path))
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(), "cases": []}
    for case in spec["cases"]:
        ops = []
        for op in case["ops"]:
            try:
                forward_s, backward_s = time_op(op, case["attention"])
                ops.append({"name": op["name"], "forward_s": forward_s,
                            "backward_s": backward_s})
            except Exception as error:  # a backend the build lacks: say so, keep the rest
                ops.append({"name": op["name"], "error": str(error).splitlines()[0][:200]})
            print(case["case"], ops[-1], flush=True)
        try:
            layer = time_layer(case)
        except Exception as error:
            layer = {"error": str(error).splitlines()[0][:200]}
        torch.cuda.empty_cache()
        print(case["case"], "layer", layer, flush=True)
        result["cases"].append({"case": case["case"], "ops": ops, "layer": layer,
                                "gqa": gqa_mode.get(case["attention"], "none")})
        with open(out_path + ".tmp", "w") as f:  # after every case: a cut-off run keeps its part
            json.dump(result, f, indent=1)
        os.replace(out_path + ".tmp", out_path)


# ---------------------------------------------------------------------------------------------
# Here again: the comparison.

def compare(autopar, spec_path, measured_path):
    """The predictions of the autopar at hand against the kernels measured at the shapes of
    `spec_path` (the spec the GPU ran); the shapes must still be the ones the plans give."""
    measured_spec = json.load(open(spec_path))
    measured = json.load(open(measured_path))
    spec = make_spec(autopar)
    if shapes(spec) != shapes(measured_spec):
        sys.exit(f"the plans' shapes differ from those {measured_path} was measured at: run "
                 f"`{sys.argv[0]} spec` and measure again on the GPU")
    print(f"Measured on {measured['device']} (PyTorch {measured['torch']}, CUDA "
          f"{measured['cuda']}, cuDNN {measured['cudnn']}); predicted by `autopar plan` on "
          f"{spec['cluster']}. Ratio: predicted / measured (above 1: autopar slower than the "
          f"kernel).\n")
    by_kind = {}
    for case, result in zip(spec["cases"], measured["cases"]):
        times = {op["name"]: op for op in result["ops"]}
        print(f"### {case['case']}  (`autopar {case['command']}`)\n")
        print("| op | kind | shape | predicted fwd / bwd (ms) | measured fwd / bwd (ms) | "
              "ratio fwd / bwd |")
        print("|---|---|---|---|---|---|")
        sums = {"predicted": [0.0, 0.0], "measured": [0.0, 0.0]}
        for op in case["ops"]:
            got = times[op["name"]]
            shape = ",".join(f"{key}={op[key]}" for key in
                             ("b", "s", "k", "n", "heads", "kv", "rows", "width") if key in op)
            if "error" in got:
                print(f"| {op['name']} | {op['kind']} | {shape} | | {got['error']} | |")
                continue
            pf, pb = op["forward_s"], op["backward_s"]
            mf, mb = got["forward_s"], got["backward_s"]
            if case["blocks"][op["name"]] == case["layer"]:
                sums["predicted"][0] += pf
                sums["predicted"][1] += pb
                sums["measured"][0] += mf
                sums["measured"][1] += mb
            if case["fused_elementwise"] and op["kind"] in ELEMENTWISE:
                print(f"| {op['name']} | {op['kind']} | {shape} | {pf * 1e3:.3f} / {pb * 1e3:.3f} | "
                      f"{mf * 1e3:.3f} / {mb * 1e3:.3f} eager | fused in this profile |")
                continue
            by_kind.setdefault(op["kind"], []).append((pf / mf, pb / mb))
            print(f"| {op['name']} | {op['kind']} | {shape} | {pf * 1e3:.3f} / {pb * 1e3:.3f} | "
                  f"{mf * 1e3:.3f} / {mb * 1e3:.3f} | {pf / mf:.2f} / {pb / mb:.2f} |")
        layer = result["layer"]
        (pf, pb), (mf, mb) = sums["predicted"], sums["measured"]
        print(f"\nFirst layer: predicted {pf * 1e3:.3f} / {pb * 1e3:.3f} ms; its ops measured one "
              f"by one {mf * 1e3:.3f} / {mb * 1e3:.3f} ms (ratio {pf / mf:.2f} / {pb / mb:.2f})"
              f"{', the fused ones eager' if case['fused_elementwise'] else ''}.")
        if "error" in layer:
            print(f"The layer as one module did not run: {layer['error']}\n")
        else:
            print(f"The layer measured as one module: {layer['forward_s'] * 1e3:.3f} / "
                  f"{layer['backward_s'] * 1e3:.3f} ms (predicted / module "
                  f"{pf / layer['forward_s']:.2f} / {pb / layer['backward_s']:.2f}); it keeps "
                  f"{layer['saved_bytes'] / 2**20:.0f} MiB for its backward. Grouped K and V: "
                  f"{result['gqa']}.\n")
    print("### Every case, by kind: median ratio predicted / measured (forward, backward)\n")
    print("| kind | ops | forward | backward |")
    print("|---|---|---|---|")
    for kind, ratios in sorted(by_kind.items()):
        print(f"| {kind} | {len(ratios)} | {statistics.median(r[0] for r in ratios):.2f} | "
              f"{statistics.median(r[1] for r in ratios):.2f} |")


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("spec", "measure", "compare"):
        sys.exit(__doc__)
    mode, args = sys.argv[1], sys.argv[2:]
    default_autopar = os.path.join(ROOT, "build", "release", "autopar")
    if mode == "spec":
        write_spec(args[0] if args else default_autopar,
                   args[1] if len(args) > 1 else os.path.join(DATA, "gpu_kernels_spec.json"))
    elif mode == "measure":
        if len(args) != 2:
            sys.exit(__doc__)
        measure(args[0], args[1])
    else:
        compare(args[0] if args else default_autopar,
                args[1] if len(args) > 1 else os.path.join(DATA, "gpu_kernels_spec.json"),
                args[2] if len(args) > 2 else os.path.join(DATA, "gpu_kernels_h100.json"))


if __name__ == "__main__":
    main()
