/* SPDX-License-Identifier: Apache-2.0 */
/* CLBlast on the runtime's queue: the calls, their statuses as kp_status, parameter overrides. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <clblast_c.h>

#include "blas-gemm-temp.h"
#include "blas.h"

/* ---- parameter overrides ----------------------------------------------------------------- */

/*
 * CLBlast keeps overridden parameters per (device, kernel, precision) for the whole process, and
 * every runtime that loads this plugin shares this table, so the lock covers the state, the
 * override and the CLBlast call that must see it.
 */
typedef struct override_state {
    void *device; /* cl_device_id */
    int precision;
    const char *kernel;
    int has_original; /* CLBlast's own set, read before the first override */
    size_t original[BLAS_MAX_PARAMS];
    int overridden; /* CLBlast holds `applied`, which differs from `original` */
    size_t applied[BLAS_MAX_PARAMS];
} override_state;

#define MAX_STATES 128
static override_state states[MAX_STATES];
static size_t n_states;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int precision_of(int32_t dtype)
{
    return dtype == KP_F16 ? CLBlastPrecisionHalf : CLBlastPrecisionSingle;
}

static override_state *state_for(void *device, int precision, const char *kernel)
{
    for (size_t i = 0; i < n_states; i++)
        if (states[i].device == device && states[i].precision == precision &&
            strcmp(states[i].kernel, kernel) == 0)
            return &states[i];
    if (n_states == MAX_STATES)
        return NULL;
    override_state *s = &states[n_states++];
    memset(s, 0, sizeof *s);
    s->device = device;
    s->precision = precision;
    s->kernel = kernel;
    return s;
}

/* Reads CLBlast's own set into s->original once; returns blas_retrieve_parameters' status. */
static int read_original(override_state *s, const blas_clkernel *k, char *why, size_t why_size)
{
    int rc = s->has_original
                 ? 0
                 : blas_retrieve_parameters(s->device, k->name, s->precision, k->n_params,
                                            k->params, s->original, why, why_size);
    s->has_original = rc == 0;
    return rc;
}

static kp_status load_original(kp_launch *l, override_state *s, const blas_clkernel *k)
{
    char why[512] = "";
    int rc = read_original(s, k, why, sizeof why);
    if (rc == BLAS_RETRIEVE_MISMATCH)
        return blas_host->fail(l, KP_ERR_PLUGIN, "clblast.%s: %s", k->name, why);
    if (rc != 0) {
        char call[64];
        snprintf(call, sizeof call, "RetrieveParameters(%s)", k->name);
        return blas_clblast_fail(l, call, rc);
    }
    return KP_OK;
}

/* CLBlast's own set when it can be read, without failing the launch when it cannot (a call that
 * only wants to know a value runs without it). */
static const size_t *peek_original(override_state *s, const blas_clkernel *k)
{
    char why[512];
    return read_original(s, k, why, sizeof why) == 0 ? s->original : NULL;
}

static void describe_set(const blas_clkernel *k, const size_t *v, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < k->n_params && used < size; i++) {
        int w = snprintf(out + used, size - used, "%s%s=%zu", i ? " " : "", k->params[i], v[i]);
        used += w > 0 ? (size_t)w : 0;
    }
}

static kp_status override(kp_launch *l, override_state *s, const blas_clkernel *k,
                          const size_t *values, const char *what)
{
    int rc =
        CLBlastOverrideParameters((cl_device_id)s->device, k->name, (CLBlastPrecision)s->precision,
                                  k->n_params, (const char **)k->params, values);
    if (rc != CLBlastSuccess) {
        char call[64];
        snprintf(call, sizeof call, "CLBlastOverrideParameters(%s)", k->name);
        return blas_clblast_fail(l, call, rc);
    }
    s->overridden = memcmp(values, s->original, k->n_params * sizeof *values) != 0;
    memcpy(s->applied, values, k->n_params * sizeof *values);
    char set[512];
    describe_set(k, values, set, sizeof set);
    const kp_device_info *d = blas_host->device(l);
    blas_host->log(l, KP_LOG_INFO, "blas: clblast.%s for \"%s\" (%s): %s {%s}", k->name,
                   d ? d->name : "?", s->precision == CLBlastPrecisionHalf ? "f16" : "f32", what,
                   set);
    return KP_OK;
}

static size_t param_of(const blas_clkernel *k, const size_t *values, const char *name)
{
    for (uint32_t p = 0; p < k->n_params; p++)
        if (strcmp(k->params[p], name) == 0)
            return values[p];
    return 0;
}

/* The GEMMK of Xgemm's set `values` into *gemmk (when asked, and the set is known). */
static void note_gemmk(int *gemmk, const blas_clkernel *k, const size_t *values)
{
    if (gemmk && values && strcmp(k->name, "Xgemm") == 0)
        *gemmk = (int)param_of(k, values, "GEMMK");
}

/*
 * Makes CLBlast use, for each kernel in `ks`, the tuning values of this launch merged over
 * CLBlast's own set (or its own set when no value is given). Every merged set is validated
 * before any is applied, so a rejected manifest leaves CLBlast as it was. Caller holds `lock`.
 * `gemmk` (may be NULL) receives the GEMMK CLBlast will use, -1 if unknown. `alt` (may be NULL) is
 * a second set of tunables for one of the kernels (blas_narrow_xgemm): its values win, and
 * where it has none the kernel's own tunables apply.
 */
static kp_status prepare(kp_launch *l, const blas_clkernel *ks, uint32_t n, int32_t dtype,
                         int *gemmk, const blas_clkernel *alt)
{
    if (gemmk)
        *gemmk = -1;
    void *device = blas_host->cl_device(l);
    int precision = precision_of(dtype);
    const kp_device_info *dev = blas_host->device(l);
    size_t target[BLAS_MAX_CLKERNELS][BLAS_MAX_PARAMS];
    int change[BLAS_MAX_CLKERNELS] = {0};
    override_state *st[BLAS_MAX_CLKERNELS];
    for (uint32_t i = 0; i < n && i < BLAS_MAX_CLKERNELS; i++) {
        const blas_clkernel *k = &ks[i];
        const blas_clkernel *a = alt && strcmp(alt->name, k->name) == 0 ? alt : NULL;
        uint32_t given = 0;
        int64_t v[BLAS_MAX_PARAMS];
        for (uint32_t p = 0; p < k->n_params; p++) {
            const kp_tunable_desc *t = &k->tunables[k->first_tunable + p];
            v[p] = blas_host->tunable_index(l, k->first_tunable + p);
            int64_t w = a ? blas_host->tunable_index(l, a->first_tunable + p) : t->default_value;
            if (w != t->default_value)
                v[p] = w;
            given |= (uint32_t)(v[p] != t->default_value) << p;
        }
        st[i] = state_for(device, precision, k->name);
        if (!st[i])
            return blas_host->fail(l, KP_ERR_UNSUPPORTED,
                                   "clblast.%s: more than %d (device, kernel, precision) "
                                   "parameter sets in one process",
                                   k->name, MAX_STATES);
        if (!given && !st[i]->overridden) { /* CLBlast's own set stays */
            if (gemmk && strcmp(k->name, "Xgemm") == 0)
                note_gemmk(gemmk, k, peek_original(st[i], k));
            continue;
        }
        kp_status rc = load_original(l, st[i], k);
        if (rc != KP_OK)
            return rc;
        for (uint32_t p = 0; p < k->n_params; p++)
            target[i][p] = (given >> p) & 1 ? (size_t)v[p] : st[i]->original[p];
        note_gemmk(gemmk, k, target[i]);
        const size_t *current = st[i]->overridden ? st[i]->applied : st[i]->original;
        change[i] = memcmp(target[i], current, k->n_params * sizeof(size_t)) != 0;
        /* The set CLBlast holds was validated when it was applied (or is CLBlast's own): only a
         * new set needs the constraint checks, which would cost microseconds on every call. */
        char why[512];
        if (change[i] && given &&
            !blas_params_valid(k, target[i], given, dtype == KP_F16 ? 2 : 4, dev, why, sizeof why))
            return blas_host->fail(l, KP_ERR_INVALID_ARG, "%s.%s: %s", a ? a->prefix : k->prefix,
                                   k->name, why);
    }
    for (uint32_t i = 0; i < n && i < BLAS_MAX_CLKERNELS; i++) {
        if (!change[i])
            continue;
        int is_original = memcmp(target[i], st[i]->original, ks[i].n_params * sizeof(size_t)) == 0;
        int is_narrow = alt && strcmp(alt->name, ks[i].name) == 0;
        kp_status rc = override(l, st[i], &ks[i], target[i],
                                is_original ? "restored CLBlast's own parameters"
                                : is_narrow ? "the manifest's narrow set over CLBlast's own"
                                            : "the manifest's parameters over CLBlast's own");
        if (rc != KP_OK)
            return rc;
    }
    return KP_OK;
}

/* ---- helpers for the calls --------------------------------------------------------------- */

typedef struct ctx {
    kp_launch *l;
    cl_command_queue queue;
    int32_t dtype;
    size_t esize;
} ctx;

static cl_event *event_slot(const ctx *c)
{
    return (cl_event *)blas_host->cl_event_slot(c->l);
}

static cl_half half(double v)
{
    return kp_half_from_float((float)v);
}

static cl_mem mem(const kp_call *call, int index)
{
    return (cl_mem)blas_host->cl_mem(call->args[index].tensor.buffer);
}

/* Zeroes `len` elements at element `offset` with stride `inc` (BLAS: beta = 0 ignores C). */
static kp_status zero(const ctx *c, cl_mem m, size_t offset, size_t len, size_t inc)
{
    static const uint32_t zeros = 0;
    if (inc == 1 || len == 1) {
        cl_int rc = clEnqueueFillBuffer(c->queue, m, &zeros, c->esize, offset * c->esize,
                                        len * c->esize, 0, NULL, event_slot(c));
        return rc == CL_SUCCESS ? KP_OK : blas_cl_fail(c->l, "clEnqueueFillBuffer", rc);
    }
    /* A strided vector: copy from a zeroed scratch vector. */
    kp_buffer *scratch;
    kp_status st = blas_host->scratch(c->l, 0, len * c->esize, &scratch);
    if (st != KP_OK)
        return st;
    cl_mem z = (cl_mem)blas_host->cl_mem(scratch);
    st = zero(c, z, 0, len, 1);
    if (st != KP_OK)
        return st;
    cl_command_queue q = c->queue;
    int rc = c->dtype == KP_F16 ? CLBlastHcopy(len, z, 0, 1, m, offset, inc, &q, event_slot(c))
                                : CLBlastScopy(len, z, 0, 1, m, offset, inc, &q, event_slot(c));
    return rc == CLBlastSuccess
               ? KP_OK
               : blas_clblast_fail(c->l, c->dtype == KP_F16 ? "CLBlastHcopy" : "CLBlastScopy", rc);
}

/* x = beta * x over a strided vector: what GEMM and GEMV reduce to when K is 0. */
static kp_status scale(const ctx *c, cl_mem m, size_t offset, size_t len, size_t inc, double beta)
{
    if (len == 0 || beta == 1.0)
        return KP_OK;
    if (beta == 0.0)
        return zero(c, m, offset, len, inc);
    cl_command_queue q = c->queue;
    int rc = c->dtype == KP_F16 ? CLBlastHscal(len, half(beta), m, offset, inc, &q, event_slot(c))
                                : CLBlastSscal(len, (float)beta, m, offset, inc, &q, event_slot(c));
    return rc == CLBlastSuccess
               ? KP_OK
               : blas_clblast_fail(c->l, c->dtype == KP_F16 ? "CLBlastHscal" : "CLBlastSscal", rc);
}

/* C = beta * C for every batch, one call per contiguous line (row or column). */
static kp_status scale_matrices(const ctx *c, const blas_gemm_plan *p, cl_mem m, double beta)
{
    const blas_matrix *cm = &p->c;
    size_t len = (size_t)(cm->col_major ? cm->rows : cm->cols);
    size_t lines = (size_t)(cm->col_major ? cm->cols : cm->rows);
    if ((size_t)cm->ld == len) { /* the whole matrix is one contiguous run */
        len *= lines;
        lines = 1;
    }
    for (int64_t b = 0; b < p->batch; b++)
        for (size_t i = 0; i < lines; i++) {
            size_t off = (size_t)(cm->offset + b * p->stride_c) + i * (size_t)cm->ld;
            kp_status st = scale(c, m, off, len, 1, beta);
            if (st != KP_OK)
                return st;
        }
    return KP_OK;
}

static CLBlastLayout layout(int col_major)
{
    return col_major ? CLBlastLayoutColMajor : CLBlastLayoutRowMajor;
}

static CLBlastTranspose transpose(int t)
{
    return t ? CLBlastTransposeYes : CLBlastTransposeNo;
}

/* Whether CLBlast runs a product on its indirect path (padding and transposing copies around
 * Xgemm) rather than XgemmDirect. */
static int indirect(const blas_gemm_plan *p, size_t min_indirect)
{
    double mnk = (double)p->m * (double)p->n * (double)p->k, mi = (double)min_indirect;
    return mnk >= mi * mi * mi;
}

/* One GEMM of the plan, for batch `b`. An indirect one gets its temporary matrices in scratch
 * slot 2 (slot 1 is the warm-up's), which stays allocated, rather than in a buffer CLBlast
 * creates and releases on every call. */
static kp_status gemm_one(const ctx *c, const blas_gemm_plan *p, const cl_mem *mems, int64_t b,
                          double alpha, double beta, int on_indirect)
{
    cl_command_queue q = c->queue;
    size_t ao = (size_t)(p->a.offset + b * p->stride_a),
           bo = (size_t)(p->b.offset + b * p->stride_b);
    size_t co = (size_t)(p->c.offset + b * p->stride_c);
    int lay = layout(p->col_major), ta = transpose(p->trans_a), tb = transpose(p->trans_b);
    int f16 = c->dtype == KP_F16;
    size_t m = (size_t)p->m, n = (size_t)p->n, k = (size_t)p->k;
    size_t lda = (size_t)p->a.ld, ldb = (size_t)p->b.ld, ldc = (size_t)p->c.ld;
    const char *name = f16 ? "CLBlastHgemm" : "CLBlastSgemm";
    cl_mem temp = NULL;
    if (on_indirect) {
        size_t bytes = 0;
        int rc =
            blas_gemm_temp_bytes(lay, ta, tb, m, n, k, ao, lda, bo, ldb, co, ldc, f16, &q, &bytes);
        if (rc != CLBlastSuccess)
            return blas_clblast_fail(c->l, "GemmTempBufferSize", rc);
        kp_buffer *buf;
        kp_status st = bytes ? blas_host->scratch(c->l, 2, bytes, &buf) : KP_OK;
        if (st != KP_OK)
            return st;
        temp = bytes ? (cl_mem)blas_host->cl_mem(buf) : NULL;
    }
    float af = (float)alpha, bf = (float)beta;
    cl_half ah = half(alpha), bh = half(beta);
    int rc = blas_gemm_with_temp(lay, ta, tb, m, n, k, f16 ? (const void *)&ah : &af, mems[0], ao,
                                 lda, mems[1], bo, ldb, f16 ? (const void *)&bh : &bf, mems[2], co,
                                 ldc, f16, &q, event_slot(c), temp);
    return rc == CLBlastSuccess ? KP_OK : blas_clblast_fail(c->l, name, rc);
}

/* CLBlast's strided-batched GEMM takes no temporary buffer: on its indirect path it creates its
 * padded and transposed operands itself, and when that allocation fails CLBlast 1.5.3 ends the
 * process (std::terminate) instead of returning an error. Only the warm-up of blas.gemm_batched
 * and its indirect launches are exposed; tests/unit/test-faults.c leaves them out. */
static kp_status gemm_strided(const ctx *c, const blas_gemm_plan *p, const cl_mem *mems,
                              double alpha, double beta)
{
    cl_command_queue q = c->queue;
    int rc;
    if (c->dtype == KP_F16)
        rc = CLBlastHgemmStridedBatched(
            layout(p->col_major), transpose(p->trans_a), transpose(p->trans_b), (size_t)p->m,
            (size_t)p->n, (size_t)p->k, half(alpha), mems[0], (size_t)p->a.offset, (size_t)p->a.ld,
            (size_t)p->stride_a, mems[1], (size_t)p->b.offset, (size_t)p->b.ld, (size_t)p->stride_b,
            half(beta), mems[2], (size_t)p->c.offset, (size_t)p->c.ld, (size_t)p->stride_c,
            (size_t)p->batch, &q, event_slot(c));
    else
        rc = CLBlastSgemmStridedBatched(
            layout(p->col_major), transpose(p->trans_a), transpose(p->trans_b), (size_t)p->m,
            (size_t)p->n, (size_t)p->k, (float)alpha, mems[0], (size_t)p->a.offset, (size_t)p->a.ld,
            (size_t)p->stride_a, mems[1], (size_t)p->b.offset, (size_t)p->b.ld, (size_t)p->stride_b,
            (float)beta, mems[2], (size_t)p->c.offset, (size_t)p->c.ld, (size_t)p->stride_c,
            (size_t)p->batch, &q, event_slot(c));
    return rc == CLBlastSuccess
               ? KP_OK
               : blas_clblast_fail(c->l,
                                   c->dtype == KP_F16 ? "CLBlastHgemmStridedBatched"
                                                      : "CLBlastSgemmStridedBatched",
                                   rc);
}

/*
 * CLBlast 1.5.3's indirect strided-batched GEMM skips its copy kernel for an operand that is
 * already tightly packed (ld equal to its inner size, sizes multiples of the tiles, no
 * transpose) and then indexes batch b at b * rows * cols from element 0: an offset, a broadcast
 * (stride 0) or a padded batch stride is ignored and the result is wrong. Such calls run one
 * plain GEMM per batch instead, which honours offsets. A call takes the indirect path when
 * m * n * k >= XGEMM_MIN_INDIRECT_SIZE^3.
 */
static int unsafe_for_strided(const blas_gemm_plan *p, size_t min_indirect)
{
    if (!indirect(p, min_indirect))
        return 0;
    const blas_matrix *ms[] = {&p->a, &p->b, &p->c};
    const int64_t strides[] = {p->stride_a, p->stride_b, p->stride_c};
    for (int i = 0; i < 3; i++) {
        const blas_matrix *m = ms[i];
        int tight = m->ld == (m->col_major ? m->rows : m->cols);
        if (tight && (m->offset != 0 || strides[i] != m->rows * m->cols))
            return 1;
    }
    return 0;
}

/* XGEMM_MIN_INDIRECT_SIZE as this launch sets it; 0 when CLBlast's own cannot be read. Caller
 * holds `lock`. */
static size_t min_indirect_of(kp_launch *l, int32_t dtype)
{
    const blas_clkernel *k = blas_gemm_clkernels;
    while (strcmp(k->name, "GemmRoutine") != 0)
        k++;
    int64_t v = blas_host->tunable_index(l, k->first_tunable);
    if (v != k->tunables[k->first_tunable].default_value)
        return (size_t)v;
    override_state *s = state_for(blas_host->cl_device(l), precision_of(dtype), k->name);
    const size_t *own = s ? peek_original(s, k) : NULL;
    return own ? own[0] : 0;
}

/* Whether a blas.gemm call takes the narrow Xgemm set: C has a side of at most narrow.max_dim,
 * and CLBlast runs the product on its indirect path, the one Xgemm serves. */
static int narrow(kp_launch *l, const blas_gemm_plan *p, int on_indirect)
{
    int64_t max_dim = blas_host->tunable_index(l, BLAS_NARROW_MAX_DIM);
    return on_indirect && max_dim > 0 && (p->m <= max_dim || p->n <= max_dim);
}

kp_status blas_run_gemm(const kp_call *call, kp_launch *l, const blas_gemm_plan *p, int batched)
{
    double alpha = call->args[GEMM_ALPHA].f, beta = call->args[GEMM_BETA].f;
    ctx c = {.l = l,
             .queue = (cl_command_queue)blas_host->cl_queue(l),
             .dtype = p->dtype,
             .esize = kp_dtype_size((kp_dtype)p->dtype)};
    cl_mem mems[3] = {mem(call, GEMM_A), mem(call, GEMM_B), mem(call, GEMM_C)};
    if (p->m == 0 || p->n == 0 || p->batch == 0)
        return KP_OK;
    pthread_mutex_lock(&lock);
    kp_status st;
    if (p->k == 0) { /* BLAS: C = beta * C; CLBlast refuses k = 0 */
        st = scale_matrices(&c, p, mems[2], beta);
    } else {
        size_t min_indirect = min_indirect_of(l, p->dtype);
        int on_indirect = indirect(p, min_indirect), gemmk = -1;
        const blas_clkernel *alt = narrow(l, p, on_indirect) ? &blas_narrow_xgemm : NULL;
        st = prepare(l, blas_gemm_clkernels, blas_n_gemm_clkernels, p->dtype, &gemmk, alt);
        /* Xgemm keeps C column-major with GEMMK 0 and row-major with GEMMK 1. C in the other
         * layout costs a transposed copy of C after the product (and one before it when beta is
         * not 0); C^T = op(B)^T op(A)^T in Xgemm's layout makes the same sums without them. */
        blas_gemm_plan q = *p;
        if (on_indirect && gemmk >= 0 && q.col_major != (gemmk == 0)) {
            blas_plan_swap(&q);
            cl_mem a = mems[0];
            mems[0] = mems[1];
            mems[1] = a;
        }
        int loop = !batched || q.batch == 1 || unsafe_for_strided(&q, min_indirect);
        blas_host->log(
            l, KP_LOG_DEBUG,
            "blas: %lld x %lld x %lld (batch %lld) as CLBlast's %s-major %s%s, %s path%s%s",
            (long long)q.m, (long long)q.n, (long long)q.k, (long long)q.batch,
            q.col_major ? "column" : "row", q.trans_a ? "A^T" : "A", q.trans_b ? " B^T" : " B",
            on_indirect ? "indirect" : "direct", alt ? ", narrow set" : "",
            batched && loop ? ", one call per batch" : "");
        if (st == KP_OK && loop)
            for (int64_t b = 0; b < q.batch && st == KP_OK; b++)
                st = gemm_one(&c, &q, mems, b, alpha, beta, on_indirect);
        else if (st == KP_OK)
            st = gemm_strided(&c, &q, mems, alpha, beta);
    }
    pthread_mutex_unlock(&lock);
    return st;
}

kp_status blas_run_gemv(const kp_call *call, kp_launch *l, const blas_gemv_plan *p)
{
    double alpha = call->args[GEMV_ALPHA].f, beta = call->args[GEMV_BETA].f;
    ctx c = {.l = l,
             .queue = (cl_command_queue)blas_host->cl_queue(l),
             .dtype = p->dtype,
             .esize = kp_dtype_size((kp_dtype)p->dtype)};
    cl_mem a = mem(call, GEMV_A), x = mem(call, GEMV_X), y = mem(call, GEMV_Y);
    if (p->len_y == 0)
        return KP_OK;
    pthread_mutex_lock(&lock);
    kp_status st;
    if (p->len_x == 0) {
        st = scale(&c, y, (size_t)p->y_offset, (size_t)p->len_y, (size_t)p->y_inc, beta);
    } else {
        st = prepare(l, blas_gemv_clkernels, blas_n_gemv_clkernels, p->dtype, NULL, NULL);
        cl_command_queue q = c.queue;
        int rc = CLBlastSuccess;
        if (st == KP_OK && p->dtype == KP_F16)
            rc = CLBlastHgemv(layout(p->col_major), transpose(p->trans), (size_t)p->m, (size_t)p->n,
                              half(alpha), a, (size_t)p->a.offset, (size_t)p->a.ld, x,
                              (size_t)p->x_offset, (size_t)p->x_inc, half(beta), y,
                              (size_t)p->y_offset, (size_t)p->y_inc, &q, event_slot(&c));
        else if (st == KP_OK)
            rc = CLBlastSgemv(layout(p->col_major), transpose(p->trans), (size_t)p->m, (size_t)p->n,
                              (float)alpha, a, (size_t)p->a.offset, (size_t)p->a.ld, x,
                              (size_t)p->x_offset, (size_t)p->x_inc, (float)beta, y,
                              (size_t)p->y_offset, (size_t)p->y_inc, &q, event_slot(&c));
        if (rc != CLBlastSuccess)
            st = blas_clblast_fail(l, p->dtype == KP_F16 ? "CLBlastHgemv" : "CLBlastSgemv", rc);
    }
    pthread_mutex_unlock(&lock);
    return st;
}

/* ---- warm-up ----------------------------------------------------------------------------- */

/* Tiny calls in every transpose combination: each compiles the routine's whole CLBlast program
 * (direct and indirect kernels) on this runtime's context (CLBlast caches programs per context,
 * so warming any other context would not help this one), and launches each direct kernel once,
 * which is when PoCL finalises a kernel for its local size. */
static int warm_tiny(int which, int f16, cl_mem m, cl_command_queue q, int ta, int tb, int col)
{
    CLBlastLayout lay = layout(col);
    CLBlastTranspose a = transpose(ta), b = transpose(tb);
    cl_half h1 = half(1), h0 = half(0);
    if (which == BLAS_WARM_GEMM)
        return f16 ? CLBlastHgemm(lay, a, b, 1, 1, 1, h1, m, 0, 1, m, 1, 1, h0, m, 2, 1, &q, NULL)
                   : CLBlastSgemm(lay, a, b, 1, 1, 1, 1.0f, m, 0, 1, m, 1, 1, 0.0f, m, 2, 1, &q,
                                  NULL);
    if (which == BLAS_WARM_GEMM_BATCHED)
        return f16 ? CLBlastHgemmStridedBatched(lay, a, b, 1, 1, 1, h1, m, 0, 1, 1, m, 2, 1, 1, h0,
                                                m, 4, 1, 1, 2, &q, NULL)
                   : CLBlastSgemmStridedBatched(lay, a, b, 1, 1, 1, 1.0f, m, 0, 1, 1, m, 2, 1, 1,
                                                0.0f, m, 4, 1, 1, 2, &q, NULL);
    return f16 ? CLBlastHgemv(lay, a, 1, 1, h1, m, 0, 1, m, 1, 1, h0, m, 2, 1, &q, NULL)
               : CLBlastSgemv(lay, a, 1, 1, 1.0f, m, 0, 1, m, 1, 1, 0.0f, m, 2, 1, &q, NULL);
}

/* The warm-up's indirect GEMM, of the s x s matrices in m, with its temporary matrices in scratch
 * slot 2 as gemm_one runs one: CLBlast 1.5.3 ends the process (std::terminate) when a buffer it
 * creates itself cannot be allocated. */
static kp_status warm_gemm(const ctx *c, cl_mem m, size_t s, const char *call)
{
    cl_command_queue q = c->queue;
    int f16 = c->dtype == KP_F16, row = CLBlastLayoutRowMajor, no = CLBlastTransposeNo;
    size_t ss = s * s, bytes = 0;
    int rc = blas_gemm_temp_bytes(row, no, no, s, s, s, 0, s, ss, s, 2 * ss, s, f16, &q, &bytes);
    if (rc != CLBlastSuccess)
        return blas_clblast_fail(c->l, "GemmTempBufferSize", rc);
    kp_buffer *temp = NULL;
    kp_status st = bytes ? blas_host->scratch(c->l, 2, bytes, &temp) : KP_OK;
    if (st != KP_OK)
        return st;
    float one = 1.0f, zero = 0.0f;
    cl_half h1 = half(1), h0 = half(0);
    rc = blas_gemm_with_temp(row, no, no, s, s, s, f16 ? (const void *)&h1 : &one, m, 0, s, m, ss,
                             s, f16 ? (const void *)&h0 : &zero, m, 2 * ss, s, f16, &q, NULL,
                             temp ? (cl_mem)blas_host->cl_mem(temp) : NULL);
    return rc == CLBlastSuccess ? KP_OK : blas_clblast_fail(c->l, call, rc);
}

/* One s x s x s GEMM with s the smallest size CLBlast runs through its indirect kernels, so the
 * main Xgemm kernel and its transposes are launched once too. Skipped above 2048 (48 MB). */
static kp_status warm_indirect(const ctx *c, int which, size_t min_indirect, const char *call)
{
    size_t s = (min_indirect + 63) / 64 * 64;
    if (s == 0 || s > 2048)
        return KP_OK;
    cl_context context = (cl_context)blas_host->cl_context(c->l);
    cl_int err;
    cl_mem m = clCreateBuffer(context, CL_MEM_READ_WRITE, 3 * s * s * c->esize, NULL, &err);
    if (err != CL_SUCCESS)
        return blas_cl_fail(c->l, "clCreateBuffer", err);
    static const uint32_t zeros = 0;
    cl_command_queue q = c->queue;
    kp_status st = KP_OK;
    err = clEnqueueFillBuffer(q, m, &zeros, c->esize, 0, 3 * s * s * c->esize, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        st = blas_cl_fail(c->l, "clEnqueueFillBuffer", err);
    const CLBlastLayout row = CLBlastLayoutRowMajor;
    const CLBlastTranspose no = CLBlastTransposeNo;
    size_t ss = s * s;
    int rc = CLBlastSuccess;
    if (st == KP_OK && which == BLAS_WARM_GEMM)
        st = warm_gemm(c, m, s, call);
    else if (st == KP_OK && c->dtype == KP_F16)
        rc = CLBlastHgemmStridedBatched(row, no, no, s, s, s, half(1), m, 0, s, ss, m, ss, s, ss,
                                        half(0), m, 2 * ss, s, ss, 1, &q, NULL);
    else if (st == KP_OK)
        rc = CLBlastSgemmStridedBatched(row, no, no, s, s, s, 1.0f, m, 0, s, ss, m, ss, s, ss, 0.0f,
                                        m, 2 * ss, s, ss, 1, &q, NULL);
    if (rc != CLBlastSuccess)
        st = blas_clblast_fail(c->l, call, rc);
    err = clFinish(q); /* before the buffer goes */
    if (err != CL_SUCCESS && st == KP_OK)
        st = blas_cl_fail(c->l, "clFinish", err);
    clReleaseMemObject(m);
    return st;
}

static kp_status warm_precision(kp_launch *l, int which, int32_t dtype, cl_mem tiny)
{
    ctx c = {.l = l,
             .queue = (cl_command_queue)blas_host->cl_queue(l),
             .dtype = dtype,
             .esize = kp_dtype_size((kp_dtype)dtype)};
    int f16 = dtype == KP_F16;
    kp_status st = which == BLAS_WARM_GEMV
                       ? prepare(l, blas_gemv_clkernels, blas_n_gemv_clkernels, dtype, NULL, NULL)
                       : prepare(l, blas_gemm_clkernels, blas_n_gemm_clkernels, dtype, NULL, NULL);
    static const char *const calls[][2] = {
        {"CLBlastSgemm", "CLBlastHgemm"},
        {"CLBlastSgemmStridedBatched", "CLBlastHgemmStridedBatched"},
        {"CLBlastSgemv", "CLBlastHgemv"}};
    for (int i = 0; st == KP_OK && i < 8; i++) {
        /* GEMV: both layouts, both transposes; GEMM: the four transposes, row-major. */
        int ta = i & 1, tb = (i >> 1) & 1, col = (i >> 2) & 1;
        if ((which == BLAS_WARM_GEMV && tb) || (which != BLAS_WARM_GEMV && col))
            continue;
        int rc = warm_tiny(which, f16, tiny, c.queue, ta, tb, col);
        if (rc != CLBlastSuccess)
            st = blas_clblast_fail(l, calls[which][f16], rc);
    }
    if (st == KP_OK && which != BLAS_WARM_GEMV)
        st = warm_indirect(&c, which, min_indirect_of(l, dtype), calls[which][f16]);
    return st;
}

kp_status blas_warmup(kp_launch *l, int which)
{
    const kp_device_info *d = blas_host->device(l);
    kp_buffer *scratch;
    kp_status st = blas_host->scratch(l, 1, 64, &scratch);
    if (st != KP_OK)
        return st;
    cl_mem m = (cl_mem)blas_host->cl_mem(scratch);
    pthread_mutex_lock(&lock);
    st = warm_precision(l, which, KP_F32, m);
    if (st == KP_OK && d && d->fp16)
        st = warm_precision(l, which, KP_F16, m);
    /* Keep the compiles and launches inside the warm-up, not in the first real call's time. */
    cl_int err = st == KP_OK ? clFinish((cl_command_queue)blas_host->cl_queue(l)) : CL_SUCCESS;
    if (err != CL_SUCCESS)
        st = blas_cl_fail(l, "clFinish", err);
    pthread_mutex_unlock(&lock);
    return st;
}
