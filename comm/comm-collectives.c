/* SPDX-License-Identifier: Apache-2.0 */
/* All-reduce, broadcast and barrier: a deterministic all-reduce on host memory (each rank adds
 * its slice's copies in rank order, then every rank gathers the slices), and the blocking device
 * collectives that stage through it. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "comm-internal.h"

size_t comm_slice_begin(size_t count, int p, int r)
{
    return (size_t)((unsigned __int128)count * (unsigned)r / (unsigned)p);
}

/* Posts a receive and a send with rank `peer`, recording both in reqs/peers. */
static kp_status exchange(kp_comm *c, const char *fn, int peer, int tag, float *recv, size_t n_recv,
                          const float *send, size_t n_send, MPI_Request *reqs, int *peers, int *n)
{
    int rc = MPI_SUCCESS;
    if (n_recv) {
        rc = MPI_Irecv(recv, (int)n_recv, MPI_FLOAT, peer, tag, c->comm, &reqs[*n]);
        if (rc == MPI_SUCCESS)
            peers[(*n)++] = peer;
    }
    if (rc == MPI_SUCCESS && n_send) {
        rc = MPI_Isend(send, (int)n_send, MPI_FLOAT, peer, tag, c->comm, &reqs[*n]);
        if (rc == MPI_SUCCESS)
            peers[(*n)++] = peer;
    }
    return rc == MPI_SUCCESS ? KP_OK : comm_break(c, comm_mpi_fail(c, fn, "MPI_Isend/Irecv", rc));
}

/* The exchange of an all-reduce whose call the ranks agreed on: slices out, sums back. */
static kp_status exchange_floats(kp_comm *c, const char *fn, float *data, size_t count,
                                 kp_comm_op op)
{
    const int p = c->size, me = c->rank;
    kp_status st = KP_OK;
    if (p == 1 || count == 0)
        return st;
    const size_t most = comm_slice_begin(count, p, 1) + 1;
    if (most > INT_MAX)
        return comm_fail(c, KP_ERR_INVALID_ARG, fn,
                         "%zu floats over %d ranks: a slice of more than %d floats", count, p,
                         INT_MAX);
    const size_t mine = comm_slice_begin(count, p, me),
                 n_mine = comm_slice_begin(count, p, me + 1) - mine;
    st = comm_host_reserve(c, &c->slices, (size_t)(p - 1) * (n_mine ? n_mine : 1) * sizeof(float));
    MPI_Request *reqs = st == KP_OK ? malloc(2 * (size_t)p * sizeof *reqs) : NULL;
    int *peers = st == KP_OK ? calloc(2 * (size_t)p, sizeof *peers) : NULL;
    if (st == KP_OK && (!reqs || !peers))
        st = comm_fail(c, KP_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    float *slices = c->slices.ptr;
    /* The other ranks' copies of this rank's slice: rank r's in slot r (r < me) or r - 1. */
    int n = 0;
    for (int r = 0; st == KP_OK && r < p; r++) {
        if (r == me)
            continue;
        const size_t b = comm_slice_begin(count, p, r), e = comm_slice_begin(count, p, r + 1);
        st = exchange(c, fn, r, TAG_SLICE, slices + (size_t)(r < me ? r : r - 1) * n_mine, n_mine,
                      data + b, e - b, reqs, peers, &n);
    }
    if (st == KP_OK)
        st = comm_wait(c, fn, reqs, peers, n);
    if (st == KP_OK) {
        const float scale = (float)p;
        for (size_t i = 0; i < n_mine; i++) {
            float acc = 0;
            for (int r = 0; r < p; r++) {
                const float v =
                    r == me ? data[mine + i] : slices[(size_t)(r < me ? r : r - 1) * n_mine + i];
                acc = r == 0 ? v : acc + v;
            }
            data[mine + i] = op == KP_COMM_MEAN ? acc / scale : acc;
        }
    }
    n = 0;
    for (int r = 0; st == KP_OK && r < p; r++) {
        if (r == me)
            continue;
        const size_t b = comm_slice_begin(count, p, r), e = comm_slice_begin(count, p, r + 1);
        st = exchange(c, fn, r, TAG_RESULT, data + b, e - b, data + mine, n_mine, reqs, peers, &n);
    }
    if (st == KP_OK)
        st = comm_wait(c, fn, reqs, peers, n);
    free(reqs);
    free(peers);
    return st;
}

static int call_kind(kp_comm_op op)
{
    return op == KP_COMM_MEAN ? CALL_ALLREDUCE_MEAN : CALL_ALLREDUCE_SUM;
}

kp_status comm_allreduce_floats(kp_comm *c, const char *fn, float *data, size_t count,
                                kp_comm_op op)
{
    kp_status st = comm_agree(c, fn, call_kind(op), count, 0);
    return st == KP_OK ? exchange_floats(c, fn, data, count, op) : st;
}

kp_status comm_allreduce_shared(kp_comm *c, const char *fn, kp_buffer *buf, size_t offset,
                                size_t count, kp_comm_op op)
{
    /* The queue is in order: the segment's copies follow the work queued on the buffer. */
    kp_status st = comm_agree(c, fn, call_kind(op), count, 0);
    return st == KP_OK ? comm_shared_allreduce(c, fn, kp_buffer_cl_mem(buf), offset, count, op)
                       : st;
}

static kp_status check_op(kp_comm *c, const char *fn, kp_comm_op op)
{
    return op == KP_COMM_SUM || op == KP_COMM_MEAN
               ? KP_OK
               : comm_fail(c, KP_ERR_INVALID_ARG, fn, "op %d is not KP_COMM_SUM or KP_COMM_MEAN",
                           (int)op);
}

/* A device collective failed on this rank's own side (a read or a write): the others are told. */
static kp_status local_failure(kp_comm *c, const char *fn, kp_status st)
{
    char why[768];
    snprintf(why, sizeof why, "%s", kp_last_error(c->rt));
    comm_fail(c, st, fn, "rank %d: %s", c->rank, why);
    return comm_break(c, st);
}

/* Floats per piece of a pipelined all-reduce: large enough that each piece's messages cost
 * little more than their bytes, small enough that the copies of the others hide its exchange. */
#define PIECE_FLOATS ((size_t)1 << 20)

/*
 * The all-reduce of a range of an OpenCL buffer in pieces: every piece's read is enqueued at once
 * (non-blocking, into the pinned staging); piece k is exchanged as soon as its read is done, while
 * the device reads the next ones, and its write back is enqueued behind them. The copies and the
 * exchange overlap, instead of adding up. Blocking: returns after the last write. The sums are the
 * same bits as in one piece (each element's are in rank order either way).
 */
static kp_status allreduce_pieces(kp_comm *c, const char *fn, kp_buffer *buf, size_t offset,
                                  size_t count, kp_comm_op op)
{
    float *data = c->staging.ptr;
    cl_mem mem = kp_buffer_cl_mem(buf);
    const size_t n = (count + PIECE_FLOATS - 1) / PIECE_FLOATS;
    cl_event *reads = calloc(n, sizeof *reads);
    if (!reads)
        return comm_fail(c, KP_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    kp_status st = KP_OK;
    cl_int err = CL_SUCCESS;
    for (size_t k = 0; k < n && err == CL_SUCCESS; k++) {
        const size_t at = k * PIECE_FLOATS,
                     len = count - at < PIECE_FLOATS ? count - at : PIECE_FLOATS;
        err = clEnqueueReadBuffer(c->queue, mem, CL_FALSE, (offset + at) * sizeof(float),
                                  len * sizeof(float), data + at, 0, NULL, &reads[k]);
    }
    if (err == CL_SUCCESS)
        err = clFlush(c->queue);
    for (size_t k = 0; k < n && st == KP_OK && err == CL_SUCCESS; k++) {
        const size_t at = k * PIECE_FLOATS,
                     len = count - at < PIECE_FLOATS ? count - at : PIECE_FLOATS;
        err = clWaitForEvents(1, &reads[k]);
        if (err == CL_SUCCESS)
            st = exchange_floats(c, fn, data + at, len, op);
        if (st == KP_OK && err == CL_SUCCESS)
            err = clEnqueueWriteBuffer(c->queue, mem, CL_FALSE, (offset + at) * sizeof(float),
                                       len * sizeof(float), data + at, 0, NULL, NULL);
        if (st == KP_OK && err == CL_SUCCESS)
            err = clFlush(c->queue);
    }
    /* The staging must outlive every transfer enqueued on it, whatever happened. */
    cl_int done = clFinish(c->queue);
    for (size_t k = 0; k < n; k++)
        if (reads[k])
            clReleaseEvent(reads[k]);
    free(reads);
    if (st != KP_OK)
        return st;
    if (err == CL_SUCCESS)
        err = done;
    if (err != CL_SUCCESS) {
        comm_fail(c, KP_ERR_CL, fn, "rank %d: a staging transfer failed: OpenCL error %d", c->rank,
                  (int)err);
        return comm_break(c, KP_ERR_CL);
    }
    return KP_OK;
}

kp_status kp_comm_allreduce(kp_comm *c, kp_buffer *buf, size_t offset, size_t count, kp_comm_op op)
{
    static const char fn[] = "kp_comm_allreduce";
    kp_status st = comm_usable(c, fn);
    if (st == KP_OK)
        st = check_op(c, fn, op);
    if (st == KP_OK && (offset > SIZE_MAX / 4 || count > SIZE_MAX / 4))
        st = comm_fail(c, KP_ERR_INVALID_ARG, fn, "offset or count too large");
    const size_t bytes = count * sizeof(float);
    if (st == KP_OK)
        st = comm_check_range(c, fn, buf, offset * sizeof(float), bytes);
    if (st == KP_OK && comm_nccl_owns(c, buf))
        return comm_allreduce_nccl(c, fn, buf, offset, count, op);
    if (st == KP_OK && c->shared && c->queue)
        return comm_allreduce_shared(c, fn, buf, offset, count, op);
    if (st == KP_OK)
        st = comm_host_reserve(c, &c->staging, bytes ? bytes : 1);
    if (st != KP_OK)
        return st;
    float *data = c->staging.ptr;
    if (c->queue && c->size > 1 && count > PIECE_FLOATS) {
        /* The reads follow the work queued on the buffer, as kp_buffer_read's would: the queue is
         * in order. */
        st = comm_agree(c, fn, call_kind(op), count, 0);
        return st == KP_OK ? allreduce_pieces(c, fn, buf, offset, count, op) : st;
    }
    if (c->size > 1 && bytes &&
        (st = kp_buffer_read(c->rt, buf, offset * sizeof(float), bytes, data)) != KP_OK)
        return local_failure(c, fn, st);
    if ((st = comm_allreduce_floats(c, fn, data, count, op)) != KP_OK)
        return st;
    if (c->size > 1 && bytes &&
        (st = kp_buffer_write(c->rt, buf, offset * sizeof(float), bytes, data)) != KP_OK)
        return local_failure(c, fn, st);
    return KP_OK;
}

kp_status kp_comm_allreduce_tensor(kp_comm *c, kp_tensor t, kp_comm_op op)
{
    static const char fn[] = "kp_comm_allreduce_tensor";
    kp_status st = comm_usable(c, fn);
    if (st != KP_OK)
        return st;
    if (t.dtype != KP_F32)
        return comm_fail(c, KP_ERR_INVALID_ARG, fn, "the tensor is %s, not f32",
                         kp_dtype_name((kp_dtype)t.dtype));
    if (t.rank < 0 || t.rank > KP_MAX_RANK)
        return comm_fail(c, KP_ERR_INVALID_ARG, fn, "rank %d", (int)t.rank);
    int64_t numel = 1, expect = 1;
    for (int d = t.rank - 1; d >= 0; d--) {
        if (t.shape[d] < 0)
            return comm_fail(c, KP_ERR_INVALID_ARG, fn, "extent %d is negative", d);
        if (t.shape[d] != 1 && t.strides[d] != expect)
            return comm_fail(c, KP_ERR_INVALID_ARG, fn,
                             "the view is not contiguous (dimension %d has stride %lld, expected "
                             "%lld)",
                             d, (long long)t.strides[d], (long long)expect);
        expect *= t.shape[d];
        numel *= t.shape[d];
    }
    if (t.offset < 0)
        return comm_fail(c, KP_ERR_INVALID_ARG, fn, "negative offset");
    return kp_comm_allreduce(c, t.buffer, (size_t)t.offset, (size_t)numel, op);
}

kp_status kp_comm_allreduce_host(kp_comm *c, float *data, size_t count, kp_comm_op op)
{
    static const char fn[] = "kp_comm_allreduce_host";
    kp_status st = comm_usable(c, fn);
    if (st == KP_OK)
        st = check_op(c, fn, op);
    if (st == KP_OK && !data && count)
        st = comm_fail(c, KP_ERR_INVALID_ARG, fn, "data is NULL");
    return st == KP_OK ? comm_allreduce_floats(c, fn, data, count, op) : st;
}

kp_status kp_comm_broadcast(kp_comm *c, kp_buffer *buf, size_t offset, size_t bytes, int root)
{
    static const char fn[] = "kp_comm_broadcast";
    kp_status st = comm_usable(c, fn);
    if (st == KP_OK && (root < 0 || root >= c->size))
        st = comm_fail(c, KP_ERR_INVALID_ARG, fn, "root %d is not a rank of the %d", root, c->size);
    if (st == KP_OK && bytes > INT_MAX)
        st = comm_fail(c, KP_ERR_INVALID_ARG, fn, "%zu bytes: at most %d in one call", bytes,
                       INT_MAX);
    if (st == KP_OK)
        st = comm_check_range(c, fn, buf, offset, bytes);
    if (st == KP_OK && !(c->shared && c->queue))
        st = comm_host_reserve(c, &c->staging, bytes ? bytes : 1);
    if (st == KP_OK)
        st = comm_agree(c, fn, CALL_BROADCAST, bytes, root);
    if (st == KP_OK && c->shared && c->queue)
        return comm_shared_broadcast(c, fn, kp_buffer_cl_mem(buf), offset, bytes, root);
    if (st != KP_OK || c->size == 1 || bytes == 0)
        return st;
    char *data = c->staging.ptr;
    const int me = c->rank, p = c->size;
    if (me == root && (st = kp_buffer_read(c->rt, buf, offset, bytes, data)) != KP_OK)
        return local_failure(c, fn, st);
    MPI_Request *reqs = malloc((size_t)p * sizeof *reqs);
    int *peers = calloc((size_t)p, sizeof *peers);
    if (!reqs || !peers)
        st = comm_fail(c, KP_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    int n = 0, rc = MPI_SUCCESS;
    for (int r = 0; st == KP_OK && rc == MPI_SUCCESS && r < p; r++) {
        if (me == root && r != me)
            rc = MPI_Isend(data, (int)bytes, MPI_BYTE, r, TAG_BROADCAST, c->comm, &reqs[n]);
        else if (me != root && r == root)
            rc = MPI_Irecv(data, (int)bytes, MPI_BYTE, r, TAG_BROADCAST, c->comm, &reqs[n]);
        else
            continue;
        if (rc == MPI_SUCCESS)
            peers[n++] = r;
    }
    if (st == KP_OK && rc != MPI_SUCCESS)
        st = comm_break(c, comm_mpi_fail(c, fn, "MPI_Isend/Irecv", rc));
    if (st == KP_OK)
        st = comm_wait(c, fn, reqs, peers, n);
    free(reqs);
    free(peers);
    if (st == KP_OK && me != root &&
        (st = kp_buffer_write(c->rt, buf, offset, bytes, data)) != KP_OK)
        return local_failure(c, fn, st);
    return st;
}

kp_status kp_comm_barrier(kp_comm *c)
{
    static const char fn[] = "kp_comm_barrier";
    kp_status st = comm_usable(c, fn);
    /* The check that every rank entered the same call is an exchange with every rank. */
    return st == KP_OK ? comm_agree(c, fn, CALL_BARRIER, 0, 0) : st;
}
