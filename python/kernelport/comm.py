# SPDX-License-Identifier: Apache-2.0
"""Collectives over MPI between the runtimes of a job's ranks (include/kernelport/comm.h,
docs/comm.md): all-reduce, broadcast and barrier of buffers, deterministic (every rank gets the
same bits, the same on every run), failures that never hang.

    import kernelport as kp, kernelport.comm    # run under mpirun -np N
    rt = kp.Runtime()
    with kp.comm.Communicator(rt) as comm:      # MPI_COMM_WORLD
        comm.allreduce(grads, op="mean")        # a Buffer (contiguous f32), in place

Only where the package was built with MPI: a CMake build tree that found it (libkernelport-comm).
The wheel (`pip install .`) is built without, so that it needs no MPI; importing this module
there raises ImportError. MPI is initialised by the first Communicator when the program has not
done it (MPI_THREAD_SERIALIZED), and then finalised at exit after the open communicators close.
"""
import atexit
import weakref

import numpy as np

from . import _kernelport

if not hasattr(_kernelport, "Communicator"):
    raise ImportError(
        "kernelport.comm: this kernelport was built without MPI (libkernelport-comm): build it "
        "with CMake where MPI is installed (KP_WITH_MPI)"
    )

TRANSPORTS = {
    "auto": 0,
    "staged": _kernelport.COMM_STAGED,
    "shared": _kernelport.COMM_SHARED,
    "nccl": _kernelport.COMM_NCCL,
}
OPS = {"sum": _kernelport.COMM_SUM, "mean": _kernelport.COMM_MEAN}

_open = weakref.WeakSet()


def _op(op):
    if op not in OPS:
        raise ValueError(f"op: expected one of {', '.join(OPS)}, got {op!r}")
    return OPS[op]


class Communicator(_kernelport.Communicator):
    """A communicator of runtimes, one per rank (kp_comm_create; collective: every rank of `comm`
    makes one). comm: None for MPI_COMM_WORLD, or another communicator as an mpi4py Comm (any
    object whose py2f() gives its Fortran handle). transport: "auto" (KP_COMM_TRANSPORT,
    else the shared segment on one node for non-CPU devices, host staging otherwise), "staged",
    "shared" or "nccl". timeout: the longest a collective waits for the other ranks, in seconds
    (None: KP_COMM_TIMEOUT, else 300). A collective that fails raises (a kernelport.Error naming
    the rank or the calls that differ) and leaves the communicator unusable. close() (or a with
    block) destroys it, collectively; closing its runtime closes it too."""

    def __new__(cls, runtime, comm=None, *, transport="auto", timeout=None):
        if transport not in TRANSPORTS:
            raise ValueError(f"transport: expected one of {', '.join(TRANSPORTS)}, got "
                             f"{transport!r}")
        if comm is not None:
            # Not a bare handle: an invalid one would reach MPI's fatal error handler.
            if not hasattr(comm, "py2f"):
                raise TypeError("comm: expected None (MPI_COMM_WORLD) or an mpi4py Comm (an "
                                f"object with py2f()), got {type(comm).__name__}")
            comm = int(comm.py2f())
        self = super().__new__(cls, runtime, comm, TRANSPORTS[transport],
                               0.0 if timeout is None else float(timeout))
        _open.add(self)
        return self

    @property
    def transport(self):
        """The device collectives' transport: "staged", "shared" or "nccl"."""
        return self._transport[0]

    @property
    def transport_reason(self):
        """Why that transport was chosen (kp_comm_transport)."""
        return self._transport[1]

    def allreduce(self, buffer, op="sum"):
        """Sums (op "sum") or averages ("mean") a contiguous f32 Buffer view over the ranks, in
        place, in rank order; blocking. Returns the buffer."""
        self._allreduce(buffer, _op(op))
        return buffer

    def allreduce_host(self, array, op="sum"):
        """The same for host values (losses, counts): a new float32 array."""
        out = np.array(array, dtype=np.float32, order="C", copy=True)
        self._allreduce_host(out, _op(op))
        return out

    def broadcast(self, buffer, root=0):
        """Copies a contiguous Buffer view from rank `root` to every other rank. Returns it."""
        self._broadcast(buffer, int(root))
        return buffer

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        if self.closed:
            return "<kernelport.comm.Communicator closed>"
        return f"<kernelport.comm.Communicator rank {self.rank} of {self.size}, {self.transport}>"


@atexit.register
def _finalize():
    # Communicators first (their destruction is collective), then MPI where this module
    # initialised it.
    for c in list(_open):
        c.close()
    _kernelport._mpi_finalize()


__all__ = ["Communicator", "TRANSPORTS", "OPS"]
