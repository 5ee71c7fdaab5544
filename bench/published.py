#!/usr/bin/env python3
"""Runs every row of ../shared/data/published/calibration.jsonl and development.jsonl through
`autopar estimate`, the path a user runs, and reports the accuracy per source. The successor of
bench/calibration.py, which covers calibration.jsonl only.

Usage: bench/published.py [AUTOPAR_BINARY] [--rows PREFIX] [--cost-model FILE]
                          [--own-flops]
       bench/published.py [AUTOPAR_BINARY] --fit [--write] [--max-sweeps N]
       bench/published.py [AUTOPAR_BINARY] --cross-validate [--max-sweeps N]
       bench/published.py [AUTOPAR_BINARY] --memory-band [--write]

Default mode: one line per row (id, source, framework, metric, published, predicted, error,
notes), then per source n, MAPE, mean signed error and the Spearman rank correlation of per-GPU
speed within each group of one model on one GPU type (groups of 3 rows or more, averaged); the
overall figures; the bf16 -> fp8 pairs (rows equal but for precision), measured speed-up beside
predicted; and the memory rows (measured peak beside the estimate's largest stage peak).

Every error is predicted speed / measured speed - 1 (for times: measured / predicted - 1), so +
means autopar predicts faster than measured.

--fit refits the constants of data/cost_model.json over every configurable row of both files by
coordinate descent (each constant x 0.8, 0.9, 1.1, 1.25 in turn, kept when the MAPE falls, until a
sweep gains less than FIT_TOLERANCE points or --max-sweeps sweeps ran), each within FIT_KEYS's
bounds; keys the cost-model file lacks are skipped. --write stores them as bench/calibration.py
does. --memory-band measures the memory band: how far below and above the estimate, as a share of
the fullest stage's transient memory, the rows put the peak (a measured peak; a row that ran, every
published row, has its peak within the device); the band is the widest any row needs, reported
leave-one-source-out as the rows of each source the others' band covers. --cross-validate fits without each source in turn (in parallel) and predicts it: the
out-of-sample figure the published README asks for (default --max-sweeps 3 there).

Which figure is compared: iteration_time_s against step_time_s where a row has it; else
tokens_per_s_per_gpu (against tokens_per_s / devices) or tokens_per_s; else teraFLOP/s per GPU:
Narayanan et al.'s count the recomputed forward (hardware_tflops_per_gpu), the others model
FLOPs only (tflops_per_gpu). NVIDIA's formulas (Megatron-LM README, NeMo) count the whole score
matrix while autopar counts what FlashAttention runs (the causal half), so for flash-attention
rows the two TFLOP/s differ by up to 2x on the attention term. So a published TFLOP/s is compared
through the publisher's own formula (publisher_flops()): autopar's step time turned into TFLOP/s
by it. --own-flops compares autopar's own FLOP/s figure instead.

Every row gets --framework NAME (megatron-lm-2021, megatron-deepspeed, megatron-lm,
megatron-core, torchtitan, composer) and the run flags it states (the README's overlap switches, "DDP
impl=torch", the dgxc recipes' overlap settings, torchtitan's AsyncTP and torch.compile).

Assumptions where a row is silent (each is printed in the row's notes):
  narayanan2021, korthikanti2022, megatron_readme: as bench/calibration.py (Megatron GPT:
    GeLU, LayerNorm, learned positions, tied embeddings, hidden dropout 0.1; Table 2 PTD-P rows
    TP 8 x PP size/8 and full recompute; README rows mbs 1, no recompute, SP with TP > 1,
    ZeRO 1, bf16; A100 rows fp16 where only "16-bit" is said).
  dgxc (NeMo / Megatron-Core recipes): vocab from the tokenizer the row names, padded to a
    multiple of 128 x TP as Megatron does (Llama 3.1 8B/70B 128,256; 405B's mock-data GPT-2 BPE
    50,257; GPT-3 GPT-2 BPE 50,257; Nemotron-4 256,000; Grok-1 131,072, Grok-1's own vocab);
    Nemotron-4's squared-ReLU MLP, rotary and untied embeddings become autopar's non-gated
    GPT-style layer (GeLU, LayerNorm, learned positions, biases), untied; Grok-1's gated-GeLU
    experts become SwiGLU experts, untied embeddings; Grok's DP excludes EP (README item 4), so
    autopar's --dp is DP x EP; GPT-3 175B as Megatron GPT with dropout 0.1 (NeMo's default).
    MaxText and Paxml (JAX) rows are skipped.
  nemo_longseq: Llama 2 7B dimensions (32 layers, 4096 hidden, 11008 ffn, 32 heads, 32,000
    vocab), mbs 1, no recompute, SP with TP > 1, distributed optimizer (ZeRO 1): NeMo's Llama
    recipe defaults; the table states none of them.
  torchtitan: Llama 3 vocab 128,256 (tiktoken), Llama 2 32,000 and Llama 2 13B/70B dimensions
    from Llama 2's config; seq 8192 where the H100 tables omit it (torchtitan's Llama 3
    default); FSDP2 -> ZeRO 3; SP with TP > 1 (torchtitan's TP plan shards norms along the
    sequence); "float8 linears" -> fp8; precision bf16 where unstated; micro-batch = local batch,
    with PP local batch / (PP x stages per rank) (one micro-batch per stage: 9dec370's default,
    the pipeline degree, for 1F1B; the count the interleaved run's measured peak shows);
    interleaved 1F1B as --vpp 2; "selective layer" = every second layer recomputed in full (torchtitan's default
    selective_ac_option 2), "selective op" = selective; torch.compile as --fused-elementwise
    where the binary has it (else not modelled). The
    H100 96 GB SKU is bench/clusters/h100-96g-500w.yaml.
  mosaic (llm-foundry's MPT table, Composer + FSDP1, --framework composer: flash-attn's fused
    loss, llm-foundry's default; composer@2023-10 for the sections of 2023-10, which ran the
    Triton attention kernel, and --attention flash1 for the large-scale table's 13b and 30b:
    MOSAIC_LARGE_SCALE_TRITON): every GPU data parallel, FULL_SHARD ->
    ZeRO 3, SHARD_GRAD_OP -> ZeRO 2; MPT's defaults (configuration_mpt.py): GeLU MLP, LayerNorm,
    learned positions, biases, tied embeddings, no dropout; vocab 50,368 unpadded; amp_fp8 as
    fp8 (Transformer Engine's linears).
"""
import argparse
import concurrent.futures
import datetime
import json
import math
import os
import re
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA_DIR = os.path.join(ROOT, "..", "shared", "data", "published")
DATA_FILES = ("calibration.jsonl", "development.jsonl")
COST_MODEL = os.path.join(ROOT, "data", "cost_model.json")
H100_96G_YAML = os.path.join(ROOT, "bench", "clusters", "h100-96g-500w.yaml")

# The constants --fit moves, each with the physical range it stays in, and (optionally) which
# configured rows it can move at all (a function of the row's configuration; None: every row of a
# device that does not override it). Keys data/cost_model.json does not hold are skipped, so
# a constant listed here before the C++ side adds it joins the fit once it exists.
# Ranges, as bench/calibration.py argues them: large GEMMs reach at most about 85% of dense peak,
# streaming kernels about 90% of HBM bandwidth, attention at least 20%; a GEMM dim of tile_dim
# runs at half efficiency (at most twice cuBLAS's widest tile, 256); a list-API collective's
# per-rank copy costs one CUDA launch (2 us) to one PyTorch element-wise op end to end (20 us).
FIT_KEYS = {
    "matmul_efficiency": ((0.4, 0.85), None),
    # FlashAttention-2 reaches at most 73% of peak forward and 63% backward (Dao 2023, Sec. 4.1).
    "attention_efficiency": ((0.2, 0.7), None),
    # cuDNN's fused attention runs only under Transformer Engine (the megatron-core profile).
    "cudnn_attention_efficiency": ((0.2, 0.85),
                                   lambda config: "megatron-core" in config["flags"]),
    # FlashAttention's first generation against FlashAttention-2 on the same device: Dao 2023
    # (Sec. 4.1) measures FlashAttention-2 1.7-3.0x faster than flash-attn 1 and 1.3-2.5x faster
    # than the Triton kernel on A100; on H100, where neither uses wgmma, the two stand closer: at
    # most FlashAttention-2's speed.
    "flash1_attention_speed": ((0.3, 1.0),
                               lambda config: any("@2023-10" in f or f == "flash1"
                                                  for f in config["flags"])),
    "vector_efficiency": ((0.05, 0.6), None),
    "memory_efficiency": ((0.5, 0.9), None),
    "tile_dim": ((8.0, 512.0), None),
    "list_collective_copy_seconds": ((2e-6, 2e-5),
                                     lambda config: "megatron-deepspeed" in config["flags"]),
    # fp8_matmul_speedup is measured (bench/gpu_fp8_gemms.py), not fitted.
    # The shortest a kernel takes, launch to completion: 2-20 us (data/cost_model.json's source).
    "kernel_launch_seconds": ((2e-6, 2e-5), None),
    # A small kernel queued behind others: launch latency and a tail, 2-20 us (cost_model.json).
    "queued_kernel_seconds": ((2e-6, 2e-5), lambda config: "--ep" in config["flags"]),
}

# Per-device overrides fitted on that device's rows (bench/calibration.py's): the H100 rows come
# from a newer software stack than the A100 ones, and H100 has larger tiles and more SMs.
DEVICE_KEYS = {"H100": ["matmul_efficiency", "attention_efficiency", "cudnn_attention_efficiency",
                        "tile_dim"]}

# A sweep that lowers the MAPE by less than this many points ends the fit (as calibration.py).
FIT_TOLERANCE = 0.05

# Source key by row-id prefix.
SOURCES = [("narayanan2021", "narayanan2021"), ("korthikanti2022", "korthikanti2022"),
           ("megatron_readme", "megatron_readme"), ("dgxc_", "dgxc"),
           ("torchtitan_", "torchtitan"), ("nemo_longctx", "nemo_longseq"), ("mpt_", "mosaic")]

# Dimensions of models whose rows leave them null: Llama 2 (Touvron et al. 2023; the Hugging
# Face config.json of meta-llama/Llama-2-*-hf, as autopar's llama2-* presets).
LLAMA2_DIMS = {
    "7B": dict(num_layers=32, hidden_size=4096, ffn_hidden_size=11008, num_attention_heads=32,
               num_kv_heads=32),
    "13B": dict(num_layers=40, hidden_size=5120, ffn_hidden_size=13824, num_attention_heads=40,
                num_kv_heads=40),
    "70B": dict(num_layers=80, hidden_size=8192, ffn_hidden_size=28672, num_attention_heads=64,
                num_kv_heads=8),
}

# Vocabulary where a row leaves it null (README item 6), by source (None: any) and model-name
# prefix, from the tokenizer the row names; the first match applies.
VOCAB_DEFAULTS = [
    ("dgxc", "Llama 3.1 405B", 50257, "dgxc 405B mock data, GPT-2 BPE (README item 6)"),
    (None, "Llama 3", 128256, "Llama 3 tiktoken tokenizer (Meta-Llama-3-8B config.json)"),
    (None, "Llama 2", 32000, "Llama 2 sentencepiece tokenizer"),
    (None, "Nemotron-4", 256000, "nemotron_2_256k sentencepiece (README item 6)"),
    (None, "GPT-3", 50257, "GPT-2 BPE (row notes)"),
    (None, "Grok-1", 131072,
     "Grok-1's released vocab (xai-org/grok-1); dgxc's tokenizer not read"),
]


def source_of(row):
    """The short source key (SOURCES) of a row."""
    for prefix, key in SOURCES:
        if row["id"].startswith(prefix):
            return key
    return "other"


def framework_of(row):
    """The --framework name of a row (None: a framework autopar does not model)."""
    text, rid = row.get("framework") or "", row["id"]
    if "DeepSpeed" in text:
        return "megatron-deepspeed"
    if rid.startswith("narayanan2021"):
        return "megatron-lm-2021"
    if rid.startswith("korthikanti2022"):
        return "megatron-lm"
    if "torchtitan" in text:
        return "torchtitan"
    if "Megatron-Core" in text or "NeMo" in text:
        return "megatron-core"
    if "Composer" in text:
        return "composer"
    return None


# ---------------------------------------------------------------------------------------------
# Row -> configuration

def recompute_of(row):
    """Megatron rows as calibration.py reads them (Table 2 states none: full, as its formula)."""
    text = (row.get("recompute") or "").lower()
    if "selective" in text:
        return "selective"
    if "full" in text:
        return "full"
    if row["id"].startswith("narayanan2021_t2"):
        return "full"
    return "none"


def precision_of(row, notes):
    """bf16 where the row says so and for the unstated H100 rows; fp16 for the A100 Megatron
    rows ("--fp16" in Table 1's script, "16-bit" in the 2022 paper); fp8 for fp8 rows and
    torchtitan's "float8 linears" (only the linears run in fp8; attention stays bf16)."""
    text = (row.get("precision") or "").lower()
    if "fp8" in text or "float8" in text:
        if "float8" in text:
            notes.append("float8 linears as fp8")
        return "fp8"
    if "bf16" in text or "bfloat16" in text:
        return "bf16"
    if "fp16" in text:
        return "fp16"
    if "H100" in row["gpu_type"] or source_of(row) == "torchtitan":
        notes.append("bf16 assumed")
        return "bf16"
    notes.append("fp16 assumed")
    return "fp16"


def stated_techniques(row):
    """The techniques a row states: its own (a torchtitan table's "FSDP + torch.compile") and its
    table's, from the caption (source_ref "Table 4 (FSDP 32 x TP 8, compile + Float8)": every row
    of that table ran them)."""
    own = str((row.get("other_metrics") or {}).get("technique", ""))
    ref = row.get("source_ref") or ""
    caption = ref[ref.find("(") + 1:ref.rfind(")")] if "(" in ref else ""
    return f"{own} + {caption}"


def compiled(row):
    return re.search(r"\b(torch\.)?compile\b", stated_techniques(row)) is not None


def stated_flags(row):
    """Run flags the row itself states: the README's Megatron-Core switches, Table 1's "DDP
    impl=torch" (PyTorch DDP overlaps its bucketed all-reduce with the backward), the dgxc
    recipes' overlap settings quoted in the notes, torchtitan's AsyncTP and torch.compile (its
    elementwise fusion)."""
    framework, notes = row.get("framework") or "", row.get("notes") or ""
    technique = stated_techniques(row)
    flags = [flag for flag in ("--overlap-grad-reduce", "--overlap-param-gather",
                               "--tp-comm-overlap") if flag in framework]
    if "DDP impl=torch" in framework:
        flags.append("--overlap-grad-reduce")
    if ("ub_tp_comm_overlap=True" in notes or "tp-comm overlap on" in notes
            or "(ub_tp_comm_overlap," in notes or "AsyncTP" in technique):
        flags.append("--tp-comm-overlap")
    if "overlap_grad/param_sync" in notes:
        flags += ["--overlap-grad-reduce", "--overlap-param-gather"]
    if compiled(row):
        flags.append("--fused-elementwise")
    return list(dict.fromkeys(flags))


# Switches a dgxc recipe's yaml sets that the row's fields do not carry, by the recipe file the row
# names (NVIDIA/dgxc-benchmarking@35a9aecc, v24.11.1; nemotron at 8f5cbb37). optim.grad_sync_dtype:
# bf16 in grok1/grok1_314b.yaml, nemo_megatron/gpt3_175b_hydra.yaml and
# nemotron/nemotron4-340b-synth.yaml; the Llama 3.1 recipes (NeMo-Framework-Launcher's
# llama3_1_*.yaml) and nemotron4-15b-synth.yaml leave it at fp32. nemotron4-340b-synth.yaml's
# optimizer is distributed_fused_adam with optim.dtype: bf16 (bf16 moments and, the weights being
# bf16 too, no master copy: --optimizer-state bf16); gpt3_175b_hydra.yaml's keeps the fp32 master
# copy NeMo stores under fp8_params.
RECIPE_FLAGS = {
    "grok1/grok1_314b.yaml": ["--grad-reduce-in-bf16"],
    "nemo_megatron/gpt3_175b_hydra.yaml": ["--grad-reduce-in-bf16"],
    "nemotron/nemotron4-340b-synth.yaml": ["--grad-reduce-in-bf16", "--optimizer-state", "bf16"],
}


# Recipes whose fp8 runs store the fp8 GEMMs' weights in fp8 (NeMo's fp8_params, Megatron-Core's
# --fp8-param-gather): llama3.1/configure.sh passes +model.fp8_params=$FP8_ENABLED, and
# gpt3_175b_hydra.yaml says fp8_params: true. grok1_314b.yaml says false; nemotron4-*-synth.yaml
# leave it at its default, false.
FP8_PARAMS_RECIPES = ("llama3.1/llama3.1_", "nemo_megatron/gpt3_175b_hydra.yaml")


def recipe_flags(row):
    """The switches of the recipe file the row's notes name (RECIPE_FLAGS, FP8_PARAMS_RECIPES)."""
    notes = row.get("notes") or ""
    flags = [flag for recipe, flags in RECIPE_FLAGS.items() if recipe in notes for flag in flags]
    fp8 = "fp8" in (row.get("precision") or "").lower()
    if fp8 and any(recipe in notes for recipe in FP8_PARAMS_RECIPES):
        flags.append("--fp8-param-gather")
    return flags


# The llm-foundry release and attention kernel behind each section of the MPT benchmark tables
# (mosaicml/llm-foundry scripts/train/benchmarking): the BF16 and FP8 sections came with b2a43a14
# (2023-10), whose submit_benchmarks.py installs llm-foundry v0.3.0 and runs attn_impl: triton
# (the Triton FlashAttention kernel; --framework composer@2023-10); the large-scale section came
# with 5e85bd62 (2024-01), whose sweep.py installs flash-attn 2.4.2 and runs 1b, 3b, 7b and 70b
# with --attn_impl flash, 13b and 30b with --attn_impl triton.
MOSAIC_LARGE_SCALE_TRITON = ("MPT-13b", "MPT-30b")


def mosaic_framework_flags(row):
    if "Large Scale" not in (row.get("source_ref") or ""):
        return ["--framework", "composer@2023-10"]
    triton = row.get("model_name") in MOSAIC_LARGE_SCALE_TRITON
    return ["--framework", "composer"] + (["--attention", "flash1"] if triton else [])


# The release a profile's rows ran where the profile's own is newer (docs/frameworks.md):
# torchtitan's benchmarks (torch 2.6 and before) ran its RMSNorm as eager ops and F.cross_entropy
# over the whole logits, before torch 2.9's fused RMSNorm and its recipes' chunked loss (2026-06).
RELEASE_OF = {"torchtitan": "torchtitan@2024-12"}

# torchtitan's A100 tables (docs/performance.md, 2024-04: 395a52627 for Llama 2, 1ea476e9f for
# Llama 3) ran each model's train config, whose norm_type was fused_rmsnorm (its Triton kernel)
# for the 8B and 13B and rmsnorm (eager ops) for the 70B; at 9dec370 (the H100 tables of 2024-12)
# every llama3 config says rmsnorm.
TORCHTITAN_FUSED_NORM = ("Llama 3 8B", "Llama 2 13B")


def norm_flags(row):
    if (source_of(row) == "torchtitan" and "performance.md" in (row.get("source") or "")
            and row.get("model_name") in TORCHTITAN_FUSED_NORM):
        return ["--fused-norm"]
    return []


def framework_flags(row):
    """--framework NAME (the row's framework as autopar's profile, at the release it ran) plus
    the flags it states."""
    if source_of(row) == "mosaic":
        return mosaic_framework_flags(row)
    framework = framework_of(row)
    return (["--framework", RELEASE_OF.get(framework, framework)] + stated_flags(row) +
            recipe_flags(row) + norm_flags(row))


def skip_reason(row):
    """Why a row cannot be configured, or None."""
    rid = row["id"]
    if "_t4_" in rid and rid.startswith("korthikanti2022"):
        return "Table 4 times one layer's forward and backward, not a training step"
    if framework_of(row) is None:
        return f"framework {row.get('framework')!r} (JAX) is not modelled"
    if row.get("tp") is None and row.get("dp") is None:
        return "no parallel configuration published"
    return None


def megatron_settings(row, notes):
    """Parallel settings of the calibration rows, exactly as bench/calibration.py's configure."""
    tp, pp, dp = row.get("tp"), row.get("pp"), row.get("dp")
    if tp is None or pp is None:
        tp, pp = 8, row["other_metrics"]["model_parallel_size"] // 8
        notes.append(f"TP 8 x PP {pp} assumed")
    mbs = row.get("micro_batch_size")
    if mbs is None:
        mbs = 1
        notes.append("mbs 1 assumed")
    sp, zero = bool(row.get("sequence_parallel")), 0
    if row["id"].startswith("megatron_readme"):
        sp, zero = tp > 1, 1
        notes.append("SP with TP>1, ZeRO 1 assumed")
    if "zero3" in row["id"]:
        zero = 3
    return dict(tp=tp, pp=pp, dp=dp, cp=1, ep=1, vpp=row.get("vpp") or 1, mbs=mbs,
                gbs=row["global_batch_size"], sp=sp, recompute=recompute_of(row), zero=zero)


def nemo_settings(row, notes):
    """dgxc (NeMo / Megatron-Core recipes) and NeMo's long-sequence table. Grok's DP excludes EP
    (README item 4); autopar carves EP out of DP, so its --dp is DP x EP."""
    ep = row.get("ep") or 1
    dp = row["dp"] * ep
    if ep > 1:
        notes.append(f"--dp {dp} = DP {row['dp']} x EP {ep}")
    mbs, sp, zero = row.get("micro_batch_size"), row.get("sequence_parallel"), 1
    if mbs is None:
        mbs = 1
        notes.append("mbs 1 assumed")
    if sp is None:
        sp = row["tp"] > 1
        notes.append("SP with TP>1 assumed")
    if row.get("distributed_optimizer") is None:
        notes.append("distributed optimizer (ZeRO 1) assumed")
    recompute = (row.get("recompute") or "").lower()
    if not recompute:
        notes.append("no recompute assumed")
    recompute = "selective" if "selective" in recompute else \
        "full" if recompute.startswith("full") else "none"
    return dict(tp=row["tp"], pp=row["pp"], dp=dp, cp=row.get("cp") or 1, ep=ep,
                vpp=row.get("vpp") or 1, mbs=mbs, gbs=row["global_batch_size"], sp=bool(sp),
                recompute=recompute, zero=zero)


def mosaic_settings(row, notes):
    """MosaicML's MPT table (llm-foundry scripts/train/benchmarking): Composer runs PyTorch FSDP1
    over every GPU (no TP or PP); FULL_SHARD is ZeRO 3 and SHARD_GRAD_OP ZeRO 2; "full activation
    checkpointing" checkpoints every MPTBlock."""
    zero = 2 if "SHARD_GRAD_OP" in (row.get("fsdp_or_zero") or "") else 3
    recompute = "full" if (row.get("recompute") or "").startswith("full") else "none"
    return dict(tp=1, pp=1, dp=row["num_gpus"], cp=1, ep=1, vpp=1,
                mbs=row["micro_batch_size"], gbs=row["global_batch_size"], sp=False,
                recompute=recompute, zero=zero)


def torchtitan_settings(row, notes):
    """torchtitan: FSDP2 is ZeRO 3 over DP; the local batch is per DP rank, one micro-batch
    without PP and split into one micro-batch per pipeline stage with it."""
    tp, pp, dp, cp = row["tp"], row["pp"], row["dp"], row.get("cp") or 1
    local = row.get("micro_batch_size")
    other = row.get("other_metrics") or {}
    if local is None:
        local = other.get("local_batch_size_as_printed")
        notes.append(f"local batch {local} as printed")
    vpp = 1
    if "Interleaved" in str(other.get("pp_schedule", "")):
        vpp = 2
        notes.append("interleaved 1F1B as --vpp 2 assumed")
    mbs = local
    if pp > 1:
        # One micro-batch per stage. At the benchmarks' commit (9dec370, torchtitan/
        # parallelisms/pipelining_utils.py) pipeline_parallel_microbatches defaults to the
        # pipeline degree whatever the schedule, but Table 5's interleaved run measured 72.7 GiB,
        # 10 GiB under 1F1B's, which 16 micro-batches of 2 give (+0.2%) and 8 of 4 do not (+13%):
        # that run set the count to its stages, PP x the stages each rank holds.
        count = pp * vpp
        mbs = max(1, local // count)
        notes.append(f"mbs = local batch / (PP x stages per rank) = {mbs} assumed")
        if local % count:
            # torchtitan refuses a batch its micro-batch count does not divide.
            notes.append(f"local batch {local} not divisible by {count} micro-batches: "
                         "torchtitan would refuse it")
    gbs = row.get("global_batch_size") or local * dp
    if tp > 1:
        notes.append("SP with TP>1 (torchtitan TP plan)")
    # FSDP2 is ZeRO 3; under PP the torchtitan profile runs it as the pipelining stage does
    # (parameters kept gathered, gradients accumulated unsharded: CodePath::
    # fsdpUnshardedUnderPipeline).
    zero = 3
    return dict(tp=tp, pp=pp, dp=dp, cp=cp, ep=1, vpp=vpp, mbs=mbs, gbs=gbs, sp=tp > 1,
                zero=zero, **torchtitan_recompute(row, notes))


def torchtitan_recompute(row, notes):
    """torchtitan's activation checkpointing: full; selective op (per-op policy: selective);
    selective layer (every selective_ac_option-th layer in full, default 2: as a placement with
    half the layers recomputed); the H100 tables' "selective activation checkpointing"."""
    text = (row.get("recompute") or "").lower()
    if "selective layer" in text and row["pp"] == 1:
        layers = row["num_layers"] or LLAMA2_DIMS[llama2_size(row)]["num_layers"]
        notes.append("selective layer: every 2nd layer recomputed in full")
        return dict(recompute="none", placement=(layers, layers // 2))
    if "selective" in text:
        return dict(recompute="selective")
    if text.startswith("full"):
        return dict(recompute="full")
    return dict(recompute="none")


def llama2_size(row):
    return row["model_name"].split()[-1]


def settings_of(row, notes):
    """Parallel and batch settings by source."""
    source = source_of(row)
    if source in ("narayanan2021", "korthikanti2022", "megatron_readme"):
        settings = megatron_settings(row, notes)
    elif source == "torchtitan":
        settings = torchtitan_settings(row, notes)
    elif source == "mosaic":
        settings = mosaic_settings(row, notes)
    else:
        settings = nemo_settings(row, notes)
    settings["seq"] = row.get("seq_length")
    if settings["seq"] is None:
        settings["seq"] = 8192
        notes.append("seq 8192 assumed (torchtitan Llama 3 default)")
    settings["precision"] = precision_of(row, notes)
    return settings


def cluster_of(row):
    """(preset or yaml template, device name, nodes)."""
    gpu, gpus = row["gpu_type"], row["num_gpus"]
    nodes = max(1, gpus // (row.get("gpus_per_node") or 8))
    if "96GB" in gpu:
        return H100_96G_YAML, yaml_device_name(H100_96G_YAML), nodes
    if "H100" in gpu:
        return "dgx-h100", "H100-SXM5-80GB", nodes
    return "dgx-a100-80g", "A100-SXM4-80GB", nodes


def yaml_device_name(path):
    with open(path) as file:
        text = file.read()
    return re.search(r"^device:\s*\n\s+name:\s*(\S+)", text, re.M).group(1)


def tokenizer_vocab(row, notes=None):
    """The row's vocabulary, or the documented default for its tokenizer (noted)."""
    if row.get("vocab_size") is not None:
        return row["vocab_size"]
    for source, prefix, default, why in VOCAB_DEFAULTS:
        if source in (None, source_of(row)) and row["model_name"].startswith(prefix):
            if notes is not None:
                notes.append(f"vocab {default} ({why})")
            return default
    raise ValueError(f"{row['id']}: no vocabulary and no default for {row['model_name']}")


def vocab_of(row, tp, notes):
    """The tokenizer's vocabulary as the framework pads it: Megatron (and NeMo) to a multiple of
    128 x TP (--make-vocab-size-divisible-by 128), torchtitan and MPT (50,368) not at all."""
    vocab = tokenizer_vocab(row, notes)
    if framework_of(row) not in ("torchtitan", "composer"):
        multiple = 128 * tp
        vocab = -(-vocab // multiple) * multiple
    return vocab


def dimensions(row, settings, notes):
    """The dimensions JSON of the row's model (src/frontend/model_config.h). Megatron GPT rows
    and NeMo's GPT-3: GeLU, LayerNorm, learned positions, biases, tied embeddings, dropout 0.1.
    Llama and Grok: SwiGLU, RMSNorm, rotary, untied. Nemotron-4 (squared ReLU, not gated): the
    non-gated GPT-style layer, untied."""
    name = row["model_name"]
    dims = {key: row.get(key) for key in ("num_layers", "hidden_size", "ffn_hidden_size",
                                          "num_attention_heads", "num_kv_heads")}
    if dims["num_layers"] is None and name.startswith("Llama 2"):
        dims = dict(LLAMA2_DIMS[llama2_size(row)])
        notes.append(f"Llama 2 {llama2_size(row)} dimensions from its config.json")
    dims["ffn_hidden_size"] = dims["ffn_hidden_size"] or 4 * dims["hidden_size"]
    dims["num_kv_heads"] = dims["num_kv_heads"] or dims["num_attention_heads"]
    dims.update(name=row["id"], vocab_size=vocab_of(row, settings["tp"], notes),
                seq_length=settings["seq"])
    gpt = source_of(row) in ("narayanan2021", "korthikanti2022", "megatron_readme") \
        or name.startswith("GPT")
    if gpt:
        dims.update(swiglu=False, tied_embeddings=True, hidden_dropout=0.1)
    elif name.startswith("MPT"):
        # llmfoundry/models/mpt/configuration_mpt.py's defaults: GeLU MLP (expansion_ratio 4),
        # LayerNorm, learned positions, biases, tied embeddings, every dropout 0.
        dims.update(swiglu=False, tied_embeddings=True)
    elif name.startswith("Nemotron"):
        dims.update(swiglu=False, tied_embeddings=False)
        notes.append("Nemotron squared-ReLU MLP as GeLU, LayerNorm, learned positions, untied")
    else:
        dims.update(swiglu=True, tied_embeddings=False)
    if row.get("num_experts"):
        dims.update(num_experts=row["num_experts"], moe_top_k=row["moe_topk"])
        notes.append("Grok gated-GeLU experts as SwiGLU, untied embeddings")
    return dims


def metric_of(row):
    """(autopar figure, published value, is a time) by the row's metric_definition."""
    if row.get("iteration_time_s") is not None:
        return "step_time_s", row["iteration_time_s"], True
    if row.get("tokens_per_s_per_gpu") is not None:
        return "tokens_per_s_per_gpu", row["tokens_per_s_per_gpu"], False
    if row.get("tokens_per_s") is not None:
        return "tokens_per_s", row["tokens_per_s"], False
    if row.get("tflops_per_gpu") is not None:
        if row["id"].startswith("narayanan2021"):
            return "hardware_tflops_per_gpu", row["tflops_per_gpu"], False
        return "tflops_per_gpu", row["tflops_per_gpu"], False
    return None, None, False


def publisher_flops(row, settings, dims):
    """FLOPs of one step by the formula the publisher computed its TFLOP/s with. Narayanan et
    al.: 96 B s l h^2 (1 + s/6h + V/16lh), recompute included (metric_definition). Megatron-LM's
    num_floating_point_operations (r0.8, the README's) and NeMo's flops_formulas (llama2 is the
    same expression): 12 B s L h^2 ((1 + g/a + s/h) + (f/h) k m + V/2Lh), m 3/2 for a gated
    MLP, k experts per token. Both count the whole s x s score matrix, causal or not, while
    autopar's figures count what the kernels run (FlashAttention skips the masked half), so
    under flash attention the two differ by the attention term."""
    B, s, L, h = settings["gbs"], settings["seq"], dims["num_layers"], dims["hidden_size"]
    if row["id"].startswith("narayanan2021"):
        V = tokenizer_vocab(row)
        return 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))
    V = dims["vocab_size"] if source_of(row) == "megatron_readme" else tokenizer_vocab(row)
    a, g, f = dims["num_attention_heads"], dims["num_kv_heads"], dims["ffn_hidden_size"]
    gated = 1.5 if dims["swiglu"] else 1.0
    return 12 * B * s * L * h * h * ((1 + g / a + s / h) + f / h * dims.get("moe_top_k", 1)
                                     * gated + V / (2 * L * h))


def settings_flags(settings):
    """The estimate flags of a settings dict."""
    s = settings
    flags = ["--tp", s["tp"], "--pp", s["pp"], "--dp", s["dp"], "--mbs", s["mbs"],
             "--gbs", s["gbs"], "--seq", s["seq"], "--recompute", s["recompute"],
             "--zero", s["zero"], "--precision", s["precision"]]
    for key in ("cp", "ep", "vpp"):
        if s[key] > 1:
            flags += [f"--{key}", s[key]]
    if s["sp"]:
        flags.append("--sequence-parallel")
    if s.get("placement"):
        layers, recomputed = s["placement"]
        flags += ["--llm-layers", layers, "--llm-recompute", recomputed]
    return [str(flag) for flag in flags]


def configure(row, publisher_formula=False):
    """The row's configuration (a dict), or None and the reason it is skipped. With
    publisher_formula a published TFLOP/s is compared through the publisher's FLOP formula:
    autopar's step time turned into TFLOP/s by the same formula."""
    reason = skip_reason(row)
    metric, published, is_time = metric_of(row)
    if reason is None and metric is None:
        reason = "no throughput metric published"
    if reason:
        return None, reason
    notes = []
    settings = settings_of(row, notes)
    dims = dimensions(row, settings, notes)
    cluster, device, nodes = cluster_of(row)
    world = settings["tp"] * settings["pp"] * settings["dp"] * settings["cp"]
    if world != row["num_gpus"]:
        notes.append(f"world {world} != {row['num_gpus']} GPUs published")
    flags = settings_flags(settings) + framework_flags(row)
    if world < nodes * (row.get("gpus_per_node") or 8):
        flags.append("--allow-idle")  # a run on part of a node (NeMo's 4-GPU long-context row)
    if compiled(row):
        notes.append("torch.compile as --fused-elementwise")
    flops = None
    if publisher_formula and "tflops" in metric:
        flops = publisher_flops(row, settings, dims)
        metric = "publisher_formula_tflops"
    return dict(row=row, source=source_of(row), framework=framework_of(row), notes=notes,
                settings=settings, dims=dims, cluster=cluster, device=device, nodes=nodes,
                flags=flags, metric=metric, published=published, is_time=is_time,
                tokens_per_gpu=settings["gbs"] * settings["seq"] / world,
                flops_per_step=flops), None


# ---------------------------------------------------------------------------------------------
# Running autopar

def run(command, attempts=30):
    """Runs a command; while the binary is missing (it is being relinked), retries each 2 s."""
    for attempt in range(attempts):
        try:
            done = subprocess.run(command, capture_output=True, text=True)
        except (FileNotFoundError, PermissionError, OSError):
            done = None
        if done is not None and done.returncode not in (126, 127):
            return done
        time.sleep(2)
    raise SystemExit(f"{command[0]}: not runnable after {attempts} attempts")


def cluster_flags(config, scratch):
    """--cluster and --nodes; a yaml spec takes no --nodes, so a copy with the row's node count
    is written (the template's `nodes:` line replaced)."""
    if not config["cluster"].endswith(".yaml"):
        return ["--cluster", config["cluster"], "--nodes", str(config["nodes"])]
    with open(config["cluster"]) as file:
        text = re.sub(r"^nodes:.*$", f"nodes: {config['nodes']}", file.read(), flags=re.M)
    path = os.path.join(scratch, config["row"]["id"] + ".yaml")
    with open(path, "w") as file:
        file.write(text)
    return ["--cluster", path]


def estimate(autopar, config, scratch, cost_model=None):
    """(estimate JSON, None) or (None, the failure)."""
    dims = os.path.join(scratch, config["row"]["id"] + ".json")
    with open(dims, "w") as file:
        json.dump(config["dims"], file)
    command = [autopar, "estimate", "--model", dims, "--json"] + cluster_flags(config, scratch)
    command += config["flags"]
    if cost_model:
        command += ["--cost-model", cost_model]
    done = run(command)
    if done.returncode not in (0, 3):
        return None, done.stderr.strip().splitlines()[-1] if done.stderr.strip() else \
            f"exit {done.returncode}"
    return json.loads(done.stdout), None


def predict(autopar, configs, scratch, cost_model=None):
    """Per configuration: {config, out, failure, predicted, error}, estimates run in parallel."""
    def one(config):
        out, failure = estimate(autopar, config, scratch, cost_model)
        result = dict(config=config, out=out, failure=failure, predicted=None, error=None)
        if out is not None:
            result["predicted"] = predicted_value(config, out)
            result["error"] = speed(config, result["predicted"]) / \
                speed(config, config["published"]) - 1
        return result
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return list(pool.map(one, configs))


# ---------------------------------------------------------------------------------------------
# Scoring

def predicted_value(config, out):
    """autopar's figure in the published metric's units (per GPU: tokens_per_s / devices)."""
    if config["flops_per_step"] is not None:
        return config["flops_per_step"] / (out["step_time_s"] * out["devices"]) / 1e12
    if config["metric"] == "tokens_per_s_per_gpu":
        return out["tokens_per_s"] / out["devices"]
    return out[config["metric"]]


def speed(config, value):
    """Per-GPU speed of a published or predicted figure: tokens/s per GPU for a step time (the
    batch is fixed per row), the figure itself for a throughput."""
    return config["tokens_per_gpu"] / value if config["is_time"] else value


def mape(errors):
    return 100 * sum(abs(e) for e in errors) / len(errors) if errors else float("nan")


def mean_signed(errors):
    return 100 * sum(errors) / len(errors) if errors else float("nan")


def ranks(values):
    """Ranks from 1, ties given their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            result[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return result


def spearman(xs, ys):
    """Spearman's rank correlation (Pearson's on the ranks); None where a side is constant."""
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx, syy = sum((a - mx) ** 2 for a in rx), sum((b - my) ** 2 for b in ry)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else None


def group_spearman(results):
    """Average Spearman correlation of predicted vs measured per-GPU speed over the groups of
    one model on one GPU type with 3 rows or more; (average or None, groups counted)."""
    groups = {}
    for result in results:
        row = result["config"]["row"]
        groups.setdefault((row["model_name"], row["gpu_type"]), []).append(result)
    values = []
    for members in groups.values():
        if len(members) < 3:
            continue
        measured = [speed(r["config"], r["config"]["published"]) for r in members]
        predicted = [speed(r["config"], r["predicted"]) for r in members]
        rho = spearman(measured, predicted)
        if rho is not None:
            values.append(rho)
    return (sum(values) / len(values) if values else None), len(values)


# ---------------------------------------------------------------------------------------------
# Reports

def print_rows(results, skipped):
    """One line per row, the skipped ones after with their reasons."""
    print(f"{'row':<52} {'source':<15} {'framework':<18} {'metric':<24} {'published':>10} "
          f"{'predicted':>10} {'error':>8}  notes")
    for result in results:
        config = result["config"]
        row, notes = config["row"], list(config["notes"])
        head = f"{row['id']:<52} {config['source']:<15} {config['framework']:<18}"
        if result["out"] is None:
            print(f"{head} failed: {result['failure']}")
            continue
        if not result["out"]["fits"]:
            notes.append("over device memory")
        print(f"{head} {config['metric']:<24} {config['published']:>10.2f} "
              f"{result['predicted']:>10.2f} {100 * result['error']:>+7.1f}%  {'; '.join(notes)}")
    if skipped:
        print(f"\nskipped ({len(skipped)}):")
        for row, reason in skipped:
            print(f"  {row['id']:<52} {source_of(row):<15} {reason}")


def print_sources(results):
    """Per source n, MAPE, mean signed error and within-group Spearman; then overall."""
    print(f"\n{'source':<18} {'n':>4} {'MAPE':>7} {'signed':>8} {'Spearman':>9} {'groups':>6}")
    done = [r for r in results if r["error"] is not None]
    for source in dict.fromkeys(r["config"]["source"] for r in done):
        members = [r for r in done if r["config"]["source"] == source]
        errors = [r["error"] for r in members]
        rho, groups = group_spearman(members)
        rho_text = f"{rho:>9.2f}" if rho is not None else f"{'-':>9}"
        print(f"{source:<18} {len(errors):>4} {mape(errors):>6.1f}% {mean_signed(errors):>+7.1f}%"
              f" {rho_text} {groups:>6}")
    errors = [r["error"] for r in done]
    print(f"{'overall':<18} {len(errors):>4} {mape(errors):>6.1f}% {mean_signed(errors):>+7.1f}%")
    failed = len(results) - len(done)
    if failed:
        print(f"({failed} configured rows failed in autopar and are not counted)")


def pair_key(config):
    """What must match for two rows to differ only in precision (effective settings, so the
    defaults filled in count too)."""
    s, row = config["settings"], config["row"]
    return (config["source"], row["model_name"], config["dims"]["num_layers"], row["num_gpus"],
            s["tp"], s["pp"], s["dp"], s["cp"], s["ep"], s["vpp"], s["mbs"], s["gbs"], s["seq"],
            s["recompute"], s.get("placement"))


def common_prefix(a, b):
    return len(os.path.commonprefix([a, b]))


def fp8_pairs(results):
    """(bf16 result, fp8 result) for rows equal but for precision; where several bf16 rows
    match (torchtitan's with and without torch.compile), the one whose id shares most."""
    done = [r for r in results if r["error"] is not None]
    bf16 = {}
    for r in done:
        if r["config"]["settings"]["precision"] in ("bf16", "fp16"):
            bf16.setdefault(pair_key(r["config"]), []).append(r)
    pairs = []
    for r in done:
        if r["config"]["settings"]["precision"] != "fp8":
            continue
        candidates = bf16.get(pair_key(r["config"]), [])
        if candidates:
            fid = r["config"]["row"]["id"]
            pairs.append((max(candidates, key=lambda c: common_prefix(c["config"]["row"]["id"],
                                                                      fid)), r))
    return pairs


def print_fp8_pairs(results):
    """Measured and predicted fp8 / bf16 speed-ups: whether fp8's gain is modelled, apart from
    the level."""
    pairs = fp8_pairs(results)
    print(f"\nbf16 -> fp8 pairs ({len(pairs)}): speed-up fp8 / bf16")
    print(f"{'fp8 row':<52} {'measured':>9} {'predicted':>9} {'diff':>7}")
    differences = []
    for low, high in pairs:
        def ratio(value_of):
            return speed(high["config"], value_of(high)) / speed(low["config"], value_of(low))
        measured = ratio(lambda r: r["config"]["published"])
        predicted = ratio(lambda r: r["predicted"])
        differences.append(predicted - measured)
        print(f"{high['config']['row']['id']:<52} {measured:>9.3f} {predicted:>9.3f} "
              f"{predicted - measured:>+7.3f}")
    if differences:
        mean_abs = sum(abs(d) for d in differences) / len(differences)
        print(f"mean |predicted - measured| speed-up: {mean_abs:.3f}; mean signed "
              f"{sum(differences) / len(differences):+.3f}")


def measured_peak_gib(row):
    """The published peak in GiB (torchtitan reports GiB)."""
    unit = (row.get("peak_memory_unit") or "GiB").lower()
    scale = {"gib": 1.0, "gb": 1e9 / 2 ** 30, "mib": 1 / 1024, "mb": 1e6 / 2 ** 30}[unit]
    return row["peak_memory"] * scale


def print_memory(results):
    """Measured peak (max across GPUs) against the estimate's largest stage peak."""
    done = [r for r in results if r["out"] is not None]
    rows = [r for r in done if r["config"]["row"].get("peak_memory") is not None]
    print(f"\nmemory ({len(rows)} rows with a measured peak)")
    print(f"{'row':<52} {'measured':>9} {'predicted':>10} {'error':>8} {'device':>8}  fits")
    errors, over = [], 0
    for r in rows:
        measured = measured_peak_gib(r["config"]["row"])
        predicted = max(r["out"]["peak_memory_bytes"]) / 2 ** 30
        device = r["out"]["device_memory_bytes"] / 2 ** 30
        errors.append(predicted / measured - 1)
        over += r["out"]["fits"] and measured > device
        print(f"{r['config']['row']['id']:<52} {measured:>7.1f}Gi {predicted:>8.1f}Gi "
              f"{100 * errors[-1]:>+7.1f}% {device:>6.0f}Gi  {r['out']['fits']}")
    covered = sum(band[0] <= measured_peak_gib(r["config"]["row"]) * 2 ** 30 <= band[1]
                  for r in rows
                  for band in [max(r["out"]["memory_band_bytes"], key=lambda b: b[1])])
    stated = [r for r in done if r["config"]["row"].get("recompute") is not None
              and r["config"]["row"].get("micro_batch_size") is not None]
    verdicts = {v: sum(r["out"]["memory_verdict"] == v for r in stated)
                for v in ("fits", "tight", "over")}
    print(f"memory band covers {covered} of {len(rows)} measured peaks; of the {len(stated)} rows "
          f"that ran and state their recompute and micro-batch: {verdicts['fits']} fit, "
          f"{verdicts['tight']} tight, {verdicts['over']} over")
    not_fitting = [r["config"]["row"]["id"] for r in done if not r["out"]["fits"]]
    print(f"memory MAPE {mape(errors):.1f}%, mean signed {mean_signed(errors):+.1f}% over "
          f"{len(errors)} rows; predicted to fit but measured above device memory: {over}; "
          f"predicted not to fit although they ran: {len(not_fitting)} of {len(done)}"
          + (f" ({', '.join(not_fitting)})" if not_fitting else ""))


# ---------------------------------------------------------------------------------------------
# The memory band

def fullest_stage(out):
    """(peak bytes, transient bytes) of the estimate's fullest stage."""
    stage = max(out["stages"], key=lambda st: st["peak_memory_bytes"])
    return stage["peak_memory_bytes"], stage["transient_bytes"]


def band_bounds(results):
    """What the rows say of the band, each as a share of the fullest stage's transient memory:
    a measured peak above the estimate bounds the band's top from below, one under it and a row
    that ran (every published row trained) whose estimate exceeds the device bound its bottom
    (the band must reach down to the measured peak, or to the device), where the row states its
    recompute and micro-batch. Returns (below, above,
    {row id: (below needed, above needed)})."""
    needs = {}
    for r in results:
        if r["out"] is None:
            continue
        row = r["config"]["row"]
        peak, transient = fullest_stage(r["out"])
        if transient <= 0:
            continue
        # A row that leaves its recompute or micro-batch unstated ran a configuration autopar
        # assumed, so it bounds nothing.
        stated = row.get("recompute") is not None and row.get("micro_batch_size") is not None
        below = max(0.0, (peak - r["out"]["device_memory_bytes"]) / transient) if stated else 0.0
        above = 0.0
        if row.get("peak_memory") is not None:
            measured = measured_peak_gib(row) * 2 ** 30
            below = max(below, (peak - measured) / transient)
            above = max(0.0, (measured - peak) / transient)
        needs[row["id"]] = (below, above)
    below = max((b for b, _ in needs.values()), default=0.0)
    above = max((a for _, a in needs.values()), default=0.0)
    return below, above, needs


def print_memory_band(results, write):
    """The band measured on every row, and each source's rows against the band the others
    measure (leave one source out): how many rows it covers."""
    below, above, needs = band_bounds(results)
    print(f"\nmemory band: -{100 * below:.1f}% / +{100 * above:.1f}% of the fullest stage's "
          f"transient memory, over {len(needs)} rows")
    sources = list(dict.fromkeys(r["config"]["source"] for r in results))
    print(f"{'held-out source':<18} {'rows':>5} {'band below':>11} {'above':>7} {'covered':>8}")
    covered_all, total = 0, 0
    for source in sources:
        train = [r for r in results if r["config"]["source"] != source]
        held = [r["config"]["row"]["id"] for r in results
                if r["config"]["source"] == source and r["config"]["row"]["id"] in needs]
        fold_below, fold_above, _ = band_bounds(train)
        covered = sum(needs[i][0] <= fold_below + 1e-9 and needs[i][1] <= fold_above + 1e-9
                      for i in held)
        covered_all, total = covered_all + covered, total + len(held)
        print(f"{source:<18} {len(held):>5} {100 * fold_below:>10.1f}% {100 * fold_above:>6.1f}% "
              f"{covered:>4} of {len(held)}")
    print(f"covered by the band the other sources measure: {covered_all} of {total}")
    if write:
        model = {}
        for key, value in json.load(open(COST_MODEL)).items():  # the band after the reserve
            if key not in ("memory_band_below", "memory_band_above"):
                model[key] = value
            if key == "allocator_reserve":
                # Rounded up, so the band still covers the row that set it.
                model["memory_band_below"] = math.ceil(below * 1e4) / 1e4
                model["memory_band_above"] = math.ceil(above * 1e4) / 1e4
        with open(COST_MODEL, "w") as file:
            json.dump(model, file, indent=2)
            file.write("\n")
        print(f"wrote memory_band_below and memory_band_above to {COST_MODEL}; rebuild to "
              f"compile them in")


# ---------------------------------------------------------------------------------------------
# Fitting and cross-validation

def fit_keys(model):
    """The FIT_KEYS and per-device keys the cost-model file holds, and the ones it lacks."""
    keys = [key for key in FIT_KEYS if key in model]
    keys += [(device, key) for device, names in DEVICE_KEYS.items() for key in names
             if key in model or key in model.get("devices", {}).get(device, {})]
    return keys, [key for key in FIT_KEYS if key not in model]


def architecture(device):
    """The DEVICE_KEYS entry a device's constants come from: its architecture ("H100" for
    "H100-SXM5-80GB" and "H100-HBM2e-96GB-500W"), as autopar's CostConstants::forDevice reads
    data/cost_model.json's "devices"."""
    for name in DEVICE_KEYS:
        if device == name or device.startswith(name + "-"):
            return name
    return device


def rows_moved_by(key, configs):
    """The rows a constant can move, so only they are run again: a device's override only that
    device's rows; a global constant only the rows of devices that do not override it; and of
    those only the ones its FIT_KEYS predicate selects (list collectives, fp8)."""
    name = key[1] if isinstance(key, tuple) else key
    if isinstance(key, tuple):
        subset = [c for c in configs if architecture(c["device"]) == key[0]]
    else:
        overridden = {device for device, names in DEVICE_KEYS.items() if name in names}
        subset = [c for c in configs if architecture(c["device"]) not in overridden]
    predicate = FIT_KEYS[name][1]
    return [c for c in subset if predicate(c)] if predicate else subset


def with_values(model, values):
    """The cost model with `values` ({key or (device, key): value}) put in."""
    result = json.loads(json.dumps(model))
    for key, value in values.items():
        if isinstance(key, tuple):
            result.setdefault("devices", {}).setdefault(key[0], {})[key[1]] = value
        else:
            result[key] = value
    return result


def current_value(model, key):
    if isinstance(key, tuple):
        device = model.get("devices", {}).get(key[0], {})
        return device[key[1]] if key[1] in device else model[key[1]]
    return model[key]


def results_mape(results):
    return mape([r["error"] for r in results.values() if r["error"] is not None])


def fit(autopar, configs, scratch, start, max_sweeps=None, label=""):
    """Coordinate descent from the cost model `start` (a path); (fitted model, MAPE)."""
    model = json.load(open(start))
    keys, missing = fit_keys(model)
    candidate = os.path.join(scratch, "candidate.json")

    def evaluate(values, subset):
        with open(candidate, "w") as file:
            json.dump(with_values(model, values), file)
        return {r["config"]["row"]["id"]: r for r in predict(autopar, subset, scratch, candidate)}

    values = {key: current_value(model, key) for key in keys}
    results = evaluate(values, configs)
    best = results_mape(results)
    print(f"{label}start: MAPE {best:.2f}% over {len(configs)} rows; not in the cost model, "
          f"skipped: {', '.join(missing) or 'none'}", flush=True)
    sweep = 0
    while max_sweeps is None or sweep < max_sweeps:
        sweep, before = sweep + 1, best
        for key in keys:
            low, high = FIT_KEYS[key[1] if isinstance(key, tuple) else key][0]
            moved = rows_moved_by(key, configs)
            for factor in (0.8, 0.9, 1.1, 1.25):
                trial = dict(values)
                trial[key] = values[key] * factor
                if not moved or not low <= trial[key] <= high:
                    continue
                trial_results = dict(results)
                trial_results.update(evaluate(trial, moved))
                score = results_mape(trial_results)
                if score < best - 1e-6:
                    best, values, results = score, trial, trial_results
                    print(f"{label}  {key} x{factor}: MAPE {best:.2f}%", flush=True)
        print(f"{label}sweep {sweep}: MAPE {best:.2f}%", flush=True)
        if before - best < FIT_TOLERANCE:
            break
    print(f"{label}fitted: MAPE {best:.2f}% {values}", flush=True)
    return with_values(model, values), values, best


def write_cost_model(values, best):
    """Rewrites data/cost_model.json as bench/calibration.py --write does."""
    model = json.load(open(COST_MODEL))
    model = with_values(model, {key: float(f"{value:.4g}") for key, value in values.items()})
    model["fitted"] = (f"bench/published.py --fit --write on {datetime.date.today().isoformat()}:"
                       f" MAPE {best:.2f}% over every configurable row of calibration.jsonl and "
                       f"development.jsonl")
    with open(COST_MODEL, "w") as file:
        json.dump(model, file, indent=2)
        file.write("\n")
    print(f"wrote {COST_MODEL}; rebuild to compile it in")


def cross_validate(autopar, configs, scratch, start, max_sweeps):
    """Leave one source out: fit on the others, predict it; the folds run in parallel."""
    sources = list(dict.fromkeys(c["source"] for c in configs))
    baseline = {r["config"]["row"]["id"]: r for r in predict(autopar, configs, scratch, start)}

    def fold(source):
        own = tempfile.mkdtemp(dir=scratch)
        train = [c for c in configs if c["source"] != source]
        fitted, _, train_mape = fit(autopar, train, own, start, max_sweeps, f"[{source}] ")
        path = os.path.join(own, "fitted.json")
        with open(path, "w") as file:
            json.dump(fitted, file)
        held = [c for c in configs if c["source"] == source]
        return source, predict(autopar, held, own, path), train_mape

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        folds = list(pool.map(fold, sources))
    print(f"\n{'held-out source':<18} {'n':>4} {'CV MAPE':>8} {'CV signed':>10} "
          f"{'train MAPE':>11} {'unfitted MAPE':>14}")
    everything = []
    for source, results, train_mape in folds:
        errors = [r["error"] for r in results if r["error"] is not None]
        everything += errors
        before = [baseline[r["config"]["row"]["id"]]["error"] for r in results
                  if r["error"] is not None]
        print(f"{source:<18} {len(errors):>4} {mape(errors):>7.1f}% {mean_signed(errors):>+9.1f}%"
              f" {train_mape:>10.1f}% {mape(before):>13.1f}%")
    print(f"{'all held out':<18} {len(everything):>4} {mape(everything):>7.1f}% "
          f"{mean_signed(everything):>+9.1f}%")


# ---------------------------------------------------------------------------------------------

def load_rows(prefix):
    rows = []
    for name in DATA_FILES:
        with open(os.path.join(DATA_DIR, name)) as file:
            rows += [json.loads(line) for line in file if line.strip()]
    return [row for row in rows if row["id"].startswith(prefix)]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("autopar", nargs="?",
                        default=os.path.join(ROOT, "build", "release", "autopar"))
    parser.add_argument("--rows", default="", help="only rows whose id starts with PREFIX")
    parser.add_argument("--cost-model", help="cost-model constants JSON (default: compiled in; "
                        "the fit starts from data/cost_model.json)")
    parser.add_argument("--fit", action="store_true")
    parser.add_argument("--write", action="store_true", help="with --fit or --memory-band: "
                        "rewrite data/cost_model.json")
    parser.add_argument("--cross-validate", action="store_true")
    parser.add_argument("--memory-band", action="store_true", help="measure the memory band "
                        "(data/cost_model.json's memory_band_below, memory_band_above) on every "
                        "row and cross-validate it by source; with --write, store it")
    parser.add_argument("--own-flops", action="store_true", help="compare published TFLOP/s "
                        "with autopar's own TFLOP/s figures instead of through the publisher's "
                        "FLOP formula (full attention)")
    parser.add_argument("--max-sweeps", type=int, help="sweeps at most (default: --fit until "
                        "FIT_TOLERANCE, --cross-validate 3)")
    return parser.parse_args()


def main():
    args = parse_args()
    began = time.time()
    configs, skipped = [], []
    for row in load_rows(args.rows):
        config, reason = configure(row, not args.own_flops)
        (configs.append(config) if config else skipped.append((row, reason)))
    print(f"autopar {args.autopar}: {len(configs)} rows configured, {len(skipped)} skipped",
          flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        if args.fit:
            _, values, best = fit(args.autopar, configs, scratch, args.cost_model or COST_MODEL,
                                  args.max_sweeps)
            if args.write:
                write_cost_model(values, best)
        elif args.memory_band:
            results = predict(args.autopar, configs, scratch, args.cost_model)
            print_memory_band(results, args.write)
        elif args.cross_validate:
            cross_validate(args.autopar, configs, scratch, args.cost_model or COST_MODEL,
                           3 if args.max_sweeps is None else args.max_sweeps)
        else:
            results = predict(args.autopar, configs, scratch, args.cost_model)
            print_rows(results, skipped)
            print_sources(results)
            print_fp8_pairs(results)
            print_memory(results)
    print(f"\nwall time {time.time() - began:.1f} s")


if __name__ == "__main__":
    main()
