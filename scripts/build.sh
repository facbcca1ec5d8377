#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds Kernelport into a build directory: scripts/build.sh [BUILD_DIR] [cmake args...]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-"$top/build"}
shift || true
if [[ ! -f "$dir/build.ninja" ]]; then
  cmake -S "$top" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
elif (($#)); then
  cmake "$dir" "$@" >/dev/null
fi
cmake --build "$dir" -- -j"$(nproc)"
