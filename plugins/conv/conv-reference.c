/* SPDX-License-Identifier: Apache-2.0 */
/* Plain-C references of the conv kernels: direct loops over host memory, sums in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conv.h"

/* A strided 4-D host view: element (a, b, c, d) at p[off + a s0 + b s1 + c s2 + d s3]. */
typedef struct hview {
    void *p;
    int64_t off, s[4];
} hview;

static hview hview_of(const kp_call *call, int i)
{
    const kp_tensor *t = &call->args[i].tensor;
    hview v = {.p = call->args[i].host, .off = t->offset};
    for (int d = 0; d < 4 && d < t->rank; d++)
        v.s[d] = t->strides[d];
    return v;
}

static int64_t at(const hview *v, int64_t a, int64_t b, int64_t c, int64_t d)
{
    return v->off + a * v->s[0] + b * v->s[1] + c * v->s[2] + d * v->s[3];
}

static float getf(const hview *v, int64_t a, int64_t b, int64_t c, int64_t d)
{
    return ((const float *)v->p)[at(v, a, b, c, d)];
}

static void putf(const hview *v, int64_t a, int64_t b, int64_t c, int64_t d, double x)
{
    ((float *)v->p)[at(v, a, b, c, d)] = (float)x;
}

/* The input row or column a tap reads, or -1 when it falls in the padding. */
static int64_t tap(int64_t o, int64_t k, int64_t s, int64_t p, int64_t d, int64_t size)
{
    int64_t i = o * s - p + k * d;
    return i >= 0 && i < size ? i : -1;
}

static double *zeros(size_t n)
{
    return calloc(n ? n : 1, sizeof(double));
}

/* Writes an [N, C, H, W] double array into a float view. */
static void store(const hview *v, const double *acc, const conv_geom *g)
{
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t c = 0; c < g->C; c++)
            for (int64_t h = 0; h < g->H; h++)
                for (int64_t w = 0; w < g->W; w++)
                    putf(v, n, c, h, w, acc[((n * g->C + c) * g->H + h) * g->W + w]);
}

/* ---- im2col and col2im ----------------------------------------------------------------------- */

kp_status conv_im2col_reference(const kp_call *call, kp_launch *l)
{
    (void)l;
    conv_geom g = conv_geom_of(call);
    hview im = hview_of(call, I2C_IM), col = hview_of(call, I2C_COL);
    for (int64_t n = 0; n < g.N; n++)
        for (int64_t c = 0; c < g.C; c++)
            for (int64_t kh = 0; kh < g.KH; kh++)
                for (int64_t kw = 0; kw < g.KW; kw++)
                    for (int64_t oh = 0; oh < g.OH; oh++)
                        for (int64_t ow = 0; ow < g.OW; ow++) {
                            int64_t h = tap(oh, kh, g.sh, g.ph, g.dh, g.H);
                            int64_t w = tap(ow, kw, g.sw, g.pw, g.dw, g.W);
                            float v = h >= 0 && w >= 0 ? getf(&im, n, c, h, w) : 0.0f;
                            putf(&col, n, (c * g.KH + kh) * g.KW + kw, oh * g.OW + ow, 0, v);
                        }
    return KP_OK;
}

/* A scatter (the adjoint of im2col as written), unlike the kernel's gather. */
kp_status conv_col2im_reference(const kp_call *call, kp_launch *l)
{
    conv_geom g = conv_geom_of(call);
    hview col = hview_of(call, C2I_COL), im = hview_of(call, C2I_IM);
    double *acc = zeros((size_t)(g.N * g.C * g.H * g.W));
    if (!acc)
        return conv_host->fail(l, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int64_t n = 0; n < g.N; n++)
        for (int64_t c = 0; c < g.C; c++)
            for (int64_t kh = 0; kh < g.KH; kh++)
                for (int64_t kw = 0; kw < g.KW; kw++)
                    for (int64_t oh = 0; oh < g.OH; oh++)
                        for (int64_t ow = 0; ow < g.OW; ow++) {
                            int64_t h = tap(oh, kh, g.sh, g.ph, g.dh, g.H);
                            int64_t w = tap(ow, kw, g.sw, g.pw, g.dw, g.W);
                            if (h >= 0 && w >= 0)
                                acc[((n * g.C + c) * g.H + h) * g.W + w] +=
                                    getf(&col, n, (c * g.KH + kh) * g.KW + kw, oh * g.OW + ow, 0);
                        }
    store(&im, acc, &g);
    free(acc);
    return KP_OK;
}

/* ---- the convolution and its gradients, by direct loops ------------------------------------ */

kp_status conv_forward_reference(const kp_call *call, kp_launch *l)
{
    (void)l;
    conv_geom g = conv_geom_of(call);
    hview x = hview_of(call, FWD_X), w = hview_of(call, FWD_W), y = hview_of(call, FWD_Y);
    const kp_tensor *bt = &call->args[FWD_B].tensor;
    const float *bias = call->args[FWD_B].present ? KP_HOST_PTR(call, FWD_B, const float) : NULL;
    int64_t Cg = g.C / g.groups, Kg = g.K / g.groups;
    for (int64_t n = 0; n < g.N; n++)
        for (int64_t k = 0; k < g.K; k++)
            for (int64_t oh = 0; oh < g.OH; oh++)
                for (int64_t ow = 0; ow < g.OW; ow++) {
                    double s = bias ? bias[k * bt->strides[0]] : 0.0;
                    for (int64_t c = 0; c < Cg; c++)
                        for (int64_t kh = 0; kh < g.KH; kh++)
                            for (int64_t kw = 0; kw < g.KW; kw++) {
                                int64_t h = tap(oh, kh, g.sh, g.ph, g.dh, g.H);
                                int64_t iw = tap(ow, kw, g.sw, g.pw, g.dw, g.W);
                                if (h >= 0 && iw >= 0)
                                    s += (double)getf(&w, k, c, kh, kw) *
                                         getf(&x, n, k / Kg * Cg + c, h, iw);
                            }
                    putf(&y, n, k, oh, ow, s);
                }
    return KP_OK;
}

kp_status conv_backward_data_reference(const kp_call *call, kp_launch *l)
{
    conv_geom g = conv_geom_of(call);
    hview dy = hview_of(call, BWD_DY), w = hview_of(call, BWD_W), dx = hview_of(call, BWD_DX);
    int64_t Cg = g.C / g.groups, Kg = g.K / g.groups;
    double *acc = zeros((size_t)(g.N * g.C * g.H * g.W));
    if (!acc)
        return conv_host->fail(l, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int64_t n = 0; n < g.N; n++)
        for (int64_t k = 0; k < g.K; k++)
            for (int64_t oh = 0; oh < g.OH; oh++)
                for (int64_t ow = 0; ow < g.OW; ow++) {
                    double d = getf(&dy, n, k, oh, ow);
                    for (int64_t c = 0; c < Cg; c++)
                        for (int64_t kh = 0; kh < g.KH; kh++)
                            for (int64_t kw = 0; kw < g.KW; kw++) {
                                int64_t h = tap(oh, kh, g.sh, g.ph, g.dh, g.H);
                                int64_t iw = tap(ow, kw, g.sw, g.pw, g.dw, g.W);
                                if (h >= 0 && iw >= 0)
                                    acc[((n * g.C + k / Kg * Cg + c) * g.H + h) * g.W + iw] +=
                                        getf(&w, k, c, kh, kw) * d;
                            }
                }
    store(&dx, acc, &g);
    free(acc);
    return KP_OK;
}

kp_status conv_backward_weight_reference(const kp_call *call, kp_launch *l)
{
    (void)l;
    conv_geom g = conv_geom_of(call);
    hview x = hview_of(call, BWW_X), dy = hview_of(call, BWW_DY), dw = hview_of(call, BWW_DW);
    int64_t Cg = g.C / g.groups, Kg = g.K / g.groups;
    for (int64_t k = 0; k < g.K; k++)
        for (int64_t c = 0; c < Cg; c++)
            for (int64_t kh = 0; kh < g.KH; kh++)
                for (int64_t kw = 0; kw < g.KW; kw++) {
                    double s = 0.0;
                    for (int64_t n = 0; n < g.N; n++)
                        for (int64_t oh = 0; oh < g.OH; oh++)
                            for (int64_t ow = 0; ow < g.OW; ow++) {
                                int64_t h = tap(oh, kh, g.sh, g.ph, g.dh, g.H);
                                int64_t iw = tap(ow, kw, g.sw, g.pw, g.dw, g.W);
                                if (h >= 0 && iw >= 0)
                                    s += (double)getf(&dy, n, k, oh, ow) *
                                         getf(&x, n, k / Kg * Cg + c, h, iw);
                            }
                    putf(&dw, k, c, kh, kw, s);
                }
    return KP_OK;
}

kp_status conv_backward_bias_reference(const kp_call *call, kp_launch *l)
{
    (void)l;
    const kp_tensor *t = &call->args[BWB_DY].tensor;
    hview dy = hview_of(call, BWB_DY);
    float *db = KP_HOST_PTR(call, BWB_DB, float);
    int64_t stride = call->args[BWB_DB].tensor.strides[0];
    for (int64_t k = 0; k < t->shape[1]; k++) {
        double s = 0.0;
        for (int64_t n = 0; n < t->shape[0]; n++)
            for (int64_t h = 0; h < t->shape[2]; h++)
                for (int64_t w = 0; w < t->shape[3]; w++)
                    s += getf(&dy, n, k, h, w);
        db[k * stride] = (float)s;
    }
    return KP_OK;
}

/* ---- max-pool -------------------------------------------------------------------------------- */

kp_status conv_maxpool_reference(const kp_call *call, kp_launch *l)
{
    (void)l;
    conv_geom g = conv_geom_of(call);
    hview x = hview_of(call, MP_X), y = hview_of(call, MP_Y), idx = hview_of(call, MP_IDX);
    int has_idx = call->args[MP_IDX].present;
    for (int64_t n = 0; n < g.N; n++)
        for (int64_t c = 0; c < g.C; c++)
            for (int64_t oh = 0; oh < g.OH; oh++)
                for (int64_t ow = 0; ow < g.OW; ow++) {
                    float best = -INFINITY;
                    int64_t arg = -1;
                    /* Windows in increasing (kh, kw): increasing index; ties keep the first. */
                    for (int64_t kh = 0; kh < g.KH; kh++)
                        for (int64_t kw = 0; kw < g.KW; kw++) {
                            int64_t h = tap(oh, kh, g.sh, g.ph, g.dh, g.H);
                            int64_t w = tap(ow, kw, g.sw, g.pw, g.dw, g.W);
                            if (h < 0 || w < 0)
                                continue;
                            float v = getf(&x, n, c, h, w);
                            if (arg < 0 || v > best || (isnan(v) && !isnan(best))) {
                                best = v;
                                arg = h * g.W + w;
                            }
                        }
                    putf(&y, n, c, oh, ow, best);
                    if (has_idx)
                        ((int32_t *)idx.p)[at(&idx, n, c, oh, ow)] = (int32_t)arg;
                }
    return KP_OK;
}

/* A scatter of dy through the indices, unlike the kernel's gather. */
kp_status conv_maxpool_backward_reference(const kp_call *call, kp_launch *l)
{
    conv_geom g = conv_geom_of(call);
    hview dy = hview_of(call, MPB_DY), idx = hview_of(call, MPB_IDX), dx = hview_of(call, MPB_DX);
    double *acc = zeros((size_t)(g.N * g.C * g.H * g.W));
    if (!acc)
        return conv_host->fail(l, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int64_t n = 0; n < g.N; n++)
        for (int64_t c = 0; c < g.C; c++)
            for (int64_t oh = 0; oh < g.OH; oh++)
                for (int64_t ow = 0; ow < g.OW; ow++) {
                    int64_t i = ((const int32_t *)idx.p)[at(&idx, n, c, oh, ow)];
                    if (i < 0 || i >= g.H * g.W)
                        continue;
                    /* Only an index inside its window counts, as in the kernel's gather. */
                    int64_t h = i / g.W, w = i % g.W, th = h + g.ph - oh * g.sh;
                    int64_t tw = w + g.pw - ow * g.sw;
                    if (th < 0 || tw < 0 || th % g.dh || tw % g.dw || th / g.dh >= g.KH ||
                        tw / g.dw >= g.KW)
                        continue;
                    acc[((n * g.C + c) * g.H + h) * g.W + w] += getf(&dy, n, c, oh, ow);
                }
    store(&dx, acc, &g);
    free(acc);
    return KP_OK;
}
