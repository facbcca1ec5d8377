#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A/B timing on the GPU machine, in one call of the device tool: two commits of the repository (or
# a commit against the working tree, or one manifest against another), the same `kernelport bench`
# items or whole families with both, alternating base and new for KP_AB_ROUNDS rounds, so that a
# drift of the machine shows as a spread rather than a ratio.
#   here:        bash scripts/gpu/ab.sh stage BASE [NEW]
#                (git archive of each commit into .gpu/base.tar and .gpu/new.tar; without NEW, new
#                is the working tree; with no .gpu/base.tar at all, base is the working tree too)
#   device run:  carry [".gpu"], command:
#                KP_AB_FAMILIES="gru conv" bash scripts/gpu/ab.sh
#                KP_AB_BENCH="gru.rollout:seed blas.gemm:1024" bash scripts/gpu/ab.sh
# KP_AB_BENCH: kernel:size items; KP_AB_FAMILIES: families (or any kernel pattern), each timed at
# every benchmark size of each of its kernels; either or both.
# Optional: KP_AB_ROUNDS (default 2), KP_AB_DEVICE (default nvidia; pocl runs it on any machine),
# KP_AB_VERIFY (kernel patterns verified with the new build and manifest first), KP_AB_PEERS ("gru
# conv blas": bench/peers/peer-*.py in the same call), KP_AB_BASE_MANIFEST and KP_AB_NEW_MANIFEST
# (a manifest for each side), KP_AB_DEADLINE (seconds after the start by which the rounds stop,
# default 560).
# Prints one line per kernel, size and round, then a table of the best median of each side and the
# ratio base / new (above 1: the new build is faster). Everything lands in $OUT.
if [[ ${1:-} == stage ]]; then
  set -euo pipefail
  (( $# >= 2 )) || { echo "usage: bash scripts/gpu/ab.sh stage BASE [NEW]" >&2; exit 2; }
  top=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
  mkdir -p "$top/.gpu"
  git -C "$top" archive -o "$top/.gpu/base.tar" "$2"
  echo "base: $(git -C "$top" log -1 --format='%h %s' "$2" | cut -c1-90) -> .gpu/base.tar"
  if (( $# >= 3 )); then
    git -C "$top" archive -o "$top/.gpu/new.tar" "$3"
    echo "new:  $(git -C "$top" log -1 --format='%h %s' "$3" | cut -c1-90) -> .gpu/new.tar"
  else
    rm -f "$top/.gpu/new.tar"
    echo "new:  the working tree"
  fi
  exit 0
fi

# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin ab /tmp/kp-ab-out
kp_deadline "${KP_AB_DEADLINE:-560}"
dev=${KP_AB_DEVICE:-nvidia}
kp_setup

step build
declare -A kp=([base]=build-gpu/bin/kernelport [new]=build-gpu/bin/kernelport)
[[ -f .gpu/base.tar && -f .gpu/new.tar ]] || kp_build . build-gpu "$out/build.log"
for which in new base; do
  if [[ -f .gpu/$which.tar ]]; then
    rm -rf "/tmp/kp-$which" && mkdir -p "/tmp/kp-$which" &&
      tar -xf ".gpu/$which.tar" -C "/tmp/kp-$which"
    kp_build "/tmp/kp-$which" "/tmp/kp-$which/build-gpu" "$out/build.log"
    kp[$which]=/tmp/kp-$which/build-gpu/bin/kernelport
    echo "$which: .gpu/$which.tar"
  else
    echo "$which: the working tree"
  fi
done
rm -f "$out/build.log"
declare -A manifest=([base]="" [new]="")
[[ -n ${KP_AB_BASE_MANIFEST:-} ]] && manifest[base]="--manifest=$KP_AB_BASE_MANIFEST"
[[ -n ${KP_AB_NEW_MANIFEST:-} ]] && manifest[new]="--manifest=$KP_AB_NEW_MANIFEST"

for pattern in ${KP_AB_VERIFY:-}; do
  step "verify $pattern (new)"
  # The whole table goes to $OUT; the log keeps the failures and the summary.
  timeout "$(cap 300)" "${kp[new]}" --device "$dev" ${manifest[new]} verify "$pattern" |
    tee "$out/verify-${pattern//[^a-z0-9]/_}.txt" | grep -E 'FAIL|SKIP|kernels?, '
done

# One side's `kernelport bench` as "kernel size microseconds" lines (a status name for a failed
# row), from its JSON; with KERNEL, only that kernel's rows.
medians() { # [KERNEL]
  python3 -c '
import json, sys
try:
    doc = json.load(sys.stdin)
except ValueError:
    sys.exit(0)
for r in doc.get("results", []):
    if len(sys.argv) > 1 and r.get("kernel") != sys.argv[1]:
        continue
    ok = r.get("status") == "KP_OK" and r.get("median_s")
    print(r.get("kernel"), r.get("size"), "%.2f" % (r["median_s"] * 1e6) if ok else r.get("status"))
' "$@"
}

step "bench on $dev"
declare -A best
rows=()
err=$(mktemp)
# bench_side ROUND WHICH TIMEOUT ARGS...: one side's run, its lines printed and its best kept.
bench_side() {
  local round=$1 which=$2 limit=$3 kernel=${4:-} line k s us n=0
  shift 4
  while read -r k s us; do
    printf 'round %s  %-4s %-22s %-22s %s us\n' "$round" "$which" "$k" "$s" "$us"
    n=$((n + 1))
    [[ " ${rows[*]} " == *" $k:$s "* ]] || rows+=("$k:$s")
    line="$which $k:$s"
    if [[ $us =~ ^[0-9.]+$ ]] && { [[ -z ${best[$line]:-} ]] ||
      awk -v a="$us" -v b="${best[$line]}" 'BEGIN {exit !(a < b)}'; }; then
      best[$line]=$us
    fi
  done < <(timeout "$(cap "$limit")" "${kp[$which]}" --device "$dev" ${manifest[$which]} --json \
    bench "$@" 2>"$err" | medians $kernel)
  if (( n == 0 )); then
    printf 'round %s  %-4s %-45s no result\n' "$round" "$which" "$*"
    tail -3 "$err"
  fi
}
for round in $(seq "${KP_AB_ROUNDS:-2}"); do
  if (( $(date +%s) > deadline - 60 )); then
    echo "round $round not started: the deadline is near"
    break
  fi
  for item in ${KP_AB_BENCH:-}; do
    for which in base new; do
      bench_side "$round" "$which" 120 "${item%%:*}" "${item%%:*}" --size "${item#*:}"
    done
  done
  for family in ${KP_AB_FAMILIES:-}; do
    for which in base new; do
      bench_side "$round" "$which" 300 "" "$family"
    done
  done
done
rm -f "$err"

step "best medians (us) and base / new"
printf '%-22s %-22s %12s %12s %8s\n' kernel size base new ratio
for row in "${rows[@]}"; do
  b=${best["base $row"]:-} n=${best["new $row"]:-}
  r=$([[ -n $b && -n $n ]] && awk -v b="$b" -v n="$n" 'BEGIN {printf "%.3f", b / n}')
  printf '%-22s %-22s %12s %12s %8s\n' "${row%%:*}" "${row#*:}" "${b:--}" "${n:--}" "${r:--}"
done

for peer in ${KP_AB_PEERS:-}; do
  step "peer-$peer.py"
  PYTHONUNBUFFERED=1 timeout "$(cap 240)" python3 "bench/peers/peer-$peer.py" \
    --json "$out/peer-$peer.json" || true
done
step finished
