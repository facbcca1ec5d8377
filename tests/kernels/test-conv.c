/* SPDX-License-Identifier: Apache-2.0 */
/* conv.im2col/col2im, conv2d and its gradients on PoCL: host loops, differences, verify. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test-conv.h"

/* One runtime for everything (each new kernel costs PoCL a compile), and one without the blas
 * plugin, where the convolutions run conv.cl's own GEMM. */
static kp_runtime *rt;
static kp_runtime *noblas;

static kp_runtime *without_blas(void)
{
    if (!noblas)
        noblas = open_runtime(
            test_write_tmp("noblas.yaml", "kernelport: 1\nplugins: { disable: [blas] }\n"));
    return noblas;
}

/* ---- problems and host math ------------------------------------------------------------------ */

/* A convolution: input [N, C, H, W], weights [K, C/groups, KH, KW], and the window. */
typedef struct geo {
    int64_t N, C, H, W, K, KH, KW, sh, sw, ph, pw, dh, dw, groups;
} geo;

static int64_t oh_of(const geo *g)
{
    return (g->H + 2 * g->ph - g->dh * (g->KH - 1) - 1) / g->sh + 1;
}

static int64_t ow_of(const geo *g)
{
    return (g->W + 2 * g->pw - g->dw * (g->KW - 1) - 1) / g->sw + 1;
}

static size_t nx(const geo *g)
{
    return (size_t)(g->N * g->C * g->H * g->W);
}

static size_t nw(const geo *g)
{
    return (size_t)(g->K * (g->C / g->groups) * g->KH * g->KW);
}

static size_t ny(const geo *g)
{
    return (size_t)(g->N * g->K * oh_of(g) * ow_of(g));
}

/* The input element a tap reads, or -1 in the padding. */
static int64_t tap(int64_t o, int64_t k, int64_t s, int64_t p, int64_t d, int64_t size)
{
    int64_t i = o * s - p + k * d;
    return i >= 0 && i < size ? i : -1;
}

/* y = conv(x, w) + b in double, directly (b may be NULL). */
static void host_conv(const geo *g, const double *x, const double *w, const double *b, double *y)
{
    int64_t OH = oh_of(g), OW = ow_of(g), Cg = g->C / g->groups, Kg = g->K / g->groups;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t k = 0; k < g->K; k++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double s = b ? b[k] : 0.0;
                    for (int64_t c = 0; c < Cg; c++)
                        for (int64_t kh = 0; kh < g->KH; kh++)
                            for (int64_t kw = 0; kw < g->KW; kw++) {
                                int64_t h = tap(oh, kh, g->sh, g->ph, g->dh, g->H);
                                int64_t v = tap(ow, kw, g->sw, g->pw, g->dw, g->W);
                                if (h >= 0 && v >= 0)
                                    s += w[((k * Cg + c) * g->KH + kh) * g->KW + kw] *
                                         x[((n * g->C + k / Kg * Cg + c) * g->H + h) * g->W + v];
                            }
                    y[((n * g->K + k) * OH + oh) * OW + ow] = s;
                }
}

/* Caffe's columns of every image: col[n][(c KH + kh) KW + kw][oh OW + ow]. */
static void host_im2col(const geo *g, const float *x, float *col)
{
    int64_t OH = oh_of(g), OW = ow_of(g), L = OH * OW, R = g->C * g->KH * g->KW;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t c = 0; c < g->C; c++)
            for (int64_t kh = 0; kh < g->KH; kh++)
                for (int64_t kw = 0; kw < g->KW; kw++)
                    for (int64_t oh = 0; oh < OH; oh++)
                        for (int64_t ow = 0; ow < OW; ow++) {
                            int64_t h = tap(oh, kh, g->sh, g->ph, g->dh, g->H);
                            int64_t v = tap(ow, kw, g->sw, g->pw, g->dw, g->W);
                            float *out =
                                &col[(n * R + (c * g->KH + kh) * g->KW + kw) * L + oh * OW + ow];
                            *out =
                                h >= 0 && v >= 0 ? x[((n * g->C + c) * g->H + h) * g->W + v] : 0.0f;
                        }
}

static size_t window_args(const geo *g, kp_arg *args, size_t n, int groups)
{
    args[n++] = KP_ARG_INT("stride_h", g->sh);
    args[n++] = KP_ARG_INT("stride_w", g->sw);
    args[n++] = KP_ARG_INT("pad_h", g->ph);
    args[n++] = KP_ARG_INT("pad_w", g->pw);
    args[n++] = KP_ARG_INT("dilation_h", g->dh);
    args[n++] = KP_ARG_INT("dilation_w", g->dw);
    if (groups)
        args[n++] = KP_ARG_INT("groups", g->groups);
    return n;
}

/* ---- im2col and col2im ----------------------------------------------------------------------- */

/* N C H W, (K), KH KW, stride, pad, dilation: 1x1, non-square, strided, padded, dilated, a kernel
 * as large as the padded input, more positions than a work-group, a stride-2 row of 21 outputs
 * (the row kernel's vector runs of eight, and a tail), and two with OW = W at stride 1 (the row
 * kernel's shifted-plane copy): dilated, and padded past the kernel's reach (whole rows of
 * padding). */
static const geo windows[] = {
    {2, 3, 5, 4, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1},   {3, 2, 7, 9, 0, 3, 2, 2, 1, 1, 0, 1, 2, 1},
    {1, 4, 6, 5, 0, 2, 3, 1, 2, 0, 2, 2, 1, 1},   {2, 1, 4, 5, 0, 6, 5, 1, 1, 1, 0, 1, 1, 1},
    {1, 2, 9, 70, 0, 3, 3, 1, 1, 1, 1, 1, 1, 1},  {5, 3, 8, 8, 0, 5, 5, 3, 3, 2, 2, 1, 1, 1},
    {2, 2, 11, 10, 0, 3, 3, 1, 2, 2, 1, 3, 2, 1}, {2, 3, 9, 41, 0, 3, 7, 2, 2, 1, 3, 1, 1, 1},
    {2, 3, 6, 9, 0, 3, 3, 1, 1, 2, 2, 2, 2, 1},   {1, 2, 5, 6, 0, 3, 5, 1, 1, 3, 2, 1, 1, 1},
};

/* ROWS for conv.im2col and conv.col2im: 1 their row kernels, 2 their element kernels, 3 im2col's
 * tiled kernel (col2im's element kernel). */
static void set_im2col(kp_runtime *r, int kind)
{
    const char *names[] = {"conv.im2col", "conv.col2im"};
    for (size_t i = 0; i < 2; i++) {
        kp_kernel *k = find(r, names[i]);
        assert_int_equal(
            kind ? kp_kernel_tunable_set(r, k, "ROWS", kind) : kp_kernel_tuning_reset(r, k), KP_OK);
    }
}

/* im2col of an image view, then col2im of random columns: against host loops, and the pair
 * against each other (col2im is im2col's adjoint: <im2col x, c> = <x, col2im c>). Returns what
 * col2im wrote. */
static float *check_pair(kp_runtime *r, const geo *g, const char *mode)
{
    int64_t OH = oh_of(g), OW = ow_of(g), L = OH * OW, R = g->C * g->KH * g->KW;
    size_t ncol = (size_t)(g->N * R * L);
    double *x = doubles(nx(g), 1), *c = doubles(ncol, 2);
    float *xf = calloc(nx(g), sizeof *xf), *want = malloc(ncol * sizeof *want);
    assert_true(xf && want);
    for (size_t i = 0; i < nx(g); i++)
        xf[i] = (float)x[i];
    host_im2col(g, xf, want);
    kp_buffer *bx = upload(r, x, nx(g)), *bc = garbage(r, ncol), *bcin = upload(r, c, ncol);
    kp_buffer *bim = garbage(r, nx(g));
    set_im2col(r, strcmp(mode, "rows") == 0 ? 1 : strcmp(mode, "elements") == 0 ? 2 : 3);
    kp_arg args[12] = {KP_ARG_TENSOR("im", t4(bx, g->N, g->C, g->H, g->W)),
                       KP_ARG_TENSOR("col", kp_tensor_3d(bc, KP_F32, g->N, R, L)),
                       KP_ARG_INT("kernel_h", g->KH), KP_ARG_INT("kernel_w", g->KW)};
    size_t n = window_args(g, args, 4, 0);
    launch(r, "conv.im2col", args, n);
    float *got = download(r, bc, ncol);
    for (size_t i = 0; i < ncol; i++)
        if (got[i] != want[i])
            fail_msg("im2col (%s) %lldx%lld: column entry %zu is %g, expected %g", mode,
                     (long long)g->KH, (long long)g->KW, i, (double)got[i], (double)want[i]);
    args[0] = KP_ARG_TENSOR("col", kp_tensor_3d(bcin, KP_F32, g->N, R, L));
    args[1] = KP_ARG_TENSOR("im", t4(bim, g->N, g->C, g->H, g->W));
    launch(r, "conv.col2im", args, n);
    set_im2col(r, 0);
    float *back = download(r, bim, nx(g));
    double *expect = calloc(nx(g), sizeof *expect), lhs = 0, rhs = 0;
    assert_non_null(expect);
    /* The adjoint by hand: every column entry adds into the pixel it was copied from. */
    for (int64_t b = 0; b < g->N; b++)
        for (int64_t ch = 0; ch < g->C; ch++)
            for (int64_t kh = 0; kh < g->KH; kh++)
                for (int64_t kw = 0; kw < g->KW; kw++)
                    for (int64_t l = 0; l < L; l++) {
                        int64_t h = tap(l / OW, kh, g->sh, g->ph, g->dh, g->H);
                        int64_t v = tap(l % OW, kw, g->sw, g->pw, g->dw, g->W);
                        if (h >= 0 && v >= 0)
                            expect[((b * g->C + ch) * g->H + h) * g->W + v] +=
                                c[(b * R + (ch * g->KH + kh) * g->KW + kw) * L + l];
                    }
    expect_close("col2im", back, expect, nx(g), 1e-6);
    for (size_t i = 0; i < ncol; i++)
        lhs += (double)got[i] * c[i];
    for (size_t i = 0; i < nx(g); i++)
        rhs += x[i] * back[i];
    assert_true(fabs(lhs - rhs) <= 1e-5 * (fabs(lhs) + 1.0));
    kp_buffer_destroy(r, bx), kp_buffer_destroy(r, bc), kp_buffer_destroy(r, bcin);
    kp_buffer_destroy(r, bim);
    free(x), free(c), free(xf), free(want), free(got), free(expect);
    return back;
}

/* Every kernel of each; col2im's two add the same terms in the same order: the same bits. The
 * last window's rows are too wide for the tiled kernel (one output row reads 3 x 4100 floats,
 * past its 16 KiB): it takes the element kernel there. */
static void test_im2col_col2im(void **state)
{
    (void)state;
    static const geo wide = {1, 2, 3, 4098, 0, 3, 3, 1, 1, 1, 1, 1, 1, 1};
    for (size_t i = 0; i <= sizeof windows / sizeof windows[0]; i++) {
        const geo *g = i < sizeof windows / sizeof windows[0] ? &windows[i] : &wide;
        float *rows = check_pair(rt, g, "rows");
        float *elements = check_pair(rt, g, "elements");
        float *tiles = check_pair(rt, g, "tiles");
        assert_memory_equal(rows, elements, nx(g) * sizeof *rows);
        assert_memory_equal(rows, tiles, nx(g) * sizeof *rows);
        free(rows), free(elements), free(tiles);
    }
}

/* conv.im2col in tiles on a runtime that logs how it blocks them: one channel of 40 output rows
 * in blocks of a few rows (PoCL's 2 compute units want 8 work-groups), the last block shorter;
 * exact against the host (check_pair). */
static void test_im2col_tile_blocks(void **state)
{
    (void)state;
    static test_log log;
    kp_runtime_options o =
        test_options(test_build_path("lib/kernelport/plugins"), test_device(), &log);
    o.log_level = KP_LOG_DEBUG;
    kp_runtime *r = NULL;
    assert_int_equal(kp_runtime_create(&o, &r), KP_OK);
    static const geo one = {1, 1, 40, 40, 0, 3, 3, 1, 1, 1, 1, 1, 1, 1};
    log.used = 0;
    log.text[0] = '\0';
    free(check_pair(r, &one, "tiles"));
    long long rows = 0;
    const char *line = strstr(log.text, "im2col in tiles of ");
    assert_non_null(line);
    assert_int_equal(sscanf(line, "im2col in tiles of %lld rows", &rows), 1);
    assert_true(rows > 1 && rows < oh_of(&one) && oh_of(&one) % rows != 0);
    kp_runtime_destroy(r);
}

/* A group's columns are im2col of its channels: a channel-slice view, offset into the batch. */
static void test_im2col_group_view(void **state)
{
    (void)state;
    geo g = {3, 6, 5, 7, 0, 3, 2, 1, 2, 1, 0, 1, 1, 1}, sub = g;
    sub.C = 2; /* group 1 of 3: channels 2 and 3 */
    int64_t L = oh_of(&g) * ow_of(&g), R = sub.C * g.KH * g.KW;
    double *x = doubles(nx(&g), 3);
    float *xf = calloc(nx(&g), sizeof *xf), *slice = calloc(nx(&sub), sizeof *slice);
    float *want = malloc((size_t)(g.N * R * L) * sizeof *want);
    assert_true(xf && slice && want);
    for (size_t i = 0; i < nx(&g); i++)
        xf[i] = (float)x[i];
    for (int64_t n = 0; n < g.N; n++)
        memcpy(slice + n * sub.C * g.H * g.W, xf + (n * g.C + 2) * g.H * g.W,
               (size_t)(sub.C * g.H * g.W) * sizeof *slice);
    host_im2col(&sub, slice, want);
    kp_buffer *bx = upload(rt, x, nx(&g)), *bc = garbage(rt, (size_t)(g.N * R * L));
    kp_tensor im = t4(bx, g.N, g.C, g.H, g.W);
    im.shape[1] = sub.C;
    im.offset = 2 * g.H * g.W;
    kp_arg args[12] = {KP_ARG_TENSOR("im", im),
                       KP_ARG_TENSOR("col", kp_tensor_3d(bc, KP_F32, g.N, R, L)),
                       KP_ARG_INT("kernel_h", g.KH), KP_ARG_INT("kernel_w", g.KW)};
    launch(rt, "conv.im2col", args, window_args(&g, args, 4, 0));
    float *got = download(rt, bc, (size_t)(g.N * R * L));
    assert_memory_equal(got, want, (size_t)(g.N * R * L) * sizeof *got);
    kp_buffer_destroy(rt, bx), kp_buffer_destroy(rt, bc);
    free(x), free(xf), free(slice), free(want), free(got);
}

/* ---- the convolution and its gradients ------------------------------------------------------- */

/* The GEMM paths: "auto" (on PoCL, blas where the build has OpenBLAS, conv.conv2d's products
 * then written into y, else conv.cl's tiled kernel), "tiled" (conv.cl's tiled kernel wherever it
 * applies), "blas" (blas.gemm for every product, or, without it, conv.cl's plain kernel). */
static void set_gemm(kp_runtime *r, const char *kind)
{
    const char *names[] = {"conv.conv2d", "conv.conv2d_backward_data",
                           "conv.conv2d_backward_weight"};
    for (size_t i = 0; i < 3; i++) {
        kp_kernel *k = find(r, names[i]);
        assert_int_equal(kp_kernel_tuning_reset(r, k), KP_OK);
        if (strcmp(kind, "auto") != 0)
            assert_int_equal(
                kp_kernel_tunable_set(r, k, "GEMM", strcmp(kind, "tiled") == 0 ? 2 : 1), KP_OK);
    }
}

/* Runs conv.conv2d (b may be NULL) and returns y. */
static float *run_forward(kp_runtime *r, const geo *g, const double *x, const double *w,
                          const double *b)
{
    kp_buffer *bx = upload(r, x, nx(g)), *bw = upload(r, w, nw(g)), *by = garbage(r, ny(g));
    kp_buffer *bb = b ? upload(r, b, (size_t)g->K) : NULL;
    kp_arg args[12] = {KP_ARG_TENSOR("x", t4(bx, g->N, g->C, g->H, g->W)),
                       KP_ARG_TENSOR("w", t4(bw, g->K, g->C / g->groups, g->KH, g->KW)),
                       KP_ARG_TENSOR("y", t4(by, g->N, g->K, oh_of(g), ow_of(g)))};
    size_t n = window_args(g, args, 3, 1);
    if (b)
        args[n++] = KP_ARG_TENSOR("bias", kp_tensor_1d(bb, KP_F32, g->K));
    launch(r, "conv.conv2d", args, n);
    float *y = download(r, by, ny(g));
    kp_buffer_destroy(r, bx), kp_buffer_destroy(r, bw), kp_buffer_destroy(r, by);
    kp_buffer_destroy(r, bb);
    return y;
}

/* The three gradients of sum(dy * conv(x, w) + b) from the device. */
typedef struct grads {
    float *dx, *dw, *db;
} grads;

static grads run_backward(kp_runtime *r, const geo *g, const double *x, const double *w,
                          const double *dy)
{
    kp_buffer *bx = upload(r, x, nx(g)), *bw = upload(r, w, nw(g)), *bdy = upload(r, dy, ny(g));
    kp_buffer *bdx = garbage(r, nx(g)), *bdw = garbage(r, nw(g)), *bdb = garbage(r, (size_t)g->K);
    kp_tensor tdy = t4(bdy, g->N, g->K, oh_of(g), ow_of(g));
    kp_arg a[12] = {KP_ARG_TENSOR("dy", tdy),
                    KP_ARG_TENSOR("w", t4(bw, g->K, g->C / g->groups, g->KH, g->KW)),
                    KP_ARG_TENSOR("dx", t4(bdx, g->N, g->C, g->H, g->W))};
    launch(r, "conv.conv2d_backward_data", a, window_args(g, a, 3, 1));
    a[0] = KP_ARG_TENSOR("x", t4(bx, g->N, g->C, g->H, g->W));
    a[1] = KP_ARG_TENSOR("dy", tdy);
    a[2] = KP_ARG_TENSOR("dw", t4(bdw, g->K, g->C / g->groups, g->KH, g->KW));
    launch(r, "conv.conv2d_backward_weight", a, window_args(g, a, 3, 1));
    kp_arg ab[] = {KP_ARG_TENSOR("dy", tdy), KP_ARG_TENSOR("db", kp_tensor_1d(bdb, KP_F32, g->K))};
    launch(r, "conv.conv2d_backward_bias", ab, 2);
    grads out = {download(r, bdx, nx(g)), download(r, bdw, nw(g)), download(r, bdb, (size_t)g->K)};
    kp_buffer_destroy(r, bx), kp_buffer_destroy(r, bw), kp_buffer_destroy(r, bdy);
    kp_buffer_destroy(r, bdx), kp_buffer_destroy(r, bdw), kp_buffer_destroy(r, bdb);
    return out;
}

static void grads_free(grads *g)
{
    free(g->dx), free(g->dw), free(g->db);
}

/* Groups, non-square kernels, strides, padding, dilation, 1x1 (in place and strided), depthwise,
 * N = 1 and primes. */
static const geo convs[] = {
    {3, 5, 9, 7, 4, 3, 2, 2, 1, 1, 0, 1, 2, 1},   {2, 6, 8, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1, 3},
    {1, 4, 6, 5, 4, 3, 3, 2, 2, 1, 1, 1, 1, 4},   {5, 7, 5, 3, 3, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {2, 6, 4, 4, 4, 1, 1, 1, 1, 0, 0, 1, 1, 2},   {2, 3, 7, 8, 5, 1, 1, 2, 3, 0, 0, 1, 1, 1},
    {2, 3, 4, 5, 2, 6, 5, 1, 1, 1, 0, 1, 1, 1},   {7, 2, 11, 13, 3, 5, 3, 1, 2, 2, 1, 1, 1, 1},
    {1, 16, 9, 9, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1},
};

static void check_forward(kp_runtime *r, const char *which)
{
    for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++) {
        const geo *g = &convs[i];
        double *x = doubles(nx(g), 10 + (unsigned)i), *w = doubles(nw(g), 20 + (unsigned)i);
        double *b = doubles((size_t)g->K, 30), *want = malloc(ny(g) * sizeof *want);
        assert_non_null(want);
        host_conv(g, x, w, i % 2 ? NULL : b, want);
        float *y = run_forward(r, g, x, w, i % 2 ? NULL : b);
        char what[96];
        snprintf(what, sizeof what, "conv2d case %zu (%s)", i, which);
        /* Sums of C/groups KH KW (at most 144) products in f32. */
        expect_close(what, y, want, ny(g), 1e-5);
        free(x), free(w), free(b), free(want), free(y);
    }
}

static void test_forward_direct(void **state)
{
    (void)state;
    check_forward(rt, "auto");
    set_gemm(rt, "tiled");
    check_forward(rt, "tiled");
    set_gemm(rt, "blas");
    check_forward(rt, "blas.gemm");
    set_gemm(rt, "auto");
    set_gemm(without_blas(), "blas");
    check_forward(without_blas(), "conv_gemm");
    set_gemm(without_blas(), "auto");
}

/* conv.conv2d's GEMM kind (as set_gemm), ALGO (0 auto, 1 im2col, 2 winograd) and COL_MAX_MB
 * (MiB) when mb > 0. */
static void set_algo(kp_runtime *r, const char *gemm, int algo, int mb)
{
    kp_kernel *k = find(r, "conv.conv2d");
    set_gemm(r, gemm);
    if (algo)
        assert_int_equal(kp_kernel_tunable_set(r, k, "ALGO", algo), KP_OK);
    if (mb)
        assert_int_equal(kp_kernel_tunable_set(r, k, "COL_MAX_MB", mb), KP_OK);
}

/* 3x3, stride-1, undilated: one clipped tile (H = W = 1), odd OH and OW, no padding, a padding of
 * 2 with groups, 1 channel, and more tiles than a work-group. */
static const geo winos[] = {
    {1, 1, 1, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1},     {2, 5, 7, 9, 3, 3, 3, 1, 1, 1, 0, 1, 1, 1},
    {3, 4, 8, 11, 13, 3, 3, 1, 1, 0, 0, 1, 1, 1},   {2, 6, 5, 6, 4, 3, 3, 1, 1, 2, 1, 1, 1, 2},
    {2, 20, 33, 35, 17, 3, 3, 1, 1, 1, 1, 1, 1, 1},
};

/* Winograd against the direct host sum and against im2col on every GEMM path, and chunked (4 +
 * 3 images, COL_MAX_MB 1) against unchunked: with conv.cl's GEMMs, which sum each output alone,
 * the same bits. */
static void check_winograd(kp_runtime *r, const char *gemm, int exact)
{
    for (size_t i = 0; i < sizeof winos / sizeof winos[0]; i++) {
        const geo *g = &winos[i];
        double *x = doubles(nx(g), 70 + (unsigned)i), *w = doubles(nw(g), 80 + (unsigned)i);
        double *b = doubles((size_t)g->K, 90), *want = malloc(ny(g) * sizeof *want);
        assert_non_null(want);
        host_conv(g, x, w, i % 2 ? NULL : b, want);
        set_algo(r, gemm, 2, 0);
        float *y = run_forward(r, g, x, w, i % 2 ? NULL : b);
        set_algo(r, gemm, 1, 0);
        float *yi = run_forward(r, g, x, w, i % 2 ? NULL : b);
        char what[96];
        snprintf(what, sizeof what, "winograd case %zu (%s)", i, gemm);
        expect_close(what, y, want, ny(g), 1e-5);
        snprintf(what, sizeof what, "im2col case %zu (%s)", i, gemm);
        expect_close(what, yi, want, ny(g), 1e-5);
        free(x), free(w), free(b), free(want), free(y), free(yi);
    }
    const geo g = {7, 16, 20, 22, 18, 3, 3, 1, 1, 1, 1, 1, 1, 1};
    double *x = doubles(nx(&g), 95), *w = doubles(nw(&g), 96), *b = doubles((size_t)g.K, 97);
    double *want = malloc(ny(&g) * sizeof *want);
    assert_non_null(want);
    host_conv(&g, x, w, b, want);
    set_algo(r, gemm, 2, 0);
    float *y0 = run_forward(r, &g, x, w, b);
    set_algo(r, gemm, 2, 1);
    float *y1 = run_forward(r, &g, x, w, b);
    set_gemm(r, gemm);
    expect_close("winograd unchunked", y0, want, ny(&g), 1e-5);
    expect_close("winograd chunked", y1, want, ny(&g), 1e-5);
    if (exact)
        assert_memory_equal(y0, y1, ny(&g) * sizeof *y0);
    free(x), free(w), free(b), free(want), free(y0), free(y1);
}

static void test_winograd(void **state)
{
    (void)state;
    /* ALGO winograd where Winograd does not apply (stride 2, dilation 2, 5x5): im2col runs. */
    const geo others[] = {{2, 3, 7, 8, 4, 3, 3, 2, 1, 1, 1, 1, 1, 1},
                          {1, 2, 9, 9, 3, 3, 3, 1, 1, 2, 2, 2, 2, 1},
                          {2, 2, 8, 7, 3, 5, 5, 1, 1, 2, 2, 1, 1, 1}};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        const geo *g = &others[i];
        double *x = doubles(nx(g), 60 + (unsigned)i), *w = doubles(nw(g), 65 + (unsigned)i);
        double *want = malloc(ny(g) * sizeof *want);
        assert_non_null(want);
        host_conv(g, x, w, NULL, want);
        set_algo(rt, "auto", 2, 0);
        float *y = run_forward(rt, g, x, w, NULL);
        expect_close("ALGO winograd, not applicable", y, want, ny(g), 1e-5);
        free(x), free(w), free(want), free(y);
    }
    check_winograd(rt, "tiled", 1);
    check_winograd(rt, "blas", 0);
    check_winograd(without_blas(), "blas", 1);
    set_gemm(rt, "auto");
    set_gemm(without_blas(), "auto");
}

/*
 * The loss sum(G * (conv(x, w) + b)) in double on a tiny problem with groups, a non-square
 * kernel, stride, padding and dilation. It is linear in each of x, w and b, so central
 * differences are exact up to double rounding and test the kernels' gradients directly.
 */
static double loss(const geo *g, const double *x, const double *w, const double *b, const double *G)
{
    double *y = malloc(ny(g) * sizeof *y), s = 0.0;
    assert_non_null(y);
    host_conv(g, x, w, b, y);
    for (size_t i = 0; i < ny(g); i++)
        s += G[i] * y[i];
    free(y);
    return s;
}

static void check_differences(const char *what, double *v, size_t n, const float *grad,
                              const geo *g, double *x, double *w, double *b, const double *G)
{
    const double h = 1e-3;
    double *num = malloc(n * sizeof *num);
    assert_non_null(num);
    for (size_t i = 0; i < n; i++) {
        double keep = v[i];
        v[i] = keep + h;
        double up = loss(g, x, w, b, G);
        v[i] = keep - h;
        num[i] = (up - loss(g, x, w, b, G)) / (2 * h);
        v[i] = keep;
    }
    expect_close(what, grad, num, n, 1e-5);
    free(num);
}

static void check_backward(kp_runtime *r)
{
    const geo gs[] = {{2, 4, 5, 6, 6, 3, 2, 2, 1, 1, 1, 1, 2, 2},
                      {3, 3, 4, 5, 2, 1, 1, 1, 1, 0, 0, 1, 1, 1}};
    for (size_t i = 0; i < sizeof gs / sizeof gs[0]; i++) {
        const geo *g = &gs[i];
        double *x = doubles(nx(g), 41), *w = doubles(nw(g), 42), *b = doubles((size_t)g->K, 43);
        double *G = doubles(ny(g), 44);
        grads d = run_backward(r, g, x, w, G);
        check_differences("dx", x, nx(g), d.dx, g, x, w, b, G);
        check_differences("dw", w, nw(g), d.dw, g, x, w, b, G);
        check_differences("db", b, (size_t)g->K, d.db, g, x, w, b, G);
        grads_free(&d);
        free(x), free(w), free(b), free(G);
    }
}

static void test_backward_differences(void **state)
{
    (void)state;
    check_backward(rt);
    set_gemm(rt, "blas");
    check_backward(rt);
    set_gemm(rt, "auto");
    set_gemm(without_blas(), "blas");
    check_backward(without_blas());
    set_gemm(without_blas(), "auto");
}

/* SPLIT_K: the weight gradient through blas.gemm in slices of 256 positions (7 x 676 = 4732 of
 * them, so 18 slices and a rest of 124; groups 2) against one GEMM, and without
 * blas.gemm_batched (the fallback: one GEMM by conv.cl); the bias gradient in two slices of
 * images (6 and 1: 4096 / 676 images a slice) against the host's sums. */
static void test_split_sums(void **state)
{
    (void)state;
    const geo g = {7, 12, 26, 26, 10, 3, 3, 1, 1, 1, 1, 1, 1, 2};
    double *x = doubles(nx(&g), 61), *w = doubles(nw(&g), 62), *G = doubles(ny(&g), 63);
    kp_runtime *rs[] = {rt, without_blas()};
    grads d[2][2];
    for (int r = 0; r < 2; r++) {
        set_gemm(rs[r], "blas");
        kp_kernel *k = find(rs[r], "conv.conv2d_backward_weight");
        for (int split = 0; split < 2; split++) {
            assert_int_equal(kp_kernel_tunable_set(rs[r], k, "SPLIT_K", split ? 256 : 0), KP_OK);
            d[r][split] = run_backward(rs[r], &g, x, w, G);
        }
        set_gemm(rs[r], "auto");
    }
    double *want = malloc(nw(&g) * sizeof *want);
    assert_non_null(want);
    for (size_t i = 0; i < nw(&g); i++)
        want[i] = d[0][0].dw[i];
    /* dw sums 4732 positions in another order when split. */
    expect_close("dw in slices", d[0][1].dw, want, nw(&g), 1e-5);
    expect_close("dw without blas.gemm_batched", d[1][1].dw, want, nw(&g), 1e-5);
    size_t L = ny(&g) / (size_t)(g.N * g.K);
    for (size_t k = 0; k < (size_t)g.K; k++) {
        want[k] = 0;
        for (size_t n = 0; n < (size_t)g.N; n++)
            for (size_t i = 0; i < L; i++)
                want[k] += G[(n * (size_t)g.K + k) * L + i];
    }
    expect_close("db in slices of images", d[0][1].db, want, (size_t)g.K, 1e-5);
    for (int r = 0; r < 2; r++)
        grads_free(&d[r][0]), grads_free(&d[r][1]);
    free(x), free(w), free(G), free(want);
}

/* COL_MAX_MB 1 runs 7 images of 0.2 MiB of scratch each (columns and GEMM block) as 4 + 3. */
static void check_chunked(kp_runtime *r, const char *gemm, int exact)
{
    const geo g = {7, 12, 20, 22, 10, 3, 3, 1, 1, 1, 1, 1, 1, 2};
    double *x = doubles(nx(&g), 51), *w = doubles(nw(&g), 52), *b = doubles((size_t)g.K, 53);
    double *G = doubles(ny(&g), 54);
    set_gemm(r, gemm);
    float *y0 = run_forward(r, &g, x, w, b);
    grads d0 = run_backward(r, &g, x, w, G);
    const char *names[] = {"conv.conv2d", "conv.conv2d_backward_data",
                           "conv.conv2d_backward_weight"};
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(kp_kernel_tunable_set(r, find(r, names[i]), "COL_MAX_MB", 1), KP_OK);
    float *y1 = run_forward(r, &g, x, w, b);
    grads d1 = run_backward(r, &g, x, w, G);
    set_gemm(r, gemm); /* resets COL_MAX_MB too */
    size_t most = nx(&g) > ny(&g) ? nx(&g) : ny(&g);
    double *as_double = malloc((most > nw(&g) ? most : nw(&g)) * sizeof *as_double);
    assert_non_null(as_double);
    if (exact) {
        /* conv.cl's GEMMs sum each output alone, in order: chunks cannot change a bit of y or
         * dx. */
        assert_memory_equal(y0, y1, ny(&g) * sizeof *y0);
        assert_memory_equal(d0.dx, d1.dx, nx(&g) * sizeof *y0);
    }
    for (size_t i = 0; i < ny(&g); i++)
        as_double[i] = y0[i];
    expect_close("chunked y", y1, as_double, ny(&g), 1e-6);
    for (size_t i = 0; i < nx(&g); i++)
        as_double[i] = d0.dx[i];
    expect_close("chunked dx", d1.dx, as_double, nx(&g), 1e-6);
    /* dw sums over 7 x 440 positions, in another order when chunked. */
    for (size_t i = 0; i < nw(&g); i++)
        as_double[i] = d0.dw[i];
    expect_close("chunked dw", d1.dw, as_double, nw(&g), 1e-5);
    grads_free(&d0), grads_free(&d1);
    free(x), free(w), free(b), free(G), free(y0), free(y1), free(as_double);
}

static void test_chunked_equals_unchunked(void **state)
{
    (void)state;
    check_chunked(rt, "tiled", 1);
    check_chunked(rt, "auto", 0);
    check_chunked(rt, "blas", 0);
    check_chunked(without_blas(), "blas", 1);
    set_gemm(rt, "auto");
    set_gemm(without_blas(), "auto");
}

/* ---- verification and determinism ----------------------------------------------------------- */

static const char *const gemm_kernels[] = {"conv.conv2d", "conv.conv2d_backward_data",
                                           "conv.conv2d_backward_weight"};

/* Every kernel on every verify size, im2col and col2im with both of their kernels, the GEMM-based
 * ones on each GEMM: tiled (the default here), blas.gemm, and conv.cl's plain kernel. */
static void test_verify(void **state)
{
    (void)state;
    verify_kernel(rt, "conv.im2col");
    verify_kernel(rt, "conv.col2im");
    verify_kernel(rt, "conv.conv2d_backward_bias");
    set_im2col(rt, 2);
    verify_kernel(rt, "conv.im2col");
    verify_kernel(rt, "conv.col2im");
    set_im2col(rt, 0);
    /* The bias gradient's other shape: a work-group per channel and slice (GPUs). */
    kp_kernel *bias = find(rt, "conv.conv2d_backward_bias");
    assert_int_equal(kp_kernel_tunable_set(rt, bias, "ROWS", 2), KP_OK);
    verify_kernel(rt, "conv.conv2d_backward_bias");
    assert_int_equal(kp_kernel_tuning_reset(rt, bias), KP_OK);
    const char *kinds[] = {"auto", "tiled", "blas"};
    for (size_t i = 0; i < 3; i++) {
        set_gemm(rt, kinds[i]);
        for (size_t j = 0; j < 3; j++)
            verify_kernel(rt, gemm_kernels[j]);
    }
    set_gemm(rt, "auto");
    set_gemm(without_blas(), "blas");
    for (size_t j = 0; j < 3; j++)
        verify_kernel(without_blas(), gemm_kernels[j]);
    set_gemm(without_blas(), "auto");
}

/* No atomics anywhere: two runs of the backward give the same bits. */
static void test_deterministic(void **state)
{
    (void)state;
    const geo g = {3, 4, 9, 8, 6, 3, 3, 2, 1, 1, 1, 1, 1, 2};
    double *x = doubles(nx(&g), 61), *w = doubles(nw(&g), 62), *G = doubles(ny(&g), 63);
    grads a = run_backward(rt, &g, x, w, G), b = run_backward(rt, &g, x, w, G);
    assert_memory_equal(a.dx, b.dx, nx(&g) * sizeof(float));
    assert_memory_equal(a.dw, b.dw, nw(&g) * sizeof(float));
    assert_memory_equal(a.db, b.db, (size_t)g.K * sizeof(float));
    grads_free(&a), grads_free(&b);
    free(x), free(w), free(G);
}

static int setup(void **state)
{
    (void)state;
    rt = open_runtime(NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kp_runtime_destroy(rt);
    kp_runtime_destroy(noblas);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_im2col_col2im),     cmocka_unit_test(test_im2col_tile_blocks),
        cmocka_unit_test(test_im2col_group_view), cmocka_unit_test(test_forward_direct),
        cmocka_unit_test(test_winograd),          cmocka_unit_test(test_backward_differences),
        cmocka_unit_test(test_split_sums),        cmocka_unit_test(test_chunked_equals_unchunked),
        cmocka_unit_test(test_deterministic),     cmocka_unit_test(test_verify),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
