#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue #26's last item on the NVIDIA device, in one call of the device tool: a trained CA's hard
# circuit run bit-packed (kp_ca_packed: logic.perceive_packed + logic.eval_packed per layer)
# against the fused hard rollout (kp_ca_rollout). test-logic-ca (the packed run equal to the
# fused one step by step) and `verify logic.perceive_packed` on the GPU; the checkerboard (seed 4)
# and Game of Life (seed 2) trained, then run on a 512 x 512 grid for 100 steps both ways
# (cells*steps/s each, values that differ: must be 0); bench-logic-ca's packed rows (random
# logits, 20 steps) at 512 x 512 (both ways) and 2048 x 2048 (packed only: the fused rollout's
# activations pass 2^31 floats), tiles of the default 256 MiB, 16 MiB and 1024 MiB; the same rows
# on PoCL on 2 of the machine's cores at 128 x 128.
#   device run:  carry [".gpu"], command: bash scripts/gpu/logic-ca-packed.sh
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin logic-ca-packed /tmp/kp-logic-ca-packed-out results
kp_setup
step build
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DKP_BUILD_TESTS=ON >/dev/null &&
  cmake --build build-gpu -- -j"$(nproc)" >"$res/build.log" 2>&1 || { tail -40 "$res/build.log"; exit 1; }

step "nvidia: test-logic-ca, kernelport verify logic.perceive_packed"
(cd build-gpu && KP_TEST_DEVICE=nvidia timeout "$(cap 120)" ctest -R test-logic-ca --output-on-failure) |
  tail -5
timeout "$(cap 60)" build-gpu/bin/kernelport --device nvidia verify 'logic.perceive_packed' | tail -3

step "nvidia: checkerboard (seed 4) trained, then packed vs fused on 512 x 512, 100 steps"
timeout "$(cap 120)" build-gpu/bin/logic-ca --device nvidia --task checkerboard --seed 4 \
  --check-every 100 --packed-grid 512 --packed-steps 100 | grep -E "device|solved|packed|check"

step "nvidia: Game of Life (seed 2) trained, then packed vs fused on 512 x 512, 100 steps"
timeout "$(cap 120)" build-gpu/bin/logic-ca --device nvidia --task gol --seed 2 \
  --check-every 500 --packed-grid 512 --packed-steps 100 | grep -E "solved|packed|check|rule"

step "nvidia: bench-logic-ca packed rows (512 and 2048, tiles default, 16 and 1024 MiB)"
for side in 512 2048; do
  for tile in 0 16 1024; do
    echo "-- $side x $side, tiles ${tile} MiB (0: the default)"
    timeout "$(cap 90)" build-gpu/bin/bench-logic-ca --device nvidia --gol --packed-grid "$side" \
      --packed-tile-mib "$tile" --json "$res/bench-logic-ca-packed-$side-tile$tile.json" |
      grep -E "packed" || echo "bench-logic-ca --packed-grid $side --packed-tile-mib $tile failed"
  done
done

step "2 cores: bench-logic-ca's packed rows on PoCL, 128 x 128"
POCL_MAX_PTHREAD_COUNT=2 timeout "$(cap 150)" taskset -c 0,1 build-gpu/bin/bench-logic-ca \
  --device pocl --quick --gol --packed-grid 128 --json "$res/bench-logic-ca-packed-pocl.json" |
  grep -E "packed" || echo "bench-logic-ca on PoCL failed"
kp_pack
