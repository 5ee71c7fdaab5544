"""autopar.from_torch: PyTorch modules traced into graphs that the searches plan and that the
runtime runs on CPU ranks equal to the serial model."""

import json
import warnings

import pytest

torch = pytest.importorskip("torch")

import autopar  # noqa: E402
import gpt  # noqa: E402  (examples/python, on the path by conftest)
import recsys  # noqa: E402
import vit  # noqa: E402
from conftest import cli  # noqa: E402

SMALL = {
    "gpt": lambda: (gpt.GPT(vocab=64, hidden=32, heads=4, layers=2, seq=16),
                    gpt.example_inputs(4, 16, 64)),
    "vit": lambda: (vit.ViT(image=16, patch=4, hidden=32, heads=4, layers=2, classes=10),
                    vit.example_inputs(4, 16, 10)),
    "recsys": lambda: (recsys.RecSys(rows=256, width=8, sparse=4, dense=4, hidden=32, blocks=2),
                       recsys.example_inputs(4, 256, sparse=4, dense=4)),
}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_traced_examples_run_on_ranks_equal_to_the_serial_model(name, scratch):
    module, inputs = SMALL[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every node of the examples maps to an op autopar knows
        graph = autopar.from_torch(module, inputs, name=name)
    path = graph.save(scratch / f"{name}.json")
    cli("search", "--model", str(path), "--cluster", "cpu-host", "--devices-per-node", "4",
        "--gbs", "8", "--op-search", "recursive_programming", "--out", "plan.json")
    _, out, _ = cli("check", "--plan", "plan.json", "--ranks", "4", "--steps", "2")
    assert out.rstrip().splitlines()[-1].startswith("PASS"), out


def test_the_graph_names_ops_by_module_path_and_tags_repeated_blocks():
    module, inputs = SMALL["gpt"]()
    graph = autopar.from_torch(module, inputs).to_json()
    ops = {op["name"]: op for op in graph["ops"]}
    assert ops["blocks.1.fc1"]["block"] == "blocks.1"
    assert ops["blocks.0.q.matmul"]["kind"] == "MatMul"
    assert ops["head"]["kind"] == "MatMul" and "block" not in ops["head"]
    parameters = {t["name"]: t["shape"] for t in graph["tensors"] if t["role"] == "parameter"}
    assert parameters["blocks.0.fc1.weight"] == [128, 32]  # torch's [out, in], read transposed
    assert parameters["embed.weight"] == [64, 32]
    assert graph["ops"][-1]["kind"] == "CrossEntropy"


def test_a_traced_four_block_gpt_is_pipelined():
    graph = autopar.from_torch(gpt.GPT(layers=4), gpt.example_inputs(2, 1024, 32000))
    best = autopar.search(model=graph, cluster="dgx-h100", gbs=64)
    assert best.fits and len(best.estimate["stages"]) >= 2


class _WithCumsum(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x):
        y = self.fc(x)
        return torch.cumsum(y, 1) + torch.cumsum(y, 0)


def test_an_unknown_op_is_replicated_with_one_warning_per_kind():
    with pytest.warns(UserWarning, match=r"cumsum is not an op autopar knows; 2 node\(s\)") as seen:
        graph = autopar.from_torch(_WithCumsum(), torch.randn(8, 16))
    assert len([w for w in seen if "cumsum" in str(w.message)]) == 1
    kinds = [op["kind"] for op in graph.to_json()["ops"]]
    assert kinds.count("Opaque") == 2
    planned = autopar.plan(model=graph, devices=4, search="sharding_propagation")
    assert planned.fits


def test_bad_modules_and_inputs_raise_value_error(scratch):
    with pytest.raises(ValueError, match=r"^module: expected a torch.nn.Module"):
        autopar.from_torch("gpt", ())
    with pytest.raises(ValueError, match=r"^example_inputs: forward takes 2 tensor\(s\), got 1"):
        autopar.from_torch(gpt.GPT(vocab=64, hidden=32, heads=4, layers=2, seq=16),
                           torch.zeros(4, 16, dtype=torch.long))
    graph = autopar.from_torch(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()),
                               torch.randn(2, 4))
    saved = json.loads(graph.save(scratch / "g.json") and (scratch / "g.json").read_text())
    assert saved["format"] == "autopar.graph" and [op["kind"] for op in saved["ops"]] == \
        ["MatMul", "Add", "ReLU"]


class _Shared(torch.nn.Module):
    """A tuple-returning op, a Linear applied twice, a head tied to the embedding, a slice whose
    stop is traced, a keyword target and a BatchNorm-free forward."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(16, 8)
        self.fc = torch.nn.Linear(8, 8)
        self.head = torch.nn.Linear(8, 16, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, ids, labels):
        parts = torch.chunk(self.emb(ids), 2, dim=-1)
        y = self.fc(self.fc(torch.cat([parts[0], parts[1]], dim=-1)))
        logits = self.head(y[:, :y.size(1)])
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1), target=labels.flatten())


def test_tuples_shared_layers_tied_weights_and_traced_slices():
    with pytest.warns(UserWarning, match=r"chunk is not an op autopar knows; 1 node"):
        graph = autopar.from_torch(_Shared(), (torch.randint(0, 16, (4, 6)),
                                               torch.randint(0, 16, (4, 6))))
    ops = {op["name"]: op for op in graph.to_json()["ops"]}
    assert ops["chunk"]["outputs"] == ["chunk.0", "chunk.1"]
    assert ops["cat"]["inputs"] == ["chunk.0", "chunk.1"]
    assert {"fc.matmul", "fc.matmul_", "fc", "fc_"} <= set(ops)
    assert ops["head"]["inputs"][1] == "emb.weight"  # one tensor for the tied weight
    assert [op["kind"] for op in ops.values()].count("Slice") == 1
    assert ops[graph.ops[-1]["name"]]["kind"] == "CrossEntropy"
    parameters = [t["name"] for t in graph.to_json()["tensors"] if t["role"] == "parameter"]
    assert sorted(parameters) == ["emb.weight", "fc.bias", "fc.weight"]
    assert autopar.plan(model=graph, devices=4, search="sharding_propagation").fits


def test_tracing_leaves_the_module_as_it_was():
    module = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
    before = module[1].running_mean.clone()
    with pytest.warns(UserWarning, match=r"BatchNorm1d is not an op autopar knows"):
        graph = autopar.from_torch(module, torch.randn(8, 4) + 3, name="bn")
    assert graph.name == "bn"
    assert torch.equal(module[1].running_mean, before)
