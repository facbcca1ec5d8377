#!/usr/bin/env bash
# The GPU run: on the lent GPU machine, in one call of the device tool, build Kernelport and run
# peak, verify, bench and tune on the NVIDIA device and on PoCL, then every bench/ program, and
# leave everything under $OUT (one tarball and one log: the tool brings back at most 8 files).
#   device run:  carry [".gpu"], command: bash bench/gpu-run.sh
# Optional: KP_GPU_RUN_TUNE_BUDGET (seconds per kernel, default 20), KP_GPU_RUN_ONLY (kernel glob).
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
step() { echo; echo "== $* ($(( $(date +%s) - started )) s)"; }

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

for dev in nvidia pocl; do
  step "$dev: devices, peak, verify"
  $kp --device "$dev" --json devices >"$res/devices-$dev.json"
  $kp --device "$dev" peak --remeasure
  $kp --device "$dev" --json peak >"$res/peak-$dev.json"
  $kp --device "$dev" verify $pattern | tee "$res/verify-$dev.txt"
  $kp --device "$dev" --json verify $pattern >"$res/verify-$dev.json"

  step "$dev: bench with the shipped manifest"
  $kp --device "$dev" bench $pattern --json "$res/bench-$dev.json"

  step "$dev: tune (budget ${budget} s per kernel), then bench with the tuned values"
  $kp --device "$dev" tune $pattern --budget "$budget" --match arch --write "$res/tuned-$dev.yaml" \
    | tee "$res/tune-$dev.txt" | grep -v '^  .*\]  ' || true
  if [[ -f "$res/tuned-$dev.yaml" ]]; then
    $kp --device "$dev" --manifest "$res/tuned-$dev.yaml" bench $pattern \
      --json "$res/bench-tuned-$dev.json"
  fi
done

step "bench/ programs"
for b in build-gpu/bin/bench-*; do
  [[ -x "$b" ]] || continue
  name=$(basename "$b")
  for dev in nvidia pocl; do
    "$b" --device "$dev" --json "$res/$name-$dev.json" || echo "$name on $dev failed"
  done
done
if ls bench/*.py >/dev/null 2>&1; then
  for p in bench/peer-*.py; do
    [[ -f "$p" ]] || continue
    name=$(basename "$p" .py)
    PYTHONUNBUFFERED=1 python3 "$p" --json "$res/$name-torch.json" || echo "$name failed"
  done
fi

step pack
tar -C "$out" -czf "$out/results.tar.gz" results
rm -rf "$res"
echo "done in $(( $(date +%s) - started )) s"
