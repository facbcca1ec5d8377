#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The built-in Hopper blas entry before and after 2026-11-26 (#25), side by side in one call of the
# device tool: bench-blas with today's built-in manifest (one clblast.* set for blas.gemm and
# blas.gemm_batched, no narrow set) and with the earlier one restored by a manifest (blas.gemm
# with CLBlast's own XGEMM_MIN_INDIRECT_SIZE, blas.gemm_batched with 384, both with the narrow
# set tuned at 256 x 6144 x 2048); then
# bench-cnn-layers and the same calls in PyTorch (peer-cnn-layers.py).
#   device run:  carry [".gpu"], command: bash scripts/gpu/blas-sets.sh  (KP_BLAS_ROUNDS: alternations, 1)
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin blas-sets /tmp/kp-blas-sets-out results
kp_setup
kp_build_here "$res/build.log"
old=$res/earlier-hopper-blas.yaml
cat >"$old" <<'YAML'
kernelport: 1
tuning:
  - match: { vendor: nvidia, arch: sm_90 }
    kernels:
      blas.gemm: &narrow { clblast.GemmRoutine.XGEMM_MIN_INDIRECT_SIZE: 0, narrow.max_dim: 256, narrow.Xgemm.GEMMK: 0, narrow.Xgemm.KREG: 1, narrow.Xgemm.KWG: 32, narrow.Xgemm.KWI: 2, narrow.Xgemm.MDIMA: 32, narrow.Xgemm.MDIMC: 32, narrow.Xgemm.MWG: 128, narrow.Xgemm.NDIMB: 8, narrow.Xgemm.NDIMC: 8, narrow.Xgemm.NWG: 32, narrow.Xgemm.SA: 1, narrow.Xgemm.SB: 1, narrow.Xgemm.STRM: 1, narrow.Xgemm.STRN: 0, narrow.Xgemm.VWM: 2, narrow.Xgemm.VWN: 4 }
YAML
printf '      blas.gemm_batched: { clblast.GemmRoutine.XGEMM_MIN_INDIRECT_SIZE: 384, narrow.max_dim: 256, narrow.Xgemm.GEMMK: 0, narrow.Xgemm.KREG: 1, narrow.Xgemm.KWG: 32, narrow.Xgemm.KWI: 2, narrow.Xgemm.MDIMA: 32, narrow.Xgemm.MDIMC: 32, narrow.Xgemm.MWG: 128, narrow.Xgemm.NDIMB: 8, narrow.Xgemm.NDIMC: 8, narrow.Xgemm.NWG: 32, narrow.Xgemm.SA: 1, narrow.Xgemm.SB: 1, narrow.Xgemm.STRM: 1, narrow.Xgemm.STRN: 0, narrow.Xgemm.VWM: 2, narrow.Xgemm.VWN: 4 }\n' >>"$old"
for round in $(seq 1 "${KP_BLAS_ROUNDS:-1}"); do
  step "bench-blas, today's built-in entry (round $round)"
  timeout "$(cap 100)" build-gpu/bin/bench-blas --device nvidia --json "$res/blas-today-$round.json" |
    grep -E 'blas\.gemm|CASE'
  step "bench-blas, the earlier entry (round $round)"
  timeout "$(cap 100)" build-gpu/bin/bench-blas --device nvidia --manifest "$old" \
    --json "$res/blas-earlier-$round.json" | grep -E 'blas\.gemm|CASE'
done
step "bench-cnn-layers and PyTorch's same calls"
timeout "$(cap 60)" build-gpu/bin/bench-cnn-layers --device nvidia --json "$res/cnn-layers.json" |
  grep -E 'all layers'
PYTHONUNBUFFERED=1 timeout "$(cap 60)" python3 bench/peers/peer-cnn-layers.py \
  --json "$res/peer-cnn-layers.json" >/dev/null && python3 bench/peers/peer-cnn-layers.py \
  --compare "$res/cnn-layers.json" "$res/peer-cnn-layers.json"
kp_pack
