#!/usr/bin/env python3
"""Keeps the figures quoted in docs/ what the build prints.

A figure block in a docs/*.md file is the output of the command that produces it, between two
markers:

    <!-- figures: bench/recursive_mem_coeff_table.py {autopar} -->
    | mem_coeff | ... |
    <!-- /figures -->

The command runs from the repository root under bash, with {autopar} replaced by the autopar
binary. --check (the default, a CTest test) runs every block's command and fails, with a diff,
where the block is not its output; --write puts the output in.

    scripts/docs_figures.py [--write] [AUTOPAR]   (default build/release/autopar)
"""

import argparse
import difflib
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"(<!-- figures: (?P<command>.+?) -->\n)(?P<body>.*?)(<!-- /figures -->)",
                   re.S)
TIMEOUT_S = 120


def run(command, autopar):
    """The command's standard output; exits naming the command when it fails."""
    line = command.replace("{autopar}", shlex.quote(autopar))
    try:
        done = subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=ROOT,
                              capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        sys.exit(f"docs_figures: '{command}' ran over {TIMEOUT_S} s")
    if done.returncode != 0:
        sys.exit(f"docs_figures: '{command}' exited {done.returncode}: "
                 f"{done.stderr.strip()[-300:]}")
    return done.stdout if done.stdout.endswith("\n") else done.stdout + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("autopar", nargs="?", default=str(ROOT / "build/release/autopar"))
    parser.add_argument("--write", action="store_true", help="put each command's output in")
    args = parser.parse_args()
    stale, blocks = [], 0
    for doc in sorted((ROOT / "docs").glob("*.md")):
        text = doc.read_text()

        def replace(match):
            nonlocal blocks
            blocks += 1
            output = run(match["command"], args.autopar)
            if output != match["body"]:
                name = f"{doc.relative_to(ROOT)}: {match['command']}"
                stale.append((name, match["body"], output))
            return match.group(1) + output + match.group(4)

        updated = BLOCK.sub(replace, text)
        if args.write and updated != text:
            doc.write_text(updated)
    if blocks == 0:
        sys.exit("docs_figures: no figure block in docs/*.md")
    for name, old, new in stale:
        print(f"{name}: {'rewritten' if args.write else 'stale'}")
        if not args.write:
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                       "in the doc", "printed now"))
    print(f"docs_figures: {blocks} blocks, {len(stale)} "
          f"{'rewritten' if args.write else 'stale'}")
    return 1 if stale and not args.write else 0


if __name__ == "__main__":
    sys.exit(main())
