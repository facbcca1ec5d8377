/* SPDX-License-Identifier: Apache-2.0 */
/* gru.sequence_backward: backpropagation through time over gru.sequence's saved workspace. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gru-cell.h"
#include "gru-kernels.h"

#define F32 KP_DT(KP_F32)

#define TENSOR(idx, nm, acc, flg, text)                                                            \
    [idx] = {.name = nm,                                                                           \
             .kind = KP_ARG_KIND_TENSOR,                                                           \
             .access = acc,                                                                        \
             .dtypes = F32,                                                                        \
             .flags = flg,                                                                         \
             .doc = text}

static const kp_param_desc params[] = {
    TENSOR(BWD_X, "x", KP_ACCESS_IN, 0, "[T, B, I] the forward's inputs"),
    TENSOR(BWD_H0, "h0", KP_ACCESS_IN, 0, "[B, H] the forward's initial state"),
    TENSOR(BWD_H_ALL, "h_all", KP_ACCESS_IN, 0, "[T, B, H] the forward's states"),
    TENSOR(BWD_WS, "workspace", KP_ACCESS_IN, 0,
           "[T, B, 4H] the forward's workspace, same linear_before_reset"),
    TENSOR(BWD_W_IH, "w_ih", KP_ACCESS_IN, 0, "[3H, I] input weights, rows r, z, n"),
    TENSOR(BWD_W_HH, "w_hh", KP_ACCESS_IN, 0, "[3H, H] recurrent weights, rows r, z, n"),
    TENSOR(BWD_DH_ALL, "dh_all", KP_ACCESS_IN, KP_PARAM_OPTIONAL,
           "[T, B, H] upstream gradient of every state (omitted: zero)"),
    TENSOR(BWD_DH_LAST, "dh_last", KP_ACCESS_IN, KP_PARAM_OPTIONAL,
           "[B, H] upstream gradient of the last state, added to dh_all[T - 1] (omitted: zero)"),
    TENSOR(BWD_DX, "dx", KP_ACCESS_OUT, 0, "[T, B, I] gradient of x"),
    TENSOR(BWD_DH0, "dh0", KP_ACCESS_OUT, 0, "[B, H] gradient of h0"),
    TENSOR(BWD_DW_IH, "dw_ih", KP_ACCESS_OUT, 0, "[3H, I] gradient of w_ih (overwritten)"),
    TENSOR(BWD_DW_HH, "dw_hh", KP_ACCESS_OUT, 0, "[3H, H] gradient of w_hh (overwritten)"),
    TENSOR(BWD_DB_IH, "db_ih", KP_ACCESS_OUT, 0, "[3H] gradient of b_ih (overwritten)"),
    TENSOR(BWD_DB_HH, "db_hh", KP_ACCESS_OUT, 0, "[3H] gradient of b_hh (overwritten)"),
    [BWD_LBR] = {.name = "linear_before_reset",
                 .kind = KP_ARG_KIND_INT,
                 .access = KP_ACCESS_IN,
                 .flags = KP_PARAM_OPTIONAL,
                 .int_default = 1,
                 .doc = "the forward's variant: 1 PyTorch/cuDNN, 0 ONNX"},
};

static kp_status backward_check(const kp_call *call, kp_launch *l)
{
    const kp_value *a = call->args;
    const kp_tensor *x = &a[BWD_X].tensor, *h0 = &a[BWD_H0].tensor;
    gru_dims d;
    kp_status st = gru_check_sequence(l, x, h0, &d);
    if (st != KP_OK)
        return st;
    if (!a[BWD_DH_ALL].present && !a[BWD_DH_LAST].present)
        return gru_host->fail(l, KP_ERR_INVALID_ARG,
                              "dh_all, dh_last: give at least one upstream gradient");
    st = gru_check_weights(l, call, BWD_W_IH, BWD_W_HH, -1, -1, BWD_LBR, &d);
    if (st != KP_OK)
        return st; /* before 4H and 3H, which fit only once H has been checked */
    int64_t TBH[] = {d.T, d.B, d.H}, BH[] = {d.B, d.H};
    struct {
        int index, rank;
        const int64_t *shape;
        const char *pattern;
    } expect[] = {
        {BWD_H_ALL, 3, TBH, "[T, B, H]"},
        {BWD_WS, 3, (int64_t[]){d.T, d.B, 4 * d.H}, "[T, B, 4H]"},
        {BWD_DH_ALL, 3, TBH, "[T, B, H]"},
        {BWD_DH_LAST, 2, BH, "[B, H]"},
        {BWD_DX, 3, (int64_t[]){d.T, d.B, d.I}, "[T, B, I]"},
        {BWD_DH0, 2, BH, "[B, H]"},
        {BWD_DW_IH, 2, (int64_t[]){3 * d.H, d.I}, "[3H, I]"},
        {BWD_DW_HH, 2, (int64_t[]){3 * d.H, d.H}, "[3H, H]"},
        {BWD_DB_IH, 1, (int64_t[]){3 * d.H}, "[3H]"},
        {BWD_DB_HH, 1, (int64_t[]){3 * d.H}, "[3H]"},
    };
    for (size_t i = 0; st == KP_OK && i < sizeof expect / sizeof expect[0]; i++)
        if (a[expect[i].index].present)
            st = gru_expect(l, params[expect[i].index].name, &a[expect[i].index].tensor,
                            expect[i].rank, expect[i].shape, expect[i].pattern);
    return st == KP_OK ? gru_check_int_range(l, call, &d) : st;
}

/* ---- enqueue --------------------------------------------------------------------------------- */

typedef struct bwd {
    const kp_value *a;
    int64_t T, B, I, H;
    int lbr, blas_steps; /* the per-step products through blas.gemm */
    int64_t batch_gemm;
    kp_tensor dgx, dgh, tmp; /* [T B, 3H] gate gradients (dgh = dgx when lbr 0); [B, H] */
} bwd;

static kp_status gates(kp_launch *l, const bwd *w, int stage, int64_t t)
{
    const kp_value *a = w->a;
    size_t wg = gru_wg(l);
    const kp_tensor none = {0};
    kp_tensor dh_t = a[BWD_DH_ALL].present ? gru_step_of(&a[BWD_DH_ALL].tensor, t) : none;
    /* The last step starts from dh_last; every earlier one from the carry in dh0. */
    const kp_tensor *carry_in = t < w->T - 1             ? &a[BWD_DH0].tensor
                                : a[BWD_DH_LAST].present ? &a[BWD_DH_LAST].tensor
                                                         : &none;
    kp_tensor ws = gru_step_of(&a[BWD_WS].tensor, t);
    kp_tensor hp = t ? gru_step_of(&a[BWD_H_ALL].tensor, t - 1) : a[BWD_H0].tensor;
    kp_tensor dgx = gru_sub(&w->dgx, t * w->B, w->B, 0, 3 * w->H);
    kp_tensor dgh = gru_sub(&w->dgh, t * w->B, w->B, 0, 3 * w->H);
    kp_clargs c = kp_clargs_begin(gru_host, l, "gru_bwd_gates", NULL);
    kp_clargs_int(&c, stage);
    kp_clargs_int(&c, (int)w->H);
    const kp_tensor *views[] = {&dh_t, carry_in, &a[BWD_DH0].tensor, &ws, &hp, &w->tmp, &dgx, &dgh};
    for (size_t v = 0; v < sizeof views / sizeof views[0]; v++)
        gru_clargs_tensor(&c, views[v], 2, a[BWD_H0].tensor.buffer);
    size_t global[2] = {gru_round_up(w->H, wg), (size_t)w->B}, local[2] = {wg, 1};
    return kp_clargs_enqueue(&c, 2, global, local);
}

/* Step t: the gate gradients, then dh0 (the carry) += dgh[t] w_hh. */
static kp_status step(kp_launch *l, const bwd *w, int64_t t)
{
    const kp_tensor *w_hh = &w->a[BWD_W_HH].tensor, *carry = &w->a[BWD_DH0].tensor;
    int64_t B = w->B, H = w->H;
    kp_tensor dg = gru_sub(&w->dgh, t * B, B, 0, 3 * H);
    if (w->lbr) {
        kp_status st = gates(l, w, 0, t);
        return st == KP_OK ? gru_gemm(l, &dg, w_hh, carry, 1.0, w->blas_steps) : st;
    }
    /* linear_before_reset = 0: dr needs W_hn^T dan before the r gradients exist. */
    kp_tensor dg_n = gru_sub(&dg, 0, B, 2 * H, H), dg_rz = gru_sub(&dg, 0, B, 0, 2 * H);
    kp_tensor w_n = gru_sub(w_hh, 2 * H, H, 0, H), w_rz = gru_sub(w_hh, 0, 2 * H, 0, H);
    kp_status st = gates(l, w, 1, t);
    if (st == KP_OK)
        st = gru_gemm(l, &dg_n, &w_n, &w->tmp, 0.0, w->blas_steps);
    if (st == KP_OK)
        st = gates(l, w, 2, t);
    return st == KP_OK ? gru_gemm(l, &dg_rz, &w_rz, carry, 1.0, w->blas_steps) : st;
}

/* Rows per chunk of the split products: at most 64, and at most 256 chunks. */
static int64_t split_chunk(int64_t rows)
{
    int64_t chunks = (rows + 63) / 64 < 256 ? (rows + 63) / 64 : 256;
    return (rows + chunks - 1) / chunks;
}

static int split_fits(kp_launch *l, int64_t outputs)
{
    return outputs <= gru_host->tunable_index(l, GRU_TUNE_SPLIT_MN);
}

/* C = beta C + the `chunks` partial products in scratch slot 3 (gru_chunk_sum). */
static kp_status chunk_sum(kp_launch *l, int64_t chunks, kp_buffer *part, const kp_tensor *c,
                           double beta)
{
    size_t wg = gru_wg(l);
    kp_clargs s = kp_clargs_begin(gru_host, l, "gru_chunk_sum", NULL);
    kp_clargs_int(&s, (int)chunks);
    kp_clargs_int(&s, (int)c->shape[0]);
    kp_clargs_int(&s, (int)c->shape[1]);
    kp_clargs_float(&s, (float)beta);
    kp_clargs_buffer(&s, part);
    kp_clargs_tensor(&s, c, 2);
    size_t global[2] = {gru_round_up(c->shape[0], wg), (size_t)c->shape[1]}, local[2] = {wg, 1};
    return kp_clargs_enqueue(&s, 2, global, local);
}

/* C = A^T V + beta C over `rows` rows by gru_at_v_part and gru_chunk_sum. */
static kp_status split_at_v(kp_launch *l, const bwd *w, const kp_tensor *a, int64_t rows,
                            const kp_tensor *v3, const kp_tensor *c, double beta)
{
    int64_t M = c->shape[0], N = c->shape[1], chunk = split_chunk(rows);
    int64_t chunks = (rows + chunk - 1) / chunk;
    size_t wg = gru_wg(l);
    kp_buffer *part;
    kp_status st = gru_host->scratch(l, 3, (size_t)(chunks * M * N) * sizeof(float), &part);
    if (st != KP_OK)
        return st;
    kp_clargs p = kp_clargs_begin(gru_host, l, "gru_at_v_part", NULL);
    const int ints[] = {(int)rows, (int)chunk, (int)w->B, (int)M, (int)N};
    for (int i = 0; i < 5; i++)
        kp_clargs_int(&p, ints[i]);
    kp_clargs_tensor(&p, a, 2);
    kp_clargs_tensor(&p, v3, 3);
    kp_clargs_buffer(&p, part);
    size_t global[3] = {gru_round_up(M, wg), (size_t)N, (size_t)chunks}, local[3] = {wg, 1, 1};
    st = kp_clargs_enqueue(&p, 3, global, local);
    return st == KP_OK ? chunk_sum(l, chunks, part, c, beta) : st;
}

/* C = sum over steps of A[t]^T V[t] with V[t] rows of v3 (steps t0..t0+n) or of a fixed matrix:
 * split in chunks of rows when C is small, else one GEMM when v3's steps flatten, else one per
 * step accumulating with beta = 1. */
static kp_status gemm_at_v(kp_launch *l, const bwd *w, const kp_tensor *g, int64_t t0, int64_t n,
                           const kp_tensor *v3, const kp_tensor *c, double beta)
{
    int64_t B = w->B;
    int use_blas = c->shape[0] >= w->batch_gemm;
    /* A small output is a few GEMM tiles, which leave a GPU mostly idle over the long shared
     * dimension (the world model's dw_ih, [192, 65] over 6400 rows: see docs/kernels/gru.md). */
    if (split_fits(l, c->shape[0] * c->shape[1])) {
        kp_tensor a = gru_sub(g, t0 * B, n * B, 0, g->shape[1]), v = *v3;
        v.offset += t0 * v.strides[0];
        return split_at_v(l, w, &a, n * B, &v, c, beta);
    }
    kp_tensor v;
    if (gru_flatten(v3, t0, n, &v)) {
        kp_tensor at = kp_tensor_transpose(gru_sub(g, t0 * B, n * B, 0, g->shape[1]), 0, 1);
        return gru_gemm(l, &at, &v, c, beta, use_blas);
    }
    kp_status st = KP_OK;
    for (int64_t t = t0; st == KP_OK && t < t0 + n; t++) {
        kp_tensor at = kp_tensor_transpose(gru_sub(g, t * B, B, 0, g->shape[1]), 0, 1);
        kp_tensor vt = gru_step_of(v3, t);
        st = gru_gemm(l, &at, &vt, c, t == t0 ? beta : 1.0, use_blas);
    }
    return st;
}

/* dW (rows [r0, r0 + rows) of dw_hh) = sum_t dg[t]^T h_prev[t]: h0 for t = 0, h_all after. */
static kp_status grad_hh(kp_launch *l, const bwd *w, int64_t r0, int64_t rows)
{
    const kp_value *a = w->a;
    kp_tensor g = gru_sub(&w->dgh, 0, w->T * w->B, r0, rows);
    kp_tensor c = gru_sub(&a[BWD_DW_HH].tensor, r0, rows, 0, w->H);
    kp_tensor h0 = a[BWD_H0].tensor;
    h0.rank = 3; /* h0 as a one-step sequence */
    h0.shape[2] = h0.shape[1];
    h0.strides[2] = h0.strides[1];
    h0.shape[1] = h0.shape[0];
    h0.strides[1] = h0.strides[0];
    h0.shape[0] = 1;
    h0.strides[0] = 0;
    kp_status st = gemm_at_v(l, w, &g, 0, 1, &h0, &c, 0.0);
    if (st == KP_OK && w->T > 1) {
        /* h_all's steps 0..T-2 pair with dg's steps 1..T-1: shift the view by one step. */
        kp_tensor h_prev = a[BWD_H_ALL].tensor;
        h_prev.offset -= h_prev.strides[0];
        st = gemm_at_v(l, w, &g, 1, w->T - 1, &h_prev, &c, 1.0);
    }
    return st;
}

/* out[j] = the sum of g's column j (the bias gradients): split in chunks of rows like the weight
 * products when SPLIT_MN allows, else one work-item per column. */
static kp_status colsum(kp_launch *l, const kp_tensor *g, const kp_tensor *out)
{
    size_t wg = gru_wg(l);
    int64_t rows = g->shape[0], N = g->shape[1];
    if (split_fits(l, N)) {
        int64_t chunk = split_chunk(rows), chunks = (rows + chunk - 1) / chunk;
        kp_buffer *part;
        kp_status st = gru_host->scratch(l, 3, (size_t)(chunks * N) * sizeof(float), &part);
        if (st != KP_OK)
            return st;
        kp_clargs p = kp_clargs_begin(gru_host, l, "gru_colsum_part", NULL);
        kp_clargs_int(&p, (int)rows);
        kp_clargs_int(&p, (int)chunk);
        kp_clargs_int(&p, (int)N);
        kp_clargs_tensor(&p, g, 2);
        kp_clargs_buffer(&p, part);
        size_t global[2] = {gru_round_up(N, wg), (size_t)chunks}, local[2] = {wg, 1};
        st = kp_clargs_enqueue(&p, 2, global, local);
        /* out [N] as the column [N, 1] that gru_chunk_sum writes. */
        kp_tensor column = *out;
        column.rank = 2;
        column.shape[1] = 1;
        column.strides[1] = 0;
        return st == KP_OK ? chunk_sum(l, chunks, part, &column, 0.0) : st;
    }
    kp_clargs a = kp_clargs_begin(gru_host, l, "gru_colsum", NULL);
    kp_clargs_int(&a, (int)rows);
    kp_clargs_int(&a, (int)N);
    kp_clargs_tensor(&a, g, 2);
    kp_clargs_tensor(&a, out, 2);
    size_t global = gru_round_up(N, wg);
    return kp_clargs_enqueue(&a, 1, &global, &wg);
}

/* The steps of the rows route in one gru_bwd_rows launch: the gate gradients of every step into
 * dgx and dgh, the carry into dh0. */
static kp_status rows(kp_launch *l, const bwd *w)
{
    const kp_value *a = w->a;
    const kp_tensor none = {0};
    kp_buffer *stand_in = a[BWD_H0].tensor.buffer;
    size_t wg = gru_wg(l), global = (size_t)w->B * wg;
    kp_clargs c = kp_clargs_begin(gru_host, l, "gru_bwd_rows", NULL);
    kp_clargs_int(&c, (int)w->T);
    kp_clargs_int(&c, (int)w->B);
    kp_clargs_int(&c, (int)w->H);
    gru_clargs_tensor(&c, a[BWD_DH_ALL].present ? &a[BWD_DH_ALL].tensor : &none, 3, stand_in);
    gru_clargs_tensor(&c, a[BWD_DH_LAST].present ? &a[BWD_DH_LAST].tensor : &none, 2, stand_in);
    gru_clargs_tensor(&c, &a[BWD_H0].tensor, 2, stand_in);
    gru_clargs_tensor(&c, &a[BWD_H_ALL].tensor, 3, stand_in);
    gru_clargs_tensor(&c, &a[BWD_WS].tensor, 3, stand_in);
    const kp_tensor *mats[] = {&a[BWD_W_HH].tensor, &w->dgx, &w->dgh, &a[BWD_DH0].tensor};
    for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++)
        gru_clargs_tensor(&c, mats[i], 2, stand_in);
    kp_clargs_local(&c, (size_t)(7 * w->H) * sizeof(float));
    return kp_clargs_enqueue(&c, 1, &global, &wg);
}

static kp_status backward_enqueue(const kp_call *call, kp_launch *l)
{
    const kp_value *a = call->args;
    const kp_tensor *x = &a[BWD_X].tensor;
    bwd w = {.a = a,
             .T = x->shape[0],
             .B = x->shape[1],
             .I = x->shape[2],
             .H = a[BWD_H0].tensor.shape[1],
             .lbr = (int)a[BWD_LBR].i,
             .batch_gemm = gru_batch_gemm(l)};
    int64_t TB = w.T * w.B, H3 = 3 * w.H;
    w.blas_steps = w.B >= w.batch_gemm;
    kp_buffer *bx, *bh = NULL, *bt = NULL;
    size_t gate_bytes = (size_t)(TB * H3) * sizeof(float);
    kp_status st = gru_host->scratch(l, 0, gate_bytes, &bx);
    if (st == KP_OK && w.lbr)
        st = gru_host->scratch(l, 1, gate_bytes, &bh);
    if (st == KP_OK && !w.lbr)
        st = gru_host->scratch(l, 2, (size_t)(w.B * w.H) * sizeof(float), &bt);
    if (st != KP_OK)
        return st;
    w.dgx = gru_scratch_matrix(bx, 0, TB, H3);
    w.dgh = w.lbr ? gru_scratch_matrix(bh, 0, TB, H3) : w.dgx;
    if (bt)
        w.tmp = gru_scratch_matrix(bt, 0, w.B, w.H);
    if (gru_rows_route(l, w.H, w.lbr, 7 * w.H))
        st = rows(l, &w);
    else
        for (int64_t t = w.T - 1; st == KP_OK && t >= 0; t--)
            st = step(l, &w, t);
    /* The weight and input gradients: products over all steps at once. */
    const kp_tensor *w_ih = &a[BWD_W_IH].tensor, *dx = &a[BWD_DX].tensor;
    kp_tensor dx_flat;
    if (st == KP_OK && gru_flatten(dx, 0, w.T, &dx_flat)) {
        st = gru_gemm(l, &w.dgx, w_ih, &dx_flat, 0.0, TB >= w.batch_gemm);
    } else {
        for (int64_t t = 0; st == KP_OK && t < w.T; t++) {
            kp_tensor g = gru_sub(&w.dgx, t * w.B, w.B, 0, H3), dxt = gru_step_of(dx, t);
            st = gru_gemm(l, &g, w_ih, &dxt, 0.0, w.blas_steps);
        }
    }
    if (st == KP_OK)
        st = gemm_at_v(l, &w, &w.dgx, 0, w.T, x, &a[BWD_DW_IH].tensor, 0.0);
    if (st == KP_OK && w.lbr) {
        st = grad_hh(l, &w, 0, H3);
    } else if (st == KP_OK) {
        /* W_hn multiplied r * h_prev, which the forward left in the workspace's 4th slot. */
        kp_tensor rh = a[BWD_WS].tensor, g_n = gru_sub(&w.dgh, 0, TB, 2 * w.H, w.H);
        kp_tensor c = gru_sub(&a[BWD_DW_HH].tensor, 2 * w.H, w.H, 0, w.H);
        rh.offset += 3 * w.H * rh.strides[2];
        rh.shape[2] = w.H;
        st = grad_hh(l, &w, 0, 2 * w.H);
        if (st == KP_OK)
            st = gemm_at_v(l, &w, &g_n, 0, w.T, &rh, &c, 0.0);
    }
    if (st == KP_OK)
        st = colsum(l, &w.dgx, &a[BWD_DB_IH].tensor);
    return st == KP_OK ? colsum(l, &w.dgh, &a[BWD_DB_HH].tensor) : st;
}

/* ---- samples and cost ------------------------------------------------------------------------ */

typedef struct bwd_size {
    const char *name;
    int64_t T, B, I, H;
    int lbr, dh_all, dh_last;
} bwd_size;

static const bwd_size sizes[] = {
    {"tiny", 3, 2, 3, 4, 1, 1, 1},          {"prime", 9, 3, 5, 7, 1, 1, 1},
    {"lbr0", 9, 3, 5, 7, 0, 1, 1},          {"last", 9, 2, 4, 3, 1, 0, 1},
    {"all", 1, 1, 1, 1, 0, 1, 0},           {"gemm", 3, 37, 13, 257, 1, 1, 1},
    {"lbr0-gemm", 3, 37, 13, 257, 0, 1, 0}, {"seed", 50, 1, 321, 256, 1, 1, 1},
    {"wm", 50, 128, 65, 64, 1, 1, 1},       {"big", 15, 1024, 1024, 1024, 1, 1, 1},
};

/* The forward is run on the sampled inputs so that h_all and the workspace are what gru.sequence
 * would have saved: random ones would test formulas on states no forward produces. */
static kp_status backward_sample(kp_sample *s, const char *name)
{
    const bwd_size *z = NULL;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0] && !z; i++)
        if (strcmp(sizes[i].name, name) == 0)
            z = &sizes[i];
    long long t, b, in, hid;
    bwd_size any = {name, 0, 0, 0, 0, 1, 1, 1};
    if (!z && sscanf(name, "%lldx%lldx%lldx%lld", &t, &b, &in, &hid) == 4 && t > 0 && b > 0 &&
        in > 0 && hid > 0) {
        any.T = t, any.B = b, any.I = in, any.H = hid; /* "TxBxIxH" */
        z = &any;
    }
    if (!z)
        return KP_ERR_NOT_FOUND;
    gru_dims d = {.T = z->T, .B = z->B, .I = z->I, .H = z->H, .lbr = z->lbr};
    int64_t H3 = 3 * d.H, H4 = 4 * d.H;
    float *x, *h0, *w_ih, *w_hh, *h_all, *ws;
    kp_status st = gru_host->sample_tensor(s, "x", KP_F32, 3, (int64_t[]){d.T, d.B, d.I}, -1.0, 1.0,
                                           (void **)&x);
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "h0", KP_F32, 2, (int64_t[]){d.B, d.H}, -1.0, 1.0,
                                     (void **)&h0);
    double k = 1.0 / sqrt((double)d.H); /* PyTorch's initialisation, as gru_sample_weights */
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "w_ih", KP_F32, 2, (int64_t[]){H3, d.I}, -k, k,
                                     (void **)&w_ih);
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "w_hh", KP_F32, 2, (int64_t[]){H3, d.H}, -k, k,
                                     (void **)&w_hh);
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "h_all", KP_F32, 3, (int64_t[]){d.T, d.B, d.H}, -1.0, 1.0,
                                     (void **)&h_all);
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "workspace", KP_F32, 3, (int64_t[]){d.T, d.B, H4}, 0.0, 1.0,
                                     (void **)&ws);
    /* The backward takes no biases (their effect is in h_all and the workspace), but the
     * forward that makes those should have some: drawn from the sample's stream. Benchmark
     * sizes (over 10^8 multiply-adds of host forward) keep the random outputs instead: the
     * timing does not depend on the values. */
    int forward = (double)(d.T * d.B * H3) * (double)(d.I + d.H) <= 1e8;
    float *bias = st == KP_OK && forward ? malloc((size_t)(2 * H3) * sizeof *bias) : NULL;
    if (st == KP_OK && forward && !bias)
        return KP_ERR_OUT_OF_MEMORY;
    for (int64_t i = 0; bias && i < 2 * H3; i++)
        bias[i] = (float)(k * (2.0 * (double)(gru_host->sample_random(s) >> 11) * 0x1p-53 - 1.0));
    if (st == KP_OK && bias) {
        gru_hview vx = {x, 0, d.I, 1}, vh0 = {h0, 0, d.H, 1}, vwi = {w_ih, 0, d.I, 1};
        gru_hview vwh = {w_hh, 0, d.H, 1}, vbi = {bias, 0, 0, 1}, vbh = {bias + H3, 0, 0, 1};
        gru_hview vha = {h_all, 0, d.H, 1}, vws = {ws, 0, H4, 1};
        st = gru_forward_host(&d, vx, d.B * d.I, vh0, vwi, vwh, vbi, vbh, vha, d.B * d.H, vws,
                              d.B * H4);
    }
    free(bias);
    if (st == KP_OK && z->dh_all)
        st = gru_host->sample_tensor(s, "dh_all", KP_F32, 3, (int64_t[]){d.T, d.B, d.H}, -1.0, 1.0,
                                     NULL);
    if (st == KP_OK && z->dh_last)
        st = gru_host->sample_tensor(s, "dh_last", KP_F32, 2, (int64_t[]){d.B, d.H}, -1.0, 1.0,
                                     NULL);
    const char *outs[] = {"dx", "dh0", "dw_ih", "dw_hh", "db_ih", "db_hh"};
    int64_t shapes[][3] = {{d.T, d.B, d.I}, {d.B, d.H}, {H3, d.I}, {H3, d.H}, {H3}, {H3}};
    int32_t ranks[] = {3, 2, 2, 2, 1, 1};
    for (size_t i = 0; st == KP_OK && i < 6; i++)
        st = gru_host->sample_tensor(s, outs[i], KP_F32, ranks[i], shapes[i], 0, 0, NULL);
    return st == KP_OK ? gru_host->sample_int(s, "linear_before_reset", d.lbr) : st;
}

/* Per step and row: the gate gradients (about 20 H FLOPs), dh w_hh (6 H^2); over all steps dx
 * (6 H I per row) and the weight gradients (6 H (I + H) per row). Bytes: every input and output
 * once, the weights once. */
static void backward_cost(const kp_call *call, kp_cost *out)
{
    const kp_tensor *x = &call->args[BWD_X].tensor;
    double T = (double)x->shape[0], B = (double)x->shape[1], I = (double)x->shape[2];
    double H = (double)call->args[BWD_H0].tensor.shape[1];
    double dh = (call->args[BWD_DH_ALL].present ? T * B * H : 0.0) +
                (call->args[BWD_DH_LAST].present ? B * H : 0.0);
    out->flops = T * B * (20.0 * H + 6.0 * H * H + 6.0 * H * I + 6.0 * H * (I + H));
    out->bytes = 4.0 * (2.0 * 3.0 * H * (I + H) + 6.0 * H + 2.0 * B * H +
                        T * B * (2.0 * I + H + 4.0 * H) + dh);
}

/* ---- descriptor ------------------------------------------------------------------------------ */

static const char *const verify_sizes[] = {"tiny", "prime", "lbr0",      "last",
                                           "all",  "gemm",  "lbr0-gemm", NULL};
static const char *const bench_sizes[] = {"seed", "wm", "big", NULL};

/* On CPUs where blas.gemm runs OpenBLAS, every product of the backward goes through it
 * (BATCH_GEMM 1): below 256 rows the products otherwise run gru_matmul, a plain PoCL kernel, and
 * `kernelport bench gru.sequence_backward` on the 2-core EPYC took 1.4-14x longer that way at
 * batch 1, 16, 32, 64 and 128 (docs/PERFORMANCE.md, #30). The forward kernels resolve to 8
 * there (gru_cell_resolve): below it their fused kernel was as fast or faster. */
static const char *backward_resolve(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved)
{
    if (index == GRU_TUNE_BATCH_GEMM && value == 0 && gru_host_blas(l)) {
        *resolved = 1;
        return "1 on CPUs (blas.gemm runs OpenBLAS there: every product through it)";
    }
    return gru_cell_resolve(l, index, value, resolved);
}

const kp_kernel_desc gru_sequence_backward_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "gru.sequence_backward",
    .summary = "BPTT through gru.sequence: dx, dh0, dw_ih, dw_hh, db_ih, db_hh, f32",
    .params = params,
    .n_params = BWD_N,
    .tunables = gru_cell_tunables,
    .n_tunables = GRU_N_TUNABLES,
    .source = kp_kernel_gru_cl,
    .source_name = "gru.cl",
    .entry = "gru_bwd_gates",
    .check = backward_check,
    .enqueue = backward_enqueue,
    .reference = gru_backward_reference,
    .sample = backward_sample,
    .cost = backward_cost,
    .verify_sizes = verify_sizes,
    .bench_sizes = bench_sizes,
    .tolerance = gru_backward_tolerance,
    .resolve = backward_resolve,
};
