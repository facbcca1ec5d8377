/* SPDX-License-Identifier: Apache-2.0 */
/* conv.conv2d's Winograd F(2x2, 3x3) path: transforms in conv.cl, 16 GEMMs per group between. */
#include <limits.h>

#include "conv.h"

/* Rows of V and M are padded to a multiple of this many columns: a GEMM whose sides are
 * multiples of its tiles runs on CLBlast's indirect path without padded copies. The padding
 * columns hold garbage, which only ever reaches M's padding columns (a product's column depends
 * on its own column alone), which the output pass never reads. */
#define ROW_ALIGN 128

static int64_t padded(int64_t P)
{
    return (P + ROW_ALIGN - 1) / ROW_ALIGN * ROW_ALIGN;
}

/* Tiles of 2x2 outputs per image; *TW of them per row. */
static int64_t tiles_of(const conv_geom *g, int64_t *TW)
{
    *TW = (g->OW + 1) / 2;
    return (g->OH + 1) / 2 * *TW;
}

int conv_winograd_fits(const conv_geom *g)
{
    int64_t TW, T = tiles_of(g, &TW);
    int shape = g->KH == 3 && g->KW == 3 && g->sh == 1 && g->sw == 1 && g->dh == 1 && g->dw == 1;
    /* One image's V and M blocks must be indexable with int (a chunk holds at least one). */
    return shape && 16.0 * (double)(g->C + g->K) * (double)padded(T) <= (double)INT_MAX;
}

int conv_winograd_chosen(kp_launch *l, const conv_geom *g)
{
    if (!conv_winograd_fits(g))
        return 0;
    int64_t algo = conv_host->tunable_index(l, CONV_TUNE_ALGO);
    if (algo != 0)
        return algo == 2;
    /* Auto, which conv_resolve leaves only off CPUs (on PoCL the 16 thin GEMMs ran slower than
     * im2col's one: 211 against 140 ms at N64 C64 56x56 K64): with few channels per group the
     * GEMMs are too thin to pay for the transforms' memory traffic. */
    return g->C / g->groups >= CONV_WINOGRAD_MIN_CHANNELS &&
           g->K / g->groups >= CONV_WINOGRAD_MIN_CHANNELS;
}

static kp_status filter_transform(kp_launch *l, const conv_geom *g, const kp_tensor *w,
                                  kp_buffer *u)
{
    int64_t Cg = g->C / g->groups;
    /* The kernel reads w's offset and row stride; its last three dimensions are contiguous
     * (conv_check_weight_matrix), so a kernel's 9 taps of channel c start at row + 9 c. */
    kp_clargs a = kp_clargs_begin(conv_host, l, "conv_wino_filter", NULL);
    kp_clargs_int(&a, (int)g->K);
    kp_clargs_int(&a, (int)Cg);
    kp_clargs_tensor(&a, w, 4);
    kp_clargs_buffer(&a, u);
    return conv_clargs_run(&a, Cg, g->K);
}

static kp_status input_transform(kp_launch *l, const conv_geom *g, const kp_tensor *x, int64_t n0,
                                 int64_t nb, kp_buffer *v, int64_t ld)
{
    int64_t TW, T = tiles_of(g, &TW);
    kp_tensor xs = conv_images(x, n0, nb);
    conv_geom gc = *g;
    gc.N = nb;
    kp_clargs a = kp_clargs_begin(conv_host, l, "conv_wino_input", NULL);
    conv_clargs_geom(&a, &gc);
    kp_clargs_tensor(&a, &xs, 4);
    kp_clargs_buffer(&a, v);
    kp_clargs_int(&a, (int)TW);
    kp_clargs_int(&a, (int)T);
    kp_clargs_int(&a, (int)ld);
    return conv_clargs_run(&a, T, nb * g->C);
}

static kp_status output_transform(kp_launch *l, const conv_geom *g, kp_buffer *m, int64_t ld,
                                  const kp_tensor *bias, const kp_tensor *y, int64_t n0, int64_t nb)
{
    int64_t TW, T = tiles_of(g, &TW);
    kp_tensor ys = conv_images(y, n0, nb);
    kp_clargs a = kp_clargs_begin(conv_host, l, "conv_wino_output", NULL);
    kp_clargs_int(&a, (int)g->K);
    kp_clargs_int(&a, (int)g->OH);
    kp_clargs_int(&a, (int)g->OW);
    kp_clargs_int(&a, (int)TW);
    kp_clargs_int(&a, (int)T);
    kp_clargs_buffer(&a, m);
    kp_clargs_int(&a, (int)ld);
    conv_clargs_bias(&a, bias, m);
    kp_clargs_tensor(&a, &ys, 4);
    return conv_clargs_run(&a, T, nb * g->K);
}

/* 16 matrices [rows, cols], row-major with row stride ld (or, with `col`, column-major with
 * column stride ld), `stride` apart from `offset` on. */
static kp_tensor batch_of(kp_buffer *buf, int64_t offset, int64_t stride, int64_t rows,
                          int64_t cols, int64_t ld, int col)
{
    kp_tensor t = kp_tensor_3d(buf, KP_F32, 16, rows, cols);
    t.offset = offset;
    t.strides[0] = stride;
    t.strides[1] = col ? 1 : ld;
    t.strides[2] = col ? ld : 1;
    return t;
}

/* Group q's 16 products M[xi]_q = U[xi]_q V[xi]_q over rows of P columns: one blas.gemm_batched
 * call where the GEMM tunable picks blas.gemm (one launch instead of 16), else (or without the
 * blas plugin) one conv_matmul each. */
static kp_status products(kp_launch *l, const conv_geom *g, int64_t q, kp_buffer *u, kp_buffer *v,
                          kp_buffer *m, int64_t P)
{
    int64_t Cg = g->C / g->groups, Kg = g->K / g->groups;
    if (!conv_gemm_is_tiled(l)) {
        kp_arg args[] = {KP_ARG_TENSOR("A", batch_of(u, q * Kg, g->K * Cg, Kg, Cg, g->K, 1)),
                         KP_ARG_TENSOR("B", batch_of(v, q * Cg * P, g->C * P, Cg, P, P, 0)),
                         KP_ARG_TENSOR("C", batch_of(m, q * Kg * P, g->K * P, Kg, P, P, 0)),
                         KP_ARG_FLOAT("beta", 0.0)};
        kp_status st =
            conv_host->launch(l, "blas.gemm_batched", args, sizeof args / sizeof args[0]);
        if (st != KP_ERR_NOT_FOUND)
            return st;
    }
    kp_status st = KP_OK;
    for (int64_t xi = 0; st == KP_OK && xi < 16; xi++) {
        kp_tensor a = conv_matrix(u, xi * g->K * Cg + q * Kg, Kg, Cg, 1);
        a.strides[1] = g->K; /* column-major: U is stored [C/groups][K] */
        kp_tensor b = conv_matrix(v, (xi * g->C + q * Cg) * P, Cg, P, P);
        kp_tensor c = conv_matrix(m, (xi * g->K + q * Kg) * P, Kg, P, P);
        st = conv_matmul(l, &a, &b, &c, 0.0);
    }
    return st;
}

/*
 * The kernels are transformed once per launch; then, a chunk of nb images at a time (as many as
 * COL_MAX_MB holds of V and M), the input tiles, one GEMM per (xi, group), M[xi]_q [K/groups, P] =
 * U[xi]_q [K/groups, C/groups] V[xi]_q [C/groups, P], and the output pass.
 */
kp_status conv_winograd_forward(kp_launch *l, const conv_geom *g, const kp_tensor *x,
                                const kp_tensor *w, const kp_tensor *bias, const kp_tensor *y)
{
    int64_t TW, T = tiles_of(g, &TW), Cg = g->C / g->groups;
    int64_t nb = conv_chunk(l, g->N, 4.0 * 16.0 * (double)(g->C + g->K) * (double)T);
    int64_t most = padded(nb * T);
    kp_buffer *u = NULL, *v = NULL, *m = NULL;
    kp_status st = conv_host->scratch(l, 2, (size_t)(16 * g->K * Cg) * sizeof(float), &u);
    if (st == KP_OK)
        st = conv_host->scratch(l, 0, (size_t)(16 * g->C * most) * sizeof(float), &v);
    if (st == KP_OK)
        st = conv_host->scratch(l, 1, (size_t)(16 * g->K * most) * sizeof(float), &m);
    if (st == KP_OK)
        st = filter_transform(l, g, w, u);
    for (int64_t n0 = 0; st == KP_OK && n0 < g->N; n0 += nb) {
        int64_t cur = g->N - n0 < nb ? g->N - n0 : nb, P = padded(cur * T);
        st = input_transform(l, g, x, n0, cur, v, P);
        for (int64_t q = 0; st == KP_OK && q < g->groups; q++)
            st = products(l, g, q, u, v, m, P);
        if (st == KP_OK)
            st = output_transform(l, g, m, P, bias, y, n0, cur);
    }
    return st;
}
