#!/usr/bin/env python3
"""Runs every command of the README's tour with this build, in order, in a scratch directory.

Each `autopar ...` and `bench/...` line of the README's ```sh blocks (continuation lines joined,
trailing comments dropped) runs with `autopar` as the given binary. It must exit 0, or 3 where
the comment above it says the command does not fit ("exit 3", "exits 3"): the first command
after such a comment. Later commands read the files earlier ones wrote (plan.json, tp2dp2.json),
as a user following the tour would. The tour's `my_runs.jsonl` stands for a user's own measured
runs: the script writes three runs of the calibrated setup, 10% slower than the shipped model
predicts, before the tour starts.

  python3 scripts/readme_commands.py build/release/autopar [--list] [--only TEXT] [--docs]

--docs runs the `autopar ...` lines of docs/*.md instead, from their ```sh and unmarked blocks:
every one but a synopsis (a line with placeholders: `[--nodes K]`, `FILE`, `M`) and one under a
comment that says "not run here" (a command that needs a second node). They run in one scratch
directory per file, in order, as a reader of that page would.

Prints one line per command with its exit status and seconds; exits 1 naming each command that
failed, timed out or exited with another status than the README states.
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Seconds one command may take on a 2-core machine; the tour's slowest is seed 003's sampling.
TIMEOUT_S = 400


# A synopsis's placeholders: an optional part in brackets, or a word in capitals (M, FILE, K).
SYNOPSIS = re.compile(r"\[|(?<![\w./-])[A-Z][A-Z_]*(?![\w./-])")


def tour_commands(markdown, blocks=r"```sh\n(.*?)```", docs=False):
    """(command words, expected exit) for each command of the markdown's ```sh blocks (with
    `docs`, its ```sh and unmarked blocks less synopses and what a comment says is not run)."""
    commands = []
    expect_three = False
    skip_next = False
    for block in re.findall(blocks, markdown, re.S):
        lines = block.split("\n")
        i = 0
        while i < len(lines):
            line = lines[i]
            while line.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line.rstrip()[:-1] + " " + lines[i].strip()
            i += 1
            stripped = line.strip()
            if stripped.startswith("#"):
                if re.search(r"\bexits? 3\b", stripped):
                    expect_three = True
                skip_next = skip_next or "not run here" in stripped
                continue
            if not (stripped.startswith("autopar ") or stripped.startswith("bench/")):
                continue
            if docs and (skip_next or SYNOPSIS.search(stripped.split("#")[0])):
                skip_next = expect_three = False
                continue
            words = shlex.split(stripped, comments=True)
            commands.append((words, 3 if expect_three else 0))
            expect_three = False
    return commands


def write_user_runs(binary, scratch):
    """my_runs.jsonl: the calibrated setup measured 10% slower than the shipped model says."""
    setup = "--model llama2-7b --tp 2 --dp 4 --gbs 32"
    out = subprocess.run([binary, "estimate", *setup.split(), "--json"], capture_output=True,
                         text=True, check=True, cwd=scratch)
    step = json.loads(out.stdout)["step_time_s"] * 1.1
    with open(os.path.join(scratch, "my_runs.jsonl"), "w") as f:
        for _ in range(3):
            f.write(json.dumps({"estimate": setup, "step_time_s": step}) + "\n")


def run(words, binary, scratch):
    if words[0] == "autopar":
        argv = [binary, *words[1:]]
    else:  # a bench/ script: it finds the build itself; give it this one
        argv = [sys.executable, os.path.join(ROOT, words[0]), *words[1:], binary]
    start = time.monotonic()
    try:
        done = subprocess.run(argv, cwd=scratch, capture_output=True, text=True,
                              timeout=TIMEOUT_S)
        return done.returncode, time.monotonic() - start, done.stderr.strip().splitlines()
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - start, [f"timed out after {TIMEOUT_S} s"]


def run_page(page, commands, binary, only):
    """Runs one page's commands in order in a scratch directory; returns the failures."""
    failures = []
    with tempfile.TemporaryDirectory(prefix="autopar-readme-") as top:
        # The commands run where a checkout's root would be, beside the shared data they name as
        # ../shared.
        scratch = os.path.join(top, "main")
        os.mkdir(scratch)
        shared = os.path.join(os.path.dirname(ROOT), "shared")
        if os.path.isdir(shared):
            os.symlink(shared, os.path.join(top, "shared"))
        for name in ("examples", "tests"):
            os.symlink(os.path.join(ROOT, name), os.path.join(scratch, name))
        write_user_runs(binary, scratch)
        for words, expected in commands:
            line = shlex.join(words)
            if only not in line:
                continue
            status, seconds, errors = run(words, binary, scratch)
            print(f"{'ok  ' if status == expected else 'FAIL'} exit {status} "
                  f"({page}: {expected}) {seconds:6.1f} s  {line}", flush=True)
            if status != expected:
                failures.append(f"{page}: {line}: exit {status}, the page says {expected}: "
                                + (errors[-1] if errors else "no message"))
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary")
    parser.add_argument("--list", action="store_true", help="print the commands, run nothing")
    parser.add_argument("--only", default="", help="run only commands containing TEXT")
    parser.add_argument("--docs", action="store_true", help="docs/*.md's commands, not README's")
    args = parser.parse_args()
    if args.docs:
        pages = {path.name: tour_commands(path.read_text(), r"```(?:sh)?\n(.*?)```", docs=True)
                 for path in sorted(Path(ROOT, "docs").glob("*.md"))}
    else:
        with open(os.path.join(ROOT, "README.md")) as f:
            pages = {"README.md": tour_commands(f.read())}
    if args.list:
        for page, commands in pages.items():
            for words, expected in commands:
                print(f"{page}: exit {expected}: {shlex.join(words)}")
        return 0
    if not any(pages.values()):
        print("no commands found in the pages' ```sh blocks", file=sys.stderr)
        return 1
    binary = os.path.abspath(args.binary)
    failures = []
    for page, commands in pages.items():
        failures += run_page(page, commands, binary, args.only)
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
