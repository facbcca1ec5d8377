#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every source file carries the license's SPDX identifier in its first lines (#28): C, OpenCL C,
# C++, Rust, Python, shell and CMake files, test fixtures (inputs whose lines tests count) excepted.
# Usage: spdx-check.sh SOURCE_DIR
set -eu
top=$1
missing=$(cd "$top" && find . \( -path ./.git -o -path './build*' -o -path ./tests/fixtures -o \
  -path ./.gpu -o -path './bindings/*/target' \) -prune -o -type f \( -name '*.c' -o -name '*.h' \
  -o -name '*.cl' -o -name '*.cpp' -o -name '*.py' -o -name '*.sh' -o -name '*.cmake' \
  -o -name CMakeLists.txt -o -name '*.rs' \) -print | while read -r f; do
  head -n 3 "$f" | grep -q 'SPDX-License-Identifier: Apache-2.0' || echo "$f"
done)
if [ -n "$missing" ]; then
  echo "files without 'SPDX-License-Identifier: Apache-2.0' in their first 3 lines:"
  echo "$missing"
  exit 1
fi
