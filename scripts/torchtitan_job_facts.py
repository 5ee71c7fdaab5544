"""What torchtitan's TOML job configs take, for scripts/framework_facts.py (extract-torchtitan-job,
check-torchtitan-job): the torchtitan@2026-02 launch script autopar writes for torchtitan v0.2.2
(73a0e6979), the last release that reads TOML job configs.

Extracted with Python's ast module from that release's source:
  - torchtitan/config/job_config.py: JobConfig's sections, nested as its dataclasses nest
    (quantize.linear.float8), each with its keys and, for a Literal[...] key, its values;
  - torchtitan/models/llama3/model/args.py: TransformerModelArgs' and RoPEScalingArgs' fields;
  - torchtitan/models/llama3/__init__.py: what the package defines (llama3_args);
  - the converter names the quantization modules register (register_model_converter(..., NAME)).
"""

import ast
import tomllib

from facts_source import class_fields, git_show

JOB_CONFIG = "torchtitan/config/job_config.py"
MODEL_ARGS = "torchtitan/models/llama3/model/args.py"
LLAMA3 = "torchtitan/models/llama3/__init__.py"
QUANTIZATION = ("torchtitan/components/quantization/float8.py",
                "torchtitan/components/quantization/mx.py")


def literal_values(annotation):
    """The strings of a Literal["a", "b"] annotation, or None."""
    if (isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name)
            and annotation.value.id == "Literal"):
        items = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [
            annotation.slice]
        return [item.value for item in items if isinstance(item, ast.Constant)]
    return None


def sections(tree):
    """{dotted section: {key: [literal values] or None}}, from JobConfig down."""
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    out = {}

    def walk(name, prefix):
        keys = {}
        for node in classes[name].body:
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
                continue
            annotation = node.annotation
            if isinstance(annotation, ast.Name) and annotation.id in classes:
                walk(annotation.id, f"{prefix}{node.target.id}.")
            else:
                keys[node.target.id] = literal_values(annotation)
        if prefix:
            out[prefix[:-1]] = keys

    walk("JobConfig", "")
    return out


def defined_names(tree):
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
    return sorted(names)


def converters(sources):
    names = set()
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "register_model_converter" and len(node.args) == 2
                    and isinstance(node.args[1], ast.Constant)):
                names.add(node.args[1].value)
    return sorted(names)


def extract(git_dir, commit):
    args = ast.parse(git_show(git_dir, commit, MODEL_ARGS))
    return {
        "sections": sections(ast.parse(git_show(git_dir, commit, JOB_CONFIG))),
        "model_args": sorted(class_fields(args, "TransformerModelArgs")),
        "rope_scaling_args": sorted(class_fields(args, "RoPEScalingArgs")),
        "args_module": defined_names(args),
        "llama3_module": defined_names(ast.parse(git_show(git_dir, commit, LLAMA3))),
        "converters": converters(git_show(git_dir, commit, path) for path in QUANTIZATION),
    }


def heredoc(text, marker):
    """The body of the script's `<<'MARKER'` here-document, or None."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.endswith(f"<<'{marker}'")), None)
    if start is None:
        return None
    end = lines.index(marker, start + 1)
    return "\n".join(lines[start + 1:end]) + "\n"


def check_toml(facts, job, problems):
    checked = 0

    def walk(table, prefix):
        nonlocal checked
        for key, value in table.items():
            name = f"{prefix}{key}"
            if isinstance(value, dict):
                walk(value, f"{name}.")
                continue
            section = prefix[:-1]
            checked += 1
            keys = facts["sections"].get(section)
            if keys is None:
                problems.append(f"[{section}]: torchtitan v0.2.2 has no such section")
            elif key not in keys:
                problems.append(f"[{section}] {key}: torchtitan v0.2.2 has no such key")
            elif keys[key] is not None and value not in keys[key]:
                problems.append(f"[{section}] {key} = {value!r}: expected one of {keys[key]}")

    walk(job, "")
    for name in job.get("model", {}).get("converters", []):
        checked += 1
        if name not in facts["converters"]:
            problems.append(f"[model] converters: no converter {name!r}")
    return checked


def check_flavor(facts, module, flavor, problems):
    checked = 0
    registered = []
    fields = {"TransformerModelArgs": facts["model_args"],
              "RoPEScalingArgs": facts["rope_scaling_args"]}
    modules = {"torchtitan.models.llama3": facts["llama3_module"],
               "torchtitan.models.llama3.model.args": facts["args_module"]}
    for node in ast.walk(ast.parse(module)):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                checked += 1
                if alias.name not in modules.get(node.module, []):
                    problems.append(f"flavor module: {node.module} defines no {alias.name}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            for keyword in node.keywords:
                if node.func.id in fields:
                    checked += 1
                    if keyword.arg not in fields[node.func.id]:
                        problems.append(f"flavor module: {node.func.id} takes no {keyword.arg}")
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                        and target.value.id == "llama3_args"
                        and isinstance(target.slice, ast.Constant)):
                    registered.append(target.slice.value)
    if flavor not in registered:
        problems.append(f"[model] flavor {flavor!r}: the flavor module registers {registered}")
    return checked


def check(facts, path):
    """Problems (one line each) and the number of keys and names checked, in a launch script
    whose `<<'TOML'` here-document is the job and `<<'PYTHON'` the module its custom_import
    names."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    toml, module = heredoc(text, "TOML"), heredoc(text, "PYTHON")
    if toml is None or module is None:
        return [f"{path}: expected a TOML job and a PYTHON flavor module as here-documents"], 0
    try:
        job = tomllib.loads(toml)
    except tomllib.TOMLDecodeError as error:
        return [f"{path}: the job is not TOML: {error}"], 0
    problems = []
    checked = check_toml(facts, job, problems)
    if job.get("experimental", {}).get("custom_import") != "autopar_flavor":
        problems.append("[experimental] custom_import: expected the flavor module autopar_flavor")
    checked += check_flavor(facts, module, job.get("model", {}).get("flavor"), problems)
    return problems, checked
