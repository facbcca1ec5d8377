#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/probes/nccl-interop-probe on the two-GPU machine, in one call of the device tool (#29):
# whether memory CUDA exports is imported by NVIDIA's OpenCL, coherent both ways, and all-reduced
# in place by NCCL, timed for 1-256 MB against the host-staging limit measured in the same run.
#   device run:  kind nvidia-h100-x2, carry [".gpu"], command: bash scripts/gpu/nccl-interop.sh
# The probe finds libnccl.so.2 in PyTorch's venv (/opt/torch/.venv, NVIDIA's pip wheel); set
# KP_NCCL=PATH to name another. Where the venv's wheels also ship cuda.h and nccl.h, the probe is
# compiled a second time against them (-DKP_PROBE_CHECK_ABI: its own declarations of the CUDA and
# NCCL types, enum values and symbol names are checked against the headers) and that build runs.
# What to read: the "verdict" line (FEASIBLE, or the step that stopped it and why), the [2] lines
# (which import variant worked) and the table's "hand bus" against "limit bus" (exit 0 feasible,
# 3 failed, 2 not applicable here). Writes nccl-interop.json and the log to $OUT.
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin nccl-interop /tmp/kp-nccl-interop-out
kp_setup
nvidia-smi topo -m || true
kp_build_here "$out/build.log"
probe=build-gpu/bin/nccl-interop-probe

step "ABI check against the venv's cuda.h and nccl.h"
sites=(/opt/torch/.venv/lib/python3*/site-packages/nvidia)
# nccl.h includes cuda_runtime.h: the folder that has both it and cuda.h.
cuda_h=""
while read -r h; do
  [[ -f $(dirname "$h")/cuda.h ]] && { cuda_h=$(dirname "$h")/cuda.h; break; }
done < <(find "${sites[0]}" -name cuda_runtime.h -path '*include*' 2>/dev/null)
nccl_h=$(find "${sites[0]}" -name nccl.h -path '*include*' 2>/dev/null | head -1)
if [[ -n $cuda_h && -n $nccl_h ]]; then
  echo "cuda.h: $cuda_h"
  echo "nccl.h: $nccl_h"
  if cc -std=c11 -O2 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -DKP_PROBE_CHECK_ABI \
    -isystem "$(dirname "$cuda_h")" -isystem "$(dirname "$nccl_h")" \
    bench/probes/nccl-interop-probe.c -o build-gpu/nccl-interop-probe-abi -lOpenCL -ldl \
    >"$out/abi-build.log" 2>&1; then
    probe=build-gpu/nccl-interop-probe-abi
  else
    echo "the ABI-checked build failed (a declaration differs from the headers, or the headers" \
      "do not compile as C); running the unchecked build:"
    tail -20 "$out/abi-build.log"
  fi
else
  echo "no cuda.h and nccl.h under ${sites[0]}: running the unchecked build"
fi

step "nccl-interop-probe"
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
timeout "$(cap 400)" "$probe" ${KP_NCCL:+--nccl "$KP_NCCL"} --json "$out/nccl-interop.json"
echo "nccl-interop-probe exited $?"
