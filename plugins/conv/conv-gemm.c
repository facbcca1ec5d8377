/* SPDX-License-Identifier: Apache-2.0 */
/* The passes the GEMM-based convolutions share: chunking, im2col/col2im of a chunk, GEMMs. */
#include <math.h>

#include "conv.h"

/* ---- views ----------------------------------------------------------------------------------- */

kp_tensor conv_matrix(kp_buffer *buf, int64_t offset, int64_t rows, int64_t cols, int64_t ld)
{
    kp_tensor t = kp_tensor_2d(buf, KP_F32, rows, cols);
    t.offset = offset;
    t.strides[0] = ld;
    return t;
}

kp_tensor conv_images(const kp_tensor *t, int64_t n0, int64_t nb)
{
    kp_tensor v = *t;
    v.offset += n0 * t->strides[0];
    v.shape[0] = nb;
    return v;
}

int conv_plane_matrix(const kp_tensor *t)
{
    /* Rows are channels (stride strides[1]) and columns the plane, which must be one run with
     * unit stride: blas.gemm needs one unit stride and a leading dimension >= the row. */
    int64_t H = t->shape[2], W = t->shape[3], hw = H * W;
    int plane = (W == 1 || t->strides[3] == 1) && (H == 1 || t->strides[2] == W);
    return plane && (t->shape[1] == 1 || t->strides[1] >= hw);
}

kp_tensor conv_plane_rows(const kp_tensor *t, int64_t n, int64_t c0, int64_t rows)
{
    kp_tensor v = kp_tensor_2d(t->buffer, KP_F32, rows, t->shape[2] * t->shape[3]);
    v.offset = t->offset + n * t->strides[0] + c0 * t->strides[1];
    v.strides[0] = rows > 1 ? t->strides[1] : v.shape[1];
    return v;
}

int conv_is_pointwise(const conv_geom *g)
{
    return g->KH == 1 && g->KW == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
}

int64_t conv_chunk(kp_launch *l, int64_t N, double per_image)
{
    double limit = (double)conv_host->tunable_index(l, CONV_TUNE_COL_MAX_MB) * 1048576.0;
    int64_t nb = per_image > 0 ? (int64_t)floor(limit / per_image) : N;
    nb = nb < 1 ? 1 : nb > N ? N : nb;
    /* Equal chunks: 64 images in chunks of at most 31 run as 22 + 21 + 21, not 31 + 31 + 2,
     * whose last GEMM would be too small for CLBlast's fast (indirect) kernels. */
    int64_t chunks = (N + nb - 1) / nb;
    return (N + chunks - 1) / chunks;
}

/* ---- GEMM ------------------------------------------------------------------------------------ */

static int blas_layout(const kp_tensor *m)
{
    int64_t rows = m->shape[0], cols = m->shape[1], s0 = m->strides[0], s1 = m->strides[1];
    int row_ok = (cols <= 1 || s1 == 1) && (rows <= 1 || s0 >= cols);
    int col_ok = (rows <= 1 || s0 == 1) && (cols <= 1 || s1 >= rows);
    return row_ok || col_ok;
}

/* conv.cl's GEMMs: the register-tiled one when B and C are row-major, else the plain one. */
static kp_status own_gemm(kp_launch *l, const kp_tensor *a, const kp_tensor *b, const kp_tensor *c,
                          double beta, int tiled)
{
    kp_clargs g = kp_clargs_begin(conv_host, l, tiled ? "conv_gemm_tiled" : "conv_gemm", NULL);
    kp_clargs_int(&g, (int)c->shape[0]);
    kp_clargs_int(&g, (int)c->shape[1]);
    kp_clargs_int(&g, (int)a->shape[1]);
    kp_clargs_float(&g, (float)beta);
    kp_clargs_tensor(&g, a, 2);
    kp_clargs_tensor(&g, b, 2);
    kp_clargs_tensor(&g, c, 2);
    int64_t m = c->shape[0], n = c->shape[1];
    if (!tiled)
        return conv_clargs_run(&g, (n + 3) / 4, m);
    /* Strips of 32 columns. With strips enough for four work-groups, a work-item takes every row
     * of its strip, reusing its part of B; with fewer (a narrow C), 8 rows, for parallelism. */
    int64_t strips = (n + 31) / 32, rows = (m + 7) / 8 * 8;
    if (strips < 4 * conv_host->tunable_index(l, CONV_TUNE_WG))
        rows = 8;
    kp_clargs_int(&g, (int)rows);
    return conv_clargs_run(&g, strips, (m + rows - 1) / rows);
}

static int unit_columns(const kp_tensor *m)
{
    return m->shape[1] <= 1 || m->strides[1] == 1;
}

int conv_gemm_is_tiled(kp_launch *l)
{
    return conv_host->tunable_index(l, CONV_TUNE_GEMM) == 2; /* auto resolved by conv_resolve */
}

kp_status conv_matmul(kp_launch *l, const kp_tensor *a, const kp_tensor *b, const kp_tensor *c,
                      double beta)
{
    int tiled = unit_columns(b) && unit_columns(c);
    /* Fewer than 32 columns leave the tiled kernel only its plain loop: CLBlast does better. */
    if (conv_gemm_is_tiled(l) && tiled && c->shape[1] >= 32)
        return own_gemm(l, a, b, c, beta, 1);
    if (blas_layout(a) && blas_layout(b) && blas_layout(c)) {
        kp_arg args[] = {KP_ARG_TENSOR("A", *a), KP_ARG_TENSOR("B", *b), KP_ARG_TENSOR("C", *c),
                         KP_ARG_FLOAT("beta", beta)};
        kp_status st = conv_host->launch(l, "blas.gemm", args, sizeof args / sizeof args[0]);
        /* Not registered (no CLBlast, or disabled by the manifest): the plugin's own GEMM. */
        if (st != KP_ERR_NOT_FOUND)
            return st;
    }
    return own_gemm(l, a, b, c, beta, tiled);
}

/* ---- chunk passes ---------------------------------------------------------------------------- */

/* The columns of a chunk of nb images in the scratch buffer `col`, as the 3-D view
 * [nb, C KH KW, L] the im2col and col2im kernels take: the chunk layout [C KH KW, nb L], element
 * (n, r, l) at n L + r (nb L) + l, or, `transposed`, [nb L, C KH KW], element (n, r, l) at
 * (n L + l) C KH KW + r. */
static kp_tensor chunk_columns(const conv_geom *g, int64_t nb, kp_buffer *col, int transposed)
{
    int64_t L = g->OH * g->OW, rows = g->C * g->KH * g->KW;
    kp_tensor t = kp_tensor_3d(col, KP_F32, nb, rows, L);
    t.strides[0] = transposed ? L * rows : L;
    t.strides[1] = transposed ? 1 : nb * L;
    t.strides[2] = transposed ? rows : 1;
    return t;
}

kp_status conv_im2col_chunk(kp_launch *l, const conv_geom *g, const kp_tensor *x, int64_t n0,
                            int64_t nb, kp_buffer *col, int transposed)
{
    kp_tensor xs = conv_images(x, n0, nb), cs = chunk_columns(g, nb, col, transposed);
    conv_geom gc = *g;
    gc.N = nb;
    return conv_im2col_launch(l, &gc, &xs, &cs);
}

kp_status conv_col2im_chunk(kp_launch *l, const conv_geom *g, kp_buffer *col, const kp_tensor *dx,
                            int64_t n0, int64_t nb)
{
    kp_tensor xs = conv_images(dx, n0, nb), cs = chunk_columns(g, nb, col, 0);
    conv_geom gc = *g;
    gc.N = nb;
    return conv_col2im_launch(l, &gc, &cs, &xs);
}

kp_status conv_unpack_chunk(kp_launch *l, const conv_geom *g, kp_buffer *t, const kp_tensor *bias,
                            const kp_tensor *y, int64_t n0, int64_t nb)
{
    kp_tensor ys = conv_images(y, n0, nb);
    int64_t L = g->OH * g->OW;
    if (conv_row_kernels(l)) {
        kp_clargs a = kp_clargs_begin(conv_host, l, "conv_unpack_rows", NULL);
        kp_clargs_int(&a, (int)g->K);
        kp_clargs_int(&a, (int)(nb * g->K));
        kp_clargs_int(&a, (int)g->OH);
        kp_clargs_int(&a, (int)g->OW);
        kp_clargs_buffer(&a, t);
        kp_clargs_int(&a, (int)(nb * L));
        conv_clargs_bias(&a, bias, t);
        kp_clargs_tensor(&a, &ys, 4);
        return conv_clargs_run(&a, nb * g->K, 1);
    }
    kp_clargs a = kp_clargs_begin(conv_host, l, "conv_unpack", NULL);
    kp_clargs_int(&a, (int)g->K);
    kp_clargs_int(&a, (int)L);
    kp_clargs_int(&a, (int)g->OW);
    kp_clargs_buffer(&a, t);
    kp_clargs_int(&a, (int)(nb * L));
    conv_clargs_bias(&a, bias, t);
    kp_clargs_tensor(&a, &ys, 4);
    return conv_clargs_run(&a, L, nb * g->K);
}

kp_status conv_pack_chunk(kp_launch *l, const conv_geom *g, const kp_tensor *dy, int64_t n0,
                          int64_t nb, kp_buffer *t)
{
    kp_tensor ds = conv_images(dy, n0, nb);
    int64_t L = g->OH * g->OW;
    if (conv_row_kernels(l)) {
        kp_clargs a = kp_clargs_begin(conv_host, l, "conv_pack_rows", NULL);
        kp_clargs_int(&a, (int)g->K);
        kp_clargs_int(&a, (int)(nb * g->K));
        kp_clargs_int(&a, (int)g->OH);
        kp_clargs_int(&a, (int)g->OW);
        kp_clargs_tensor(&a, &ds, 4);
        kp_clargs_buffer(&a, t);
        kp_clargs_int(&a, (int)(nb * L));
        return conv_clargs_run(&a, nb * g->K, 1);
    }
    kp_clargs a = kp_clargs_begin(conv_host, l, "conv_pack", NULL);
    kp_clargs_int(&a, (int)g->K);
    kp_clargs_int(&a, (int)L);
    kp_clargs_int(&a, (int)g->OW);
    kp_clargs_tensor(&a, &ds, 4);
    kp_clargs_buffer(&a, t);
    kp_clargs_int(&a, (int)(nb * L));
    return conv_clargs_run(&a, L, nb * g->K);
}
