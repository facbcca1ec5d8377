/* SPDX-License-Identifier: Apache-2.0 */
/* The collectives of comm.h under mpirun (tests/mpi/run.sh starts 2 and 3 ranks), on PoCL (on
 * both transports, the node-shared one by name) and on the host device: all-reduce sums and means
 * on odd sizes against the host's sum in rank order, bit for bit (one size in pieces); the two
 * transports against each other as the shared segment grows; kp_comm_buckets_plan's cuts; a tensor
 * view; the host variant; broadcast; barrier; buckets of an arena of odd segments over two rounds
 * with device work queued between them; ranks that ask for different transports; calls that differ
 * between ranks; a rank that gives up; a rank whose device copy into the shared segment fails
 * (tests/cl-faults.c); a rank that never comes (timeout); the NCCL transport (refused where it
 * cannot be had, required under KP_COMM_TRANSPORT=nccl). Every rank checks; the first failed
 * check aborts the job. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cl-faults.h"
#include "kernelport/comm.h"
#include "kernelport/ops/optim.h"

static int rank, size;

static void fail(const char *fmt, ...) KP_PRINTF(1, 2);
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "test-comm: rank %d of %d: ", rank, size);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define CHECK_OK(rt, call)                                                                         \
    do {                                                                                           \
        kp_status st_ = (call);                                                                    \
        if (st_ != KP_OK)                                                                          \
            fail("%s:%d: %s: %s: %s", __FILE__, __LINE__, #call, kp_status_name(st_),              \
                 kp_last_error(rt));                                                               \
    } while (0)

/* Element i of rank r's data in test `t`: values of mixed magnitude and sign, so that the order
 * of the additions shows in the last bits. */
static float value(int t, int r, size_t i)
{
    uint64_t z = ((uint64_t)t << 40) ^ ((uint64_t)r << 32) ^ i;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const double u = (double)(z >> 11) / 9007199254740992.0;
    return (float)((u - 0.5) * pow(10.0, (double)(z % 7) - 3.0));
}

/* The sum over ranks in rank order, as comm.h promises it, and its mean. */
static float expected(int t, size_t i, kp_comm_op op)
{
    float acc = value(t, 0, i);
    for (int r = 1; r < size; r++)
        acc += value(t, r, i);
    return op == KP_COMM_MEAN ? acc / (float)size : acc;
}

/* Set while the tests run on the NCCL transport: their buffers come from kp_comm_buffer_create,
 * and over more than two ranks NCCL's order of the additions may differ from rank order. */
static kp_comm *nccl_comm;

static void make_buffer(kp_runtime *rt, size_t bytes, kp_buffer **out)
{
    if (nccl_comm)
        CHECK_OK(rt, kp_comm_buffer_create(nccl_comm, bytes, out));
    else
        CHECK_OK(rt, kp_buffer_create(rt, bytes, out));
}

/* got[i] for i in [from, to) against element i of test t's sum (or mean). */
static void expect_range(const float *got, int t, size_t from, size_t to, kp_comm_op op,
                         const char *what)
{
    for (size_t i = from; i < to; i++) {
        const float want = expected(t, i, op);
        if (nccl_comm && size > 2) {
            float mag = 0;
            for (int r = 0; r < size; r++)
                mag += fabsf(value(t, r, i));
            if (fabsf(got[i] - want) > 1e-6f * mag)
                fail("%s: element %zu of [%zu, %zu) is %.9g, expected %.9g (NCCL's order)", what, i,
                     from, to, (double)got[i], (double)want);
        } else if (memcmp(&got[i], &want, sizeof want) != 0)
            fail("%s: element %zu of [%zu, %zu) is %.9g, expected %.9g", what, i, from, to,
                 (double)got[i], (double)want);
    }
}

static void expect_bits(const float *got, int t, size_t n, kp_comm_op op, const char *what)
{
    expect_range(got, t, 0, n, op, what);
}

static kp_runtime *open_runtime(const char *device)
{
    kp_runtime_options o = kp_runtime_options_default();
    o.flags = KP_RUNTIME_NO_ENV | KP_RUNTIME_NO_USER_MANIFESTS | KP_RUNTIME_NO_INSTALLED_PLUGINS;
    o.device = device;
    kp_runtime *rt = NULL;
    CHECK_OK(NULL, kp_runtime_create(&o, &rt));
    return rt;
}

/* All-reduces of odd sizes at an odd offset of a larger buffer, whose other elements must stay;
 * the last size is past two of the pipelined all-reduce's pieces of 2^20 floats. */
static void test_allreduce(kp_runtime *rt, kp_comm *c)
{
    static const size_t sizes[] = {1, 2, 3, 5, 257, 65537, (2u << 20) + 3};
    for (int t = 0; t < 7; t++)
        for (int o = 0; o < 2; o++) {
            const kp_comm_op op = o ? KP_COMM_MEAN : KP_COMM_SUM;
            const size_t n = sizes[t], pad = 3, total = n + 2 * pad;
            float *host = malloc(total * sizeof *host);
            kp_buffer *buf = NULL;
            if (!host)
                fail("out of memory");
            for (size_t i = 0; i < total; i++)
                host[i] = i < pad || i >= pad + n ? -7.0f : value(t, rank, i - pad);
            make_buffer(rt, total * sizeof *host, &buf);
            CHECK_OK(rt, kp_buffer_write(rt, buf, 0, total * sizeof *host, host));
            CHECK_OK(rt, kp_comm_allreduce(c, buf, pad, n, op));
            CHECK_OK(rt, kp_buffer_read(rt, buf, 0, total * sizeof *host, host));
            char what[64];
            snprintf(what, sizeof what, "all-reduce %s of %zu", o ? "mean" : "sum", n);
            expect_bits(host + pad, t, n, op, what);
            for (size_t i = 0; i < pad; i++)
                if (host[i] != -7.0f || host[pad + n + i] != -7.0f)
                    fail("%s: an element outside the range changed", what);
            kp_buffer_destroy(rt, buf);
            free(host);
        }
}

static void test_tensor_host_broadcast_barrier(kp_runtime *rt, kp_comm *c)
{
    enum { ROWS = 7, COLS = 3 };
    float host[ROWS * COLS];
    kp_buffer *buf = NULL;
    for (size_t i = 0; i < ROWS * COLS; i++)
        host[i] = value(10, rank, i);
    CHECK_OK(rt, kp_buffer_create(rt, sizeof host, &buf));
    CHECK_OK(rt, kp_buffer_write(rt, buf, 0, sizeof host, host));
    CHECK_OK(rt, kp_comm_allreduce_tensor(c, kp_tensor_2d(buf, KP_F32, ROWS, COLS), KP_COMM_SUM));
    CHECK_OK(rt, kp_buffer_read(rt, buf, 0, sizeof host, host));
    expect_bits(host, 10, ROWS * COLS, KP_COMM_SUM, "all-reduce of a tensor");
    kp_tensor strided = kp_tensor_2d(buf, KP_F32, ROWS, 2);
    strided.strides[0] = COLS;
    if (kp_comm_allreduce_tensor(c, strided, KP_COMM_SUM) != KP_ERR_INVALID_ARG ||
        !strstr(kp_last_error(rt), "not contiguous"))
        fail("a strided view was not refused: %s", kp_last_error(rt));
    if (kp_comm_allreduce_tensor(c, kp_tensor_1d(buf, KP_I32, 4), KP_COMM_SUM) !=
        KP_ERR_INVALID_ARG)
        fail("an i32 tensor was not refused");

    float small[5];
    for (size_t i = 0; i < 5; i++)
        small[i] = value(11, rank, i);
    CHECK_OK(rt, kp_comm_allreduce_host(c, small, 5, KP_COMM_MEAN));
    expect_bits(small, 11, 5, KP_COMM_MEAN, "all-reduce of host memory");

    /* 13 bytes at byte 5 from the last rank; the bytes around them stay each rank's own. */
    unsigned char bytes[24], want[24];
    for (int i = 0; i < 24; i++)
        bytes[i] = (unsigned char)(rank * 31 + i);
    CHECK_OK(rt, kp_buffer_write(rt, buf, 0, sizeof bytes, bytes));
    CHECK_OK(rt, kp_comm_broadcast(c, buf, 5, 13, size - 1));
    CHECK_OK(rt, kp_buffer_read(rt, buf, 0, sizeof bytes, bytes));
    for (int i = 0; i < 24; i++)
        want[i] = (unsigned char)((i >= 5 && i < 18 ? size - 1 : rank) * 31 + i);
    if (memcmp(bytes, want, sizeof want) != 0)
        fail("broadcast: the bytes differ from the root's");
    if (kp_comm_broadcast(c, buf, 0, 4, size) != KP_ERR_INVALID_ARG)
        fail("a root outside the communicator was not refused");
    if (kp_comm_allreduce(c, buf, 20, 2, KP_COMM_SUM) != KP_ERR_INVALID_ARG ||
        !strstr(kp_last_error(rt), "outside the buffer"))
        fail("a range outside the buffer was not refused: %s", kp_last_error(rt));
    CHECK_OK(rt, kp_comm_barrier(c));
    kp_buffer_destroy(rt, buf);
}

/* Buffers for bucket rounds: the arena, a copy of it, busy work. */
typedef struct round_bufs {
    kp_buffer *arena, *copy, *busy;
    size_t len;
    float *host;
} round_bufs;

/*
 * A round of buckets over arena (test t's values of this rank), each bucket started after device
 * work (a fill), with, where `between` is set, a blocking all-reduce of a device buffer and one of
 * host memory between buckets 1 and 2. After finish, a copy of the arena is enqueued at once, as
 * an optimizer's launch would be: it must follow the round's copies. The copy is checked against
 * the host's sum in rank order, and the elements outside every bucket against this rank's own.
 */
/* How a round ends: kp_comm_buckets_finish alone, or each bucket waited for first (after all the
 * starts, or right after its own), its range copied out at once by a launch that must see it
 * reduced. */
enum { WAIT_NONE, WAIT_AFTER_STARTS, WAIT_EACH };

/* Copies bucket k's range of the arena into r->copy, after kp_comm_buckets_wait(b, k). */
static void wait_and_copy(kp_runtime *rt, kp_comm_buckets *b, round_bufs *r,
                          const kp_comm_range *ranges, size_t k)
{
    CHECK_OK(rt, kp_comm_buckets_wait(b, k));
    /* Twice, and an earlier bucket again: no-ops. */
    CHECK_OK(rt, kp_comm_buckets_wait(b, k));
    CHECK_OK(rt, kp_comm_buckets_wait(b, 0));
    const size_t at = ranges[k].offset * sizeof(float), bytes = ranges[k].count * sizeof(float);
    if (bytes)
        CHECK_OK(rt, kp_buffer_copy(rt, r->arena, at, r->copy, at, bytes));
}

static void bucket_round(kp_runtime *rt, kp_comm *c, kp_comm_buckets *b, round_bufs *r,
                         const kp_comm_range *ranges, size_t n, int t, kp_comm_op op, int between,
                         int waits, const char *what)
{
    float *host = r->host;
    const size_t bytes = r->len * sizeof *host;
    for (size_t i = 0; i < r->len; i++)
        host[i] = value(t, rank, i);
    CHECK_OK(rt, kp_buffer_write(rt, r->arena, 0, bytes, host));
    if (waits != WAIT_NONE)
        CHECK_OK(rt, kp_buffer_write(rt, r->copy, 0, bytes, host));
    const float zero = 0;
    for (size_t k = 0; k < n; k++) {
        CHECK_OK(rt, kp_buffer_fill(rt, r->busy, 0, 1 << 20, &zero, sizeof zero));
        CHECK_OK(rt, kp_comm_buckets_start(b, k));
        if (waits == WAIT_EACH)
            wait_and_copy(rt, b, r, ranges, k);
        if (between && k == 1) {
            float loss[3] = {value(t + 50, rank, 0), value(t + 50, rank, 1),
                             value(t + 50, rank, 2)};
            CHECK_OK(rt, kp_buffer_write(rt, r->busy, 0, sizeof loss, loss));
            CHECK_OK(rt, kp_comm_allreduce(c, r->busy, 0, 3, KP_COMM_SUM));
            CHECK_OK(rt, kp_buffer_read(rt, r->busy, 0, sizeof loss, loss));
            expect_bits(loss, t + 50, 3, KP_COMM_SUM, "an all-reduce inside a round");
            for (size_t i = 0; i < 3; i++)
                loss[i] = value(t + 51, rank, i);
            CHECK_OK(rt, kp_comm_allreduce_host(c, loss, 3, KP_COMM_MEAN));
            expect_bits(loss, t + 51, 3, KP_COMM_MEAN, "a host all-reduce inside a round");
        }
    }
    if (waits == WAIT_NONE && n > 0 && kp_comm_buckets_wait(b, n) != KP_ERR_INVALID_ARG)
        fail("%s: kp_comm_buckets_wait of a bucket not started: %s", what, kp_last_error(rt));
    for (size_t k = 0; waits == WAIT_AFTER_STARTS && k < n; k++)
        wait_and_copy(rt, b, r, ranges, k);
    CHECK_OK(rt, kp_comm_buckets_finish(b));
    if (waits == WAIT_NONE)
        CHECK_OK(rt, kp_buffer_copy(rt, r->arena, 0, r->copy, 0, bytes));
    CHECK_OK(rt, kp_buffer_read(rt, r->copy, 0, bytes, host));
    size_t done = 0;
    for (size_t k = 0; k < n; k++) {
        char w[96];
        snprintf(w, sizeof w, "%s, bucket %zu of %zu floats", what, k, ranges[k].count);
        expect_range(host, t, ranges[k].offset, ranges[k].offset + ranges[k].count, op, w);
        done += ranges[k].count;
    }
    for (size_t i = 0, outside = 0; i < r->len; i++) {
        int in = 0;
        for (size_t k = 0; k < n && !in; k++)
            in = i >= ranges[k].offset && i < ranges[k].offset + ranges[k].count;
        if (!in && memcmp(&host[i], &(float){value(t, rank, i)}, sizeof(float)) != 0)
            fail("%s: element %zu, in no bucket, changed", what, i);
        outside += !in;
        if (i + 1 == r->len && outside + done != r->len)
            fail("%s: the buckets overlap", what);
    }
}

/* Buckets: an arena of odd segments, planned into buckets of at least 64 bytes from the last
 * segment; and buckets of odd sizes (0 and 1 float among them), larger than a page of floats in
 * all, so that the shared transport's bucket segment grows between two rounds. The two sets take
 * turns over several rounds in a row (the shared transport's halves of its segment are reused
 * every other round), one round with all-reduces inside it. */
/* Set while the shared transport's buckets run blocking: no rounds in flight to refuse. */
static int buckets_blocking;

static void test_buckets(kp_runtime *rt, kp_comm *c)
{
    const int64_t numel[] = {3, 1, 257, 10, 5, 29};
    enum { N_SEG = 6, N_ODD = 7 };
    int32_t seg[2 * N_SEG];
    const int64_t len = kp_optim_arena_layout(N_SEG, numel, 4, seg);
    kp_comm_range ranges[N_SEG];
    const size_t n = kp_comm_buckets_plan(seg, N_SEG, 64, ranges);
    if (n < 3 || n > N_SEG || ranges[0].offset != (size_t)seg[2 * (N_SEG - 1)] ||
        ranges[n - 1].offset != 0)
        fail("kp_comm_buckets_plan made %zu buckets, the first at %zu", n, ranges[0].offset);
    const kp_comm_range odd[N_ODD] = {{0, 1},   {1, 0},      {2, 2},   {5, 257},
                                      {262, 0}, {263, 1031}, {1300, 3}};
    round_bufs r = {.len = 1310};
    if ((size_t)len > r.len || !(r.host = malloc(r.len * sizeof *r.host)))
        fail("out of memory");
    kp_comm_buckets *b = NULL, *bo = NULL;
    make_buffer(rt, r.len * sizeof(float), &r.arena);
    CHECK_OK(rt, kp_buffer_create(rt, r.len * sizeof(float), &r.copy));
    CHECK_OK(rt, kp_buffer_create(rt, 1 << 20, &r.busy));
    CHECK_OK(rt, kp_comm_buckets_create(c, r.arena, ranges, n, KP_COMM_SUM, &b));
    CHECK_OK(rt, kp_comm_buckets_create(c, r.arena, odd, N_ODD, KP_COMM_MEAN, &bo));
    for (int round = 0; round < 6; round++) {
        char what[64];
        snprintf(what, sizeof what, "buckets, round %d", round);
        /* Rounds 1 and 2 wait for each bucket, right after its start or after every start. */
        const int waits = round == 1 ? WAIT_EACH : round == 2 ? WAIT_AFTER_STARTS : WAIT_NONE;
        if (round == 2 || round == 3)
            bucket_round(rt, c, bo, &r, odd, N_ODD, 20 + round, KP_COMM_MEAN, round == 3, waits,
                         what);
        else
            bucket_round(rt, c, b, &r, ranges, n, 20 + round, KP_COMM_SUM, 0, waits, what);
    }
    /* The shared transport runs one round at a time on a communicator: another set's start is
     * refused (on this rank alone, before any exchange), and the round goes on. */
    if (!strcmp(kp_comm_transport(c, NULL), "shared") && !buckets_blocking) {
        CHECK_OK(rt, kp_comm_buckets_start(b, 0));
        if (kp_comm_buckets_start(bo, 0) != KP_ERR_INVALID_ARG ||
            !strstr(kp_last_error(rt), "in flight"))
            fail("a round started while another is in flight: %s", kp_last_error(rt));
        for (size_t k = 1; k < n; k++)
            CHECK_OK(rt, kp_comm_buckets_start(b, k));
        CHECK_OK(rt, kp_comm_buckets_finish(b));
        bucket_round(rt, c, bo, &r, odd, N_ODD, 26, KP_COMM_MEAN, 0, WAIT_NONE,
                     "buckets, after a refusal");
    }
    /* While this thread records a graph on the runtime, transfers would run at once, outside
     * the graph: refused, before any rank exchanges anything. */
    CHECK_OK(rt, kp_graph_begin(rt, 0));
    if (kp_comm_buckets_start(b, 0) != KP_ERR_INVALID_ARG ||
        !strstr(kp_last_error(rt), "recording"))
        fail("a bucket started while recording a graph: %s", kp_last_error(rt));
    if (kp_comm_allreduce(c, r.arena, 0, 4, KP_COMM_SUM) != KP_ERR_INVALID_ARG ||
        !strstr(kp_last_error(rt), "recording"))
        fail("an all-reduce while recording a graph: %s", kp_last_error(rt));
    kp_graph *g = NULL;
    CHECK_OK(rt, kp_graph_end(rt, &g));
    kp_graph_destroy(g);
    if (kp_comm_buckets_start(b, 1) != KP_ERR_INVALID_ARG ||
        !strstr(kp_last_error(rt), "out of order"))
        fail("a bucket started out of order was not refused: %s", kp_last_error(rt));
    if (kp_comm_buckets_finish(b) != KP_ERR_INVALID_ARG)
        fail("finishing a round with no bucket started was not refused");
    kp_comm_buckets_destroy(b);
    kp_comm_buckets_destroy(bo);
    kp_buffer_destroy(rt, r.busy);
    kp_buffer_destroy(rt, r.copy);
    kp_buffer_destroy(rt, r.arena);
    free(r.host);
}

/* kp_comm_buckets_plan on its own: the documented cuts and refusals. */
static void test_plan(void)
{
    /* Segments of 3, 1, 257 and 10 floats at 0, 4, 8, 268 (kp_optim_arena_layout, align 4). */
    const int32_t seg[8] = {0, 3, 4, 1, 8, 257, 268, 10};
    kp_comm_range r[4];
    size_t n = kp_comm_buckets_plan(seg, 4, 0, r);
    const size_t each[4][2] = {{268, 10}, {8, 257}, {4, 1}, {0, 3}};
    if (n != 4)
        fail("plan with bucket_bytes 0: %zu buckets, expected one per segment", n);
    for (size_t i = 0; i < 4; i++)
        if (r[i].offset != each[i][0] || r[i].count != each[i][1])
            fail("plan with bucket_bytes 0: bucket %zu is [%zu, +%zu)", i, r[i].offset, r[i].count);
    /* 64 bytes: 10 floats make 40, so the last two segments share the first bucket, which runs
     * over the padding between them; 1 and 3 floats make the last, smaller one. */
    n = kp_comm_buckets_plan(seg, 4, 64, r);
    if (n != 2 || r[0].offset != 8 || r[0].count != 270 || r[1].offset != 0 || r[1].count != 5)
        fail("plan with 64 bytes: %zu buckets, [%zu, +%zu) first", n, r[0].offset, r[0].count);
    n = kp_comm_buckets_plan(seg, 4, (size_t)1 << 30, r);
    if (n != 1 || r[0].offset != 0 || r[0].count != 278)
        fail("plan with 1 GiB: %zu buckets", n);
    const int32_t bad[4] = {0, 3, 4, -1};
    if (kp_comm_buckets_plan(bad, 2, 64, r) != 0 || kp_comm_buckets_plan(NULL, 2, 64, r) != 0 ||
        kp_comm_buckets_plan(seg, 4, 64, NULL) != 0)
        fail("plan accepted a negative segment or a NULL pointer");
    if (kp_comm_buckets_start(NULL, 0) != KP_ERR_INVALID_ARG ||
        kp_comm_buckets_wait(NULL, 0) != KP_ERR_INVALID_ARG ||
        kp_comm_buckets_finish(NULL) != KP_ERR_INVALID_ARG)
        fail("NULL buckets accepted");
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static kp_comm *open_comm_flags(kp_runtime *rt, double timeout_s, uint32_t flags)
{
    kp_comm_options o = kp_comm_options_default();
    o.timeout_s = timeout_s;
    o.flags = flags;
    kp_comm *c = NULL;
    CHECK_OK(rt, kp_comm_create(rt, MPI_COMM_WORLD, &o, &c));
    return c;
}

static kp_comm *open_comm(kp_runtime *rt, double timeout_s)
{
    return open_comm_flags(rt, timeout_s, 0);
}

/* The two transports on the same inputs: the same bits, whatever the size, offset or op, as the
 * segment grows (each size larger than the last) and after it has (a small one again). */
static void test_transports_agree(kp_runtime *rt, kp_comm *shared, kp_comm *staged)
{
    static const size_t sizes[] = {7, 1031, 40009, 3};
    for (int t = 0; t < 4; t++) {
        const size_t n = sizes[t], at = (size_t)t * 5 + 1, total = n + at + 2;
        const kp_comm_op op = t % 2 ? KP_COMM_MEAN : KP_COMM_SUM;
        float *host = malloc(total * sizeof *host), *other = malloc(total * sizeof *other);
        kp_buffer *a = NULL, *b = NULL;
        if (!host || !other)
            fail("out of memory");
        for (size_t i = 0; i < total; i++)
            host[i] = i < at || i >= at + n ? -7.0f : value(30 + t, rank, i - at);
        CHECK_OK(rt, kp_buffer_create(rt, total * sizeof *host, &a));
        CHECK_OK(rt, kp_buffer_create(rt, total * sizeof *host, &b));
        CHECK_OK(rt, kp_buffer_write(rt, a, 0, total * sizeof *host, host));
        CHECK_OK(rt, kp_buffer_write(rt, b, 0, total * sizeof *host, host));
        CHECK_OK(rt, kp_comm_allreduce(shared, a, at, n, op));
        CHECK_OK(rt, kp_comm_allreduce(staged, b, at, n, op));
        CHECK_OK(rt, kp_buffer_read(rt, a, 0, total * sizeof *host, host));
        CHECK_OK(rt, kp_buffer_read(rt, b, 0, total * sizeof *host, other));
        if (memcmp(host, other, total * sizeof *host) != 0)
            fail("the shared and staged transports differ on %zu floats at %zu", n, at);
        for (size_t i = 0; i < total; i++)
            if (i < at || i >= at + n ? host[i] != -7.0f : host[i] != expected(30 + t, i - at, op))
                fail("transports, %zu floats at %zu: element %zu is %.9g", n, at, i,
                     (double)host[i]);
        kp_buffer_destroy(rt, a);
        kp_buffer_destroy(rt, b);
        free(host);
        free(other);
    }
}

/* Ranks that ask for different transports all fail, naming both; a transport by name is
 * reported as such. */
static void test_transport_choice(kp_runtime *rt)
{
    kp_comm_options o = kp_comm_options_default();
    o.flags = rank == 0 ? KP_COMM_SHARED : KP_COMM_STAGED;
    kp_comm *c = NULL;
    if (kp_comm_create(rt, MPI_COMM_WORLD, &o, &c) != KP_ERR_INVALID_ARG || c ||
        !strstr(kp_last_error(rt), "different transports"))
        fail("ranks asking for different transports: %s", kp_last_error(rt));
    o.flags = KP_COMM_SHARED | KP_COMM_STAGED;
    if (kp_comm_create(rt, MPI_COMM_WORLD, &o, &c) != KP_ERR_INVALID_ARG)
        fail("both transports at once were not refused");
    c = open_comm_flags(rt, 60, KP_COMM_STAGED);
    const char *why = NULL;
    if (strcmp(kp_comm_transport(c, &why), "staged") != 0 || !strstr(why, "asks for"))
        fail("KP_COMM_STAGED: transport %s (%s)", kp_comm_transport(c, NULL), why);
    kp_comm_destroy(c);
    /* The environment decides without a flag; a value that is no transport fails every rank. */
    setenv("KP_COMM_TRANSPORT", rank == 0 ? "bogus" : "staged", 1);
    o.flags = 0;
    if (kp_comm_create(rt, MPI_COMM_WORLD, &o, &c) != KP_ERR_INVALID_ARG ||
        !strstr(kp_last_error(rt), "rank 0's KP_COMM_TRANSPORT"))
        fail("KP_COMM_TRANSPORT=bogus on rank 0: %s", kp_last_error(rt));
    setenv("KP_COMM_TRANSPORT", "staged", 1);
    c = open_comm(rt, 60);
    if (strcmp(kp_comm_transport(c, &why), "staged") != 0 || !strstr(why, "KP_COMM_TRANSPORT"))
        fail("KP_COMM_TRANSPORT=staged: transport %s (%s)", kp_comm_transport(c, NULL), why);
    kp_comm_destroy(c);
    unsetenv("KP_COMM_TRANSPORT");
}

/*
 * The NCCL transport. Where it cannot be had (PoCL, CI): asking for it fails every rank with
 * KP_ERR_UNSUPPORTED and the reason, the automatic choice takes another transport and says why
 * not NCCL, and kp_comm_buffer_create gives an ordinary buffer. Where it must be had (`required`:
 * KP_COMM_TRANSPORT=nccl, scripts/gpu/mpi.sh on two GPUs): the all-reduces and buckets on
 * kp_comm_buffer_create's buffers, plain buffers on the same communicator (the other transport),
 * a buffer that outlives its communicator, and ranks that pass one kind each.
 */
static void test_nccl(kp_runtime *rt, int required)
{
    kp_comm_options o = kp_comm_options_default();
    o.flags = KP_COMM_NCCL;
    o.timeout_s = 120;
    kp_comm *c = NULL;
    const char *why = NULL, *transport = NULL;
    kp_status st = kp_comm_create(rt, MPI_COMM_WORLD, &o, &c);
    if (st != KP_OK) {
        if (required)
            fail("KP_COMM_TRANSPORT=nccl: %s: %s", kp_status_name(st), kp_last_error(rt));
        if (st != KP_ERR_UNSUPPORTED || c ||
            !strstr(kp_last_error(rt),
                    "the NCCL transport (kp_comm_options.flags) cannot be set up: rank "))
            fail("KP_COMM_NCCL without NCCL: %s: %s", kp_status_name(st), kp_last_error(rt));
        if (rank == 0)
            printf("test-comm: KP_COMM_NCCL refused: %s\n", kp_last_error(rt));
        setenv("KP_COMM_TRANSPORT", "nccl", 1);
        o.flags = 0;
        st = kp_comm_create(rt, MPI_COMM_WORLD, &o, &c);
        unsetenv("KP_COMM_TRANSPORT");
        if (st != KP_ERR_UNSUPPORTED || c ||
            !strstr(kp_last_error(rt), "the NCCL transport (KP_COMM_TRANSPORT) cannot be set up"))
            fail("KP_COMM_TRANSPORT=nccl without NCCL: %s: %s", kp_status_name(st),
                 kp_last_error(rt));
        c = open_comm(rt, 120);
        transport = kp_comm_transport(c, &why);
        if (!strcmp(transport, "nccl"))
            fail("the automatic choice took NCCL, which only a request takes: %s", why);
        enum { N = 5 };
        float host[N];
        kp_buffer *buf = NULL;
        for (size_t i = 0; i < N; i++)
            host[i] = value(40, rank, i);
        CHECK_OK(rt, kp_comm_buffer_create(c, sizeof host, &buf));
        if (kp_buffer_size(buf) != sizeof host)
            fail("kp_comm_buffer_create: %zu bytes", kp_buffer_size(buf));
        CHECK_OK(rt, kp_buffer_write(rt, buf, 0, sizeof host, host));
        CHECK_OK(rt, kp_comm_allreduce(c, buf, 0, N, KP_COMM_SUM));
        CHECK_OK(rt, kp_buffer_read(rt, buf, 0, sizeof host, host));
        expect_bits(host, 40, N, KP_COMM_SUM, "all-reduce of a kp_comm_buffer_create buffer");
        kp_buffer *none = NULL;
        if (kp_comm_buffer_create(c, 0, &none) != KP_ERR_INVALID_ARG || none)
            fail("kp_comm_buffer_create of 0 bytes was not refused");
        kp_buffer_destroy(rt, buf);
        kp_comm_destroy(c);
        return;
    }
    transport = kp_comm_transport(c, &why);
    if (strcmp(transport, "nccl") != 0)
        fail("KP_COMM_NCCL: transport %s (%s)", transport, why);
    if (rank == 0)
        printf("test-comm: transport nccl: %s\n", why);
    nccl_comm = c;
    test_allreduce(rt, c);
    test_buckets(rt, c);
    nccl_comm = NULL;
    /* Plain buffers on the NCCL communicator take the other transport, in rank order. */
    test_allreduce(rt, c);
    test_tensor_host_broadcast_barrier(rt, c);
    /* A buffer that outlives its communicator keeps its memory until destroyed. */
    kp_buffer *kept = NULL, *mixed = NULL;
    CHECK_OK(rt, kp_comm_buffer_create(c, 4096, &kept));
    /* Rank 0 passes NCCL memory, the others plain buffers: every rank fails naming both. */
    if (rank == 0)
        CHECK_OK(rt, kp_comm_buffer_create(c, 64, &mixed));
    else
        CHECK_OK(rt, kp_buffer_create(rt, 64, &mixed));
    st = kp_comm_allreduce(c, mixed, 0, 16, KP_COMM_SUM);
    if (size > 1 && (st != KP_ERR_INVALID_ARG || !strstr(kp_last_error(rt), "through NCCL")))
        fail("NCCL memory on one rank, a plain buffer on another: %s: %s", kp_status_name(st),
             kp_last_error(rt));
    kp_buffer_destroy(rt, mixed);
    kp_comm_destroy(c);
    const float one = 1;
    float back[4];
    CHECK_OK(rt, kp_buffer_fill(rt, kept, 0, 4096, &one, sizeof one));
    CHECK_OK(rt, kp_buffer_read(rt, kept, 4080, sizeof back, back));
    if (back[3] != 1.0f)
        fail("a kp_comm_buffer_create buffer after its communicator: %g", (double)back[3]);
    kp_buffer_destroy(rt, kept);
}

/* The OpenCL events alive (tests/cl-faults.c counts them). */
static long live_events(void)
{
    char text[256];
    cl_faults_live(text, sizeof text);
    const char *at = strstr(text, " cl_event");
    if (!at)
        return 0;
    while (at > text && at[-1] >= '0' && at[-1] <= '9')
        at--;
    return atol(at);
}

/* Bucket rounds on the shared transport that fail: the last rank's copy of its first bucket into
 * the segment fails in the second round (the others, waiting for its sync, fail naming it), and
 * the buckets, destroyed in the middle of the round, leave no event behind; then buckets that
 * differ between the ranks in one bucket's size (the same total): every rank fails naming both. */
static void test_bucket_failures(kp_runtime *rt, kp_comm *fails, kp_comm *differ)
{
    enum { LEN = 40 };
    kp_buffer *arena = NULL;
    CHECK_OK(rt, kp_buffer_create(rt, LEN * sizeof(float), &arena));
    const float one = 1;
    CHECK_OK(rt, kp_buffer_fill(rt, arena, 0, LEN * sizeof(float), &one, sizeof one));
    const kp_comm_range ranges[3] = {{20, 20}, {7, 13}, {0, 7}};
    const long events = live_events();
    kp_comm_buckets *b = NULL;
    CHECK_OK(rt, kp_comm_buckets_create(fails, arena, ranges, 3, KP_COMM_SUM, &b));
    for (size_t k = 0; k < 3; k++)
        CHECK_OK(rt, kp_comm_buckets_start(b, k));
    CHECK_OK(rt, kp_comm_buckets_finish(b));
    /* Every rank past its round first: the failure below would fail a round still in flight. */
    MPI_Barrier(MPI_COMM_WORLD);
    /* The round's first injectable calls: the marker after the producers, then the copy. */
    if (rank == size - 1)
        cl_faults_arm(2);
    const double t0 = now();
    kp_status st = kp_comm_buckets_start(b, 0);
    cl_faults_disarm();
    for (size_t k = 1; st == KP_OK && k < 3; k++)
        st = kp_comm_buckets_start(b, k);
    if (st == KP_OK)
        st = kp_comm_buckets_finish(b);
    char want[128];
    if (rank == size - 1)
        snprintf(want, sizeof want, "copying a bucket into the segment failed");
    else
        snprintf(want, sizeof want, "rank %d failed: kp_comm_buckets_start: rank %d: copying",
                 size - 1, size - 1);
    if (st == KP_OK || !strstr(kp_last_error(rt), want))
        fail("a bucket's copy that fails: %s: %s", kp_status_name(st), kp_last_error(rt));
    if (now() - t0 > 30)
        fail("a bucket's copy that failed was noticed after %.1f s", now() - t0);
    kp_comm_buckets_destroy(b);
    if (live_events() != events)
        fail("buckets destroyed in the middle of a round left %ld events behind",
             live_events() - events);
    MPI_Barrier(MPI_COMM_WORLD);

    const kp_comm_range first[2] = {{0, 10}, {10, 11}}, others[2] = {{0, 11}, {11, 10}};
    CHECK_OK(rt,
             kp_comm_buckets_create(differ, arena, rank == 0 ? first : others, 2, KP_COMM_SUM, &b));
    st = kp_comm_buckets_start(b, 0);
    if (st == KP_OK)
        st = kp_comm_buckets_start(b, 1);
    if (st == KP_OK)
        st = kp_comm_buckets_finish(b);
    if (st != KP_ERR_INVALID_ARG || !strstr(kp_last_error(rt), "the ranks' buckets differ"))
        fail("buckets that differ between the ranks: %s: %s", kp_status_name(st),
             kp_last_error(rt));
    kp_comm_buckets_destroy(b);
    kp_buffer_destroy(rt, arena);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void test_failures(kp_runtime *rt)
{
    /* Every communicator is made before the first failure: a failed one leaves messages behind
     * that were never received, and MPICH gives a communicator made after one is freed the same
     * context, where they would arrive (docs/comm.md: after a failure, end the job). */
    /* The last two on the shared transport: a failed one must not hang in kp_comm_destroy (the
     * window's free synchronises) whether every rank failed or rank 0, late, did not. */
    /* The buckets' failures below are the pipelined rounds' (the default KP_COMM_BUCKETS). */
    kp_comm *mismatched = open_comm(rt, 60), *gives_up = open_comm_flags(rt, 60, KP_COMM_SHARED),
            *late = open_comm_flags(rt, 1, KP_COMM_SHARED),
            *copy_fails = open_comm_flags(rt, 60, KP_COMM_SHARED),
            *bucket_fails = open_comm_flags(rt, 60, KP_COMM_SHARED),
            *buckets_differ = open_comm_flags(rt, 60, KP_COMM_SHARED);
    /* Different calls: every rank fails naming both, and the communicator stays failed. */
    kp_comm *c = mismatched;
    float v[7] = {0};
    kp_status st = kp_comm_allreduce_host(c, v, rank == 0 ? 5 : 7, KP_COMM_SUM);
    if (st != KP_ERR_INVALID_ARG || !strstr(kp_last_error(rt), "called different collectives") ||
        !strstr(kp_last_error(rt), "of 5 floats") || !strstr(kp_last_error(rt), "of 7 floats"))
        fail("mismatched calls: %s: %s", kp_status_name(st), kp_last_error(rt));
    if (kp_comm_barrier(c) == KP_OK || !strstr(kp_last_error(rt), "unusable"))
        fail("a failed communicator was used again: %s", kp_last_error(rt));

    /* The last rank gives up while the others wait in an all-reduce: they fail at once. */
    c = gives_up;
    const double t0 = now();
    if (rank == size - 1) {
        CHECK_OK(rt, kp_comm_fail(c, "a simulated failure"));
    } else {
        st = kp_comm_allreduce_host(c, v, 7, KP_COMM_SUM);
        char want[64];
        snprintf(want, sizeof want, "rank %d failed: a simulated failure", size - 1);
        if (st != KP_ERR_IO || !strstr(kp_last_error(rt), want))
            fail("a rank that gave up: %s: %s", kp_status_name(st), kp_last_error(rt));
        if (now() - t0 > 30)
            fail("a rank that gave up was noticed after %.1f s", now() - t0);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* The last rank's first device copy of a shared all-reduce fails: the others, past their
     * own copies and waiting in the segment's sync, fail naming it. Once with every buffer and
     * the segment allocated, so that the copy is the first OpenCL call the all-reduce makes. */
    enum { N = 1000 };
    kp_buffer *buf = NULL;
    CHECK_OK(rt, kp_buffer_create(rt, N * sizeof(float), &buf));
    const float one = 1;
    CHECK_OK(rt, kp_buffer_fill(rt, buf, 0, N * sizeof(float), &one, sizeof one));
    CHECK_OK(rt, kp_comm_allreduce(copy_fails, buf, 0, N, KP_COMM_SUM));
    if (rank == size - 1)
        cl_faults_arm(1);
    const double t1 = now();
    st = kp_comm_allreduce(copy_fails, buf, 0, N, KP_COMM_SUM);
    cl_faults_disarm();
    char want[96];
    if (rank == size - 1)
        snprintf(want, sizeof want, "copying the range into the segment failed");
    else
        snprintf(want, sizeof want, "rank %d failed: kp_comm_allreduce: rank %d: copying", size - 1,
                 size - 1);
    if (st == KP_OK || !strstr(kp_last_error(rt), want))
        fail("a device copy that fails: %s: %s", kp_status_name(st), kp_last_error(rt));
    if (now() - t1 > 30)
        fail("a device copy that failed was noticed after %.1f s", now() - t1);
    kp_buffer_destroy(rt, buf);
    MPI_Barrier(MPI_COMM_WORLD);
    test_bucket_failures(rt, bucket_fails, buckets_differ);

    /* Rank 0 never comes to a barrier: the others time out after a second, naming it. */
    c = late;
    if (rank != 0) {
        st = kp_comm_barrier(c);
        if (st != KP_ERR_IO || !strstr(kp_last_error(rt), "waiting for rank(s) 0"))
            fail("a missing rank: %s: %s", kp_status_name(st), kp_last_error(rt));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    kp_comm_destroy(mismatched);
    kp_comm_destroy(gives_up);
    kp_comm_destroy(late);
    kp_comm_destroy(copy_fails);
    kp_comm_destroy(bucket_fails);
    kp_comm_destroy(buckets_differ);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* KP_TEST_DEVICE (scripts/gpu/mpi.sh: "gpu:%r", each rank its own GPU), else PoCL; then
     * the host device. */
    char first[64] = "pocl";
    const char *env = getenv("KP_TEST_DEVICE");
    if (env && *env) {
        size_t o = 0;
        for (size_t i = 0; env[i] && o + 12 < sizeof first; i++) {
            if (env[i] == '%' && env[i + 1] == 'r')
                o += (size_t)snprintf(first + o, sizeof first - o, "%d", rank), i++;
            else
                first[o++] = env[i];
        }
        first[o] = '\0';
    }
    test_plan();
    /* KP_COMM_TRANSPORT=nccl (scripts/gpu/mpi.sh) makes the NCCL transport's tests required;
     * every other communicator here names its transport or expects the automatic choice. */
    const char *asked = getenv("KP_COMM_TRANSPORT");
    const int nccl_required = asked && !strcmp(asked, "nccl");
    unsetenv("KP_COMM_TRANSPORT");
    const char *devices[] = {first, "host"};
    for (int d = 0; d < 2; d++) {
        kp_runtime *rt = open_runtime(devices[d]);
        /* The OpenCL device runs every test on both transports, the shared one by name (PoCL's
         * CPU would get host staging); the host device has host staging alone. */
        for (int shared = d == 0; shared >= 0; shared--) {
            /* The shared transport's buckets by default: pipelined (blocking below). */
            kp_comm *c = open_comm_flags(rt, 120,
                                         shared   ? KP_COMM_SHARED
                                         : d == 0 ? KP_COMM_STAGED
                                                  : 0);
            const char *why = NULL, *transport = kp_comm_transport(c, &why);
            if (strcmp(transport, shared ? "shared" : "staged") != 0 || !why || !*why)
                fail("transport %s (%s), expected %s", transport, why,
                     shared ? "shared" : "staged");
            if (rank == 0)
                printf("test-comm: %s: transport %s: %s\n", devices[d], transport, why);
            if (kp_comm_rank(c) != rank || kp_comm_size(c) != size)
                fail("kp_comm_rank/size: %d/%d", kp_comm_rank(c), kp_comm_size(c));
            test_allreduce(rt, c);
            test_tensor_host_broadcast_barrier(rt, c);
            test_buckets(rt, c);
            kp_comm_destroy(c);
        }
        if (d == 0) {
            kp_comm *shared = open_comm_flags(rt, 120, KP_COMM_SHARED),
                    *staged = open_comm_flags(rt, 120, KP_COMM_STAGED);
            test_transports_agree(rt, shared, staged);
            kp_comm_destroy(shared);
            kp_comm_destroy(staged);
            /* KP_COMM_BUCKETS=blocking: each bucket all-reduced at its start, outside the
             * pipeline; a value that is none of the modes is refused. */
            setenv("KP_COMM_BUCKETS", "blocking", 1);
            kp_comm *blocking = open_comm_flags(rt, 120, KP_COMM_SHARED);
            unsetenv("KP_COMM_BUCKETS");
            buckets_blocking = 1;
            test_buckets(rt, blocking);
            buckets_blocking = 0;
            kp_comm_destroy(blocking);
            /* KP_COMM_BUCKETS=single-queue: the pipelined rounds on the runtime's own queue. */
            setenv("KP_COMM_BUCKETS", "single-queue", 1);
            kp_comm *single = open_comm_flags(rt, 120, KP_COMM_SHARED);
            unsetenv("KP_COMM_BUCKETS");
            test_buckets(rt, single);
            kp_comm_destroy(single);
            /* KP_COMM_ALLREDUCE=two-shot: reduce-scatter and all-gather at every size (ranges
             * up to 8 MiB of copies take one-shot otherwise), blocking and pipelined. */
            setenv("KP_COMM_ALLREDUCE", "two-shot", 1);
            kp_comm *two_pipelined = open_comm_flags(rt, 120, KP_COMM_SHARED);
            setenv("KP_COMM_BUCKETS", "blocking", 1);
            kp_comm *two = open_comm_flags(rt, 120, KP_COMM_SHARED);
            unsetenv("KP_COMM_BUCKETS");
            unsetenv("KP_COMM_ALLREDUCE");
            test_allreduce(rt, two);
            buckets_blocking = 1;
            test_buckets(rt, two);
            buckets_blocking = 0;
            test_buckets(rt, two_pipelined);
            kp_comm_destroy(two);
            kp_comm_destroy(two_pipelined);
            setenv("KP_COMM_ALLREDUCE", "three-shot", 1);
            kp_comm *bad = NULL;
            if (kp_comm_create(rt, MPI_COMM_WORLD, NULL, &bad) != KP_ERR_INVALID_ARG || bad ||
                !strstr(kp_last_error(rt), "KP_COMM_ALLREDUCE is \"three-shot\""))
                fail("KP_COMM_ALLREDUCE=three-shot: %s", kp_last_error(rt));
            unsetenv("KP_COMM_ALLREDUCE");
            setenv("KP_COMM_BUCKETS", "sideways", 1);
            kp_comm *none = NULL;
            if (kp_comm_create(rt, MPI_COMM_WORLD, NULL, &none) != KP_ERR_INVALID_ARG || none ||
                !strstr(kp_last_error(rt), "KP_COMM_BUCKETS"))
                fail("KP_COMM_BUCKETS=sideways: %s", kp_last_error(rt));
            unsetenv("KP_COMM_BUCKETS");
            test_transport_choice(rt);
            test_nccl(rt, nccl_required);
            test_failures(rt);
        }
        kp_runtime_destroy(rt);
        if (rank == 0)
            printf("test-comm: %d ranks on %s: passed\n", size, devices[d]);
    }
    MPI_Finalize();
    return 0;
}
