#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The gru family's GPU run, shorter than run.sh: build, verify gru.rollout and gru.rollout_grid on
# the GPU (and gru.rollout on PoCL), sweep their tunables at the seed size, then bench-gru (GPU
# with the built-in manifest's entries, GPU with bench/manifests/gru-one-group.yaml, PoCL),
# kernelport bench gru, bench/peers/peer-gru.py and bench/peers/compare-gru.py.
# Everything lands in $OUT (at most 8 files come back).
#   device run:  carry [".gpu"], command: bash scripts/gpu/gru.sh
# Optional: KP_GRU_SWEEP="WG,LANES,VEC ..." (gru.rollout's sets to time; "" skips),
# KP_GRID_SWEEP="WG,LANES,GROUPS,CACHE ..." (gru.rollout_grid's), KP_GRU_PEER=0 (skip peer-gru.py),
# KP_GRU_KERNELS=0 (skip kernelport bench gru).
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin gru /tmp/kp-gru-out
kp_setup
kp_build_here "$out/build.log"
rm -f "$out/build.log"

for dev in nvidia pocl; do
  step "$dev: verify gru.rollout"
  timeout 120 $kp --device $dev verify gru.rollout | tail -40
done
step "nvidia: verify gru.rollout_grid, and gru.rollout with one work-group per trajectory"
timeout 120 $kp --device nvidia verify gru.rollout_grid | tail -40
timeout 120 $kp --device nvidia --manifest bench/manifests/gru-one-group.yaml verify gru.rollout | tail -3
$kp --device nvidia explain gru.rollout | grep -i path
$kp --device nvidia --manifest bench/manifests/gru-one-group.yaml explain gru.rollout | grep -i path
$kp --device nvidia explain gru.rollout_grid | grep -i path

step "nvidia: gru.rollout tunables at the seed size"
sweep=${KP_GRU_SWEEP-"256,16,1 256,8,4 256,16,2 512,16,1 256,32,1 256,8,1 512,8,2"}
for set in $sweep; do
  IFS=, read -r wg lanes vec <<<"$set"
  m="$out/sweep-$wg-$lanes-$vec.yaml"
  {
    printf 'kernelport: 1\ntuning:\n  - match: { vendor: nvidia }\n    kernels:\n'
    printf '      gru.rollout: { WG: %s, LANES: %s, VEC: %s }\n' "$wg" "$lanes" "$vec"
  } >"$m"
  printf '%-14s ' "$set"
  timeout 60 $kp --device nvidia --manifest "$m" bench gru.rollout --size seed 2>&1 |
    awk '/gru.rollout +seed/ {print $4 " us"} /rror/ {print}'
  rm -f "$m"
done

step "nvidia: gru.rollout_grid tunables at the seed size (and H 1024)"
sweep=${KP_GRID_SWEEP-"256,8,0,1 256,8,0,0 128,8,0,1 128,16,0,1 256,16,0,1 512,16,0,1 256,8,16,1 64,8,0,1"}
for set in $sweep; do
  IFS=, read -r wg lanes groups cache <<<"$set"
  m="$out/sweep-grid-$wg-$lanes-$groups-$cache.yaml"
  {
    printf 'kernelport: 1\ntuning:\n  - match: { vendor: nvidia }\n    kernels:\n'
    printf '      gru.rollout_grid: { WG: %s, LANES: %s, GROUPS: %s, CACHE: %s }\n' "$wg" "$lanes" \
      "$groups" "$cache"
  } >"$m"
  printf '%-14s ' "$set"
  for size in seed h1024; do
    timeout 60 $kp --device nvidia --manifest "$m" bench gru.rollout_grid --size $size 2>&1 |
      awk -v s=$size '$1 == "gru.rollout_grid" && $2 == s {printf "%s %s us  ", s, $4} /rror/ {print}'
  done
  echo
  rm -f "$m"
done

step "bench-gru, kernelport bench gru"
timeout 150 build-gpu/bin/bench-gru --device nvidia --json "$out/bench-gru-nvidia.json"
timeout 150 build-gpu/bin/bench-gru --device nvidia --manifest bench/manifests/gru-one-group.yaml \
  --json "$out/bench-gru-nvidia-one-group.json"
timeout 90 build-gpu/bin/bench-gru --device pocl --quick --json "$out/bench-gru-pocl.json"
if [[ "${KP_GRU_KERNELS:-1}" != 0 ]]; then
  timeout 150 $kp --device nvidia bench gru --json "$out/bench-nvidia.json" | tail -20
fi

if [[ "${KP_GRU_PEER:-1}" != 0 ]]; then
  step peer-gru
  PYTHONUNBUFFERED=1 timeout 180 python3 bench/peers/peer-gru.py --json "$out/peer-gru-torch.json"
fi

step compare-gru
args=(--gpu "$out/bench-gru-nvidia.json" --cpu "$out/bench-gru-pocl.json")
[[ -f "$out/peer-gru-torch.json" ]] && args+=(--peer "$out/peer-gru-torch.json")
[[ -f "$out/bench-nvidia.json" ]] && args+=(--kernels "$out/bench-nvidia.json")
python3 bench/peers/compare-gru.py "${args[@]}" | tee "$out/compare-gru.md"
if [[ -f "$out/bench-gru-nvidia-one-group.json" ]]; then
  echo; echo "with one work-group per trajectory (bench/manifests/gru-one-group.yaml):"
  args[1]="$out/bench-gru-nvidia-one-group.json"
  python3 bench/peers/compare-gru.py "${args[@]}" | tee "$out/compare-gru-one-group.md"
fi
echo "done in $(( $(date +%s) - started )) s"
