# SPDX-License-Identifier: Apache-2.0
"""kernelport.comm on the ranks of an MPI job (ctest's test-python-comm-np2 runs it under mpirun
with 2 ranks; not a pytest module): all-reduce, mean, host values, broadcast and barrier against
the values every rank can compute, bad arguments raising on every rank with the communicator
still usable, a rank's fail() reaching the others, and communicators closed with their runtime.
Exits 0 when every check passed."""
import sys

import numpy as np

import kernelport as kp
import kernelport.comm


def check(ok, what):
    if not ok:
        raise AssertionError(what)


def main():
    rt = kp.Runtime()
    comm = kp.comm.Communicator(rt, timeout=60)
    rank, size = comm.rank, comm.size
    check(size >= 2 and 0 <= rank < size, f"rank {rank} of {size}")
    check(comm.transport in ("staged", "shared", "nccl") and comm.transport_reason,
          f"transport {comm.transport!r}: {comm.transport_reason!r}")
    n = 1009  # a prime
    base = np.arange(n, dtype=np.float32)

    # Every rank adds (rank + 1) * base: the sum is base * size (size + 1) / 2, exact in f32.
    buf = rt.buffer(base * (rank + 1))
    check(comm.allreduce(buf) is buf, "allreduce returns its buffer")
    total = size * (size + 1) // 2
    np.testing.assert_array_equal(buf.numpy(), base * total)
    comm.allreduce(buf, op="mean")
    np.testing.assert_allclose(buf.numpy(), base * total, rtol=1e-6)  # the mean of equal values
    # A view: the middle of a buffer only.
    whole = rt.buffer(np.full(10, rank + 1.0, np.float32))
    comm.allreduce(whole.narrow(0, 3, 4))
    got = whole.numpy()
    check((got[3:7] == total).all() and (got[:3] == rank + 1).all() and (got[7:] == rank + 1).all(),
          f"allreduce of a view: {got}")
    np.testing.assert_array_equal(comm.allreduce_host([rank + 1.0, 2.0]), [total, 2.0 * size])

    # Broadcast from the last rank.
    b = rt.buffer(np.full(5, float(rank), np.float32))
    comm.broadcast(b, root=size - 1)
    np.testing.assert_array_equal(b.numpy(), np.full(5, size - 1.0, np.float32))
    comm.barrier()

    # The same bad call on every rank: refused before any message, the communicator still usable.
    for bad, exc, text in (
        (lambda: comm.allreduce(rt.buffer(np.ones(4, np.int32))), kp.InvalidArgumentError, "f32"),
        (lambda: comm.allreduce(buf, op="max"), ValueError, "op: expected one of sum, mean"),
        (lambda: comm.broadcast(b, root=size), kp.InvalidArgumentError, "root"),
        (lambda: kp.comm.Communicator(rt, comm=0), TypeError, "comm: expected None"),
        (lambda: kp.comm.Communicator(rt, transport="tcp"), ValueError, "transport: expected"),
    ):
        try:
            bad()
        except exc as e:
            check(text in str(e), f"{text!r} not in {e}")
        else:
            raise AssertionError(f"no {exc.__name__} ({text})")
    comm.allreduce(buf)
    np.testing.assert_allclose(buf.numpy(), base * total * size, rtol=1e-6)

    comm.close()
    try:
        comm.barrier()
    except kp.InvalidArgumentError as e:
        check("closed" in str(e), str(e))
    # A rank that gives up makes the others' next collective fail at once, naming it (last: a
    # failed communicator leaves messages behind for later ones).
    doomed = kp.comm.Communicator(rt, timeout=20)
    if rank == 0:
        doomed.fail("stopping on purpose")
    else:
        try:
            doomed.barrier()
        except kp.Error as e:
            check("rank 0 failed: stopping on purpose" in str(e), str(e))
        else:
            raise AssertionError("a barrier after rank 0's fail() returned")
    # Closing the runtime closes the communicators made on it (collectively: every rank does).
    rt.close()
    check(doomed.closed, "a communicator outlived its runtime")
    print(f"rank {rank} of {size}: comm checks passed", flush=True)


if __name__ == "__main__":
    try:
        main()
    except BaseException as e:  # noqa: BLE001  (a rank that fails says so, and the job fails)
        print(f"mpi_comm.py: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        sys.exit(1)
