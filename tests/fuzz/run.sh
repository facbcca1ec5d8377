#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets (clang, ASan + UBSan) into build-fuzz/ and runs each for SECONDS
# (default 60) from its seed corpus: tests/fuzz/run.sh [SECONDS] [TARGET...]
# The default targets are the manifest's; fuzz-expr-parse (the solve layer's text form) runs when
# named: tests/fuzz/run.sh 60 fuzz-expr-parse.
# New inputs that reach new code are kept in build-fuzz/corpus/TARGET (not committed); a crash
# leaves its input in build-fuzz/crash-TARGET-* and fails the run. CI runs this with 60 s each.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-60}
shift || true
targets=("$@")
(( ${#targets[@]} )) || targets=(fuzz-manifest-parse fuzz-manifest-write)
command -v clang >/dev/null || { echo "fuzz: needs clang (apt-get install clang)" >&2; exit 1; }
dir="$top/build-fuzz"
if [[ ! -f "$dir/build.ninja" ]]; then
  CC=clang cmake -S "$top" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DKP_FUZZ=ON \
    -DKP_BUILD_TESTS=OFF -DKP_BUILD_BENCH=OFF -DKP_WERROR=ON >/dev/null
fi
cmake --build "$dir" --target "${targets[@]}" -- -j"$(nproc)"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
declare -A seeds=(
  [fuzz-manifest-parse]="$top/tests/fixtures/manifests $top/tests/fuzz/seeds/manifest-write"
  [fuzz-manifest-write]="$top/tests/fuzz/seeds/manifest-write"
  [fuzz-expr-parse]="$top/tests/fuzz/seeds/expr-parse"
)
declare -A dicts=(
  [fuzz-manifest-parse]="$top/tests/fuzz/manifest.dict"
  [fuzz-manifest-write]="$top/tests/fuzz/manifest.dict"
  [fuzz-expr-parse]="$top/tests/fuzz/expr.dict"
)
for t in "${targets[@]}"; do
  corpus="$dir/corpus/$t"
  mkdir -p "$corpus"
  [[ $t == fuzz-manifest-* ]] && cp -f "$top/core/default-manifest.yaml" "$corpus/default-manifest.yaml"
  log="$dir/$t.log"
  echo "fuzz: $t for ${seconds} s"
  # shellcheck disable=SC2086
  if ! "$dir/bin/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -dict="${dicts[$t]}" -artifact_prefix="$dir/crash-$t-" \
      -print_final_stats=1 "$corpus" ${seeds[$t]} >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    echo "fuzz: $t FAILED (input saved as $dir/crash-$t-*; log $log)" >&2
    exit 1
  fi
  runs=$(grep -m1 -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$' || true)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || true)
  echo "fuzz: $t: ${runs:-?} inputs in ${seconds} s, coverage ${cov:-?} edges, no failure"
done
