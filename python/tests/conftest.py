"""Where the tests find the `autopar` executable the package was built beside (ctest sets
AUTOPAR; by hand, build/release's), and the repository's examples."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(os.environ.get("AUTOPAR_SOURCE_DIR", Path(__file__).resolve().parents[2]))
EXECUTABLE = os.environ.get("AUTOPAR", str(ROOT / "build" / "release" / "autopar"))
sys.path.insert(0, str(ROOT / "examples" / "python"))


def cli(*arguments, check=True):
    """Runs `autopar ARGUMENTS`: (exit status, stdout, stderr)."""
    done = subprocess.run([EXECUTABLE, *arguments], capture_output=True, text=True, timeout=600)
    if check and done.returncode != 0:
        raise AssertionError(f"autopar {' '.join(arguments)} exited {done.returncode}: "
                             f"{done.stderr}")
    return done.returncode, done.stdout, done.stderr


def cli_json(*arguments):
    return json.loads(cli(*arguments)[1])


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path
