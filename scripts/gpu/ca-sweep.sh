#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The checkerboard CA's step kernels on the NVIDIA device against their work-group shape, in one
# call of the device tool: for each "WG_N LANES" pair (logic.ca_step and logic.ca_step_backward
# alike), 30 training steps launched one by one and profiled (KP_PROFILE), then 100 steps of the
# recorded step end to end.
#   device run:  carry [".gpu"], command: bash scripts/gpu/ca-sweep.sh ["WG_N LANES" ...]
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin ca-sweep /tmp/kp-ca-sweep-out results
kp_setup
kp_build_here "$res/build.log"
ca=(build-gpu/bin/logic-ca --device nvidia --task checkerboard)
step warm-up
timeout "$(cap 60)" "${ca[@]}" --steps 5 --direct >/dev/null
for shape in "${@:-32 8}"; do
  read -r wn lanes <<<"$shape"
  step "WG_N $wn LANES $lanes"
  m=$res/ca-$wn-$lanes.yaml
  printf 'kernelport: 1\ntuning:\n  - match: { vendor: nvidia }\n    kernels:\n' >"$m"
  for k in logic.ca_step logic.ca_step_backward; do
    printf '      %s: { WG_N: %s, LANES: %s }\n' "$k" "$wn" "$lanes" >>"$m"
  done
  KP_MANIFEST=$m KP_PROFILE=$res/profile-$wn-$lanes.txt timeout "$(cap 60)" "${ca[@]}" --steps 30 \
    --direct >/dev/null
  grep -E '^logic' "$res/profile-$wn-$lanes.txt"
  KP_MANIFEST=$m timeout "$(cap 60)" "${ca[@]}" --steps 100 --check-every 100 | grep -E '^trained'
done
kp_pack
