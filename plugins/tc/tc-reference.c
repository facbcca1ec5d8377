/* SPDX-License-Identifier: Apache-2.0 */
/* tc.gemm's host reference (inputs rounded as the tensor cores see them), tolerance and samples. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tc.h"

double tc_round(int precision, float x)
{
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    if ((bits & 0x7f800000u) == 0x7f800000u || precision == KP_TC_TF32X3)
        return x; /* Inf and NaN pass through */
    if (precision == KP_TC_F16)
        return kp_half_to_float(kp_half_from_float(x));
    if (precision == KP_TC_TF32) {
        /* cvt.rna: to 10 mantissa bits, nearest, ties away from zero (on the magnitude). */
        bits = (bits + 0x1000u) & 0xffffe000u;
    } else {
        bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u; /* bf16, nearest even */
    }
    float r;
    memcpy(&r, &bits, sizeof r);
    return r;
}

/* Element (i, j) of op(X) for tensor argument `arg` of a reference call. */
static double element(const kp_call *call, int arg, int trans, int64_t i, int64_t j)
{
    const kp_tensor *t = &call->args[arg].tensor;
    int64_t e =
        trans ? j * t->strides[0] + i * t->strides[1] : i * t->strides[0] + j * t->strides[1];
    if (t->dtype == KP_F16)
        return kp_half_to_float(KP_HOST_PTR(call, arg, uint16_t)[e]);
    if (t->dtype == KP_BF16)
        return kp_bf16_to_float(KP_HOST_PTR(call, arg, uint16_t)[e]);
    return KP_HOST_PTR(call, arg, float)[e];
}

kp_status tc_gemm_reference(const kp_call *call, kp_launch *l)
{
    const kp_tensor *c = &call->args[TC_C].tensor, *a = &call->args[TC_A].tensor;
    int ta = (int)call->args[TC_TRANS_A].i, tb = (int)call->args[TC_TRANS_B].i;
    int prec = (int)call->args[TC_PRECISION].i;
    int64_t m = c->shape[0], n = c->shape[1], k = a->shape[ta ? 0 : 1];
    double alpha = call->args[TC_ALPHA].f, beta = call->args[TC_BETA].f;
    /* C is f32, or f16/bf16 rounded once from the FP64 sum. */
    void *pc = call->args[TC_C].host;
    /* op(A) row-major and op(B) column-major, each rounded once. */
    double *ra = malloc((size_t)(m * k + 1) * sizeof *ra),
           *rb = malloc((size_t)(k * n + 1) * sizeof *rb);
    if (!ra || !rb) {
        free(ra), free(rb);
        return tc_host->fail(l, KP_ERR_OUT_OF_MEMORY, "reference: out of host memory");
    }
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = 0; p < k; p++)
            ra[i * k + p] = tc_round(prec, (float)element(call, TC_A, ta, i, p));
    for (int64_t j = 0; j < n; j++)
        for (int64_t p = 0; p < k; p++)
            rb[j * k + p] = tc_round(prec, (float)element(call, TC_B, tb, p, j));
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double sum = 0;
            for (int64_t p = 0; p < k; p++)
                sum += ra[i * k + p] * rb[j * k + p];
            int64_t e = i * c->strides[0] + j * c->strides[1];
            double v =
                beta == 0.0 ? alpha * sum : alpha * sum + beta * element(call, TC_C, 0, i, j);
            if (c->dtype == KP_F16)
                ((uint16_t *)pc)[c->offset + e] = kp_half_from_float((float)v);
            else if (c->dtype == KP_BF16)
                ((uint16_t *)pc)[c->offset + e] = kp_bf16_from_float((float)v);
            else
                ((float *)pc)[c->offset + e] = (float)v;
        }
    free(ra), free(rb);
    return KP_OK;
}

/*
 * Derived like blas.gemm's bound (blas-reference.c): the reference rounds the inputs as the
 * kernel does, so what is left is the FP32 accumulation, gamma_K S with u = 2^-24 and S =
 * |alpha| K max|op(A)| max|op(B)|, plus one rounding for alpha, beta C and the store. tf32x3 adds
 * the split's error: a = hi + lo + r with |r| <= 2^-22 |a| (each part rounded to 10 bits), and
 * the dropped lo lo product, together at most 3 2^-22 |a b| = 12 u per product.
 */
void tc_gemm_tolerance(const kp_call *call, double *atol, double *rtol)
{
    const kp_tensor *c = &call->args[TC_C].tensor, *a = &call->args[TC_A].tensor;
    int ta = (int)call->args[TC_TRANS_A].i, tb = (int)call->args[TC_TRANS_B].i;
    int64_t m = c->shape[0], n = c->shape[1], k = a->shape[ta ? 0 : 1];
    double max_a = 0, max_b = 0, max_c = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = 0; p < k; p++)
            max_a = fmax(max_a, fabs(element(call, TC_A, ta, i, p)));
    for (int64_t p = 0; p < k; p++)
        for (int64_t j = 0; j < n; j++)
            max_b = fmax(max_b, fabs(element(call, TC_B, tb, p, j)));
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            max_c = fmax(max_c, fabs(element(call, TC_C, 0, i, j)));
    const double cf = 2.0, u = 0x1p-24;
    double ku = (double)k * u, gamma = ku < 0.5 ? ku / (1.0 - ku) : 2.0 * ku;
    double split = call->args[TC_PRECISION].i == KP_TC_TF32X3 ? 12.0 * u : 0.0;
    double s = fabs(call->args[TC_ALPHA].f) * (double)k * max_a * max_b;
    double beta = call->args[TC_BETA].f;
    *atol = cf * ((gamma + u + split) * s + (beta != 0.0 ? u * (max_c + s) : 0.0));
    *rtol = cf * u;
    /* A 16-bit C: device and reference each round their result once (half an ulp of C's
     * precision, relative, or half the smallest subnormal), so they may sit an ulp apart. */
    int32_t cd = call->args[TC_C].tensor.dtype;
    if (cd == KP_F16) {
        *rtol = cf * 0x1p-11;
        *atol += cf * 0x1p-25;
    } else if (cd == KP_BF16) {
        *rtol = cf * 0x1p-8;
    }
}

void tc_gemm_cost(const kp_call *call, kp_cost *out)
{
    const kp_tensor *c = &call->args[TC_C].tensor, *a = &call->args[TC_A].tensor;
    int ta = (int)call->args[TC_TRANS_A].i;
    double m = (double)c->shape[0], n = (double)c->shape[1], k = (double)a->shape[ta ? 0 : 1];
    out->flops = 2 * m * n * k;
    double in = call->args[TC_A].tensor.dtype == KP_F32 ? 4 : 2;
    double out_size = call->args[TC_C].tensor.dtype == KP_F32 ? 4 : 2;
    out->bytes = in * (m * k + k * n) + out_size * (call->args[TC_BETA].f != 0.0 ? 2 : 1) * m * n;
}

/* ---- samples -------------------------------------------------------------------------------- */

/* 16-bit C on the shapes that reach every path of the epilogue: edges, transposes, strided
 * views (odd offsets), a column-major C. */
#define OUTPUTS16(shape) shape "-halfc", shape "-bfloatc"
#define PRECISIONS(shape)                                                                          \
    shape "-tf32", shape "-tf32x3", shape "-f16", shape "-bf16", shape "-half", shape "-bfloat"
const char *const tc_verify_sizes[] = {
    PRECISIONS("one"),    PRECISIONS("prime"),   PRECISIONS("edges"),    PRECISIONS("edges4"),
    PRECISIONS("edges8"), PRECISIONS("trans8"),  PRECISIONS("transb4"),  PRECISIONS("mid4"),
    PRECISIONS("trans"),  PRECISIONS("views"),   PRECISIONS("colmajor"), PRECISIONS("small"),
    PRECISIONS("large"),  OUTPUTS16("one"),      OUTPUTS16("edges8"),    OUTPUTS16("trans"),
    OUTPUTS16("views"),   OUTPUTS16("colmajor"), OUTPUTS16("large"),     NULL};
const char *const tc_bench_sizes[] = {"4096-tf32",   "1024-tf32",   "2048-tf32",   "8192-tf32",
                                      "4096-tf32x3", "4096-f16",    "4096-bf16",   "4096-half",
                                      "8192-half",   "4096-bfloat", "8192-bfloat", "8192-halfc",
                                      "gru-tf32",    "skinny-tf32", NULL};

static kp_status strided(kp_sample *s, const char *name, kp_dtype dt, const int64_t *shape,
                         const int64_t *strides, int64_t offset)
{
    kp_tensor t = {.rank = 2, .offset = offset};
    for (int d = 0; d < 2; d++) {
        t.shape[d] = shape[d];
        t.strides[d] = strides[d];
    }
    int64_t numel = kp_tensor_extent(&t) + 2; /* a little beyond the view, to see stray writes */
    kp_status st = tc_host->sample_tensor(s, name, dt, 1, &numel, -1.0, 1.0, NULL);
    return st == KP_OK ? tc_host->sample_view(s, name, 2, shape, offset, strides) : st;
}

static kp_status dense(kp_sample *s, const char *name, kp_dtype dt, int64_t rows, int64_t cols)
{
    return tc_host->sample_tensor(s, name, dt, 2, (const int64_t[]){rows, cols}, -1.0, 1.0, NULL);
}

static kp_status scalars(kp_sample *s, double alpha, double beta, int ta, int tb, int prec)
{
    kp_status st = tc_host->sample_float(s, "alpha", alpha);
    if (st == KP_OK)
        st = tc_host->sample_float(s, "beta", beta);
    if (st == KP_OK)
        st = tc_host->sample_int(s, "trans_a", ta);
    if (st == KP_OK)
        st = tc_host->sample_int(s, "trans_b", tb);
    return st == KP_OK ? tc_host->sample_int(s, "precision", prec) : st;
}

/* Row-major A [m, k] (or [k, m] with ta), B [k, n] (or [n, k] with tb), C [m, n]. */
static kp_status plain(kp_sample *s, kp_dtype dt, kp_dtype ct, int64_t m, int64_t n, int64_t k,
                       int ta, int tb, double alpha, double beta, int prec)
{
    kp_status st = ta ? dense(s, "A", dt, k, m) : dense(s, "A", dt, m, k);
    if (st == KP_OK)
        st = tb ? dense(s, "B", dt, n, k) : dense(s, "B", dt, k, n);
    if (st == KP_OK)
        st = dense(s, "C", ct, m, n);
    return st == KP_OK ? scalars(s, alpha, beta, ta, tb, prec) : st;
}

kp_status tc_gemm_sample(kp_sample *s, const char *size)
{
    /* "half" and "bfloat": f16 or bf16 tensors A and B (tc.cl: HALF); the others convert f32
     * tensors. */
    static const char *const names[] = {"tf32", "tf32x3", "f16", "bf16"};
    const char *dash = strrchr(size, '-');
    int prec = -1;
    kp_dtype dt = KP_F32;
    for (int i = 0; dash && i < KP_TC_PRECISION_COUNT; i++)
        if (strcmp(dash + 1, names[i]) == 0)
            prec = i;
    if (dash && strcmp(dash + 1, "half") == 0)
        prec = KP_TC_F16, dt = KP_F16;
    if (dash && strcmp(dash + 1, "bfloat") == 0)
        prec = KP_TC_BF16, dt = KP_BF16;
    /* "halfc" and "bfloatc": the same with C in the inputs' dtype. */
    kp_dtype ct = KP_F32;
    if (dash && strcmp(dash + 1, "halfc") == 0)
        prec = KP_TC_F16, dt = ct = KP_F16;
    if (dash && strcmp(dash + 1, "bfloatc") == 0)
        prec = KP_TC_BF16, dt = ct = KP_BF16;
    if (prec < 0)
        return KP_ERR_NOT_FOUND;
    size_t len = (size_t)(dash - size);
    char shape[32];
    if (len >= sizeof shape)
        return KP_ERR_NOT_FOUND;
    memcpy(shape, size, len);
    shape[len] = '\0';
    long long n;
    kp_status st;
    if (strcmp(shape, "one") == 0)
        return plain(s, dt, ct, 1, 1, 1, 0, 0, 1.0, 0.0, prec);
    if (strcmp(shape, "prime") == 0)
        return plain(s, dt, ct, 31, 37, 41, 0, 0, -1.25, 0.5, prec);
    /* Every edge of the default 128 x 128 x 16 tiles: partial tiles in M, N and K at once. */
    if (strcmp(shape, "edges") == 0)
        return plain(s, dt, ct, 131, 259, 67, 0, 0, 1.0, 0.0, prec);
    /* The same with row pitches of whole float4 groups, which the cp.async and wgmma paths need:
     * partial tiles and a partial last slice. */
    if (strcmp(shape, "edges4") == 0)
        return plain(s, dt, ct, 131, 260, 68, 0, 0, 1.0, 0.0, prec);
    /* Pitches of whole 16-byte groups for 16-bit tensors too (cp.async with HALF), with
     * partial tiles and a partial last slice; then the same with both operands transposed. */
    if (strcmp(shape, "edges8") == 0)
        return plain(s, dt, ct, 131, 264, 72, 0, 0, 1.0, 0.0, prec);
    if (strcmp(shape, "trans8") == 0)
        return plain(s, dt, ct, 104, 136, 152, 1, 1, -0.5, 0.25, prec);
    if (strcmp(shape, "transb4") == 0)
        return plain(s, dt, ct, 67, 132, 44, 0, 1, -1.0, 0.5, prec);
    if (strcmp(shape, "mid4") == 0)
        return plain(s, dt, ct, 517, 772, 260, 0, 0, 1.0, 0.0, prec);
    if (strcmp(shape, "trans") == 0)
        return plain(s, dt, ct, 97, 133, 149, 1, 1, 0.5, -1.0, prec);
    if (strcmp(shape, "views") == 0) {
        /* A [53, 37] with ld 41 at offset 3 (no float4 loads), B^T stored [29, 37] with ld 40 at
         * offset 1, C [53, 29] with ld 32 at offset 2. */
        st = strided(s, "A", dt, (const int64_t[]){53, 37}, (const int64_t[]){41, 1}, 3);
        if (st == KP_OK)
            st = strided(s, "B", dt, (const int64_t[]){29, 37}, (const int64_t[]){40, 1}, 1);
        if (st == KP_OK)
            st = strided(s, "C", ct, (const int64_t[]){53, 29}, (const int64_t[]){32, 1}, 2);
        return st == KP_OK ? scalars(s, 0.75, 1.5, 0, 1, prec) : st;
    }
    if (strcmp(shape, "colmajor") == 0) {
        /* C column-major [45, 38] with ld 48 (run as C^T), A column-major [45, 70], B row-major
         * [70, 38] used as is. */
        st = strided(s, "A", dt, (const int64_t[]){45, 70}, (const int64_t[]){1, 45}, 0);
        if (st == KP_OK)
            st = dense(s, "B", dt, 70, 38);
        if (st == KP_OK)
            st = strided(s, "C", ct, (const int64_t[]){45, 38}, (const int64_t[]){1, 48}, 0);
        return st == KP_OK ? scalars(s, 1.0, 0.25, 0, 0, prec) : st;
    }
    if (strcmp(shape, "small") == 0)
        return plain(s, dt, ct, 256, 384, 320, 0, 0, 1.0, 0.0, prec);
    /* Enough work-groups that SMALL keeps the tuned tiles (9 x 17 of 128 x 128), edges in all
     * three dimensions. */
    if (strcmp(shape, "large") == 0)
        return plain(s, dt, ct, 1031, 2053, 1019, 0, 0, 1.0, 0.0, prec);
    /* The GRU's input projection and recurrent GEMMs of issue #8. */
    if (strcmp(shape, "gru") == 0)
        return plain(s, dt, ct, 1024, 3072, 1024, 0, 0, 1.0, 0.0, prec);
    if (strcmp(shape, "skinny") == 0)
        return plain(s, dt, ct, 64, 768, 256, 0, 0, 1.0, 0.0, prec);
    if (sscanf(shape, "%lld", &n) == 1 && n > 0 && n <= 16384)
        return plain(s, dt, ct, n, n, n, 0, 0, 1.0, 0.0, prec);
    return KP_ERR_NOT_FOUND;
}
