#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue #26's logic-gate CAs on the NVIDIA device, in one call of the device tool: the CA
# kernels verified on the GPU (test-logic-ca), bench-logic-ca's training steps (checkerboard,
# async, Game of Life; graph and direct) and the same models in plain PyTorch on the same GPU
# (peer-logic-ca.py, both of difflogic's forms); the checkerboard trained (500 steps) and Game of
# Life (3000 steps, 1000 boards checked); then the PoCL comparison on 2 of the machine's cores:
# bench-logic-ca on PoCL (POCL_MAX_PTHREAD_COUNT=2, taskset) against PyTorch on the CPU
# (2 threads, taskset). The packed runs of the trained circuits: scripts/gpu/logic-ca-packed.sh.
#   device run:  carry [".gpu"], command: bash scripts/gpu/logic-ca.sh
# Optional: KP_CA_GOL=0 skips the Game of Life training (the longest step); KP_CA_SEED_CB and
# KP_CA_SEED_GOL pick the training seeds (default 4 and 2: of seeds 1-5 on the H200, the
# checkerboard solves with 4 only, Game of Life with 2-5; scripts/gpu/ca-seeds.sh).
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin logic-ca /tmp/kp-logic-ca-out results
kp_setup
cb_seed=${KP_CA_SEED_CB:-4} gol_seed=${KP_CA_SEED_GOL:-2}
step build
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DKP_BUILD_TESTS=ON >/dev/null &&
  cmake --build build-gpu -- -j"$(nproc)" >"$res/build.log" 2>&1 || { tail -40 "$res/build.log"; exit 1; }

step "nvidia: test-logic-ca, kernelport verify logic.ca*"
(cd build-gpu && KP_TEST_DEVICE=nvidia timeout "$(cap 120)" ctest -R test-logic-ca --output-on-failure) |
  tail -5
timeout "$(cap 60)" build-gpu/bin/kernelport --device nvidia verify 'logic.ca*' | tail -3

step "nvidia: bench-logic-ca (checkerboard, async, gol)"
timeout "$(cap 120)" build-gpu/bin/bench-logic-ca --device nvidia --async --gol \
  --json "$res/bench-logic-ca-nvidia.json"

step "PyTorch on the GPU: the same models"
for t in checkerboard gol; do
  for f in "" --ops16; do
    # shellcheck disable=SC2086 # f is empty or one option
    PYTHONUNBUFFERED=1 timeout "$(cap 120)" python3 bench/peers/peer-logic-ca.py --task $t $f \
      --json "$res/peer-logic-ca-$t${f:+-ops16}.json" || echo "peer failed"
  done
done

step "nvidia: logic-ca --task checkerboard --seed $cb_seed (500 steps)"
timeout "$(cap 120)" build-gpu/bin/logic-ca --device nvidia --task checkerboard --seed "$cb_seed" \
  --check-every 50 \
  --csv "$res/checkerboard.csv" --png "$res/checkerboard.png" --save "$res/checkerboard"
if [[ ${KP_CA_GOL:-1} == 1 ]]; then
  step "nvidia: logic-ca --task gol --seed $gol_seed (3000 steps, 1000 boards)"
  timeout "$(cap 240)" build-gpu/bin/logic-ca --device nvidia --task gol --seed "$gol_seed" \
    --check-every 250 \
    --boards 1000 --csv "$res/gol.csv" --png "$res/gol.png" --save "$res/gol"
fi

step "2 cores: bench-logic-ca on PoCL, PyTorch on the CPU"
POCL_MAX_PTHREAD_COUNT=2 timeout "$(cap 120)" taskset -c 0,1 build-gpu/bin/bench-logic-ca \
  --device pocl --quick --packed-grid 0 --json "$res/bench-logic-ca-pocl.json"
PYTHONUNBUFFERED=1 timeout "$(cap 120)" taskset -c 0,1 python3 bench/peers/peer-logic-ca.py \
  --device cpu --threads 2 --quick --json "$res/peer-logic-ca-cpu.json" || echo "peer failed"
kp_pack
