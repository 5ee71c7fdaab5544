#!/usr/bin/env python3
"""Checks that every #include in src/ stays inside what CMakeLists.txt lets its module use.

Each module is declared in CMakeLists.txt as `autopar_module(NAME DEPS ...)`; the call may span
several lines, and a DEPS entry may be a variable such as ${TORCH_LIBRARIES}, kept as written.
Every .h and .cc file under src/NAME/ (recursively, *_test.cc included) is scanned:

- `#include "X/..."`, where src/X/ exists, must name NAME itself or a direct dependency
  (autopar_X among NAME's DEPS): a header-only use of an undeclared module is caught, not only a
  link-time one.
- `#include <...>` of a known external library (nlohmann/, yaml-cpp/, fmt/, CLI/, onnx/, protobuf,
  CBC, LibTorch, zlib.h, ...) needs one of that library's CMake targets among the DEPS. Standard
  and system headers are not checked. gtest/ and gmock/ are allowed in tests (*_test.cc) and test
  helpers (*_test_util.h) only, which the module's test binary links.

The executables (src/cli/ is `autopar`, src/cli/runtime/ is `autopar-runtime`, src/python/ is the
Python extension `_autopar`) may use everything their target_link_libraries reach transitively,
through other targets' links and the modules' DEPS, and src/cli/'s headers.

    scripts/check_layering.py [--root DIR]   (default: this repository)

Prints one line per violation and exits 1, or a one-line summary and exits 0.
"""

import argparse
import re
import sys
from pathlib import Path
from typing import NamedTuple

# Header prefix -> the CMake targets any one of which declares the library (the first is named).
EXTERNAL_HEADERS = [
    ("nlohmann/", ("nlohmann_json::nlohmann_json",)),
    ("yaml-cpp/", ("yaml-cpp", "yaml-cpp::yaml-cpp")),
    ("fmt/", ("fmt::fmt", "fmt::fmt-header-only")),
    ("CLI/", ("CLI11::CLI11",)),
    ("onnx/", ("onnx", "onnx_proto")),
    ("google/protobuf/", ("protobuf::libprotobuf",)),
    ("coin/", ("PkgConfig::CBC",)),
    ("Cbc", ("PkgConfig::CBC",)),
    ("Osi", ("PkgConfig::CBC",)),
    ("Clp", ("PkgConfig::CBC",)),
    ("Coin", ("PkgConfig::CBC",)),
    ("torch/", ("${TORCH_LIBRARIES}",)),
    ("c10/", ("${TORCH_LIBRARIES}",)),
    ("ATen/", ("${TORCH_LIBRARIES}",)),
    ("gloo/", ("${TORCH_LIBRARIES}",)),
    ("zlib.h", ("ZLIB::ZLIB",)),
    ("spdlog/", ("spdlog::spdlog", "spdlog::spdlog_header_only")),
    ("mimalloc.h", ("mimalloc", "mimalloc-static")),
]
TEST_ONLY_HEADERS = ("gtest/", "gmock/")
TEST_FILE = re.compile(r"(_test\.cc|_test_util\.h)$")
# The executables built from src/ outside autopar_module: source folder -> CMake target.
# `autopar` is main() over autopar_cli, the verbs' library; _autopar is the Python extension over it.
EXECUTABLES = {"cli": "autopar", "cli/runtime": "autopar-runtime", "python": "_autopar"}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
CALL = re.compile(r"\b(autopar_module|target_link_libraries)\s*\(")
LINK_KEYWORDS = {"PUBLIC", "PRIVATE", "INTERFACE"}


class Unit(NamedTuple):
    """A module or executable: its source folder under src/, its name, the libraries it may use."""
    folder: str
    name: str
    allowed: set


def strip_comments(text):
    """CMake text without its `#` line comments (a `#` inside a quoted argument stays)."""
    lines = []
    for line in text.splitlines():
        quoted = False
        for index, char in enumerate(line):
            if char == '"' and (index == 0 or line[index - 1] != "\\"):
                quoted = not quoted
            elif char == "#" and not quoted:
                line = line[:index]
                break
        lines.append(line)
    return "\n".join(lines)


def cmake_calls(text):
    """(command, [arguments]) for each autopar_module and target_link_libraries call."""
    for match in CALL.finditer(text):
        depth, end = 1, match.end()
        while depth and end < len(text):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        yield match.group(1), text[match.end():end - 1].split()


def read_cmake(root):
    """({module: [DEPS]}, {target: [linked libraries]}) from CMakeLists.txt."""
    modules, links = {}, {}
    for command, args in cmake_calls(strip_comments((root / "CMakeLists.txt").read_text())):
        if command == "autopar_module" and args:
            deps = args[args.index("DEPS") + 1:] if "DEPS" in args else []
            modules[args[0]] = deps
        elif command == "target_link_libraries" and args:
            links.setdefault(args[0], []).extend(a for a in args[1:] if a not in LINK_KEYWORDS)
    return modules, links


def closure(libraries, modules, links):
    """Every library reachable from `libraries` through the modules' DEPS (themselves included)."""
    reached, pending = set(), list(libraries)
    while pending:
        library = pending.pop()
        if library in reached:
            continue
        reached.add(library)
        if library in links:
            pending.extend(links[library])
        elif library.startswith("autopar_"):
            pending.extend(modules.get(library[len("autopar_"):], []))
    return reached


def units(modules, links):
    """Every module and executable CMakeLists.txt declares, the deepest folder first."""
    found = [Unit(name, name, set(deps)) for name, deps in modules.items()]
    for folder, target in EXECUTABLES.items():
        if target in links:
            found.append(Unit(folder, target, closure(links[target], modules, links)))
    return sorted(found, key=lambda unit: -unit.folder.count("/"))


def owner(relative, unit_list):
    """The unit whose folder holds `relative` (a folder under src/), or None."""
    for unit in unit_list:
        if relative == unit.folder or relative.startswith(unit.folder + "/"):
            return unit
    return None


def external_targets(header):
    """The CMake targets that declare an angle-bracket `header`, or None if it is not checked."""
    for prefix, targets in EXTERNAL_HEADERS:
        if header.startswith(prefix):
            return targets
    return None


def include_violation(folder, allowed, is_test, delimiter, header, module_dirs):
    """The reason one include breaks the layering, or None."""
    if delimiter == '"':
        top = header.split("/", 1)[0]
        if "/" not in header or top not in module_dirs or top == folder.split("/")[0]:
            return None
        if f"autopar_{top}" in allowed:
            return None
        return f"includes {header} but CMakeLists.txt declares no autopar_{top} for it"
    if header.startswith(TEST_ONLY_HEADERS):
        return None if is_test else f"includes {header} outside a test (*_test.cc, *_test_util.h)"
    targets = external_targets(header)
    if targets is None or allowed.intersection(targets):
        return None
    return f"includes {header} but CMakeLists.txt declares no {targets[0]} for it"


def check_file(path, root, unit, module_dirs):
    """Violation lines of one source file."""
    is_test = bool(TEST_FILE.search(path.name))
    problems = []
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        match = INCLUDE.match(line)
        if not match:
            continue
        reason = include_violation(unit.folder, unit.allowed, is_test, *match.groups(), module_dirs)
        if reason:
            problems.append(f"{path.relative_to(root)}:{number}: {unit.name} {reason}")
    return problems


def check(root):
    """(violation lines, files scanned, modules and executables) for the tree at `root`."""
    modules, links = read_cmake(root)
    unit_list = units(modules, links)
    src = root / "src"
    module_dirs = {entry.name for entry in src.iterdir() if entry.is_dir()}
    problems, scanned = [], 0
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".h", ".cc") or not path.is_file():
            continue
        unit = owner(path.parent.relative_to(src).as_posix(), unit_list)
        if unit is None:
            continue
        scanned += 1
        problems.extend(check_file(path, root, unit, module_dirs))
    return problems, scanned, len(unit_list)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the repository (CMakeLists.txt and src/); default: this one")
    args = parser.parse_args()
    if not (args.root / "CMakeLists.txt").is_file() or not (args.root / "src").is_dir():
        sys.exit(f"layering: {args.root} has no CMakeLists.txt and src/")
    problems, scanned, unit_count = check(args.root.resolve())
    for problem in problems:
        print(problem)
    if problems:
        print(f"layering: {len(problems)} include(s) break CMakeLists.txt's DEPS")
        return 1
    print(f"layering: {scanned} files in {unit_count} modules and executables include only "
          f"what CMakeLists.txt declares")
    return 0


if __name__ == "__main__":
    sys.exit(main())
