"""The keys of a MindFormers run yaml, as MindFormers' source at a commit takes them, for
scripts/framework_facts.py (extract-mindformers, check-mindformers).

Two kinds of fact:
- sections MindFormers builds a class from take that class's __init__ parameters:
  `parallel_config` (TransformerOpParallelConfig), `recompute_config` (TransformerRecomputeConfig)
  and `model.model_config` (the class its `type` names, plus the keywords PretrainedConfig pops;
  any other keyword PretrainedConfig stores as an attribute no layer reads);
- sections MindFormers hands on whole (`parallel` goes to MindSpore's set_auto_parallel_context,
  `runner_config` and the top level to its trainer) take the keys its own run yamls use: every
  key path under them in the repository's yaml files, tests left out.
The source is read with Python's ast module and the yamls with PyYAML, so no MindFormers or
MindSpore install is needed.
"""

import ast

import yaml

from facts_source import git_files, git_show

CLASS_SECTIONS = {
    "parallel_config": ("mindformers/modules/transformer/transformer.py",
                        "TransformerOpParallelConfig"),
    "recompute_config": ("mindformers/modules/transformer/transformer.py",
                         "TransformerRecomputeConfig"),
}
MODEL_CONFIGS = {"LlamaConfig": "mindformers/models/llama/llama_config.py"}
PRETRAINED = "mindformers/models/configuration_utils.py"
WITNESSED = ("parallel", "runner_config")
# autopar marks a model key MindFormers has no parameter for with this comment.
OWN_KEY = "# autopar's key"


def init_parameters(source, cls):
    """The keyword names of class `cls`'s __init__."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    args = item.args
                    names = [a.arg for a in args.args + args.kwonlyargs]
                    return sorted(n for n in names if n != "self")
    raise SystemExit(f"framework_facts: no {cls}.__init__ in MindFormers' source")


def popped_keywords(source, cls):
    """The string keys `kwargs.pop("key", ...)` takes in class `cls`."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return sorted({
                call.args[0].value for call in ast.walk(node)
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "pop" and getattr(call.func.value, "id", None) == "kwargs"
                and call.args and isinstance(call.args[0], ast.Constant)
            })
    raise SystemExit(f"framework_facts: no {cls} in MindFormers' source")


def key_paths(value, prefix=""):
    """Every dotted key path of nested mappings ("pipeline_config.pipeline_interleave")."""
    paths = set()
    if isinstance(value, dict):
        for key, inner in value.items():
            path = f"{prefix}{key}"
            paths.add(path)
            paths |= key_paths(inner, path + ".")
    return paths


def extract(git_dir, commit):
    classes = {section: init_parameters(git_show(git_dir, commit, path), cls)
               for section, (path, cls) in CLASS_SECTIONS.items()}
    models = {name: init_parameters(git_show(git_dir, commit, path), name)
              for name, path in MODEL_CONFIGS.items()}
    witnessed = {section: set() for section in WITNESSED}
    top, files = set(), 0
    listing = git_files(git_dir, commit)
    for path in sorted(p for p in listing if p.endswith(".yaml") and not p.startswith("tests/")):
        try:
            run = yaml.safe_load(git_show(git_dir, commit, path))
        except yaml.YAMLError:
            continue
        if not isinstance(run, dict) or "model" not in run:
            continue  # not a run yaml
        files += 1
        top |= set(run)
        for section in WITNESSED:
            witnessed[section] |= key_paths(run.get(section))
    return {
        "classes": classes,
        "model_configs": models,
        "pretrained_keywords": popped_keywords(git_show(git_dir, commit, PRETRAINED),
                                               "PretrainedConfig"),
        "witnessed": {section: sorted(paths) for section, paths in witnessed.items()},
        "top_level": sorted(top),
        "run_yamls": files,
    }


def own_keys(text):
    """The keys whose line carries autopar's own-key comment."""
    return {line.split(":", 1)[0].strip() for line in text.splitlines() if OWN_KEY in line}


def check(facts, path):
    """Problems (one line each) and the number of keys checked."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    written = yaml.safe_load(text)
    if not isinstance(written, dict):
        return [f"{path}: expected a run yaml (a mapping)"], 0
    problems, checked = [], 0

    def need(known, key, where):
        nonlocal checked
        checked += 1
        if key not in known:
            problems.append(f"{path}: {where}{key}: MindFormers {facts['commit'][:7]} has no such "
                            "key")

    for key, value in written.items():
        need(set(facts["top_level"]) | set(CLASS_SECTIONS), key, "")
        if key in CLASS_SECTIONS and isinstance(value, dict):
            for inner in value:
                need(set(facts["classes"][key]), inner, f"{key}.")
        elif key in WITNESSED:
            for inner in sorted(key_paths(value)):
                need(set(facts["witnessed"][key]), inner, f"{key}.")
    model_config = (written.get("model") or {}).get("model_config") or {}
    model_type = model_config.get("type")
    if model_type not in facts["model_configs"]:
        problems.append(f"{path}: model.model_config.type: {model_type!r}, the facts know "
                        f"{', '.join(facts['model_configs'])}")
        return problems, checked
    known = set(facts["model_configs"][model_type]) | set(facts["pretrained_keywords"]) | {"type"}
    own = own_keys(text)
    for key in model_config:
        if key not in own:
            need(known, key, "model.model_config.")
    return problems, checked
