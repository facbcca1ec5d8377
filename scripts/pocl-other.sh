#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The test suite against another PoCL release, built here with its assertions on (a compiler
# abort that a release build would hide, or turn into wrong code, stops the test instead): the
# GPU host's PoCL 5.0 aborted on mode 1's LM kernel where Debian's 3.1 did not (docs/solve.md).
#   scripts/pocl-other.sh SOURCE_DIR [BUILD_DIR]
# SOURCE_DIR: PoCL's sources of the release (a git checkout or an archive of its tag). Needs
# LLVM's development files of a version that release supports (Debian 12, PoCL 5.0: apt-get
# install llvm-15-dev libclang-15-dev libclang-cpp15-dev; about 5 minutes on 2 cores). Runs
# build/'s suite (scripts/build.sh first) with only that PoCL visible. test-runtime pins the
# system's PoCL ICD file and fails under another one's POCL_BUILDING: ignore it there.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
src=$(cd "${1:?usage: scripts/pocl-other.sh SOURCE_DIR [BUILD_DIR]}" && pwd)
bld=${2:-$src/build-kernelport}
llvm_config=$(command -v llvm-config-15 || command -v llvm-config)
# Release optimisation without -DNDEBUG: PoCL's own assertions stay in.
cmake -S "$src" -B "$bld" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE=-O2 \
  -DCMAKE_CXX_FLAGS_RELEASE=-O2 -DWITH_LLVM_CONFIG="$llvm_config" -DENABLE_TESTS=OFF \
  -DENABLE_EXAMPLES=OFF -DENABLE_HWLOC=OFF -DENABLE_ICD=ON -DENABLE_LOADABLE_DRIVERS=OFF \
  -DENABLE_SPIRV=OFF -DENABLE_POCL_BUILDING=ON >"$bld.configure.log" 2>&1 ||
  { tail -30 "$bld.configure.log"; exit 1; }
cmake --build "$bld" -- -j"$(nproc)" >"$bld.build.log" 2>&1 || { tail -30 "$bld.build.log"; exit 1; }
icd=$(mktemp -d)
echo "$bld/lib/CL/libpocl.so" >"$icd/pocl-other.icd"
export OCL_ICD_VENDORS=$icd POCL_BUILDING=1
command -v clinfo >/dev/null && clinfo -l
bash "$top/scripts/build.sh" "$top/build"
cd "$top/build"
ctest -LE full -j"$(nproc)" --output-on-failure
