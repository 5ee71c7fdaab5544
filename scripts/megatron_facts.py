"""Megatron-LM's command-line flags, as its source at a commit declares them, for
scripts/framework_facts.py (extract-megatron, check-megatron).

Megatron-LM declares its flags two ways in megatron/training/arguments.py: `add_argument('--x',
...)` literals, and `ArgumentGroupFactory(SomeConfig, exclude=[...])`, which turns each field of a
dataclass (its bases' first) into a flag (megatron/training/argument_utils.py): `--field-name`, or
`--no-field-name` and `--disable-field-name` for a bool field that defaults to True, or the
`arg_names` of the field's `metadata={"argparse_meta": ...}`. Both are read here with Python's ast
module, so no Megatron-LM install is needed.
"""

import ast
import re
import shlex
import subprocess

from facts_source import git_show

ARGUMENTS = "megatron/training/arguments.py"


def literal(node):
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError):
        return None


def add_argument_flags(tree):
    """{flag: choices or None} of every add_argument call with string literal names."""
    flags = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        names = [a.value for a in node.args
                 if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        choices = next((literal(k.value) for k in node.keywords if k.arg == "choices"), None)
        if not isinstance(choices, (list, tuple)):
            choices = None
        for name in names:
            if name.startswith("--"):
                flags[name] = sorted(str(c) for c in choices) if choices else None
    return flags


def factory_calls(tree):
    """[(config class name, excluded fields)] of every ArgumentGroupFactory(...) call."""
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ArgumentGroupFactory":
            cls = node.args[0].id if node.args and isinstance(node.args[0], ast.Name) else None
            exclude = next((literal(k.value) for k in node.keywords if k.arg == "exclude"), None)
            if cls:
                calls.append((cls, set(exclude or [])))
    return calls


def field_flags(field):
    """The flags ArgumentGroupFactory makes of one dataclass field (an ast.AnnAssign)."""
    name = field.target.id
    dashed = name.replace("_", "-")
    value = field.value
    default = value
    meta_names = None
    if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "field":
        default = next((k.value for k in value.keywords if k.arg == "default"), None)
        metadata = next((k.value for k in value.keywords if k.arg == "metadata"), None)
        if isinstance(metadata, ast.Dict):
            for key, meta in zip(metadata.keys, metadata.values):
                if literal(key) == "argparse_meta" and isinstance(meta, ast.Dict):
                    for k, v in zip(meta.keys, meta.values):
                        if literal(k) == "arg_names":
                            meta_names = literal(v)
    if meta_names:
        return list(meta_names)
    annotation = ast.unparse(field.annotation)
    if re.fullmatch(r"(Optional\[)?bool\]?", annotation) and literal(default) is True:
        return [f"--no-{dashed}", f"--disable-{dashed}"]
    return [f"--{dashed}"]


class Source:
    """Megatron-LM's files at one commit of a git repository."""

    def __init__(self, git_dir, commit):
        self.git_dir, self.commit, self.cache = git_dir, commit, {}

    def show(self, path):
        if path not in self.cache:
            self.cache[path] = git_show(self.git_dir, self.commit, path)
        return self.cache[path]

    def class_node(self, name):
        """The ClassDef of a top-level class of megatron/ by name (one definition expected)."""
        found = subprocess.run(
            ["git", "--git-dir", self.git_dir, "grep", "-l", "-E", rf"^class {name}\b",
             self.commit, "--", "megatron/"], capture_output=True, text=True).stdout.split()
        for hit in found:
            path = hit.split(":", 1)[1]
            for node in ast.parse(self.show(path)).body:
                if isinstance(node, ast.ClassDef) and node.name == name:
                    return node
        raise SystemExit(f"framework_facts: class {name} not found in megatron/ at {self.commit}")

    def dataclass_fields(self, name):
        """The annotated fields of a class and its bases, bases first."""
        node = self.class_node(name)
        fields = []
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id not in ("object",):
                fields += self.dataclass_fields(base.id)
        fields += [n for n in node.body
                   if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
                   and "ClassVar" not in ast.unparse(n.annotation)]
        return fields


def extract(git_dir, commit):
    source = Source(git_dir, commit)
    tree = ast.parse(source.show(ARGUMENTS))
    flags = add_argument_flags(tree)
    generated = {}
    for cls, exclude in factory_calls(tree):
        for field in source.dataclass_fields(cls):
            if field.target.id in exclude:
                continue
            for flag in field_flags(field):
                flags.setdefault(flag, None)
                generated[flag] = f"{cls}.{field.target.id}"
    return {"flags": {flag: flags[flag] for flag in sorted(flags)},
            "generated": {flag: generated[flag] for flag in sorted(generated)}}


ARRAY = re.compile(r"^([A-Z_]+_ARGS)=\((.*)\)$")


def script_arguments(text):
    """[(array name, [tokens])] of the launch script's *_ARGS=( ... ) arrays."""
    arrays = []
    for line in text.splitlines():
        match = ARRAY.match(line.strip())
        if match:
            arrays.append((match.group(1), shlex.split(match.group(2))))
    return arrays


def check(facts, path):
    """Problems (one line each) and the number of flags checked."""
    with open(path, encoding="utf-8") as f:
        arrays = script_arguments(f.read())
    known = facts["flags"]
    problems, checked = [], 0
    if not arrays:
        problems.append(f"{path}: no *_ARGS=( ... ) arrays of Megatron-LM arguments")
    for name, tokens in arrays:
        for i, token in enumerate(tokens):
            if not token.startswith("--"):
                continue
            checked += 1
            if token not in known:
                problems.append(f"{path}: {name}: Megatron-LM has no {token}")
                continue
            choices = known[token]
            value = tokens[i + 1] if i + 1 < len(tokens) else None
            if choices and value not in choices:
                problems.append(f"{path}: {name}: {token} {value}: expected one of "
                                f"{', '.join(choices)}")
    return problems, checked
