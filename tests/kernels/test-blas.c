/* SPDX-License-Identifier: Apache-2.0 */
/* The blas plugin on PoCL: GEMM, batched GEMM and GEMV against host math in this file, argument
 * checks, the queue's order, with the route the device resolves (`--route NAME` forces one: the
 * suite runs clblast and host-blas-mapped too), and (with --tuning) CLBlast parameters from the
 * manifest. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test-util.h"

/* One runtime with CLBlast's own parameters for most tests (CLBlast compiles are slow on PoCL:
 * every new parameter set or context costs seconds), and one whose manifest overrides some. The
 * manifests' entries match any device (`match: {}`), so the tests hold on whichever device they
 * run (test_device()). */
static kp_runtime *rt;
static test_log rt_log;
static kp_runtime *tuned;
static test_log tuned_log;

static const char *const tuned_manifest =
    "kernelport: 1\n"
    "tuning:\n"
    "  - match: {}\n"
    "    kernels:\n"
    "      blas.gemm: { route: clblast, clblast.Xgemm: { MWG: 64, NWG: 64 },\n"
    "                   clblast.GemmRoutine.XGEMM_MIN_INDIRECT_SIZE: 64 }\n"
    "      blas.gemm_batched: { route: clblast, clblast.Xgemm: { MWG: 64, NWG: 64 },\n"
    "                           clblast.GemmRoutine.XGEMM_MIN_INDIRECT_SIZE: 64 }\n";

static kp_runtime *open_runtime(const char *manifest, test_log *log)
{
    kp_runtime_options o =
        test_options(test_build_path("lib/kernelport/plugins"), test_device(), log);
    o.manifest_path = manifest;
    o.log_level = KP_LOG_INFO; /* warnings and the plugin's override reports, not debug noise */
    kp_runtime *r = NULL;
    kp_status st = kp_runtime_create(&o, &r);
    if (st != KP_OK)
        fprintf(stderr, "kp_runtime_create: %s\n", kp_last_error(NULL));
    assert_int_equal(st, KP_OK);
    return r;
}

static kp_kernel *find(kp_runtime *r, const char *name)
{
    kp_kernel *k = NULL;
    assert_int_equal(kp_kernel_find(r, name, &k), KP_OK);
    return k;
}

/* ---- matrices: storage, views, host math ---------------------------------------------------- */

/* A stored matrix: rows x cols viewed in `storage` at `offset` with leading dimension `ld`. */
typedef struct mat {
    int64_t rows, cols, ld, offset;
    int col_major;
} mat;

static mat row_major(int64_t rows, int64_t cols)
{
    return (mat){rows, cols, cols > 0 ? cols : 1, 0, 0};
}

static mat col_major(int64_t rows, int64_t cols)
{
    return (mat){rows, cols, rows > 0 ? rows : 1, 0, 1};
}

static mat padded(mat m, int64_t pad, int64_t offset)
{
    m.ld += pad;
    m.offset = offset;
    return m;
}

static int64_t at(const mat *m, int64_t i, int64_t j)
{
    return m->offset + (m->col_major ? i + j * m->ld : i * m->ld + j);
}

/* Storage elements: the view plus some slack, so stray writes past it show. */
static size_t storage(const mat *m)
{
    return (size_t)(m->offset + (m->col_major ? m->cols : m->rows) * m->ld + 7);
}

static kp_tensor tensor(kp_buffer *b, const mat *m)
{
    kp_tensor t = kp_tensor_2d(b, KP_F32, m->rows, m->cols);
    t.offset = m->offset;
    t.strides[0] = m->col_major ? 1 : m->ld;
    t.strides[1] = m->col_major ? m->ld : 1;
    return t;
}

static kp_buffer *upload(kp_runtime *r, const float *data, size_t n)
{
    kp_buffer *b = NULL;
    assert_int_equal(kp_buffer_create(r, n * sizeof(float), &b), KP_OK);
    assert_int_equal(kp_buffer_write(r, b, 0, n * sizeof(float), data), KP_OK);
    return b;
}

static float *download(kp_runtime *r, kp_buffer *b, size_t n)
{
    float *out = malloc(n * sizeof *out);
    assert_non_null(out);
    assert_int_equal(kp_buffer_read(r, b, 0, n * sizeof(float), out), KP_OK);
    return out;
}

static float *random_storage(size_t n, unsigned seed)
{
    float *x = malloc(n * sizeof *x);
    assert_non_null(x);
    test_fill_nonzero(x, n, seed);
    return x;
}

/* Frees NULL-terminated lists of host arrays and of buffers. */
static void free_all(void *first, ...)
{
    va_list ap;
    va_start(ap, first);
    for (void *p = first; p; p = va_arg(ap, void *))
        free(p);
    va_end(ap);
}

static void destroy_all(kp_runtime *r, kp_buffer *first, ...)
{
    va_list ap;
    va_start(ap, first);
    for (kp_buffer *b = first; b; b = va_arg(ap, kp_buffer *))
        kp_buffer_destroy(r, b);
    va_end(ap);
}

/* Elements inside the view within tol of want; every other element bit-identical. */
static void expect_matrix(const float *got, const float *want, size_t n, const mat *m, double tol,
                          const char *what)
{
    char *inside = calloc(n, 1);
    assert_non_null(inside);
    for (int64_t i = 0; i < m->rows; i++)
        for (int64_t j = 0; j < m->cols; j++)
            inside[at(m, i, j)] = 1;
    for (size_t e = 0; e < n; e++) {
        int ok = inside[e] ? fabs((double)got[e] - (double)want[e]) <= tol ||
                                 (isnan(got[e]) && isnan(want[e]))
                           : memcmp(&got[e], &want[e], sizeof(float)) == 0;
        if (!ok) {
            const char *where = inside[e] ? "inside" : "outside";
            free(inside);
            fail_msg("%s: element %zu (%s the view) is %.9g, expected %.9g", what, e, where,
                     (double)got[e], (double)want[e]);
        }
    }
    free(inside);
}

/* want = alpha op(A) op(B) + beta want (beta 0 ignores want), in double. a and b describe the
 * tensors as given: op(A) is A, or A^T with ta. */
static void host_gemm(const float *a, const mat *ma, int ta, const float *b, const mat *mb, int tb,
                      float *c, const mat *mc, int64_t k, double alpha, double beta)
{
    for (int64_t i = 0; i < mc->rows; i++)
        for (int64_t j = 0; j < mc->cols; j++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++)
                s += (double)a[ta ? at(ma, p, i) : at(ma, i, p)] *
                     (double)b[tb ? at(mb, j, p) : at(mb, p, j)];
            float *w = &c[at(mc, i, j)];
            *w = (float)(alpha * s + (beta != 0.0 ? beta * (double)*w : 0.0));
        }
}

typedef struct gemm_case {
    mat a, b, c; /* as given to the kernel */
    int ta, tb;
    double alpha, beta;
    int pass_scalars; /* 0: rely on the defaults alpha 1, beta 0, trans 0 */
} gemm_case;

static void check_gemm(kp_runtime *r, const gemm_case *g, unsigned seed, const char *what)
{
    kp_kernel *k = find(r, "blas.gemm");
    int64_t kk = g->ta ? g->a.rows : g->a.cols;
    size_t na = storage(&g->a), nb = storage(&g->b), nc = storage(&g->c);
    float *a = random_storage(na, seed), *b = random_storage(nb, seed + 1);
    float *c = random_storage(nc, seed + 2), *want = malloc(nc * sizeof *want);
    assert_non_null(want);
    memcpy(want, c, nc * sizeof *c);
    host_gemm(a, &g->a, g->ta, b, &g->b, g->tb, want, &g->c, kk, g->alpha, g->beta);
    kp_buffer *ba = upload(r, a, na), *bb = upload(r, b, nb), *bc = upload(r, c, nc);
    kp_arg args[] = {KP_ARG_TENSOR("A", tensor(ba, &g->a)), KP_ARG_TENSOR("B", tensor(bb, &g->b)),
                     KP_ARG_TENSOR("C", tensor(bc, &g->c)), KP_ARG_FLOAT("alpha", g->alpha),
                     KP_ARG_FLOAT("beta", g->beta),         KP_ARG_INT("trans_a", g->ta),
                     KP_ARG_INT("trans_b", g->tb)};
    kp_status st = kp_kernel_launch(r, k, args, g->pass_scalars ? 7 : 3, NULL);
    if (st != KP_OK)
        fail_msg("%s: %s", what, kp_last_error(r));
    float *got = download(r, bc, nc);
    expect_matrix(got, want, nc, &g->c, 1e-5 * (double)(kk + 1), what);
    destroy_all(r, ba, bb, bc, NULL);
    free_all(a, b, c, want, got, NULL);
}

/* ---- GEMM ------------------------------------------------------------------------------------ */

/* Every combination of an operand stored transposed (a view) and trans_a/trans_b, with C in
 * both layouts: the view and the flag compose. */
static void check_transposes(int64_t m, int64_t n, int64_t k)
{
    for (int combo = 0; combo < 32; combo++) {
        int a_view = combo & 1, ta = (combo >> 1) & 1, b_view = (combo >> 2) & 1;
        int tb = (combo >> 3) & 1, c_col = (combo >> 4) & 1;
        int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
        gemm_case g = {.a = a_view ? col_major(ar, ac) : row_major(ar, ac),
                       .b = b_view ? col_major(br, bc) : row_major(br, bc),
                       .c = c_col ? col_major(m, n) : row_major(m, n),
                       .ta = ta,
                       .tb = tb,
                       .alpha = 1.0,
                       .beta = 0.5,
                       .pass_scalars = 1};
        char what[128];
        snprintf(what, sizeof what, "%lldx%lldx%lld: A %s trans_a %d, B %s trans_b %d, C %s",
                 (long long)m, (long long)n, (long long)k, a_view ? "col" : "row", ta,
                 b_view ? "col" : "row", tb, c_col ? "col" : "row");
        check_gemm(rt, &g, (unsigned)combo + 1, what);
    }
}

static void test_gemm_transposes(void **state)
{
    check_transposes(13, 11, 7);
}

/* Offsets, padded leading dimensions, alpha and beta, non-square, 1 and prime sizes. */
static void test_gemm_shapes_offsets_scalars(void **state)
{
    static const int64_t sizes[][3] = {{1, 1, 1}, {31, 37, 41}, {1, 17, 1}, {17, 1, 5}, {2, 3, 97}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        int64_t m = sizes[i][0], n = sizes[i][1], k = sizes[i][2];
        gemm_case g = {.a = padded(row_major(m, k), 3, 5),
                       .b = padded(col_major(k, n), 2, 1),
                       .c = padded(row_major(m, n), 4, 9),
                       .alpha = -0.75,
                       .beta = 1.5,
                       .pass_scalars = 1};
        check_gemm(rt, &g, 100 + (unsigned)i, "offsets and padding");
        g.pass_scalars = 0; /* defaults: alpha 1, beta 0 */
        g.alpha = 1.0;
        g.beta = 0.0;
        check_gemm(rt, &g, 200 + (unsigned)i, "default alpha and beta");
    }
}

/* BLAS semantics: beta = 0 ignores C, so NaN in C must not survive (CLBlast honours it). */
static void expect_beta_zero_ignores_nan(kp_runtime *r, int64_t m, int64_t n, int64_t k)
{
    kp_kernel *kern = find(r, "blas.gemm");
    size_t na = (size_t)(m * k), nb = (size_t)(k * n), nc = (size_t)(m * n);
    float *a = random_storage(na, 7), *b = random_storage(nb, 8), *c = malloc(nc * sizeof *c);
    assert_non_null(c);
    for (size_t i = 0; i < nc; i++)
        c[i] = NAN;
    kp_buffer *ba = upload(r, a, na), *bb = upload(r, b, nb), *bc = upload(r, c, nc);
    kp_arg args[] = {KP_ARG_TENSOR("A", kp_tensor_2d(ba, KP_F32, m, k)),
                     KP_ARG_TENSOR("B", kp_tensor_2d(bb, KP_F32, k, n)),
                     KP_ARG_TENSOR("C", kp_tensor_2d(bc, KP_F32, m, n))};
    assert_int_equal(kp_kernel_launch(r, kern, args, 3, NULL), KP_OK);
    float *got = download(r, bc, nc);
    for (size_t i = 0; i < nc; i++)
        if (isnan(got[i]))
            fail_msg("beta 0, %lldx%lldx%lld: element %zu is NaN", (long long)m, (long long)n,
                     (long long)k, i);
    destroy_all(r, ba, bb, bc, NULL);
    free_all(a, b, c, got, NULL);
}

static void test_gemm_beta_zero_ignores_nan(void **state)
{
    expect_beta_zero_ignores_nan(rt, 19, 23, 29); /* CLBlast's direct kernel */
}

/* One row or one column, small and large enough for the host route to run them as a GEMV (#30:
 * over 10^6 multiply-adds, or 2^18 with over 1200 outputs): every layout and transpose, padded
 * leading dimensions with alpha and beta, and beta 0 over NaN. */
static void test_gemm_one_row_or_column(void **state)
{
    static const int64_t sizes[][3] = {{1, 11, 7},      {13, 1, 7},      {1, 1, 7},
                                       {1, 1009, 1009}, {1009, 1, 1009}, {1, 1, 1000003},
                                       {1, 1283, 211},  {1283, 1, 211}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        int64_t m = sizes[i][0], n = sizes[i][1], k = sizes[i][2];
        check_transposes(m, n, k);
        for (int combo = 0; combo < 4; combo++) {
            int ta = combo & 1, tb = combo >> 1;
            gemm_case g = {.a = padded(ta ? col_major(m, k) : row_major(k, m), 3, 2),
                           .b = padded(tb ? row_major(k, n) : col_major(n, k), 2, 5),
                           .c = padded(combo & 1 ? col_major(m, n) : row_major(m, n), 4, 3),
                           .ta = !ta,
                           .tb = !tb,
                           .alpha = -0.75,
                           .beta = 1.5,
                           .pass_scalars = 1};
            check_gemm(rt, &g, 300 + (unsigned)(4 * i) + (unsigned)combo, "padded, transposed");
        }
        expect_beta_zero_ignores_nan(rt, m, n, k);
    }
}

/* K = 0: C = beta C, beta 0 clears even NaN; M = 0 and N = 0 do nothing. */
static void test_gemm_empty_dimensions(void **state)
{
    kp_kernel *k = find(rt, "blas.gemm");
    mat mc = padded(row_major(5, 6), 2, 3);
    size_t nc = storage(&mc);
    float *c = random_storage(nc, 31), *want = malloc(nc * sizeof *want);
    assert_non_null(want);
    c[at(&mc, 2, 3)] = NAN;
    kp_buffer *ba, *bb, *bc = upload(rt, c, nc);
    assert_int_equal(kp_buffer_create(rt, 16, &ba), KP_OK);
    assert_int_equal(kp_buffer_create(rt, 16, &bb), KP_OK);
    for (int pass = 0; pass < 2; pass++) {
        double beta = pass == 0 ? 0.5 : 0.0;
        memcpy(want, c, nc * sizeof *c);
        for (int64_t i = 0; i < 5; i++)
            for (int64_t j = 0; j < 6; j++) {
                float *w = &want[at(&mc, i, j)];
                *w = beta == 0.0 ? 0.0f : (float)(beta * *w);
            }
        kp_arg args[] = {KP_ARG_TENSOR("A", kp_tensor_2d(ba, KP_F32, 5, 0)),
                         KP_ARG_TENSOR("B", kp_tensor_2d(bb, KP_F32, 0, 6)),
                         KP_ARG_TENSOR("C", tensor(bc, &mc)), KP_ARG_FLOAT("beta", beta)};
        assert_int_equal(kp_kernel_launch(rt, k, args, 4, NULL), KP_OK);
        float *got = download(rt, bc, nc);
        expect_matrix(got, want, nc, &mc, 0.0, pass == 0 ? "K = 0, beta 0.5" : "K = 0, beta 0");
        memcpy(c, got, nc * sizeof *c);
        free(got);
    }
    /* M = 0 and N = 0: valid, nothing to do, C untouched. */
    kp_arg m0[] = {KP_ARG_TENSOR("A", kp_tensor_2d(ba, KP_F32, 0, 3)),
                   KP_ARG_TENSOR("B", kp_tensor_2d(bb, KP_F32, 3, 1)),
                   KP_ARG_TENSOR("C", kp_tensor_2d(bc, KP_F32, 0, 1))};
    assert_int_equal(kp_kernel_launch(rt, k, m0, 3, NULL), KP_OK);
    kp_arg n0[] = {KP_ARG_TENSOR("A", kp_tensor_2d(ba, KP_F32, 2, 1)),
                   KP_ARG_TENSOR("B", kp_tensor_2d(bb, KP_F32, 1, 0)),
                   KP_ARG_TENSOR("C", kp_tensor_2d(bc, KP_F32, 2, 0))};
    assert_int_equal(kp_kernel_launch(rt, k, n0, 3, NULL), KP_OK);
    float *got = download(rt, bc, nc);
    assert_memory_equal(got, c, nc * sizeof *c);
    free(got);
    destroy_all(rt, ba, bb, bc, NULL);
    free(c);
    free(want);
}

/* ---- batched GEMM ------------------------------------------------------------------------------
 */

/* C[b] = alpha A[b] B[b] + beta C[b] with A [batch or 1, m, k] at batch stride sa (0 broadcasts),
 * B [batch, k, n] and C [batch, m, n], all of one layout (col: column-major matrices). */
static void check_batched(kp_runtime *r, int64_t batch, int64_t m, int64_t n, int64_t k, int64_t sa,
                          int col, unsigned seed)
{
    kp_kernel *kern = find(r, "blas.gemm_batched");
    mat ma = col ? col_major(m, k) : row_major(m, k), mb = col ? col_major(k, n) : row_major(k, n);
    mat mc = col ? col_major(m, n) : row_major(m, n);
    int64_t sb = k * n, sc = m * n;
    size_t na = (size_t)(sa * (batch - 1) + m * k), nb = (size_t)(sb * batch),
           nc = (size_t)(sc * batch);
    float *a = random_storage(na, seed), *b = random_storage(nb, seed + 1);
    float *c = random_storage(nc, seed + 2), *want = malloc(nc * sizeof *want);
    assert_non_null(want);
    memcpy(want, c, nc * sizeof *c);
    for (int64_t i = 0; i < batch; i++)
        host_gemm(a + sa * i, &ma, 0, b + sb * i, &mb, 0, want + sc * i, &mc, k, 0.5, -1.0);
    kp_buffer *ba = upload(r, a, na), *bb = upload(r, b, nb), *bc = upload(r, c, nc);
    kp_tensor ta = kp_tensor_3d(ba, KP_F32, batch, m, k),
              tb = kp_tensor_3d(bb, KP_F32, batch, k, n);
    kp_tensor tc = kp_tensor_3d(bc, KP_F32, batch, m, n);
    kp_tensor *ts[] = {&ta, &tb, &tc};
    for (int t = 0; t < 3 && col; t++) { /* column-major matrices within each batch */
        ts[t]->strides[1] = 1;
        ts[t]->strides[2] = ts[t]->shape[1];
    }
    ta.strides[0] = sa;
    kp_arg args[] = {KP_ARG_TENSOR("A", ta), KP_ARG_TENSOR("B", tb), KP_ARG_TENSOR("C", tc),
                     KP_ARG_FLOAT("alpha", 0.5), KP_ARG_FLOAT("beta", -1.0)};
    kp_status st = kp_kernel_launch(r, kern, args, 5, NULL);
    if (st != KP_OK)
        fail_msg("batched: %s", kp_last_error(r));
    float *got = download(r, bc, nc);
    mat all = row_major(1, (int64_t)nc);
    char what[96];
    snprintf(what, sizeof what, "batch %lld, %lldx%lldx%lld, A stride %lld, %s", (long long)batch,
             (long long)m, (long long)n, (long long)k, (long long)sa, col ? "col" : "row");
    expect_matrix(got, want, nc, &all, 1e-5 * (double)(k + 1), what);
    destroy_all(r, ba, bb, bc, NULL);
    free_all(a, b, c, want, got, NULL);
}

/* K = 0 over 3 batches of C [4, 5] at batch stride 23 (padded apart): each is scaled by beta,
 * the padding between them untouched. */
static void check_batched_k0(void)
{
    enum { batch = 3, m = 4, n = 5, stride = 23 };
    size_t nc = stride * batch;
    float *c = random_storage(nc, 45), *want = malloc(nc * sizeof *want);
    assert_non_null(want);
    for (size_t i = 0; i < nc; i++)
        want[i] = i % stride < m * n ? 0.5f * c[i] : c[i];
    kp_buffer *ba, *bb, *bc = upload(rt, c, nc);
    assert_int_equal(kp_buffer_create(rt, 16, &ba), KP_OK);
    assert_int_equal(kp_buffer_create(rt, 16, &bb), KP_OK);
    kp_tensor tc = kp_tensor_3d(bc, KP_F32, batch, m, n);
    tc.strides[0] = stride;
    kp_arg args[] = {KP_ARG_TENSOR("A", kp_tensor_3d(ba, KP_F32, batch, m, 0)),
                     KP_ARG_TENSOR("B", kp_tensor_3d(bb, KP_F32, batch, 0, n)),
                     KP_ARG_TENSOR("C", tc), KP_ARG_FLOAT("beta", 0.5)};
    assert_int_equal(kp_kernel_launch(rt, find(rt, "blas.gemm_batched"), args, 4, NULL), KP_OK);
    float *got = download(rt, bc, nc);
    mat all = row_major(1, (int64_t)nc);
    expect_matrix(got, want, nc, &all, 0.0, "batched, K = 0, beta 0.5");
    destroy_all(rt, ba, bb, bc, NULL);
    free_all(c, want, got, NULL);
}

static void test_gemm_batched(void **state)
{
    check_batched(rt, 1, 9, 10, 11, 9 * 11, 0, 41);
    check_batched(rt, 7, 13, 11, 17, 13 * 17, 0, 42);
    check_batched(rt, 7, 13, 11, 17, 0, 0, 43); /* one A for every batch */
    check_batched(rt, 5, 6, 7, 8, 0, 1, 44);
    check_batched_k0();
}

/* ---- GEMV ------------------------------------------------------------------------------------ */

static void check_gemv(mat ma, int trans, int64_t incx, int64_t incy, double beta, unsigned seed)
{
    kp_kernel *k = find(rt, "blas.gemv");
    int64_t lx = trans ? ma.rows : ma.cols, ly = trans ? ma.cols : ma.rows;
    size_t na = storage(&ma), nx = (size_t)(lx * incx + 3), ny = (size_t)(ly * incy + 3);
    float *a = random_storage(na, seed), *x = random_storage(nx, seed + 1);
    float *y = random_storage(ny, seed + 2), *want = malloc(ny * sizeof *want);
    assert_non_null(want);
    memcpy(want, y, ny * sizeof *y);
    for (int64_t i = 0; i < ly; i++) {
        double s = 0;
        for (int64_t j = 0; j < lx; j++)
            s += (double)a[trans ? at(&ma, j, i) : at(&ma, i, j)] * (double)x[1 + j * incx];
        float *w = &want[2 + i * incy];
        *w = (float)(0.75 * s + (beta != 0.0 ? beta * (double)*w : 0.0));
    }
    kp_buffer *ba = upload(rt, a, na), *bx = upload(rt, x, nx), *by = upload(rt, y, ny);
    kp_tensor tx = kp_tensor_1d(bx, KP_F32, lx), ty = kp_tensor_1d(by, KP_F32, ly);
    tx.offset = 1;
    tx.strides[0] = incx;
    ty.offset = 2;
    ty.strides[0] = incy;
    kp_arg args[] = {KP_ARG_TENSOR("A", tensor(ba, &ma)),
                     KP_ARG_TENSOR("x", tx),
                     KP_ARG_TENSOR("y", ty),
                     KP_ARG_FLOAT("alpha", 0.75),
                     KP_ARG_FLOAT("beta", beta),
                     KP_ARG_INT("trans", trans)};
    kp_status st = kp_kernel_launch(rt, k, args, 6, NULL);
    if (st != KP_OK)
        fail_msg("gemv: %s", kp_last_error(rt));
    float *got = download(rt, by, ny);
    mat vy = {ly, 1, incy, 2, 0};
    expect_matrix(got, want, ny, &vy, 1e-5 * (double)(lx + 1), "gemv");
    destroy_all(rt, ba, bx, by, NULL);
    free_all(a, x, y, want, got, NULL);
}

static void test_gemv_orientations(void **state)
{
    check_gemv(row_major(37, 29), 0, 2, 3, -0.5, 51);
    check_gemv(row_major(37, 29), 1, 3, 2, 0.0, 52);
    check_gemv(padded(col_major(23, 31), 4, 2), 0, 1, 1, 1.25, 53);
    check_gemv(padded(col_major(23, 31), 4, 2), 1, 2, 5, 0.0, 54);
    check_gemv(row_major(1, 1), 0, 1, 1, 0.0, 55);
    check_gemv(row_major(7, 0), 0, 1, 3, 0.0, 56); /* empty x: y = beta y = 0 */
    check_gemv(row_major(7, 0), 1, 1, 1, 2.0, 57); /* empty y: nothing */
}

/* ---- verification and precision ----------------------------------------------------------------
 */

static void verify_report(void *user, const kp_verify_result *r)
{
    if (!r->passed)
        fprintf(stderr, "%s %s %s: max abs err %g > atol %g\n", r->kernel, r->size, r->output,
                r->max_abs_err, r->atol);
}

/* Counts the passing checks of a verification into *(int *)user. */
static void count_checks(void *user, const kp_verify_result *r)
{
    verify_report(NULL, r);
    *(int *)user += r->passed;
}

static void test_verify_all_kernels(void **state)
{
    static const char *const names[] = {"blas.gemm", "blas.gemm_batched", "blas.gemv"};
    for (size_t i = 0; i < 3; i++) {
        kp_status st = kp_kernel_verify(rt, find(rt, names[i]), NULL, 1, verify_report, NULL);
        if (st != KP_OK)
            fail_msg("verify %s: %s", names[i], kp_last_error(rt));
    }
}

/* Sizes the sample function builds beyond its lists: "MxNxK:xy" picks the stored orientation
 * (a transposed A and B here, each in its own layout), an "f16-" size asks for f16 operands
 * (refused here, where neither cl_khr_fp16 nor tensor cores exist), and a malformed one is not
 * found. */
static void test_verify_parametric_sizes(void **state)
{
    kp_kernel *k = find(rt, "blas.gemm");
    int checks = 0;
    assert_int_equal(kp_kernel_verify(rt, k, "13x7x5:tt", 2, count_checks, &checks), KP_OK);
    assert_int_equal(kp_kernel_verify(rt, k, "3x1x29:nt", 3, count_checks, &checks), KP_OK);
    assert_int_equal(checks, 2);
    assert_int_equal(kp_kernel_verify(rt, k, "f16-prime", 4, count_checks, &checks),
                     KP_ERR_UNSUPPORTED);
    assert_non_null(strstr(kp_last_error(rt), "cl_khr_fp16"));
    assert_int_equal(kp_kernel_verify(rt, k, "5x5x5:nx", 5, count_checks, &checks),
                     KP_ERR_NOT_FOUND);
    assert_int_equal(checks, 2);
}

static void test_f16_unsupported_names_device(void **state)
{
    kp_device_info dev = {.struct_size = sizeof dev};
    assert_int_equal(kp_runtime_device(rt, &dev, NULL), KP_OK);
    assert_int_equal(dev.fp16, 0); /* PoCL on this CPU: no cl_khr_fp16 */
    kp_buffer *b;
    assert_int_equal(kp_buffer_create(rt, 64, &b), KP_OK);
    kp_tensor t = kp_tensor_2d(b, KP_F16, 2, 2);
    kp_arg args[] = {KP_ARG_TENSOR("A", t), KP_ARG_TENSOR("B", t), KP_ARG_TENSOR("C", t)};
    args[2].tensor.offset = 8;
    assert_int_equal(kp_kernel_launch(rt, find(rt, "blas.gemm"), args, 3, NULL),
                     KP_ERR_UNSUPPORTED);
    /* tc.gemm, the other way to run f16, declined too (no tensor cores here). */
    assert_non_null(strstr(kp_last_error(rt), "cl_khr_fp16"));
    assert_non_null(strstr(kp_last_error(rt), "tc.gemm"));
    assert_non_null(strstr(kp_last_error(rt), dev.name));
    char path[512];
    assert_int_equal(kp_kernel_describe(rt, find(rt, "blas.gemm"), path, sizeof path), KP_OK);
    assert_non_null(strstr(path, "f16: unsupported"));
    kp_buffer_destroy(rt, b);
}

/* ---- rejected before CLBlast is called ----------------------------------------------------------
 */

typedef struct bad_call {
    kp_tensor a, b, c;
    int64_t ta;
    const char *message; /* the exact message after "kernel blas.gemm: " */
} bad_call;

static void test_rejects_before_clblast(void **state)
{
    kp_kernel *k = find(rt, "blas.gemm");
    float c0[64];
    test_fill(c0, 64, 77);
    kp_buffer *ba = upload(rt, c0, 64), *bb = upload(rt, c0, 64), *bc = upload(rt, c0, 64);
    kp_buffer *bh;
    assert_int_equal(kp_buffer_create(rt, 64, &bh), KP_OK);
    kp_tensor a34 = kp_tensor_2d(ba, KP_F32, 3, 4), b45 = kp_tensor_2d(bb, KP_F32, 4, 5);
    kp_tensor c35 = kp_tensor_2d(bc, KP_F32, 3, 5), strided = a34, short_ld = a34;
    strided.strides[0] = 3;
    strided.strides[1] = 2;
    short_ld.strides[0] = 2;
    bad_call bad[] = {
        {a34, b45, kp_tensor_2d(bc, KP_F32, 4, 5), 0,
         "M mismatch: op(A) has 3 rows but C has 4 (A f32[3, 4], trans_a 0; C f32[4, 5])"},
        {a34, b45, kp_tensor_2d(bc, KP_F32, 3, 6), 0,
         "N mismatch: op(B) has 5 columns but C has 6 (B f32[4, 5], trans_b 0; C f32[3, 6])"},
        {a34, kp_tensor_2d(bb, KP_F32, 3, 5), c35, 0,
         "K mismatch: op(A) has 4 columns but op(B) has 3 rows (A f32[3, 4], trans_a 0; B f32[3, "
         "5], trans_b 0)"},
        {a34, b45, c35, 1,
         "M mismatch: op(A) has 4 rows but C has 3 (A f32[3, 4], trans_a 1; C f32[3, 5])"},
        {strided, b45, c35, 0, "A: strides (3, 2) are not a matrix layout: one stride must be 1"},
        {short_ld, b45, c35, 0,
         "A: row stride 2 is smaller than the row length 4 (a row-major matrix needs a leading "
         "dimension >= its columns)"},
        {a34, kp_tensor_2d(bh, KP_F16, 4, 5), c35, 0,
         "B: dtype f16 differs from A's f32 (A, B and C must share one dtype)"},
        {kp_tensor_3d(ba, KP_F32, 1, 3, 4), b45, c35, 0,
         "A: expected rank 2 ([M, K], or [K, M] with trans_a), got f32[1, 3, 4]"},
        {a34, b45, c35, 2, "trans_a: 2 is not 0 or 1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kp_arg args[] = {KP_ARG_TENSOR("A", bad[i].a), KP_ARG_TENSOR("B", bad[i].b),
                         KP_ARG_TENSOR("C", bad[i].c), KP_ARG_INT("trans_a", bad[i].ta)};
        assert_int_equal(kp_kernel_launch(rt, k, args, 4, NULL), KP_ERR_INVALID_ARG);
        char want[400];
        snprintf(want, sizeof want, "kernel blas.gemm: %s", bad[i].message);
        assert_string_equal(kp_last_error(rt), want);
    }
    float *got = download(rt, bc, 64);
    assert_memory_equal(got, c0, sizeof c0); /* nothing reached C */
    free(got);
    /* GEMV: an increment of 0 is refused too. */
    kp_tensor x = kp_tensor_1d(bb, KP_F32, 4), y = kp_tensor_1d(bc, KP_F32, 3);
    x.strides[0] = 0;
    kp_arg gv[] = {KP_ARG_TENSOR("A", a34), KP_ARG_TENSOR("x", x), KP_ARG_TENSOR("y", y)};
    assert_int_equal(kp_kernel_launch(rt, find(rt, "blas.gemv"), gv, 3, NULL), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt), "kernel blas.gemv: x: stride 0 is not >= 1 (CLBlast "
                                           "needs a positive increment)");
    destroy_all(rt, ba, bb, bc, bh, NULL);
}

static size_t tunable_index(kp_runtime *r, kp_kernel *k, const char *name);

/* ---- routes: CLBlast or the host's OpenBLAS -------------------------------------------------- */

/* The route each run of this program asks for (--route NAME; auto without), and the manifest that
 * asks for it. */
static const char *route = "auto";

static const char *route_manifest(const char *name)
{
    static char text[320];
    snprintf(text, sizeof text,
             "kernelport: 1\ntuning:\n  - match: {}\n    kernels:\n"
             "      blas.gemm: { route: %s }\n      blas.gemm_batched: { route: %s }\n"
             "      blas.gemv: { route: %s }\n",
             name, name, name);
    return test_write_tmp("route.yaml", text);
}

/* The route a kernel resolved to: clblast when asked for, off CPU devices under auto, and always
 * without OpenBLAS; otherwise a host route (host-blas where the device runs native kernels, which
 * the test does not ask OpenCL: either is right). */
static void test_route_resolved(void **state)
{
    kp_device_info d = {.struct_size = sizeof d};
    assert_int_equal(kp_runtime_device(rt, &d, NULL), KP_OK);
    int host = strcmp(route, "clblast") != 0 && (d.type == KP_DEVICE_CPU || strcmp(route, "auto"));
#ifndef KP_HAVE_OPENBLAS
    host = 0;
#endif
    static const char *const names[] = {"blas.gemm", "blas.gemm_batched", "blas.gemv"};
    for (size_t i = 0; i < 3; i++) {
        kp_kernel *k = find(rt, names[i]);
        kp_tuning_info info = {.struct_size = sizeof info};
        assert_int_equal(kp_kernel_tuning(rt, k, tunable_index(rt, k, "route"), &info), KP_OK);
        if (host)
            assert_in_range(info.value, 2, 3); /* host-blas, host-blas-mapped */
        else
            assert_int_equal(info.value, 1); /* clblast */
        if (strcmp(route, "host-blas-mapped") == 0 && host)
            assert_int_equal(info.value, 3);
    }
}

/* y = alpha x + y through example.axpy over n elements of two buffers. */
static void axpy(kp_runtime *r, kp_buffer *x, kp_buffer *y, int64_t n, double alpha)
{
    kp_arg args[] = {KP_ARG_INT("n", n), KP_ARG_FLOAT("alpha", alpha),
                     KP_ARG_TENSOR("x", kp_tensor_1d(x, KP_F32, n)),
                     KP_ARG_TENSOR("y", kp_tensor_1d(y, KP_F32, n))};
    assert_int_equal(kp_kernel_launch(r, find(r, "example.axpy"), args, 4, NULL), KP_OK);
}

/* The GEMM keeps the queue's order, whichever route runs it: a kernel writes A and B (one
 * buffer), the GEMM reads them and writes C, a kernel reads C, with no wait between; then the
 * same for a batched GEMM and for GEMV. A GEMM run ahead of its writer would read zeros, one run
 * behind its reader would leave zeros in D. */
static void test_queue_order(void **state)
{
    const int64_t m = 96, n = 80, k = 72;
    size_t nab = (size_t)(m * k + k * n), nc = (size_t)(m * n);
    float *src = random_storage(nab, 91), *zeros = calloc(nab, sizeof *zeros);
    float *want = malloc(nc * sizeof *want);
    assert_non_null(zeros);
    assert_non_null(want);
    mat ma = row_major(m, k), mb = padded(row_major(k, n), 0, m * k), mc = row_major(m, n);
    for (size_t i = 0; i < nc; i++)
        want[i] = 0.0f;
    host_gemm(src, &ma, 0, src, &mb, 0, want, &mc, k, 2.0, 0.0); /* D = 2 C */
    /* C's buffer is created before A's and B's: PoCL 3.1 hands a native kernel's buffers over in
     * creation order, whatever order the call lists them in. */
    kp_buffer *c = upload(rt, zeros, nc), *d = upload(rt, zeros, nc);
    kp_buffer *x = upload(rt, src, nab), *ab = upload(rt, zeros, nab);
    axpy(rt, x, ab, (int64_t)nab, 1.0);
    kp_arg args[] = {KP_ARG_TENSOR("A", tensor(ab, &ma)), KP_ARG_TENSOR("B", tensor(ab, &mb)),
                     KP_ARG_TENSOR("C", tensor(c, &mc))};
    assert_int_equal(kp_kernel_launch(rt, find(rt, "blas.gemm"), args, 3, NULL), KP_OK);
    axpy(rt, c, d, (int64_t)nc, 2.0);
    float *got = download(rt, d, nc);
    expect_matrix(got, want, nc, &mc, 1e-5 * (double)(k + 1), "kernel, GEMM, kernel");
    free(got);

    /* The same through blas.gemm_batched: two batches of one A and one B (batch stride 0) from
     * a buffer a kernel writes, into C2 [2, m, n], read by a kernel. */
    float *zeros2 = calloc(2 * nc, sizeof *zeros2);
    assert_non_null(zeros2);
    kp_buffer *ab3 = upload(rt, zeros, nab), *c2 = upload(rt, zeros2, 2 * nc),
              *d2 = upload(rt, zeros2, 2 * nc);
    axpy(rt, x, ab3, (int64_t)nab, 1.0);
    kp_tensor a3 = kp_tensor_3d(ab3, KP_F32, 2, m, k), b3 = kp_tensor_3d(ab3, KP_F32, 2, k, n);
    a3.strides[0] = b3.strides[0] = 0;
    b3.offset = m * k;
    kp_arg bargs[] = {KP_ARG_TENSOR("A", a3), KP_ARG_TENSOR("B", b3),
                      KP_ARG_TENSOR("C", kp_tensor_3d(c2, KP_F32, 2, m, n))};
    assert_int_equal(kp_kernel_launch(rt, find(rt, "blas.gemm_batched"), bargs, 3, NULL), KP_OK);
    axpy(rt, c2, d2, (int64_t)(2 * nc), 2.0);
    got = download(rt, d2, 2 * nc);
    for (int i = 0; i < 2; i++)
        expect_matrix(got + (size_t)i * nc, want, nc, &mc, 1e-5 * (double)(k + 1),
                      "kernel, batched GEMM, kernel");
    free(got);
    free(zeros2);

    /* GEMV: y = A x with x the first n elements of the first row of the written A. */
    float *yw = calloc((size_t)m, sizeof *yw);
    assert_non_null(yw);
    for (int64_t i = 0; i < m; i++) {
        double sum = 0;
        for (int64_t j = 0; j < k; j++)
            sum += (double)src[i * k + j] * (double)src[m * k + j];
        yw[i] = (float)(2.0 * sum);
    }
    kp_buffer *y = upload(rt, zeros, (size_t)m), *dy = upload(rt, zeros, (size_t)m),
              *ab2 = upload(rt, zeros, nab);
    axpy(rt, x, ab2, (int64_t)nab, 1.0);
    kp_tensor xv = kp_tensor_1d(ab2, KP_F32, k);
    xv.offset = m * k;
    kp_arg gv[] = {KP_ARG_TENSOR("A", kp_tensor_2d(ab2, KP_F32, m, k)), KP_ARG_TENSOR("x", xv),
                   KP_ARG_TENSOR("y", kp_tensor_1d(y, KP_F32, m))};
    assert_int_equal(kp_kernel_launch(rt, find(rt, "blas.gemv"), gv, 3, NULL), KP_OK);
    axpy(rt, y, dy, m, 2.0);
    got = download(rt, dy, (size_t)m);
    mat my = row_major(m, 1);
    expect_matrix(got, yw, (size_t)m, &my, 1e-5 * (double)(k + 1), "kernel, GEMV, kernel");
    destroy_all(rt, x, ab, c, d, ab2, y, dy, ab3, c2, d2, NULL);
    free_all(src, zeros, want, yw, got, NULL);
}

/* ---- CLBlast parameters from the manifest -------------------------------------------------------
 */

static size_t tunable_index(kp_runtime *r, kp_kernel *k, const char *name)
{
    kp_tuning_info info = {.struct_size = sizeof info};
    for (size_t i = 0; kp_kernel_tuning(r, k, i, &info) == KP_OK; i++)
        if (strcmp(info.name, name) == 0)
            return i;
    fail_msg("no tunable %s", name);
    return 0;
}

/* MWG = 48 is not in CLBlast's search space: the core refuses it and CLBlast's own value
 * stays; the launch works. */
static void test_override_not_allowed_is_refused(void **state)
{
    test_log log;
    const char *path = test_write_tmp("mwg48.yaml", "kernelport: 1\ntuning:\n"
                                                    "  - match: {}\n"
                                                    "    kernels:\n"
                                                    "      blas.gemm: { clblast.Xgemm.MWG: 48 }\n");
    kp_runtime *r = open_runtime(path, &log);
    kp_kernel *k = find(r, "blas.gemm");
    kp_tuning_info info = {.struct_size = sizeof info};
    assert_int_equal(kp_kernel_tuning(r, k, tunable_index(r, k, "clblast.Xgemm.MWG"), &info),
                     KP_OK);
    assert_int_equal(info.value, 0);
    assert_string_equal(info.origin, "default");
    assert_non_null(strstr(log.text, "clblast.Xgemm.MWG = 48 rejected: not an allowed value"));
    gemm_case g = {.a = row_major(5, 4), .b = row_major(4, 3), .c = row_major(5, 3), .alpha = 1};
    check_gemm(r, &g, 61, "MWG 48 refused");
    kp_runtime_destroy(r);
}

/* Allowed values that contradict each other once merged: the launch fails with the reason,
 * nothing reaches CLBlast, and the runtime goes on working. */
static void test_override_inconsistent_set_fails_launch(void **state)
{
    test_log log;
    const char *path = test_write_tmp(
        "mwg16.yaml", "kernelport: 1\ntuning:\n"
                      "  - match: {}\n"
                      "    kernels:\n"
                      "      blas.gemm: { route: clblast,\n"
                      "                   clblast.Xgemm: { MWG: 16, MDIMC: 32, VWM: 1 } }\n");
    kp_runtime *r = open_runtime(path, &log);
    kp_kernel *k = find(r, "blas.gemm");
    float c0[16];
    test_fill(c0, 16, 5);
    kp_buffer *b = upload(r, c0, 16), *bc = upload(r, c0, 16);
    kp_arg args[] = {KP_ARG_TENSOR("A", kp_tensor_2d(b, KP_F32, 2, 2)),
                     KP_ARG_TENSOR("B", kp_tensor_2d(b, KP_F32, 2, 2)),
                     KP_ARG_TENSOR("C", kp_tensor_2d(bc, KP_F32, 2, 2))};
    assert_int_equal(kp_kernel_launch(r, k, args, 3, NULL), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(r),
                        "kernel blas.gemm: clblast.Xgemm: MWG=16 is not a multiple of MDIMC*VWM "
                        "= 32 (set by the manifest: MWG, MDIMC, VWM)");
    assert_null(strstr(log.text, "clblast.Xgemm for")); /* never overridden */
    float *got = download(r, bc, 16);
    assert_memory_equal(got, c0, sizeof c0);
    free(got);
    destroy_all(r, b, bc, NULL);
    check_batched(r, 3, 4, 5, 6, 24, 0, 62); /* same runtime, no values for this kernel */
    kp_runtime_destroy(r);
}

/* A partial set (MWG, NWG and the direct/indirect threshold) merged over CLBlast's own: applied,
 * reported with its origin, and correct on the indirect path, where CLBlast's strided batched
 * GEMM would mishandle a broadcast operand without the plugin's workaround. */
static void test_override_partial_set_applied(void **state)
{
    if (!tuned)
        tuned = open_runtime(test_write_tmp("tuned.yaml", tuned_manifest), &tuned_log);
    kp_kernel *k = find(tuned, "blas.gemm");
    kp_tuning_info info = {.struct_size = sizeof info};
    assert_int_equal(
        kp_kernel_tuning(tuned, k, tunable_index(tuned, k, "clblast.Xgemm.MWG"), &info), KP_OK);
    assert_int_equal(info.value, 64);
    assert_non_null(strstr(info.origin, "tuned.yaml:3 match {}"));
    gemm_case g = {.a = padded(row_major(96, 80), 3, 2),
                   .b = col_major(80, 72),
                   .c = row_major(96, 72),
                   .alpha = 0.5,
                   .beta = 2.0,
                   .pass_scalars = 1};
    check_gemm(tuned, &g, 71, "partial override, indirect GEMM");
    const char *applied = strstr(tuned_log.text, "clblast.Xgemm for");
    assert_non_null(applied);
    assert_non_null(strstr(applied, "the manifest's parameters over CLBlast's own"));
    assert_non_null(strstr(applied, " MWG=64 "));
    assert_non_null(strstr(applied, " NWG=64 "));
    assert_non_null(strstr(tuned_log.text, "XGEMM_MIN_INDIRECT_SIZE=64}"));
    expect_beta_zero_ignores_nan(tuned, 64, 64, 64); /* CLBlast's indirect kernel */
    check_batched(tuned, 3, 64, 64, 64, 0, 1, 72);   /* broadcast A, tight column-major */
    check_batched(tuned, 3, 64, 64, 64, 64 * 64, 1, 73);
}

/* A launch that must fail with `message`, leaving C as it was. */
static void expect_refused(kp_runtime *r, const gemm_case *g, const char *message)
{
    size_t na = storage(&g->a), nb = storage(&g->b), nc = storage(&g->c);
    float *a = random_storage(na, 1), *b = random_storage(nb, 2), *c = random_storage(nc, 3);
    kp_buffer *ba = upload(r, a, na), *bb = upload(r, b, nb), *bc = upload(r, c, nc);
    kp_arg args[] = {KP_ARG_TENSOR("A", tensor(ba, &g->a)), KP_ARG_TENSOR("B", tensor(bb, &g->b)),
                     KP_ARG_TENSOR("C", tensor(bc, &g->c))};
    assert_int_equal(kp_kernel_launch(r, find(r, "blas.gemm"), args, 3, NULL), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(r), message);
    float *got = download(r, bc, nc);
    assert_memory_equal(got, c, nc * sizeof *c);
    destroy_all(r, ba, bb, bc, NULL);
    free_all(a, b, c, got, NULL);
}

/*
 * CLBlast's indirect path in every layout combination, for both Xgemm variants. The plugin hands
 * CLBlast the product in the layout that Xgemm keeps C in (GEMMK 0: column-major, 1: row-major),
 * as C^T = op(B)^T op(A)^T when C is in the other one, and keeps the temporary matrices in a
 * buffer of its own: the sizes change from call to call, so that buffer grows and is reused.
 */
static void test_indirect_layouts(void **state)
{
    if (!tuned)
        tuned = open_runtime(test_write_tmp("tuned.yaml", tuned_manifest), &tuned_log);
    kp_kernel *k = find(tuned, "blas.gemm");
    for (int gemmk = 0; gemmk < 2; gemmk++) {
        assert_int_equal(kp_kernel_tunable_set(tuned, k, "clblast.Xgemm.GEMMK", gemmk), KP_OK);
        /* The GEMMK 1 kernel tiles K in registers and reads global memory only. */
        static const char *const gemmk1[][2] = {{"KREG", "2"},  {"KWG", "1"},   {"KWI", "1"},
                                                {"SA", "0"},    {"SB", "0"},    {"VWM", "2"},
                                                {"VWN", "2"},   {"MDIMA", "8"}, {"MDIMC", "8"},
                                                {"NDIMB", "8"}, {"NDIMC", "8"}};
        for (size_t i = 0; gemmk && i < sizeof gemmk1 / sizeof gemmk1[0]; i++) {
            char name[48];
            snprintf(name, sizeof name, "clblast.Xgemm.%s", gemmk1[i][0]);
            assert_int_equal(kp_kernel_tunable_set(tuned, k, name, atoi(gemmk1[i][1])), KP_OK);
        }
        if (gemmk) { /* the one GEMMK 1 set CLBlast cannot compile is refused before it tries */
            assert_int_equal(kp_kernel_tunable_set(tuned, k, "clblast.Xgemm.SA", 1), KP_OK);
            assert_int_equal(kp_kernel_tunable_set(tuned, k, "clblast.Xgemm.SB", 1), KP_OK);
            gemm_case bad = {.a = row_major(70, 70),
                             .b = row_major(70, 70),
                             .c = row_major(70, 70),
                             .alpha = 1.0,
                             .pass_scalars = 1};
            expect_refused(tuned, &bad,
                           "kernel blas.gemm: clblast.Xgemm: SA=1 with SB=1 does not compile in "
                           "CLBlast 1.5.3's GEMMK = 1 kernel (its source uses an undeclared "
                           "'idk') (set by the manifest: SA, SB)");
            assert_int_equal(kp_kernel_tunable_set(tuned, k, "clblast.Xgemm.SB", 0), KP_OK);
        }
        for (int combo = 0; combo < 32; combo++) {
            int a_view = combo & 1, ta = (combo >> 1) & 1, b_view = (combo >> 2) & 1;
            int tb = (combo >> 3) & 1, c_col = (combo >> 4) & 1;
            /* m n k >= 64^3 (the indirect path here), none a multiple of the 64 tiles. */
            int64_t m = 67 + 29 * (combo % 3), n = 71 + 13 * (combo % 5), kk = 65 + combo;
            int64_t ar = ta ? kk : m, ac = ta ? m : kk, br = tb ? n : kk, bc = tb ? kk : n;
            gemm_case g = {.a = a_view ? col_major(ar, ac) : row_major(ar, ac),
                           .b = b_view ? col_major(br, bc) : row_major(br, bc),
                           .c = c_col ? col_major(m, n) : row_major(m, n),
                           .ta = ta,
                           .tb = tb,
                           .alpha = combo % 2 ? 0.75 : 1.0,
                           .beta = combo % 3 ? 0.0 : -1.25,
                           .pass_scalars = 1};
            if (combo % 4 == 3) {
                g.a = padded(g.a, 3, 5);
                g.c = padded(g.c, 2, 1);
            }
            char what[112];
            snprintf(what, sizeof what, "GEMMK %d: A %s trans_a %d, B %s trans_b %d, C %s", gemmk,
                     a_view ? "col" : "row", ta, b_view ? "col" : "row", tb, c_col ? "col" : "row");
            check_gemm(tuned, &g, 900 + (unsigned)combo, what);
        }
    }
    assert_int_equal(kp_kernel_tuning_reset(tuned, k), KP_OK);
}

/* narrow.max_dim sends products whose C has a short side to the narrow.Xgemm set, merged over
 * clblast.Xgemm's values; the others keep clblast.Xgemm's. Calls alternate, so each switches;
 * blas.gemm_batched likewise. */
static void test_narrow_set(void **state)
{
    if (!tuned)
        tuned = open_runtime(test_write_tmp("tuned.yaml", tuned_manifest), &tuned_log);
    kp_kernel *k = find(tuned, "blas.gemm");
    assert_int_equal(kp_kernel_tunable_set(tuned, k, "narrow.max_dim", 64), KP_OK);
    assert_int_equal(kp_kernel_tunable_set(tuned, k, "narrow.Xgemm.NWG", 128), KP_OK);
    for (int round = 0; round < 2; round++) {
        /* 41 x 100 x 90 (C's 41 rows <= 64) and 100 x 37: narrow; 70 x 70 and 66 x 80: not.
         * All reach the indirect path (m n k >= 64^3). */
        static const int64_t sizes[][3] = {
            {41, 100, 90}, {70, 70, 70}, {100, 37, 80}, {66, 80, 70}};
        for (int i = 0; i < 4; i++) {
            int64_t m = sizes[i][0], n = sizes[i][1], kk = sizes[i][2];
            gemm_case g = {.a = row_major(m, kk),
                           .b = i == 2 ? col_major(kk, n) : row_major(kk, n),
                           .c = row_major(m, n),
                           .alpha = 1.0,
                           .beta = round ? 0.5 : 0.0,
                           .pass_scalars = 1};
            tuned_log.used = 0;
            tuned_log.text[0] = '\0';
            char what[64];
            snprintf(what, sizeof what, "%lldx%lldx%lld, round %d", (long long)m, (long long)n,
                     (long long)kk, round);
            check_gemm(tuned, &g, 950 + (unsigned)(4 * round + i), what);
            const char *applied = strstr(tuned_log.text, "clblast.Xgemm for");
            assert_non_null(applied); /* every call here switches sets */
            int is_narrow = i % 2 == 0;
            assert_int_equal(strstr(applied, "narrow set") != NULL, is_narrow);
            assert_non_null(strstr(applied, is_narrow ? " NWG=128 " : " NWG=64 "));
            assert_non_null(strstr(applied, " MWG=64 ")); /* clblast.Xgemm's, in both */
        }
    }
    assert_int_equal(kp_kernel_tuning_reset(tuned, k), KP_OK);
    /* blas.gemm_batched has the same two sets: 3 batches of 41 x 100 x 90 (narrow), then of
     * 70 x 70 x 70 (not), each checked against the host. */
    kp_kernel *kb = find(tuned, "blas.gemm_batched");
    assert_int_equal(kp_kernel_tunable_set(tuned, kb, "narrow.max_dim", 64), KP_OK);
    assert_int_equal(kp_kernel_tunable_set(tuned, kb, "narrow.Xgemm.NWG", 128), KP_OK);
    for (int i = 0; i < 2; i++) {
        tuned_log.used = 0;
        tuned_log.text[0] = '\0';
        int64_t m = i ? 70 : 41, n = i ? 70 : 100, kk = i ? 70 : 90;
        check_batched(tuned, 3, m, n, kk, m * kk, 0, 970 + (unsigned)i);
        const char *applied = strstr(tuned_log.text, "clblast.Xgemm for");
        assert_non_null(applied);
        assert_int_equal(strstr(applied, "narrow set") != NULL, i == 0);
        assert_non_null(strstr(applied, i == 0 ? " NWG=128 " : " NWG=64 "));
    }
    assert_int_equal(kp_kernel_tuning_reset(tuned, kb), KP_OK);
}

/* Back on the first runtime, CLBlast's own parameters return; set through the API they apply
 * again, and kp_kernel_tuning_reset restores CLBlast's own once more. */
static void test_override_restore(void **state)
{
    kp_kernel *k = find(rt, "blas.gemm");
    gemm_case g = {.a = row_major(70, 66),
                   .b = row_major(66, 68),
                   .c = row_major(70, 68),
                   .alpha = 1.0,
                   .beta = 0.0,
                   .pass_scalars = 1};
    rt_log.used = 0;
    rt_log.text[0] = '\0';
    check_gemm(rt, &g, 81, "after another runtime's override");
    assert_non_null(strstr(rt_log.text, "clblast.Xgemm for"));
    assert_non_null(strstr(rt_log.text, "restored CLBlast's own parameters"));
    assert_int_equal(kp_kernel_tunable_set(rt, k, "clblast.Xgemm.MWG", 64), KP_OK);
    assert_int_equal(kp_kernel_tunable_set(rt, k, "clblast.Xgemm.NWG", 64), KP_OK);
    assert_int_equal(
        kp_kernel_tunable_set(rt, k, "clblast.GemmRoutine.XGEMM_MIN_INDIRECT_SIZE", 64), KP_OK);
    kp_tuning_info info = {.struct_size = sizeof info};
    assert_int_equal(kp_kernel_tuning(rt, k, tunable_index(rt, k, "clblast.Xgemm.MWG"), &info),
                     KP_OK);
    assert_string_equal(info.origin, "set by the application");
    rt_log.used = 0;
    rt_log.text[0] = '\0';
    check_gemm(rt, &g, 82, "set by the application");
    assert_non_null(strstr(rt_log.text, "the manifest's parameters over CLBlast's own"));
    assert_int_equal(kp_kernel_tuning_reset(rt, k), KP_OK);
    rt_log.used = 0;
    rt_log.text[0] = '\0';
    check_gemm(rt, &g, 83, "after kp_kernel_tuning_reset");
    assert_non_null(strstr(rt_log.text, "restored CLBlast's own parameters"));
}

static int setup(void **state)
{
    rt = open_runtime(strcmp(route, "auto") == 0 ? NULL : route_manifest(route), &rt_log);
    return 0;
}

static int teardown(void **state)
{
    kp_runtime_destroy(tuned);
    kp_runtime_destroy(rt);
    return 0;
}

/* Two runs of this program: the plain one, and with --tuning the tests of CLBlast parameter sets
 * from the manifest and the API, whose every set is a CLBlast compile of its own (minutes on PoCL:
 * `./test.sh --full` runs them; ctest's label "full"). */
int main(int argc, char **argv)
{
    const struct CMUnitTest tuning[] = {
        cmocka_unit_test(test_override_partial_set_applied),
        cmocka_unit_test(test_indirect_layouts),
        cmocka_unit_test(test_narrow_set),
        cmocka_unit_test(test_override_restore),
    };
    if (argc > 1 && strcmp(argv[1], "--tuning") == 0) {
        route = "clblast"; /* CLBlast's parameters apply to its route only */
        return cmocka_run_group_tests(tuning, setup, teardown);
    }
    if (argc > 2 && strcmp(argv[1], "--route") == 0)
        route = argv[2];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_route_resolved),
        cmocka_unit_test(test_queue_order),
        cmocka_unit_test(test_gemm_transposes),
        cmocka_unit_test(test_gemm_one_row_or_column),
        cmocka_unit_test(test_gemm_shapes_offsets_scalars),
        cmocka_unit_test(test_gemm_beta_zero_ignores_nan),
        cmocka_unit_test(test_gemm_empty_dimensions),
        cmocka_unit_test(test_gemm_batched),
        cmocka_unit_test(test_gemv_orientations),
        cmocka_unit_test(test_verify_all_kernels),
        cmocka_unit_test(test_verify_parametric_sizes),
        cmocka_unit_test(test_f16_unsupported_names_device),
        cmocka_unit_test(test_rejects_before_clblast),
        cmocka_unit_test(test_override_not_allowed_is_refused),
        cmocka_unit_test(test_override_inconsistent_set_fails_launch),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
