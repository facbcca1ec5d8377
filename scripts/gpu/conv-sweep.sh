#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Fashion-MNIST CNN's convolution kernels on the NVIDIA device against conv's SPLIT_K, in one
# call of the device tool: 50 training steps launched one by one (--direct) per value, each
# profiled (KP_PROFILE), after one warm-up run that builds the programs; then two epochs with the
# recorded step, end to end. Needs the dataset's .deb
# in .gpu, as train.sh.
#   device run:  carry [".gpu"], command: bash scripts/gpu/conv-sweep.sh [SPLIT_K ...]
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin conv-sweep /tmp/kp-conv-sweep-out results
kp_setup
kp_build_here "$res/build.log"
run() { # PROFILE [MANIFEST]
  KP_PROFILE=$1 KP_MANIFEST=${2:-} timeout "$(cap 120)" build-gpu/bin/fashion-mnist \
    --device nvidia --epochs 1 --direct --train-limit 6400 --test-limit 1000 >/dev/null
}
step "warm-up"
run "$res/warm.txt"
for sk in "${@:-0 256 512 1024 2048 4096}"; do
  for v in $sk; do
    step "SPLIT_K $v"
    m=$res/split-$v.yaml
    printf 'kernelport: 1\ntuning:\n  - match: { vendor: nvidia }\n    kernels:\n      conv.conv2d_backward_weight: { SPLIT_K: %s }\n' "$v" >"$m"
    run "$res/profile-$v.txt" "$m"
    grep -E '^(conv|blas)' "$res/profile-$v.txt"
    KP_MANIFEST=$m timeout "$(cap 120)" build-gpu/bin/fashion-mnist --device nvidia --epochs 2 \
      --test-limit 2000 | grep -E '^epoch'
  done
done
kp_pack
