#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CI's Python check: `pip install .` into a virtual environment of its own (build-python/venv),
# then the pytest suite over the installed package, not the source tree, so the wheel's layout
# (the library finding its plugins inside the package) is what is tested. The wheel's CMake build
# is kept in build-wheel/ (pyproject.toml), so a second run recompiles only what changed.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
start=$(date +%s)
venv="$top/build-python/venv"
# NumPy and pytest come from the system where it has them.
[[ -x "$venv/bin/python" ]] || python3 -m venv --system-site-packages "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check "$top" pytest
built=$(date +%s)

state="$top/build-python/state"
mkdir -p "$state"
cd "$state"  # not the repository: `import kernelport` must find the installed package
POCL_CACHE_DIR="${KP_TEST_POCL_CACHE:-$state/pocl}" XDG_CACHE_HOME="$state/cache" \
  XDG_CONFIG_HOME="$state/config" KP_LOG=error \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider "$top/python/tests"
echo "python: pip install . took $((built - start)) s, the tests $(( $(date +%s) - built )) s"
