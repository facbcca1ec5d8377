#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every kernel on Oclgrind's simulator at its smallest verification size, with its data-race and
# uninitialized-value checks: tests/oclgrind/run.sh BUILD_DIR STATE_DIR [PATTERN]
# The simulator is reached through the ICD loader (a vendors directory holding only it), as any
# OpenCL device is, so CLBlast's kernels run there too. Fails when a kernel fails verification or
# Oclgrind reports anything (its log is printed).
set -euo pipefail
build=${1:?usage: tests/oclgrind/run.sh BUILD_DIR STATE_DIR [PATTERN]}
state=${2:?usage: tests/oclgrind/run.sh BUILD_DIR STATE_DIR [PATTERN]}
pattern=${3:-}
icd=$(dpkg -L oclgrind 2>/dev/null | grep -m1 'liboclgrind-rt-icd.so$' || true)
[[ -n "$icd" ]] || { echo "oclgrind: install oclgrind (apt-get install oclgrind)" >&2; exit 1; }
rm -rf "$state" && mkdir -p "$state/vendors" "$state/cache"
echo "$icd" > "$state/vendors/oclgrind.icd"
# Oclgrind's uninitialized-value check stops at LLVM's `freeze` instruction ("Unsupported
# instruction"), which the optimizer emits; unoptimized kernels have none. A fresh cache keeps a
# binary built without those options from being reused.
export OCL_ICD_VENDORS="$state/vendors" XDG_CACHE_HOME="$state/cache"
export OCLGRIND_DATA_RACES=1 OCLGRIND_UNINITIALIZED=1 OCLGRIND_BUILD_OPTIONS=-cl-opt-disable
# One simulator per kernel: in one process, logic.backward's dw came out reported as uninitialized
# after gru's and logic's other kernels had run, though alone, or after either family alone, it
# is clean at every size; the reports name the simulator's state, not the kernel's.
mapfile -t kernels < <("$build/bin/kernelport" --device oclgrind --json kernels ${pattern:+"$pattern"} |
  python3 -c 'import json, sys; print("\n".join(k["name"] for k in json.load(sys.stdin)["kernels"]))')
(( ${#kernels[@]} )) || { echo "oclgrind: no kernel matches '${pattern:-*}'" >&2; exit 1; }
failed=()
for k in "${kernels[@]}"; do
  log="$state/$k.log"
  rc=0
  OCLGRIND_LOG="$log" "$build/bin/kernelport" --device oclgrind verify "$k" --smallest \
    > "$state/$k.out" 2>&1 || rc=$?
  reports=$(grep -c '^[A-Z]' "$log" 2>/dev/null || true)
  verdict=ok
  grep -q ' SKIP ' "$state/$k.out" && verdict="skipped (the device cannot run it)"
  (( rc )) && verdict="FAILED (exit $rc)"
  printf '%-28s %s, %s simulator reports\n' "$k" "$verdict" "${reports:-0}"
  if (( rc )) || [[ -s "$log" ]]; then
    failed+=("$k")
    cat "$state/$k.out" >&2
    head -c 8000 "$log" >&2
  fi
done
echo "oclgrind: ${#kernels[@]} kernels, ${#failed[@]} failed${failed:+: ${failed[*]}}"
(( ${#failed[@]} == 0 ))
