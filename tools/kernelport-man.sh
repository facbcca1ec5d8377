#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Writes kernelport(1) from the CLI's own help: `kernelport --help`, then `kernelport help
# COMMAND` for every command that help lists (the build runs it; tests/man-page.sh checks it).
# Usage: kernelport-man.sh KERNELPORT VERSION OUTPUT
set -eu
if [ $# -ne 3 ]; then
    echo "usage: $0 KERNELPORT VERSION OUTPUT" >&2
    exit 2
fi
kp=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$kp" --help >"$tmp/0"
commands=$(awk '/^Commands:$/ { on = 1; next } on && /^  [a-z]/ { print $1; next } on { exit }' \
    "$tmp/0")
if [ -z "$commands" ]; then
    echo "kernelport-man.sh: '$kp --help' lists no commands" >&2
    exit 1
fi
files="$tmp/0"
for c in $commands; do
    "$kp" help "$c" >"$tmp/$c"
    files="$files $tmp/$c"
done
# shellcheck disable=SC2086 # the file names are ours, without spaces
awk -v version="$2" -f "$here/kernelport-man.awk" $files >"$3.tmp"
mv "$3.tmp" "$3"
