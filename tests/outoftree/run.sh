#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Out-of-tree test: install Kernelport, build a plugin against the install, run the installed CLI.
#
# Usage: run.sh BUILD_DIR SCRATCH_DIR
# Everything this test writes lives under SCRATCH_DIR, which is wiped first so the test can be
# re-run. Nothing of the build tree is used after `cmake --install`: the plugin (and
# examples/axpy.c) see only the installed headers, CMake package, pkg-config file and embed
# script, and the CLI that runs the plugin is the installed one, found with no configuration.
set -euo pipefail

if [[ $# -ne 2 || -z $2 || $2 == / ]]; then
    echo "usage: $0 BUILD_DIR SCRATCH_DIR" >&2
    exit 2
fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
build=$(cd "$1" && pwd -P)

fail() {
    echo "test-outoftree: FAIL: $*" >&2
    exit 1
}

# step LOG DESCRIPTION COMMAND...: runs COMMAND with its output in LOG, shown only on failure.
step() {
    local log=$1 what=$2
    shift 2
    echo "test-outoftree: $what"
    if ! "$@" >"$log" 2>&1; then
        cat "$log" >&2
        fail "$what (log: $log)"
    fi
}

# expect TEXT NEEDLE WHAT: fails unless TEXT contains the fixed string NEEDLE.
expect() {
    if ! grep -qF -- "$2" <<<"$1"; then
        printf '%s\n' "$1" >&2
        fail "$3: expected to find \"$2\" in the output above"
    fi
}

# The build's own settings, so the install layout and tools match what was built.
cache_get() {
    sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" | head -n 1
}
[[ -f $build/CMakeCache.txt ]] || fail "$build is not a CMake build directory"
cmake=$(cache_get CMAKE_COMMAND)
cmake=${cmake:-cmake}
cc=$(cache_get CMAKE_C_COMPILER)
cc=${cc:-${CC:-cc}}
libdir=$(cache_get CMAKE_INSTALL_LIBDIR)
libdir=${libdir:-lib}
libexecdir=$(cache_get CMAKE_INSTALL_LIBEXECDIR)
libexecdir=${libexecdir:-libexec}
mandir=$(cache_get CMAKE_INSTALL_MANDIR)
mandir=${mandir:-share/man}
# An application must be built with the sanitizers the library was built with (KP_SANITIZE),
# or the sanitizer runtime would not be loaded first.
app_flags=()
if [[ $(cache_get KP_SANITIZE) =~ ^(ON|on|1|TRUE|true|YES|yes)$ ]]; then
    app_flags=("-fsanitize=address,undefined")
fi
generator=()
if command -v ninja >/dev/null; then
    generator=(-G Ninja)
fi

# Group- or world-writable plugin directories are refused by the loader: a umask of 002 must not
# make this test fail for a reason it does not test.
umask 022
rm -rf "$2"
mkdir -p "$2"
scratch=$(cd "$2" && pwd -P)
prefix=$scratch/prefix
logs=$scratch/logs
mkdir -p "$logs" "$scratch/config" "$scratch/cache" "$scratch/pocl"

# No user configuration, no caches shared with other processes, and nothing that could make the
# installed CLI find a library or plugins other than the installed ones.
export XDG_CONFIG_HOME=$scratch/config XDG_CACHE_HOME=$scratch/cache POCL_CACHE_DIR=$scratch/pocl
unset KP_PLUGIN_PATH KP_MANIFEST KP_DEVICE KP_KERNEL_DIR LD_LIBRARY_PATH CMAKE_PREFIX_PATH \
    PKG_CONFIG_PATH

# ---- 1. Install ----------------------------------------------------------------------------------
step "$logs/install.log" "installing $build into $prefix" "$cmake" --install "$build" \
    --prefix "$prefix"
kp=$prefix/bin/kernelport
installed_plugins=$prefix/$libdir/kernelport/plugins
for f in "$kp" "$prefix/include/kernelport/kernelport.h" "$prefix/include/kernelport/plugin.h" \
    "$prefix/$libdir/cmake/Kernelport/KernelportConfig.cmake" \
    "$prefix/$libdir/cmake/Kernelport/embed.cmake" "$prefix/$libdir/pkgconfig/kernelport.pc" \
    "$installed_plugins/example.so" "$prefix/$libexecdir/kernelport/kernelport-plugin-scan" \
    "$prefix/$mandir/man1/kernelport.1" "$prefix/$libdir/libkernelport.a"; do
    [[ -e $f ]] || fail "the install lacks $f"
done

# The SONAME carries major.minor while the major version is 0, the major alone after
# (docs/stability.md), and the link name leads to it.
version=$(PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig pkg-config --modversion kernelport) ||
    fail "pkg-config --modversion kernelport failed"
IFS=. read -r major minor _ <<<"$version"
want=libkernelport.so.$major
((major != 0)) || want=$want.$minor
soname=$(readelf -d "$prefix/$libdir/libkernelport.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ $soname == "$want" ]] || fail "libkernelport.so's SONAME is \"$soname\", not $want (version $version)"
[[ -e $prefix/$libdir/$want ]] || fail "the install lacks $prefix/$libdir/$want"

# The CLI must load the installed library through its RUNPATH ($ORIGIN/../lib), not the build
# tree's: the library finds its plugins beside itself.
if command -v ldd >/dev/null; then
    resolved=$(ldd "$kp" | sed -n 's/^[[:space:]]*libkernelport\.so[^ ]* => \([^ ]*\).*/\1/p')
    [[ -n $resolved ]] || fail "ldd cannot resolve libkernelport for $kp: $(ldd "$kp")"
    [[ $(readlink -f "$resolved") == "$prefix/$libdir/"* ]] ||
        fail "$kp loads $resolved, not the installed library under $prefix/$libdir"
fi

# ---- 2. The plugin, built with find_package(Kernelport) + kp_add_plugin --------------------------
oot_build=$scratch/oot-build
step "$logs/oot-configure.log" "configuring the oot plugin with CMAKE_PREFIX_PATH=$prefix" \
    "$cmake" -S "$here" -B "$oot_build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_INSTALL_PREFIX="$scratch/oot-prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
    -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF
found=$(sed -n 's/^Kernelport_DIR:[A-Z]*=//p' "$oot_build/CMakeCache.txt")
[[ $found == "$prefix/$libdir/cmake/Kernelport" ]] ||
    fail "find_package(Kernelport) found $found, not the installed package"
step "$logs/oot-build.log" "building the oot plugin (CMake)" "$cmake" --build "$oot_build"
# kp_add_plugin's install rule puts it in lib/kernelport/plugins under the project's prefix.
step "$logs/oot-install.log" "installing the oot plugin (CMake)" "$cmake" --install "$oot_build"
cmake_dir=$scratch/oot-prefix/$libdir/kernelport/plugins
[[ -f $cmake_dir/oot.so ]] || fail "cmake --install did not put oot.so in $cmake_dir"

# ---- 3. The same plugin, built with pkg-config and the compiler alone ----------------------------
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
pc_dir=$scratch/pc-plugins
gen=$scratch/pc-gen
mkdir -p "$pc_dir" "$gen"
echo "test-outoftree: building the oot plugin with pkg-config --cflags kernelport"
pc_cflags=$(pkg-config --cflags kernelport) || fail "pkg-config --cflags kernelport failed"
read -r -a cflags <<<"$pc_cflags"
# The .pc file must describe the prefix it was installed into, wherever that is.
include=$(sed -n 's/.*-I\([^ ]*\).*/\1/p' <<<"$pc_cflags")
[[ -n $include && -d $include ]] || fail "pkg-config --cflags gives \"$pc_cflags\""
[[ $(cd "$include" && pwd -P) == "$prefix/include" ]] ||
    fail "pkg-config's include dir $include is not $prefix/include"
pc_plugindir=$(pkg-config --variable=plugindir kernelport)
[[ -d $pc_plugindir && $(cd "$pc_plugindir" && pwd -P) == "$installed_plugins" ]] ||
    fail "pkg-config's plugindir $pc_plugindir is not $installed_plugins"
# The installed embed script, byte for byte as kp_add_plugin would run it, and the header that
# kp_add_plugin would generate next to it.
step "$logs/pc-embed.log" "embedding oot.cl with the installed embed.cmake" "$cmake" \
    -DINPUT="$here/oot.cl" -DOUTPUT="$gen/oot_cl.c" -DSYMBOL=kp_kernel_oot_cl \
    -P "$prefix/$libdir/cmake/Kernelport/embed.cmake"
cat >"$gen/oot-kernels.h" <<'EOF'
/* Written by run.sh: the declarations kp_add_plugin would generate for oot.cl. */
#include <stddef.h>
extern const char kp_kernel_oot_cl[];
extern const size_t kp_kernel_oot_cl_len;
EOF
echo '{ global: kp_plugin_entry; local: *; };' >"$gen/plugin.map"
step "$logs/pc-build.log" "compiling oot.so with $cc" "$cc" -std=c11 -O2 -Wall -Wextra -Wshadow \
    -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter -Werror -fPIC \
    -fvisibility=hidden "${cflags[@]}" -I"$gen" -shared -Wl,--no-undefined \
    -Wl,--version-script="$gen/plugin.map" -o "$pc_dir/oot.so" "$here/oot-plugin.c" \
    "$gen/oot_cl.c" -lm
# Both builds export the entry alone, as the guide's commands make them.
for so in "$pc_dir/oot.so"; do
  extra=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^kp_plugin_entry$' || true)
  [[ -z $extra ]] || fail "$so exports more than kp_plugin_entry: $extra"
done

# ---- 4. The installed CLI ------------------------------------------------------------------------
# (a) With no configuration at all it finds the installed example plugin beside its library.
echo "test-outoftree: kernelport kernels example (no configuration)"
out=$("$kp" kernels example 2>&1) || {
    printf '%s\n' "$out" >&2
    fail "kernelport kernels example failed"
}
expect "$out" "example.axpy" "kernelport kernels example"
expect "$out" "$installed_plugins/example.so" "kernelport kernels example"
# (b) The system manifest is the install prefix's, whatever prefix the build was configured with
#     (it read the configured prefix's etc), and `devices` lists the layers.
#     A build configured for /usr has an absolute /etc, which this test leaves alone.
sysconf=$(sed -n 's/^CMAKE_INSTALL_SYSCONFDIR:[A-Z]*=//p' "$build/CMakeCache.txt")
if [[ $sysconf != /* ]]; then
    sysconf=$prefix/${sysconf:-etc}
    mkdir -p "$sysconf/kernelport"
    printf 'kernelport: 1\nplugins: { disable: [example.scale_rows] }\n' \
        >"$sysconf/kernelport/manifest.yaml"
    out=$("$kp" devices 2>&1) || fail "kernelport devices failed: $out"
    expect "$out" "system $sysconf/kernelport/manifest.yaml," "kernelport devices"
    out=$("$kp" kernels example 2>&1) || fail "kernelport kernels example failed: $out"
    [[ $out != *example.scale_rows* ]] || fail "the system manifest under $sysconf was not read"
    rm "$sysconf/kernelport/manifest.yaml"
fi
out=$("$kp" plugins 2>&1) || fail "kernelport plugins failed: $out"
# The installed scanner probed the plugins on the first run; this one read its verdicts.
if ! awk -v so="$installed_plugins/example.so" '$NF == so && $(NF-1) == "cached" { ok = 1 }
    END { exit !ok }' <<<"$out"; then
    printf '%s\n' "$out" >&2
    fail "kernelport plugins: example.so's PROBE is not \"cached\" (the installed scanner's verdict)"
fi
# The scratch dir may lie inside the build tree, so look for the build's own plugin directory.
if grep -qF -- "$build/$libdir/" <<<"$out"; then
    printf '%s\n' "$out" >&2
    fail "the installed CLI loaded plugins from the build tree's $build/$libdir"
fi

# (b) With KP_PLUGIN_PATH it also finds oot.negate and verifies it, for each way of building it.
for dir in "$cmake_dir" "$pc_dir"; do
    echo "test-outoftree: KP_PLUGIN_PATH=$dir kernelport kernels / verify oot"
    out=$(KP_PLUGIN_PATH=$dir "$kp" kernels 2>&1) || {
        printf '%s\n' "$out" >&2
        fail "KP_PLUGIN_PATH=$dir kernelport kernels failed"
    }
    expect "$out" "oot.negate" "KP_PLUGIN_PATH=$dir kernelport kernels"
    expect "$out" "$dir/oot.so" "KP_PLUGIN_PATH=$dir kernelport kernels"
    expect "$out" "example.axpy" "KP_PLUGIN_PATH=$dir kernelport kernels"
    out=$(KP_PLUGIN_PATH=$dir "$kp" verify oot 2>&1) || {
        printf '%s\n' "$out" >&2
        fail "KP_PLUGIN_PATH=$dir kernelport verify oot failed"
    }
    expect "$out" "2 checks, 0 failed" "KP_PLUGIN_PATH=$dir kernelport verify oot"
done

# ---- 5. An application built with pkg-config --cflags --libs -------------------------------------
# examples/axpy.c linked against the installed library finds the installed example plugin too.
app_src=$here/../../examples/axpy.c
if [[ -f $app_src ]]; then
    pc_libs=$(pkg-config --libs kernelport) || fail "pkg-config --libs kernelport failed"
    read -r -a libs <<<"$pc_libs"
    step "$logs/app-build.log" "building examples/axpy.c with pkg-config --cflags --libs" "$cc" \
        -std=c11 -O2 -Wall -Wextra -Werror "${app_flags[@]}" "${cflags[@]}" -o "$scratch/axpy" \
        "$app_src" "${libs[@]}" -Wl,-rpath,"$prefix/$libdir" -lm
    step "$logs/app-run.log" "running it" "$scratch/axpy"
    expect "$(cat "$logs/app-run.log")" "$installed_plugins/example.so" "examples/axpy.c"
fi

# ---- 6. A program linked with the installed libkernelport.a -------------------------------------
# Once with pkg-config --static (kernelport-static.pc), once with the CMake package's target; each
# runs from the prefix's bin directory, where it finds the installed plugins as the shared library
# does (or has them compiled in, with KP_STATIC_PLUGINS). Nothing of libkernelport.so is loaded.
if [[ $(cache_get KP_STATIC_PLUGINS) =~ ^(ON|on|1|TRUE|true|YES|yes)$ ]]; then
    from="(static)"
else
    from="$installed_plugins/example.so"
fi
pc_static=$(pkg-config --cflags --static --libs kernelport-static) ||
    fail "pkg-config --static kernelport-static failed"
read -r -a static_flags <<<"$pc_static"
step "$logs/static-pc-build.log" "linking static-app.c with pkg-config --static --libs kernelport-static" \
    "$cc" -std=c11 -O2 -Wall -Wextra -Werror "${app_flags[@]}" -o "$prefix/bin/static-app-pc" \
    "$here/static/static-app.c" "${static_flags[@]}"
static_build=$scratch/static-build
step "$logs/static-cmake.log" "configuring static-app with Kernelport::kernelport_static" \
    "$cmake" -S "$here/static" -B "$static_build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_FLAGS="${app_flags[*]}" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
    -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF
step "$logs/static-cmake-build.log" "building static-app (CMake)" "$cmake" --build "$static_build"
cp "$static_build/static-app" "$prefix/bin/static-app-cmake"
for app in "$prefix/bin/static-app-pc" "$prefix/bin/static-app-cmake"; do
    if ldd "$app" | grep -q libkernelport; then
        fail "$app loads libkernelport.so: $(ldd "$app")"
    fi
    step "$logs/static-run.log" "running $app" "$app"
    expect "$(cat "$logs/static-run.log")" "example.axpy from $from" "$app"
done

echo "test-outoftree: PASS"
