#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# #25's CPU comparisons on two cores of the GPU machine's host, in one call of the device tool:
# PoCL and PyTorch CPU both pinned to cores 0-1 (taskset), PoCL's workers and PyTorch's threads
# limited to 2. The Fashion-MNIST CNN on a 10,000-image subset for one epoch against the same
# model in PyTorch; the world model's 64 features of 10,000 histories on PoCL against NumPy.
# Needs the dataset's .deb in .gpu, as train.sh, and OpenBLAS in .gpu/openblas
# (scripts/gpu/stage-openblas.sh): without it the build has no host-blas route and conv's GEMMs run
# CLBlast on PoCL, as in the runs before 2026-11-26 06:00 (docs/performance-log/training.md).
#   device run:  carry [".gpu"], command: bash scripts/gpu/cpu-train.sh
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin cpu-train /tmp/kp-cpu-train-out results
kp_setup

step "OpenBLAS"
kp_openblas
kp_build_here "$res/build.log"
grep -q '^OPENBLAS_FOUND:INTERNAL=1' build-gpu/CMakeCache.txt &&
  echo "build: blas.gemm's host route (OpenBLAS)" ||
  echo "build: no OpenBLAS found: blas.gemm runs CLBlast on PoCL (not the comparison #25 means)"
export POCL_CPU_MAX_CU_COUNT=2 POCL_MAX_PTHREAD_COUNT=2 OMP_NUM_THREADS=2 MKL_NUM_THREADS=2
export OPENBLAS_NUM_THREADS=2
pin=(taskset -c 0,1)
nproc
"${pin[@]}" nproc
"${pin[@]}" build-gpu/bin/kernelport --device pocl explain blas.gemm | grep -E '^(device|path)'

# PoCL compiles each program on first use (seconds each): a short run fills its cache first, so
# the epochs below time training alone, as PyTorch's do.
step "pocl (2 cores): warm-up (256 images)"
"${pin[@]}" timeout "$(cap 200)" build-gpu/bin/fashion-mnist --device pocl --epochs 1 \
  --train-limit 256 --test-limit 256 | tail -1

# Rounds of both sides alternated (KP_CPU_ROUNDS, default 3): the medians and ranges are the
# figures, as on the shared development machine.
for r in $(seq "${KP_CPU_ROUNDS:-3}"); do
  step "round $r: pocl (2 cores): fashion-mnist, 10000 images, 1 epoch"
  "${pin[@]}" timeout "$(cap 200)" build-gpu/bin/fashion-mnist --device pocl --epochs 1 \
    --train-limit 10000 --test-limit 2000 --csv "$res/fashion-mnist-pocl-$r.csv" | grep epoch
  step "round $r: PyTorch CPU (2 cores): the same"
  "${pin[@]}" timeout "$(cap 200)" python3 bench/peers/peer-fashion-mnist.py --cpu --epochs 1 \
    --train-limit 10000 --json "$res/peer-fashion-mnist-cpu-$r.json" || echo "peer failed"
  step "round $r: pocl (2 cores): the world model's features"
  "${pin[@]}" timeout "$(cap 200)" build-gpu/bin/gru-world-model --device pocl --members 1 \
    --epochs 1 --train 500 --save-data /tmp/kp-wm.bin | grep -E '^features'
  step "round $r: NumPy (2 cores): the same features"
  "${pin[@]}" timeout "$(cap 60)" python3 bench/peers/peer-wm-features.py /tmp/kp-wm.bin \
    --json "$res/peer-wm-features-cpu-$r.json" || echo "peer failed"
done
kp_pack
