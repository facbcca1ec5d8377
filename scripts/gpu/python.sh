#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Python package on the NVIDIA device, in one call of the device tool: the build tree's
# package (no package registry there, so no `pip install .`: the extension is built by CMake,
# KP_BUILD_PYTHON=ON), its pytest suite on the GPU (gru.step against PyTorch's GRUCell too, which
# is installed there), and python/bench/bench_launch.py (a launch from Python against the same
# launch from C, #28's target: Python <= 2 C + 5 us) on the GPU and on the machine's PoCL.
#   device run:  carry [".gpu"], command: bash scripts/gpu/python.sh
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin python /tmp/kp-python-out results
kp_setup
step build
python3 -c 'import sys, numpy; print(sys.version.split()[0], "numpy", numpy.__version__)'
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DKP_BUILD_TESTS=OFF \
  -DKP_BUILD_PYTHON=ON -DPython_EXECUTABLE="$(command -v python3)" >"$res/configure.log" 2>&1 &&
  cmake --build build-gpu -- -j"$(nproc)" >"$res/build.log" 2>&1 ||
  { tail -40 "$res/configure.log" "$res/build.log"; exit 1; }
export PYTHONPATH="$top/build-gpu/python"

step "nvidia: pytest"
if python3 -c 'import pytest' 2>/dev/null; then
  KP_DEVICE=nvidia timeout "$(cap 240)" python3 -m pytest -q -p no:cacheprovider python/tests |
    tail -15
else
  echo "no pytest on this machine: skipped"
fi

for d in nvidia pocl; do
  step "$d: bench_launch.py"
  timeout "$(cap 120)" python3 python/bench/bench_launch.py --device "$d" \
    --json "$res/bench-launch-python-$d.json"
done
kp_pack
