/* SPDX-License-Identifier: Apache-2.0 */
/* Host references of the GRU cell kernels (double accumulation) and their verification bounds. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gru-cell.h"

#define U 0x1p-24 /* f32 unit roundoff */

gru_hview gru_hview_of(const kp_call *call, int index)
{
    const kp_value *v = &call->args[index];
    gru_hview h = {NULL, 0, 0, 0};
    if (!v->present)
        return h;
    int32_t r = v->tensor.rank;
    h.p = v->host;
    h.off = v->tensor.offset;
    h.rs = r >= 2 ? v->tensor.strides[r - 2] : 0;
    h.cs = r >= 1 ? v->tensor.strides[r - 1] : 0;
    return h;
}

gru_hview gru_hview_step(gru_hview v, const kp_tensor *t3, int64_t t)
{
    v.off += t * t3->strides[0];
    return v;
}

static double get(gru_hview v, int64_t r, int64_t c)
{
    return v.p ? (double)v.p[v.off + r * v.rs + c * v.cs] : 0.0;
}

static void put(gru_hview v, int64_t r, int64_t c, double x)
{
    v.p[v.off + r * v.rs + c * v.cs] = (float)x;
}

static double sigmoid(double a)
{
    return 1.0 / (1.0 + exp(-a));
}

static gru_hview shift(gru_hview v, int64_t by)
{
    v.off += by;
    return v;
}

/* ---- forward --------------------------------------------------------------------------------- */

kp_status gru_forward_host(const gru_dims *d, gru_hview x, int64_t ts_x, gru_hview h0,
                           gru_hview w_ih, gru_hview w_hh, gru_hview b_ih, gru_hview b_hh,
                           gru_hview h_all, int64_t ts_h, gru_hview ws, int64_t ts_ws)
{
    int64_t H = d->H;
    double *gx = malloc((size_t)(3 * H) * sizeof *gx), *r = malloc((size_t)H * sizeof *r);
    double *z = malloc((size_t)H * sizeof *z), *rh = malloc((size_t)H * sizeof *rh);
    if (!gx || !r || !z || !rh) {
        free(gx), free(r), free(z), free(rh);
        return KP_ERR_OUT_OF_MEMORY;
    }
    for (int64_t t = 0; t < d->T; t++) {
        gru_hview xt = shift(x, t * ts_x), hp = t ? shift(h_all, (t - 1) * ts_h) : h0;
        gru_hview out = shift(h_all, t * ts_h), wst = shift(ws, t * ts_ws);
        for (int64_t b = 0; b < d->B; b++) {
            for (int64_t q = 0; q < 3 * H; q++) {
                double s = get(b_ih, 0, q);
                for (int64_t k = 0; k < d->I; k++)
                    s += get(w_ih, q, k) * get(xt, b, k);
                gx[q] = s;
            }
            for (int64_t j = 0; j < H; j++) {
                double sr = get(b_hh, 0, j), sz = get(b_hh, 0, H + j);
                for (int64_t k = 0; k < H; k++) {
                    sr += get(w_hh, j, k) * get(hp, b, k);
                    sz += get(w_hh, H + j, k) * get(hp, b, k);
                }
                r[j] = sigmoid(gx[j] + sr);
                z[j] = sigmoid(gx[H + j] + sz);
                rh[j] = r[j] * get(hp, b, j);
            }
            for (int64_t j = 0; j < H; j++) {
                /* linear_before_reset 1: hn = W_hn h + b_hn, scaled by r; 0: W_hn (r h) + b_hn. */
                double hn = get(b_hh, 0, 2 * H + j);
                for (int64_t k = 0; k < H; k++)
                    hn += get(w_hh, 2 * H + j, k) * (d->lbr ? get(hp, b, k) : rh[k]);
                double n = tanh(gx[2 * H + j] + (d->lbr ? r[j] * hn : hn));
                put(out, b, j, (1.0 - z[j]) * n + z[j] * get(hp, b, j));
                if (!wst.p)
                    continue;
                put(wst, b, j, r[j]);
                put(wst, b, H + j, z[j]);
                put(wst, b, 2 * H + j, n);
                put(wst, b, 3 * H + j, d->lbr ? hn : rh[j]);
            }
        }
    }
    free(gx), free(r), free(z), free(rh);
    return KP_OK;
}

static kp_status fail_oom(kp_launch *l, kp_status st)
{
    return st == KP_OK ? st : gru_host->fail(l, st, "reference: out of host memory");
}

kp_status gru_step_reference(const kp_call *call, kp_launch *l)
{
    const kp_tensor *x = &call->args[STEP_X].tensor;
    gru_dims d = {.T = 1,
                  .B = x->shape[0],
                  .I = x->shape[1],
                  .H = call->args[STEP_H].tensor.shape[1],
                  .lbr = (int)call->args[STEP_LBR].i};
    gru_hview none = {NULL, 0, 0, 0};
    return fail_oom(l,
                    gru_forward_host(&d, gru_hview_of(call, STEP_X), 0, gru_hview_of(call, STEP_H),
                                     gru_hview_of(call, STEP_W_IH), gru_hview_of(call, STEP_W_HH),
                                     gru_hview_of(call, STEP_B_IH), gru_hview_of(call, STEP_B_HH),
                                     gru_hview_of(call, STEP_H_OUT), 0, none, 0));
}

kp_status gru_sequence_reference(const kp_call *call, kp_launch *l)
{
    const kp_value *a = call->args;
    const kp_tensor *x = &a[SEQ_X].tensor;
    gru_dims d = {.T = x->shape[0],
                  .B = x->shape[1],
                  .I = x->shape[2],
                  .H = a[SEQ_H0].tensor.shape[1],
                  .lbr = (int)a[SEQ_LBR].i};
    return fail_oom(l, gru_forward_host(&d, gru_hview_of(call, SEQ_X), x->strides[0],
                                        gru_hview_of(call, SEQ_H0), gru_hview_of(call, SEQ_W_IH),
                                        gru_hview_of(call, SEQ_W_HH), gru_hview_of(call, SEQ_B_IH),
                                        gru_hview_of(call, SEQ_B_HH), gru_hview_of(call, SEQ_H_ALL),
                                        a[SEQ_H_ALL].tensor.strides[0], gru_hview_of(call, SEQ_WS),
                                        a[SEQ_WS].present ? a[SEQ_WS].tensor.strides[0] : 0));
}

/* ---- backward -------------------------------------------------------------------------------- */

/* The backward in double. With `bound`, every final sum adds |terms| instead (the gate gradients
 * and the carry stay signed), and bound->carry gets the largest |term| sum of a carry update: the
 * magnitudes rounding errors are relative to. */
typedef struct bwd_math {
    int64_t T, B, I, H;
    int lbr;
    double *dgx, *dgh, *dh0, *dx, *dw_ih, *dw_hh, *db_ih, *db_hh; /* row-major, contiguous */
    double carry_abs;
} bwd_math;

static void bwd_free(bwd_math *m)
{
    free(m->dgx), free(m->dgh), free(m->dh0), free(m->dx);
    free(m->dw_ih), free(m->dw_hh), free(m->db_ih), free(m->db_hh);
}

static kp_status bwd_compute(const kp_call *call, bwd_math *m, int bound)
{
    const kp_value *a = call->args;
    const kp_tensor *x3 = &a[BWD_X].tensor;
    memset(m, 0, sizeof *m);
    m->T = x3->shape[0], m->B = x3->shape[1], m->I = x3->shape[2];
    m->H = a[BWD_H0].tensor.shape[1], m->lbr = (int)a[BWD_LBR].i;
    int64_t T = m->T, B = m->B, I = m->I, H = m->H, H3 = 3 * H, TB = T * B;
    m->dgx = calloc((size_t)(TB * H3), sizeof(double));
    m->dgh = calloc((size_t)(TB * H3), sizeof(double));
    m->dh0 = calloc((size_t)(B * H), sizeof(double));
    m->dx = calloc((size_t)(TB * I), sizeof(double));
    m->dw_ih = calloc((size_t)(H3 * I), sizeof(double));
    m->dw_hh = calloc((size_t)(H3 * H), sizeof(double));
    m->db_ih = calloc((size_t)H3, sizeof(double));
    m->db_hh = calloc((size_t)H3, sizeof(double));
    double *dh = calloc((size_t)H, sizeof *dh);
    if (!m->dgx || !m->dgh || !m->dh0 || !m->dx || !m->dw_ih || !m->dw_hh || !m->db_ih ||
        !m->db_hh || !dh) {
        bwd_free(m);
        free(dh);
        return KP_ERR_OUT_OF_MEMORY;
    }
    gru_hview x = gru_hview_of(call, BWD_X), h0 = gru_hview_of(call, BWD_H0);
    gru_hview h_all = gru_hview_of(call, BWD_H_ALL), ws = gru_hview_of(call, BWD_WS);
    gru_hview w_ih = gru_hview_of(call, BWD_W_IH), w_hh = gru_hview_of(call, BWD_W_HH);
    gru_hview dh_all = gru_hview_of(call, BWD_DH_ALL), last = gru_hview_of(call, BWD_DH_LAST);
    for (int64_t b = 0; b < B; b++)
        for (int64_t j = 0; j < H; j++)
            m->dh0[b * H + j] = get(last, b, j); /* the carry; dh0 once the loop ends */
#define ACC(sum, p, q) ((sum) += bound ? fabs((p) * (q)) : (p) * (q))
    for (int64_t t = T - 1; t >= 0; t--) {
        gru_hview wst = gru_hview_step(ws, &a[BWD_WS].tensor, t);
        gru_hview hp = t ? gru_hview_step(h_all, &a[BWD_H_ALL].tensor, t - 1) : h0;
        gru_hview dht = dh_all.p ? gru_hview_step(dh_all, &a[BWD_DH_ALL].tensor, t) : dh_all;
        for (int64_t b = 0; b < B; b++) {
            double *gx = &m->dgx[(t * B + b) * H3], *gh = &m->dgh[(t * B + b) * H3];
            double *carry = &m->dh0[b * H];
            for (int64_t j = 0; j < H; j++) {
                double r = get(wst, b, j), z = get(wst, b, H + j), n = get(wst, b, 2 * H + j);
                double s4 = get(wst, b, 3 * H + j), h = get(hp, b, j);
                dh[j] = get(dht, b, j) + carry[j];
                double dan = dh[j] * (1.0 - z) * (1.0 - n * n);
                gx[H + j] = gh[H + j] = dh[j] * (h - n) * z * (1.0 - z);
                gx[2 * H + j] = dan;
                gh[2 * H + j] = m->lbr ? dan * r : dan;
                gx[j] = gh[j] = m->lbr ? dan * s4 * r * (1.0 - r) : 0.0;
                carry[j] = dh[j] * z;
            }
            if (!m->lbr) /* dr = (W_hn^T dan) h_prev, and h_prev gets (W_hn^T dan) r */
                for (int64_t k = 0; k < H; k++) {
                    double s = 0.0, r = get(wst, b, k);
                    for (int64_t i = 0; i < H; i++)
                        s += gx[2 * H + i] * get(w_hh, 2 * H + i, k);
                    gx[k] = gh[k] = s * get(hp, b, k) * r * (1.0 - r);
                    carry[k] += s * r;
                }
            for (int64_t k = 0; k < H; k++) {
                double s = 0.0, s_abs = fabs(dh[k] * get(wst, b, H + k));
                for (int64_t q = 0; q < (m->lbr ? H3 : 2 * H); q++) {
                    s += gh[q] * get(w_hh, q, k);
                    s_abs += fabs(gh[q] * get(w_hh, q, k));
                }
                carry[k] += s;
                m->carry_abs = fmax(m->carry_abs, s_abs);
            }
        }
    }
    for (int64_t t = 0; t < T; t++) {
        gru_hview xt = gru_hview_step(x, &a[BWD_X].tensor, t);
        gru_hview hp = t ? gru_hview_step(h_all, &a[BWD_H_ALL].tensor, t - 1) : h0;
        gru_hview rh = shift(gru_hview_step(ws, &a[BWD_WS].tensor, t), 3 * H * ws.cs);
        for (int64_t b = 0; b < B; b++) {
            const double *gx = &m->dgx[(t * B + b) * H3], *gh = &m->dgh[(t * B + b) * H3];
            for (int64_t i = 0; i < I; i++) {
                double s = 0.0;
                for (int64_t q = 0; q < H3; q++)
                    ACC(s, gx[q], get(w_ih, q, i));
                m->dx[(t * B + b) * I + i] = s;
            }
            for (int64_t q = 0; q < H3; q++) {
                ACC(m->db_ih[q], gx[q], 1.0);
                ACC(m->db_hh[q], gh[q], 1.0);
                for (int64_t i = 0; i < I; i++)
                    ACC(m->dw_ih[q * I + i], gx[q], get(xt, b, i));
                gru_hview v = m->lbr || q < 2 * H ? hp : rh;
                for (int64_t k = 0; k < H; k++)
                    ACC(m->dw_hh[q * H + k], gh[q], get(v, b, k));
            }
        }
    }
#undef ACC
    free(dh);
    return KP_OK;
}

static void store(const kp_call *call, int index, const double *src, int64_t rows, int64_t cols)
{
    gru_hview v = gru_hview_of(call, index);
    const kp_tensor *t = &call->args[index].tensor;
    int64_t inner = t->rank == 3 ? t->shape[1] : rows; /* [T, B, C] stored as T B rows */
    for (int64_t r = 0; r < rows; r++) {
        gru_hview row = t->rank == 3 ? gru_hview_step(v, t, r / inner) : v;
        for (int64_t c = 0; c < cols; c++)
            put(row, t->rank == 1 ? 0 : r % inner, c, src[r * cols + c]);
    }
}

kp_status gru_backward_reference(const kp_call *call, kp_launch *l)
{
    bwd_math m;
    kp_status st = bwd_compute(call, &m, 0);
    if (st != KP_OK)
        return fail_oom(l, st);
    store(call, BWD_DX, m.dx, m.T * m.B, m.I);
    store(call, BWD_DH0, m.dh0, m.B, m.H);
    store(call, BWD_DW_IH, m.dw_ih, 3 * m.H, m.I);
    store(call, BWD_DW_HH, m.dw_hh, 3 * m.H, m.H);
    store(call, BWD_DB_IH, m.db_ih, 1, 3 * m.H);
    store(call, BWD_DB_HH, m.db_hh, 1, 3 * m.H);
    bwd_free(&m);
    return KP_OK;
}

/* ---- tolerances ------------------------------------------------------------------------------ */

static double gamma_of(double k)
{
    double ku = k * U;
    return ku < 0.5 ? ku / (1.0 - ku) : 2.0 * ku;
}

/* The largest |element| of a [rows, cols] view, and the largest row sum of |elements|. */
static void norms(gru_hview v, int64_t rows, int64_t cols, double *max, double *row_sum)
{
    *max = 0.0;
    if (row_sum)
        *row_sum = 0.0;
    for (int64_t r = 0; v.p && r < rows; r++) {
        double s = 0.0;
        for (int64_t c = 0; c < cols; c++) {
            s += fabs(get(v, r, c));
            *max = fmax(*max, fabs(get(v, r, c)));
        }
        if (row_sum)
            *row_sum = fmax(*row_sum, s);
    }
}

/*
 * One step's bound, derived rather than fitted. A pre-activation a = w_i x + b_i + w_h h + b_h
 * summed in f32 in any order errs by at most e_a = gamma_{I+H+2} S with S = max row sum |w_ih|
 * max|x| + max row sum |w_hh| max|h| + max|b_ih| + max|b_hh| (Higham 3.1). A sigmoid gate then errs
 * by e_g = e_a / 4 + 8u (slope <= 1/4; exp, the division and the store). n's argument, xn + r hn,
 * errs by 2 e_a + e_g |hn| with |hn| <= S_h = row sum |w_hh| max|h| + max|b_hh| (|r h| <= |h|
 * for linear_before_reset 0), tanh adds slope <= 1 and 8u, and h' = n + z (h - n) adds
 * e_g (max|h| + 1) and 4u. Doubled for second-order terms and the workspace's own values.
 */
static double step_bound(gru_hview x, int64_t B, int64_t I, gru_hview h, int64_t H, gru_hview w_ih,
                         gru_hview w_hh, gru_hview b_ih, gru_hview b_hh, double h_max_floor)
{
    double x_max, h_max, wi_sum, wh_sum, wi_max, wh_max, bi_max, bh_max;
    norms(x, B, I, &x_max, NULL);
    norms(h, B, H, &h_max, NULL);
    h_max = fmax(h_max, h_max_floor);
    norms(w_ih, 3 * H, I, &wi_max, &wi_sum);
    norms(w_hh, 3 * H, H, &wh_max, &wh_sum);
    norms(b_ih, 1, 3 * H, &bi_max, NULL);
    norms(b_hh, 1, 3 * H, &bh_max, NULL);
    double s_h = wh_sum * h_max + bh_max, s = wi_sum * x_max + s_h + bi_max;
    double e_a = gamma_of((double)(I + H + 2)) * s, e_g = e_a / 4.0 + 8.0 * U;
    double e_n = 2.0 * e_a + e_g * s_h + 8.0 * U;
    return 2.0 * (e_a + e_n + e_g * (h_max + 1.0) + 4.0 * U);
}

void gru_step_tolerance(const kp_call *call, double *atol, double *rtol)
{
    const kp_tensor *x = &call->args[STEP_X].tensor;
    int64_t B = x->shape[0], I = x->shape[1], H = call->args[STEP_H].tensor.shape[1];
    *atol = step_bound(gru_hview_of(call, STEP_X), B, I, gru_hview_of(call, STEP_H), H,
                       gru_hview_of(call, STEP_W_IH), gru_hview_of(call, STEP_W_HH),
                       gru_hview_of(call, STEP_B_IH), gru_hview_of(call, STEP_B_HH), 0.0);
    *rtol = 2.0 * U;
}

/* T steps of the bound for the largest state (|h_t| <= max(|h0|, 1), a convex mix of h and n):
 * an error made at one step is damped, not amplified, by the next ones when the cell contracts,
 * as a PyTorch-initialised or trained one does, so the steps' errors add up. */
void gru_sequence_tolerance(const kp_call *call, double *atol, double *rtol)
{
    const kp_value *a = call->args;
    const kp_tensor *x = &a[SEQ_X].tensor;
    int64_t T = x->shape[0], B = x->shape[1], I = x->shape[2], H = a[SEQ_H0].tensor.shape[1];
    double worst = 0.0;
    for (int64_t t = 0; t < T; t++)
        worst = fmax(worst, step_bound(gru_hview_step(gru_hview_of(call, SEQ_X), x, t), B, I,
                                       gru_hview_of(call, SEQ_H0), H, gru_hview_of(call, SEQ_W_IH),
                                       gru_hview_of(call, SEQ_W_HH), gru_hview_of(call, SEQ_B_IH),
                                       gru_hview_of(call, SEQ_B_HH), 1.0));
    *atol = (double)T * worst;
    *rtol = 2.0 * U;
}

static double max_abs(const double *v, int64_t n)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++)
        m = fmax(m, fabs(v[i]));
    return m;
}

/*
 * Every output is a sum of products of gate gradients with weights or inputs; its f32 rounding
 * error is at most gamma_K times the sum of |terms| (K its length), which the reference computes
 * in `bound` mode, plus what flows in from the gate gradients: those rest on the carry, whose
 * T updates each err by at most gamma_{3H} times their own |term| sums. Taking the largest
 * magnitude of either kind, the bound is gamma over the longest chain of roundings, K + T (3H + 8),
 * doubled for second-order terms.
 */
void gru_backward_tolerance(const kp_call *call, double *atol, double *rtol)
{
    bwd_math m;
    *rtol = 8.0 * U;
    *atol = INFINITY; /* out of memory: nothing to promise */
    if (bwd_compute(call, &m, 1) != KP_OK)
        return;
    int64_t H3 = 3 * m.H, TB = m.T * m.B;
    double mag = fmax(fmax(max_abs(m.dx, TB * m.I), max_abs(m.dw_ih, H3 * m.I)),
                      fmax(max_abs(m.dw_hh, H3 * m.H), max_abs(m.db_ih, H3)));
    mag = fmax(fmax(mag, max_abs(m.db_hh, H3)), m.carry_abs);
    double k = (double)(TB > H3 ? TB : H3) + (double)m.T * (double)(H3 + 8);
    *atol = 2.0 * gamma_of(k) * mag;
    bwd_free(&m);
}
