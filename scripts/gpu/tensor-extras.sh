#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The tensor family's kernels that bench-tensor does not time, on the NVIDIA device in one call
# of the device tool: `kernelport verify 'tensor.*'`, then `kernelport bench` of the 16-bit
# storage sizes beside their f32 twins (add, exp, sum, a cast, softmax, cross-entropy),
# var/std/logsumexp against sum,
# a reversed copy against neg, mul_sum's sizes.
#   device run:  carry [".gpu"], command: bash scripts/gpu/tensor-extras.sh
# Optional: KP_EXTRAS_VERIFY=PATTERN verifies PATTERN instead of 'tensor.*' (e.g. '' for every
# kernel, after a change to the prelude every program includes).
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin tensor-extras /tmp/kp-tensor-extras-out results
kp_setup
kp_build_here "$res/build.log"

pattern=${KP_EXTRAS_VERIFY-tensor.*}
step "nvidia: verify '$pattern'"
timeout "$(cap 400)" $kp --device nvidia verify $pattern >"$res/verify.txt" 2>&1
grep -v ' PASS$' "$res/verify.txt" | grep -vE '^(1 warning generated\.)?$' | tail -15

step "nvidia: bench"
for item in tensor.add:16M tensor.add:16M-bf16 tensor.exp:16M tensor.exp:16M-bf16 \
  tensor.sum:4096x4096/last tensor.sum:4096x4096/last-bf16 tensor.sum:4096x4096/first \
  tensor.sum:4096x4096/first-bf16 tensor.copy:cast-16M-f32-bf16 tensor.copy:flip-4096x4096 \
  tensor.softmax:4096x4096 tensor.softmax:4096x4096-bf16 tensor.cross_entropy:8192x1000 \
  tensor.cross_entropy:8192x1000-bf16 \
  tensor.neg:16M tensor.var:4096x4096/last tensor.var:4096x4096/first \
  tensor.logsumexp:4096x4096/last tensor.logsumexp:4096x4096/first tensor.mul_sum:xor \
  tensor.mul_sum:256x256x256; do
  timeout "$(cap 60)" $kp --device nvidia bench "${item%%:*}" --size "${item#*:}" 2>&1 |
    grep -E "^tensor\." || echo "$item: no result"
done
kp_pack
