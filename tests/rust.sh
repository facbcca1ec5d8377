#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Rust binding's tests (bindings/rust: cargo test, offline) against this build's library, its
# build products under BUILD_DIR/rust-target. Usage: rust.sh CARGO BUILD_DIR
set -euo pipefail
cargo=$1
build=$2
top=$(cd "$(dirname "$0")/.." && pwd)
export KERNELPORT_DIR="$build"
export CARGO_TARGET_DIR="$build/rust-target"
cd "$top/bindings/rust"
"$cargo" --version
"$cargo" test --offline --jobs "$(nproc)"
