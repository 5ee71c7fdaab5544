#!/usr/bin/env python3
"""Applies every fix autopar suggests for a plan that does not fit, and checks that it fits.

Usage: apply_fixes.py AUTOPAR SCRATCH -- PLAN_ARGS...

Runs `AUTOPAR plan PLAN_ARGS --json`, which must exit 3 (does not fit) with at least one fix in
the plan's "fixes". Each fix is applied twice: as flags (replacing the same flags of PLAN_ARGS)
and, when PLAN_ARGS has a --config run yaml, as its yaml keys written into a copy of the yaml.
Both must plan with exit 0, fit, and reach the peak memory the fix states. Prints one line per
fix; exits 1 at the first that does not hold.
"""
import json
import os
import subprocess
import sys

import yaml


def plan(autopar, args):
    run = subprocess.run([autopar, "plan", *args, "--json"], capture_output=True, text=True)
    document = json.loads(run.stdout) if run.stdout.strip() else None
    return run.returncode, document, run.stderr.strip()


def split_flags(tokens):
    """[["--tp", "8"], ["--optimizer-parallel"], ...]: each flag with its values."""
    groups = []
    for token in tokens:
        if token.startswith("--") or not groups:
            groups.append([token])
        else:
            groups[-1].append(token)
    return groups


def with_flags(args, flags):
    """`args` with the flags of `flags` replaced (or added)."""
    replaced = {group[0] for group in split_flags(flags)}
    kept = [group for group in split_flags(args) if group[0] not in replaced]
    return [token for group in kept for token in group] + flags


def with_yaml(args, keys, scratch, index):
    """`args` with its --config yaml rewritten to hold `keys` ("a.b.c": value)."""
    at = args.index("--config")
    with open(args[at + 1]) as file:
        document = yaml.safe_load(file)
    for dotted, value in keys.items():
        node = document
        *parents, last = dotted.split(".")
        for parent in parents:
            node = node.setdefault(parent, {})
        node[last] = value
    path = os.path.join(scratch, f"fix{index}.yaml")
    with open(path, "w") as file:
        yaml.safe_dump(document, file)
    return args[:at + 1] + [path] + args[at + 2:]


def check(autopar, args, fix, how):
    code, document, error = plan(autopar, args)
    if code != 0 or document is None or not document["estimate"]["fits"]:
        print(f"FAIL {how}: exit {code}: {error.splitlines()[0] if error else ''}")
        return False
    peak = document["estimate"]["peak_memory_bytes"]
    if peak != fix["peak_memory_bytes"]:
        print(f"FAIL {how}: peak {peak} B, the fix said {fix['peak_memory_bytes']} B")
        return False
    return True


def main():
    autopar, scratch, separator, *args = sys.argv[1:]
    assert separator == "--", __doc__
    code, document, error = plan(autopar, args)
    if code != 3 or document is None:
        print(f"FAIL: expected exit 3 (does not fit), got {code}: {error}")
        return 1
    fixes = document.get("fixes", [])
    if not fixes:
        print(f"FAIL: no fixes: {error.splitlines()[-1]}")
        return 1
    for index, fix in enumerate(fixes):
        fixed = with_flags(args, fix["flags"])
        if not check(autopar, fixed, fix, f"flags {' '.join(fix['flags'])}"):
            return 1
        ways = "flags"
        if "--config" in args and fix["yaml"] and "--nodes" not in fix["flags"]:
            if not check(autopar, with_yaml(args, fix["yaml"], scratch, index), fix,
                         f"yaml {fix['yaml']}"):
                return 1
            ways = "flags and yaml"
        print(f"fix {index + 1} fits by its {ways}: {' '.join(fix['flags'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
