"""`pip install --no-build-isolation .`: builds the Python package with the project's own CMake
(scripts/build.sh, targets _autopar and python_package) and installs build/release/python/autopar.
No package index is needed: pybind11 and the libraries are Debian's (scripts/setup.sh)."""

import os
import re
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as file:
        return re.search(r"project\(autopar VERSION ([0-9.]+)", file.read()).group(1)


class BuildWithCMake(build_ext):
    """Builds the extension and copies the package, as CMake lays it out, into the wheel."""

    def run(self):
        subprocess.run([os.path.join(ROOT, "scripts", "build.sh"), "--target", "_autopar",
                        "python_package"], check=True)
        built = os.path.join(ROOT, "build", "release", "python", "autopar")
        shutil.copytree(built, os.path.join(self.build_lib, "autopar"), dirs_exist_ok=True)


class BinaryDistribution(Distribution):
    """The wheel holds a compiled extension: tagged for this platform and interpreter."""

    def has_ext_modules(self):
        return True


setup(name="autopar", version=project_version(),
      description="Automatic parallelism planner for deep-learning training",
      python_requires=">=3.9", packages=[], cmdclass={"build_ext": BuildWithCMake},
      distclass=BinaryDistribution)
