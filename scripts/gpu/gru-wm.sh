#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GRU world model's training step on the NVIDIA device, in one call of the device tool:
# gru.sequence and gru.sequence_backward at the model's size ("wm": T 50, B 128, I 65, H 64)
# at the GPU defaults (the rows route, split weight products), per step with one GEMM per
# product (ROWS_H and SPLIT_MN -1), and the rows route alone, verified first;
# then the example at its defaults and the same ensemble in PyTorch eager on its data.
#   device run:  carry [".gpu"], command: bash scripts/gpu/gru-wm.sh
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin gru-wm /tmp/kp-gru-wm-out results
kp_setup
kp_build_here "$res/build.log"
# The manifests of the A/B: ROWS_H and SPLIT_MN off (the per-step route and one GEMM per weight
# product), and SPLIT_MN alone off.
manifest() { # FILE ROWS_H SPLIT_MN
  printf 'kernelport: 1\ntuning:\n  - match: { vendor: nvidia }\n    kernels:\n' >"$1"
  printf '      gru.sequence: { ROWS_H: %s }\n' "$2" >>"$1"
  printf '      gru.sequence_backward: { ROWS_H: %s, SPLIT_MN: %s }\n' "$2" "$3" >>"$1"
}
manifest "$res/steps.yaml" -1 -1
manifest "$res/rows.yaml" 256 -1

step "verify gru.sequence* (defaults: rows route and split products; then per step)"
timeout "$(cap 120)" "$kp" --device nvidia verify 'gru.sequence*' | tail -1
timeout "$(cap 120)" "$kp" --device nvidia --manifest "$res/steps.yaml" verify 'gru.sequence*' | tail -1

step "bench wm: defaults, per step, rows without split, defaults again"
for m in defaults steps rows defaults2; do
  args=(--device nvidia); [[ -f $res/$m.yaml ]] && args+=(--manifest "$res/$m.yaml")
  timeout "$(cap 60)" "$kp" "${args[@]}" bench 'gru.sequence*' --size wm --seconds 0.5 \
    --json "$res/bench-$m.json" | grep -E '^gru'
done

step "nvidia: gru-world-model (defaults)"
timeout "$(cap 300)" build-gpu/bin/gru-world-model --device nvidia --csv "$res/gru-world-model.csv" \
  --save-data /tmp/kp-wm.bin

step "PyTorch eager, the same GRU world model"
PYTHONUNBUFFERED=1 timeout "$(cap 300)" python3 bench/peers/peer-gru-world-model.py /tmp/kp-wm.bin \
  --json "$res/peer-gru-world-model.json" || echo "peer failed"
kp_pack
