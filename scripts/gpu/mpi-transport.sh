#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Which transport MPICH uses between two ranks of the two-GPU host, and what it costs, in one call
# of the device tool: MPICH's configuration (mpichversion), then bench-allreduce (2 ranks, one GPU
# each, 1-64 MB) under each environment given, e.g. "UCX_TLS=sm,self" (Debian's MPICH is ch4:ucx).
# The "MPI alone" column is the exchange without the device copies. Host staging only (the
# node-shared transport sends no data through MPI: scripts/gpu/mpi.sh measures it).
#   device run:  kind nvidia-h100-x2, carry [".gpu", ".gpu-mpi"],
#                command: bash scripts/gpu/mpi-transport.sh "" "UCX_TLS=sm,self" ...
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin mpi-transport /tmp/kp-mpi-transport-out results
kp_setup
mpirun=$(command -v mpiexec.mpich) mpicc=$(command -v mpicc.mpich)
[[ -n $mpirun && -n $mpicc ]] || { echo "no MPICH: stage it with scripts/gpu/stage-mpi.sh"; exit 1; }
command -v mpichversion >/dev/null && mpichversion | head -12
step build
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DKP_BUILD_TESTS=OFF \
  -DKP_BUILD_PYTHON=OFF -DKP_WITH_MPI=ON -DMPI_C_COMPILER="$mpicc" \
  -DMPIEXEC_EXECUTABLE="$mpirun" >"$res/configure.log" 2>&1 &&
  cmake --build build-gpu -- -j"$(nproc)" >"$res/build.log" 2>&1 ||
  { tail -40 "$res/configure.log" "$res/build.log"; exit 1; }
for setting in "$@"; do
  step "bench-allreduce with '${setting}'"
  # shellcheck disable=SC2086 # setting is empty or NAME=VALUE words
  env $setting timeout "$(cap 90)" bash tests/mpi/run.sh "$mpirun" 2 build-gpu/bin/bench-allreduce \
    --device 'gpu:%r' --max-mb 64 --reps 5 --transport staged | tail -8
done
kp_pack
