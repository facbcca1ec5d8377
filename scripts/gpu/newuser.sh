#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What #28 section 4 items 3 and 5 changed, on the GPU machine's NVIDIA device and PoCL, in one
# call of the device tool (carry [".gpu"], command: bash scripts/gpu/newuser.sh):
# - item 3: a kernel source that fails to build (example.cl through KP_KERNEL_DIR, an error in its
#   own text and one spelled in a prelude macro) must name example.cl and
#   kernels/common/prelude.cl, never a driver's temporary file; and the stray compiler lines on
#   stderr of a cold PoCL (peak --remeasure, now built with -w; blas.gemm through CLBlast) are
#   shown as they come, to see which remain there.
# - item 5: `tune` on a trivial kernel (example.axpy, twice) and on a real one: the speedups and
#   "within the noise" lines, the noise figures, and what --write wrote.
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin newuser /tmp/kp-newuser-out
kp_setup
kp_build_here "$out/build.log"

kdir=$(mktemp -d)
sed 's/y\[kp_at1(yv, i)\] = fma(alpha, x\[kp_at1(xv, i)\], y\[kp_at1(yv, i)\]);/y[kp_at1(yv, i)] = fma(alpha, x[kp_at1(xv, i)], undeclared_thing) + kp_stride(xv, 3);/' \
  kernels/example.cl >"$kdir/example.cl"
for d in nvidia pocl; do
  step "$d: a broken example.cl (item 3): the build log's locations"
  KP_KERNEL_DIR=$kdir timeout "$(cap 60)" $kp --device "$d" verify example.axpy --smallest 2>&1 |
    sed -n '/build log:/,/^$/p' | head -20
done

step "pocl, cold caches: stray compiler lines on stderr (item 3)"
cold=$(mktemp -d)
XDG_CACHE_HOME=$cold/xdg POCL_CACHE_DIR=$cold/pocl timeout "$(cap 120)" \
  $kp --device pocl peak --remeasure 2>&1 >/dev/null | sed 's/^/  peak stderr: /'
printf 'kernelport: 1\ntuning:\n  - match: {type: cpu}\n    kernels:\n      blas.gemm: {route: clblast}\n' \
  >"$cold/clblast.yaml"
XDG_CACHE_HOME=$cold/xdg POCL_CACHE_DIR=$cold/pocl KP_LOG=info timeout "$(cap 180)" \
  $kp --device pocl --manifest "$cold/clblast.yaml" verify blas.gemm --smallest 2>&1 >/dev/null |
  grep -v 'manifest' | sed 's/^/  blas.gemm stderr: /' | head -20

for d in nvidia pocl; do
  for round in 1 2; do
    step "$d: tune example.axpy, round $round (item 5)"
    rm -f "$res/tuned-axpy-$d.yaml"
    timeout "$(cap 120)" $kp --device "$d" tune example.axpy --budget 30 \
      --write "$res/tuned-axpy-$d.yaml" | grep -E 'best:|wrote|nothing written'
    [[ -f "$res/tuned-axpy-$d.yaml" ]] && grep -E 'example|speedup' "$res/tuned-axpy-$d.yaml"
  done
done
step "nvidia: tune gru.step --json (progress on stderr, numbers as numbers)"
timeout "$(cap 150)" $kp --device nvidia --json tune gru.step --budget 60 2>"$res/tune-gru-progress.txt" |
  python3 -c 'import json, sys
for k in json.load(sys.stdin)["kernels"]:
    print(k["kernel"], k["status"], "best", k["best"], "changes", k["changes"],
          "speedup %.3f noise %.3f improved %s" % (k["speedup"], k["noise"], k["improved"]))'
echo "progress lines on stderr: $(wc -l <"$res/tune-gru-progress.txt")"
echo "done in $(( $(date +%s) - started )) s"
