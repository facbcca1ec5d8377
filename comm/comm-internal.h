/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: the communicator, its host staging and its waits, shared by comm/'s files. */
#ifndef KP_COMM_INTERNAL_H
#define KP_COMM_INTERNAL_H

#include <CL/cl.h>

#include "kernelport/comm.h"

/* Tags of the duplicate communicator's messages. */
enum {
    TAG_FAILURE = 1,
    TAG_CALL,
    TAG_SLICE,
    TAG_RESULT,
    TAG_BROADCAST,
    TAG_SYNC,
    TAG_FREE,
    TAG_BUCKET
};

/* The longest reason a failure notice carries, terminator included. */
#define FAILURE_BYTES 256

/* Host memory for staging: pinned (an OpenCL buffer in host memory, mapped for the host's life)
 * where the runtime is OpenCL's, else malloc'ed. */
typedef struct comm_host {
    void *ptr;
    size_t bytes;
    cl_mem pinned; /* NULL when malloc'ed */
} comm_host;

/* A shared-memory segment of the node (comm-shared.c): part r rank r's, every rank's device
 * reading and writing it by DMA through one OpenCL buffer over the whole segment. */
typedef struct comm_segment {
    MPI_Win win; /* locked for the window's life (MPI_Win_sync) */
    char *base;  /* part 0, the segment's start, in this process */
    size_t part; /* bytes of each part, a multiple of 4096 */
    cl_mem mem;  /* CL_MEM_USE_HOST_PTR over every part, mapped for its life */
} comm_segment;

/* The node-shared transport (comm-shared.c, and comm-shared-buckets.c for bucket rounds). */
typedef struct comm_shared {
    MPI_Comm node;         /* c->comm's ranks in the same order, over shared memory */
    comm_segment seg;      /* the blocking collectives' */
    comm_segment buckets;  /* the bucket rounds': two halves a part, used by round parity */
    cl_device_id device;   /* the runtime's */
    cl_command_queue copy; /* in order, beside the runtime's: the bucket rounds' copies and sums */
    cl_program program;
    cl_kernel sum;
    cl_mem rows; /* device scratch: the other ranks' copies of this rank's slice, a row each */
    size_t rows_bytes;
    uint64_t rounds;    /* bucket rounds started on the communicator */
    const void *active; /* the buckets whose round is in flight, or NULL */
} comm_shared;

struct kp_comm {
    kp_runtime *rt;
    MPI_Comm comm; /* our duplicate */
    int rank, size;
    double timeout_s;
    uint64_t calls; /* collectives entered so far: the same count on every rank */
    char *broken;   /* why the communicator is unusable, or NULL */
    /* A peer's failure notice: its receive stays posted for the communicator's life. */
    MPI_Request failure_req;
    char failure_text[FAILURE_BYTES];
    char failure_sent[FAILURE_BYTES]; /* this rank's notice, while its sends are in flight */
    /* OpenCL interop (NULL on the host device). */
    cl_context context;
    cl_command_queue queue;
    comm_host staging; /* the blocking collectives' copy of the range */
    comm_host slices;  /* the other ranks' copies of this rank's slice */
    int shared;        /* the device collectives use the node-shared transport */
    /* The shared transport's buckets (KP_COMM_BUCKETS): pipelined on the communicator's second
     * queue (the default) or on the runtime's own, or each all-reduced at its start (blocking). */
    enum { BUCKETS_PIPELINED, BUCKETS_BLOCKING, BUCKETS_SINGLE_QUEUE } buckets;
    /* The shared transport's all-reduce (KP_COMM_ALLREDUCE, comm_shared_slice): one-shot where
     * it pays (auto), or always one way. */
    enum { ALLREDUCE_AUTO, ALLREDUCE_ONE_SHOT, ALLREDUCE_TWO_SHOT } allreduce;
    char why[2 * FAILURE_BYTES + 96]; /* why this transport (kp_comm_transport) */
    comm_shared shm;
    struct comm_nccl *nccl; /* the NCCL transport (comm-nccl.c), or NULL */
};

/* What a collective is, exchanged before its data so that mismatched calls fail clearly. */
enum {
    CALL_ALLREDUCE_SUM,
    CALL_ALLREDUCE_MEAN,
    CALL_BROADCAST,
    CALL_BARRIER,
    CALL_NCCL_SUM, /* an all-reduce of a kp_comm_buffer_create buffer through NCCL */
    CALL_NCCL_MEAN,
    CALL_BUCKETS_SUM, /* a round of buckets on the shared transport: count floats in root buckets */
    CALL_BUCKETS_MEAN
};

/* snprintf for messages made of other messages, where cutting the end off is what is wanted. */
void comm_text(char *dst, size_t size, const char *fmt, ...) KP_PRINTF(3, 4);

/* Fails `fn` on c's runtime with status and a message. */
kp_status comm_fail(kp_comm *c, kp_status status, const char *fn, const char *fmt, ...)
    KP_PRINTF(4, 5);
/* Marks the communicator unusable with kp_last_error's message, tells the other ranks, and
 * returns status. */
kp_status comm_break(kp_comm *c, kp_status status);
/* KP_OK, or the failure that broke the communicator, for `fn`. */
kp_status comm_usable(kp_comm *c, const char *fn);
/* An MPI call's error: "fn: MPI_Isend failed: <MPI's string>". */
kp_status comm_mpi_fail(kp_comm *c, const char *fn, const char *call, int rc);

/* Waits for n requests (request i exchanges with rank peers[i]) until the deadline, watching for
 * a peer's failure notice. On failure the communicator is broken. */
kp_status comm_wait(kp_comm *c, const char *fn, MPI_Request *reqs, const int *peers, int n);

/* Sends `count` int64 values from `mine` to every other rank and receives rank r's into
 * theirs + r * count, waited for as comm_wait waits; with count 0 (mine and theirs may be NULL)
 * it is a sync with every rank. */
kp_status comm_exchange(kp_comm *c, const char *fn, int tag, const int64_t *mine, int64_t *theirs,
                        int count);

/* Whether another rank's failure notice has come: then fails `fn` with it, marks the
 * communicator unusable (the others heard it too) and returns 1. */
int comm_peer_failed(kp_comm *c, const char *fn);

/* Every rank learns whether some rank could not go on (its reason in `no`, FAILURE_BYTES, or
 * ""): *all_ok, and the first such rank's reason in `no`, "rank R: ...". Collective. */
kp_status comm_agree_ok(kp_comm *c, const char *fn, char *no, int *all_ok);

/* The index of environment variable `name`'s value in `values` (NULL-terminated), 0 where it is
 * unset or empty, -1 where it is none of them. */
int comm_env_choice(const char *name, const char *const *values);

/* Checks with every rank that they all entered the same collective (kind, count, root). */
kp_status comm_agree(kp_comm *c, const char *fn, int kind, uint64_t count, int root);

/* The all-reduce of `count` floats of host memory `data`, in place. */
kp_status comm_allreduce_floats(kp_comm *c, const char *fn, float *data, size_t count,
                                kp_comm_op op);

/* Slice r of `count` elements over p ranks begins at this element; slice p ends the range. */
size_t comm_slice_begin(size_t count, int p, int r);

/* Chooses the transport (collective over c->comm; flags are kp_comm_options'): sets c->shared and
 * c->why, setting up the segment when shared. Fails where the ranks ask for different ones or
 * KP_COMM_SHARED cannot be had. */
kp_status comm_shared_open(kp_comm *c, uint32_t flags);
/* Frees the segment (collective) where every rank answers within the deadline, else leaves it. */
void comm_shared_close(kp_comm *c);
/* The shared transport's all-reduce of `count` floats of `mem` from element `offset`, and
 * broadcast of `bytes` from byte `offset`, for a call the ranks agreed on. Blocking. */
kp_status comm_shared_allreduce(kp_comm *c, const char *fn, cl_mem mem, size_t offset, size_t count,
                                kp_comm_op op);
kp_status comm_shared_broadcast(kp_comm *c, const char *fn, cl_mem mem, size_t offset, size_t bytes,
                                int root);

/* An OpenCL failure on this rank's side of a shared collective (`what` failed): the message,
 * the communicator broken, the others told. Returns KP_ERR_CL. */
kp_status comm_shared_failure(kp_comm *c, const char *fn, const char *what, cl_int err);
/* Every rank's copies into segment g are done before any rank reads them: `count` int64 values
 * exchanged with every rank (comm_exchange) between two MPI_Win_syncs (MPI's rule for shared
 * windows). */
kp_status comm_shared_sync(kp_comm *c, const char *fn, comm_segment *g, int tag,
                           const int64_t *mine, int64_t *theirs, int count);
/* Grows segment g's parts to at least `bytes` (collective over the node: the ranks agreed on the
 * call), after this rank's copies from the old one. */
kp_status comm_shared_grow(kp_comm *c, const char *fn, comm_segment *g, size_t bytes);
/* Rank r's part of segment g. */
char *comm_shared_part(const comm_segment *g, int r);
/* The elements [*b, *e) of a `count`-float all-reduce that this rank sums on the shared
 * transport: its own slice (reduce-scatter, all-gather: two syncs), or, one-shot, the whole range
 * (every rank sums every rank's copy: one sync) where the copies in are at most 8 MiB
 * (KP_COMM_ALLREDUCE chooses otherwise; docs/comm.md). Returns one-shot. */
int comm_shared_slice(const kp_comm *c, size_t count, size_t *b, size_t *e);
/* Enqueues on q the sum of this rank's slice, `n` floats at element `at` of out, with the other
 * ranks' copies in `rows` (rank r's in row r, or r - 1 past this rank), in rank order. */
cl_int comm_shared_sum(kp_comm *c, cl_command_queue q, cl_mem rows, cl_mem out, size_t at, size_t n,
                       kp_comm_op op);

/* The shared transport's bucket rounds (comm-shared-buckets.c): the all-reduce of n ranges of
 * buf (one after another in the round's half of the segment), pipelined on the comm's copy queue
 * beside the runtime's, or on the runtime's own (KP_COMM_BUCKETS=single-queue). */
typedef struct comm_pipe comm_pipe;
kp_status comm_pipe_create(kp_comm *c, const char *fn, kp_buffer *buf, const kp_comm_range *ranges,
                           size_t n, kp_comm_op op, comm_pipe **out);
kp_status comm_pipe_start(comm_pipe *p, const char *fn, size_t index);
kp_status comm_pipe_finish(comm_pipe *p, const char *fn);
/* Moves buckets 0 to `index` to their last step and makes the runtime's queue wait for them. */
kp_status comm_pipe_wait(comm_pipe *p, const char *fn, size_t index);
void comm_pipe_destroy(comm_pipe *p);

/* The shared transport's all-reduce of a checked range of buf, agreed with the other ranks first
 * (c->shared, on an OpenCL runtime). */
kp_status comm_allreduce_shared(kp_comm *c, const char *fn, kp_buffer *buf, size_t offset,
                                size_t count, kp_comm_op op);

/* Sets up NCCL (collective over c->comm): c->nccl where every rank has it, else NULL and the
 * first rank's reason in `no` (FAILURE_BYTES). Fails only where MPI does. */
kp_status comm_nccl_open(kp_comm *c, char *no);
/* Destroys NCCL's communicator; buffers still alive keep their memory until destroyed. */
void comm_nccl_close(kp_comm *c);
/* Whether buf is memory of kp_comm_buffer_create on c's NCCL transport. */
int comm_nccl_owns(kp_comm *c, const kp_buffer *buf);
/* NCCL's all-reduce of a checked range of such a buffer, agreed with the other ranks first. */
kp_status comm_allreduce_nccl(kp_comm *c, const char *fn, kp_buffer *buf, size_t offset,
                              size_t count, kp_comm_op op);

/* Grows h to at least `bytes` (its contents are lost). */
kp_status comm_host_reserve(kp_comm *c, comm_host *h, size_t bytes);
void comm_host_release(kp_comm *c, comm_host *h);

/* Checks that [offset, offset + bytes) lies within buf and buf belongs to c's runtime. */
kp_status comm_check_range(kp_comm *c, const char *fn, const kp_buffer *buf, size_t offset,
                           size_t bytes);
/* Checks that this thread may move buf's data now: it is the runtime's, and no graph is being
 * recorded on the runtime by this thread (a transfer would run at once, not in the graph). */
kp_status comm_transfers_allowed(kp_comm *c, const char *fn, const kp_buffer *buf);

#endif
