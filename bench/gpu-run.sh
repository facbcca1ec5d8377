#!/usr/bin/env bash
# The GPU run: on the lent GPU machine, in one call of the device tool, build Kernelport and run
# peak, verify, bench and tune on the NVIDIA device and on PoCL, then every bench/ program, and
# leave everything under $OUT (one tarball and one log: the tool brings back at most 8 files).
#   device run:  carry [".gpu"], command: bash bench/gpu-run.sh
# Optional: KP_GPU_RUN_TUNE_BUDGET (seconds per kernel, default 20), KP_GPU_RUN_ONLY (kernel glob),
# KP_GPU_RUN_BLAS_TUNE=0 (skip the long blas.gemm tune on the GPU), KP_GPU_RUN_BLAS_BUDGET (its
# seconds, default 240), KP_GPU_RUN_DEADLINE (seconds after the start by which everything is
# packed, default 560: the device tool stops a command at 600 s and then nothing comes back).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
out=${OUT:-/tmp/kp-gpu-out}
res="$out/results"
mkdir -p "$res"
log="$out/gpu-run.log"
exec > >(tee "$log") 2>&1
budget=${KP_GPU_RUN_TUNE_BUDGET:-20}
pattern=${KP_GPU_RUN_ONLY:-}
started=$(date +%s)
deadline=$(( started + ${KP_GPU_RUN_DEADLINE:-560} ))
step() { echo; echo "== $* ($(( $(date +%s) - started )) s)"; }
# A step's time limit: its own cap, shortened so that it ends 20 s before the deadline.
cap() {
  local l=$(( deadline - $(date +%s) - 20 ))
  (( l < 1 )) && l=1
  (( l < $1 )) && echo "$l" || echo "$1"
}

step setup
# shellcheck disable=SC1091
source .gpu/setup.sh >/dev/null
clinfo -l
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv || true
export XDG_CACHE_HOME=/tmp/kp-cache POCL_CACHE_DIR=/tmp/kp-pocl-cache KP_LOG=warn

step build
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DKP_BUILD_TESTS=OFF >/dev/null &&
  cmake --build build-gpu -- -j"$(nproc)" >"$res/build.log" 2>&1 || { tail -40 "$res/build.log"; exit 1; }
kp=build-gpu/bin/kernelport

# Every long step runs under `timeout "$(cap N)"`: past the deadline it is cut short, so that the
# results are still packed and brought back.
for dev in nvidia pocl; do
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

step "bench/ programs"
for b in build-gpu/bin/bench-*; do
  [[ -x "$b" ]] || continue
  name=$(basename "$b")
  for dev in nvidia pocl; do
    timeout "$(cap 240)" "$b" --device "$dev" --json "$res/$name-$dev.json" ||
      echo "$name on $dev failed"
  done
done

blas=build-gpu/bin/bench-blas
if [[ -x "$blas" ]]; then
  # Fresh cache directories (Kernelport's, PoCL's, the NVIDIA driver's), used by both runs: the
  # first run pays every compile (cold), the second shows what a warm cache leaves.
  for dev in nvidia pocl; do
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

if ls bench/peer-*.py >/dev/null 2>&1; then
  for p in bench/peer-*.py; do
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
if [[ "${KP_GPU_RUN_BLAS_TUNE:-1}" == 0 || ! -x "$blas" ]]; then
  step "blas.gemm tune skipped (KP_GPU_RUN_BLAS_TUNE=0 or no bench-blas)"
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
  step "blas summary (bench/compare.py, also in results/compare-blas.md)"
  peer=()
  [[ -f "$res/peer-blas-torch.json" ]] && peer=("$res/peer-blas-torch.json")
  first_calls() {
    ls "$res/bench-blas-first-cold-$1.json" "$res/bench-blas-first-warm-$1.json" 2>/dev/null
  }
  {
    if [[ -f "$res/bench-blas-nvidia.json" ]]; then
      mapfile -t first < <(first_calls nvidia)
      python3 bench/compare.py "$res/bench-blas-nvidia.json" "${peer[@]}" \
        ${first[@]:+--first-call "${first[@]}"}
      echo
    fi
    if [[ -f "$res/bench-blas-tuned-nvidia.json" ]]; then
      python3 bench/compare.py "$res/bench-blas-tuned-nvidia.json" "${peer[@]}"
      echo
    fi
    if [[ -f "$res/bench-blas-pocl.json" ]]; then
      mapfile -t first < <(first_calls pocl)
      python3 bench/compare.py "$res/bench-blas-pocl.json" ${first[@]:+--first-call "${first[@]}"}
    fi
  } | tee "$res/compare-blas.md"
fi

step pack
tar -C "$out" -czf "$out/results.tar.gz" results
rm -rf "$res"
echo "done in $(( $(date +%s) - started )) s"
