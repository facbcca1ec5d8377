# SPDX-License-Identifier: Apache-2.0
# What every scripts/gpu/*.sh driver begins with, sourced (never run on its own) as
#   source "$(dirname "$0")/preamble.sh"
#   kp_begin NAME DEFAULT_OUT [results]
# The drivers run on the lent GPU machine in one call of the device tool, with ".gpu" carried (the
# Debian packages that ../shared/gpu/stage.sh staged there: OpenCL loader, CLBlast, libyaml, ...),
# and $OUT the folder whose files come back (at most 8 of them).
#
# kp_begin   cd to the repository root ($top); $out is $OUT or DEFAULT_OUT; with "results", $res is
#            $out/results (packed into one tarball by kp_pack); everything printed from here on is
#            also written to $out/gpu-NAME.log. Starts the clock for step and cap.
# step TEXT  prints "== TEXT (N s)", N the seconds since kp_begin.
# kp_deadline SECONDS, cap N
#            cap prints N, shortened so that a step ends 20 s before the deadline (kp_begin's time
#            plus SECONDS); every long step runs under `timeout "$(cap N)"`, so that results are
#            still packed and brought back before the device tool stops the command at 600 s.
# kp_setup   installs the carried packages (.gpu and .gpu-mpi) as .gpu/setup.sh does (keeping /lib
#            a symlink), registers NVIDIA's OpenCL driver next to PoCL, prints the OpenCL platforms
#            and the GPU, and sets the caches (XDG_CACHE_HOME, POCL_CACHE_DIR under /tmp) and
#            KP_LOG=warn.
# kp_build SOURCE BUILD LOG
#            a Release build of SOURCE into BUILD without the tests, its output in LOG; on a
#            failure prints LOG's last 40 lines and exits 1.
# kp_build_here LOG
#            step build, kp_build of the working tree into build-gpu, then
#            kp=build-gpu/bin/kernelport.
# kp_pack    tars $res into $out/results.tar.gz, removes $res, prints the time taken.
# kp_openblas
#            unpacks the OpenBLAS that scripts/gpu/stage-openblas.sh staged in .gpu/openblas under
#            /tmp and points pkg-config and LD_LIBRARY_PATH there (call it before kp_build_here);
#            without .gpu/openblas the build takes this machine's OpenBLAS, if any. Sets
#            OPENBLAS_CORETYPE from the CPU's flags (SkylakeX, Haswell) unless already set.
# kp_mpi     sets $mpirun and $mpicc to the first MPI (KP_MPI, else MPICH then Open MPI: Debian's
#            Open MPI launcher crashed in PMIx on the Ubuntu two-GPU host) whose launcher starts two
#            ranks here, and the environment both need; exits 1 where none does.
# shellcheck shell=bash
# shellcheck disable=SC2034 # the variables below are read by the drivers
set -uo pipefail
# Set by kp_begin and kp_build_here; named here so that each driver reads them as the preamble's.
top="" out="" res="" started=0 deadline=0 kp="" mpirun="" mpicc=""

kp_begin() { # NAME DEFAULT_OUT [results]
  top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  cd "$top" || exit 1
  out=${OUT:-$2}
  res=$out
  [[ ${3:-} == results ]] && res="$out/results"
  mkdir -p "$res"
  exec > >(tee "$out/gpu-$1.log") 2>&1
  started=$(date +%s)
  deadline=$(( started + 560 ))
}

step() { echo; echo "== $* ($(( $(date +%s) - started )) s)"; }

kp_deadline() { deadline=$(( started + $1 )); }

cap() {
  local l=$(( deadline - $(date +%s) - 20 ))
  (( l < 1 )) && l=1
  (( l < $1 )) && echo "$l" || echo "$1"
}

kp_setup() {
  step setup
  if [[ -f .gpu/setup.sh ]]; then
    # What .gpu/setup.sh does, but unpacked by tar with --keep-directory-symlink: setup.sh's
    # `dpkg -x pkg /` replaces a merged-/usr host's /lib symlink by a directory when a package
    # ships files under /lib (libnl-3-200 does), and the linker then loses libc.so.6 (the two-GPU
    # host's CMake check failed so).
    local deb
    for deb in .gpu/*.deb .gpu-mpi/*.deb; do
      [[ -f $deb ]] || continue
      dpkg-deb --fsys-tarfile "$deb" | tar -x --keep-directory-symlink -C /
    done
    ldconfig
    mkdir -p /etc/OpenCL/vendors
    [[ -e /etc/OpenCL/vendors/nvidia.icd ]] || echo libnvidia-opencl.so.1 >/etc/OpenCL/vendors/nvidia.icd
  else
    echo "no .gpu/setup.sh (stage it with ../shared/gpu/stage.sh and carry .gpu): using what" \
      "this machine has"
  fi
  command -v clinfo >/dev/null && clinfo -l
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv ||
    true
  export XDG_CACHE_HOME=/tmp/kp-cache POCL_CACHE_DIR=/tmp/kp-pocl-cache KP_LOG=warn
}

kp_build() { # SOURCE BUILD LOG
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKP_BUILD_TESTS=OFF >/dev/null &&
    cmake --build "$2" -- -j"$(nproc)" >"$3" 2>&1 || { tail -40 "$3"; exit 1; }
}

kp_build_here() { # LOG
  step build
  kp_build . build-gpu "$1"
  kp=build-gpu/bin/kernelport
}

# Builds bench/probes/nccl-interop-probe into OUTPUT with -DKP_CUDA_NCCL_CHECK_ABI against the
# cuda.h and nccl.h of PyTorch's NVIDIA wheels (/opt/torch/.venv): comm/cuda-nccl.h's layouts and
# values are checked at compile time (its symbol names when the probe runs). Returns 1, saying
# why, where the headers are missing or the check fails (the compiler's log in LOG).
kp_cuda_abi_build() { # OUTPUT LOG
  local sites=(/opt/torch/.venv/lib/python3*/site-packages/nvidia) cuda_h="" nccl_h="" h
  # nccl.h includes cuda_runtime.h: the folder that has both it and cuda.h.
  while read -r h; do
    [[ -f $(dirname "$h")/cuda.h ]] && { cuda_h=$(dirname "$h")/cuda.h; break; }
  done < <(find "${sites[0]}" -name cuda_runtime.h -path '*include*' 2>/dev/null)
  nccl_h=$(find "${sites[0]}" -name nccl.h -path '*include*' 2>/dev/null | head -1)
  if [[ -z $cuda_h || -z $nccl_h ]]; then
    echo "no cuda.h and nccl.h under ${sites[0]}"
    return 1
  fi
  echo "cuda.h: $cuda_h"
  echo "nccl.h: $nccl_h"
  # CUDA 13's runtime wheel (nvidia/cu13) has cuda_runtime.h without the crt/ folder it includes
  # (the compiler's): no C file that includes nccl.h compiles against it.
  if [[ ! -f $(dirname "$cuda_h")/crt/host_config.h ]] &&
    [[ -z $(find "${sites[0]}" -path '*/crt/host_config.h' 2>/dev/null | head -1) ]]; then
    echo "no crt/host_config.h under ${sites[0]} (cuda_runtime.h includes it): the ABI check" \
      "cannot compile on this machine"
    return 1
  fi
  if ! cc -std=c11 -O2 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -DKP_CUDA_NCCL_CHECK_ABI \
    -Icomm -isystem "$(dirname "$cuda_h")" -isystem "$(dirname "$nccl_h")" \
    bench/probes/nccl-interop-probe.c -o "$1" -lOpenCL -ldl >"$2" 2>&1; then
    echo "the ABI-checked build failed (a declaration of comm/cuda-nccl.h differs from the" \
      "headers, or the headers do not compile as C):"
    tail -20 "$2"
    return 1
  fi
  echo "comm/cuda-nccl.h: layouts and values match cuda.h and nccl.h"
}

# The staged OpenBLAS under /tmp, not /: the machine's own libraries stay as they are. The
# Fortran runtime comes from it too where the machine has none.
kp_openblas() {
  local ob=/tmp/kp-openblas lib=/tmp/kp-openblas/usr/lib/x86_64-linux-gnu
  compgen -G ".gpu/openblas/*.deb" >/dev/null || {
    echo "no .gpu/openblas (scripts/gpu/stage-openblas.sh): built with this machine's OpenBLAS," \
      "if any"
    return 0
  }
  for f in .gpu/openblas/*.deb; do dpkg -x "$f" "$ob"; done
  sed -i "s|=/usr/|=$ob/usr/|" "$lib/openblas-pthread/pkgconfig/openblas.pc"
  export PKG_CONFIG_PATH="$lib/openblas-pthread/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  local path="$lib/openblas-pthread"
  ldconfig -p | grep -q 'libgfortran.so.5 ' || path="$path:$lib"
  export LD_LIBRARY_PATH="$path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "OpenBLAS from .gpu/openblas: $(pkg-config --modversion openblas)"
  # Debian 12's OpenBLAS 0.3.21 (DYNAMIC_ARCH) does not recognise the GPU machine's Xeon and runs
  # its Prescott (SSE3) kernels there: the core is named from the CPU's flags unless the caller
  # named one.
  if [[ -z ${OPENBLAS_CORETYPE:-} ]]; then
    if grep -qw avx512f /proc/cpuinfo; then
      export OPENBLAS_CORETYPE=SkylakeX
    elif grep -qw avx2 /proc/cpuinfo; then
      export OPENBLAS_CORETYPE=Haswell
    fi
  fi
  echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset: OpenBLAS chooses}"
}

kp_pack() {
  step pack
  tar -C "$out" -czf "$out/results.tar.gz" "$(basename "$res")"
  rm -rf "$res"
  echo "done in $(( $(date +%s) - started )) s"
}

kp_mpi() {
  local impl launcher compiler
  for impl in ${KP_MPI:-mpich openmpi}; do
    launcher=$(command -v "mpiexec.$impl" || command -v "mpirun.$impl" || true)
    compiler=$(command -v "mpicc.$impl" || true)
    [[ -n $launcher && -n $compiler ]] || continue
    if PMIX_MCA_gds=hash timeout 30 bash tests/mpi/run.sh "$launcher" 2 true; then
      mpirun=$launcher mpicc=$compiler
      echo "MPI: $impl ($("$launcher" --version 2>&1 | head -1))"
      # PMIx's shared-memory store (gds ds21) is a known source of launcher crashes; the hash
      # store serves two ranks as well. MPICH ignores it and Open MPI's root switches.
      export PMIX_MCA_gds=hash OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
      return 0
    fi
    echo "MPI: $impl's launcher failed to start 2 ranks here"
  done
  echo "no working MPI here: stage Open MPI and MPICH into .gpu-mpi with scripts/gpu/stage-mpi.sh" \
    "and carry .gpu-mpi"
  exit 1
}
