/* SPDX-License-Identifier: Apache-2.0 */
/* Kernelport collectives over MPI (libkernelport-comm, built when MPI is found: KP_WITH_MPI):
 * all-reduce, broadcast and barrier of device buffers, and gradients all-reduced in buckets. */
#ifndef KERNELPORT_COMM_H
#define KERNELPORT_COMM_H

#include <mpi.h>

#include "kernelport.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A communicator of Kernelport runtimes, one per MPI rank (docs/comm.md). Collectives move the
 * data through host memory, by one of two transports (KP_COMM_STAGED, KP_COMM_SHARED below).
 * Host staging: the device range is read into a staging area (pinned, from an OpenCL buffer
 * allocated in host memory and mapped once, where the runtime is OpenCL's), sent with MPI's
 * non-blocking point-to-point calls and written back. Node-shared: where every rank is on one node,
 * the devices copy to and from one shared-memory segment by DMA and each rank's device adds its
 * slice; MPI only carries the synchronisation. A third transport, NCCL (KP_COMM_NCCL), all-reduces
 * the buffers of kp_comm_buffer_create GPU to GPU, with no host copy, where every rank has an
 * NVIDIA GPU; its sums are in NCCL's order, not the rank order below (kp_comm_allreduce).
 *
 * Determinism. An all-reduce splits the range into one slice per rank; the owner of a slice
 * receives every rank's copy of it and adds them in rank order, ((x_0 + x_1) + x_2) + ..., in
 * f32, then sends the result to every rank. Every rank ends with the same bits, and the same
 * inputs on the same number of ranks give the same bits on every run, on both transports (the
 * shared one adds on the device only where its f32 has subnormals and a correctly rounded
 * division). (MPI_Allreduce promises neither: the standard only recommends it.) MEAN divides the
 * sum by the number of ranks.
 *
 * Failures never hang. Every wait has a deadline (kp_comm_options.timeout_s); a rank that fails
 * inside a collective (a timeout, a device read that fails, a mismatched call) sends the reason
 * to every other rank, whose pending collective then fails at once with "rank R failed: ...". A
 * collective that failed leaves the communicator unusable: every later call fails with the same
 * message, and it leaves messages behind that a communicator made later over the same processes
 * may receive (MPI reuses communicator contexts): end the job. The library never calls MPI_Abort:
 * the application decides (the examples report the message and call MPI_Abort, since MPI_Finalize
 * may wait for messages that never come). Every collective first checks that all ranks called the
 * same one (kind, size, root) and fails on every rank, naming what each called, when they differ.
 *
 * Threads. MPI must be initialised (MPI_Init or MPI_Init_thread) before kp_comm_create and
 * finalised after kp_comm_destroy. A communicator is used by one thread at a time and calls MPI
 * from that thread; a program whose other threads call MPI at the same time needs
 * MPI_THREAD_MULTIPLE. Errors read through kp_last_error(rt) of the communicator's runtime.
 */
typedef struct kp_comm kp_comm;

/*
 * kp_comm_options.flags: the transport of the device collectives (docs/comm.md). With none, the
 * environment's KP_COMM_TRANSPORT ("staged", "shared", "nccl" or "auto") decides, else the choice
 * is automatic: the shared transport where every rank is on one node and the device is no CPU,
 * host staging otherwise (the reason is in kp_comm_transport). Every rank must ask for the same.
 * - KP_COMM_STAGED: host staging through pinned memory and MPI messages (any ranks, any device).
 * - KP_COMM_SHARED: one shared-memory segment on the node that every rank's device copies to and
 *   from by DMA, the sums on the device: no CPU copy of the data. kp_comm_create fails with
 *   KP_ERR_UNSUPPORTED, giving the reason, where it cannot be set up.
 * - KP_COMM_NCCL: NCCL, GPU to GPU, for the buffers of kp_comm_buffer_create (CUDA memory that the
 *   device's OpenCL imports): one rank per NVIDIA GPU, libcuda.so.1 and libnccl.so.2 found at run
 *   time (KP_NCCL: the library's path; else the loader's path; else PyTorch's NVIDIA wheel,
 *   docs/comm.md). Other buffers and broadcasts take the transport the automatic choice would.
 *   kp_comm_create fails with KP_ERR_UNSUPPORTED, giving the reason, where it cannot be set up.
 *   KP_COMM_TRANSPORT=nccl asks for it too. The automatic choice does not take NCCL: on two H200s
 *   it is faster from 8 MB a call but slower below, and slower for the CNN's gradient buckets.
 */
#define KP_COMM_STAGED (1u << 0)
#define KP_COMM_SHARED (1u << 1)
#define KP_COMM_NCCL (1u << 2)

typedef struct kp_comm_options {
    uint32_t struct_size; /* set by kp_comm_options_default; 0: this first layout */
    uint32_t flags;       /* 0, KP_COMM_STAGED, KP_COMM_SHARED or KP_COMM_NCCL */
    /* The longest a collective waits for the other ranks, in seconds. It counts from the moment
     * this rank enters the collective, so it must cover the other ranks' lag: a first step that
     * compiles kernels on a slow device can lag by minutes. 0: KP_COMM_TIMEOUT from the
     * environment, else 300. */
    double timeout_s;
} kp_comm_options;

/* timeout_s 0 (KP_COMM_TIMEOUT, else 300 s). */
KP_API kp_comm_options kp_comm_options_default(void);

/*
 * Creates a communicator over `comm` (MPI_COMM_WORLD or the application's own) for runtime `rt`.
 * Collective: every rank of `comm` calls it. The communicator duplicates `comm`, so its messages
 * never meet the application's, and sets MPI_ERRORS_RETURN on the duplicate. `rt` is borrowed and
 * must outlive the communicator; `options` may be NULL. Errors: KP_ERR_INVALID_ARG (NULL
 * arguments, MPI not initialised, ranks that ask for different transports), KP_ERR_OUT_OF_MEMORY,
 * KP_ERR_IO (an MPI call failed; the message has MPI's error string), KP_ERR_UNSUPPORTED
 * (KP_COMM_SHARED where it cannot be set up).
 */
KP_API kp_status kp_comm_create(kp_runtime *rt, MPI_Comm comm, const kp_comm_options *options,
                                kp_comm **out);

/* Frees the duplicate communicator and the staging memory (collective: MPI_Comm_free), after the
 * runtime's queued work; the shared transport's segment only after every rank answered within
 * the timeout (else it is left to the job's end: a failed rank may be gone). NULL is a no-op. */
KP_API void kp_comm_destroy(kp_comm *c);

/* This process's rank and the number of ranks; -1 for NULL. */
KP_API int kp_comm_rank(const kp_comm *c);
KP_API int kp_comm_size(const kp_comm *c);

/* The transport of the device collectives, "staged", "shared" or "nccl" (NULL for NULL), and in
 * *why (may be NULL) why it was chosen: what asked for it, or what ruled the others out ("the
 * device is a CPU", "rank 1: the driver refused CL_MEM_USE_HOST_PTR ...", "not NCCL: rank 0:
 * libcuda.so.1 does not load ..."); with "nccl", also the transport of the other buffers. Host
 * memory (kp_comm_allreduce_host) always goes through MPI messages. */
KP_API const char *kp_comm_transport(const kp_comm *c, const char **why);

/*
 * Allocates `bytes` (> 0) of device memory that the communicator all-reduces in place: on the NCCL
 * transport, memory CUDA allocates on this rank's GPU (cuMemCreate, exportable as a file
 * descriptor) and the runtime's OpenCL imports (cl_khr_external_memory_opaque_fd); on the others,
 * a plain kp_buffer_create. Either way an ordinary buffer of the runtime: kernels, copies and
 * kp_buffer_destroy as any other (never clReleaseMemObject). OpenCL owns the memory between
 * all-reduces (acquired), NCCL only inside kp_comm_allreduce. The CUDA allocation is freed when
 * OpenCL deletes the import (kp_buffer_destroy or kp_runtime_destroy, after the queued work),
 * also where the communicator is gone by then. Local: no MPI call. Errors: KP_ERR_INVALID_ARG,
 * KP_ERR_OUT_OF_MEMORY, KP_ERR_CL (CUDA's allocation or OpenCL's import failed: the message names
 * the call), those of kp_buffer_create.
 */
KP_API kp_status kp_comm_buffer_create(kp_comm *c, size_t bytes, kp_buffer **out);

typedef enum kp_comm_op {
    KP_COMM_SUM = 0,
    KP_COMM_MEAN = 1, /* the sum divided by the number of ranks */
} kp_comm_op;

/*
 * All-reduces `count` f32 elements of `buf` starting at element `offset` in place: every rank
 * ends with the sum (or mean) over the ranks, in the order the header above describes. Blocking:
 * it reads after the runtime's earlier work, and the result is in the buffer when it returns.
 * With host staging, ranges above 2^20 floats move in pieces of 2^20, each exchanged while the
 * device copies the others (the same bits); the shared transport copies each rank's part in one
 * go, its segment growing to the largest range so far (a collective step of the call). On the
 * NCCL transport, a buffer of kp_comm_buffer_create goes to NCCL in place (OpenCL finishes its
 * work and releases it, ncclAllReduce sums, the stream is waited for within the timeout, OpenCL
 * acquires it back; MEAN divides the sum on the device); every rank must pass such a buffer
 * (else every rank fails naming both calls), and the sums are in NCCL's order, not rank order
 * (the same bits on every rank; at two ranks a + b, the same as the other transports'). Any
 * other buffer takes the other transport (kp_comm_transport's why names it) for that call.
 * Errors: KP_ERR_INVALID_ARG (a range outside the buffer, a buffer of another runtime, an op
 * that is not a kp_comm_op, a call that differs from the other ranks', a graph this thread
 * records on the runtime), KP_ERR_IO (a timeout, an MPI failure, another rank's failure: the
 * message says which), KP_ERR_CL (a staging transfer), the read's and write's errors.
 */
KP_API kp_status kp_comm_allreduce(kp_comm *c, kp_buffer *buf, size_t offset, size_t count,
                                   kp_comm_op op);

/* The same for a contiguous f32 tensor (a view of any rank whose elements are contiguous in
 * row-major order). Errors: those of kp_comm_allreduce, KP_ERR_INVALID_ARG (another dtype, a
 * strided view). */
KP_API kp_status kp_comm_allreduce_tensor(kp_comm *c, kp_tensor t, kp_comm_op op);

/* The same on host memory (`data`, borrowed): losses, counts, metrics. */
KP_API kp_status kp_comm_allreduce_host(kp_comm *c, float *data, size_t count, kp_comm_op op);

/*
 * Copies `bytes` of `buf` at byte `offset` on rank `root` to the same range of `buf` on every
 * other rank. Blocking like kp_comm_allreduce. Errors: those of kp_comm_allreduce, and
 * KP_ERR_INVALID_ARG for a root outside the communicator.
 */
KP_API kp_status kp_comm_broadcast(kp_comm *c, kp_buffer *buf, size_t offset, size_t bytes,
                                   int root);

/* Returns once every rank has called it (or fails after the timeout, naming the missing ranks). */
KP_API kp_status kp_comm_barrier(kp_comm *c);

/*
 * Tells every other rank that this rank gives up, with `reason` (copied; at most 255 bytes are
 * sent): their pending or next collective fails with "rank R failed: reason". Call it before
 * leaving on an error of your own (a launch that failed mid-step), so the others fail at once
 * instead of at their timeout. The communicator is unusable afterwards. Waits at most a second
 * for the notices to leave. Errors: KP_ERR_INVALID_ARG (NULL c).
 */
KP_API kp_status kp_comm_fail(kp_comm *c, const char *reason);

/* ------------------------------------------------------------------------------------------ */
/* Gradient buckets                                                                           */
/* ------------------------------------------------------------------------------------------ */

/* A range of f32 elements of an arena. */
typedef struct kp_comm_range {
    size_t offset;
    size_t count;
} kp_comm_range;

/*
 * Cuts a parameter arena (kp_optim_arena_layout's segment table: n_segments pairs of offset and
 * count, in elements) into buckets for kp_comm_buckets_create: segments taken from the last to
 * the first (the order a backward produces their gradients), each bucket the smallest run of
 * whole segments of at least `bucket_bytes` (the last bucket may be smaller), its range running
 * from its first segment's offset to its last one's end. Writes at most n_segments ranges into
 * `out` and returns how many; 0 when an argument is NULL or a segment is negative.
 */
KP_API size_t kp_comm_buckets_plan(const int32_t *segments, size_t n_segments, size_t bucket_bytes,
                                   kp_comm_range *out);

typedef struct kp_comm_buckets kp_comm_buckets;

/*
 * Prepares the all-reduce (op) of `n` ranges of f32 arena `buf` (ranges copied; each within the
 * buffer, none overlapping another), with host staging for each (pinned where the driver gives
 * it, else plain memory). Local: no MPI call. *out is the caller's (kp_comm_buckets_destroy).
 * Errors: KP_ERR_INVALID_ARG, KP_ERR_OUT_OF_MEMORY.
 */
KP_API kp_status kp_comm_buckets_create(kp_comm *c, kp_buffer *buf, const kp_comm_range *ranges,
                                        size_t n, kp_comm_op op, kp_comm_buckets **out);

/*
 * Says that the launches writing bucket `index` are enqueued (the backward has produced it). With
 * host staging on an OpenCL runtime this enqueues a non-blocking read of the bucket after them and
 * returns, after finishing the all-reduce of the bucket started before (wait for its read,
 * exchange it over MPI while the device runs what was enqueued after that read, enqueue the write
 * back): MPI traffic for one bucket overlaps the device work enqueued between this call and the
 * next. On the node-shared transport the round is pipelined (the environment's KP_COMM_BUCKETS:
 * "pipelined", the default, runs the bucket's copies and sum on a second queue of the
 * communicator after a marker behind its producers, beside the runtime's queue; "single-queue" on
 * the runtime's queue itself, after the producers enqueued before them; "blocking" all-reduces
 * the bucket at once; docs/comm.md). This call then moves the earlier buckets a step further (it
 * waits only for the device's work up to the previous bucket's first copy, which follows that
 * bucket's producers, and for the other ranks' syncs). On the host device, and for the NCCL
 * transport's buffers, the bucket is all-reduced at once, blocking. Buckets are started in index
 * order, 0 first, each once per round; until kp_comm_buckets_wait for it or the round's finish,
 * the runtime's work must neither read nor write a started bucket. Errors: KP_ERR_INVALID_ARG (an
 * index out of order, another set of buckets' round in flight on the communicator's shared
 * transport, buckets that differ between the ranks), those of kp_comm_allreduce.
 */
KP_API kp_status kp_comm_buckets_start(kp_comm_buckets *b, size_t index);

/*
 * Makes the launches enqueued on the runtime from now on follow the reduction of bucket `index`
 * (and of every bucket before it), so that the optimizer step over that bucket's parameters may
 * be enqueued at once while later buckets are still being exchanged: the step waits for its own
 * bucket, not for the round. With the pipelined rounds it returns without waiting for the device
 * (a barrier on the runtime's queue); elsewhere bucket `index`'s write back is enqueued. The
 * bucket must have been started; a bucket already waited for (or before one) returns at once.
 * Every rank must make the same calls in the same order. Errors: those of
 * kp_comm_buckets_start, KP_ERR_INVALID_ARG (a bucket not started this round).
 */
KP_API kp_status kp_comm_buckets_wait(kp_comm_buckets *b, size_t index);

/*
 * Finishes the round: the all-reduces of the buckets still pending, each bucket's write back
 * enqueued, so launches enqueued afterwards (the optimizer step) read the reduced gradients. With
 * the pipelined rounds it returns without waiting for the device: a barrier on the runtime's
 * queue makes the later launches follow the round's last copies. Every bucket must have been
 * started. The next round starts at bucket 0. Errors: those of kp_comm_buckets_start,
 * KP_ERR_INVALID_ARG (a bucket not started).
 */
KP_API kp_status kp_comm_buckets_finish(kp_comm_buckets *b);

/* Releases the buckets after the runtime's queued work (their staging is read by it) and the
 * shared transport's copies. Destroyed in the middle of a round on the shared transport, they
 * break the communicator and tell the other ranks, which wait for their syncs. NULL is a no-op. */
KP_API void kp_comm_buckets_destroy(kp_comm_buckets *b);

#ifdef __cplusplus
}
#endif

#endif
