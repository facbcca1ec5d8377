#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU run for CLBlast's GEMM parameters: measure a few starting sets (from CLBlast's own
# database entries for earlier NVIDIA GPUs), tune the Xgemm parameters from the fastest with
# `kernelport tune`, then run bench-blas with the result. One call of the device tool:
#   device run:  carry [".gpu"], command: bash scripts/gpu/tune-blas.sh
# KP_TUNE_BUDGET (seconds for the Xgemm tune, default 240), KP_TUNE_SIZE (its sample size, default
# 4096), KP_TUNE_DIRECT_BUDGET (seconds for the second phase, default 150): CLBlast's direct kernel
# and the direct/indirect threshold, tuned at n = 1024 where the indirect kernel's large tiles
# leave most of the GPU idle.
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin tune-blas /tmp/kp-gpu-out results
budget=${KP_TUNE_BUDGET:-240}
direct_budget=${KP_TUNE_DIRECT_BUDGET:-150}
size=${KP_TUNE_SIZE:-4096}
kp_setup
kp_build_here "$res/build.log"

step "starting sets"
best=""
best_s=1e9
for f in bench/manifests/xgemm-*.yaml; do
  name=$(basename "$f" .yaml)
  if timeout 120 $kp --device nvidia --manifest "$f" --json bench blas.gemm --size "$size" \
      >"$res/start-$name.json"; then
    s=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print(r["median_s"] if r["status"]=="KP_OK" else 1e9)' "$res/start-$name.json")
  else
    s=1e9
  fi
  echo "$name: median $s s at $size"
  if python3 -c "import sys; sys.exit(0 if float('$s') < float('$best_s') else 1)"; then
    best=$f
    best_s=$s
  fi
done
echo "fastest start: ${best:-none (CLBlast defaults)} ($best_s s)"
cp "${best:-/dev/null}" "$res/tuned-nvidia.yaml" 2>/dev/null || printf 'kernelport: 1\n' >"$res/tuned-nvidia.yaml"

step "tune clblast.Xgemm.* at $size from it (budget $budget s)"
timeout $(( budget + 90 )) $kp --device nvidia --manifest "$res/tuned-nvidia.yaml" tune blas.gemm \
  --size "$size" --only 'clblast.Xgemm.*' --budget "$budget" --match arch \
  --write "$res/tuned-nvidia.yaml" | tee "$res/tune-blas-nvidia.txt" | grep -v '^  .*\]  '

step "tune clblast.XgemmDirect.* and the threshold at 1024 (budget $direct_budget s)"
timeout $(( direct_budget + 90 )) $kp --device nvidia --manifest "$res/tuned-nvidia.yaml" tune \
  blas.gemm --size 1024 --only 'clblast.XgemmDirect.*,clblast.GemmRoutine.*' --budget "$direct_budget" --match arch \
  --write "$res/tuned-nvidia.yaml" | tee "$res/tune-blas-direct-nvidia.txt" | grep -v '^  .*\]  '

step "bench-blas with the tuned manifest"
timeout 240 build-gpu/bin/bench-blas --device nvidia --manifest "$res/tuned-nvidia.yaml" \
  --json "$res/bench-blas-tuned-nvidia.json"
PYTHONUNBUFFERED=1 timeout 120 python3 bench/peers/peer-blas.py --json "$res/peer-blas-torch.json" >/dev/null
python3 bench/peers/compare.py "$res/bench-blas-tuned-nvidia.json" "$res/peer-blas-torch.json" |
  tee "$res/compare-blas-tuned.md"
cat "$res/tuned-nvidia.yaml"

kp_pack
