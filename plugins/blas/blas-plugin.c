/* SPDX-License-Identifier: Apache-2.0 */
/* The blas plugin: GEMM, strided batched GEMM and GEMV through CLBlast, tuned by the manifest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"

const kp_host_api *blas_host;

#define FLOATS (KP_DT(KP_F32) | KP_DT(KP_F16))

/* alpha, beta, trans_a and trans_b: the same for plain and batched GEMM. */
#define GEMM_SCALARS                                                                               \
    [GEMM_ALPHA] = {.name = "alpha",                                                               \
                    .kind = KP_ARG_KIND_FLOAT,                                                     \
                    .access = KP_ACCESS_IN,                                                        \
                    .flags = KP_PARAM_OPTIONAL,                                                    \
                    .float_default = 1.0,                                                          \
                    .doc = "scale of op(A) op(B)"},                                                \
    [GEMM_BETA] = {.name = "beta",                                                                 \
                   .kind = KP_ARG_KIND_FLOAT,                                                      \
                   .access = KP_ACCESS_IN,                                                         \
                   .flags = KP_PARAM_OPTIONAL,                                                     \
                   .float_default = 0.0,                                                           \
                   .doc = "scale of C; 0 ignores C's old contents (NaN included)"},                \
    [GEMM_TRANS_A] = {.name = "trans_a",                                                           \
                      .kind = KP_ARG_KIND_INT,                                                     \
                      .access = KP_ACCESS_IN,                                                      \
                      .flags = KP_PARAM_OPTIONAL,                                                  \
                      .doc = "1: op(A) = A^T"},                                                    \
    [GEMM_TRANS_B] = {.name = "trans_b",                                                           \
                      .kind = KP_ARG_KIND_INT,                                                     \
                      .access = KP_ACCESS_IN,                                                      \
                      .flags = KP_PARAM_OPTIONAL,                                                  \
                      .doc = "1: op(B) = B^T"},

static const kp_param_desc gemm_params[] = {
    [GEMM_A] = {.name = "A",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_IN,
                .dtypes = FLOATS,
                .doc = "[M, K] ([K, M] with trans_a); row- or column-major, any ld and offset"},
    [GEMM_B] = {.name = "B",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_IN,
                .dtypes = FLOATS,
                .doc = "[K, N] ([N, K] with trans_b); row- or column-major, any ld and offset"},
    [GEMM_C] = {.name = "C",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_INOUT,
                .dtypes = FLOATS,
                .doc = "[M, N], updated in place; its layout is the one CLBlast runs in"},
    GEMM_SCALARS};

static const kp_param_desc gemm_batched_params[] = {
    [GEMM_A] = {.name = "A",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_IN,
                .dtypes = FLOATS,
                .doc = "[batch, M, K] ([batch, K, M] with trans_a); batch stride 0 (or batch "
                       "1) uses one matrix for all"},
    [GEMM_B] = {.name = "B",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_IN,
                .dtypes = FLOATS,
                .doc = "[batch, K, N] ([batch, N, K] with trans_b); batch stride 0 broadcasts"},
    [GEMM_C] = {.name = "C",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_INOUT,
                .dtypes = FLOATS,
                .doc = "[batch, M, N], updated in place"},
    GEMM_SCALARS};

static const kp_param_desc gemv_params[] = {
    [GEMV_A] = {.name = "A",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_IN,
                .dtypes = FLOATS,
                .doc = "[M, N]; row- or column-major, any ld and offset"},
    [GEMV_X] = {.name = "x",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_IN,
                .dtypes = FLOATS,
                .doc = "[N] ([M] with trans), stride >= 1"},
    [GEMV_Y] = {.name = "y",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_INOUT,
                .dtypes = FLOATS,
                .doc = "[M] ([N] with trans), stride >= 1, updated in place"},
    [GEMV_ALPHA] = {.name = "alpha",
                    .kind = KP_ARG_KIND_FLOAT,
                    .access = KP_ACCESS_IN,
                    .flags = KP_PARAM_OPTIONAL,
                    .float_default = 1.0,
                    .doc = "scale of op(A) x"},
    [GEMV_BETA] = {.name = "beta",
                   .kind = KP_ARG_KIND_FLOAT,
                   .access = KP_ACCESS_IN,
                   .flags = KP_PARAM_OPTIONAL,
                   .float_default = 0.0,
                   .doc = "scale of y; 0 ignores y's old contents"},
    [GEMV_TRANS] = {.name = "trans",
                    .kind = KP_ARG_KIND_INT,
                    .access = KP_ACCESS_IN,
                    .flags = KP_PARAM_OPTIONAL,
                    .doc = "1: op(A) = A^T"},
};

/* ---- check and enqueue ------------------------------------------------------------------- */

/* The core runs check, then enqueue, on the same call in the same thread: the plan made by
 * check is kept for enqueue rather than computed twice on every launch. */
static _Thread_local struct {
    const kp_call *call;
    kp_launch *launch;
    blas_gemm_plan gemm;
    blas_gemv_plan gemv;
} planned;

static kp_status gemm_check(const kp_call *call, kp_launch *l)
{
    planned.call = NULL;
    kp_status st = blas_plan_gemm(call, l, 0, &planned.gemm);
    if (st == KP_OK) {
        planned.call = call;
        planned.launch = l;
    }
    return st;
}

static kp_status gemm_batched_check(const kp_call *call, kp_launch *l)
{
    planned.call = NULL;
    kp_status st = blas_plan_gemm(call, l, 1, &planned.gemm);
    if (st == KP_OK) {
        planned.call = call;
        planned.launch = l;
    }
    return st;
}

static kp_status gemv_check(const kp_call *call, kp_launch *l)
{
    planned.call = NULL;
    kp_status st = blas_plan_gemv(call, l, &planned.gemv);
    if (st == KP_OK) {
        planned.call = call;
        planned.launch = l;
    }
    return st;
}

static int have_plan(const kp_call *call, kp_launch *l)
{
    int ok = planned.call == call && planned.launch == l;
    planned.call = NULL;
    return ok;
}

static kp_status gemm_enqueue(const kp_call *call, kp_launch *l)
{
    blas_gemm_plan p = planned.gemm;
    kp_status st = have_plan(call, l) ? KP_OK : blas_plan_gemm(call, l, 0, &p);
    if (st == KP_OK && (blas_route_gemm(call, l, &st) || blas_host_gemm(call, l, &p, &st)))
        return st;
    if (st == KP_OK)
        st = blas_check_f16(l, p.dtype, 1);
    return st == KP_OK ? blas_run_gemm(call, l, &p, 0) : st;
}

static kp_status gemm_batched_enqueue(const kp_call *call, kp_launch *l)
{
    blas_gemm_plan p = planned.gemm;
    kp_status st = have_plan(call, l) ? KP_OK : blas_plan_gemm(call, l, 1, &p);
    if (st == KP_OK && blas_host_gemm(call, l, &p, &st))
        return st;
    return st == KP_OK ? blas_run_gemm(call, l, &p, 1) : st;
}

static kp_status gemv_enqueue(const kp_call *call, kp_launch *l)
{
    blas_gemv_plan p = planned.gemv;
    kp_status st = have_plan(call, l) ? KP_OK : blas_plan_gemv(call, l, &p);
    if (st == KP_OK && blas_host_gemv(call, l, &p, &st))
        return st;
    return st == KP_OK ? blas_run_gemv(call, l, &p) : st;
}

static const char *gemm_resolve(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved)
{
    return index == BLAS_ROUTE_TUNABLE ? blas_route_resolve(l, value, resolved) : NULL;
}

static const char *gemm_batched_resolve(kp_launch *l, uint32_t index, int64_t value,
                                        int64_t *resolved)
{
    return index == BLAS_ROUTE_TUNABLE ? blas_route_resolve(l, value, resolved) : NULL;
}

static const char *gemv_resolve(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved)
{
    return index == BLAS_GEMV_ROUTE_TUNABLE ? blas_route_resolve(l, value, resolved) : NULL;
}

static kp_status gemm_batched_describe(kp_launch *l, char *out, size_t size)
{
    if (blas_host_describe(l, BLAS_ROUTE_TUNABLE, out, size) < 0)
        snprintf(out, size, "CLBlast's strided batched GEMM (or one GEMM per batch)");
    return KP_OK;
}

static kp_status gemv_describe(kp_launch *l, char *out, size_t size)
{
    if (blas_host_describe(l, BLAS_GEMV_ROUTE_TUNABLE, out, size) < 0)
        snprintf(out, size, "CLBlast's GEMV");
    return KP_OK;
}

/* The host route compiles nothing: CLBlast's programs wait for a call cblas cannot take. */
static kp_status gemm_warmup(kp_launch *l)
{
    if (blas_route_is_host(l, BLAS_ROUTE_TUNABLE))
        return KP_OK;
    return blas_warmup(l, BLAS_WARM_GEMM);
}

static kp_status gemm_batched_warmup(kp_launch *l)
{
    if (blas_route_is_host(l, BLAS_ROUTE_TUNABLE))
        return KP_OK;
    return blas_warmup(l, BLAS_WARM_GEMM_BATCHED);
}

static kp_status gemv_warmup(kp_launch *l)
{
    if (blas_route_is_host(l, BLAS_GEMV_ROUTE_TUNABLE))
        return KP_OK;
    return blas_warmup(l, BLAS_WARM_GEMV);
}

/* ---- cost -------------------------------------------------------------------------------- */

/* FLOPs: 2 M N K per product, plus 2 M N for beta * C when beta != 0. Bytes: each operand once
 * (a broadcast one once in all), C written and, when beta != 0, also read. */
static void gemm_cost_of(const kp_call *call, kp_cost *out, int batched)
{
    int o = batched ? 1 : 0, ta = (int)call->args[GEMM_TRANS_A].i;
    const kp_tensor *a = &call->args[GEMM_A].tensor, *b = &call->args[GEMM_B].tensor,
                    *c = &call->args[GEMM_C].tensor;
    double batch = batched ? (double)c->shape[0] : 1.0, beta = call->args[GEMM_BETA].f;
    double m = (double)c->shape[o], n = (double)c->shape[o + 1], k = (double)a->shape[o + 1 - ta];
    double na = batched && (a->shape[0] == 1 || a->strides[0] == 0) ? 1.0 : batch;
    double nb = batched && (b->shape[0] == 1 || b->strides[0] == 0) ? 1.0 : batch;
    double esize = (double)kp_dtype_size((kp_dtype)c->dtype);
    out->flops = batch * (2.0 * m * n * k + (beta != 0.0 ? 2.0 * m * n : 0.0));
    out->bytes = esize * (na * m * k + nb * k * n + batch * m * n * (beta != 0.0 ? 2.0 : 1.0));
}

static void gemm_cost(const kp_call *call, kp_cost *out)
{
    gemm_cost_of(call, out, 0);
}

static void gemm_batched_cost(const kp_call *call, kp_cost *out)
{
    gemm_cost_of(call, out, 1);
}

static void gemv_cost(const kp_call *call, kp_cost *out)
{
    const kp_tensor *a = &call->args[GEMV_A].tensor;
    double m = (double)a->shape[0], n = (double)a->shape[1], beta = call->args[GEMV_BETA].f;
    double ly = (double)call->args[GEMV_Y].tensor.shape[0];
    double lx = (double)call->args[GEMV_X].tensor.shape[0];
    double esize = (double)kp_dtype_size((kp_dtype)a->dtype);
    out->flops = 2.0 * m * n + (beta != 0.0 ? 2.0 * ly : 0.0);
    out->bytes = esize * (m * n + lx + ly * (beta != 0.0 ? 2.0 : 1.0));
}

/* ---- samples ----------------------------------------------------------------------------- */

/* A tensor `name` viewed with `shape` and `strides` at `offset` over storage just large enough,
 * filled uniformly in [-1, 1). */
static kp_status sample_strided(kp_sample *s, int32_t dt, const char *name, int32_t rank,
                                const int64_t *shape, const int64_t *strides, int64_t offset)
{
    kp_tensor t = {.rank = rank, .offset = offset};
    for (int32_t d = 0; d < rank; d++) {
        t.shape[d] = shape[d];
        t.strides[d] = strides[d];
    }
    int64_t numel = kp_tensor_extent(&t) + 2; /* a little beyond the view, to see stray writes */
    kp_status st = blas_host->sample_tensor(s, name, dt, 1, &numel, -1.0, 1.0, NULL);
    return st == KP_OK ? blas_host->sample_view(s, name, rank, shape, offset, strides) : st;
}

/* A contiguous row-major tensor. */
static kp_status sample_dense(kp_sample *s, int32_t dt, const char *name, int32_t rank,
                              const int64_t *shape)
{
    return blas_host->sample_tensor(s, name, dt, rank, shape, -1.0, 1.0, NULL);
}

static kp_status sample_scalars(kp_sample *s, double alpha, double beta, int ta, int tb)
{
    kp_status st = blas_host->sample_float(s, "alpha", alpha);
    if (st == KP_OK)
        st = blas_host->sample_float(s, "beta", beta);
    if (st == KP_OK && ta >= 0)
        st = blas_host->sample_int(s, "trans_a", ta);
    if (st == KP_OK && tb >= 0)
        st = blas_host->sample_int(s, "trans_b", tb);
    return st;
}

/* Plain row-major operands: the shapes of the bench sizes and of most verify sizes. */
static kp_status sample_gemm_dense(kp_sample *s, int32_t dt, int64_t m, int64_t n, int64_t k,
                                   double alpha, double beta)
{
    kp_status st = sample_dense(s, dt, "A", 2, (int64_t[]){m, k});
    if (st == KP_OK)
        st = sample_dense(s, dt, "B", 2, (int64_t[]){k, n});
    if (st == KP_OK)
        st = sample_dense(s, dt, "C", 2, (int64_t[]){m, n});
    return st == KP_OK ? sample_scalars(s, alpha, beta, 0, 0) : st;
}

static kp_status gemm_sample_of(kp_sample *s, const char *size, int32_t dt)
{
    long long m, n, k;
    kp_status st;
    if (strcmp(size, "one") == 0)
        return sample_gemm_dense(s, dt, 1, 1, 1, 1.0, 0.0);
    if (strcmp(size, "prime") == 0)
        return sample_gemm_dense(s, dt, 31, 37, 41, -1.25, 0.5);
    if (strcmp(size, "vector") == 0)
        return sample_gemm_dense(s, dt, 67, 1, 129, 1.0, 0.0);
    if (strcmp(size, "small") == 0)
        return sample_gemm_dense(s, dt, 128, 96, 200, 0.7, -0.3);
    if (strcmp(size, "views") == 0) {
        /* A [23, 19] is the transpose of a row-major [19, 23]; B is [29, 19] with ld 24 at offset
         * 3, used as B^T; C [23, 29] has ld 32 at offset 2. */
        st = sample_strided(s, dt, "A", 2, (int64_t[]){23, 19}, (int64_t[]){1, 23}, 0);
        if (st == KP_OK)
            st = sample_strided(s, dt, "B", 2, (int64_t[]){29, 19}, (int64_t[]){24, 1}, 3);
        if (st == KP_OK)
            st = sample_strided(s, dt, "C", 2, (int64_t[]){23, 29}, (int64_t[]){32, 1}, 2);
        return st == KP_OK ? sample_scalars(s, 0.75, 1.5, 0, 1) : st;
    }
    if (strcmp(size, "colmajor") == 0) {
        /* C column-major (CLBlast runs column-major), A row-major [27, 33] used as A^T, B
         * column-major [27, 18] with ld 28. */
        st = sample_dense(s, dt, "A", 2, (int64_t[]){27, 33});
        if (st == KP_OK)
            st = sample_strided(s, dt, "B", 2, (int64_t[]){27, 18}, (int64_t[]){1, 28}, 0);
        if (st == KP_OK)
            st = sample_strided(s, dt, "C", 2, (int64_t[]){33, 18}, (int64_t[]){1, 35}, 1);
        return st == KP_OK ? sample_scalars(s, -0.5, 0.25, 1, 0) : st;
    }
    if (strcmp(size, "1024") == 0 || strcmp(size, "256") == 0 || strcmp(size, "4096") == 0 ||
        strcmp(size, "8192") == 0) {
        long long v = atoll(size);
        return sample_gemm_dense(s, dt, v, v, v, 1.0, 0.0);
    }
    if (strcmp(size, "gru") == 0)
        return sample_gemm_dense(s, dt, 64, 768, 256, 1.0, 0.0);
    if (strcmp(size, "conv") == 0)
        return sample_gemm_dense(s, dt, 16, 200704, 27, 1.0, 0.0);
    /* "MxNxK", or "MxNxK:nt" and the like: op(A) op(B) with A stored [K, M] for t first, B
     * stored [N, K] for t second (a layer's x W^T is "B x OUT x IN:nt"). */
    int used = 0;
    if (sscanf(size, "%lldx%lldx%lld%n", &m, &n, &k, &used) != 3 || m < 0 || n < 0 || k < 0)
        return KP_ERR_NOT_FOUND;
    const char *ops = size[used] ? size + used : ":nn";
    if (strlen(ops) != 3 || ops[0] != ':' || !strchr("nt", ops[1]) || !strchr("nt", ops[2]))
        return KP_ERR_NOT_FOUND;
    int ta = ops[1] == 't', tb = ops[2] == 't';
    st = sample_dense(s, dt, "A", 2, ta ? (int64_t[]){k, m} : (int64_t[]){m, k});
    if (st == KP_OK)
        st = sample_dense(s, dt, "B", 2, tb ? (int64_t[]){n, k} : (int64_t[]){k, n});
    if (st == KP_OK)
        st = sample_dense(s, dt, "C", 2, (int64_t[]){m, n});
    return st == KP_OK ? sample_scalars(s, 1.0, 0.0, ta, tb) : st;
}

/* A size's name, or "f16-" and the name for the same operands in f16 (listed nowhere, since
 * PoCL has no cl_khr_fp16: scripts/gpu/tc.sh verifies and times them on tensor cores). */
static kp_status gemm_sample(kp_sample *s, const char *size)
{
    if (strncmp(size, "f16-", 4) == 0)
        return gemm_sample_of(s, size + 4, KP_F16);
    return gemm_sample_of(s, size, KP_F32);
}

static kp_status gemm_batched_sample(kp_sample *s, const char *size)
{
    const int32_t dt = KP_F32;
    long long b, m, n, k;
    kp_status st;
    if (strcmp(size, "batch7") == 0) {
        /* One A [13, 17] for all 7 batches (batch stride 0). */
        st = sample_strided(s, dt, "A", 3, (int64_t[]){7, 13, 17}, (int64_t[]){0, 17, 1}, 0);
        if (st == KP_OK)
            st = sample_dense(s, dt, "B", 3, (int64_t[]){7, 17, 11});
        if (st == KP_OK)
            st = sample_dense(s, dt, "C", 3, (int64_t[]){7, 13, 11});
        return st == KP_OK ? sample_scalars(s, 1.0, 0.25, 0, 0) : st;
    }
    if (strcmp(size, "strided") == 0) {
        /* C's batches padded apart and offset, B used transposed. */
        st = sample_dense(s, dt, "A", 3, (int64_t[]){4, 9, 6});
        if (st == KP_OK)
            st = sample_dense(s, dt, "B", 3, (int64_t[]){4, 14, 6});
        if (st == KP_OK)
            st = sample_strided(s, dt, "C", 3, (int64_t[]){4, 9, 14}, (int64_t[]){140, 14, 1}, 5);
        return st == KP_OK ? sample_scalars(s, 0.5, 1.0, 0, 1) : st;
    }
    if (strcmp(size, "batch1") == 0)
        b = 1, m = 19, n = 23, k = 17;
    else if (strcmp(size, "b32x128") == 0)
        b = 32, m = n = k = 128;
    else if (strcmp(size, "b256x64") == 0)
        b = 256, m = n = k = 64;
    else if (sscanf(size, "%lldx%lldx%lldx%lld", &b, &m, &n, &k) != 4 || b < 0 || m < 0 || n < 0 ||
             k < 0)
        return KP_ERR_NOT_FOUND;
    st = sample_dense(s, dt, "A", 3, (int64_t[]){b, m, k});
    if (st == KP_OK)
        st = sample_dense(s, dt, "B", 3, (int64_t[]){b, k, n});
    if (st == KP_OK)
        st = sample_dense(s, dt, "C", 3, (int64_t[]){b, m, n});
    return st == KP_OK ? sample_scalars(s, 1.5, strcmp(size, "batch1") == 0 ? -0.5 : 0.0, 0, 0)
                       : st;
}

static kp_status gemv_sample(kp_sample *s, const char *size)
{
    const int32_t dt = KP_F32;
    long long m, n;
    kp_status st;
    if (strcmp(size, "n") == 0) {
        /* y = A x with x every 2nd and y every 3rd element. */
        st = sample_dense(s, dt, "A", 2, (int64_t[]){67, 129});
        if (st == KP_OK)
            st = sample_strided(s, dt, "x", 1, (int64_t[]){129}, (int64_t[]){2}, 1);
        if (st == KP_OK)
            st = sample_strided(s, dt, "y", 1, (int64_t[]){67}, (int64_t[]){3}, 0);
        if (st == KP_OK)
            st = blas_host->sample_float(s, "alpha", 0.8);
        return st == KP_OK ? blas_host->sample_float(s, "beta", -0.6) : st;
    }
    if (strcmp(size, "t") == 0) {
        /* y = A^T x with A column-major (ld 55) and both vectors strided. */
        st = sample_strided(s, dt, "A", 2, (int64_t[]){53, 41}, (int64_t[]){1, 55}, 0);
        if (st == KP_OK)
            st = sample_strided(s, dt, "x", 1, (int64_t[]){53}, (int64_t[]){3}, 0);
        if (st == KP_OK)
            st = sample_strided(s, dt, "y", 1, (int64_t[]){41}, (int64_t[]){2}, 1);
        if (st == KP_OK)
            st = blas_host->sample_int(s, "trans", 1);
        return st == KP_OK ? blas_host->sample_float(s, "beta", 1.25) : st;
    }
    if (strcmp(size, "one") == 0)
        m = n = 1;
    else if (strcmp(size, "wide") == 0)
        m = 5, n = 1000;
    else if (strcmp(size, "4096") == 0)
        m = n = 4096;
    else if (strcmp(size, "gru") == 0)
        m = 768, n = 256;
    else if (sscanf(size, "%lldx%lld", &m, &n) != 2 || m < 0 || n < 0)
        return KP_ERR_NOT_FOUND;
    st = sample_dense(s, dt, "A", 2, (int64_t[]){m, n});
    if (st == KP_OK)
        st = sample_dense(s, dt, "x", 1, (int64_t[]){n});
    return st == KP_OK ? sample_dense(s, dt, "y", 1, (int64_t[]){m}) : st;
}

/* ---- descriptors ------------------------------------------------------------------------- */

static const char *const gemm_verify[] = {"one",    "prime", "views", "colmajor",
                                          "vector", "small", NULL};
static const char *const gemm_bench[] = {"1024", "256", "4096", "gru", "conv", NULL};
static const char *const batched_verify[] = {"batch1", "batch7", "strided", NULL};
static const char *const batched_bench[] = {"b32x128", "b256x64", NULL};
static const char *const gemv_verify[] = {"one", "n", "t", "wide", NULL};
static const char *const gemv_bench[] = {"4096", "gru", NULL};

static const kp_kernel_desc kernels[] = {
    {
        .struct_size = sizeof(kp_kernel_desc),
        .name = "blas.gemm",
        .summary =
            "C = alpha op(A) op(B) + beta C through CLBlast, or OpenBLAS on CPU devices (f32; "
            "f16 on tensor cores through tc.gemm, or with cl_khr_fp16)",
        .params = gemm_params,
        .n_params = GEMM_NPARAMS,
        .n_tunables = BLAS_N_GEMM_ALL_TUNABLES,
        .tunables = blas_gemm_tunables,
        .check = gemm_check,
        .enqueue = gemm_enqueue,
        .reference = blas_gemm_reference,
        .sample = gemm_sample,
        .cost = gemm_cost,
        .verify_sizes = gemm_verify,
        .bench_sizes = gemm_bench,
        .tolerance = blas_gemm_tolerance,
        .warmup = gemm_warmup,
        .describe = blas_gemm_describe,
        .resolve = gemm_resolve,
    },
    {
        .struct_size = sizeof(kp_kernel_desc),
        .name = "blas.gemm_batched",
        .summary = "strided batched GEMM, C[b] = alpha op(A[b]) op(B[b]) + beta C[b], CLBlast",
        .params = gemm_batched_params,
        .n_params = GEMM_NPARAMS,
        .n_tunables = BLAS_N_BATCHED_TUNABLES,
        .tunables = blas_gemm_tunables,
        .check = gemm_batched_check,
        .enqueue = gemm_batched_enqueue,
        .reference = blas_gemm_batched_reference,
        .sample = gemm_batched_sample,
        .cost = gemm_batched_cost,
        .verify_sizes = batched_verify,
        .bench_sizes = batched_bench,
        .tolerance = blas_gemm_tolerance,
        .warmup = gemm_batched_warmup,
        .describe = gemm_batched_describe,
        .resolve = gemm_batched_resolve,
    },
    {
        .struct_size = sizeof(kp_kernel_desc),
        .name = "blas.gemv",
        .summary = "y = alpha op(A) x + beta y through CLBlast (f32; f16 with cl_khr_fp16)",
        .params = gemv_params,
        .n_params = GEMV_NPARAMS,
        .n_tunables = BLAS_N_GEMV_ALL_TUNABLES,
        .tunables = blas_gemv_tunables,
        .check = gemv_check,
        .enqueue = gemv_enqueue,
        .reference = blas_gemv_reference,
        .sample = gemv_sample,
        .cost = gemv_cost,
        .verify_sizes = gemv_verify,
        .bench_sizes = gemv_bench,
        .tolerance = blas_gemv_tolerance,
        .warmup = gemv_warmup,
        .describe = gemv_describe,
        .resolve = gemv_resolve,
    },
};

/* The tunable tables and the CLBlast kernel tables name each parameter twice; a drift between
 * them would override the wrong parameter, so init refuses it. */
static kp_status check_tables(const kp_host_api *api, const blas_clkernel *ks, uint32_t n,
                              uint32_t first, uint32_t end)
{
    uint32_t covered = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (n > BLAS_MAX_CLKERNELS || ks[i].n_params > BLAS_MAX_PARAMS ||
            ks[i].first_tunable < first || ks[i].first_tunable + ks[i].n_params > end)
            return api->fail(NULL, KP_ERR_PLUGIN, "blas: table of clblast.%s is out of range",
                             ks[i].name);
        for (uint32_t p = 0; p < ks[i].n_params; p++) {
            char want[112];
            snprintf(want, sizeof want, "%s.%s.%s", ks[i].prefix, ks[i].name, ks[i].params[p]);
            if (strcmp(ks[i].tunables[ks[i].first_tunable + p].name, want) != 0)
                return api->fail(NULL, KP_ERR_PLUGIN, "blas: tunable %u is %s, expected %s",
                                 ks[i].first_tunable + p,
                                 ks[i].tunables[ks[i].first_tunable + p].name, want);
        }
        covered += ks[i].n_params;
    }
    return covered == end - first
               ? KP_OK
               : api->fail(NULL, KP_ERR_PLUGIN, "blas: %u tunables but %u CLBlast parameters",
                           end - first, covered);
}

static kp_status blas_init(const kp_host_api *api, kp_registrar *reg)
{
    /* Set once: every init gets the same table, and other runtimes' launches may be reading it. */
    if (!blas_host)
        blas_host = api;
    kp_status st =
        check_tables(api, blas_gemm_clkernels, blas_n_gemm_clkernels, 0, BLAS_N_GEMM_TUNABLES);
    if (st == KP_OK) /* the narrow set: Xgemm's parameters again, after `precision` */
        st = check_tables(api, &blas_narrow_xgemm, 1, BLAS_NARROW_FIRST, BLAS_NARROW_MAX_DIM);
    if (st == KP_OK)
        st = check_tables(api, blas_gemv_clkernels, blas_n_gemv_clkernels, 0, BLAS_N_GEMV_TUNABLES);
    for (size_t i = 0; st == KP_OK && i < sizeof kernels / sizeof kernels[0]; i++) {
        st = api->register_kernel(reg, &kernels[i]);
    }
    return st;
}

KP_PLUGIN_DEFINE(blas, .name = "blas", .version = "1.0.0",
                 .description = "BLAS through CLBlast: GEMM, strided batched GEMM, GEMV",
                 .init = blas_init)
