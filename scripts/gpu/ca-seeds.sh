#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue #26 on the NVIDIA device, in one call of the device tool: where a checkerboard training
# step spends its time (KP_PROFILE, launched one by one), then which seeds solve: the checkerboard
# (500 steps) and Game of Life (3000 steps, 100 boards checked) for seeds 1-5.
#   device run:  carry [".gpu"], command: bash scripts/gpu/ca-seeds.sh
# Optional: KP_CA_SEEDS="1 2 3" picks the seeds.
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin ca-seeds /tmp/kp-ca-seeds-out results
kp_setup
kp_build_here "$res/build.log"
seeds=${KP_CA_SEEDS:-1 2 3 4 5}

step "nvidia: checkerboard, 30 steps launched one by one, profiled (after a warm-up)"
timeout "$(cap 60)" build-gpu/bin/logic-ca --device nvidia --task checkerboard --steps 5 \
  --direct >/dev/null
KP_PROFILE=$res/checkerboard-profile.txt timeout "$(cap 60)" build-gpu/bin/logic-ca \
  --device nvidia --task checkerboard --steps 30 --direct | tail -2
head -30 "$res/checkerboard-profile.txt"

for s in $seeds; do
  step "nvidia: checkerboard seed $s (500 steps)"
  timeout "$(cap 60)" build-gpu/bin/logic-ca --device nvidia --task checkerboard --seed "$s" \
    --check-every 50 --csv "$res/checkerboard-$s.csv" | tail -3
done
for s in $seeds; do
  step "nvidia: gol seed $s (3000 steps)"
  timeout "$(cap 60)" build-gpu/bin/logic-ca --device nvidia --task gol --seed "$s" \
    --check-every 500 --boards 100 --csv "$res/gol-$s.csv" | tail -3
done
kp_pack
