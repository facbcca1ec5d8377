#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue #29: where the NCCL transport's programs hang on two GPUs (test-comm-np2 under
# KP_COMM_TRANSPORT=nccl, and fashion-mnist and bench-allreduce after their last line), in one call
# of the device tool. Each program runs on 2 ranks in the background; any rank still alive after
# its allowance has every thread's stack printed (cuda-gdb, or gdb, attached in batch mode), then
# the job is killed. A build with debug information (RelWithDebInfo) names the functions.
#   device run:  kind nvidia-h100-x2, carry [".gpu", ".gpu-mpi"], command:
#                bash scripts/gpu/comm-hang.sh (exits 1 where a program hung)
# shellcheck source=preamble.sh
source "$(dirname "$0")/preamble.sh"
kp_begin comm-hang /tmp/kp-comm-hang-out
kp_setup
kp_mpi
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
gdb=$(command -v gdb || ls /usr/local/cuda*/bin/cuda-gdb 2>/dev/null | head -1)
echo "debugger: ${gdb:-none}"

step build
cmake -S . -B build-gpu-debug -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKP_BUILD_TESTS=ON \
  -DKP_BUILD_PYTHON=OFF -DKP_WITH_MPI=ON -DMPI_C_COMPILER="$mpicc" \
  -DMPIEXEC_EXECUTABLE="$mpirun" >/tmp/kp-configure.log 2>&1 &&
  cmake --build build-gpu-debug -- -j"$(nproc)" test-comm bench-allreduce fashion-mnist \
    >/tmp/kp-build.log 2>&1 || { tail -40 /tmp/kp-configure.log /tmp/kp-build.log; exit 1; }

# watch NAME SECONDS EXE COMMAND...: runs COMMAND on 2 ranks; after SECONDS prints the stacks of
# its processes whose executable is named EXE, kills the job and sets hung (the script's status).
hung=0
watch() {
  local name=$1 allow=$2 exe=$3 pid t
  shift 3
  step "$name (stacks after $allow s)"
  bash tests/mpi/run.sh "$mpirun" 2 "$@" >"$out/$name.log" 2>&1 &
  pid=$!
  for ((t = 0; t < allow; t++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  tail -15 "$out/$name.log"
  if kill -0 "$pid" 2>/dev/null; then
    echo "-- still running after $allow s: stacks"
    hung=1
    local p
    for p in $(pgrep -x "$exe"); do
      echo "--- pid $p" | tee -a "$out/$name-stacks.txt"
      [[ -n $gdb ]] && timeout 60 "$gdb" -p "$p" -batch -ex 'thread apply all bt 30' 2>&1 |
        grep -E '^(Thread|#)' >>"$out/$name-stacks.txt"
    done
    # The main thread of each: the first frames that name Kernelport's code.
    grep -E '^Thread 1 |/work/|kp_|comm_' "$out/$name-stacks.txt" | head -40
    pkill -9 -x "$exe"
    kill -9 "$pid" 2>/dev/null
  fi
  wait "$pid"
  echo "exit $?"
}

bin=build-gpu-debug/bin
watch test-comm 60 test-comm env KP_TEST_DEVICE='gpu:%r' "$bin/test-comm"
watch test-comm-nccl 60 test-comm env KP_TEST_DEVICE='gpu:%r' KP_COMM_TRANSPORT=nccl \
  "$bin/test-comm"
watch fashion-mnist-nccl 45 fashion-mnist env KP_COMM_TRANSPORT=nccl "$bin/fashion-mnist" \
  --device 'gpu:%r' --epochs 1 --batch 64 --train-limit 6400 --test-limit 1000
watch bench-allreduce-nccl 45 bench-allreduce "$bin/bench-allreduce" --device 'gpu:%r' \
  --min-mb 1 --max-mb 4 --reps 3 --transport nccl
echo "done in $(( $(date +%s) - started )) s"
exit "$hung"
