"""The Python API against the command: the same answers, errors and fixes."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

import autopar
from conftest import ROOT, cli, cli_json


def test_search_equals_the_command(scratch):
    best = autopar.search(model="llama2-7b", nodes=1, gbs=32)
    expected = cli_json("search", "--model", "llama2-7b", "--nodes", "1", "--gbs", "32",
                        "--json", "--out", str(scratch / "optimal.json"))
    assert best.to_dict() == expected
    assert (best.tp, best.pp, best.dp) == (expected["parallel_config"]["TP"],
                                          expected["parallel_config"]["PP"],
                                          expected["parallel_config"]["DP"])
    assert best.step_seconds == pytest.approx(expected["e2e_time"] / 1000)
    # The search writes no file where the caller is unless asked to.
    assert os.listdir(scratch) == ["optimal.json"]


def test_search_exports_equal_the_command(scratch):
    best = autopar.search(model="llama2-7b", nodes=1, gbs=32, framework="megatron-core")
    cli("search", "--model", "llama2-7b", "--nodes", "1", "--gbs", "32", "--framework",
        "megatron-core", "--out", "o.json", "--launch-script", "launch.sh", "--mindformers-yaml",
        "run.yaml")
    assert best.launch_script == (scratch / "launch.sh").read_text()
    assert best.mindformers_yaml == (scratch / "run.yaml").read_text()
    assert "pretrain_gpt.py" in best.launch_script


def test_estimate_and_plan_equal_the_command():
    estimate = autopar.estimate(model="llama2-7b", tp=2, dp=4, gbs=32, zero=1)
    assert estimate.to_dict() == cli_json("estimate", "--model", "llama2-7b", "--tp", "2", "--dp",
                                          "4", "--gbs", "32", "--zero", "1", "--json")
    assert estimate.tp == 2 and estimate.fits
    plan = autopar.plan(model="llama2-7b", devices=8, tp=2, recompute="full")
    assert plan.to_dict() == cli_json("plan", "--model", "llama2-7b", "--devices", "8", "--tp",
                                      "2", "--recompute", "full", "--json")
    assert plan.fits and plan.step_seconds > 0


def test_presets_equal_the_command():
    assert autopar.models() == cli_json("models", "--json")
    assert autopar.clusters() == cli_json("clusters", "--json")


def test_a_model_as_a_dict_of_dimensions_or_a_graph():
    dimensions = {"name": "gpt-4l", "num_layers": 4, "hidden_size": 1024, "ffn_hidden_size": 4096,
                  "num_attention_heads": 16, "vocab_size": 32000, "seq_length": 2048,
                  "swiglu": False}
    assert autopar.estimate(model=dimensions, tp=2, dp=4, gbs=32).fits
    graph = autopar.Graph("ffn")
    x = graph.input("x", [64, 1024])
    h = graph.op("fc1", "MatMul", [x, graph.parameter("fc1.weight", [1024, 4096])])
    graph.op("act", "ReLU", [h])
    planned = autopar.plan(model=graph, devices=8, search="sharding_propagation")
    assert planned.fits and {op["name"] for op in planned.ops} == {"fc1", "act"}


def test_bad_input_raises_value_error_naming_the_argument():
    with pytest.raises(ValueError, match=r"^--tp: expected a positive number, got 0$"):
        autopar.estimate(model="llama2-7b", tp=0)
    with pytest.raises(ValueError, match=r"^estimate: unknown argument 'tpp'; did you mean 'tp'\?"):
        autopar.estimate(model="llama2-7b", tpp=2)
    with pytest.raises(ValueError, match=r"unknown model preset 'llama9'"):
        autopar.plan(model="llama9")
    with pytest.raises(ValueError, match=r"^model: expected a preset name"):
        autopar.plan(model=3.5)
    with pytest.raises(ValueError, match=r"^recompute: expected True or False|--recompute"):
        autopar.plan(model="llama2-7b", recompute="sometimes")


def test_does_not_fit_carries_fixes_that_fit():
    with pytest.raises(autopar.DoesNotFit) as raised:
        autopar.plan(model="gpt3-175b", cluster="dgx-h100", nodes=8, tp=8)
    error = raised.value
    assert "does not fit" in error.message and error.result.fits is False
    assert error.fixes, error.message
    for fix in error.fixes:
        fixed = autopar.plan(model="gpt3-175b", cluster="dgx-h100", nodes=8, tp=8,
                             **fix["keywords"])
        assert fixed.fits
        assert fixed.step_seconds == pytest.approx(fix["step_time_s"])
    with pytest.raises(autopar.DoesNotFit) as raised:
        autopar.estimate(model="llama2-7b", tp=2, dp=4, gbs=32, zero=1, memory_margin=40)
    assert raised.value.fixes and raised.value.result.fits is False
    for fix in raised.value.fixes:
        keywords = {"tp": 2, "dp": 4, "gbs": 32, "zero": 1, "memory_margin": 40}
        keywords.update(fix["keywords"])
        fixed = autopar.estimate(model="llama2-7b", **keywords)
        assert fixed.fits and fixed.step_seconds == pytest.approx(fix["step_time_s"])


def test_the_gil_is_released_during_a_search():
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.005)

    counter = threading.Thread(target=count)
    counter.start()
    start = time.monotonic()
    autopar.search(model="llama2-70b", nodes=128, gbs=1024, op_search="recursive_programming")
    end = time.monotonic()
    stop.set()
    counter.join()
    during = [t for t in ticks if start < t < end]
    assert end - start > 0.2 and len(during) >= (end - start) / 0.05


def test_ctrl_c_interrupts_a_search_cleanly():
    # The double-recursive plan of LLaMA2-70B over 1,024 devices takes 5 s on 2 cores (its
    # mem_coeff ladder); SIGINT after 0.3 s stops it at its next planning step.
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        autopar.plan(model="llama2-70b", nodes=128, search="recursive_programming")
    assert time.monotonic() - start < 2.5
    timer.join()
    # The library is usable afterwards.
    assert autopar.search(model="llama2-7b", nodes=1, gbs=32).tp >= 1


def test_ctrl_c_interrupts_a_graph_search_between_configurations():
    # The ViT encoder over 512 H100s under sharding propagation takes about 0.9 s on 2 cores.
    model = str(ROOT / "examples" / "graphs" / "vit_encoder.json")
    arguments = {"model": model, "cluster": "dgx-h100", "nodes": 64, "gbs": 4096,
                 "op_search": "sharding_propagation"}
    start = time.monotonic()
    autopar.search(**arguments)
    whole = time.monotonic() - start
    timer = threading.Timer(whole / 4, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        autopar.search(**arguments)
    assert time.monotonic() - start < whole
    timer.join()


def test_pip_installs_the_package(tmp_path):
    # Into a virtual environment that sees Debian's packages, from the source tree, offline.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    subprocess.run([venv / "bin" / "pip", "install", "--quiet", "--no-build-isolation",
                    "--no-index", str(ROOT)], check=True, cwd=tmp_path)
    done = subprocess.run([venv / "bin" / "python", "-c",
                           "import autopar; print(autopar.__file__); "
                           "print(autopar.search(model='llama2-7b', nodes=1, gbs=32).tp)"],
                          capture_output=True, text=True, check=True, cwd=tmp_path,
                          env={"PATH": os.environ["PATH"]})
    installed, tp = done.stdout.split()
    assert installed.startswith(str(venv)) and int(tp) >= 1


def test_the_readme_python_blocks_run(capsys):
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})
    assert capsys.readouterr().out.strip()


def test_plan_exports_and_validate_equal_the_command(scratch):
    flags = {"model": "llama2-7b", "devices": 8, "tp": 2, "recompute": "full"}
    planned = autopar.plan(**flags)
    cli("plan", "--model", "llama2-7b", "--devices", "8", "--tp", "2", "--recompute", "full",
        "--out", "plan.json", "--megatron-args", "args.txt", "--mindspore-strategy",
        "strategy.json")
    assert planned.megatron_args() == (scratch / "args.txt").read_text().strip()
    assert "--tensor-model-parallel-size 2" in planned.megatron_args()
    assert planned.mindspore_strategy() == json.loads((scratch / "strategy.json").read_text())
    report = autopar.validate(plan="plan.json", model="llama2-7b")
    assert report == cli("validate", "plan.json", "--model", "llama2-7b")[1].splitlines()
    assert "valid plan" in report[0]
    with pytest.raises(ValueError, match=r"nope.json"):
        autopar.validate(plan="nope.json", model="llama2-7b")


def test_verbs_run_side_by_side_in_threads():
    cases = [{"model": "llama2-7b", "nodes": 1, "gbs": 32},
             {"model": "mixtral-8x7b", "nodes": 8, "gbs": 256},
             {"model": "qwen2-vl-72b", "cluster": "ascend-910b-node", "nodes": 8, "gbs": 128}]
    alone = [autopar.search(**case).to_dict() for case in cases]
    together = [None] * len(cases)
    threads = [threading.Thread(target=lambda i=i: together.__setitem__(
        i, autopar.search(**cases[i]).to_dict())) for i in range(len(cases))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert together == alone


def test_an_export_a_model_cannot_take_fails_alone():
    # Qwen2-VL is searched; its launch script is MindSpeed-MM's own, which autopar does not write.
    best = autopar.search(model="qwen2-vl-72b", cluster="ascend-910b-node", nodes=8, gbs=128)
    assert best.tp >= 1
    with pytest.raises(ValueError, match=r"^--launch-script: a multimodal model"):
        best.launch_script
    assert "parallel_config:" in best.mindformers_yaml


def test_flags_lists_and_negations_become_the_commands_words():
    from autopar import _verbs
    assert _verbs.arguments("plan", {"shard": ["a=((2,1),(1,1))", "b=((1,2),(2,1))"]}) == \
        ["plan", "--shard=a=((2,1),(1,1))", "--shard=b=((1,2),(2,1))"]
    assert _verbs.arguments("search", {"schedules": ["1f1b", "interleaved"]}) == \
        ["search", "--schedules=1f1b,interleaved"]
    assert _verbs.arguments("estimate", {"overlap_grad_reduce": False}) == \
        ["estimate", "--no-overlap-grad-reduce"]
    assert _verbs.arguments("validate", {"plan": "-p.json", "model": "m"}) == \
        ["validate", "--model=m", "--", "-p.json"]
    slower = autopar.estimate(model="llama2-7b", tp=2, dp=4, gbs=32, zero=1,
                              overlap_grad_reduce=False)
    assert slower.to_dict() == cli_json("estimate", "--model", "llama2-7b", "--tp", "2", "--dp",
                                        "4", "--gbs", "32", "--zero", "1",
                                        "--no-overlap-grad-reduce", "--json")


def test_uneven_data_parallel_shares_are_a_list_of_samples():
    model = str(ROOT / "examples/models/llama-2layer-h256.json")
    plan = autopar.plan(model=model, cluster="cpu-host", seq=128, devices=4, tp=2,
                        micro_batches=2, dp_shares=[6, 2])
    expected = cli_json("plan", "--model", model, "--cluster", "cpu-host", "--seq", "128",
                        "--devices", "4", "--tp", "2", "--micro-batches", "2", "--dp-shares",
                        "6,2", "--json")
    assert plan.to_dict() == expected
    assert expected["data_parallel_shares"] == [6, 2]
    assert expected["estimate"]["samples_per_step"] == 8


def test_a_graph_search_winner_is_not_exported_from_other_options():
    graph = autopar.Graph("ffn")
    x = graph.input("x", [64, 1024])
    graph.op("fc1", "MatMul", [x, graph.parameter("fc1.weight", [1024, 4096])])
    best = autopar.search(model=graph, gbs=64, out=None)
    assert best.fits
    with pytest.raises(ValueError, match=r"^megatron_args: a graph search's winner"):
        best.megatron_args()


MIXED = str(ROOT.parent / "shared" / "examples" / "mixed-cluster.yaml")


def search_mixed(model, **keywords):
    """`search` of `model` on the shared mixed example in-process, and the command's JSON."""
    result = autopar.search(model=model, cluster=MIXED, gbs=256, **keywords)
    expected = cli_json("search", "--model", model, "--cluster", MIXED, "--gbs", "256", "--json",
                        "--out", "o.json")
    return result, expected


def test_a_plan_across_device_groups_is_a_shared_plan_result(scratch):
    shared, expected = search_mixed("llama2-13b")
    assert isinstance(shared, autopar.SharedPlanResult)
    assert shared.to_dict() == expected
    assert [share.name for share in shared.groups] == ["h100", "a100"]
    assert sum(share.samples for share in shared.groups) == 256
    assert shared.groups[0].config.tp == expected["groups"][0]["config"]["parallel_config"]["TP"]
    assert shared.step_seconds == pytest.approx(expected["e2e_time"] / 1000)
    alone = autopar.search(model="llama2-13b", cluster=MIXED, gbs=256, cross_group=False)
    assert isinstance(alone, autopar.SearchResult)
    assert shared.step_seconds < alone.step_seconds


def test_a_pipeline_across_device_groups_is_a_group_pipeline_result(scratch):
    pipeline, expected = search_mixed("llama2-70b")
    assert isinstance(pipeline, autopar.GroupPipelineResult)
    assert pipeline.to_dict() == expected
    assert sum(stage["layers"] for stage in pipeline.stages) == 80
    assert pipeline.config.pp == len(pipeline.stages)
    assert {stage["group"] for stage in pipeline.stages} == {"h100", "a100"}
