#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# kernelport(1), as the build generated it, documents every command the CLI has. The names come
# from the command table's sources (tools/cmd-*.c, tools/cli-main.c), not from the help the page
# was made from, so a command the help forgot to list fails here too. groff reads the page
# without a warning where it is installed.
# Usage: man-page.sh PAGE TOOLS_DIR
set -eu
page=$1
tools=$2
fail() {
    echo "test-man-page: $*" >&2
    exit 1
}
[ -f "$page" ] || fail "the build made no $page"
grep -q '^\.TH KERNELPORT 1 ' "$page" || fail "$page has no .TH KERNELPORT 1 line"
names=$(awk '/^(static )?const cli_command [a-z_]+ = \{$/ { on = 1; next }
    on && /\.name = "/ { match($0, /"[^"]*"/); print substr($0, RSTART + 1, RLENGTH - 2); on = 0 }' \
    "$tools"/cmd-*.c "$tools"/cli-main.c)
n=0
for name in $names; do
    n=$((n + 1))
    grep -Eq "^\.SS \"kernelport $name( |\")" "$page" ||
        fail "$page has no section for 'kernelport $name'"
    grep -Fqx "\\fB$name\\fR" "$page" || fail "$page's COMMANDS list lacks $name"
done
[ "$n" -ge 10 ] || fail "found only $n commands in $tools: $names"
if command -v groff >/dev/null; then
    warnings=$(groff -man -Tutf8 -ww -z "$page" 2>&1) || fail "groff failed on $page: $warnings"
    [ -z "$warnings" ] || fail "groff warns on $page: $warnings"
fi
echo "test-man-page: $n commands documented"
