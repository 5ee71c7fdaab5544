#!/usr/bin/env python3
"""Checks the HTML reports (`--report`) as a browser renders them, or writes docs/report.png.

For a search, an estimate under the zero-bubble schedule and a pipelined plan, the check:
  - writes the report with autopar;
  - loads it in headless Chromium (Debian's `chromium`, scripts/setup.sh installs it) and reads the
    DOM Chromium built: every pipeline stage has its timeline row with a forward and a backward
    block of every micro-batch (and a W under zero-bubble), all of positive width, and its memory
    bar;
  - takes a screenshot and finds, in the pixels, one band of forward-block colour per stage: every
    stage is drawn where a user sees it;
  - fails on any message the page logs to the console.

Usage: html_report_check.py AUTOPAR [--screenshot PATH]
  --screenshot PATH   write the search report's screenshot to PATH (docs/report.png) and stop.
"""

import argparse
import html.parser
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FORWARD_RGB = (0x4E, 0x79, 0xA7)  # .fwd in src/export/html_report.cc
WINDOW = (1300, 1600)


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("html_report_check: chromium not found (scripts/setup.sh installs Debian's chromium)")


def browse(html_path, *mode, window=WINDOW):
    """Runs headless Chromium on the file; returns (stdout, console lines on stderr)."""
    command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--enable-logging=stderr", "--v=0",
               f"--window-size={window[0]},{window[1]}", *mode, "file://" + html_path]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        sys.exit(f"html_report_check: chromium exited {done.returncode}: {done.stderr[-2000:]}")
    console = [line for line in done.stderr.splitlines() if ":CONSOLE(" in line]
    return done.stdout, console


class ReportDom(html.parser.HTMLParser):
    """Collects, per stage, the timeline blocks and the memory bars of a report's DOM."""

    def __init__(self):
        super().__init__()
        self.svg = None
        self.stage = None
        self.blocks = {}  # stage -> list of (css classes, width)
        self.memory = {}  # stage -> number of bar segments

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and a.get("id") in ("timeline", "memory"):
            self.svg = a["id"]
        elif tag == "g" and "data-stage" in a:
            self.stage = int(a["data-stage"])
            (self.blocks if self.svg == "timeline" else self.memory).setdefault(self.stage, [])
        elif tag == "rect" and self.stage is not None:
            entry = (a.get("class", "").split(), float(a.get("width", "0")))
            (self.blocks if self.svg == "timeline" else self.memory)[self.stage].append(entry)

    def handle_endtag(self, tag):
        if tag == "g":
            self.stage = None
        elif tag == "svg":
            self.svg = None


def png_rows(path):
    """Decodes an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes) into pixel rows.
    Written here because the standard library has zlib but no PNG reader."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    at, idat, header = 8, b"", None
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, f"unsupported PNG {header}"
    channels = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up = previous[x]
            corner = previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                predictor = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[x] = (line[x] + predictor) & 0xFF
        rows.append([tuple(line[i:i + 3]) for i in range(0, stride, channels)])
        previous = line
    return rows


def forward_bands(png_path, min_height=14):
    """Horizontal bands at least `min_height` pixels tall whose rows hold forward-coloured pixels
    (a timeline row; the legend's swatch is 12 pixels tall)."""
    bands, run = 0, 0
    for row in png_rows(png_path):
        if sum(1 for pixel in row if pixel == FORWARD_RGB) >= 3:
            run += 1
            continue
        bands += run >= min_height
        run = 0
    return bands + (run >= min_height)


def check(name, html_path, stages, micro_batches, chunks, weights, failures):
    dom, console = browse(html_path, "--dump-dom")
    failures += [f"{name}: the page logged: {line}" for line in console]
    parsed = ReportDom()
    parsed.feed(dom)
    if sorted(parsed.blocks) != list(range(stages)):
        failures.append(f"{name}: timeline rows {sorted(parsed.blocks)}, expected {stages} stages")
    if sorted(parsed.memory) != list(range(stages)):
        failures.append(f"{name}: memory bars {sorted(parsed.memory)}, expected {stages} stages")
    for stage, blocks in sorted(parsed.blocks.items()):
        for kind, expected in (("fwd", micro_batches * chunks), ("bwd", micro_batches * chunks),
                               ("wgt", micro_batches * chunks if weights else 0)):
            drawn = [w for classes, w in blocks if kind in classes]
            if len(drawn) != expected or any(w <= 0 for w in drawn):
                failures.append(f"{name}: stage {stage} draws {len(drawn)} '{kind}' blocks "
                                f"(widths > 0: {sum(w > 0 for w in drawn)}), expected {expected}")
    for stage, bars in sorted(parsed.memory.items()):
        if not bars or any(w <= 0 for _, w in bars):
            failures.append(f"{name}: stage {stage}'s memory bar is empty")
    with tempfile.TemporaryDirectory() as scratch:
        png = os.path.join(scratch, "shot.png")
        _, console = browse(html_path, f"--screenshot={png}")
        failures += [f"{name}: the page logged: {line}" for line in console]
        bands = forward_bands(png)
        if bands != stages:
            failures.append(f"{name}: the screenshot shows {bands} timeline rows, expected "
                            f"{stages}")


def autopar(binary, *args, ok=(0,)):
    done = subprocess.run([binary, *args], capture_output=True, text=True, cwd=REPO)
    if done.returncode not in ok:
        sys.exit(f"html_report_check: autopar {' '.join(args)} exited {done.returncode}: "
                 f"{done.stderr.strip()}")
    return done.stdout


SEARCH = ["search", "--model", "llama2-70b", "--nodes", "8", "--gbs", "128"]
# 16 micro-batches (32 / DP 2) on 4 stages, with W blocks.
ZERO_BUBBLE = ["estimate", "--model", "llama2-70b", "--nodes", "8", "--tp", "8", "--pp", "4",
               "--dp", "2", "--mbs", "1", "--gbs", "32", "--recompute", "selective",
               "--zero-bubble", "--zero", "1"]
# The README's GPT-3 example's fix: 8 stages, 16 micro-batches.
PLAN = ["plan", "--model", "gpt3-175b", "--cluster", "dgx-h100", "--nodes", "8", "--tp", "8",
        "--pipeline-stages", "8", "--micro-batches", "16"]


def search_shape(optimal):
    """(stages, chunks, micro-batches) of the search's optimal-config JSON (seed 003's)."""
    parallel = optimal["parallel_config"]
    micro_batches = 128 // (parallel["DP"] * parallel["MBS"])
    return parallel["PP"], parallel["VPP"], micro_batches


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("autopar")
    parser.add_argument("--screenshot")
    args = parser.parse_args()
    binary = os.path.abspath(args.autopar)
    with tempfile.TemporaryDirectory() as scratch:
        search = os.path.join(scratch, "search.html")
        optimal = os.path.join(scratch, "optimal.json")
        autopar(binary, *SEARCH, "--out", optimal, "--report", search)
        if args.screenshot:
            shot = os.path.abspath(args.screenshot)
            browse(search, f"--screenshot={shot}", window=(1300, 1000))
            print(f"wrote {shot}")
            return 0
        failures = []
        stages, chunks, micro_batches = search_shape(json.load(open(optimal)))
        check("search", search, stages, micro_batches, chunks, False, failures)
        estimate = os.path.join(scratch, "estimate.html")
        autopar(binary, *ZERO_BUBBLE, "--report", estimate)
        check("estimate --zero-bubble", estimate, 4, 16, 1, True, failures)
        plan = os.path.join(scratch, "plan.html")
        autopar(binary, *PLAN, "--report", plan)
        check("plan", plan, 8, 16, 1, False, failures)
    for failure in failures:
        print(failure)
    print(f"html_report_check: {'FAILED' if failures else 'passed'} (3 reports)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
