#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/probes/host-staging-probe on the NVIDIA device, in one call of the device tool: the CPU's
# and the device's bandwidth on malloc'ed, ALLOC_HOST_PTR and USE_HOST_PTR host memory, at 64 and
# 256 MB (what #29's all-reduce should stage through).
#   device run:  carry [".gpu"], command: bash scripts/gpu/host-staging.sh
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin host-staging /tmp/kp-host-staging-out
kp_setup
kp_build_here "$out/build.log"
for mb in 64 256; do
  step "host-staging-probe, $mb MB"
  timeout "$(cap 60)" build-gpu/bin/host-staging-probe --mb "$mb"
done
