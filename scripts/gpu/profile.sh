#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Where #25's training programs spend the device's time (KP_PROFILE, docs/profiling.md), in one
# call of the device tool: the Fashion-MNIST CNN for one epoch (--direct) and the GRU world model
# for one member. Needs the dataset's .deb in .gpu, as train.sh.
#   device run:  carry [".gpu"], command: bash scripts/gpu/profile.sh
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin profile /tmp/kp-profile-out results
kp_setup
kp_build_here "$res/build.log"

# --direct: a replayed graph's launches are not broken down. A first short run builds every
# program (and CLBlast's), so the profile times kernels, not compilers.
step "nvidia: fashion-mnist, warm-up"
timeout "$(cap 100)" build-gpu/bin/fashion-mnist --device nvidia --epochs 1 --direct \
  --train-limit 1280 --test-limit 256 >/dev/null
step "nvidia: fashion-mnist, 1 epoch, launched one by one, profiled"
KP_PROFILE=$res/fashion-mnist.txt timeout "$(cap 200)" build-gpu/bin/fashion-mnist --device nvidia \
  --epochs 1 --direct | tail -3
cat "$res/fashion-mnist.txt"

step "nvidia: gru-world-model, 1 member, profiled"
KP_PROFILE=$res/gru-world-model.txt timeout "$(cap 200)" build-gpu/bin/gru-world-model \
  --device nvidia --members 1 --epochs 3 | grep -E '^training'
cat "$res/gru-world-model.txt"
kp_pack
