#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages Kernelport needs to build, test and run, when any is missing.
# Sourced or run by run.sh, test.sh and .ci/run; safe to run again (installs only what is absent).
set -euo pipefail

kp_packages=(
  build-essential cmake ninja-build pkg-config
  ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd clinfo
  libclblast-dev libyaml-dev libcmocka-dev libopenblas-dev zlib1g-dev
)
# Extra tools the test command uses: the style check, the OpenCL simulator, clang (tc.cl's
# compile for NVIDIA's target), the Fashion-MNIST images the CNN example's test trains on,
# Python's headers, venv and NumPy (the Python package's build and tests; python/ci.sh), Open MPI
# (libkernelport-comm and its mpirun tests, docs/comm.md), and cargo and rustfmt (the Rust
# binding).
if [[ "${KP_DEPS_TEST:-0}" == 1 ]]; then
  kp_packages+=(clang-format oclgrind clang dataset-fashion-mnist python3-dev python3-venv
                python3-numpy libopenmpi-dev openmpi-bin)
  # The Rust binding's cargo test and format check (bindings/rust), unless a Rust toolchain has
  # them already.
  command -v cargo >/dev/null || kp_packages+=(cargo)
  command -v rustfmt >/dev/null || kp_packages+=(rustfmt)
fi

missing=()
for p in "${kp_packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "kernelport: installing missing packages: ${missing[*]}" >&2
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null; then
      sudo=(sudo)
    else
      echo "kernelport: need root (or sudo) to install: ${missing[*]}" >&2
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
