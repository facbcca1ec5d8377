#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every plugin of the build exports kp_plugin_entry and nothing else (#28: the blas plugin
# exported a C++ standard library symbol). Usage: plugin-exports.sh PLUGIN_DIR
set -eu
dir=$1
found=0
for so in "$dir"/*.so; do
  found=1
  extra=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^kp_plugin_entry$' || true)
  if [ -n "$extra" ]; then
    echo "$so exports more than kp_plugin_entry:"
    echo "$extra"
    exit 1
  fi
  nm -D --defined-only "$so" | awk '{print $3}' | grep -q '^kp_plugin_entry$' ||
    { echo "$so does not export kp_plugin_entry"; exit 1; }
done
[ "$found" = 1 ] || { echo "no plugins in $dir"; exit 1; }
