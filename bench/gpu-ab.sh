#!/usr/bin/env bash
# A/B timing on the GPU machine, in one call of the device tool: the working tree against a base
# commit, or one manifest against another, the same `kernelport bench` items with both, alternating
# base and new for KP_AB_ROUNDS rounds, so that a drift of the machine shows as a spread rather
# than a ratio.
#   here:        git archive -o .gpu/base.tar <commit>   (without it, base is the working tree too)
#   device run:  carry [".gpu"], command: KP_AB_BENCH="kernel:size ..." bash bench/gpu-ab.sh
# Optional: KP_AB_ROUNDS (default 2), KP_AB_VERIFY (kernel patterns verified with the new build and
# manifest first), KP_AB_PEERS ("gru conv blas": bench/peer-*.py in the same call),
# KP_AB_BASE_MANIFEST and KP_AB_NEW_MANIFEST (a manifest for each side).
# Prints one line per item and round, then a table of the best median of each build and the
# ratio base / new (above 1: the new build is faster). Everything lands in $OUT.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
out=${OUT:-/tmp/kp-ab-out}
mkdir -p "$out"
exec > >(tee "$out/gpu-ab.log") 2>&1
started=$(date +%s)
step() { echo; echo "== $* ($(( $(date +%s) - started )) s)"; }

step setup
# shellcheck disable=SC1091
[[ -f .gpu/setup.sh ]] && source .gpu/setup.sh >/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv || true
export XDG_CACHE_HOME=/tmp/kp-cache POCL_CACHE_DIR=/tmp/kp-pocl-cache KP_LOG=warn

step build
build() { # SOURCE BUILD
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKP_BUILD_TESTS=OFF >/dev/null &&
    cmake --build "$2" -- -j"$(nproc)" >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
}
build . build-gpu
declare -A kp=([base]=build-gpu/bin/kernelport [new]=build-gpu/bin/kernelport)
if [[ -f .gpu/base.tar ]]; then
  rm -rf /tmp/kp-base && mkdir -p /tmp/kp-base && tar -xf .gpu/base.tar -C /tmp/kp-base
  build /tmp/kp-base /tmp/kp-base/build-gpu
  kp[base]=/tmp/kp-base/build-gpu/bin/kernelport
fi
rm -f "$out/build.log"
declare -A manifest=([base]="" [new]="")
[[ -n ${KP_AB_BASE_MANIFEST:-} ]] && manifest[base]="--manifest=$KP_AB_BASE_MANIFEST"
[[ -n ${KP_AB_NEW_MANIFEST:-} ]] && manifest[new]="--manifest=$KP_AB_NEW_MANIFEST"

for pattern in ${KP_AB_VERIFY:-}; do
  step "verify $pattern (new)"
  timeout 300 "${kp[new]}" --device nvidia ${manifest[new]} verify "$pattern" | tail -25
done

step "bench"
declare -A best
for round in $(seq "${KP_AB_ROUNDS:-2}"); do
  for item in ${KP_AB_BENCH:-}; do
    kernel=${item%%:*} size=${item#*:}
    for which in base new; do
      us=$(timeout 120 "${kp[$which]}" --device nvidia ${manifest[$which]} bench "$kernel" --size "$size" 2>&1 |
        awk -v k="$kernel" -v s="$size" '$1 == k && $2 == s {print $4; exit} /rror/ {print "err"; exit}')
      printf 'round %s  %-4s %-16s %-22s %s us\n' "$round" "$which" "$kernel" "$size" "${us:-none}"
      key="$which $item"
      if [[ $us =~ ^[0-9.]+$ ]] && { [[ -z ${best[$key]:-} ]] || awk -v a="$us" -v b="${best[$key]}" 'BEGIN {exit !(a < b)}'; }; then
        best[$key]=$us
      fi
    done
  done
done

step "best medians (us) and base / new"
printf '%-16s %-22s %12s %12s %8s\n' kernel size base new ratio
for item in ${KP_AB_BENCH:-}; do
  b=${best["base $item"]:-} n=${best["new $item"]:-}
  r=$([[ -n $b && -n $n ]] && awk -v b="$b" -v n="$n" 'BEGIN {printf "%.3f", b / n}')
  printf '%-16s %-22s %12s %12s %8s\n' "${item%%:*}" "${item#*:}" "${b:--}" "${n:--}" "${r:--}"
done

for peer in ${KP_AB_PEERS:-}; do
  step "peer-$peer.py"
  PYTHONUNBUFFERED=1 timeout 240 python3 "bench/peer-$peer.py" --json "$out/peer-$peer.json" || true
done
step finished
