#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the test suite against another OpenCL device than PoCL, to show no test assumes one
# machine's device: scripts/test-device.sh oclgrind [ctest arguments...]
# "oclgrind": Oclgrind's simulator (Debian's oclgrind), a device with other limits than PoCL's
# (32 KiB of local memory, 1024 work-items per group, reported as a GPU), made visible beside PoCL
# through a vendors directory of its own. Tests that use the default device or test_device() run
# there; tests of PoCL itself keep PoCL. Uses the build in build/ (./test.sh makes it).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
device=${1:?usage: scripts/test-device.sh oclgrind [ctest arguments...]}
shift
vendors="$top/build/test-state/vendors-$device"
mkdir -p "$vendors"
cp /etc/OpenCL/vendors/*.icd "$vendors/"
case "$device" in
  oclgrind)
    icd=$(dpkg -L oclgrind 2>/dev/null | grep -m1 'liboclgrind-rt-icd.so$' || true)
    [[ -n "$icd" ]] || { echo "test-device: install oclgrind (apt-get install oclgrind)" >&2; exit 1; }
    echo "$icd" > "$vendors/oclgrind.icd"
    ;;
  *) echo "test-device: unknown device '$device' (known: oclgrind)" >&2; exit 2 ;;
esac
cd "$top/build"
OCL_ICD_VENDORS="$vendors" KP_TEST_DEVICE="$device" ctest --output-on-failure "$@"
