#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Graphs on the NVIDIA device, in one call of the device tool: test-graph and test-prepared on
# the GPU and on the machine's PoCL (5.0: its cl_khr_command_buffer checked too), the XOR example
# replayed and direct, bench-launch (host cost per launch, a chain of 1000 launches, 200 XOR
# training steps) on the GPU and on PoCL, and its PyTorch eager peer (peer-launch.py, foreach and
# fused AdamW) in the same call.
#   device run:  carry [".gpu"], command: bash scripts/gpu/graph.sh
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin graph /tmp/kp-graph-out results
kp_setup
step build
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DKP_BUILD_TESTS=ON >/dev/null &&
  cmake --build build-gpu -- -j"$(nproc)" >"$res/build.log" 2>&1 || { tail -40 "$res/build.log"; exit 1; }

for d in nvidia pocl; do
  step "$d: test-graph, test-prepared"
  (cd build-gpu && KP_TEST_DEVICE=$d timeout "$(cap 120)" ctest -R 'test-graph|test-prepared' \
    --output-on-failure -V) 2>&1 | grep -E 'chain, flags|tests passed|Failed|FAIL' | head -15
done

step "nvidia: verify tensor.mul_sum"
timeout "$(cap 60)" build-gpu/bin/kernelport --device nvidia verify tensor.mul_sum | tail -3

step "nvidia: xor, replayed and direct, products by tensor.mul_sum and by blas.gemm"
timeout "$(cap 60)" build-gpu/bin/xor --device nvidia --csv "$res/xor.csv" | tail -4
for v in "" --direct --blas "--blas --direct"; do
  # shellcheck disable=SC2086 # v holds zero, one or two options
  timeout "$(cap 60)" build-gpu/bin/xor --device nvidia --max-steps 2000 --check-every 2000 $v |
    tail -1
done

step "nvidia: bench-launch"
timeout "$(cap 180)" build-gpu/bin/bench-launch --device nvidia --json "$res/bench-launch.json"

step "pocl (this machine's CPU): bench-launch"
timeout "$(cap 120)" build-gpu/bin/bench-launch --device pocl --json "$res/bench-launch-pocl.json" |
  tail -8

step "peer-launch (PyTorch eager on CUDA)"
for v in "" --fused; do
  PYTHONUNBUFFERED=1 timeout "$(cap 120)" python3 bench/peers/peer-launch.py $v \
    --ours "$res/bench-launch.json" --json "$res/peer-launch${v/--/-}.json" || echo "peer failed"
done
kp_pack
