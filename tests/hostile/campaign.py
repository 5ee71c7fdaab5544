#!/usr/bin/env python3
"""The hostile-input campaign: every flag of every planning verb and every file it reads, given
values an attacker or a slip of the keyboard would give, one process per case under a 10 s and
1 GiB limit (docs/fuzzing.md, "Hostile inputs").

The flags come from each verb's own --help, so a flag added later is attacked without a change
here. A case passes when the process exits 0 (accepted), 3 (does not fit) or 2 with exactly one
stderr line "autopar: error: ..." free of control bytes; it fails as a crash (a signal, or a C++
exception's "terminate called"), a hang (past the time limit), a memory blow-up (past the memory
limit) or an unclear error (exit 2 with more or less than one line, or exit 1 without a line
naming autopar). A value that must be refused (nan, a negative count, a number past every limit)
and is accepted is a silent wrong answer.

    tests/hostile/campaign.py build/release/autopar [--jobs N] [--only VERB] [--list]

Prints the counts per outcome and each failure's command; exits 1 when any case failed.
"""

import argparse
import concurrent.futures
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIME_LIMIT_S = 10
MEMORY_LIMIT_BYTES = 1 << 30

# Numbers a flag must refuse whatever it sizes: not finite, negative, past every limit, not a
# number. A flag may accept 0 (a default) or a tiny positive value, so those are tried but not
# counted as wrong when accepted.
MUST_REFUSE_NUMBERS = ["-1", "nan", "inf", "-inf", "1e308", "9223372036854775808", "abc", "1e3.5",
                       "1,2"]
# CLI11 reads 0x10 as 16, and an empty value as the option not given.
MAY_ACCEPT_NUMBERS = ["0", "1e-300", "2147483648", "0x10", ""]


def hostile_files(scratch):
    """Paths to inputs no reader should take: devices, a directory, a pipe nobody writes, a link
    loop, binary and NUL bytes, deep nesting, a huge line, out-of-range numbers, an alias bomb."""
    files = {}

    def write(name, data):
        path = os.path.join(scratch, name)
        with open(path, "wb") as f:
            f.write(data)
        files[name] = path

    write("empty.json", b"")
    write("nul.json", b'{"ops": []}\0garbage')
    write("binary.yaml", bytes(range(256)) * 64)
    write("deep.json", b"[" * 200000 + b"]" * 200000)
    write("deep.yaml", b"- " * 50000 + b"x\n")
    write("long_line.json", b'{"name": "' + b"a" * (8 << 20) + b'"}')
    write("huge_numbers.json", b'{"num_layers": 1e400, "hidden_size": -9223372036854775809}')
    write("escapes.yaml", b"name: \x1b[2J\x1b[31mred\nnodes: \x07\n")
    write("alias_bomb.yaml",
          b'a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]\n' +
          b"".join(b"a%d: &a%d [%s]\n" % (i, i, b",".join([b"*a%d" % (i - 1)] * 10))
                   for i in range(1, 10)))
    write("two_documents.yaml", b"name: a\n---\nname: b\n")
    fifo = os.path.join(scratch, "nobody_writes.fifo")
    os.mkfifo(fifo)
    files["fifo"] = fifo
    loop = os.path.join(scratch, "loop")
    os.symlink(loop, loop)
    files["symlink_loop"] = loop
    files["directory"] = scratch
    files["missing"] = os.path.join(scratch, "missing", "file.json")
    files["dev_zero"] = "/dev/zero"
    files["dev_urandom"] = "/dev/urandom"
    return files


def verb_bases(binary, scratch):
    """Per verb: an otherwise valid command, so the one hostile value is what each case tests,
    and the commands whose file input ("{}") takes each hostile file."""
    plan = os.path.join(scratch, "ffn-plan.json")
    subprocess.run([binary, "plan", "--model", "ffn", "--devices", "8", "--out", plan],
                   cwd=scratch, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    mpt = os.path.join(REPO, "examples/models/mpt-760m.json")
    bases = {
        "plan": (["plan", "--model", "ffn", "--devices", "8"],
                 [["plan", "--model", "{}", "--devices", "8"]]),
        "estimate": (["estimate", "--model", "llama2-7b", "--tp", "2", "--dp", "4", "--gbs", "32"],
                     [["estimate", "--model", "{}", "--dp", "4", "--gbs", "32"]]),
        "search": (["search", "--model", mpt, "--gbs", "16", "--nodes", "1"],
                   [["search", "--model", "{}", "--gbs", "16"]]),
        "layout": (["layout", "--strategy", "((2,1),(1,4))", "--shapes", "[64,32],[32,128]"], []),
        "redistribute": (["redistribute", "--shape", "[64,32]", "--from-matrix", "[2,4]",
                          "--from-map", "[1,-1]", "--to-matrix", "[8]", "--to-map", "[0,-1]"], []),
        "validate": (["validate", plan, "--model", "ffn"],
                     [["validate", "{}", "--model", "ffn"], ["validate", plan, "--model", "{}"]]),
    }
    # The runtime verbs run a 2-device plan on 2 local ranks (LibTorch on this machine's CPUs).
    plan2 = os.path.join(scratch, "ffn-plan-2.json")
    subprocess.run([binary, "plan", "--model", "ffn", "--devices", "2", "--out", plan2],
                   cwd=scratch, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    for verb in ("run", "check"):
        bases[verb] = ([verb, "--plan", plan2, "--ranks", "2", "--steps", "1"],
                       [[verb, "--plan", "{}", "--ranks", "2", "--steps", "1"]])
    # calibrate reads a JSONL of measured runs: three of one estimate.
    runs = os.path.join(scratch, "runs.jsonl")
    with open(runs, "w") as f:
        for seconds in (1.0, 1.1, 1.2):
            f.write('{"estimate": "--model llama2-7b --tp 2 --dp 4 --gbs 32", '
                    f'"step_time_s": {seconds}}}\n')
    bases["calibrate"] = (["calibrate", runs, "--out", os.path.join(scratch, "fitted.json")],
                          [["calibrate", "{}", "--out", os.path.join(scratch, "fitted.json")]])
    example = os.path.join(REPO, "..", "shared", "data", "iopddl", "example.json")
    if os.path.exists(example):
        bases["iopddl"] = (["iopddl", example, "1"], [["iopddl", "{}", "1"]])
    return bases


OPTION = re.compile(r"^\s+(?:-\w,)?(--[a-z0-9-]+)(?:,--[a-z0-9-]+)*\s+(TEXT|INT|FLOAT|UINT)\b")


def options_of(binary, verb):
    """(flag, kind) for each option the verb's --help lists with a value: kind is "number" or
    "text"."""
    help_text = subprocess.run([binary, verb, "--help"], capture_output=True, text=True).stdout
    found = []
    for line in help_text.splitlines():
        match = OPTION.match(line)
        if match and match.group(1) != "--help":
            found.append((match.group(1), "text" if match.group(2) == "TEXT" else "number"))
    return found


def cases(binary, scratch, only):
    """(arguments, must_refuse) for every case."""
    files = hostile_files(scratch)
    for verb, (base, inputs) in verb_bases(binary, scratch).items():
        if only and verb != only:
            continue
        for flag, kind in options_of(binary, verb):
            if kind == "number":
                for value in MUST_REFUSE_NUMBERS:
                    yield (base + [flag, value], True)
                for value in MAY_ACCEPT_NUMBERS:
                    yield (base + [flag, value], False)
            else:
                for value in files.values():
                    yield (base + [flag, value], False)
        for template in inputs:
            for value in files.values():
                yield ([value if part == "{}" else part for part in template], False)


def limit_resources():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_case(binary, scratch, arguments, must_refuse, time_limit=TIME_LIMIT_S):
    work = tempfile.mkdtemp(dir=scratch)
    started = time.monotonic()
    try:
        done = subprocess.run([binary] + arguments, cwd=work, capture_output=True,
                              timeout=time_limit, preexec_fn=limit_resources)
    except subprocess.TimeoutExpired:
        return "hang", arguments, f"past {time_limit} s"
    finally:
        shutil.rmtree(work, ignore_errors=True)
    seconds = time.monotonic() - started
    stderr = done.stderr.decode("utf-8", "replace")
    lines = stderr.splitlines()
    if "bad_alloc" in stderr or "MemoryError" in stderr or "out of memory" in stderr.lower():
        return "memory", arguments, stderr[-300:]
    if done.returncode < 0 or "terminate called" in stderr:
        return "crash", arguments, f"status {done.returncode}: {stderr[-300:]}"
    if done.returncode == 2:
        control = any(ord(c) < 32 and c != "\t" for line in lines for c in line)
        if len(lines) != 1 or not lines[0].startswith("autopar: error: ") or control:
            return "unclear", arguments, stderr[-500:]
        return "refused", arguments, f"{seconds:.2f} s"
    if done.returncode == 1:
        if not any(line.startswith("autopar") for line in lines):
            return "unclear", arguments, stderr[-500:]
        return "failed-cleanly", arguments, ""
    if done.returncode in (0, 3):
        if must_refuse:
            return "silent", arguments, "accepted"
        return "accepted", arguments, f"{seconds:.2f} s"
    return "crash", arguments, f"status {done.returncode}: {stderr[-300:]}"


FAKE = """#!/bin/sh
case "$1" in
  crash) kill -SEGV $$ ;;
  throw) echo "terminate called after throwing an instance of 'std::length_error'" >&2; exit 134 ;;
  hang) sleep 5 ;;
  memory) exec python3 -c "b = bytearray(2 << 30)" ;;
  unclear) echo "autopar: error: one"; echo "two" >&2; echo "three" >&2; exit 2 ;;
  escape) printf 'autopar: error: \\033[2J\\n' >&2; exit 2 ;;
  refused) echo "autopar: error: --x: expected a positive number" >&2; exit 2 ;;
  *) exit 0 ;;
esac
"""


def selftest():
    """The campaign's verdicts on a fake binary that misbehaves in each way it must catch."""
    expected = [("crash", False, "crash"), ("throw", False, "crash"), ("hang", False, "hang"),
                ("memory", False, "memory"), ("unclear", False, "unclear"),
                ("escape", False, "unclear"), ("refused", True, "refused"),
                ("ok", True, "silent"), ("ok", False, "accepted")]
    wrong = 0
    with tempfile.TemporaryDirectory(prefix="autopar-hostile-selftest-") as scratch:
        fake = os.path.join(scratch, "fake")
        with open(fake, "w") as f:
            f.write(FAKE)
        os.chmod(fake, 0o755)
        for argument, must_refuse, verdict in expected:
            outcome, _, detail = run_case(fake, scratch, [argument], must_refuse, time_limit=1)
            if outcome != verdict:
                wrong += 1
                print(f"selftest: '{argument}' gave {outcome}, expected {verdict} ({detail})")
    print(f"selftest: {len(expected) - wrong} of {len(expected)} verdicts right")
    return 1 if wrong else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--only", help="one verb")
    parser.add_argument("--list", action="store_true", help="print the cases, run none")
    parser.add_argument("--selftest", action="store_true",
                        help="check the verdicts on a fake binary that crashes, hangs, ...")
    args = parser.parse_args()
    if args.selftest:
        return selftest()
    binary = os.path.abspath(args.binary)
    with tempfile.TemporaryDirectory(prefix="autopar-hostile-") as scratch:
        todo = list(cases(binary, scratch, args.only))
        if args.list:
            for arguments, _ in todo:
                print(" ".join(arguments))
            return 0
        counts = {}
        failures = []
        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for outcome, arguments, detail in pool.map(
                    lambda case: run_case(binary, scratch, *case), todo):
                counts[outcome] = counts.get(outcome, 0) + 1
                if outcome in ("crash", "hang", "memory", "unclear", "silent"):
                    failures.append((outcome, arguments, detail))
        elapsed = time.monotonic() - started
    for outcome, arguments, detail in failures:
        print(f"{outcome}: autopar {' '.join(repr(a) if not a or ' ' in a else a for a in arguments)}"
              f"\n    {detail.strip().replace(chr(10), chr(10) + '    ')}")
    summary = ", ".join(f"{counts.get(k, 0)} {k}" for k in
                        ("refused", "accepted", "failed-cleanly", "crash", "hang", "memory",
                         "unclear", "silent"))
    print(f"hostile inputs: {len(todo)} cases in {elapsed:.0f} s: {summary}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
