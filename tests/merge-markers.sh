#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# No file holds a merge's conflict markers (a resolved-by-hand merge once committed some in a GPU
# script, which only a run on the GPU machine would have noticed).
# Usage: merge-markers.sh SOURCE_DIR
set -eu
top=$1
found=$(cd "$top" && find . \( -path ./.git -o -path './build*' -o -path './.gpu*' -o \
  -path './bindings/*/target' \) -prune -o -type f -size -2M -print |
  xargs grep -lE '^(<<<<<<< |>>>>>>> )' 2>/dev/null || true)
if [ -n "$found" ]; then
  echo "files with merge conflict markers:"
  echo "$found"
  exit 1
fi
