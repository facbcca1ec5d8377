#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The kernel families' GPU run, in one call of the device tool: build, verify the conv, logic and
# gru families on the NVIDIA device, bench-conv / bench-logic / bench-gru with the shipped
# manifest, a short tune of the families' main kernels, the benches again with the tuned values,
# then the PyTorch peers (peer-conv.py, peer-logic.py, peer-gru.py). One tarball and one log land
# in $OUT (the device tool brings back at most 8 files). The tensor family runs the same way when
# named (KP_FAMILIES=tensor); its peer-tensor.py runs bench-tensor itself with the shipped
# manifest, times PyTorch on the same inputs and compares the results.
#   device run:  carry [".gpu"], command: bash scripts/gpu/families.sh
#                (tensor: KP_FAMILIES=tensor bash scripts/gpu/families.sh)
# Optional: KP_FAMILIES="conv logic gru" (which families, of conv logic gru tensor optim; optim runs
# bench-optim and peer-optim.py), KP_FAMILIES_TUNE_BUDGET (seconds per kernel, default 15; 0 skips
# the tune), KP_FAMILIES_DEADLINE (seconds after the start by which everything is packed, default
# 560).
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin families /tmp/kp-families-out results
kp_deadline "${KP_FAMILIES_DEADLINE:-560}"
families=${KP_FAMILIES:-"conv logic gru"}
budget=${KP_FAMILIES_TUNE_BUDGET:-15}
kp_setup
kp_build_here "$res/build.log"
$kp --device nvidia peak | tail -12

for f in $families; do
  step "nvidia: verify $f"
  # The tensor family builds a program per op, dtype and layout class: minutes on NVIDIA.
  timeout "$(cap 400)" $kp --device nvidia verify "$f" >"$res/verify-$f.txt" 2>&1
  tail -1 "$res/verify-$f.txt"
  grep -v ' PASS$' "$res/verify-$f.txt" | grep -E '^[a-z]+\.' | head -20
done

for f in $families; do
  step "nvidia: bench-$f"
  timeout "$(cap 150)" "build-gpu/bin/bench-$f" --device nvidia --json "$res/bench-$f.json" ||
    echo "bench-$f failed"
done

if (( budget > 0 )); then
  tuned="$res/tuned-nvidia.yaml"
  for f in $families; do
    case $f in
      conv) kernels="conv.im2col conv.conv2d" ;;
      logic) kernels="logic.forward logic.backward logic.eval_packed" ;;
      tensor) kernels="tensor.add tensor.exp tensor.sum" ;;
      optim) kernels="optim.adamw optim.clip_grad_norm" ;;
      *) kernels="" ;;
    esac
    for k in $kernels; do
      step "nvidia: tune $k (budget $budget s)"
      timeout "$(cap $(( budget * 3 )))" $kp --device nvidia tune "$k" --budget "$budget" \
        --match arch --write "$tuned" | grep -v '^  .*\]  ' | tail -4 || true
    done
    if [[ -n "$kernels" && -f "$tuned" ]]; then
      step "nvidia: bench-$f with the tuned values"
      timeout "$(cap 150)" "build-gpu/bin/bench-$f" --device nvidia --manifest "$tuned" \
        --json "$res/bench-$f-tuned.json" || echo "bench-$f (tuned) failed"
    fi
  done
fi

for f in $families; do
  [[ -f "bench/peers/peer-$f.py" ]] || continue
  args=()
  [[ $f == tensor ]] && args=(--bench build-gpu/bin/bench-tensor --device nvidia)
  step "peer-$f"
  PYTHONUNBUFFERED=1 timeout "$(cap 150)" python3 "bench/peers/peer-$f.py" "${args[@]}" \
    --json "$res/peer-$f-torch.json" || echo "peer-$f failed"
done

kp_pack
