#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Fashion-MNIST CNN's conv-family calls (#25) on the NVIDIA device, one route at a time, beside
# PyTorch's same calls, in one call of the device tool: bench-cnn-layers with the default tuning
# and with each route of KP_CONV_ROUTES (NAME=TUNING;...: default, GEMM tiled, ALGO im2col, ALGO im2col
# with GEMM tiled), peer-cnn-layers.py, the joined tables; then two epochs of the example per route.
# Needs the dataset's .deb in .gpu, as train.sh.
#   device run:  carry [".gpu"], command: bash scripts/gpu/conv-routes.sh
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin conv-routes /tmp/kp-conv-routes-out results
kp_setup
kp_build_here "$res/build.log"
manifest() { # NAME KEY: VALUE[, KEY: VALUE]
  local m=$res/route-$1.yaml k
  printf 'kernelport: 1\ntuning:\n  - match: { vendor: nvidia }\n    kernels:\n' >"$m"
  for k in conv.conv2d conv.conv2d_backward_data conv.conv2d_backward_weight; do
    printf '      %s: { %s }\n' "$k" "$2" >>"$m"
  done
  echo "$m"
}
routes=${KP_CONV_ROUTES:-"default=;gemm-tiled=GEMM: tiled;im2col=ALGO: im2col;im2col-tiled=ALGO: im2col, GEMM: tiled"}
IFS=';' read -r -a list <<<"$routes"
step "peer: PyTorch's calls"
PYTHONUNBUFFERED=1 timeout "$(cap 120)" python3 bench/peers/peer-cnn-layers.py \
  --json "$res/peer-cnn-layers.json" || echo "peer failed"
for r in "${list[@]}"; do
  name=${r%%=*} spec=${r#*=} m=()
  [[ -n $spec ]] && m=(--manifest "$(manifest "$name" "$spec")")
  step "bench-cnn-layers, route $name (${spec:-default tuning})"
  timeout "$(cap 90)" build-gpu/bin/bench-cnn-layers --device nvidia "${m[@]}" \
    --json "$res/cnn-layers-$name.json" | grep -vE '^$'
  python3 bench/peers/peer-cnn-layers.py --compare "$res/cnn-layers-$name.json" \
    "$res/peer-cnn-layers.json"
done
for r in "${list[@]}"; do
  name=${r%%=*} m=()
  [[ -f $res/route-$name.yaml ]] && m=(--manifest "$res/route-$name.yaml")
  step "fashion-mnist, 2 epochs, route $name"
  KP_MANIFEST=${m[1]:-} timeout "$(cap 60)" build-gpu/bin/fashion-mnist --device nvidia --epochs 2 \
    --test-limit 2000 | grep -E '^epoch'
done
kp_pack
