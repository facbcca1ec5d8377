/* SPDX-License-Identifier: Apache-2.0 */
/* Plain-C references of the blas kernels (double accumulation) and their verification tolerance. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"

/* Element (i, j) of a strided matrix view lives at offset + i * rs + j * cs. */
typedef struct view {
    void *data;
    int32_t dtype;
    int64_t offset, rs, cs;
} view;

static double get(const view *v, int64_t i, int64_t j)
{
    int64_t at = v->offset + i * v->rs + j * v->cs;
    return v->dtype == KP_F16 ? kp_half_to_float(((const uint16_t *)v->data)[at])
                              : ((const float *)v->data)[at];
}

static void put(const view *v, int64_t i, int64_t j, double x)
{
    int64_t at = v->offset + i * v->rs + j * v->cs;
    if (v->dtype == KP_F16)
        ((uint16_t *)v->data)[at] = kp_half_from_float((float)x);
    else
        ((float *)v->data)[at] = (float)x;
}

/* Dimensions d0, d1 of tensor argument `index`, transposed when `trans`, at batch `b`. */
static view view_of(const kp_call *call, int index, int d0, int d1, int trans, int64_t b)
{
    const kp_tensor *t = &call->args[index].tensor;
    int64_t bs = d0 > 0 && t->shape[0] > 1 ? t->strides[0] : 0;
    view v = {.data = call->args[index].host,
              .dtype = t->dtype,
              .offset = t->offset + b * bs,
              .rs = t->strides[trans ? d1 : d0],
              .cs = t->strides[trans ? d0 : d1]};
    return v;
}

/* Packed operands, so the inner loop streams contiguous doubles: op(A) as rows of K padded to
 * a multiple of 4 rows, op(B) as panels of 4 columns interleaved along K. */
typedef struct packs {
    double *a, *b;
} packs;

static kp_status pack_alloc(kp_launch *l, int64_t m, int64_t n, int64_t k, packs *p)
{
    size_t mr = (size_t)(m + 3) / 4 * 4, nr = (size_t)(n + 3) / 4 * 4, kk = (size_t)k;
    p->a = calloc(mr * kk + 1, sizeof *p->a);
    p->b = calloc(nr * kk + 1, sizeof *p->b);
    if (p->a && p->b)
        return KP_OK;
    free(p->a);
    free(p->b);
    return blas_host->fail(l, KP_ERR_OUT_OF_MEMORY, "reference: out of host memory");
}

/* C = alpha * op(A) op(B) + beta * C; beta = 0 ignores C (BLAS). Register-blocked 4 x 4 with
 * double accumulators in k order, so the sums are the plain dot products, only faster. */
static void gemm(int64_t m, int64_t n, int64_t k, double alpha, const view *a, const view *b,
                 double beta, const view *c, const packs *p)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t kk = 0; kk < k; kk++)
            p->a[i * k + kk] = get(a, i, kk);
    for (int64_t j = 0; j < n; j++)
        for (int64_t kk = 0; kk < k; kk++)
            p->b[((j / 4) * k + kk) * 4 + j % 4] = get(b, kk, j);
    for (int64_t i = 0; i < m; i += 4) {
        const double *a0 = &p->a[i * k], *a1 = a0 + k, *a2 = a1 + k, *a3 = a2 + k;
        for (int64_t j = 0; j < n; j += 4) {
            const double *bp = &p->b[(j / 4) * k * 4];
            double acc[4][4] = {{0}};
            for (int64_t kk = 0; kk < k; kk++) {
                const double *bk = &bp[kk * 4];
                for (int c4 = 0; c4 < 4; c4++) {
                    acc[0][c4] += a0[kk] * bk[c4];
                    acc[1][c4] += a1[kk] * bk[c4];
                    acc[2][c4] += a2[kk] * bk[c4];
                    acc[3][c4] += a3[kk] * bk[c4];
                }
            }
            for (int r = 0; r < 4 && i + r < m; r++)
                for (int c4 = 0; c4 < 4 && j + c4 < n; c4++) {
                    double x = alpha * acc[r][c4];
                    if (beta != 0.0)
                        x += beta * get(c, i + r, j + c4);
                    put(c, i + r, j + c4, x);
                }
        }
    }
}

static kp_status gemm_batches(const kp_call *call, kp_launch *l, int batched)
{
    int o = batched ? 1 : 0;
    int ta = (int)call->args[GEMM_TRANS_A].i, tb = (int)call->args[GEMM_TRANS_B].i;
    const kp_tensor *c = &call->args[GEMM_C].tensor, *a = &call->args[GEMM_A].tensor;
    int64_t m = c->shape[o], n = c->shape[o + 1], k = a->shape[o + 1 - ta];
    int64_t batches = batched ? c->shape[0] : 1;
    if (m == 0 || n == 0)
        return KP_OK;
    packs p;
    kp_status st = pack_alloc(l, m, n, k, &p);
    for (int64_t bt = 0; st == KP_OK && bt < batches; bt++) {
        view va = view_of(call, GEMM_A, o, o + 1, ta, bt);
        view vb = view_of(call, GEMM_B, o, o + 1, tb, bt);
        view vc = view_of(call, GEMM_C, o, o + 1, 0, bt);
        gemm(m, n, k, call->args[GEMM_ALPHA].f, &va, &vb, call->args[GEMM_BETA].f, &vc, &p);
    }
    if (st == KP_OK) {
        free(p.a);
        free(p.b);
    }
    return st;
}

kp_status blas_gemm_reference(const kp_call *call, kp_launch *l)
{
    return gemm_batches(call, l, 0);
}

kp_status blas_gemm_batched_reference(const kp_call *call, kp_launch *l)
{
    return gemm_batches(call, l, 1);
}

kp_status blas_gemv_reference(const kp_call *call, kp_launch *l)
{
    const kp_tensor *x = &call->args[GEMV_X].tensor, *y = &call->args[GEMV_Y].tensor;
    int trans = (int)call->args[GEMV_TRANS].i;
    double alpha = call->args[GEMV_ALPHA].f, beta = call->args[GEMV_BETA].f;
    view va = view_of(call, GEMV_A, 0, 1, trans, 0);
    view vx = {call->args[GEMV_X].host, x->dtype, x->offset, x->strides[0], 0};
    view vy = {call->args[GEMV_Y].host, y->dtype, y->offset, y->strides[0], 0};
    int64_t rows = y->shape[0], cols = x->shape[0];
    for (int64_t i = 0; i < rows; i++) {
        double s = 0;
        for (int64_t j = 0; j < cols; j++)
            s += get(&va, i, j) * get(&vx, j, 0);
        double r = alpha * s;
        if (beta != 0.0)
            r += beta * get(&vy, i, 0);
        put(&vy, i, 0, r);
    }
    return KP_OK;
}

/* ---- tolerance --------------------------------------------------------------------------- */

/* The largest |element|, and the largest sum of |elements| along a row (by_rows) or column. */
typedef struct norms {
    double max, sum;
} norms;

static norms norms_of(const view *v, int64_t rows, int64_t cols, int by_rows)
{
    norms n = {0, 0};
    int64_t outer = by_rows ? rows : cols, inner = by_rows ? cols : rows;
    for (int64_t o = 0; o < outer; o++) {
        double sum = 0;
        for (int64_t i = 0; i < inner; i++) {
            double x = fabs(by_rows ? get(v, o, i) : get(v, i, o));
            n.max = x > n.max ? x : n.max;
            sum += x;
        }
        n.sum = sum > n.sum ? sum : n.sum;
    }
    return n;
}

/*
 * The bound, derived rather than fitted. With unit roundoff u (2^-24 for f32, 2^-11 for f16) a
 * length-K dot product computed in that precision, in any order and with or without fused
 * multiply-adds, errs by at most gamma_K sum_k |a_ik| |b_kj| with gamma_K = K u / (1 - K u)
 * (Higham, Accuracy and Stability of Numerical Algorithms, 3.1). That sum is at most
 * S / |alpha|, where S = |alpha| min(max_i sum_k |a_ik| max|b|, max|a| max_j sum_k |b_kj|)
 * (<= |alpha| K max|a| max|b|). Scaling by alpha adds u S, beta C adds u |beta| max|C_in|, and
 * the final sum and the store round once more, u |result|, which rtol covers. The callback runs
 * after the reference, so C holds the output: |beta| max|C_in| <= max|C_out| + S. Hence
 *     atol = c ((gamma_K + u) S + [beta != 0] u (max|C_out| + S)),   rtol = c u,
 * with c = 2 for the second-order terms and an implementation that rounds once or twice more
 * (CLBlast's indirect path scales C through a temporary). It is a worst-case bound, linear in K;
 * random data err about sqrt(K) u. For K u >= 1/2, gamma_K is taken as 2 K u, which promises
 * nothing: f16 sums that long have no accuracy to verify.
 */
/*
 * A blas.gemm routed through tc.gemm (the `precision` tunable) rounds each input first: with
 * unit roundoff v per input (2^-11 for tf32 and f16, 2^-8 for bf16) a product errs by at most
 * 2v |a b| (plus v^2), so `product` = 2v adds 2v S; tf32x3's split leaves 12 2^-24 per product
 * (tc-reference.c derives it).
 */
static double routed_product_error(void)
{
    switch (blas_routed_precision()) {
    case 1:
    case 3:
        return 2 * 0x1p-11 + 0x1p-22;
    case 2:
        return 12 * 0x1p-24;
    case 4:
        return 2 * 0x1p-8 + 0x1p-16;
    default:
        return 0;
    }
}

/*
 * An f16 product routed through tc.gemm accumulates in FP32 and rounds once to f16 at the store:
 * the terms above with u = 2^-24, and rtol with f16's 2^-11 for that last rounding (the reference
 * rounds its f16 output too). The f16 bound would promise nothing at K >= 1024.
 */
static void bound(double u, double u_out, int64_t k, double alpha, double beta, norms a, norms b,
                  double max_c, double product, double *atol, double *rtol)
{
    const double c = 2.0;
    double ku = (double)k * u, gamma = ku < 0.5 ? ku / (1.0 - ku) : 2.0 * ku;
    double s = fabs(alpha) * fmin(a.sum * b.max, a.max * b.sum);
    *atol = c * ((gamma + u + product) * s + (beta != 0.0 ? u * (max_c + s) : 0.0));
    *rtol = c * u_out;
}

static double unit_roundoff(int32_t dtype)
{
    return dtype == KP_F16 ? 0x1p-11 : 0x1p-24;
}

void blas_gemm_tolerance(const kp_call *call, double *atol, double *rtol)
{
    int batched = strcmp(call->desc->name, "blas.gemm_batched") == 0;
    int o = batched ? 1 : 0;
    int ta = (int)call->args[GEMM_TRANS_A].i, tb = (int)call->args[GEMM_TRANS_B].i;
    const kp_tensor *c = &call->args[GEMM_C].tensor, *a = &call->args[GEMM_A].tensor;
    int64_t m = c->shape[o], n = c->shape[o + 1], k = a->shape[o + 1 - ta];
    norms na = {0, 0}, nb = {0, 0};
    double mc = 0;
    for (int64_t bt = 0; bt < (batched ? c->shape[0] : 1); bt++) {
        view va = view_of(call, GEMM_A, o, o + 1, ta, bt);
        view vb = view_of(call, GEMM_B, o, o + 1, tb, bt);
        view vc = view_of(call, GEMM_C, o, o + 1, 0, bt);
        norms x = norms_of(&va, m, k, 1), y = norms_of(&vb, k, n, 0);
        na.max = fmax(na.max, x.max);
        na.sum = fmax(na.sum, x.sum);
        nb.max = fmax(nb.max, y.max);
        nb.sum = fmax(nb.sum, y.sum);
        mc = fmax(mc, norms_of(&vc, m, n, 1).max);
    }
    /* f16 inputs reach tc.gemm exact (no product error), and it accumulates in FP32. */
    const int f16 = a->dtype == KP_F16, tc = !batched && blas_routed_precision() != 0;
    const double u_out = unit_roundoff(a->dtype), u = f16 && tc ? 0x1p-24 : u_out;
    bound(u, u_out, k, call->args[GEMM_ALPHA].f, call->args[GEMM_BETA].f, na, nb, mc,
          tc && !f16 ? routed_product_error() : 0.0, atol, rtol);
}

void blas_gemv_tolerance(const kp_call *call, double *atol, double *rtol)
{
    const kp_tensor *x = &call->args[GEMV_X].tensor, *y = &call->args[GEMV_Y].tensor;
    int trans = (int)call->args[GEMV_TRANS].i;
    view va = view_of(call, GEMV_A, 0, 1, trans, 0);
    view vx = {call->args[GEMV_X].host, x->dtype, x->offset, x->strides[0], 0};
    view vy = {call->args[GEMV_Y].host, y->dtype, y->offset, y->strides[0], 0};
    int64_t rows = y->shape[0], cols = x->shape[0];
    const double u = unit_roundoff(x->dtype);
    bound(u, u, cols, call->args[GEMV_ALPHA].f, call->args[GEMV_BETA].f,
          norms_of(&va, rows, cols, 1), norms_of(&vx, cols, 1, 0), norms_of(&vy, rows, 1, 1).max,
          0.0, atol, rtol);
}
