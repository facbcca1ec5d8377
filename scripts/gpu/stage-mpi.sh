#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run on the development machine, after ../shared/gpu/stage.sh: downloads (apt-get download, no
# install) Open MPI, MPICH and the libraries they load into .gpu-mpi/, and the Fashion-MNIST
# dataset with zlib's headers into .gpu/; kp_setup (preamble.sh) unpacks both folders' packages on
# the GPU machine (which has no MPI and no registry). Carry [".gpu", ".gpu-mpi"] for
# scripts/gpu/mpi*.sh; the training scripts need .gpu alone (a call carries 64 MiB at most, so
# the MPI packages stay out of the others' way). The MPI list is Open MPI 4.1's run-time closure on
# Debian 12 (ldd of libmpi, orterun and the MCA components) without the base system's libraries;
# dpkg-deb runs no maintainer script, so the commands keep their .openmpi and .mpich names
# (mpirun.openmpi, mpiexec.mpich). MPICH (4.0: libmpich12 and its libslurm38, libgfortran5) is
# there because Debian's Open MPI launcher crashed on the two-GPU host (Ubuntu's glibc 2.39)
# inside PMIx.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
exclude=$(git -C "$top" rev-parse --git-path info/exclude)
grep -qx '/.gpu-mpi/' "$exclude" 2>/dev/null || echo '/.gpu-mpi/' >>"$exclude"
mpi=(openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev libevent-core-2.1-7
     libevent-pthreads-2.1-7 libfabric1 libhwloc15 libibverbs1 ibverbs-providers libmunge2
     libnl-3-200 libnl-route-3-200 libnuma1 libpmix2 libpsm-infinipath1 libpsm2-2 librdmacm1
     libucx0 libatomic1 mpich libmpich12 libmpich-dev libslurm38 libgfortran5 libquadmath0)
data=(dataset-fashion-mnist zlib1g-dev)
mkdir -p "$top/.gpu-mpi" "$top/.gpu"
(cd "$top/.gpu-mpi" && apt-get download "${mpi[@]}")
(cd "$top/.gpu" && apt-get download "${data[@]}")
echo "staged ${#mpi[@]} packages in .gpu-mpi/ and ${#data[@]} in .gpu/"
