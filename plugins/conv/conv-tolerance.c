/* SPDX-License-Identifier: Apache-2.0 */
/* The geometry of a checked call, and verification tolerances derived from f32 rounding. */
#include <math.h>

#include "conv.h"

/* Which arguments of each kernel give the image [N, C, H, W], the kernel size and the geometry. */
typedef struct layout {
    const kp_kernel_desc *desc;
    int image;  /* the [N, C, H, W] tensor on the input side */
    int weight; /* the [K, C/groups, KH, KW] tensor, or -1 */
    int kh;     /* the kernel_h integer (kernel_w follows), or -1 */
    int geo, groups;
    int pool; /* a stride of 0 is the kernel size */
} layout;

static const layout layouts[] = {
    {&conv_im2col_desc, I2C_IM, -1, I2C_KH, I2C_GEO, -1, 0},
    {&conv_col2im_desc, C2I_IM, -1, C2I_KH, C2I_GEO, -1, 0},
    {&conv_conv2d_desc, FWD_X, FWD_W, -1, FWD_GEO, FWD_GROUPS, 0},
    {&conv_backward_data_desc, BWD_DX, BWD_W, -1, BWD_GEO, BWD_GROUPS, 0},
    {&conv_backward_weight_desc, BWW_X, BWW_DW, -1, BWW_GEO, BWW_GROUPS, 0},
    {&conv_maxpool_desc, MP_X, -1, MP_KH, MP_GEO, -1, 1},
    {&conv_maxpool_backward_desc, MPB_DX, -1, MPB_KH, MPB_GEO, -1, 1},
};

conv_geom conv_geom_of(const kp_call *call)
{
    conv_geom g = {0};
    const layout *y = NULL;
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0] && !y; i++)
        if (layouts[i].desc == call->desc)
            y = &layouts[i];
    if (!y)
        return g;
    const kp_tensor *x = &call->args[y->image].tensor;
    g.N = x->shape[0], g.C = x->shape[1], g.H = x->shape[2], g.W = x->shape[3];
    g.K = g.C;
    if (y->weight >= 0) {
        const kp_tensor *w = &call->args[y->weight].tensor;
        g.K = w->shape[0], g.KH = w->shape[2], g.KW = w->shape[3];
    } else {
        g.KH = call->args[y->kh].i, g.KW = call->args[y->kh + 1].i;
    }
    const kp_value *a = &call->args[y->geo];
    g.sh = a[GEO_SH].i ? a[GEO_SH].i : g.KH;
    g.sw = a[GEO_SW].i ? a[GEO_SW].i : g.KW;
    g.ph = a[GEO_PH].i, g.pw = a[GEO_PW].i, g.dh = a[GEO_DH].i, g.dw = a[GEO_DW].i;
    g.groups = y->groups >= 0 ? call->args[y->groups].i : 1;
    g.OH = (g.H + 2 * g.ph - g.dh * (g.KH - 1) - 1) / g.sh + 1;
    g.OW = (g.W + 2 * g.pw - g.dw * (g.KW - 1) - 1) / g.sw + 1;
    return g;
}

/* ---- tolerances ------------------------------------------------------------------------------ */

/*
 * Each output is a sum of at most n terms computed in f32, in an order of the device's choosing
 * (a GEMM's blocking, the chunks, a gather against the reference's scatter). Such a sum errs by at
 * most gamma_n S, gamma_n = n u / (1 - n u) with u = 2^-24, where S bounds the sum of the terms'
 * magnitudes (Higham, Accuracy and Stability of Numerical Algorithms, 3.1); the reference sums in
 * double and rounds once, u |ref|, which rtol covers. With a factor 2 for second-order terms and
 * one more rounding (a bias added in the output pass, a beta = 1 accumulation):
 *     atol = 2 (gamma_n + u) S,   rtol = 2 u.
 * It is a worst-case bound, linear in n; random data err about sqrt(n) u S.
 */
static void bound(double n, double s, double *atol, double *rtol)
{
    const double u = 0x1p-24;
    double nu = n * u, gamma = nu < 0.5 ? nu / (1.0 - nu) : 2.0 * nu;
    *atol = 2.0 * (gamma + u) * s;
    *rtol = 2.0 * u;
}

/* The largest |element| of a present 4-D (or lower) f32 view. */
static double max_abs(const kp_call *call, int i)
{
    const kp_tensor *t = &call->args[i].tensor;
    const float *p = call->args[i].host;
    if (!call->args[i].present || !p)
        return 0.0;
    int64_t shape[4] = {1, 1, 1, 1}, st[4] = {0, 0, 0, 0};
    for (int d = 0; d < t->rank && d < 4; d++)
        shape[4 - t->rank + d] = t->shape[d], st[4 - t->rank + d] = t->strides[d];
    double m = 0.0;
    for (int64_t a = 0; a < shape[0]; a++)
        for (int64_t b = 0; b < shape[1]; b++)
            for (int64_t c = 0; c < shape[2]; c++)
                for (int64_t d = 0; d < shape[3]; d++)
                    m = fmax(m, fabs(p[t->offset + a * st[0] + b * st[1] + c * st[2] + d * st[3]]));
    return m;
}

/* The largest sum of |elements| over dimensions other than `keep` of a 4-D view, per index of
 * `keep` (0: per image-row of a weight, 1: per channel). */
static double max_sum(const kp_call *call, int i, int keep)
{
    const kp_tensor *t = &call->args[i].tensor;
    const float *p = call->args[i].host;
    double best = 0.0;
    for (int64_t o = 0; p && o < t->shape[keep]; o++) {
        double s = 0.0;
        int64_t sh[4], base = t->offset + o * t->strides[keep];
        for (int d = 0; d < 4; d++)
            sh[d] = d == keep ? 1 : t->shape[d];
        for (int64_t a = 0; a < sh[0]; a++)
            for (int64_t b = 0; b < sh[1]; b++)
                for (int64_t c = 0; c < sh[2]; c++)
                    for (int64_t d = 0; d < sh[3]; d++)
                        s += fabs(p[base + a * t->strides[0] + b * t->strides[1] +
                                    c * t->strides[2] + d * t->strides[3]]);
        best = fmax(best, s);
    }
    return best;
}

/* Each image element sums at most KH KW column entries. */
void conv_col2im_tolerance(const kp_call *call, double *atol, double *rtol)
{
    conv_geom g = conv_geom_of(call);
    double n = (double)(g.KH * g.KW);
    bound(n, n * max_abs(call, C2I_COL), atol, rtol);
}

/*
 * An output sums C/groups KH KW products w x and the bias: S <= max_k sum |w_k| max|x| + |b|.
 * Where Winograd F(2x2, 3x3) may run (ALGO picks it; the bound covers either path), an output is
 * A^T [sum_c U .* V] A with U = G g G^T and V = B^T d B. Each |V| is at most 4 max|x| (two
 * +-1 terms per row of B^T), and |A^T| |G| has entries at most 2, so the terms' magnitudes sum
 * to at most 16 max_k sum |w_k| max|x|. The roundings along a path: 2 in V, 4 in U, C/groups in
 * the GEMM, 4 in the output transform: n = C/groups + 10.
 */
void conv_forward_tolerance(const kp_call *call, double *atol, double *rtol)
{
    conv_geom g = conv_geom_of(call);
    double wx = max_sum(call, FWD_W, 0) * max_abs(call, FWD_X), b = max_abs(call, FWD_B);
    bound((double)(g.C / g.groups * g.KH * g.KW + 1), wx + b, atol, rtol);
    if (conv_winograd_fits(&g)) {
        double wa, wr;
        bound((double)(g.C / g.groups + 10), 16.0 * wx + b, &wa, &wr);
        *atol = fmax(*atol, wa);
    }
}

/* dx sums, over its at most KH KW taps, K/groups-term products w dy (the GEMM, then col2im):
 * S <= max over (k, c) pairs' sums of |w| over a group's K/groups rows and the taps, times
 * max|dy|, which K/groups KH KW max|w| bounds. */
void conv_backward_data_tolerance(const kp_call *call, double *atol, double *rtol)
{
    conv_geom g = conv_geom_of(call);
    double n = (double)(g.K / g.groups * g.KH * g.KW);
    bound(n, n * max_abs(call, BWD_W) * max_abs(call, BWD_DY), atol, rtol);
}

/* dw sums N OH OW products dy x (over chunks, accumulated): S <= max_k sum |dy_k| max|x|. */
void conv_backward_weight_tolerance(const kp_call *call, double *atol, double *rtol)
{
    conv_geom g = conv_geom_of(call);
    double s = max_sum(call, BWW_DY, 1) * max_abs(call, BWW_X);
    bound((double)(g.N * g.OH * g.OW), s, atol, rtol);
}

void conv_backward_bias_tolerance(const kp_call *call, double *atol, double *rtol)
{
    const kp_tensor *dy = &call->args[BWB_DY].tensor;
    double n = (double)(dy->shape[0] * dy->shape[2] * dy->shape[3]);
    bound(n, max_sum(call, BWB_DY, 1), atol, rtol);
}

/* An input element collects dy from at most one window per tap row kh that reaches it: with
 * dilation 1 at most ceil(KH / stride_h) of them, with dilation up to KH (likewise for columns). */
void conv_maxpool_backward_tolerance(const kp_call *call, double *atol, double *rtol)
{
    conv_geom g = conv_geom_of(call);
    int64_t rows = g.dh == 1 ? (g.KH + g.sh - 1) / g.sh : g.KH;
    int64_t cols = g.dw == 1 ? (g.KW + g.sw - 1) / g.sw : g.KW;
    double n = (double)(rows * cols);
    bound(n, n * max_abs(call, MPB_DY), atol, rtol);
}
