#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The test command: installs what is missing, builds with -Werror and runs the test suite.
#   ./test.sh              the suite (build-test/), without the tests labelled "full"
#   ./test.sh --full       every test, the slow ones too (CLBlast's parameter sets): CI runs this
#   ./test.sh --sanitize   the suite built with AddressSanitizer + UBSan (build-asan/)
# Options combine. KP_TEST_POCL_CACHE (read when a build directory is configured) points the
# tests' shared PoCL cache elsewhere, so that two builds can share their kernel compiles.
set -euo pipefail
top=$(cd "$(dirname "$0")" && pwd)
KP_DEPS_TEST=1 bash "$top/scripts/deps.sh"

# Its own directory: run.sh's build/ has other flags, and sharing one would rebuild everything
# each time the user alternates the two commands.
dir="$top/build-test"
flags=(-DKP_WERROR=ON)
ctest_flags=(-LE full)
sanitize_flags=()
for arg in "$@"; do
  case "$arg" in
    --full) ctest_flags=() ;;
    --sanitize)
      dir="$top/build-asan"
      flags+=(-DKP_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug)
      export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
      export LSAN_OPTIONS="suppressions=$top/tests/lsan.supp:print_suppressions=0"
      export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
      # LeakSanitizer's tracer can crash at exit while PoCL's worker threads shut down ("Tracer
      # caught signal 11", after every test passed). A failed test runs once more; a real failure
      # fails twice.
      sanitize_flags=(--repeat until-pass:2)
      ;;
    *) echo "usage: ./test.sh [--full] [--sanitize]" >&2; exit 2 ;;
  esac
done
bash "$top/scripts/build.sh" "$dir" "${flags[@]}"
cd "$dir"
ctest --output-on-failure -j"$(nproc)" "${ctest_flags[@]}" "${sanitize_flags[@]}"
