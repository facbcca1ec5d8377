#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs an MPI program on N local ranks with Open MPI's or MPICH's launcher: usage
# run.sh MPIEXEC N PROGRAM [ARGS...]; with N 0 the arguments go to the launcher as they are, for
# programs that differ between ranks (`-np 1 A : -np 1 B`, which both launchers take). Open MPI
# needs --oversubscribe for more ranks than cores (CI has 2) and refuses root unless told (CI's
# containers run as root); its shared-memory transport's single-copy mode needs ptrace rights
# containers often lack.
set -euo pipefail
mpiexec=$1
n=$2
shift 2
# Open MPI's own switches for root, read by every Open MPI command (--version too); MPICH ignores
# them.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
version=$("$mpiexec" --version 2>&1 || true)
if [[ $version == *"Open MPI"* || $version == *OpenRTE* || $version == *open-mpi.org* ]]; then
  export OMPI_MCA_btl_vader_single_copy_mechanism=none
  ((n)) && set -- -np "$n" "$@"
  exec "$mpiexec" --oversubscribe "$@"
fi
((n)) && set -- -n "$n" "$@"
exec "$mpiexec" "$@"
