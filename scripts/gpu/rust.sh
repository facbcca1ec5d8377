#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Rust binding's tests (bindings/rust) on the NVIDIA device and on the machine's PoCL, in one
# call of the device tool. The GPU machine has no Rust toolchain and no registry: the test programs
# are built here, stripped, and carried; they load the library the GPU machine builds (their
# RUNPATH names this machine's build, which LD_LIBRARY_PATH overrides). Then examples/fit (the
# solve layer from Rust: batched Gaussian fits, 10^6 on the GPU and 10^5 on PoCL, each also by the
# host reference, one thread). What to read: every test passes on both devices (solve-*: NIST's
# Misra1a to 7 digits in f64 on the GPU); fit's JSON lines: fits/s on the GPU with the binding's
# copies in and out, beside bench-solve's gauss2d rows (scripts/gpu/solve.sh: 2D, 5 parameters,
# so not the same fits), converged all, max_param_error.
#   here:        KERNELPORT_DIR=$PWD/build CARGO_TARGET_DIR=$PWD/build-rust-gpu \
#                CARGO_PROFILE_RELEASE_STRIP=symbols \
#                cargo test --release --no-run --manifest-path bindings/rust/Cargo.toml
#   device run:  carry [".gpu", "build-rust-gpu"], command: bash scripts/gpu/rust.sh
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin rust /tmp/kp-rust-out
kp_setup
kp_build_here "$out/build.log"

mapfile -t tests < <(find build-rust-gpu/release/deps -maxdepth 1 -type f -executable \
  \( -name 'axpy-*' -o -name 'blas-*' -o -name 'errors-*' -o -name 'gru-*' -o -name 'ops-*' \
  -o -name 'threads-*' -o -name 'solve-*' \) ! -name '*.so' | sort)
if ((${#tests[@]} == 0)); then
  echo "no test programs in build-rust-gpu/release/deps: build them here first (see the header)"
  exit 1
fi
export LD_LIBRARY_PATH="$top/build-gpu/lib" KP_TEST_FIXTURES="$top/tests/fixtures"
# KP_RUST_ONLY: run only the test programs whose names start with it (and not examples/fit);
# KP_RUST_DEVICES (default "nvidia pocl"); KP_RUST_THREADS: --test-threads (default 2). A program
# that fails prints its whole output's tail (a crash says nothing in the summary lines).
for d in ${KP_RUST_DEVICES:-nvidia pocl}; do
  for t in "${tests[@]}"; do
    name=$(basename "$t")
    [[ -n ${KP_RUST_ONLY:-} && $name != "$KP_RUST_ONLY"* ]] && continue
    step "$d: $name"
    log="$out/$d-$name.log"
    KP_DEVICE=$d timeout "$(cap 120)" "$t" --test-threads="${KP_RUST_THREADS:-2}" --nocapture \
      >"$log" 2>&1 || { echo "exit status $?"; tail -40 "$log"; }
    grep -E '^device:|test |result' "$log" | sort -u
  done
done
[[ -n ${KP_RUST_ONLY:-} ]] && exit 0
for run in "nvidia 1000000" "pocl 100000"; do
  read -r d fits <<<"$run"
  step "$d: examples/fit $fits"
  KP_DEVICE=$d timeout "$(cap 180)" build-rust-gpu/release/examples/fit "$fits" --json
done
echo "done in $(( $(date +%s) - started )) s"
