#!/usr/bin/env python3
"""Facts a framework export is checked against, taken from the framework's own source.

    framework_facts.py extract-torchtitan GIT_DIR [--rev REV] [--out FILE]
        Reads torchtitan's source at REV (default HEAD) of a git repository (a `fetch`ed mirror
        or a clone) with `git show`, and writes what autopar's configuration module uses: the
        fields of each config class it calls, the parameters of the functions it calls, the
        names each module it imports from defines, and Trainer.Config's fields. Default out:
        data/framework_facts/torchtitan.json. The file names the repository and commit.

    framework_facts.py check-torchtitan FACTS MODULE.py
        Checks the module autopar wrote (`autopar search --framework torchtitan --launch-script`)
        against FACTS: every `from X import Y` names a Y that X defines, every keyword of a call
        to a known class or function is one of its fields or parameters, every `llama3.NAME` is
        defined there, and every `config.FIELD = ...` is a Trainer.Config field. Prints one line
        per mismatch and exits 1, or "ok: ..." and exits 0.

    framework_facts.py extract-megatron GIT_DIR [--rev REV] [--out FILE]
        Reads Megatron-LM's flags at REV: megatron/training/arguments.py's add_argument literals
        (with their literal choices) and the flags ArgumentGroupFactory makes of its config
        dataclasses (scripts/megatron_facts.py). Default out: data/framework_facts/megatron.json.

    framework_facts.py check-megatron FACTS SCRIPT
        Checks every flag of a launch script's *_ARGS=( ... ) arrays (`autopar search
        --launch-script`) against FACTS: Megatron-LM declares it, and a value among its literal
        choices is one of them. One line per mismatch and exit 1, or "ok: ..." and exit 0.

    framework_facts.py extract-mindspeed GIT_DIR [--rev REV] [--out FILE]
        Reads the fields of auto_parallel_search_optimal_config.json as MindSpeed's multimodal
        search writes them at REV (scripts/mindspeed_facts.py). Default out:
        data/framework_facts/mindspeed.json.

    framework_facts.py extract-mindformers GIT_DIR [--rev REV] [--out FILE]
        Reads the keys a MindFormers run yaml takes at REV: the __init__ parameters of the classes
        its sections build (parallel_config, recompute_config, model.model_config's type), and the
        key paths MindFormers' own run yamls use in the sections it hands on whole (parallel,
        runner_config, the top level) (scripts/mindformers_facts.py). Default out:
        data/framework_facts/mindformers.json.

    framework_facts.py check-mindformers FACTS YAML
        Checks a run yaml autopar wrote (`autopar search --mindformers-yaml`) against FACTS: every
        key is one MindFormers takes there (a model key autopar marks as its own is let through).
        One line per mismatch and exit 1, or "ok: ..." and exit 0.

    framework_facts.py check-mindspeed FACTS JSON
        Checks a file autopar wrote (`autopar search --out`): MindSpeed's fields, in its order,
        and each nested object's keys first and in order. One line per mismatch and exit 1, or
        "ok: ..." and exit 0.

    framework_facts.py extract-mindspore FILE --rev COMMIT [--out FILE]
        Reads what MindSpore's strategy-file readers take (StrategyJsonInfo::FromJson, which
        set_op_strategy_config(mode="LOAD") uses, and StrategyCheckpointInfo::FromJson) from
        strategy_checkpoint_info.cc at COMMIT: a git directory holding it, or the one file (the
        repository is too large to fetch whole), with --rev its full commit
        (scripts/mindspore_facts.py). Default out: data/framework_facts/mindspore.json.

    framework_facts.py check-mindspore FACTS JSON
        Checks a strategy file autopar wrote (`autopar plan --mindspore-strategy`): every key one a
        reader takes, every item with the fields set_op_strategy_config's reader requires, of
        their types. One line per mismatch and exit 1, or "ok: ..." and exit 0.

    framework_facts.py extract-torchtitan-job GIT_DIR --rev v0.2.2 [--out FILE]
        Reads what torchtitan's TOML job configs take at REV, the last release that has them
        (scripts/torchtitan_job_facts.py): JobConfig's sections and keys with their literal
        values, llama3's TransformerModelArgs and RoPEScalingArgs fields, and the converter
        names. Default out: data/framework_facts/torchtitan_job.json.

    framework_facts.py check-torchtitan-job FACTS SCRIPT
        Checks a torchtitan@2026-02 launch script autopar wrote (`--launch-script`): every key of
        its TOML job is one that release takes, with a value among its literal values, its
        converters exist, and its flavor module imports what exists, passes fields that exist
        and registers the flavor the job names. One line per mismatch and exit 1, or "ok: ..."
        and exit 0.

The Python sources are parsed with Python's ast module (dataclass fields are annotated assignments in a
class body), so extracting needs no torchtitan install and none of its dependencies.
"""

import argparse
import ast
import json
import os
import re
import sys

from facts_source import class_fields, git_commit, git_ls, git_show

import megatron_facts
import mindformers_facts
import mindspeed_facts
import mindspore_facts
import torchtitan_job_facts

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_FACTS = os.path.join(REPO, "data", "framework_facts", "torchtitan.json")
MEGATRON_FACTS = os.path.join(REPO, "data", "framework_facts", "megatron.json")
MINDSPEED_FACTS = os.path.join(REPO, "data", "framework_facts", "mindspeed.json")
MINDFORMERS_FACTS = os.path.join(REPO, "data", "framework_facts", "mindformers.json")
MINDSPORE_FACTS = os.path.join(REPO, "data", "framework_facts", "mindspore.json")
TORCHTITAN_JOB_FACTS = os.path.join(REPO, "data", "framework_facts", "torchtitan_job.json")

# Call name in the module -> the classes (file, dotted class) whose annotated fields it takes,
# bases included.
MODULE_CONFIG = ("torchtitan/protocols/module.py", "Module.Config")
CLASSES = {
    "ParallelismConfig": [("torchtitan/config/configs.py", "ParallelismConfig")],
    "TrainingConfig": [("torchtitan/config/configs.py", "TrainingConfig")],
    "CompileConfig": [("torchtitan/config/configs.py", "CompileConfig")],
    "llama3.Llama3Model.Config": [
        ("torchtitan/models/llama3/model.py", "Llama3Model.Config"),
        ("torchtitan/models/common/decoder.py", "Decoder.Config"),
        MODULE_CONFIG,
    ],
    "Embedding.Config": [("torchtitan/models/common/embedding.py", "Embedding.Config"),
                         MODULE_CONFIG],
    "Linear.Config": [("torchtitan/models/common/linear.py", "Linear.Config"), MODULE_CONFIG],
    "RMSNorm.Config": [("torchtitan/models/common/nn_modules.py", "RMSNorm.Config"),
                       MODULE_CONFIG],
    "ComplexRoPE.Config": [("torchtitan/models/common/rope.py", "RoPE.Config"), MODULE_CONFIG],
    "Float8LinearConverter.Config": [
        ("torchtitan/components/quantization/float8.py", "Float8LinearConverter.Config"),
        ("torchtitan/components/quantization/__init__.py", "QuantizationConverter.Config"),
    ],
    "ChunkedLossWrapper.Config": [("torchtitan/components/loss.py", "ChunkedLossWrapper.Config")],
    "CrossEntropyLoss.Config": [("torchtitan/components/loss.py", "CrossEntropyLoss.Config")],
    "FullAC.Config": [("torchtitan/distributed/activation_checkpoint.py", "FullAC.Config")],
    "SelectiveAC.Config": [("torchtitan/distributed/activation_checkpoint.py",
                            "SelectiveAC.Config")],
}
FUNCTIONS = {
    "llama3._build_llama3_layers": ("torchtitan/models/llama3/__init__.py",
                                    "_build_llama3_layers"),
    "llama3.model_registry": ("torchtitan/models/llama3/__init__.py", "model_registry"),
}
# Modules the configuration imports from -> their source (a package's __init__.py).
MODULES = {
    "torchtitan.components.loss": "torchtitan/components/loss.py",
    "torchtitan.components.quantization": "torchtitan/components/quantization/__init__.py",
    "torchtitan.config": "torchtitan/config/__init__.py",
    "torchtitan.distributed.activation_checkpoint":
        "torchtitan/distributed/activation_checkpoint.py",
    "torchtitan.models": "torchtitan/models/__init__.py",
    "torchtitan.models.common": "torchtitan/models/common/__init__.py",
    "torchtitan.models.common.config_utils": "torchtitan/models/common/config_utils.py",
    "torchtitan.models.llama3": "torchtitan/models/llama3/__init__.py",
    "torchtitan.models.llama3.config_registry": "torchtitan/models/llama3/config_registry.py",
    "torchtitan.trainer": "torchtitan/trainer.py",
}
TRAINER_CONFIG = ("torchtitan/trainer.py", "Trainer.Config")


def function_parameters(source, name):
    tree = ast.parse(source)
    node = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if node is None:
        sys.exit(f"framework_facts: function {name} not found")
    a = node.args
    return [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]


def module_names(source):
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.ImportFrom, ast.Import)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def resolve(args):
    """(git dir, full commit) of the repository and revision given."""
    git_dir = args.git_dir
    if os.path.isdir(os.path.join(git_dir, ".git")):
        git_dir = os.path.join(git_dir, ".git")
    return git_dir, git_commit(git_dir, args.rev)


def write_facts(path, facts):
    """Writes the facts atomically."""
    text = json.dumps(facts, indent=1, sort_keys=True) + "\n"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def extract(args):
    git_dir, commit = resolve(args)
    cache = {}

    def source(path):
        if path not in cache:
            cache[path] = git_show(git_dir, commit, path)
        return cache[path]

    classes = {call: sorted({f for path, cls in parts for f in class_fields(source(path), cls)})
               for call, parts in CLASSES.items()}
    functions = {call: function_parameters(source(path), name)
                 for call, (path, name) in FUNCTIONS.items()}
    modules = {}
    for module, path in MODULES.items():
        names = module_names(source(path))
        # A package also exports its subpackages and submodules.
        if path.endswith("__init__.py"):
            for entry in git_ls(git_dir, commit, os.path.dirname(path)):
                names.add(entry[:-3] if entry.endswith(".py") else entry)
        modules[module] = sorted(n for n in names if n != "__init__")
    facts = {
        "repository": "pytorch/torchtitan",
        "commit": commit,
        "regenerate": "python3 scripts/framework_facts.py extract-torchtitan GIT_DIR --rev COMMIT",
        "classes": classes,
        "functions": functions,
        "modules": modules,
        "trainer_config": sorted(class_fields(source(TRAINER_CONFIG[0]), TRAINER_CONFIG[1])),
    }
    write_facts(args.out, facts)
    print(f"framework_facts: {args.out} from torchtitan {commit[:7]}")


def write_extracted(args, name, repository, commit, extracted):
    """Writes a framework's facts with where they came from and how to regenerate them."""
    facts = {"repository": repository, "commit": commit,
             "regenerate": f"python3 scripts/framework_facts.py extract-{name} GIT_DIR --rev COMMIT",
             **extracted}
    write_facts(args.out, facts)
    return facts


def extract_megatron(args):
    git_dir, commit = resolve(args)
    facts = write_extracted(args, "megatron", "NVIDIA/Megatron-LM", commit,
                            megatron_facts.extract(git_dir, commit))
    print(f"framework_facts: {args.out} from Megatron-LM {commit[:7]}: {len(facts['flags'])} "
          f"flags, {len(facts['generated'])} of them from config dataclasses")


def extract_mindformers(args):
    git_dir, commit = resolve(args)
    facts = write_extracted(args, "mindformers", "mindspore-lab/mindformers", commit,
                            mindformers_facts.extract(git_dir, commit))
    print(f"framework_facts: {args.out} from MindFormers {commit[:7]}: {facts['run_yamls']} run "
          f"yamls, {len(facts['witnessed']['parallel'])} parallel keys")


def extract_torchtitan_job(args):
    git_dir, commit = resolve(args)
    facts = write_extracted(args, "torchtitan-job", "pytorch/torchtitan", commit,
                            torchtitan_job_facts.extract(git_dir, commit))
    print(f"framework_facts: {args.out} from torchtitan {commit[:7]}: "
          f"{len(facts['sections'])} job config sections")


def extract_mindspeed(args):
    git_dir, commit = resolve(args)
    facts = write_extracted(args, "mindspeed", "Ascend/MindSpeed", commit,
                            {"file": mindspeed_facts.SOLVER,
                             **mindspeed_facts.extract(
                                 git_show(git_dir, commit, mindspeed_facts.SOLVER))})
    print(f"framework_facts: {args.out} from MindSpeed {commit[:7]}: {', '.join(facts['fields'])}")


def extract_mindspore(args):
    if os.path.isfile(args.git_dir):
        if not re.fullmatch(r"[0-9a-f]{40}", args.rev):
            raise SystemExit("framework_facts: extract-mindspore FILE needs --rev, the full commit "
                             "the file is from")
        commit = args.rev
        with open(args.git_dir, encoding="utf-8") as f:
            source = f.read()
    else:
        git_dir, commit = resolve(args)
        source = git_show(git_dir, commit, mindspore_facts.SOURCE)
    facts = write_extracted(args, "mindspore", "mindspore-ai/mindspore", commit,
                            mindspore_facts.extract(source))
    sections = facts["readers"]["StrategyJsonInfo"]["sections"]
    print(f"framework_facts: {args.out} from MindSpore {commit[:7]}: {', '.join(sections)}")


def report(problems, ok_line):
    """Prints each problem, or the ok line; the exit status."""
    for line in problems:
        print(line)
    if problems:
        return 1
    print(ok_line)
    return 0


def check_against(module, argument, counted, framework):
    """The check-NAME command of a framework whose module checks a file: `module.check(facts,
    path)` gives (problems, how many `counted` it checked) for the file named by `argument`."""
    def run(args):
        with open(args.facts, encoding="utf-8") as f:
            facts = json.load(f)
        problems, checked = module.check(facts, getattr(args, argument))
        return report(problems, f"ok: {checked} {counted} checked against {framework} "
                                f"{facts['commit'][:7]}")
    return run


def dotted_name(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def check(args):
    with open(args.facts, encoding="utf-8") as f:
        facts = json.load(f)
    with open(args.module, encoding="utf-8") as f:
        tree = ast.parse(f.read(), args.module)
    known = {**{k: set(v) for k, v in facts["classes"].items()},
             **{k: set(v) for k, v in facts["functions"].items()}}
    llama3 = set(facts["modules"]["torchtitan.models.llama3"])
    problems, checked = [], 0
    for node in ast.walk(tree):
        where = f"{args.module}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.ImportFrom):
            exported = facts["modules"].get(node.module)
            if exported is None:
                problems.append(f"{where}: no facts for module {node.module}")
                continue
            for alias in node.names:
                checked += 1
                if alias.name not in exported:
                    problems.append(f"{where}: {node.module} defines no {alias.name}")
        elif isinstance(node, ast.Call):
            name = dotted_name(node.func)
            if name in known:
                for keyword in node.keywords:
                    checked += 1
                    if keyword.arg not in known[name]:
                        problems.append(f"{where}: {name} takes no {keyword.arg}")
        elif isinstance(node, ast.Attribute) and dotted_name(node.value) == "llama3":
            checked += 1
            if node.attr not in llama3:
                problems.append(f"{where}: torchtitan.models.llama3 defines no {node.attr}")
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and dotted_name(target.value) == "config":
                    checked += 1
                    if target.attr not in facts["trainer_config"]:
                        problems.append(f"{where}: Trainer.Config has no field {target.attr}")
    for line in problems:
        print(line)
    if problems:
        return 1
    print(f"ok: {checked} names checked against torchtitan {facts['commit'][:7]}")
    return 0


# Per framework: its extract and check functions, the default facts file, and the name of what
# a check reads.
COMMANDS = {
    "torchtitan": (extract, DEFAULT_FACTS, check, "module"),
    "megatron": (extract_megatron, MEGATRON_FACTS,
                 check_against(megatron_facts, "script", "flags", "Megatron-LM"), "script"),
    "mindspeed": (extract_mindspeed, MINDSPEED_FACTS,
                  check_against(mindspeed_facts, "json", "fields", "MindSpeed"), "json"),
    "mindformers": (extract_mindformers, MINDFORMERS_FACTS,
                    check_against(mindformers_facts, "yaml", "keys", "MindFormers"), "yaml"),
    "mindspore": (extract_mindspore, MINDSPORE_FACTS,
                  check_against(mindspore_facts, "json", "fields", "MindSpore"), "json"),
    "torchtitan-job": (extract_torchtitan_job, TORCHTITAN_JOB_FACTS,
                       check_against(torchtitan_job_facts, "script", "keys and names",
                                     "torchtitan"), "script"),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (_, default_out, _, checked) in COMMANDS.items():
        e = sub.add_parser(f"extract-{name}")
        e.add_argument("git_dir")
        e.add_argument("--rev", default="HEAD")
        e.add_argument("--out", default=default_out)
        c = sub.add_parser(f"check-{name}")
        c.add_argument("facts")
        c.add_argument(checked)
    args = parser.parse_args()
    action, name = args.command.split("-", 1)
    extract_fn, _, check_fn, _ = COMMANDS[name]
    if action == "extract":
        extract_fn(args)
        return 0
    return check_fn(args)


if __name__ == "__main__":
    sys.exit(main())
