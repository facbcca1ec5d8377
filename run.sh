#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: installs what is missing, builds, and checks every kernel on the default device
# (kernelport devices + kernelport verify). Arguments go to `kernelport verify` (e.g. a pattern).
set -euo pipefail
top=$(cd "$(dirname "$0")" && pwd)
bash "$top/scripts/deps.sh"
bash "$top/scripts/build.sh" "$top/build"
"$top/build/bin/kernelport" devices
"$top/build/bin/kernelport" verify "$@"
