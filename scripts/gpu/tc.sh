#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tc.gemm's GPU run, in one call of the device tool: build, verify tc (and blas.gemm with the TF32
# routing of bench/manifests/tc-route.yaml), bench-tc, a short tune of tc.gemm with bench-tc again
# on the tuned values, then bench/peers/peer-tc.py (cuBLAS through PyTorch). One tarball and one
# log land in $OUT.
#   device run:  carry [".gpu"], command: bash scripts/gpu/tc.sh
# Always: blas.gemm's f16 products (routed through tc.gemm) verified on awkward sizes and timed.
# Optional: KP_TC_BENCH=0 (skip bench-tc and peer-tc.py),
# KP_TC_SWEEP="BM,BN,BK,WM,WN,LDSM[,BT[,BK_X3[,STAGES[,v]]]] ..." (tile sets timed at 4096^3 before
# bench-tc, with ptxas's register and spill counts where a ptxas is found; sets ending in ",v" are
# also verified), KP_TC_WG_SWEEP="WG_BM,WG_BN,WG_BK,WG_STAGES,WG_LAG[,v] ..." (the same for the
# wgmma kernel, WGMMA 1, tf32 at 4096^3 and 8192^3), KP_TC_CEILINGS=1
# (bench/probes/tc-ceilings.c: the copies and the products timed apart), KP_TC_WG_CEILINGS (its
# --wgmma probes, below), KP_TC_CLUSTER_PROBE=1 (bench/probes/tc-cluster-probe.c: whether clusters
# launch), KP_TC_CONV=1 (also verify conv and run bench-conv), KP_TC_TUNE_BUDGET (seconds, default
# 90; 0 skips the tune), KP_TC_DEADLINE (seconds after the start by which everything is packed,
# default 560).
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin tc /tmp/kp-tc-out results
kp_deadline "${KP_TC_DEADLINE:-560}"
budget=${KP_TC_TUNE_BUDGET:-90}
kp_setup
kp_build_here "$res/build.log"

step "nvidia: verify tc"
timeout "$(cap 180)" $kp --device nvidia verify tc | tee "$res/verify-tc.txt" | tail -40
if [[ -f bench/manifests/tc-route.yaml ]]; then
  step "nvidia: verify blas with the TF32 routing manifest"
  timeout "$(cap 120)" $kp --device nvidia --manifest bench/manifests/tc-route.yaml verify blas.gemm |
    tee "$res/verify-blas-routed.txt" | tail -30
  $kp --device nvidia --manifest bench/manifests/tc-route.yaml explain blas.gemm |
    tee "$res/explain-blas-routed.txt"
fi

step "nvidia: blas.gemm in f16 (through tc.gemm with no manifest: FP32 accumulation, f16 C)"
$kp --device nvidia devices | grep -E '^\*|fp16' | tee "$res/devices.txt"
$kp --device nvidia explain blas.gemm | grep -E '^ *path' | tee "$res/explain-blas.txt"
for z in one prime views colmajor vector small 1031x2053x1019:nt 1024x1024x1024:tt; do
  timeout "$(cap 60)" $kp --device nvidia verify blas.gemm --size "f16-$z" | grep -E '^blas|checks'
done | tee "$res/verify-blas-f16.txt"
for z in blas.gemm:f16-4096 blas.gemm:f16-8192 tc.gemm:4096-halfc tc.gemm:8192-halfc; do
  timeout "$(cap 60)" $kp --device nvidia bench "${z%%:*}" --size "${z#*:}" | grep -E '^(blas|tc)\.'
done | tee "$res/bench-blas-f16.txt"

if [[ -n "${KP_TC_SWEEP:-}" ]]; then
  step "nvidia: tc.gemm tile sets (BM,BN,BK,WM,WN,LDSM,BT,BK_X3,STAGES) at 4096^3"
  for set in $KP_TC_SWEEP; do
    IFS=, read -r bm bn bk wm wn ldsm bt bkx3 stages check <<<"$set"
    m="$res/sweep.yaml"
    {
      printf 'kernelport: 1\ntuning:\n  - match: { vendor: nvidia, arch: sm_90, name: NVIDIA }\n    kernels:\n'
      printf '      tc.gemm: { BM: %s, BN: %s, BK: %s, WM: %s, WN: %s, LDSM: %s, BT: %s, BK_X3: %s, STAGES: %s }\n' \
        "$bm" "$bn" "$bk" "$wm" "$wn" "$ldsm" "${bt:-0}" "${bkx3:-0}" "${stages:-0}"
    } >"$m"
    # More specific than the default manifest's Hopper entry, so that it wins.
    for prec in ${KP_TC_SWEEP_PRECS:-tf32 tf32x3}; do
      printf '%-26s %-7s ' "$set" "$prec"
      timeout "$(cap 60)" $kp --device nvidia --manifest "$m" bench tc.gemm --size "4096-$prec" 2>&1 |
        awk '/^tc.gemm/ {print $4 " us", $6 " GFLOP/s"} /rror|FAIL/ {print}' | head -3
      python3 bench/probes/ptx-regs.py "$XDG_CACHE_HOME" 1
    done
    if [[ "${check:-}" == v ]]; then
      step "nvidia: verify tc with $set"
      timeout "$(cap 120)" $kp --device nvidia --manifest "$m" verify tc | tail -3
    fi
  done
  rm -f "$res/sweep.yaml"
fi

if [[ -n "${KP_TC_WG_SWEEP:-}" ]]; then
  step "nvidia: tc.gemm on wgmma (WG_BM,WG_BN,WG_BK,WG_STAGES,WG_LAG), tf32"
  for set in $KP_TC_WG_SWEEP; do
    IFS=, read -r bm bn bk stages lag check <<<"$set"
    m="$res/wg-sweep.yaml"
    {
      printf 'kernelport: 1\ntuning:\n  - match: { vendor: nvidia, arch: sm_90, name: NVIDIA }\n    kernels:\n'
      printf '      tc.gemm: { WGMMA: 1, WG_BM: %s, WG_BN: %s, WG_BK: %s, WG_STAGES: %s, WG_LAG: %s }\n' \
        "$bm" "$bn" "$bk" "$stages" "$lag"
    } >"$m"
    for size in 4096 8192; do
      printf '%-18s %-5s ' "$set" "$size"
      timeout "$(cap 60)" $kp --device nvidia --manifest "$m" bench tc.gemm --size "$size-tf32" 2>&1 |
        awk '/^tc.gemm/ {print $4 " us", $6 " GFLOP/s"} /rror|FAIL/ {print}' | head -3
    done
    python3 bench/probes/ptx-regs.py "$XDG_CACHE_HOME" 1
    if [[ "${check:-}" == v ]]; then
      step "nvidia: verify tc with WGMMA $set"
      timeout "$(cap 120)" $kp --device nvidia --manifest "$m" verify tc | tail -12
    fi
  done
  rm -f "$res/wg-sweep.yaml"
fi

if [[ "${KP_TC_CLUSTER_PROBE:-0}" == 1 ]]; then
  step "nvidia: tc-cluster-probe"
  timeout "$(cap 60)" build-gpu/bin/tc-cluster-probe --src . | tee "$res/tc-cluster-probe.txt"
fi
if [[ "${KP_TC_CEILINGS:-0}" == 1 ]]; then
  step "nvidia: tc-ceilings"
  timeout "$(cap 120)" build-gpu/bin/tc-ceilings --src . | tee "$res/tc-ceilings.txt"
fi
# KP_TC_WG_CEILINGS="-D BM=256 -D BN=128 -D BK=8 -D STAGES=4 -D LAG=1;...": tc_gemm_wg's probes.
if [[ -n "${KP_TC_WG_CEILINGS:-}" ]]; then
  step "nvidia: tc-ceilings --wgmma"
  IFS=';' read -ra wg_sets <<<"$KP_TC_WG_CEILINGS"
  for set in "${wg_sets[@]}"; do
    timeout "$(cap 120)" build-gpu/bin/tc-ceilings --src . --wgmma "$set" |
      tee -a "$res/tc-ceilings-wgmma.txt"
  done
fi

if [[ "${KP_TC_BENCH:-1}" == 1 ]]; then
  step "nvidia: bench-tc"
  timeout "$(cap 200)" build-gpu/bin/bench-tc --device nvidia --json "$res/bench-tc.json" ||
    echo "bench-tc failed"
fi

if (( budget > 0 )); then
  step "nvidia: tune tc.gemm (budget $budget s)"
  timeout "$(cap $(( budget + 60 )))" $kp --device nvidia tune tc.gemm --budget "$budget" \
    --match arch --write "$res/tuned-tc.yaml" | grep -v '^  .*\]  ' | tail -6 || true
  if [[ -f "$res/tuned-tc.yaml" ]]; then
    step "nvidia: bench-tc with the tuned values"
    timeout "$(cap 200)" build-gpu/bin/bench-tc --device nvidia --manifest "$res/tuned-tc.yaml" \
      --json "$res/bench-tc-tuned.json" || echo "bench-tc (tuned) failed"
  fi
fi

if [[ "${KP_TC_CONV:-0}" == 1 ]]; then
  step "nvidia: verify conv, bench-conv (conv.conv2d's GEMMs through blas.gemm)"
  timeout "$(cap 120)" $kp --device nvidia verify conv | tail -2
  timeout "$(cap 150)" build-gpu/bin/bench-conv --device nvidia --json "$res/bench-conv.json" ||
    echo "bench-conv failed"
  step "nvidia: verify conv, bench-conv with blas.gemm routed through tc.gemm in tf32x3"
  x3=bench/manifests/tc-route-x3.yaml
  timeout "$(cap 120)" $kp --device nvidia --manifest "$x3" verify conv | tail -2
  timeout "$(cap 150)" build-gpu/bin/bench-conv --device nvidia --manifest "$x3" \
    --json "$res/bench-conv-tf32x3.json" || echo "bench-conv (tf32x3) failed"
fi

if [[ "${KP_TC_BENCH:-1}" == 1 ]]; then
  step "peer-tc"
  PYTHONUNBUFFERED=1 timeout "$(cap 150)" python3 bench/peers/peer-tc.py \
    --json "$res/peer-tc-torch.json" || echo "peer-tc failed"
fi

kp_pack
