#!/usr/bin/env bash
# Installs every Debian package autopar builds, tests or runs with. Idempotent: packages already
# present are skipped, so a second run does nothing and needs no network.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libfmt-dev libspdlog-dev
  coinor-libcbc-dev coinor-libclp-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev libbenchmark-dev
  libtorch-dev libgloo-dev
  # LibTorch calls BLAS; without this Debian links it to the reference BLAS: a DP-4 step of the
  # 2-layer LLaMA (sequence 128, 4 ranks) took 4.3 s there and 0.56-0.60 s with OpenBLAS.
  libopenblas0-pthread
  zlib1g-dev
  # The autopar executable's allocator (CMakeLists.txt: a third of a long search was glibc's malloc).
  libmimalloc-dev
  # tests/cli/data/apply_fixes.py rewrites run yamls; the launch scripts' CLI cases lint them.
  python3-yaml shellcheck
  # scripts/html_report_check.py renders the --report pages in headless Chromium.
  chromium fonts-dejavu-core
  # The parsers' libFuzzer targets (scripts/fuzz.sh): clang and its sanitizer runtimes.
  clang libclang-rt-14-dev
  # The Python package (src/python): pybind11 builds it, pytest tests it, torch.fx traces modules
  # for autopar.from_torch; pip, setuptools, wheel and venv install it (`pip install .`).
  pybind11-dev python3-dev python3-pytest python3-torch
  python3-pip python3-setuptools python3-wheel python3-venv
)

missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
