#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run on the development machine: downloads (apt-get download, no install) Ceres Solver 2.1 and
# what building against it and running it need beyond a base system, into .gpu-ceres/, for
# scripts/gpu/solve.sh on the GPU machine (which has no registry). The list is libceres-dev's
# closure on Debian 12 (apt-cache depends; ldd of libceres.so.3 and of bench-solve linked with it;
# the CMake packages CeresConfig.cmake loads: Eigen3, glog with Unwind, gflags, SuiteSparse,
# CXSparse, BLAS/LAPACK from ATLAS, which libceres3 requires), less libc6, libstdc++6, libgcc-s1,
# libgomp1 and liblzma5, which a base system has. solve.sh unpacks them with dpkg -x into a prefix
# of their own (/tmp/kp-ceres), not into / as .gpu/setup.sh does, so nothing of the machine's is
# overwritten and a merged-/usr layout does not matter (none of these ships files under /lib;
# libunwind8 has an empty /lib folder); it makes the links update-alternatives would have made (libblas.so.3 and
# liblapack.so.3 to ATLAS's) and points bench-solve at the prefix with LD_LIBRARY_PATH alone.
#   here:        ../shared/gpu/stage.sh && bash scripts/gpu/stage-ceres.sh
#   device run:  carry [".gpu", ".gpu-ceres"], command: bash scripts/gpu/solve.sh
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$top/.gpu-ceres"
exclude=$(git -C "$top" rev-parse --git-path info/exclude)
grep -qx '/.gpu-ceres/' "$exclude" 2>/dev/null || echo '/.gpu-ceres/' >>"$exclude"
cd "$top/.gpu-ceres"
packages=(libceres-dev libceres3 libeigen3-dev libgoogle-glog-dev libgoogle-glog0v6 libgflags-dev
          libgflags2.2 libunwind-dev libunwind8 liblzma-dev libsuitesparse-dev libcholmod3 libspqr2
          libcxsparse3 libamd2 libcamd2 libccolamd2 libcolamd2 libsuitesparseconfig5 libmetis5
          libatlas-base-dev libatlas3-base libgfortran5 libquadmath0)
apt-get download "${packages[@]}"
echo "staged ${#packages[@]} packages ($(du -sh . | cut -f1)) in .gpu-ceres/ for scripts/gpu/solve.sh"
