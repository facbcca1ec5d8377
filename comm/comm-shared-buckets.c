/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bucket rounds on the node-shared transport, pipelined: each bucket's copies and sum run on the
 * communicator's second in-order queue (c->shm.copy), so that the DMA engines and the sum overlap
 * the backward's kernels on the runtime's queue, and the host moves each bucket a step further at
 * each kp_comm_buckets_start instead of waiting for it. A bucket's steps, as in
 * comm_shared_allreduce:
 *   (1) its range but this rank's slice copied into this rank's part      (marker e1)
 *   sync (the round's first: the call agreement, comm_agree)
 *   (2) the other ranks' copies of the slice into the rows, the sum into the buffer, the slice
 *       copied into this rank's part                                       (marker e2)
 *   sync
 *   (3) the other slices copied from their owners' parts into the buffer   (marker e3)
 * Step (1) waits for a marker on the runtime's queue enqueued by kp_comm_buckets_start, so it
 * follows the bucket's producers; the round's end enqueues on the runtime's queue a marker waiting
 * for every e3 (a barrier), so the launches enqueued after it (the optimizer) follow the copies.
 *
 * Waits. start(k) first moves the buckets before k: every bucket up to k - 2 through its second
 * sync (step 3 enqueued), bucket k - 1 through its first (step 2 enqueued); then it enqueues k's
 * step 1. Each event it waits for was enqueued on the copy queue before k - 1's step 1 or is
 * k - 1's step 1, which follows k - 1's producers: the runtime's queue still holds k's producers
 * meanwhile (the staged buckets' rule). finish() moves every bucket to the end. Every rank waits
 * for the syncs in one order, bucket by bucket and the first sync before the second, and posts
 * every sync before it in that order before it waits for one, so no two ranks wait for each other.
 *
 * Reusing the segment. The bucket rounds have their own segment (c->shm.buckets), its parts cut in
 * two halves of the same size; round R (counted on the communicator) uses half R % 2, each bucket
 * at its floats' place `at` in it. Only rank r writes its part; in round R the others read it in
 * step (2) (its copies of their slices, written in its step (1)) and in step (3) (its slice's
 * sums, written in its step (2)). A reader's step (2) is done before it sends that bucket's second
 * sync, which every rank waits for before its round ends. Nobody waits for a reader's step (3);
 * but its copy queue is in order, so they are done before its step (1)s of round R + 1, and so
 * before it sends round R + 1's first sync, which every rank waits for before round R + 1 ends.
 * A rank that starts round R + 2 has therefore no reader left in its round-R half, and writes it
 * again. Round R + 1 writes the other half: its step (1)s come before any sync of the round, and
 * had they the same half, where another set of buckets (another layout) puts a copy over the place
 * of round R's sums, they could overwrite sums a peer's step (3) still reads. The halves do not
 * move between rounds: the segment grows (a new one, the old one freed after both queues
 * finished) only at a round's start, after the round's call was agreed on. The blocking
 * collectives have a segment and rows of their own, so they may run between two buckets of a round.
 *
 * One-shot buckets (comm_shared_slice: every bucket at 2 ranks) copy the whole range in step (1),
 * sum it all in step (2) and end there: one sync. The argument above holds with a reader's step
 * (2) in place of its step (3).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm-internal.h"

typedef struct stage {
    kp_comm_range range;
    size_t at;       /* its floats' place in the half */
    size_t from, to; /* the floats this rank sums (comm_shared_slice) */
    int last;        /* its last step: 2 one-shot, else 3 */
    int step;        /* the last step enqueued this round: 0 to last */
    cl_event e;      /* that step's marker on the copy queue */
} stage;

struct comm_pipe {
    kp_comm *c;
    cl_command_queue q; /* the steps' queue: the second one, or the runtime's (single-queue) */
    cl_mem mem;
    kp_comm_op op;
    stage *b;
    size_t n, total;
    cl_mem rows;  /* the other ranks' copies of what this rank sums of the largest bucket */
    size_t half;  /* offset of this round's half in a part */
    int agreed;   /* this round's call agreed on */
    int64_t call; /* the round's call number (c->calls at its agreement) */
};

static void release(cl_event *e)
{
    if (*e)
        clReleaseEvent(*e);
    *e = NULL;
}

/* The round's state back to its start, its events released (the queues hold what they need). */
static void reset(comm_pipe *p)
{
    for (size_t i = 0; i < p->n; i++) {
        release(&p->b[i].e);
        p->b[i].step = 0;
    }
    p->agreed = 0;
    if (p->c->shm.active == p)
        p->c->shm.active = NULL;
}

void comm_pipe_destroy(comm_pipe *p)
{
    if (!p)
        return;
    kp_comm *c = p->c;
    if (c->shm.active == p && !c->broken) {
        /* The other ranks wait for this round's syncs: they fail at once instead of at their
         * deadline, and so does this communicator, whose messages no longer match theirs. */
        comm_fail(c, KP_ERR_INVALID_ARG, "kp_comm_buckets_destroy",
                  "rank %d: the buckets were destroyed in the middle of a round", c->rank);
        comm_break(c, KP_ERR_INVALID_ARG);
    }
    /* Nothing on the copy queue waits for the host: its step (1)s wait for markers already
     * flushed on the runtime's queue. */
    clFinish(p->q);
    reset(p);
    if (p->rows)
        clReleaseMemObject(p->rows);
    free(p->b);
    free(p);
}

kp_status comm_pipe_create(kp_comm *c, const char *fn, kp_buffer *buf, const kp_comm_range *ranges,
                           size_t n, kp_comm_op op, comm_pipe **out)
{
    comm_pipe *p = calloc(1, sizeof *p);
    if (!p || !(p->b = calloc(n ? n : 1, sizeof *p->b))) {
        free(p);
        return comm_fail(c, KP_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    }
    /* On one queue the device runs each bucket's copies and sum after the producers enqueued
     * before them, in the runtime's order: no two queues touch the buffer at once. */
    *p = (comm_pipe){.c = c,
                     .q = c->buckets == BUCKETS_SINGLE_QUEUE ? c->queue : c->shm.copy,
                     .mem = kp_buffer_cl_mem(buf),
                     .op = op,
                     .b = p->b,
                     .n = n};
    size_t most = 0;
    for (size_t i = 0; i < n; i++) {
        /* The buckets one after another in the half, in index order. */
        stage *s = &p->b[i];
        *s = (stage){.range = ranges[i], .at = p->total};
        s->last = comm_shared_slice(c, ranges[i].count, &s->from, &s->to) ? 2 : 3;
        p->total += ranges[i].count;
        most = s->to - s->from > most ? s->to - s->from : most;
    }
    const size_t rows = (size_t)(c->size > 1 ? c->size - 1 : 1) * (most ? most : 1) * sizeof(float);
    cl_int err = CL_SUCCESS;
    p->rows = clCreateBuffer(c->context, CL_MEM_READ_WRITE, rows, NULL, &err);
    if (!p->rows) {
        comm_pipe_destroy(p);
        return comm_fail(c, KP_ERR_OUT_OF_MEMORY, fn,
                         "%zu bytes of device memory for the buckets' slices: OpenCL error %d",
                         rows, (int)err);
    }
    *out = p;
    return KP_OK;
}

static int kind(const comm_pipe *p)
{
    return p->op == KP_COMM_MEAN ? CALL_BUCKETS_MEAN : CALL_BUCKETS_SUM;
}

/* Bucket i's floats [from, to) between the buffer and rank r's part (to_host: into it). */
static cl_int copy(comm_pipe *p, size_t i, int r, int to_host, size_t from, size_t to)
{
    if (to <= from)
        return CL_SUCCESS;
    const stage *s = &p->b[i];
    char *host = comm_shared_part(&p->c->shm.buckets, r) + p->half + (s->at + from) * sizeof(float);
    const size_t at = (s->range.offset + from) * sizeof(float), bytes = (to - from) * sizeof(float);
    cl_command_queue q = p->q;
    return to_host ? clEnqueueReadBuffer(q, p->mem, CL_FALSE, at, bytes, host, 0, NULL, NULL)
                   : clEnqueueWriteBuffer(q, p->mem, CL_FALSE, at, bytes, host, 0, NULL, NULL);
}

/* Enqueues bucket i's step `step` (after its producers' marker `producers` for step 1), its
 * marker, and flushes. */
static cl_int enqueue_step(comm_pipe *p, size_t i, int step, cl_event producers)
{
    kp_comm *c = p->c;
    stage *s = &p->b[i];
    cl_command_queue q = p->q;
    const int np = c->size, me = c->rank, one_shot = s->last == 2;
    const size_t count = s->range.count, b = s->from, e = s->to, n = e - b;
    cl_int err = CL_SUCCESS;
    if (step == 1) {
        err = clEnqueueBarrierWithWaitList(q, 1, &producers, NULL);
        if (err == CL_SUCCESS)
            err = copy(p, i, me, 1, 0, one_shot ? count : b);
        if (err == CL_SUCCESS && !one_shot)
            err = copy(p, i, me, 1, e, count);
    } else if (step == 2) {
        /* The rows are the bucket's alone until its sum: the queue runs the buckets' steps one
         * after the other. */
        const size_t row = n * sizeof(float);
        for (int r = 0; n && r < np && err == CL_SUCCESS; r++)
            if (r != me)
                err = clEnqueueWriteBuffer(
                    q, p->rows, CL_FALSE, (size_t)(r < me ? r : r - 1) * row, row,
                    comm_shared_part(&c->shm.buckets, r) + p->half + (s->at + b) * sizeof(float), 0,
                    NULL, NULL);
        if (n && err == CL_SUCCESS)
            err = comm_shared_sum(c, q, p->rows, p->mem, s->range.offset + b, n, p->op);
        if (err == CL_SUCCESS && !one_shot)
            err = copy(p, i, me, 1, b, e);
    } else {
        for (int r = 0; r < np && err == CL_SUCCESS; r++)
            if (r != me)
                err = copy(p, i, r, 0, comm_slice_begin(count, np, r),
                           comm_slice_begin(count, np, r + 1));
    }
    release(&s->e);
    if (err == CL_SUCCESS)
        err = clEnqueueMarkerWithWaitList(q, 0, NULL, &s->e);
    if (err == CL_SUCCESS)
        err = clFlush(q);
    if (err == CL_SUCCESS)
        s->step = step;
    return err;
}

static const char *step_name(int step)
{
    return step == 1   ? "copying a bucket into the segment"
           : step == 2 ? "summing this rank's slice of a bucket"
                       : "copying a bucket's other slices from the segment";
}

/* The sync after bucket i's step `step`: the round's first carries the call (comm_agree, which
 * fails every rank naming both calls where they differ); the others the round, the bucket, the
 * step and its size, checked the same way. */
static kp_status sync(comm_pipe *p, const char *fn, size_t i, int step)
{
    kp_comm *c = p->c;
    comm_segment *g = &c->shm.buckets;
    if (!p->agreed) {
        MPI_Win_sync(g->win);
        kp_status st = comm_agree(c, fn, kind(p), p->total, (int)p->n);
        if (st == KP_OK)
            MPI_Win_sync(g->win);
        p->agreed = st == KP_OK;
        p->call = (int64_t)c->calls;
        return st;
    }
    const int np = c->size;
    const int64_t mine[4] = {p->call, (int64_t)i, step, (int64_t)p->b[i].range.count};
    int64_t *theirs = malloc((size_t)np * sizeof mine);
    kp_status st = theirs ? comm_shared_sync(c, fn, g, TAG_BUCKET, mine, theirs, 4)
                          : comm_fail(c, KP_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    for (int r = 0; st == KP_OK && r < np; r++) {
        const int64_t *t = theirs + 4 * r;
        if (r == c->rank || memcmp(t, mine, sizeof mine) == 0)
            continue;
        st = comm_fail(c, KP_ERR_INVALID_ARG, fn,
                       "the ranks' buckets differ: rank %d's bucket %zu has %lld floats (its "
                       "call %lld, step %d), rank %d's bucket %lld has %lld (its call %lld, step "
                       "%lld)",
                       c->rank, i, (long long)mine[3], (long long)mine[0], step, r, (long long)t[1],
                       (long long)t[3], (long long)t[0], (long long)t[2]);
        /* Every rank sees the difference itself, as in comm_agree. */
        c->broken = strdup(kp_last_error(c->rt));
    }
    free(theirs);
    return st;
}

/* Moves bucket i to step `to` (2 or 3) or its last: waits for its last step, syncs, enqueues the
 * next. */
static kp_status advance(comm_pipe *p, const char *fn, size_t i, int to)
{
    stage *s = &p->b[i];
    while (s->step < to && s->step < s->last) {
        cl_int err = clWaitForEvents(1, &s->e);
        if (err != CL_SUCCESS)
            return comm_shared_failure(p->c, fn, step_name(s->step), err);
        kp_status st = sync(p, fn, i, s->step);
        if (st != KP_OK)
            return st;
        if ((err = enqueue_step(p, i, s->step + 1, NULL)) != CL_SUCCESS)
            return comm_shared_failure(p->c, fn, step_name(s->step + 1), err);
    }
    return KP_OK;
}

/* The round's start: the half it uses, and the segment grown where the buckets do not fit (a
 * collective step: the call is agreed on first, not folded into the first sync). */
static kp_status begin(comm_pipe *p, const char *fn)
{
    kp_comm *c = p->c;
    comm_shared *s = &c->shm;
    if (s->active)
        return comm_fail(c, KP_ERR_INVALID_ARG, fn,
                         "another buckets' round is in flight on this communicator: finish it "
                         "first (kp_comm_buckets_finish)");
    const size_t need = p->total * sizeof(float);
    if (s->buckets.part == 0 || 2 * need > s->buckets.part) {
        kp_status st = comm_agree(c, fn, kind(p), p->total, (int)p->n);
        if (st != KP_OK)
            return st;
        p->agreed = 1;
        p->call = (int64_t)c->calls;
        /* Both halves of a part: whole pages, one at least, the same size on every rank. */
        const size_t half = need ? (need + 4095) / 4096 * 4096 : 4096;
        if ((st = comm_shared_grow(c, fn, &s->buckets, 2 * half)) != KP_OK)
            return st;
    }
    p->half = (size_t)(s->rounds % 2) * (s->buckets.part / 2);
    s->rounds++;
    s->active = p;
    return KP_OK;
}

kp_status comm_pipe_start(comm_pipe *p, const char *fn, size_t index)
{
    kp_comm *c = p->c;
    if (c->size == 1)
        return KP_OK;
    kp_status st = index == 0 ? begin(p, fn) : KP_OK;
    if (st != KP_OK)
        return st;
    cl_event producers = NULL;
    cl_int err = clEnqueueMarkerWithWaitList(c->queue, 0, NULL, &producers);
    if (err == CL_SUCCESS)
        err = clFlush(c->queue);
    if (err != CL_SUCCESS) {
        release(&producers);
        return comm_shared_failure(c, fn, "a marker after a bucket's producers", err);
    }
    for (size_t i = 0; st == KP_OK && i < index; i++)
        st = advance(p, fn, i, i + 1 < index ? 3 : 2);
    if (st == KP_OK && (err = enqueue_step(p, index, 1, producers)) != CL_SUCCESS)
        st = comm_shared_failure(c, fn, step_name(1), err);
    release(&producers);
    return st;
}

kp_status comm_pipe_wait(comm_pipe *p, const char *fn, size_t index)
{
    kp_comm *c = p->c;
    if (c->size == 1)
        return KP_OK;
    kp_status st = KP_OK;
    for (size_t i = 0; st == KP_OK && i <= index; i++)
        st = advance(p, fn, i, 3);
    /* The steps' queue is in order: bucket index's last marker follows every earlier bucket's. */
    cl_int err = CL_SUCCESS;
    if (st == KP_OK &&
        (err = clEnqueueBarrierWithWaitList(c->queue, 1, &p->b[index].e, NULL)) != CL_SUCCESS)
        st = comm_shared_failure(c, fn, "a barrier after a bucket's copies", err);
    return st;
}

kp_status comm_pipe_finish(comm_pipe *p, const char *fn)
{
    kp_comm *c = p->c;
    if (c->size == 1 || p->n == 0)
        return KP_OK;
    kp_status st = KP_OK;
    for (size_t i = 0; st == KP_OK && i < p->n; i++)
        st = advance(p, fn, i, 3);
    cl_event *ends = st == KP_OK ? malloc(p->n * sizeof *ends) : NULL;
    if (st == KP_OK && !ends)
        st = comm_fail(c, KP_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    for (size_t i = 0; st == KP_OK && i < p->n; i++)
        ends[i] = p->b[i].e;
    /* The launches enqueued after the round read the reduced buckets: no host wait. */
    cl_int err = CL_SUCCESS;
    if (st == KP_OK &&
        (err = clEnqueueBarrierWithWaitList(c->queue, (cl_uint)p->n, ends, NULL)) != CL_SUCCESS)
        st = comm_shared_failure(c, fn, "a barrier after the buckets' copies", err);
    free(ends);
    reset(p);
    return st;
}
