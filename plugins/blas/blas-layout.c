/* SPDX-License-Identifier: Apache-2.0 */
/* Tensor views as BLAS matrices: layout, transpose, leading dimension and offset, validated. */
#include <limits.h>
#include <stdio.h>

#include "blas.h"

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

static const char *describe(const kp_tensor *t, char *buf, size_t size)
{
    return kp_tensor_describe(t, buf, size);
}

/*
 * Reads dimensions d0 (rows) and d1 (columns) of `t` as a matrix. A view is row-major when its
 * column stride is 1 (ld = row stride) and column-major when its row stride is 1 (ld = column
 * stride); a dimension of size 1 has no stride to speak of, so both can hold, and then the
 * layout of `prefer_col` wins so that no operand is transposed for nothing.
 */
static kp_status as_matrix(kp_launch *l, const char *name, const kp_tensor *t, int d0, int d1,
                           int prefer_col, blas_matrix *out)
{
    int64_t rows = t->shape[d0], cols = t->shape[d1], s0 = t->strides[d0], s1 = t->strides[d1];
    out->rows = rows;
    out->cols = cols;
    out->offset = t->offset;
    int row_ok = (cols <= 1 || s1 == 1) && (rows <= 1 || s0 >= cols);
    int col_ok = (rows <= 1 || s0 == 1) && (cols <= 1 || s1 >= rows);
    /* An empty matrix is never handed to CLBlast: any strides will do. */
    if (rows == 0 || cols == 0)
        row_ok = col_ok = 1;
    if (row_ok && (!col_ok || !prefer_col)) {
        out->col_major = 0;
        out->ld = max64(rows <= 1 ? cols : s0, 1);
        return KP_OK;
    }
    if (col_ok) {
        out->col_major = 1;
        out->ld = max64(cols <= 1 ? rows : s1, 1);
        return KP_OK;
    }
    if (s1 == 1)
        return blas_host->fail(l, KP_ERR_INVALID_ARG,
                               "%s: row stride %lld is smaller than the row length %lld (a "
                               "row-major matrix needs a leading dimension >= its columns)",
                               name, (long long)s0, (long long)cols);
    if (s0 == 1)
        return blas_host->fail(l, KP_ERR_INVALID_ARG,
                               "%s: column stride %lld is smaller than the column length %lld (a "
                               "column-major matrix needs a leading dimension >= its rows)",
                               name, (long long)s1, (long long)rows);
    return blas_host->fail(l, KP_ERR_INVALID_ARG,
                           "%s: strides (%lld, %lld) are not a matrix layout: one stride must be 1",
                           name, (long long)s0, (long long)s1);
}

/* The same matrix read in the other major order: rows and columns swap, the memory does not. */
static blas_matrix transposed(blas_matrix m)
{
    int64_t r = m.rows;
    m.rows = m.cols;
    m.cols = r;
    m.col_major = !m.col_major;
    return m;
}

/* CLBlast passes sizes, offsets and leading dimensions to its kernels as int. */
static kp_status fits_int(kp_launch *l, const char *name, const kp_tensor *t)
{
    if (kp_tensor_extent(t) <= INT_MAX)
        return KP_OK;
    char d[160];
    return blas_host->fail(l, KP_ERR_UNSUPPORTED,
                           "%s: %s reaches element %lld; CLBlast indexes with int (at most %d)",
                           name, describe(t, d, sizeof d), (long long)kp_tensor_extent(t), INT_MAX);
}

static kp_status check_trans(kp_launch *l, const char *name, int64_t v)
{
    if (v == 0 || v == 1)
        return KP_OK;
    return blas_host->fail(l, KP_ERR_INVALID_ARG, "%s: %lld is not 0 or 1", name, (long long)v);
}

static kp_status check_dtypes(kp_launch *l, const kp_tensor *first, const char *first_name,
                              const kp_tensor *t, const char *name, const char *all)
{
    if (t->dtype == first->dtype)
        return KP_OK;
    return blas_host->fail(
        l, KP_ERR_INVALID_ARG, "%s: dtype %s differs from %s's %s (%s must share one dtype)", name,
        kp_dtype_name((kp_dtype)t->dtype), first_name, kp_dtype_name((kp_dtype)first->dtype), all);
}

kp_status blas_check_f16(kp_launch *l, int32_t dtype, int tc)
{
    const kp_device_info *d = blas_host->device(l);
    if (dtype != KP_F16 || !d || d->type == KP_DEVICE_HOST || d->fp16)
        return KP_OK;
    if (tc)
        return blas_host->fail(l, KP_ERR_UNSUPPORTED,
                               "f16 needs cl_khr_fp16 (CLBlast's HGEMM) or tensor cores (tc.gemm, "
                               "NVIDIA sm_80+), and device \"%s\" (%s) has neither",
                               d->name, d->platform);
    return blas_host->fail(l, KP_ERR_UNSUPPORTED,
                           "f16 needs cl_khr_fp16, which device \"%s\" (%s) does not support",
                           d->name, d->platform);
}

static kp_status check_rank(kp_launch *l, const char *name, const kp_tensor *t, int want,
                            const char *shape)
{
    if (t->rank == want)
        return KP_OK;
    char d[160];
    return blas_host->fail(l, KP_ERR_INVALID_ARG, "%s: expected rank %d (%s), got %s", name, want,
                           shape, describe(t, d, sizeof d));
}

/* A or B stored in the other major order than C is handed to CLBlast transposed. */
static void to_layout(blas_matrix *m, int *trans, int col_major)
{
    if (m->col_major != col_major) {
        *m = transposed(*m);
        *trans = !*trans;
    }
}

static kp_status batch_stride(kp_launch *l, const char *name, const kp_tensor *t, int64_t batch,
                              int64_t *stride)
{
    if (t->shape[0] == batch) {
        *stride = batch > 1 ? t->strides[0] : 0;
        return KP_OK;
    }
    if (t->shape[0] == 1) { /* one matrix for every batch */
        *stride = 0;
        return KP_OK;
    }
    return blas_host->fail(l, KP_ERR_INVALID_ARG,
                           "%s: batch dimension %lld differs from C's %lld (give %lld, or 1 or "
                           "batch stride 0 to use one matrix for every batch)",
                           name, (long long)t->shape[0], (long long)batch, (long long)batch);
}

kp_status blas_plan_gemm(const kp_call *call, kp_launch *l, int batched, blas_gemm_plan *p)
{
    const kp_tensor *a = &call->args[GEMM_A].tensor, *b = &call->args[GEMM_B].tensor,
                    *c = &call->args[GEMM_C].tensor;
    int ta = (int)call->args[GEMM_TRANS_A].i, tb = (int)call->args[GEMM_TRANS_B].i;
    int want = batched ? 3 : 2, o = batched ? 1 : 0;
    char da[160], db[160], dc[160];
    kp_status st = check_trans(l, "trans_a", call->args[GEMM_TRANS_A].i);
    if (st == KP_OK)
        st = check_trans(l, "trans_b", call->args[GEMM_TRANS_B].i);
    if (st == KP_OK)
        st = check_rank(l, "A", a, want,
                        batched ? "[batch, M, K], or [batch, K, M] with trans_a"
                                : "[M, K], or [K, M] with trans_a");
    if (st == KP_OK)
        st = check_rank(l, "B", b, want,
                        batched ? "[batch, K, N], or [batch, N, K] with trans_b"
                                : "[K, N], or [N, K] with trans_b");
    if (st == KP_OK)
        st = check_rank(l, "C", c, want, batched ? "[batch, M, N]" : "[M, N]");
    if (st == KP_OK)
        st = check_dtypes(l, a, "A", b, "B", "A, B and C");
    if (st == KP_OK)
        st = check_dtypes(l, a, "A", c, "C", "A, B and C");
    /* blas.gemm's f16 products may run on tensor cores instead: blas_route_gemm, then
     * gemm_enqueue checks. */
    if (st == KP_OK && batched)
        st = blas_check_f16(l, a->dtype, 0);
    if (st != KP_OK)
        return st;

    int64_t m = c->shape[o], n = c->shape[o + 1];
    int64_t am = a->shape[o + ta], ak = a->shape[o + 1 - ta];
    int64_t bk = b->shape[o + tb], bn = b->shape[o + 1 - tb];
    if (am != m)
        return blas_host->fail(l, KP_ERR_INVALID_ARG,
                               "M mismatch: op(A) has %lld rows but C has %lld (A %s, trans_a %d; "
                               "C %s)",
                               (long long)am, (long long)m, describe(a, da, sizeof da), ta,
                               describe(c, dc, sizeof dc));
    if (bn != n)
        return blas_host->fail(l, KP_ERR_INVALID_ARG,
                               "N mismatch: op(B) has %lld columns but C has %lld (B %s, trans_b "
                               "%d; C %s)",
                               (long long)bn, (long long)n, describe(b, db, sizeof db), tb,
                               describe(c, dc, sizeof dc));
    if (ak != bk)
        return blas_host->fail(l, KP_ERR_INVALID_ARG,
                               "K mismatch: op(A) has %lld columns but op(B) has %lld rows (A %s, "
                               "trans_a %d; B %s, trans_b %d)",
                               (long long)ak, (long long)bk, describe(a, da, sizeof da), ta,
                               describe(b, db, sizeof db), tb);

    *p = (blas_gemm_plan){.m = m, .n = n, .k = ak, .batch = 1, .dtype = a->dtype};
    if (batched) {
        p->batch = c->shape[0];
        st = batch_stride(l, "A", a, p->batch, &p->stride_a);
        if (st == KP_OK)
            st = batch_stride(l, "B", b, p->batch, &p->stride_b);
        if (st != KP_OK)
            return st;
        p->stride_c = c->shape[0] > 1 ? c->strides[0] : 0;
    }
    st = as_matrix(l, "C", c, o, o + 1, 0, &p->c);
    if (st == KP_OK)
        st = as_matrix(l, "A", a, o, o + 1, p->c.col_major, &p->a);
    if (st == KP_OK)
        st = as_matrix(l, "B", b, o, o + 1, p->c.col_major, &p->b);
    if (st == KP_OK)
        st = fits_int(l, "A", a);
    if (st == KP_OK)
        st = fits_int(l, "B", b);
    if (st == KP_OK)
        st = fits_int(l, "C", c);
    if (st != KP_OK)
        return st;
    p->col_major = p->c.col_major;
    p->trans_a = ta;
    p->trans_b = tb;
    to_layout(&p->a, &p->trans_a, p->col_major);
    to_layout(&p->b, &p->trans_b, p->col_major);
    return KP_OK;
}

void blas_plan_swap(blas_gemm_plan *p)
{
    blas_matrix a = p->a;
    int64_t m = p->m, stride_a = p->stride_a, trans_a = p->trans_a;
    p->a = transposed(p->b);
    p->b = transposed(a);
    p->c = transposed(p->c);
    p->m = p->n;
    p->n = m;
    p->trans_a = p->trans_b;
    p->trans_b = (int)trans_a;
    p->stride_a = p->stride_b;
    p->stride_b = stride_a;
    p->col_major = !p->col_major;
}

static kp_status vector_inc(kp_launch *l, const char *name, const kp_tensor *t, int64_t len,
                            const char *why, int64_t *inc)
{
    char d[160];
    if (t->rank != 1 || t->shape[0] != len)
        return blas_host->fail(l, KP_ERR_INVALID_ARG, "%s: expected shape [%lld] (%s), got %s",
                               name, (long long)len, why, describe(t, d, sizeof d));
    if (len > 1 && t->strides[0] < 1)
        return blas_host->fail(l, KP_ERR_INVALID_ARG,
                               "%s: stride %lld is not >= 1 (CLBlast needs a positive increment)",
                               name, (long long)t->strides[0]);
    *inc = len > 1 ? t->strides[0] : 1;
    return KP_OK;
}

kp_status blas_plan_gemv(const kp_call *call, kp_launch *l, blas_gemv_plan *p)
{
    const kp_tensor *a = &call->args[GEMV_A].tensor, *x = &call->args[GEMV_X].tensor,
                    *y = &call->args[GEMV_Y].tensor;
    kp_status st = check_trans(l, "trans", call->args[GEMV_TRANS].i);
    if (st == KP_OK)
        st = check_rank(l, "A", a, 2, "[M, N]");
    if (st == KP_OK)
        st = check_dtypes(l, a, "A", x, "x", "A, x and y");
    if (st == KP_OK)
        st = check_dtypes(l, a, "A", y, "y", "A, x and y");
    if (st == KP_OK)
        st = blas_check_f16(l, a->dtype, 0);
    if (st != KP_OK)
        return st;
    int trans = (int)call->args[GEMV_TRANS].i;
    *p = (blas_gemv_plan){.m = a->shape[0], .n = a->shape[1], .trans = trans, .dtype = a->dtype};
    p->len_x = trans ? p->m : p->n;
    p->len_y = trans ? p->n : p->m;
    st = vector_inc(l, "x", x, p->len_x, trans ? "A's rows, trans 1" : "A's columns", &p->x_inc);
    if (st == KP_OK)
        st =
            vector_inc(l, "y", y, p->len_y, trans ? "A's columns, trans 1" : "A's rows", &p->y_inc);
    if (st == KP_OK)
        st = as_matrix(l, "A", a, 0, 1, 0, &p->a);
    if (st == KP_OK)
        st = fits_int(l, "A", a);
    if (st == KP_OK)
        st = fits_int(l, "x", x);
    if (st == KP_OK)
        st = fits_int(l, "y", y);
    p->col_major = p->a.col_major;
    p->x_offset = x->offset;
    p->y_offset = y->offset;
    return st;
}
