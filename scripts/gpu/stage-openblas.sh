#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run on the development machine: downloads (apt-get download, no install) Debian 12's OpenBLAS
# (pthread build, with its headers and pkg-config file) and the Fortran runtime it loads into
# .gpu/openblas/, which .gpu/setup.sh leaves alone (it unpacks only .gpu/*.deb into /). On the
# GPU machine, scripts/gpu/cpu-train.sh unpacks them under /tmp/kp-openblas and builds against
# them, so that blas.gemm's host route (#30: conv's and the GRU backward's GEMMs through OpenBLAS
# on CPU devices) exists there as it does here; without them that build runs CLBlast on PoCL.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$top/.gpu/openblas"
cd "$top/.gpu/openblas"
packages=(libopenblas0-pthread libopenblas-pthread-dev libgfortran5 libquadmath0)
apt-get download "${packages[@]}"
echo "staged ${#packages[@]} packages in .gpu/openblas/ for scripts/gpu/cpu-train.sh"
