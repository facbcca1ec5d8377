#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU run: on the lent GPU machine, in one call of the device tool, build Kernelport and run
# peak, verify, bench and tune on the NVIDIA device and on PoCL, then every bench program
# (bench/programs/) and peer (bench/peers/), and leave everything under $OUT (one tarball and one
# log: the tool brings back at most 8 files).
#   device run:  carry [".gpu"], command: bash scripts/gpu/run.sh
# Optional: KP_GPU_RUN_TUNE_BUDGET (seconds per kernel, default 20), KP_GPU_RUN_ONLY (kernel glob),
# KP_GPU_RUN_BLAS_TUNE=0 (skip the long blas.gemm tune on the GPU), KP_GPU_RUN_BLAS_BUDGET (its
# seconds, default 240), KP_GPU_RUN_DEADLINE (seconds after the start by which everything is
# packed, default 560: the device tool stops a command at 600 s and then nothing comes back),
# KP_GPU_RUN_DEVICES (default "nvidia pocl"; "pocl" alone runs the PoCL half on any machine).
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin run /tmp/kp-gpu-out results
kp_deadline "${KP_GPU_RUN_DEADLINE:-560}"
budget=${KP_GPU_RUN_TUNE_BUDGET:-20}
pattern=${KP_GPU_RUN_ONLY:-}
devices=${KP_GPU_RUN_DEVICES:-nvidia pocl}
kp_setup
kp_build_here "$res/build.log"

# Every long step runs under `timeout "$(cap N)"`: past the deadline it is cut short, so that the
# results are still packed and brought back.
for dev in $devices; do
  step "$dev: devices, peak, verify"
  $kp --device "$dev" --json devices >"$res/devices-$dev.json"
  $kp --device "$dev" peak --remeasure
  $kp --device "$dev" --json peak >"$res/peak-$dev.json"
  timeout "$(cap 600)" $kp --device "$dev" verify $pattern | tee "$res/verify-$dev.txt"
  timeout "$(cap 600)" $kp --device "$dev" --json verify $pattern >"$res/verify-$dev.json"

  step "$dev: bench with the shipped manifest"
  timeout "$(cap 600)" $kp --device "$dev" bench $pattern --json "$res/bench-$dev.json"

  step "$dev: tune (budget ${budget} s per kernel), then bench with the tuned values"
  timeout "$(cap 600)" $kp --device "$dev" tune $pattern --budget "$budget" --match arch \
    --write "$res/tuned-$dev.yaml" \
    | tee "$res/tune-$dev.txt" | grep -v '^  .*\]  ' || true
  if [[ -f "$res/tuned-$dev.yaml" ]]; then
    timeout "$(cap 600)" $kp --device "$dev" --manifest "$res/tuned-$dev.yaml" bench $pattern \
      --json "$res/bench-tuned-$dev.json"
  fi
done

step "bench programs (build-gpu/bin/bench-*)"
for b in build-gpu/bin/bench-*; do
  [[ -x "$b" ]] || continue
  name=$(basename "$b")
  for dev in $devices; do
    timeout "$(cap 240)" "$b" --device "$dev" --json "$res/$name-$dev.json" ||
      echo "$name on $dev failed"
  done
done

blas=build-gpu/bin/bench-blas
if [[ -x "$blas" ]]; then
  # Fresh cache directories (Kernelport's, PoCL's, the NVIDIA driver's), used by both runs: the
  # first run pays every compile (cold), the second shows what a warm cache leaves.
  for dev in $devices; do
    step "$dev: bench-blas --first-call, cold then warm caches"
    fc=$(mktemp -d /tmp/kp-first-call.XXXXXX)
    for pass in cold warm; do
      XDG_CACHE_HOME="$fc/xdg" POCL_CACHE_DIR="$fc/pocl" CUDA_CACHE_PATH="$fc/nv" \
        timeout "$(cap 120)" "$blas" --device "$dev" --first-call \
        --json "$res/bench-blas-first-$pass-$dev.json" ||
        echo "bench-blas --first-call ($pass) on $dev failed"
    done
    rm -rf "$fc"
  done
fi

if ls bench/peers/peer-*.py >/dev/null 2>&1; then
  for p in bench/peers/peer-*.py; do
    [[ -f "$p" ]] || continue
    name=$(basename "$p" .py)
    step "$name"
    PYTHONUNBUFFERED=1 timeout "$(cap 180)" python3 "$p" --json "$res/$name-torch.json" ||
      echo "$name failed"
  done
fi

# The long blas.gemm tune on the GPU (CLBlast's parameters at n = 1024), merged into the same
# tuned manifest as the short tunes above, then bench-blas again with it. Its budget shrinks to
# what the deadline leaves after about 90 s for the tuned bench and packing.
blas_budget=${KP_GPU_RUN_BLAS_BUDGET:-240}
left=$(( deadline - $(date +%s) - 90 ))
(( left < blas_budget )) && blas_budget=$left
if [[ "${KP_GPU_RUN_BLAS_TUNE:-1}" == 0 || ! -x "$blas" || " $devices " != *" nvidia "* ]]; then
  step "blas.gemm tune skipped (KP_GPU_RUN_BLAS_TUNE=0, no bench-blas or no nvidia in the devices)"
elif (( blas_budget < 30 )); then
  step "blas.gemm tune skipped: ${left} s left before the deadline"
else
  step "nvidia: tune blas.gemm at 1024 (budget ${blas_budget} s), then bench-blas with it"
  timeout "$(cap $(( blas_budget + 60 )))" $kp --device nvidia tune blas.gemm --size 1024 \
    --budget "$blas_budget" --match arch --write "$res/tuned-nvidia.yaml" \
    | tee "$res/tune-blas-nvidia.txt" | grep -v '^  .*\]  ' || true
  if [[ -f "$res/tuned-nvidia.yaml" ]]; then
    timeout "$(cap 240)" "$blas" --device nvidia --manifest "$res/tuned-nvidia.yaml" \
      --json "$res/bench-blas-tuned-nvidia.json" || echo "bench-blas (tuned) on nvidia failed"
  fi
fi

if [[ -f "$res/bench-blas-nvidia.json" || -f "$res/bench-blas-pocl.json" ]]; then
  step "blas summary (bench/peers/compare.py, also in results/compare-blas.md)"
  peer=()
  [[ -f "$res/peer-blas-torch.json" ]] && peer=("$res/peer-blas-torch.json")
  first_calls() {
    ls "$res/bench-blas-first-cold-$1.json" "$res/bench-blas-first-warm-$1.json" 2>/dev/null
  }
  {
    if [[ -f "$res/bench-blas-nvidia.json" ]]; then
      mapfile -t first < <(first_calls nvidia)
      python3 bench/peers/compare.py "$res/bench-blas-nvidia.json" "${peer[@]}" \
        ${first[@]:+--first-call "${first[@]}"}
      echo
    fi
    if [[ -f "$res/bench-blas-tuned-nvidia.json" ]]; then
      python3 bench/peers/compare.py "$res/bench-blas-tuned-nvidia.json" "${peer[@]}"
      echo
    fi
    if [[ -f "$res/bench-blas-pocl.json" ]]; then
      mapfile -t first < <(first_calls pocl)
      python3 bench/peers/compare.py "$res/bench-blas-pocl.json" ${first[@]:+--first-call "${first[@]}"}
    fi
  } | tee "$res/compare-blas.md"
fi

kp_pack
