#!/usr/bin/env bash
# The kernel families' GPU run, in one call of the device tool: build, verify the conv, logic and
# gru families on the NVIDIA device, bench-conv / bench-logic / bench-gru with the shipped
# manifest, a short tune of the families' main kernels, the benches again with the tuned values,
# then the PyTorch peers (peer-conv.py, peer-logic.py, peer-gru.py). One tarball and one log land
# in $OUT (the device tool brings back at most 8 files).
#   device run:  carry [".gpu"], command: bash bench/gpu-families.sh
# Optional: KP_FAMILIES="conv logic gru" (which families), KP_FAMILIES_TUNE_BUDGET (seconds per
# kernel, default 15; 0 skips the tune), KP_FAMILIES_DEADLINE (seconds after the start by which
# everything is packed, default 560).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
out=${OUT:-/tmp/kp-families-out}
res="$out/results"
mkdir -p "$res"
exec > >(tee "$out/gpu-families.log") 2>&1
families=${KP_FAMILIES:-"conv logic gru"}
budget=${KP_FAMILIES_TUNE_BUDGET:-15}
started=$(date +%s)
deadline=$(( started + ${KP_FAMILIES_DEADLINE:-560} ))
step() { echo; echo "== $* ($(( $(date +%s) - started )) s)"; }
# A step's time limit: its own cap, shortened so that it ends 20 s before the deadline.
cap() {
  local l=$(( deadline - $(date +%s) - 20 ))
  (( l < 1 )) && l=1
  (( l < $1 )) && echo "$l" || echo "$1"
}

step setup
# shellcheck disable=SC1091
[[ -f .gpu/setup.sh ]] && source .gpu/setup.sh >/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv || true
export XDG_CACHE_HOME=/tmp/kp-cache POCL_CACHE_DIR=/tmp/kp-pocl-cache KP_LOG=warn

step build
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DKP_BUILD_TESTS=OFF >/dev/null &&
  cmake --build build-gpu -- -j"$(nproc)" >"$res/build.log" 2>&1 ||
  { tail -40 "$res/build.log"; exit 1; }
kp=build-gpu/bin/kernelport
$kp --device nvidia peak | tail -12

for f in $families; do
  step "nvidia: verify $f"
  timeout "$(cap 120)" $kp --device nvidia verify "$f" >"$res/verify-$f.txt" 2>&1
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
  [[ -f "bench/peer-$f.py" ]] || continue
  step "peer-$f"
  PYTHONUNBUFFERED=1 timeout "$(cap 150)" python3 "bench/peer-$f.py" \
    --json "$res/peer-$f-torch.json" || echo "peer-$f failed"
done

step pack
tar -C "$out" -czf "$out/results.tar.gz" results
rm -rf "$res"
echo "done in $(( $(date +%s) - started )) s"
