#!/usr/bin/env python3
"""Tests scripts/check_layering.py on the fixture beside this file.

The fixture (fixture/CMakeLists.txt and fixture/src/) is a clean tree of three modules,
base < mid < top, whose mid declares its JSON library on a DEPS continuation line. Each case copies
it to a temporary directory, makes one edit (an injected #include, a dropped DEPS line), runs the
check there and asserts its exit status and the violation line it prints.

    tests/layering/selftest.py   (a CTest test: layering_check_selftest)
"""

import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECK = HERE.parent.parent / "scripts" / "check_layering.py"
FIXTURE = HERE / "fixture"


class LayeringCheckTest(unittest.TestCase):
    def setUp(self):
        self.root = Path(tempfile.mkdtemp(prefix="layering-fixture-"))
        self.addCleanup(shutil.rmtree, self.root)
        shutil.copytree(FIXTURE, self.root, dirs_exist_ok=True)

    def run_check(self):
        """(exit status, standard output) of the check on the copied fixture."""
        done = subprocess.run([sys.executable, str(CHECK), "--root", str(self.root)],
                              capture_output=True, text=True, timeout=60)
        return done.returncode, done.stdout

    def inject(self, relative, line):
        """Appends `line` to a fixture file; returns the line's number."""
        path = self.root / relative
        text = path.read_text()
        path.write_text(text + line + "\n")
        return len(text.splitlines()) + 1

    def test_clean_fixture_passes(self):
        status, output = self.run_check()
        self.assertEqual(status, 0, output)
        self.assertIn("5 files in 3 modules", output)

    def test_upward_include_fails_naming_file_line_and_module(self):
        number = self.inject("src/base/base.h", '#include "top/top.h"')
        status, output = self.run_check()
        self.assertEqual(status, 1, output)
        self.assertIn(f"src/base/base.h:{number}: base includes top/top.h but CMakeLists.txt "
                      "declares no autopar_top for it", output)

    def test_transitive_module_is_not_a_direct_dependency(self):
        number = self.inject("src/top/top.cc", '#include "base/base.h"')
        status, output = self.run_check()
        self.assertEqual(status, 1, output)
        self.assertIn(f"src/top/top.cc:{number}: top includes base/base.h", output)

    def test_undeclared_external_header_fails(self):
        number = self.inject("src/base/base.h", "#include <nlohmann/json.hpp>")
        status, output = self.run_check()
        self.assertEqual(status, 1, output)
        self.assertIn(f"src/base/base.h:{number}: base includes nlohmann/json.hpp but "
                      "CMakeLists.txt declares no nlohmann_json::nlohmann_json for it", output)

    def test_gtest_outside_a_test_file_fails(self):
        number = self.inject("src/mid/mid.cc", "#include <gtest/gtest.h>")
        status, output = self.run_check()
        self.assertEqual(status, 1, output)
        self.assertIn(f"src/mid/mid.cc:{number}: mid includes gtest/gtest.h outside", output)

    def test_multi_line_deps_are_read(self):
        # The clean fixture passes only because mid's second DEPS line is read: drop it and
        # mid's JSON include is a violation.
        cmake = self.root / "CMakeLists.txt"
        text = cmake.read_text()
        continuation = "               nlohmann_json::nlohmann_json)\n"
        self.assertIn(continuation, text)
        cmake.write_text(text.replace("autopar_base\n" + continuation, "autopar_base)\n"))
        status, output = self.run_check()
        self.assertEqual(status, 1, output)
        self.assertIn("src/mid/mid.cc:3: mid includes nlohmann/json.hpp", output)


if __name__ == "__main__":
    unittest.main(verbosity=2)
