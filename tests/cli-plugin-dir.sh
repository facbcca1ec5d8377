#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# kernelport --plugin-dir DIR loads DIR's plugins (#28, item 9); without it the test plugin is
# not found. Usage: cli-plugin-dir.sh KERNELPORT PLUGIN_DIR
set -eu
kp=$1
dir=$2
unset KP_PLUGIN_PATH KP_MANIFEST KP_DEVICE
if "$kp" --device host kernels 'nested.*' >/dev/null 2>&1; then
  echo "nested.* found without --plugin-dir: the test cannot tell"; exit 1
fi
"$kp" --plugin-dir "$dir" --device host kernels 'nested.*' | grep -q '^nested.axpy2 '
"$kp" --device host kernels 'nested.*' --plugin-dir="$dir" | grep -q '^nested.axpy2 '
"$kp" --help | grep -q 'KP_PLUGIN_PATH'
