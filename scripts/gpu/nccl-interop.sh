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
kp_cuda_abi_build build-gpu/nccl-interop-probe-abi "$out/abi-build.log" &&
  probe=build-gpu/nccl-interop-probe-abi || echo "running the unchecked build"

step "nccl-interop-probe"
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
timeout "$(cap 400)" "$probe" ${KP_NCCL:+--nccl "$KP_NCCL"} --json "$out/nccl-interop.json"
echo "nccl-interop-probe exited $?"
