"""The fields of seed 003's auto_parallel_search_optimal_config.json as MindSpeed writes them, for
scripts/framework_facts.py (extract-mindspeed, check-mindspeed).

MindSpeed's multimodal search (mindspeed/core/auto_parallel/mm_search/solver.py) builds the file's
object in solve_auto_parallel_mm (`optimal_config = {"parallel_config": ..., ...}`) and nests its
fields in trans_optimal_config (`optimal_config['parallel_config'] = {'PP': ..., ...}`). Both are
read with Python's ast module. MindSpeed's master removed the search (028de58, 2026-07); its
release branches keep it (2.1.0_core_r0.8.0).
"""

import ast
import json

SOLVER = "mindspeed/core/auto_parallel/mm_search/solver.py"


def dict_keys(node):
    return [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]


def extract(source):
    """{"fields": [top-level keys in order], "nested": {field: [keys in order]}}."""
    fields, nested = [], {}
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name) and target.id == "optimal_config" and node.value.keys:
                fields = dict_keys(node.value)
            elif (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                  and target.value.id == "optimal_config"
                  and isinstance(target.slice, ast.Constant)):
                nested[target.slice.value] = dict_keys(node.value)
    if not fields:
        raise SystemExit(f"framework_facts: no optimal_config object in {SOLVER}")
    return {"fields": fields, "nested": nested}


def check(facts, path):
    """Problems (one line each) and the number of fields checked. autopar's file must carry
    MindSpeed's fields, each nested object MindSpeed's keys first and in MindSpeed's order; the
    fields it adds after them (CP, EP, ...) are its own."""
    with open(path, encoding="utf-8") as f:
        written = json.load(f)
    problems, checked = [], 0
    if not isinstance(written, dict):
        return [f"{path}: expected a JSON object"], 0
    order = [k for k in written if k in facts["fields"]]
    if order != facts["fields"]:
        problems.append(f"{path}: fields {order}, MindSpeed writes {facts['fields']}")
    for field in facts["fields"]:
        checked += 1
        if field not in written:
            problems.append(f"{path}: no {field}")
            continue
        keys = facts["nested"].get(field)
        if keys is None:
            continue
        value = written[field]
        if not isinstance(value, dict):
            problems.append(f"{path}: {field}: expected an object with {', '.join(keys)}")
            continue
        checked += len(keys)
        if list(value)[:len(keys)] != keys:
            problems.append(f"{path}: {field}: keys {list(value)}, MindSpeed writes {keys} first")
    return problems, checked
