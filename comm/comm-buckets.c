/* SPDX-License-Identifier: Apache-2.0 */
/* Gradient buckets: ranges of an arena all-reduced as the backward produces them. With host
 * staging each is read with a non-blocking transfer on the runtime's queue, exchanged while the
 * device runs what follows, and written back before the launches enqueued after the round; on
 * the node-shared transport each goes through the pipelined round of comm-shared-buckets.c. */
#include <stdlib.h>
#include <string.h>

#include "comm-internal.h"

typedef struct bucket {
    kp_comm_range range;
    size_t at;      /* its floats' place in the staging */
    cl_event read;  /* the pending read, or NULL */
    cl_event write; /* the last write back, released when the next read is enqueued */
    int reduced;    /* this round */
} bucket;

struct kp_comm_buckets {
    kp_comm *c;
    kp_buffer *buf;
    kp_comm_op op;
    bucket *b;
    size_t n;
    size_t next;   /* the bucket to start next */
    size_t waited; /* the buckets before this one were waited for this round */
    comm_host staging;
    comm_pipe *pipe; /* the node-shared transport's round, or NULL */
};

size_t kp_comm_buckets_plan(const int32_t *segments, size_t n_segments, size_t bucket_bytes,
                            kp_comm_range *out)
{
    if (!segments || !out)
        return 0;
    for (size_t i = 0; i < 2 * n_segments; i++)
        if (segments[i] < 0)
            return 0;
    size_t n = 0;
    for (size_t last = n_segments; last > 0;) {
        size_t first = last - 1, bytes = (size_t)segments[2 * first + 1] * sizeof(float);
        while (bytes < bucket_bytes && first > 0) {
            first--;
            bytes += (size_t)segments[2 * first + 1] * sizeof(float);
        }
        const size_t begin = (size_t)segments[2 * first],
                     end = (size_t)segments[2 * (last - 1)] + (size_t)segments[2 * (last - 1) + 1];
        out[n++] = (kp_comm_range){.offset = begin, .count = end > begin ? end - begin : 0};
        last = first;
    }
    return n;
}

static void release(cl_event *e)
{
    if (*e)
        clReleaseEvent(*e);
    *e = NULL;
}

void kp_comm_buckets_destroy(kp_comm_buckets *bs)
{
    if (!bs)
        return;
    comm_pipe_destroy(bs->pipe);
    kp_finish(bs->c->rt);
    for (size_t i = 0; i < bs->n; i++) {
        release(&bs->b[i].read);
        release(&bs->b[i].write);
    }
    comm_host_release(bs->c, &bs->staging);
    free(bs->b);
    free(bs);
}

kp_status kp_comm_buckets_create(kp_comm *c, kp_buffer *buf, const kp_comm_range *ranges, size_t n,
                                 kp_comm_op op, kp_comm_buckets **out)
{
    static const char fn[] = "kp_comm_buckets_create";
    if (out)
        *out = NULL;
    kp_status st = comm_usable(c, fn);
    if (st != KP_OK)
        return st;
    if (!out || (n && !ranges))
        return comm_fail(c, KP_ERR_INVALID_ARG, fn, "NULL ranges or out");
    if (op != KP_COMM_SUM && op != KP_COMM_MEAN)
        return comm_fail(c, KP_ERR_INVALID_ARG, fn, "op %d is not KP_COMM_SUM or KP_COMM_MEAN",
                         (int)op);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        const kp_comm_range *r = &ranges[i];
        if (r->offset > SIZE_MAX / 8 || r->count > SIZE_MAX / 8)
            return comm_fail(c, KP_ERR_INVALID_ARG, fn, "bucket %zu: range too large", i);
        if ((st = comm_check_range(c, fn, buf, r->offset * sizeof(float),
                                   r->count * sizeof(float))) != KP_OK)
            return comm_fail(c, KP_ERR_INVALID_ARG, fn, "bucket %zu: %s", i, kp_last_error(c->rt));
        for (size_t j = 0; j < i; j++)
            if (r->offset < ranges[j].offset + ranges[j].count &&
                ranges[j].offset < r->offset + r->count)
                return comm_fail(c, KP_ERR_INVALID_ARG, fn, "buckets %zu and %zu overlap", j, i);
        total += r->count;
    }
    kp_comm_buckets *bs = calloc(1, sizeof *bs);
    if (!bs || !(bs->b = calloc(n ? n : 1, sizeof *bs->b))) {
        free(bs);
        return comm_fail(c, KP_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    }
    *bs = (kp_comm_buckets){.c = c, .buf = buf, .op = op, .b = bs->b, .n = n};
    for (size_t i = 0, at = 0; i < n; at += ranges[i].count, i++)
        bs->b[i] = (bucket){.range = ranges[i], .at = at};
    /* The shared transport copies between the arena and its segment, NCCL reduces the arena
     * itself: no staging. */
    const int nccl = comm_nccl_owns(c, buf), shared = c->shared && c->queue && !nccl,
              pipelined = shared && c->buckets != BUCKETS_BLOCKING;
    const size_t staged = shared || nccl ? 1 : total ? total : 1;
    if (pipelined)
        st = comm_pipe_create(c, fn, buf, ranges, n, op, &bs->pipe);
    if (st == KP_OK)
        st = comm_host_reserve(c, &bs->staging, staged * sizeof(float));
    if (st != KP_OK) {
        kp_comm_buckets_destroy(bs);
        return st;
    }
    *out = bs;
    return KP_OK;
}

/* A transfer of bucket b between its range of the arena and its staging. */
static kp_status transfer(kp_comm_buckets *bs, bucket *b, int write, const char *fn)
{
    kp_comm *c = bs->c;
    float *host = (float *)bs->staging.ptr + b->at;
    const size_t offset = b->range.offset * sizeof(float), bytes = b->range.count * sizeof(float);
    if (!bytes)
        return KP_OK;
    if (!c->queue)
        return write ? kp_buffer_write(c->rt, bs->buf, offset, bytes, host)
                     : kp_buffer_read(c->rt, bs->buf, offset, bytes, host);
    cl_mem mem = kp_buffer_cl_mem(bs->buf);
    cl_int err;
    if (write) {
        release(&b->write);
        err =
            clEnqueueWriteBuffer(c->queue, mem, CL_FALSE, offset, bytes, host, 0, NULL, &b->write);
    } else {
        release(&b->write);
        err = clEnqueueReadBuffer(c->queue, mem, CL_FALSE, offset, bytes, host, 0, NULL, &b->read);
        if (err == CL_SUCCESS)
            err = clFlush(c->queue);
    }
    return err == CL_SUCCESS
               ? KP_OK
               : comm_fail(c, KP_ERR_CL, fn, "%s of bucket %zu failed: OpenCL error %d",
                           write ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer",
                           (size_t)(b - bs->b), (int)err);
}

/* Completes bucket b: its read, its exchange, its write back enqueued. */
static kp_status reduce(kp_comm_buckets *bs, bucket *b, const char *fn)
{
    kp_comm *c = bs->c;
    kp_status st = KP_OK;
    if (b->read) {
        cl_int err = clWaitForEvents(1, &b->read);
        release(&b->read);
        if (err != CL_SUCCESS)
            st = comm_fail(c, KP_ERR_CL, fn, "reading bucket %zu failed: OpenCL error %d",
                           (size_t)(b - bs->b), (int)err);
    }
    if (st != KP_OK) {
        comm_fail(c, st, fn, "rank %d: %s", c->rank, kp_last_error(c->rt));
        return comm_break(c, st);
    }
    st = comm_allreduce_floats(c, fn, (float *)bs->staging.ptr + b->at, b->range.count, bs->op);
    if (st == KP_OK && c->size > 1 && (st = transfer(bs, b, 1, fn)) != KP_OK) {
        comm_fail(c, st, fn, "rank %d: %s", c->rank, kp_last_error(c->rt));
        return comm_break(c, st);
    }
    b->reduced = st == KP_OK;
    return st;
}

kp_status kp_comm_buckets_start(kp_comm_buckets *bs, size_t index)
{
    static const char fn[] = "kp_comm_buckets_start";
    kp_status st = comm_usable(bs ? bs->c : NULL, fn);
    if (st != KP_OK)
        return st;
    kp_comm *c = bs->c;
    if ((st = comm_transfers_allowed(c, fn, bs->buf)) != KP_OK)
        return st;
    if (index != bs->next)
        return comm_fail(c, KP_ERR_INVALID_ARG, fn,
                         "bucket %zu started out of order: bucket %zu comes next (of %zu)", index,
                         bs->next, bs->n);
    bucket *b = &bs->b[index];
    if (comm_nccl_owns(c, bs->buf)) {
        /* NCCL takes the memory from OpenCL once the bucket's producers are done: nothing is
         * left for the host to overlap, so the bucket is all-reduced now (blocking). */
        st = comm_allreduce_nccl(c, fn, bs->buf, b->range.offset, b->range.count, bs->op);
        b->reduced = st == KP_OK;
        bs->next++;
        return st;
    }
    if (bs->pipe) {
        st = comm_pipe_start(bs->pipe, fn, index);
        bs->next += st == KP_OK;
        return st;
    }
    if (c->shared && c->queue) {
        /* Blocking (KP_COMM_BUCKETS=blocking): the bucket all-reduced now, its copies on the
         * runtime's queue after its producers, the host waiting for each step (docs/comm.md). */
        st = comm_allreduce_shared(c, fn, bs->buf, b->range.offset, b->range.count, bs->op);
        b->reduced = st == KP_OK;
        bs->next++;
        return st;
    }
    if (c->size > 1 && (st = transfer(bs, b, 0, fn)) != KP_OK) {
        comm_fail(c, st, fn, "rank %d: %s", c->rank, kp_last_error(c->rt));
        return comm_break(c, st);
    }
    bs->next++;
    /* The bucket before this one: its read is done or nearly, and the device now has this
     * bucket's producers and its read queued behind it to keep it busy. */
    if (index > 0 && !bs->b[index - 1].reduced)
        st = reduce(bs, &bs->b[index - 1], fn);
    if (st == KP_OK && !c->queue)
        st = reduce(bs, b, fn);
    return st;
}

kp_status kp_comm_buckets_wait(kp_comm_buckets *bs, size_t index)
{
    static const char fn[] = "kp_comm_buckets_wait";
    kp_status st = comm_usable(bs ? bs->c : NULL, fn);
    if (st != KP_OK)
        return st;
    kp_comm *c = bs->c;
    if (index >= bs->next)
        return comm_fail(c, KP_ERR_INVALID_ARG, fn,
                         "bucket %zu was not started this round (%zu of %zu started)", index,
                         bs->next, bs->n);
    if (index < bs->waited)
        return KP_OK;
    if (bs->pipe)
        st = comm_pipe_wait(bs->pipe, fn, index);
    /* Host staging: the write backs still pending enqueued (NCCL, the blocking shared rounds and
     * the host device reduced each bucket at its start). */
    for (size_t i = bs->waited; st == KP_OK && !bs->pipe && i <= index; i++)
        if (!bs->b[i].reduced)
            st = reduce(bs, &bs->b[i], fn);
    if (st == KP_OK)
        bs->waited = index + 1;
    return st;
}

kp_status kp_comm_buckets_finish(kp_comm_buckets *bs)
{
    static const char fn[] = "kp_comm_buckets_finish";
    kp_status st = comm_usable(bs ? bs->c : NULL, fn);
    if (st != KP_OK)
        return st;
    if (bs->next != bs->n)
        return comm_fail(bs->c, KP_ERR_INVALID_ARG, fn,
                         "bucket %zu of %zu was not started this round", bs->next, bs->n);
    if (bs->pipe)
        st = comm_pipe_finish(bs->pipe, fn);
    for (size_t i = 0; st == KP_OK && !bs->pipe && i < bs->n; i++)
        if (!bs->b[i].reduced)
            st = reduce(bs, &bs->b[i], fn);
    for (size_t i = 0; i < bs->n; i++)
        bs->b[i].reduced = 0;
    bs->next = 0;
    bs->waited = 0;
    return st;
}
