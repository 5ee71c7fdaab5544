"""What MindSpore's strategy-file readers take, for scripts/framework_facts.py (extract-mindspore,
check-mindspore).

`set_op_strategy_config(mode="LOAD", path=...)` reads the file with StrategyJsonInfo::FromJson and
a strategy checkpoint is read by StrategyCheckpointInfo::FromJson, both in
mindspore/ccsrc/frontend/parallel/strategy_checkpoint/strategy_checkpoint_info.cc. Each reader's
top-level sections are the keys it looks up on the whole file (`J.at("S").items()`,
`J.contains("S")`, `J.at("S").get<T>()`); an item's fields are the keys it reads from the item
(`stra_j.value().at("F").get<T>()`), or from each of an item's per-input entries (the layout
sections, `json_i.value()`). The source is C++, read with regular expressions on these shapes,
so MindSpore need not be built; the repository is too large to fetch whole, so the extractor
takes the one file (`extract-mindspore FILE --rev COMMIT`).
"""

import json
import re

SOURCE = "mindspore/ccsrc/frontend/parallel/strategy_checkpoint/strategy_checkpoint_info.cc"
READERS = {"StrategyJsonInfo": "set_op_strategy_config(mode=\"LOAD\")",
           "StrategyCheckpointInfo": "strategy checkpoint"}
FUNCTION = re.compile(r"\n\w[^\n]*?\b(StrategyJsonInfo|StrategyCheckpointInfo)::(\w*FromJson)\("
                      r"const nlohmann::json &(\w+)\) \{\n(.*?)\n\}\n", re.S)
SECTION = r'{whole}\.at\("(\w+)"\)\.items\(\)'
FIELD = re.compile(r'(\w+)(?:\.value\(\))?\.at\("(\w+)"\)\.get<([\w:<>, ]+?)>\(\)')
PER_INPUT = re.compile(r"for \(auto &(\w+) : \w+\.value\(\)\.items\(\)\)")
JSON_TYPES = {"int64_t": "integer", "bool": "boolean", "std::string": "string"}


def json_type(cpp):
    """`std::vector<std::vector<int64_t>>` as "list of list of integer"."""
    cpp = cpp.strip()
    if cpp.startswith("std::vector<") and cpp.endswith(">"):
        return "list of " + json_type(cpp[len("std::vector<"):-1])
    return JSON_TYPES.get(cpp, cpp)


def extract(source):
    """{"readers": {class: {"sections": {section: {"per_input": bool, "fields": {field: JSON
    type}}}, "top_level": {key: JSON type}}}} for the FromJson functions of SOURCE."""
    readers = {}
    for match in FUNCTION.finditer(source):
        cls, whole, body = match[1], match[3], match[4]
        reader = readers.setdefault(cls, {"sections": {}, "top_level": {}})
        loops = list(re.finditer(SECTION.format(whole=whole), body))
        for index, loop in enumerate(loops):
            end = loops[index + 1].start() if index + 1 < len(loops) else len(body)
            part = body[loop.start():end]
            entries = {m[1] for m in PER_INPUT.finditer(part)}
            fields = {}
            for field in FIELD.finditer(part):
                if field[1] != whole:
                    fields[field[2]] = json_type(field[3])
            reader["sections"][loop[1]] = {"per_input": bool(entries), "fields": fields}
        for field in FIELD.finditer(body):
            if field[1] == whole:
                reader["top_level"][field[2]] = json_type(field[3])
    if set(readers) != set(READERS) or not all(r["sections"] for r in readers.values()):
        raise SystemExit(f"framework_facts: no FromJson readers of {', '.join(READERS)} in "
                         f"{SOURCE}")
    return {"file": SOURCE, "readers": readers}


def matches(value, expected):
    if expected.startswith("list of "):
        return isinstance(value, list) and all(matches(v, expected[8:]) for v in value)
    return {"integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "boolean": lambda v: isinstance(v, bool),
            "string": lambda v: isinstance(v, str)}.get(expected, lambda v: False)(value)


def check(facts, path):
    """Problems (one line each) and the fields checked: a strategy file autopar wrote
    (`autopar plan --mindspore-strategy`) must be what set_op_strategy_config's reader reads:
    every top-level key one a MindSpore reader takes, every item of a section it reads with each
    field the reader requires, of its type."""
    with open(path, encoding="utf-8") as f:
        written = json.load(f)
    if not isinstance(written, dict):
        return [f"{path}: expected a JSON object"], 0
    readers = facts["readers"]
    loader = readers["StrategyJsonInfo"]
    known = {key for r in readers.values() for key in [*r["sections"], *r["top_level"]]}
    problems, checked = [], 0
    for key, value in written.items():
        if key not in known:
            problems.append(f"{path}: {key}: no MindSpore strategy reader reads it")
            continue
        for expected_key, expected in readers["StrategyCheckpointInfo"]["top_level"].items():
            if key == expected_key and not matches(value, expected):
                problems.append(f"{path}: {key}: expected {expected}")
        section = loader["sections"].get(key)
        if section is None:
            continue
        if not isinstance(value, dict) or not value:
            problems.append(f"{path}: {key}: expected an object of items")
            continue
        for name, item in value.items():
            entries = item.values() if section["per_input"] and isinstance(item, dict) else [item]
            for entry in entries:
                for field, expected in section["fields"].items():
                    checked += 1
                    if not isinstance(entry, dict) or field not in entry:
                        problems.append(f"{path}: {key}.{name}: no {field}, which "
                                        f"set_op_strategy_config's reader requires")
                    elif not matches(entry[field], expected):
                        problems.append(f"{path}: {key}.{name}.{field}: expected {expected}")
    if not any(key in loader["sections"] for key in written):
        problems.append(f"{path}: none of {', '.join(loader['sections'])}: "
                        "set_op_strategy_config would load no strategy")
    return problems, checked
