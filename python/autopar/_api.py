"""The planner's verbs as Python functions: keyword arguments named as the command's flags,
typed results whose to_dict() is the JSON the command prints with --json, and the command's
one-line errors raised as exceptions (docs/python.md)."""

import contextlib
import json
import os
import tempfile

from . import _verbs
from ._verbs import DoesNotFit


class Result:
    """A verb's answer: to_dict() is the JSON `autopar VERB --json` prints for the same inputs;
    the common fields are attributes."""

    def __init__(self, data):
        self._data = data

    def to_dict(self):
        return json.loads(json.dumps(self._data))

    def __getitem__(self, key):
        return self._data[key]

    def __repr__(self):
        return f"{type(self).__name__}({self._summary()})"

    def _summary(self):
        return ", ".join(f"{key}={value!r}" for key, value in list(self._data.items())[:6])


def _parallel_fields(cls, keys):
    """Adds read-only attributes for the result's parallel_config entries: {attribute: key}."""
    for attribute, key in keys.items():
        setattr(cls, attribute, property(lambda self, key=key: self._data["parallel_config"][key],
                                         doc=f"parallel_config[{key!r}]"))
    return cls


class SearchResult(Result):
    """`search`'s best configuration: seed 003's optimal-config JSON (MindSpeed's keys). Its
    exports, `launch_script` and `mindformers_yaml`, are written when first read (the search runs
    again with the file named: it is deterministic), so a model one of them cannot express still
    gets its search."""

    def __init__(self, data, keywords):
        super().__init__(data)
        self._keywords = keywords
        self._exports = {}

    def _export(self, flag):
        if flag not in self._exports:
            self._exports[flag] = _written("search", self._keywords, flag)
        return self._exports[flag]

    @property
    def launch_script(self):
        """The bash script that launches the configuration on every node (`--launch-script`):
        Megatron-LM's pretrain_gpt.py, or torchtitan's trainer, by `framework`."""
        return self._export("launch_script")

    @property
    def mindformers_yaml(self):
        """The configuration as a complete MindFormers run yaml (`--mindformers-yaml`)."""
        return self._export("mindformers_yaml")

    @property
    def step_seconds(self):
        return self._data["e2e_time"] / 1000.0

    @property
    def throughput(self):
        """Tokens per second over the cluster."""
        return self._data["throughput"]

    @property
    def mindspeed_json(self):
        """Seed 003's auto_parallel_search_optimal_config.json (the same as to_dict())."""
        return self.to_dict()

    def _summary(self):
        return (f"tp={self.tp}, pp={self.pp}, dp={self.dp}, cp={self.cp}, "
                f"micro_batch_size={self.micro_batch_size}, zero={self.zero}, "
                f"recompute={self.recompute!r}, step_seconds={self.step_seconds:.4g}")


_parallel_fields(SearchResult, {"tp": "TP", "pp": "PP", "dp": "DP", "cp": "CP", "ep": "EP",
                                "vpp": "VPP", "micro_batch_size": "MBS", "zero": "ZeRO",
                                "sequence_parallel": "SP", "schedule": "schedule",
                                "recompute": "recompute"})


class GroupShare:
    """One device group's part of a SharedPlanResult: its name, device, share of the global batch
    and the configuration it trains that share with (seed 003's keys, as SearchResult reads
    them)."""

    def __init__(self, data):
        self.name = data["name"]
        self.device = data["device"]
        self.devices = data["nodes"] * data["devices_per_node"]
        self.samples = data["samples"]
        self.config = SearchResult(data["config"], None)

    def __repr__(self):
        return (f"GroupShare(name={self.name!r}, samples={self.samples}, "
                f"{self.config._summary()})")


class _PlanAcrossGroups(Result):
    """What every plan across device groups' JSON opens with: its step, speed and price."""

    step_seconds = property(lambda self: self._data["e2e_time"] / 1000.0)
    tokens_per_second = property(lambda self: self._data["tokens_per_second"])
    dollars_per_hour = property(lambda self: self._data["dollars_per_hour"])
    dollars_per_million_tokens = property(lambda self: self._data["dollars_per_million_tokens"])


class SharedPlanResult(_PlanAcrossGroups):
    """`search` on a cluster of device groups whose fastest (or cheapest) plan shares the batch
    across groups: each group trains its share with its own configuration, then the gradients
    all-reduce across groups. No framework runs it, so it has no exports."""

    sync_seconds = property(lambda self: self._data["cross_group_sync_time"] / 1000.0,
                            doc="the gradient all-reduce across groups")

    @property
    def groups(self):
        """Per group it uses, in the cluster file's order: a GroupShare."""
        return [GroupShare(group) for group in self._data["groups"]]

    def _summary(self):
        shares = ", ".join(f"{share['name']}={share['samples']}" for share in self._data["groups"])
        return f"{shares}, step_seconds={self.step_seconds:.4g}"


class GroupPipelineResult(_PlanAcrossGroups):
    """`search` on a cluster of device groups whose chosen plan pipelines across two groups: its
    first stages on one kind, the rest on another, the layers split by their speeds. `config` is
    its configuration as SearchResult reads seed 003's keys (layer_placement per stage);
    `stages` lists each stage's group, device, layers and peak memory."""

    stages = property(lambda self: self._data["stages"])

    @property
    def config(self):
        return SearchResult(self._data["config"], None)

    def _summary(self):
        groups = " -> ".join(dict.fromkeys(stage["group"] for stage in self.stages))
        layers = [stage["layers"] for stage in self.stages]
        return f"{groups}, layers={layers}, step_seconds={self.step_seconds:.4g}"


class EstimateResult(Result):
    """`estimate`'s prediction for one configuration: step time, memory per stage, throughput."""

    step_seconds = property(lambda self: self._data["step_time_s"])
    fits = property(lambda self: self._data["fits"])
    peak_memory_bytes = property(lambda self: max(self._data["peak_memory_bytes"]),
                                 doc="the most loaded stage's peak")
    memory_verdict = property(lambda self: self._data["memory_verdict"])
    mfu = property(lambda self: self._data["mfu"])
    tokens_per_s = property(lambda self: self._data["tokens_per_s"])
    stages = property(lambda self: self._data["stages"])

    def _summary(self):
        return (f"step_seconds={self.step_seconds:.4g}, peak_gib="
                f"{self.peak_memory_bytes / 2**30:.2f}, fits={self.fits}, mfu={self.mfu:.3f}")


_parallel_fields(EstimateResult, {"tp": "TP", "pp": "PP", "dp": "DP", "cp": "CP", "ep": "EP",
                                  "vpp": "VPP", "micro_batch_size": "MBS",
                                  "global_batch_size": "GBS", "micro_batches": "micro_batches",
                                  "zero": "zero", "recompute": "recompute"})


class PlanResult(Result):
    """`plan`'s plan JSON (docs/plan-format.md). `estimate` holds its step time and peak; the
    exports are methods, since each plans again with its output file named."""

    def __init__(self, data, keywords):
        super().__init__(data)
        # What plans it again for an export; None for a graph search's winner, which `plan`
        # does not reproduce from the search's keywords.
        self._keywords = None if keywords is None else _without_outputs(keywords)

    @property
    def estimate(self):
        return self._data.get("estimate", {})

    @property
    def step_seconds(self):
        return self.estimate.get("step_time_s")

    @property
    def peak_memory_bytes(self):
        return self.estimate.get("peak_memory_bytes")

    @property
    def fits(self):
        return self.estimate.get("fits")

    @property
    def ops(self):
        """Each op's strategy, device matrix and costs."""
        return self._data.get("ops", [])

    def _export(self, flag):
        if self._keywords is None:
            raise ValueError(f"{flag}: a graph search's winner is exported by planning it: "
                             "autopar.plan(model=..., pipeline_stages=..., ...) with the "
                             "winner's options")
        return _written("plan", self._keywords, flag)

    def megatron_args(self):
        """Megatron-LM's arguments for the plan, one line (`plan --megatron-args`)."""
        return self._export("megatron_args").strip()

    def mindspore_strategy(self):
        """The op strategies as the JSON MindSpore loads (`plan --mindspore-strategy`)."""
        return json.loads(self._export("mindspore_strategy"))

    def _summary(self):
        return f"step_seconds={self.step_seconds!r}, fits={self.fits!r}"


def _model_argument(model, directory):
    """A model as the command takes it: a preset name or a path as they are, a dict of dimensions
    or a graph (autopar.Graph, or a dict with "format": "autopar.graph") written to a file."""
    if model is None or isinstance(model, str):
        return model
    if isinstance(model, os.PathLike):
        return os.fspath(model)
    to_json = getattr(model, "to_json", None)
    if callable(to_json):
        model = to_json()
    if isinstance(model, dict):
        path = os.path.join(directory, "model.json")
        with open(path, "w", encoding="utf-8") as file:
            json.dump(model, file)
        return path
    raise ValueError(f"model: expected a preset name, a path, a dict of dimensions or a graph, "
                     f"got {type(model).__name__}")


@contextlib.contextmanager
def _materialized(keywords):
    """`keywords` with the model as the command takes it, for the duration of the block."""
    with tempfile.TemporaryDirectory(prefix="autopar-") as directory:
        yield {**keywords, "model": _model_argument(keywords.get("model"), directory)}, directory


def _is_graph(model):
    return str(model).endswith((".json", ".onnx")) and _reads_as_graph(model)


def _reads_as_graph(path):
    if str(path).endswith(".onnx"):
        return True
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file).get("format") == "autopar.graph"
    except (OSError, ValueError, AttributeError):
        return False


def _run_json(verb, keywords):
    words = _verbs.arguments(verb, {**keywords, "json": True})
    out, _ = _verbs.run(words)
    return json.loads(out)


def _result_or_does_not_fit(verb, keywords, result):
    """`autopar VERB --json` as `result(data)`. Where it does not fit (exit 3) the command still
    prints its JSON, with the fixes it verified: DoesNotFit carries them and `result(data)`."""
    with _materialized(keywords) as (given, _):
        words = _verbs.arguments(verb, {**given, "json": True})
        status, out, err = _verbs._autopar.run(words)
    if status == _verbs.EXIT_DOES_NOT_FIT and out.strip():
        data = json.loads(out)
        raise DoesNotFit("\n".join(_verbs.error_lines(err)), _with_keywords(data.get("fixes", [])),
                         result(data))
    if status != 0:
        _verbs.raise_for(status, words, err)
    return result(json.loads(out))


def _written(verb, keywords, flag):
    """The text of the file `autopar VERB` writes for `flag` (an export), run again with it named
    in a temporary directory; a search's --out goes there too."""
    with _materialized(keywords) as (given, directory):
        path = os.path.join(directory, "export")
        if verb == "search":
            given["out"] = os.path.join(directory, "out.json")
        _verbs.run(_verbs.arguments(verb, {**given, flag: path}))
        return _read(path)


def estimate(**keywords):
    """`autopar estimate`: one configuration's step time and memory. Raises DoesNotFit carrying
    the estimate and the single changes autopar estimated to fit, fastest first."""
    return _result_or_does_not_fit("estimate", keywords, EstimateResult)


def search(**keywords):
    """`autopar search`: the fastest configuration that fits (a transformer: SearchResult, or on a
    cluster of device groups a plan sharing the batch across them, SharedPlanResult, or pipelining
    across two of them, GroupPipelineResult; a graph: the winner's PlanResult). Files named by `out`, `launch_script`, `mindformers_yaml` or
    `report` are written there, as the command writes them; without `out` nothing is left behind.
    When nothing fits, DoesNotFit's message says what would (more nodes, say)."""
    if keywords.get("auto_parallel_mm"):
        raise ValueError("auto_parallel_mm: seed 003's sampling starts autopar-runtime on every "
                         "node; run it as the command (`autopar search --auto-parallel-mm ...`) "
                         "and pass its table here as profile=")
    with _materialized(keywords) as (given, directory):
        graph = _is_graph(given["model"])
        if given.get("out") is None:
            given["out"] = os.path.join(directory, "out.json")
        words = _verbs.arguments("search", {**given, "json": not graph})
        out, _ = _verbs.run(words)
        if graph:
            return PlanResult(json.loads(_read(given["out"])), None)
    data = json.loads(out)
    if "groups" in data:
        return SharedPlanResult(data)
    if "stages" in data:
        return GroupPipelineResult(data)
    return SearchResult(data, _without_outputs(keywords))


_OUTPUTS = ("out", "launch_script", "mindformers_yaml", "report", "megatron_args",
            "mindspore_strategy")


def _without_outputs(keywords):
    """The keywords less the files they would write: what an export runs the verb again with."""
    return {key: value for key, value in keywords.items() if key not in _OUTPUTS}


def _read(path):
    with open(path, encoding="utf-8") as file:
        return file.read()


def plan(**keywords):
    """`autopar plan`: the plan of one model on one cluster. Raises DoesNotFit carrying the plan
    and the fixes autopar verified by planning them."""
    return _result_or_does_not_fit("plan", keywords, lambda data: PlanResult(data, keywords))


def validate(**keywords):
    """`autopar validate`: checks a plan JSON against its model. Returns the report's lines;
    raises ValueError when the plan is invalid and DoesNotFit when it does not fit."""
    with _materialized(keywords) as (given, _):
        out, _ = _verbs.run(_verbs.arguments("validate", given))
    return out.splitlines()


def models():
    """The built-in model presets (`autopar models --json`)."""
    return _run_json("models", {})


def clusters():
    """The built-in cluster presets (`autopar clusters --json`)."""
    return _run_json("clusters", {})


def _keywords_of(flags):
    """["--pipeline-stages", "8", "--recompute-activations"] as keyword arguments:
    {"pipeline_stages": 8, "recompute_activations": True}."""
    keywords, index = {}, 0
    while index < len(flags):
        name = flags[index][2:].replace("-", "_")
        if index + 1 < len(flags) and not flags[index + 1].startswith("--"):
            value = flags[index + 1]
            try:
                value = int(value)
            except ValueError:
                try:
                    value = float(value)
                except ValueError:
                    pass
            keywords[name] = value
            index += 2
        else:
            keywords[name] = True
            index += 1
    return keywords


def _with_keywords(fixes):
    """Each fix with its flags also as the keyword arguments that apply it."""
    return [{**fix, "keywords": _keywords_of(fix["flags"])} for fix in fixes]
