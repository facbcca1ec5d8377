/* SPDX-License-Identifier: Apache-2.0 */
/* The node-shared transport: where every rank is on one node, the device collectives meet in one
 * shared-memory segment (MPI_Win_allocate_shared, part r rank r's) that every rank's device reads
 * and writes by DMA, pinned through an OpenCL buffer over the whole segment, and the sums run on
 * the device. No CPU copies or adds the data: one core moves host memory at 5-8 GB/s, the DMA
 * engines at tens (docs/comm.md). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm-internal.h"

enum { MODE_AUTO, MODE_STAGED, MODE_SHARED, MODE_NCCL, MODE_INVALID = -1 };

/* Parts are whole pages: what pinning wants, and DMA never shares a page between two ranks. */
#define PAGE ((size_t)4096)
/* The sum kernel's work-group size, fixed (PoCL compiles once per size). */
#define GROUP ((size_t)64)
/* One-shot saves a sync and the host's wait for a step; two-shot moves the same bytes at 2 ranks,
 * with half the sum on each device. On two H200s (bench-allreduce, 2026-11-26) one-shot was ahead
 * up to 8 MB (88.0-91.0% of the staging limit, two-shot 73.5-89.0%), two-shot from 16 MB (93.3-
 * 96.5%, one-shot 91.3-94.4%). Past 2 ranks one-shot copies (p - 1) x the range in where two-shot
 * copies about 2 x: the same bound on the bytes copied in (not measured past 2 ranks). */
#define ONE_SHOT_BYTES ((size_t)8 << 20)

/* Adds the ranks' copies of the slice in rank order, ((x_0 + x_1) + x_2) + ..., the host path's
 * additions exactly: this rank's (`me`) from its buffer, rank r's from row r (r < me) or r - 1 of
 * `rows`. The division needs -cl-fp32-correctly-rounded-divide-sqrt to give the host's bits. */
static const char sum_source[] =
    "__kernel void kp_comm_sum(__global const float *rows, ulong n, uint p, uint me,\n"
    "                          __global float *out, ulong at, float ranks, uint mean)\n"
    "{\n"
    "    const ulong i = get_global_id(0);\n"
    "    if (i >= n)\n"
    "        return;\n"
    "    const float own = out[at + i];\n"
    "    float acc = me == 0 ? own : rows[i];\n"
    "    for (uint r = 1; r < p; r++)\n"
    "        acc = acc + (r == me ? own : rows[(r < me ? r : r - 1) * n + i]);\n"
    "    out[at + i] = mean ? acc / ranks : acc;\n"
    "}\n";

/* KP_COMM_TRANSPORT's values, in the modes' order. */
static const char *const mode_names[] = {"auto", "staged", "shared", "nccl", NULL};

static const char *mode_name(int mode)
{
    return mode >= MODE_AUTO && mode <= MODE_NCCL ? mode_names[mode] : "auto";
}

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

char *comm_shared_part(const comm_segment *g, int r)
{
    return g->base + (size_t)r * g->part;
}

static char *part(kp_comm *c, int r)
{
    return comm_shared_part(&c->shm.seg, r);
}

/* What rules the shared transport out on this device, into `no` (FAILURE_BYTES), else builds
 * the sum kernel. `automatic`: the transport was not asked for by name. */
static void check_device(kp_comm *c, int automatic, char *no)
{
    comm_shared *s = &c->shm;
    cl_device_type type = 0;
    cl_device_fp_config fp = 0;
    if (kp_runtime_opencl(c->rt, NULL, NULL, (void **)&s->device) != KP_OK ||
        clGetDeviceInfo(s->device, CL_DEVICE_TYPE, sizeof type, &type, NULL) != CL_SUCCESS ||
        clGetDeviceInfo(s->device, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL) !=
            CL_SUCCESS) {
        snprintf(no, FAILURE_BYTES, "the device's type and f32 support could not be read");
        return;
    }
    if (automatic && (type & CL_DEVICE_TYPE_CPU)) {
        snprintf(no, FAILURE_BYTES,
                 "the device is a CPU (its copies are the CPU's: the segment saves nothing)");
        return;
    }
    if (!(fp & CL_FP_DENORM) || !(fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT)) {
        snprintf(no, FAILURE_BYTES,
                 "the device's f32 arithmetic lacks subnormals or a correctly rounded division: "
                 "its sums would differ from the host's in the last bits");
        return;
    }
    const char *src = sum_source;
    cl_int err = CL_SUCCESS;
    s->program = clCreateProgramWithSource(c->context, 1, &src, NULL, &err);
    if (s->program)
        err = clBuildProgram(s->program, 1, &s->device, "-cl-fp32-correctly-rounded-divide-sqrt",
                             NULL, NULL);
    if (err == CL_SUCCESS)
        s->sum = clCreateKernel(s->program, "kp_comm_sum", &err);
    if (err != CL_SUCCESS) {
        snprintf(no, FAILURE_BYTES, "building the sum kernel failed: OpenCL error %d", (int)err);
        return;
    }
    /* Only the pipelined bucket rounds (the default KP_COMM_BUCKETS) run on a second queue. */
    if (c->buckets == BUCKETS_PIPELINED &&
        !(s->copy = clCreateCommandQueue(c->context, s->device, 0, &err)))
        snprintf(no, FAILURE_BYTES, "a second command queue could not be made: OpenCL error %d",
                 (int)err);
}

/* The copies of both queues that may still use a segment are done. */
static void finish_queues(kp_comm *c)
{
    clFinish(c->queue);
    if (c->shm.copy)
        clFinish(c->shm.copy);
}

/* Unmaps and releases a segment's OpenCL buffer and frees its window (collective over the node). */
static void segment_release(kp_comm *c, comm_segment *g)
{
    if (g->mem) {
        finish_queues(c);
        clEnqueueUnmapMemObject(c->queue, g->mem, g->base, 0, NULL, NULL);
        clFinish(c->queue);
        clReleaseMemObject(g->mem);
    }
    if (g->win != MPI_WIN_NULL) {
        MPI_Win_unlock_all(g->win);
        MPI_Win_free(&g->win);
    }
    *g = (comm_segment){.win = MPI_WIN_NULL};
}

/* Allocates the segment with parts of `bytes` (collective over the node) and the OpenCL buffer
 * over it: an MPI failure is returned, what this rank's driver refuses goes to `no`
 * (FAILURE_BYTES). Rank 0 allocates the whole segment, so that it is contiguous whatever MPI's
 * layout, with room to start it at an aligned address (MPI's shared windows need not be: Open
 * MPI's start past a header). */
static kp_status segment_alloc(kp_comm *c, const char *fn, comm_segment *g, size_t bytes, char *no)
{
    comm_shared *s = &c->shm;
    cl_uint bits = 0;
    clGetDeviceInfo(s->device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof bits, &bits, NULL);
    /* Every rank computes the same size: the alignment is the larger of a page and any rank's. */
    unsigned long align = bits / 8 > PAGE ? bits / 8 : PAGE;
    int rc = MPI_Allreduce(MPI_IN_PLACE, &align, 1, MPI_UNSIGNED_LONG, MPI_MAX, s->node);
    const size_t total = (size_t)c->size * bytes;
    char *mine = NULL, *base = NULL;
    MPI_Aint size0 = 0;
    int unit = 0;
    if (rc == MPI_SUCCESS)
        rc = MPI_Win_allocate_shared((MPI_Aint)(c->rank == 0 ? total + align : 0), 1, MPI_INFO_NULL,
                                     s->node, &mine, &g->win);
    if (rc != MPI_SUCCESS)
        return comm_mpi_fail(c, fn, "MPI_Win_allocate_shared", rc);
    MPI_Win_set_errhandler(g->win, MPI_ERRORS_RETURN);
    /* A passive epoch for the window's life: MPI_Win_sync orders this rank's accesses. */
    if ((rc = MPI_Win_lock_all(MPI_MODE_NOCHECK, g->win)) == MPI_SUCCESS)
        rc = MPI_Win_shared_query(g->win, 0, &size0, &unit, &base);
    if (rc != MPI_SUCCESS) {
        MPI_Win_free(&g->win);
        return comm_mpi_fail(c, fn, "MPI_Win_lock_all/MPI_Win_shared_query", rc);
    }
    g->base = base + (align - (uintptr_t)base % align) % align;
    g->part = bytes;
    /* Each rank touches its part first, so that its pages lie on the rank's own memory node
     * (its device's, where the rank is bound near it): the pinning below would place them all. */
    memset(comm_shared_part(g, c->rank), 0, bytes);
    MPI_Win_sync(g->win);
    if ((rc = MPI_Barrier(s->node)) != MPI_SUCCESS)
        return comm_mpi_fail(c, fn, "MPI_Barrier", rc);
    cl_int err = CL_SUCCESS;
    g->mem =
        clCreateBuffer(c->context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, total, g->base, &err);
    void *mapped = g->mem
                       ? clEnqueueMapBuffer(c->queue, g->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE,
                                            0, total, 0, NULL, NULL, &err)
                       : NULL;
    if (!mapped) {
        snprintf(no, FAILURE_BYTES,
                 "the driver refused CL_MEM_USE_HOST_PTR over the %zu-byte segment: OpenCL error "
                 "%d",
                 total, (int)err);
        if (g->mem)
            clReleaseMemObject(g->mem);
        g->mem = NULL;
    } else if (mapped != g->base) {
        /* The copies below name the segment by its address: a driver that maps elsewhere would
         * copy through memory the other ranks never see. */
        snprintf(no, FAILURE_BYTES, "the driver maps the segment at %p, not at %p", mapped,
                 (void *)g->base);
        clEnqueueUnmapMemObject(c->queue, g->mem, mapped, 0, NULL, NULL);
        clFinish(c->queue);
        clReleaseMemObject(g->mem);
        g->mem = NULL;
    }
    /* No rank writes into its part before every rank has mapped the segment: a map of a
     * CL_MEM_USE_HOST_PTR buffer may copy the driver's copy of the whole segment, taken when the
     * buffer was made, back over the host memory (bench/probes/use-host-ptr-probe.c), erasing
     * what a rank that mapped earlier had already copied into its part. */
    if ((rc = MPI_Barrier(s->node)) != MPI_SUCCESS)
        return comm_mpi_fail(c, fn, "MPI_Barrier", rc);
    return KP_OK;
}

static void close_device(kp_comm *c)
{
    comm_shared *s = &c->shm;
    if (s->copy)
        clReleaseCommandQueue(s->copy);
    if (s->rows)
        clReleaseMemObject(s->rows);
    if (s->sum)
        clReleaseKernel(s->sum);
    if (s->program)
        clReleaseProgram(s->program);
    s->copy = NULL, s->rows = NULL, s->sum = NULL, s->program = NULL, s->rows_bytes = 0;
}

static kp_status choose_shared(kp_comm *c, int mode, const char *asker);

kp_status comm_shared_open(kp_comm *c, uint32_t flags)
{
    static const char fn[] = "kp_comm_create";
    const int p = c->size;
    const char *asker = flags ? "kp_comm_options.flags" : "KP_COMM_TRANSPORT";
    const int mode = flags & KP_COMM_SHARED   ? MODE_SHARED
                     : flags & KP_COMM_STAGED ? MODE_STAGED
                     : flags & KP_COMM_NCCL   ? MODE_NCCL
                                              : comm_env_choice("KP_COMM_TRANSPORT", mode_names);
    int *modes = malloc((size_t)p * sizeof *modes);
    if (!modes)
        return comm_fail(c, KP_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    int rc = MPI_Allgather(&mode, 1, MPI_INT, modes, 1, MPI_INT, c->comm);
    kp_status st = rc == MPI_SUCCESS ? KP_OK : comm_mpi_fail(c, fn, "MPI_Allgather", rc);
    for (int r = 0; st == KP_OK && r < p; r++)
        if (modes[r] == MODE_INVALID)
            st = comm_fail(c, KP_ERR_INVALID_ARG, fn,
                           "rank %d's KP_COMM_TRANSPORT is not staged, shared, nccl or auto", r);
        else if (modes[r] != mode)
            st = comm_fail(c, KP_ERR_INVALID_ARG, fn,
                           "the ranks ask for different transports: rank %d for %s, rank %d for "
                           "%s (kp_comm_options.flags or KP_COMM_TRANSPORT)",
                           c->rank, mode_name(mode), r, mode_name(modes[r]));
    free(modes);
    if (st != KP_OK)
        return st;
    if (mode == MODE_STAGED) {
        snprintf(c->why, sizeof c->why, "%s asks for host staging", asker);
        return KP_OK;
    }
    if (mode == MODE_AUTO && p == 1) {
        snprintf(c->why, sizeof c->why, "one rank: nothing moves");
        return KP_OK;
    }
    /* NCCL only where asked for: on two H200s it beats the shared transport from 8 MB a call
     * but costs ~0.34 ms a call below, and the CNN's bucketed step ran at 108279 samples/s on it
     * against 190886 on the shared one (docs/comm.md). It takes kp_comm_buffer_create's buffers
     * only, so the other buffers' transport is chosen below as in the automatic mode. */
    char nccl_no[FAILURE_BYTES] = "";
    if (mode == MODE_NCCL) {
        if ((st = comm_nccl_open(c, nccl_no)) != KP_OK)
            return st;
        if (!c->nccl && mode == MODE_NCCL)
            return comm_fail(c, KP_ERR_UNSUPPORTED, fn,
                             "the NCCL transport (%s) cannot be set up: %s", asker, nccl_no);
    }
    if (mode == MODE_NCCL && p == 1) {
        snprintf(c->why, sizeof c->why, "%s asks for NCCL (one rank: nothing moves)", asker);
        return KP_OK;
    }
    st = choose_shared(c, mode == MODE_SHARED ? MODE_SHARED : MODE_AUTO, asker);
    if (st != KP_OK)
        return st;
    char other[sizeof c->why];
    comm_text(other, sizeof other, "%s", c->why);
    if (c->nccl)
        comm_text(c->why, sizeof c->why,
                  "%s asks for NCCL; buffers not made by kp_comm_buffer_create, and broadcasts: %s",
                  asker, other);
    return KP_OK;
}

/* The node-shared segment or host staging: `mode` MODE_SHARED (asked for by `asker`; a failure
 * says why it cannot be set up) or MODE_AUTO. Sets c->shared and c->why. */
static kp_status choose_shared(kp_comm *c, int mode, const char *asker)
{
    static const char fn[] = "kp_comm_create";
    comm_shared *s = &c->shm;
    const int p = c->size;
    kp_status st = KP_OK;
    /* What rules the segment out on this rank; every rank takes the collective steps whatever
     * its own answer, and all go the same way. */
    char no[FAILURE_BYTES] = "";
    if (!c->context)
        snprintf(no, sizeof no, "the runtime has no OpenCL device (the host device)");
    else
        check_device(c, mode == MODE_AUTO, no);
    int rc = MPI_Comm_split_type(c->comm, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &s->node);
    if (rc != MPI_SUCCESS)
        return comm_mpi_fail(c, fn, "MPI_Comm_split_type", rc);
    int on_node = 0;
    MPI_Comm_size(s->node, &on_node);
    if (!*no && on_node != p)
        snprintf(no, sizeof no, "the %d ranks span several nodes (%d on this one)", p, on_node);
    int ok = 0;
    if ((st = comm_agree_ok(c, fn, no, &ok)) != KP_OK)
        return st;
    if (ok) {
        if ((st = segment_alloc(c, fn, &s->seg, PAGE, no)) != KP_OK)
            return st;
        if ((st = comm_agree_ok(c, fn, no, &ok)) != KP_OK)
            return st;
    }
    if (!ok) {
        segment_release(c, &s->seg);
        close_device(c);
        MPI_Comm_free(&s->node);
        if (mode == MODE_SHARED)
            return comm_fail(c, KP_ERR_UNSUPPORTED, fn,
                             "the shared transport (%s) cannot be set up: %s", asker, no);
        snprintf(c->why, sizeof c->why, "host staging: %s", no);
        return KP_OK;
    }
    c->shared = 1;
    if (mode == MODE_SHARED)
        snprintf(c->why, sizeof c->why, "%s asks for the shared segment", asker);
    else
        snprintf(c->why, sizeof c->why, "the %d ranks share a node, and the device is no CPU", p);
    return KP_OK;
}

kp_status comm_shared_failure(kp_comm *c, const char *fn, const char *what, cl_int err)
{
    comm_fail(c, KP_ERR_CL, fn, "rank %d: %s failed: OpenCL error %d", c->rank, what, (int)err);
    return comm_break(c, KP_ERR_CL);
}

kp_status comm_shared_grow(kp_comm *c, const char *fn, comm_segment *g, size_t bytes)
{
    bytes = round_up(bytes, PAGE);
    if (bytes <= g->part)
        return KP_OK;
    /* The new segment is allocated before the old one is freed, so that it never takes the old
     * one's addresses: on two H200s a segment grown in place (freed, then allocated again at the
     * same address) gave sums that differ from host staging's, as if the driver still copied
     * through the old segment's pinned pages (test-comm-np2, 2026-11-26). */
    comm_segment old = *g;
    *g = (comm_segment){.win = MPI_WIN_NULL};
    char no[FAILURE_BYTES] = "";
    kp_status st = segment_alloc(c, fn, g, bytes, no);
    segment_release(c, &old);
    if (st != KP_OK)
        return comm_break(c, st);
    if (*no) {
        comm_fail(c, KP_ERR_CL, fn, "rank %d: growing the shared segment to %zu bytes a rank: %s",
                  c->rank, bytes, no);
        return comm_break(c, KP_ERR_CL);
    }
    return KP_OK;
}

/* Grows the blocking collectives' segment to parts of `bytes` (collective: every rank agreed on
 * the call) and the device rows to `rows_bytes`. */
static kp_status reserve(kp_comm *c, const char *fn, size_t bytes, size_t rows_bytes)
{
    comm_shared *s = &c->shm;
    kp_status st = comm_shared_grow(c, fn, &s->seg, bytes);
    if (st != KP_OK)
        return st;
    if (rows_bytes > s->rows_bytes) {
        if (s->rows)
            clReleaseMemObject(s->rows);
        s->rows_bytes = 0;
        cl_int err = CL_SUCCESS;
        s->rows = clCreateBuffer(c->context, CL_MEM_READ_WRITE, rows_bytes, NULL, &err);
        if (!s->rows) {
            comm_fail(c, KP_ERR_OUT_OF_MEMORY, fn,
                      "rank %d: %zu bytes of device memory for the slices: OpenCL error %d",
                      c->rank, rows_bytes, (int)err);
            return comm_break(c, KP_ERR_OUT_OF_MEMORY);
        }
        s->rows_bytes = rows_bytes;
    }
    return KP_OK;
}

kp_status comm_shared_sync(kp_comm *c, const char *fn, comm_segment *g, int tag,
                           const int64_t *mine, int64_t *theirs, int count)
{
    MPI_Win_sync(g->win);
    kp_status st = comm_exchange(c, fn, tag, mine, theirs, count);
    if (st == KP_OK)
        MPI_Win_sync(g->win);
    return st;
}

/* Every rank's copies to the blocking collectives' segment are done before any rank reads them,
 * waited for with the deadline and the failure channel. */
static kp_status node_sync(kp_comm *c, const char *fn, int tag)
{
    return comm_shared_sync(c, fn, &c->shm.seg, tag, NULL, NULL, 0);
}

/* Leaves segment g to the job's end (a peer may be gone): only this rank's OpenCL buffer over it
 * goes. */
static void segment_leave(kp_comm *c, comm_segment *g)
{
    if (g->mem) {
        clEnqueueUnmapMemObject(c->queue, g->mem, g->base, 0, NULL, NULL);
        clFinish(c->queue);
        clReleaseMemObject(g->mem);
    }
    *g = (comm_segment){.win = MPI_WIN_NULL};
}

void comm_shared_close(kp_comm *c)
{
    comm_shared *s = &c->shm;
    if (c->queue)
        finish_queues(c);
    /* MPI_Win_free synchronises, and after a failure a peer may be gone or may skip it: the
     * windows are freed only once every rank has answered within the deadline, else left to the
     * job's end (docs/comm.md: end the job). */
    if (s->seg.win != MPI_WIN_NULL &&
        (c->broken || node_sync(c, "kp_comm_destroy", TAG_FREE) != KP_OK)) {
        segment_leave(c, &s->seg);
        segment_leave(c, &s->buckets);
    }
    segment_release(c, &s->buckets);
    segment_release(c, &s->seg);
    close_device(c);
    if (s->node != MPI_COMM_NULL)
        MPI_Comm_free(&s->node);
}

/* Elements [from, to) of the range at element `offset` of mem into (write 0) or from (write 1)
 * host memory laid out like the range. */
static cl_int copy_range(kp_comm *c, cl_mem mem, int write, size_t offset, size_t from, size_t to,
                         char *host)
{
    if (to <= from)
        return CL_SUCCESS;
    const size_t at = (offset + from) * sizeof(float), bytes = (to - from) * sizeof(float);
    char *h = host + from * sizeof(float);
    return write ? clEnqueueWriteBuffer(c->queue, mem, CL_FALSE, at, bytes, h, 0, NULL, NULL)
                 : clEnqueueReadBuffer(c->queue, mem, CL_FALSE, at, bytes, h, 0, NULL, NULL);
}

/* The transfers enqueued since the last sync are done (the segment must not be read or reused
 * before), whatever failed. */
static cl_int finish(kp_comm *c, cl_int err)
{
    const cl_int done = clFinish(c->queue);
    return err != CL_SUCCESS ? err : done;
}

cl_int comm_shared_sum(kp_comm *c, cl_command_queue q, cl_mem rows, cl_mem out, size_t at, size_t n,
                       kp_comm_op op)
{
    cl_kernel k = c->shm.sum;
    const cl_ulong n64 = n, at64 = at;
    const cl_uint ranks = (cl_uint)c->size, mine = (cl_uint)c->rank, mean = op == KP_COMM_MEAN;
    const float scale = (float)c->size;
    const size_t global = round_up(n, GROUP), local = GROUP;
    cl_int a = clSetKernelArg(k, 0, sizeof rows, &rows);
    a |= clSetKernelArg(k, 1, sizeof n64, &n64);
    a |= clSetKernelArg(k, 2, sizeof ranks, &ranks);
    a |= clSetKernelArg(k, 3, sizeof mine, &mine);
    a |= clSetKernelArg(k, 4, sizeof out, &out);
    a |= clSetKernelArg(k, 5, sizeof at64, &at64);
    a |= clSetKernelArg(k, 6, sizeof scale, &scale);
    a |= clSetKernelArg(k, 7, sizeof mean, &mean);
    return a != CL_SUCCESS ? CL_INVALID_KERNEL_ARGS
                           : clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL);
}

int comm_shared_slice(const kp_comm *c, size_t count, size_t *b, size_t *e)
{
    const int p = c->size;
    const int one_shot = c->allreduce == ALLREDUCE_AUTO
                             ? (size_t)(p - 1) * count * sizeof(float) <= ONE_SHOT_BYTES
                             : c->allreduce == ALLREDUCE_ONE_SHOT;
    *b = one_shot ? 0 : comm_slice_begin(count, p, c->rank);
    *e = one_shot ? count : comm_slice_begin(count, p, c->rank + 1);
    return one_shot;
}

/*
 * Rank r's part holds a copy of the range laid out as in the buffer. (1) Each rank copies into
 * its part what the others sum: the range but its own slice, or one-shot the whole range; (2) for
 * the elements it sums (comm_shared_slice), each rank copies the other ranks' copies from their
 * parts into the rows on the device and sums them with its own in rank order into its buffer:
 * one-shot, that is all; otherwise it copies its slice's result into its part, and (3) copies the
 * other slices' results from their owners' parts. A sync separates the steps. Every rank adds the
 * same values in the same order, so the ranks' results are the same bits. The next collective's
 * comm_agree keeps a rank from overwriting its part while another still copies from it.
 */
kp_status comm_shared_allreduce(kp_comm *c, const char *fn, cl_mem mem, size_t offset, size_t count,
                                kp_comm_op op)
{
    const int p = c->size, me = c->rank;
    if (p == 1 || count == 0)
        return KP_OK;
    size_t b, e;
    const int one_shot = comm_shared_slice(c, count, &b, &e);
    const size_t n = e - b, most = one_shot ? count : comm_slice_begin(count, p, 1) + 1;
    kp_status st = reserve(c, fn, count * sizeof(float), (size_t)(p - 1) * most * sizeof(float));
    if (st != KP_OK)
        return st;
    char *own = part(c, me);
    cl_int err = copy_range(c, mem, 0, offset, 0, one_shot ? count : b, own);
    if (err == CL_SUCCESS && !one_shot)
        err = copy_range(c, mem, 0, offset, e, count, own);
    if ((err = finish(c, err)) != CL_SUCCESS)
        return comm_shared_failure(c, fn, "copying the range into the segment", err);
    if ((st = node_sync(c, fn, TAG_SYNC)) != KP_OK)
        return st;
    comm_shared *s = &c->shm;
    const size_t row = n * sizeof(float);
    for (int r = 0; n && r < p && err == CL_SUCCESS; r++)
        if (r != me)
            err = clEnqueueWriteBuffer(c->queue, s->rows, CL_FALSE,
                                       (size_t)(r < me ? r : r - 1) * row, row,
                                       part(c, r) + b * sizeof(float), 0, NULL, NULL);
    if (n && err == CL_SUCCESS)
        err = comm_shared_sum(c, c->queue, s->rows, mem, offset + b, n, op);
    if (err == CL_SUCCESS && !one_shot)
        err = copy_range(c, mem, 0, offset, b, e, own);
    if ((err = finish(c, err)) != CL_SUCCESS)
        return comm_shared_failure(c, fn, "summing this rank's slice", err);
    if (one_shot)
        return KP_OK;
    if ((st = node_sync(c, fn, TAG_SYNC)) != KP_OK)
        return st;
    for (int r = 0; r < p && err == CL_SUCCESS; r++)
        if (r != me)
            err = copy_range(c, mem, 1, offset, comm_slice_begin(count, p, r),
                             comm_slice_begin(count, p, r + 1), part(c, r));
    if ((err = finish(c, err)) != CL_SUCCESS)
        return comm_shared_failure(c, fn, "copying the other slices from the segment", err);
    return KP_OK;
}

kp_status comm_shared_broadcast(kp_comm *c, const char *fn, cl_mem mem, size_t offset, size_t bytes,
                                int root)
{
    if (c->size == 1 || bytes == 0)
        return KP_OK;
    kp_status st = reserve(c, fn, bytes, 0);
    if (st != KP_OK)
        return st;
    cl_int err = CL_SUCCESS;
    if (c->rank == root &&
        (err = finish(c, clEnqueueReadBuffer(c->queue, mem, CL_FALSE, offset, bytes, part(c, root),
                                             0, NULL, NULL))) != CL_SUCCESS)
        return comm_shared_failure(c, fn, "copying the range into the segment", err);
    if ((st = node_sync(c, fn, TAG_SYNC)) != KP_OK)
        return st;
    if (c->rank != root &&
        (err = finish(c, clEnqueueWriteBuffer(c->queue, mem, CL_FALSE, offset, bytes, part(c, root),
                                              0, NULL, NULL))) != CL_SUCCESS)
        return comm_shared_failure(c, fn, "copying the root's range from the segment", err);
    return KP_OK;
}
