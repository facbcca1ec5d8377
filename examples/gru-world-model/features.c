/* SPDX-License-Identifier: Apache-2.0 */
/* The 64-feature encoder (features.h): wm-features.cl registered at run time, its launch and its
 * host reference. The kernel and the reference follow README.md's table line by line. */
#include "features.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernelport/plugin.h"
#include "wm-features-cl.h"

/* The history windows (the last k steps; the whole history for 0), the EMAs' weights and the
 * spike threshold: a rise of more than 0.1 in log loss (about 10.5%) in one step. wm-features.cl
 * has the same; the program compares kernel and reference on every run. */
#define WINDOWS 8, 16, 32, 64, 0
#define ALPHAS 0.5f, 0.3f, 0.1f, 0.05f, 0.02f, 0.01f
#define SPIKE 0.1f
enum { N_WINDOWS = 5, N_LAGS = 12, N_ALPHAS = 6 };

const char *const features_names[FEATURES] = {
#define W_(k) "mean" k, "std" k, "min" k, "max" k, "slope" k, "fit_last" k, "resid_std" k
    W_("8"),    W_("16"),       W_("32"),    W_("64"),
    W_("all"),
#undef W_
    "lag1",     "lag2",         "lag3",      "lag4",
    "lag5",     "lag6",         "lag7",      "lag8",
    "lag9",     "lag10",        "lag11",     "lag12",
    "ema0.5",   "ema0.3",       "ema0.1",    "ema0.05",
    "ema0.02",  "ema0.01",      "diff_std",  "diff_max",
    "diff_min", "diff_up_frac", "spikes",    "since_spike",
    "last",     "first",        "since_min", "slope16_minus_64",
    "rough16"};

static const kp_host_api *host;

static kp_status check(const kp_call *call, kp_launch *l)
{
    const kp_tensor *h = &call->args[0].tensor, *f = &call->args[1].tensor;
    if (h->rank != 2 || h->shape[1] < FEATURES_MIN_HISTORY || h->shape[0] > INT32_MAX ||
        h->shape[1] > INT32_MAX)
        return host->fail(l, KP_ERR_INVALID_ARG,
                          "hist: expected [N, W] with W >= %d, both below 2^31, got rank %d "
                          "[%lld, %lld]",
                          FEATURES_MIN_HISTORY, (int)h->rank, (long long)h->shape[0],
                          (long long)(h->rank > 1 ? h->shape[1] : 0));
    if (f->rank != 2 || f->shape[0] != h->shape[0] || f->shape[1] != FEATURES)
        return host->fail(l, KP_ERR_INVALID_ARG,
                          "features: expected [N, %d] = [%lld, %d], got rank %d [%lld, %lld]",
                          FEATURES, (long long)h->shape[0], FEATURES, (int)f->rank,
                          (long long)f->shape[0], (long long)(f->rank > 1 ? f->shape[1] : 0));
    return KP_OK;
}

static kp_status enqueue(const kp_call *call, kp_launch *l)
{
    const kp_tensor *h = &call->args[0].tensor, *f = &call->args[1].tensor;
    size_t wg = (size_t)host->tunable(l, "WG"), n = (size_t)h->shape[0];
    size_t lanes = (size_t)host->tunable(l, "LANES"), items = (n + lanes - 1) / lanes;
    size_t global = (items + wg - 1) / wg * wg;
    kp_clargs a = kp_clargs_begin(host, l, "wm_features", NULL);
    kp_clargs_int(&a, (int32_t)n);
    kp_clargs_int(&a, (int32_t)h->shape[1]);
    kp_clargs_tensor(&a, h, 2);
    kp_clargs_tensor(&a, f, 2);
    return kp_clargs_enqueue(&a, 1, &global, &wg);
}

/* features_reference over the call's views, for kernelport's reference path (the descriptor
 * requires one). */
static kp_status reference(const kp_call *call, kp_launch *l)
{
    (void)l;
    const kp_tensor *h = &call->args[0].tensor, *f = &call->args[1].tensor;
    const float *hs = call->args[0].host;
    float *fs = call->args[1].host;
    const int w = (int)h->shape[1];
    float *row = malloc((size_t)w * sizeof *row);
    if (!row)
        return KP_ERR_OUT_OF_MEMORY;
    for (int64_t i = 0; i < h->shape[0]; i++) {
        double out[FEATURES];
        for (int t = 0; t < w; t++)
            row[t] = hs[h->offset + i * h->strides[0] + t * h->strides[1]];
        features_reference(row, w, out);
        for (int j = 0; j < FEATURES; j++)
            fs[f->offset + i * f->strides[0] + j * f->strides[1]] = (float)out[j];
    }
    free(row);
    return KP_OK;
}

/* LANES auto: 16 on CPUs (one AVX-512 vector of histories per work-item), 1 elsewhere. */
static const char *resolve(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved)
{
    if (index != 1 || value != 0)
        return NULL;
    const kp_device_info *d = host->device(l);
    int cpu = d && d->type == KP_DEVICE_CPU;
    *resolved = cpu ? 16 : 1;
    return cpu ? "16 on CPUs" : "1 off CPUs";
}

kp_status features_register(kp_runtime *rt, kp_kernel **out)
{
    static const kp_param_desc params[] = {
        {.name = "hist",
         .kind = KP_ARG_KIND_TENSOR,
         .access = KP_ACCESS_IN,
         .dtypes = KP_DT(KP_F32),
         .doc = "[N, W] log-loss histories"},
        {.name = "features",
         .kind = KP_ARG_KIND_TENSOR,
         .access = KP_ACCESS_OUT,
         .dtypes = KP_DT(KP_F32),
         .doc = "[N, 64] the features"},
    };
    static const int64_t allowed[] = {32, 64, 128, 256}, lanes[] = {0, 1, 4, 8, 16};
    static const kp_tunable_desc tunables[] = {
        {.name = "WG",
         .default_value = 64,
         .allowed = allowed,
         .n_allowed = 4,
         .flags = KP_TUNABLE_WORKGROUP},
        {.name = "LANES",
         .default_value = 0,
         .allowed = lanes,
         .n_allowed = 5,
         .doc = "histories per work-item, one per vector lane: 1, 4, 8, 16, or 0 (auto: 16 on "
                "CPUs, 1 elsewhere)"},
    };
    static const kp_kernel_desc desc = {.struct_size = sizeof(kp_kernel_desc),
                                        .name = "wm.features",
                                        .summary = "the 64 features of each loss history",
                                        .params = params,
                                        .n_params = 2,
                                        .tunables = tunables,
                                        .n_tunables = 2,
                                        .source = kp_kernel_wm_features_cl,
                                        .source_name = "wm-features.cl",
                                        .entry = "wm_features",
                                        .check = check,
                                        .enqueue = enqueue,
                                        .reference = reference,
                                        .resolve = resolve};
    host = kp_host_api_get();
    if (kp_kernel_find(rt, desc.name, out) == KP_OK)
        return KP_OK;
    return kp_kernel_register(rt, &desc, out);
}

kp_status features_encode(kp_runtime *rt, kp_kernel *k, kp_tensor hist, kp_tensor features,
                          kp_event **event)
{
    kp_arg args[] = {kp_arg_tensor("hist", hist), kp_arg_tensor("features", features)};
    return kp_kernel_launch(rt, k, args, 2, event);
}

kp_status features_check_views(kp_runtime *rt, kp_kernel *k, kp_buffer *hist, kp_buffer *out,
                               int64_t n, int w, const float *v, int l, double *worst)
{
    static const int64_t counts[] = {1, 13, 1021, 21}, strides[] = {1, 1, 1, 2};
    float *got = malloc((size_t)(n * FEATURES) * sizeof *got);
    kp_status st = got ? KP_OK : KP_ERR_OUT_OF_MEMORY;
    *worst = 0;
    for (int c = 0; st == KP_OK && c < 4; c++) {
        const int64_t m = counts[c] < n ? counts[c] : n;
        kp_tensor hv = kp_tensor_transpose(kp_tensor_2d(hist, KP_F32, w, n), 0, 1);
        hv.shape[0] = m;
        hv.strides[0] = strides[c];
        if ((m - 1) * strides[c] >= n)
            continue;
        kp_tensor fv = kp_tensor_transpose(kp_tensor_2d(out, KP_F32, FEATURES, n), 0, 1);
        fv.shape[0] = m;
        st = features_encode(rt, k, hv, fv, NULL);
        if (st == KP_OK)
            st = kp_buffer_read(rt, out, 0, (size_t)(n * FEATURES) * sizeof *got, got);
        for (int64_t i = 0; st == KP_OK && i < m; i++) {
            double ref[FEATURES];
            features_reference(v + i * strides[c] * l, w, ref);
            for (int j = 0; j < FEATURES; j++) {
                const double err = fabs(got[j * n + i] - ref[j]) / (1 + fabs(ref[j]));
                *worst = err <= *worst ? *worst : isnan(err) ? INFINITY : err;
            }
        }
    }
    free(got);
    return st;
}

/* One window's seven values, and its slope for the curvature feature. */
static void window(const float *v, int w, int k, double last, double *out, double *slope_out)
{
    k = k && k < w ? k : w;
    const int s = w - k;
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    for (int t = s; t < w; t++) {
        const double r = v[t] - last;
        sum += r;
        lo = fmin(lo, r);
        hi = fmax(hi, r);
    }
    const double mean = sum / k, tbar = 0.5 * (k - 1);
    double var = 0, sxy = 0;
    for (int t = s; t < w; t++) {
        const double d = v[t] - last - mean;
        var += d * d;
        sxy += (t - s - tbar) * d;
    }
    const double slope = sxy / ((double)k * ((double)k * k - 1) / 12);
    double res = 0;
    for (int t = s; t < w; t++) {
        const double e = v[t] - last - (mean + slope * (t - s - tbar));
        res += e * e;
    }
    const double vals[7] = {mean, sqrt(var / k), lo, hi, slope, mean + slope * tbar, sqrt(res / k)};
    for (int j = 0; j < 7; j++)
        out[j] = vals[j];
    *slope_out = slope;
}

void features_reference(const float *v, int w, double out[FEATURES])
{
    static const int windows[N_WINDOWS] = {WINDOWS};
    static const float alphas[N_ALPHAS] = {ALPHAS};
    const double last = v[w - 1];
    double slopes[N_WINDOWS];
    int o = 0;
    for (int q = 0; q < N_WINDOWS; q++, o += 7)
        window(v, w, windows[q], last, out + o, &slopes[q]);
    for (int lag = 1; lag <= N_LAGS; lag++)
        out[o++] = v[w - 1 - lag > 0 ? w - 1 - lag : 0] - last;
    for (int q = 0; q < N_ALPHAS; q++) {
        double e = v[0];
        for (int t = 1; t < w; t++)
            e += alphas[q] * (v[t] - e);
        out[o++] = e - last;
    }
    /* The differences in f32, as the device forms them, so that counts and extremes agree
     * exactly. */
    double dsum = 0, dmax = -INFINITY, dmin = INFINITY;
    float vmin = v[0];
    int up = 0, spikes = 0, last_spike = -1, at_min = 0;
    for (int t = 1; t < w; t++) {
        const float d = v[t] - v[t - 1];
        dsum += d;
        dmax = fmax(dmax, d);
        dmin = fmin(dmin, d);
        up += d > 0.0f;
        if (d > SPIKE) {
            spikes++;
            last_spike = t;
        }
        if (v[t] < vmin) {
            vmin = v[t];
            at_min = t;
        }
    }
    const double dmean = dsum / (w - 1);
    double dvar = 0;
    for (int t = 1; t < w; t++) {
        const double d = (double)(v[t] - v[t - 1]) - dmean;
        dvar += d * d;
    }
    out[o++] = sqrt(dvar / (w - 1));
    out[o++] = dmax;
    out[o++] = dmin;
    out[o++] = (double)up / (w - 1);
    out[o++] = spikes;
    out[o++] = (double)(last_spike < 0 ? w : w - 1 - last_spike) / w;
    double rough = 0;
    const int r0 = w - 16 > 2 ? w - 16 : 2;
    for (int t = r0; t < w; t++)
        rough += fabs((double)v[t] - 2.0 * v[t - 1] + v[t - 2]);
    out[o++] = last;
    out[o++] = v[0] - last;
    out[o++] = (double)(w - 1 - at_min) / w;
    out[o++] = slopes[1] - slopes[3];
    out[o++] = rough / (w - r0);
}
