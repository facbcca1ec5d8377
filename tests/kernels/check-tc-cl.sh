#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kernels/tc.cl compiled to PTX by clang for NVIDIA's OpenCL target, in one variant per path (the
# precisions, transposes, register and cp.async staging, ldmatrix, BT, 16-bit tensors, and both
# wgmma layouts):
# CI has no NVIDIA compiler, and this catches what it would refuse (types, lvalues, asm operands).
# Each variant compiles the program text the core builds (backends/opencl/cl-program.c): the
# prelude (kernels/common/prelude.cl, beside the source's folder unless PRELUDE is given), then
# `#line 1 "tc.cl"`, then the source.
#   check-tc-cl.sh CLANG SOURCE [PRELUDE]
set -euo pipefail
clang=$1 src=$2
prelude=${3:-"$(dirname "$src")/common/prelude.cl"}
variants=(
  "-D TA=0 -D TB=0 -D PREC=0 -D VEC=0"
  "-D TA=1 -D TB=1 -D PREC=1 -D VEC=1 -D STAGES=2 -D LDSM=1 -D BK=8"
  "-D TA=0 -D TB=0 -D PREC=2 -D VEC=1 -D STAGES=3 -D BT=1 -D LDSM=1"
  "-D TA=0 -D TB=1 -D PREC=3 -D VEC=1 -D STAGES=4 -D WM=32 -D WN=64"
  "-D HALF=1 -D COUT=1 -D TA=0 -D TB=0 -D PREC=2 -D VEC=1 -D STAGES=2 -D BK=32 -D WM=64 -D WN=64"
  "-D HALF=1 -D COUT=2 -D TA=1 -D TB=1 -D PREC=3 -D VEC=0 -D STAGES=3 -D BK=16 -D WM=32 -D WN=8 -D BM=64"
  "-D WGMMA=1 -D TB=0 -D PREC=0 -D VEC=1 -D BM=128 -D BN=128 -D BK=8 -D STAGES=6 -D LAG=1"
  "-D WGMMA=1 -D TB=1 -D PREC=0 -D VEC=1 -D BM=256 -D BN=128 -D BK=16 -D STAGES=2 -D LAG=0"
)
program() {
  cat "$prelude"
  printf '\n#line 1 "%s"\n' "$(basename "$src")"
  cat "$src"
}
for v in "${variants[@]}"; do
  # shellcheck disable=SC2086 (each variant is a list of options)
  if ! program | "$clang" -x cl -cl-std=CL1.2 -target nvptx64-nvidia-nvcl -Werror -O1 -S \
      -o /dev/null -D TC_PTX=1 $v -; then
    echo "check-tc-cl: $src (after $prelude) does not compile with: $v" >&2
    exit 1
  fi
done
echo "check-tc-cl: ${#variants[@]} variants compile"
