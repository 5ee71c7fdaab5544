#!/usr/bin/env python3
"""Checks that every setting the library names (src/ir/setting.cc) is a flag the CLI declares.

The library's messages and advice name a setting through ir::flag(Setting::kX), never by its
spelling; the CLI declares its flags with CLI11 (`add_option("--tp", ...)`, `add_flag`). A flag
renamed on one side and not the other would leave the library telling users to pass a flag that
does not exist: this check fails on it.

    scripts/check_settings.py [--root DIR]   (default: this repository)
    scripts/check_settings.py --selftest     (the check on a small tree, clean and broken)

Prints one line per setting with no flag and exits 1, or a one-line summary and exits 0.
"""

import argparse
import re
import sys
import tempfile
from pathlib import Path

NAMED = re.compile(r'Named\{Setting::(k\w+), "([a-z0-9-]+)"\}')
DECLARED = re.compile(r'add_(?:option|flag)(?:_function<[^>]*>)?\(\s*"([^"]+)"')


def declared_flags(cli: Path) -> set[str]:
    """The long flags of every add_option/add_flag in the CLI's sources ("--tp,-t" gives --tp)."""
    flags = set()
    for source in sorted(cli.rglob("*.cc")):
        for spelling in DECLARED.findall(source.read_text()):
            flags.update(part for part in spelling.split(",") if part.startswith("--"))
    return flags


def check(root: Path) -> int:
    named = NAMED.findall((root / "src/ir/setting.cc").read_text())
    if not named:
        print(f"{root}/src/ir/setting.cc: no Named{{Setting::kX, \"name\"}} entries found")
        return 1
    flags = declared_flags(root / "src/cli")
    missing = [(setting, name) for setting, name in named if f"--{name}" not in flags]
    for setting, name in missing:
        print(f"src/ir/setting.cc: Setting::{setting} is spelt --{name}, which no CLI verb declares")
    if missing:
        return 1
    print(f"settings: each of the {len(named)} settings is a flag the CLI declares")
    return 0


def selftest() -> int:
    """A tree whose CLI declares --tp: clean with the setting tp, failing with the setting tq."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "src/ir").mkdir(parents=True)
        (root / "src/cli").mkdir(parents=True)
        (root / "src/cli/verb.cc").write_text('verb->add_option("--tp,-t", tp, "tensor parallel");')
        results = []
        for name in ("tp", "tq"):
            (root / "src/ir/setting.cc").write_text(f'Named{{Setting::kTp, "{name}"}},')
            results.append(check(root))
    if results != [0, 1]:
        print(f"selftest: expected exits [0, 1] for the clean and the broken tree, got {results}")
        return 1
    print("selftest: the check passes the clean tree and fails the broken one")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--selftest", action="store_true")
    args = parser.parse_args()
    return selftest() if args.selftest else check(args.root)


if __name__ == "__main__":
    sys.exit(main())
