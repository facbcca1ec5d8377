#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# #30's batch-1 gru.step on two cores of the GPU machine's host, which nothing else loads (the
# development machine's figures were all taken under load 6-13 from other work): PoCL and
# OpenBLAS pinned to cores 0-1 (taskset), PoCL's workers and OpenBLAS's threads limited to 2, as
# cpu-train.sh does. Rounds (KP_CPU_ROUNDS, default 2) of bench/probes/gru-step-probe (the fused
# step, an empty native command, the whole step as one native command, maps, each against the
# OpenBLAS host path; with PoCL's basic device beside the pthread one where this PoCL has it) and
# bench-cpu-routes --only gru (the per-call ratios PERFORMANCE.md's #30 tables give).
# Needs OpenBLAS in .gpu/openblas (scripts/gpu/stage-openblas.sh): without it the build has no
# host-blas route, no gru-step-probe, and bench-cpu-routes has no host path.
#   device run:  carry [".gpu"], command: bash scripts/gpu/cpu-gru-step.sh
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin cpu-gru-step /tmp/kp-cpu-gru-step-out results
kp_setup
step "OpenBLAS"
kp_openblas
kp_build_here "$res/build.log"
[[ -x build-gpu/bin/gru-step-probe ]] || echo "no gru-step-probe: the build found no OpenBLAS"
export POCL_CPU_MAX_CU_COUNT=2 POCL_MAX_PTHREAD_COUNT=2 OPENBLAS_NUM_THREADS=2
pin=(taskset -c 0,1)
"${pin[@]}" nproc
"${pin[@]}" $kp --device pocl explain gru.step | grep -E '^(device|path)|BATCH_GEMM'
"${pin[@]}" $kp --device pocl explain blas.gemm | grep -E '^path'
# The basic device beside the pthread one, where this PoCL builds it.
probe_env=() also=()
if POCL_DEVICES="pthread basic" clinfo -l 2>/dev/null | grep -q basic; then
  probe_env=(env "POCL_DEVICES=pthread basic") also=(--also basic)
else
  echo "this PoCL has no basic device: the probe runs without --also"
fi

for r in $(seq "${KP_CPU_ROUNDS:-2}"); do
  step "round $r: gru-step-probe (2 cores)"
  ${probe_env[@]+"${probe_env[@]}"} "${pin[@]}" timeout "$(cap 150)" \
    build-gpu/bin/gru-step-probe --rounds 9 --device pocl ${also[@]+"${also[@]}"} |
    tee "$res/probe-$r.txt" | grep -v 'max |'
  step "round $r: bench-cpu-routes --only gru (2 cores)"
  "${pin[@]}" timeout "$(cap 150)" build-gpu/bin/bench-cpu-routes --device pocl --only gru \
    --rounds 5 --json "$res/cpu-routes-$r.json" | grep -E '^(CASE|step|T)'
done
kp_pack
