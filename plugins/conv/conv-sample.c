/* SPDX-License-Identifier: Apache-2.0 */
/* Sample arguments of the conv kernels: awkward verification cases and the bench shapes. */
#include <math.h>
#include <string.h>

#include "conv.h"

/*
 * name, N C H W, K, KH KW, stride h w, pad h w, dilation h w, groups, bias, views. The
 * convolution kernels read every field, im2col and col2im all but K, groups and bias. Views 1:
 * every tensor a strided, offset view (no unit stride in the images); 2: offset views whose image
 * planes stay contiguous, so the 1x1 path still reads them in place.
 */
static const conv_case conv_cases[] = {
    {"one", 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0},
    {"prime", 3, 5, 9, 7, 4, 3, 2, 2, 1, 1, 0, 1, 2, 1, 1, 0},
    {"groups", 2, 6, 8, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1, 3, 1, 0},
    {"depthwise", 2, 4, 6, 5, 4, 3, 3, 2, 2, 1, 1, 1, 1, 4, 0, 0},
    {"pointwise", 5, 7, 5, 3, 3, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0},
    {"views", 3, 4, 5, 6, 6, 2, 3, 1, 2, 0, 1, 2, 1, 2, 1, 1},
    {"pointviews", 3, 6, 4, 4, 4, 1, 1, 1, 1, 0, 0, 1, 1, 2, 1, 2},
    {"stride1x1", 2, 3, 7, 8, 5, 1, 1, 2, 3, 0, 0, 1, 1, 1, 0, 0},
    /* The kernel as large as the padded input: OH = OW = 1. */
    {"fullkernel", 2, 3, 4, 5, 2, 6, 5, 1, 1, 1, 0, 1, 1, 1, 1, 0},
    {"dilated", 2, 3, 11, 10, 2, 3, 3, 1, 2, 2, 1, 3, 2, 1, 0, 0},
    /* More positions than a work-group, and a tail. */
    {"wide", 1, 2, 9, 70, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0},
    /* Winograd under ALGO auto on GPUs (16+ channels per group): odd OH and OW (a clipped last
     * tile), uneven padding, strided views; then groups and a padding of 2. */
    {"winograd", 3, 17, 9, 13, 19, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1},
    {"winogroups", 2, 32, 6, 5, 48, 3, 3, 1, 1, 2, 2, 1, 1, 2, 0, 0},
    /* The benchmark shapes. */
    {"mnist", 64, 1, 28, 28, 16, 5, 5, 1, 1, 0, 0, 1, 1, 1, 1, 0},
    {"56x56", 64, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0},
    {"28x28", 32, 128, 28, 28, 128, 3, 3, 1, 1, 0, 0, 1, 1, 1, 1, 0},
    {"stem", 8, 3, 224, 224, 64, 7, 7, 2, 2, 0, 0, 1, 1, 1, 1, 0},
};

int conv_case_find(const conv_case *cases, size_t n, const char *size, conv_case *out)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(cases[i].name, size) == 0) {
            *out = cases[i];
            return 1;
        }
    return 0;
}

static int find_conv(const char *size, conv_case *c)
{
    return conv_case_find(conv_cases, sizeof conv_cases / sizeof conv_cases[0], size, c);
}

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d)
{
    return (in + 2 * p - d * (k - 1) - 1) / (s ? s : k) + 1;
}

kp_status conv_sample_nchw(kp_sample *s, const char *name, const int64_t *shape, double lo,
                           double hi, int views)
{
    if (!views)
        return conv_host->sample_tensor(s, name, KP_F32, 4, shape, lo, hi, NULL);
    int64_t N = shape[0], C = shape[1], H = shape[2], W = shape[3], st[4], off;
    if (views == 1) {
        st[3] = 2, st[2] = 2 * W + 1, off = 7;
    } else {
        st[3] = 1, st[2] = W, off = 5;
    }
    st[1] = H * st[2] + 3;
    st[0] = C * st[1] + 5;
    int64_t storage = off + (N - 1) * st[0] + (C - 1) * st[1] + (H - 1) * st[2] + W * st[3] + 2;
    kp_status r = conv_host->sample_tensor(s, name, KP_F32, 1, &storage, lo, hi, NULL);
    return r == KP_OK ? conv_host->sample_view(s, name, 4, shape, off, st) : r;
}

kp_status conv_sample_geometry(kp_sample *s, const conv_case *c, int groups)
{
    const char *names[GEO_N] = {"stride_h", "stride_w",   "pad_h",
                                "pad_w",    "dilation_h", "dilation_w"};
    const int64_t values[GEO_N] = {c->sh, c->sw, c->ph, c->pw, c->dh, c->dw};
    kp_status st = KP_OK;
    for (int i = 0; st == KP_OK && i < GEO_N; i++)
        st = conv_host->sample_int(s, names[i], values[i]);
    return st == KP_OK && groups ? conv_host->sample_int(s, "groups", c->groups) : st;
}

/* Weights (or their gradient) [K, C/groups, KH, KW] as PyTorch initialises them,
 * U(-1/sqrt(fan_in), 1/sqrt(fan_in)), so outputs stay O(1); with views, rows padded apart. */
static kp_status sample_weight(kp_sample *s, const char *name, const conv_case *c)
{
    int64_t Cg = c->C / c->groups, R = Cg * c->KH * c->KW, shape[4] = {c->K, Cg, c->KH, c->KW};
    double a = 1.0 / sqrt((double)R);
    if (!c->views)
        return conv_host->sample_tensor(s, name, KP_F32, 4, shape, -a, a, NULL);
    int64_t storage = c->K * (R + 2) + 3, st[4] = {R + 2, c->KH * c->KW, c->KW, 1};
    kp_status r = conv_host->sample_tensor(s, name, KP_F32, 1, &storage, -a, a, NULL);
    return r == KP_OK ? conv_host->sample_view(s, name, 4, shape, 3, st) : r;
}

/* A [K] vector, every other element of an offset storage with views. */
static kp_status sample_vector(kp_sample *s, const char *name, int64_t K, double a, int views)
{
    if (!views)
        return conv_host->sample_tensor(s, name, KP_F32, 1, &K, -a, a, NULL);
    int64_t storage = 2 * K + 1, stride = 2;
    kp_status r = conv_host->sample_tensor(s, name, KP_F32, 1, &storage, -a, a, NULL);
    return r == KP_OK ? conv_host->sample_view(s, name, 1, &K, 1, &stride) : r;
}

/* ---- im2col and col2im ----------------------------------------------------------------------- */

/* Columns [N, C KH KW, OH OW]; with views, the chunk layout (images side by side) at an offset. */
static kp_status sample_col(kp_sample *s, const conv_case *c, double lo, double hi)
{
    int64_t L =
        out_size(c->H, c->KH, c->sh, c->ph, c->dh) * out_size(c->W, c->KW, c->sw, c->pw, c->dw);
    int64_t R = c->C * c->KH * c->KW, shape[3] = {c->N, R, L};
    if (!c->views)
        return conv_host->sample_tensor(s, "col", KP_F32, 3, shape, lo, hi, NULL);
    int64_t storage = c->N * R * L + 5, st[3] = {L, c->N * L, 1};
    kp_status r = conv_host->sample_tensor(s, "col", KP_F32, 1, &storage, lo, hi, NULL);
    return r == KP_OK ? conv_host->sample_view(s, "col", 3, shape, 3, st) : r;
}

/* The images and the columns: the core fills whichever is the kernel's output with garbage. */
static kp_status sample_pair(kp_sample *s, const char *size)
{
    conv_case c;
    if (!find_conv(size, &c))
        return KP_ERR_NOT_FOUND;
    int64_t im[4] = {c.N, c.C, c.H, c.W};
    kp_status st = conv_sample_nchw(s, "im", im, -1.0, 1.0, c.views);
    if (st == KP_OK)
        st = sample_col(s, &c, -1.0, 1.0);
    if (st == KP_OK)
        st = conv_host->sample_int(s, "kernel_h", c.KH);
    if (st == KP_OK)
        st = conv_host->sample_int(s, "kernel_w", c.KW);
    return st == KP_OK ? conv_sample_geometry(s, &c, 0) : st;
}

kp_status conv_im2col_sample(kp_sample *s, const char *size)
{
    return sample_pair(s, size);
}

kp_status conv_col2im_sample(kp_sample *s, const char *size)
{
    return sample_pair(s, size);
}

/* ---- the convolution and its gradients ------------------------------------------------------- */

static int64_t out_h(const conv_case *c)
{
    return out_size(c->H, c->KH, c->sh, c->ph, c->dh);
}

static int64_t out_w(const conv_case *c)
{
    return out_size(c->W, c->KW, c->sw, c->pw, c->dw);
}

kp_status conv_forward_sample(kp_sample *s, const char *size)
{
    conv_case c;
    if (!find_conv(size, &c))
        return KP_ERR_NOT_FOUND;
    int64_t x[4] = {c.N, c.C, c.H, c.W}, y[4] = {c.N, c.K, out_h(&c), out_w(&c)};
    kp_status st = conv_sample_nchw(s, "x", x, -1.0, 1.0, c.views);
    if (st == KP_OK)
        st = sample_weight(s, "w", &c);
    if (st == KP_OK && c.bias)
        st = sample_vector(s, "bias", c.K, 1.0, c.views);
    if (st == KP_OK)
        st = conv_sample_nchw(s, "y", y, 0.0, 0.0, c.views);
    return st == KP_OK ? conv_sample_geometry(s, &c, 1) : st;
}

kp_status conv_backward_data_sample(kp_sample *s, const char *size)
{
    conv_case c;
    if (!find_conv(size, &c))
        return KP_ERR_NOT_FOUND;
    int64_t x[4] = {c.N, c.C, c.H, c.W}, y[4] = {c.N, c.K, out_h(&c), out_w(&c)};
    kp_status st = conv_sample_nchw(s, "dy", y, -1.0, 1.0, c.views);
    if (st == KP_OK)
        st = sample_weight(s, "w", &c);
    if (st == KP_OK)
        st = conv_sample_nchw(s, "dx", x, 0.0, 0.0, c.views);
    return st == KP_OK ? conv_sample_geometry(s, &c, 1) : st;
}

kp_status conv_backward_weight_sample(kp_sample *s, const char *size)
{
    conv_case c;
    if (!find_conv(size, &c))
        return KP_ERR_NOT_FOUND;
    int64_t x[4] = {c.N, c.C, c.H, c.W}, y[4] = {c.N, c.K, out_h(&c), out_w(&c)};
    kp_status st = conv_sample_nchw(s, "x", x, -1.0, 1.0, c.views);
    if (st == KP_OK)
        st = conv_sample_nchw(s, "dy", y, -1.0, 1.0, c.views);
    if (st == KP_OK)
        st = sample_weight(s, "dw", &c);
    return st == KP_OK ? conv_sample_geometry(s, &c, 1) : st;
}

kp_status conv_backward_bias_sample(kp_sample *s, const char *size)
{
    conv_case c;
    if (!find_conv(size, &c))
        return KP_ERR_NOT_FOUND;
    int64_t y[4] = {c.N, c.K, out_h(&c), out_w(&c)};
    kp_status st = conv_sample_nchw(s, "dy", y, -1.0, 1.0, c.views);
    return st == KP_OK ? sample_vector(s, "db", c.K, 1.0, c.views) : st;
}

/* ---- max-pool -------------------------------------------------------------------------------- */

/* The pool cases: K, groups and bias unused; bias 1 means "values with ties" (small integers),
 * views 1 strided views; "noidx" omits the indices. A stride of 0 is the kernel size. */
static const conv_case pool_cases[] = {
    {"one", 1, 1, 1, 1, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0},
    {"prime", 3, 5, 9, 7, 0, 3, 2, 2, 1, 1, 0, 1, 1, 1, 0, 0},
    {"ties", 2, 3, 8, 8, 0, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1, 0},
    {"overlap", 2, 3, 9, 8, 0, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0},
    {"dilated", 2, 2, 11, 10, 0, 3, 2, 1, 2, 1, 1, 2, 3, 1, 1, 0},
    {"views", 3, 4, 7, 9, 0, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},
    {"noidx", 2, 3, 7, 6, 0, 2, 3, 1, 2, 1, 1, 1, 1, 1, 0, 0},
    /* The row kernels' 2 x 2, stride-2 shape: odd H and W leave a row and a column uncovered. */
    {"halve", 3, 5, 9, 11, 0, 2, 2, 2, 2, 0, 0, 1, 1, 1, 0, 0},
    {"resnet", 64, 64, 112, 112, 0, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, 0},
    {"vgg", 32, 128, 56, 56, 0, 2, 2, 2, 2, 0, 0, 1, 1, 1, 0, 0},
};

static int find_pool(const char *size, conv_case *c)
{
    return conv_case_find(pool_cases, sizeof pool_cases / sizeof pool_cases[0], size, c);
}

static kp_status pool_ints(kp_sample *s, const conv_case *c)
{
    kp_status st = conv_host->sample_int(s, "kernel_h", c->KH);
    if (st == KP_OK)
        st = conv_host->sample_int(s, "kernel_w", c->KW);
    return st == KP_OK ? conv_sample_geometry(s, c, 0) : st;
}

/* An int32 [N, C, OH, OW] tensor named "indices", viewed like the others. */
static kp_status sample_indices(kp_sample *s, const conv_case *c, int32_t **data, int64_t *st)
{
    int64_t OH = out_size(c->H, c->KH, c->sh, c->ph, c->dh);
    int64_t OW = out_size(c->W, c->KW, c->sw, c->pw, c->dw), shape[4] = {c->N, c->C, OH, OW};
    int64_t off = c->views ? 2 : 0, mul = c->views ? 2 : 1;
    st[3] = mul, st[2] = OW * mul, st[1] = OH * OW * mul, st[0] = c->C * OH * OW * mul;
    int64_t storage = off + c->N * st[0] + 1;
    kp_status r = conv_host->sample_tensor(s, "indices", KP_I32, 1, &storage, -1, 0, (void **)data);
    if (r != KP_OK)
        return r;
    *data += off;
    return conv_host->sample_view(s, "indices", 4, shape, off, st);
}

kp_status conv_maxpool_sample(kp_sample *s, const char *size)
{
    conv_case c;
    if (!find_pool(size, &c))
        return KP_ERR_NOT_FOUND;
    int64_t x[4] = {c.N, c.C, c.H, c.W};
    int64_t y[4] = {c.N, c.C, out_size(c.H, c.KH, c.sh, c.ph, c.dh),
                    out_size(c.W, c.KW, c.sw, c.pw, c.dw)};
    /* Ties: values from {0, 1, 2}, so most windows hold their maximum more than once. */
    int64_t n = c.N * c.C * c.H * c.W;
    float *data = NULL;
    kp_status st = c.bias && !c.views
                       ? conv_host->sample_tensor(s, "x", KP_F32, 4, x, 0.0, 3.0, (void **)&data)
                       : conv_sample_nchw(s, "x", x, -1.0, 1.0, c.views);
    for (int64_t i = 0; st == KP_OK && data && i < n; i++)
        data[i] = floorf(data[i]);
    if (st == KP_OK)
        st = conv_sample_nchw(s, "y", y, 0.0, 0.0, c.views);
    int32_t *idx;
    int64_t ist[4];
    if (st == KP_OK && strcmp(size, "noidx") != 0)
        st = sample_indices(s, &c, &idx, ist);
    return st == KP_OK ? pool_ints(s, &c) : st;
}

/* The indices a forward could have produced: a random in-bounds tap of each window (-1 for a
 * window wholly in the padding), so the gather and the reference's scatter see valid input. */
kp_status conv_maxpool_backward_sample(kp_sample *s, const char *size)
{
    conv_case c;
    if (!find_pool(size, &c))
        return KP_ERR_NOT_FOUND;
    int64_t sh = c.sh ? c.sh : c.KH, sw = c.sw ? c.sw : c.KW;
    int64_t OH = out_size(c.H, c.KH, c.sh, c.ph, c.dh), OW = out_size(c.W, c.KW, c.sw, c.pw, c.dw);
    int64_t x[4] = {c.N, c.C, c.H, c.W}, y[4] = {c.N, c.C, OH, OW}, ist[4];
    kp_status st = conv_sample_nchw(s, "dy", y, -1.0, 1.0, c.views);
    if (st == KP_OK)
        st = conv_sample_nchw(s, "dx", x, 0.0, 0.0, c.views);
    int32_t *idx = NULL;
    if (st == KP_OK)
        st = sample_indices(s, &c, &idx, ist);
    for (int64_t p = 0; st == KP_OK && p < c.N * c.C; p++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                int64_t taps[64], n = 0;
                for (int64_t kh = 0; kh < c.KH; kh++)
                    for (int64_t kw = 0; kw < c.KW && n < 64; kw++) {
                        int64_t h = oh * sh - c.ph + kh * c.dh, w = ow * sw - c.pw + kw * c.dw;
                        if (h >= 0 && h < c.H && w >= 0 && w < c.W)
                            taps[n++] = h * c.W + w;
                    }
                int64_t pick = n ? taps[conv_host->sample_random(s) % (uint64_t)n] : -1;
                idx[p * ist[1] + oh * ist[2] + ow * ist[3]] = (int32_t)pick;
            }
    return st == KP_OK ? pool_ints(s, &c) : st;
}
