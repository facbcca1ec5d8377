/* SPDX-License-Identifier: Apache-2.0 */
/* logic.coeffs (logits to gate coefficients) and logic.forward (a layer of soft or hard gates). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernelport/ops/logic.h"
#include "logic-kernels.h"
#include "logic.h"

#define F32 KP_DT(KP_F32)
#define I32 KP_DT(KP_I32)

/* ---- logic.coeffs ---------------------------------------------------------------------------- */

static const kp_param_desc coeffs_params[] = {
    [CO_W] = {.name = "w",
              .kind = KP_ARG_KIND_TENSOR,
              .access = KP_ACCESS_IN,
              .dtypes = F32,
              .doc = "[G, 16] logits of the 16 ops per gate (difflogic's order)"},
    [CO_C] = {.name = "C",
              .kind = KP_ARG_KIND_TENSOR,
              .access = KP_ACCESS_OUT,
              .dtypes = F32,
              .flags = KP_PARAM_OPTIONAL,
              .doc = "[G, 4] coefficients (C1, Ca, Cb, Cab) = M p: y = C1 + Ca a + Cb b + Cab ab"},
    [CO_OP] = {.name = "op",
               .kind = KP_ARG_KIND_TENSOR,
               .access = KP_ACCESS_OUT,
               .dtypes = I32,
               .flags = KP_PARAM_OPTIONAL,
               .doc = "[G] argmax of w (ties: the lowest id), for logic.eval_packed"},
    [CO_HARD] = {.name = "hard",
                 .kind = KP_ARG_KIND_INT,
                 .access = KP_ACCESS_IN,
                 .flags = KP_PARAM_OPTIONAL,
                 .doc = "0: p = softmax(w) (training); 1: p = one-hot argmax (inference)"},
};

static kp_status coeffs_check(const kp_call *call, kp_launch *l)
{
    const kp_value *a = call->args;
    kp_status st = logic_expect(l, "w", &a[CO_W].tensor, 2, (int64_t[]){-1, 16}, "[G, 16]");
    int64_t G = a[CO_W].tensor.shape[0];
    if (st == KP_OK && !a[CO_C].present && !a[CO_OP].present)
        st = logic_host->fail(l, KP_ERR_INVALID_ARG, "C, op: give at least one output");
    if (st == KP_OK && a[CO_C].present)
        st = logic_expect(l, "C", &a[CO_C].tensor, 2, (int64_t[]){G, 4}, "[G, 4]");
    if (st == KP_OK && a[CO_OP].present)
        st = logic_expect(l, "op", &a[CO_OP].tensor, 1, (int64_t[]){G}, "[G]");
    if (st == KP_OK)
        st = logic_check_flag(l, call, CO_HARD);
    return st == KP_OK ? logic_fits_int(l, call) : st;
}

static kp_status coeffs_enqueue(const kp_call *call, kp_launch *l)
{
    const kp_value *v = call->args;
    const kp_tensor *w = &v[CO_W].tensor;
    int64_t G = w->shape[0];
    kp_clargs a = kp_clargs_begin(logic_host, l, "logic_coeffs", NULL);
    kp_clargs_int(&a, (int32_t)G);
    kp_clargs_int(&a, (int32_t)v[CO_HARD].i);
    kp_clargs_tensor(&a, w, 2);
    logic_clargs_optional(&a, &v[CO_C], w, 2);
    kp_clargs_int(&a, (int32_t)v[CO_C].present);
    logic_clargs_optional(&a, &v[CO_OP], w, 1);
    kp_clargs_int(&a, (int32_t)v[CO_OP].present);
    return logic_clargs_enqueue(&a, G, 1, (size_t)logic_host->tunable_index(l, 0), 1);
}

static const char *const coeffs_names[] = {"one", "prime", "hard", "ties", "views", NULL};
static const int64_t coeffs_dims[][3] = {
    {1, 0, 0}, {257, 0, 0}, {131, 1, 0}, {97, 1, 1}, {61, 0, 2}};

/* G gates; mode hard in dims[1]; dims[2]: 1 logits on a coarse grid (ties), 2 strided views. */
static kp_status coeffs_sample(kp_sample *s, const char *name)
{
    int64_t d[3] = {0, 0, 0};
    char *end = NULL;
    long long g = strtoll(name, &end, 10);
    if (end && end != name && !*end && g > 0) /* "G" (benchmarks): soft */
        d[0] = g;
    else if (!logic_sample_dims(name, coeffs_names, coeffs_dims, d))
        return KP_ERR_NOT_FOUND;
    int64_t G = d[0];
    float *w = NULL;
    kp_status st;
    if (d[2] == 2) {
        st = logic_host->sample_tensor(s, "w", KP_F32, 1, (int64_t[]){G * 19 + 3}, -3, 3, NULL);
        if (st == KP_OK)
            st = logic_host->sample_view(s, "w", 2, (int64_t[]){G, 16}, 3, (int64_t[]){19, 1});
        if (st == KP_OK)
            st = logic_host->sample_tensor(s, "C", KP_F32, 1, (int64_t[]){G * 6 + 1}, 0, 0, NULL);
        if (st == KP_OK)
            st = logic_host->sample_view(s, "C", 2, (int64_t[]){G, 4}, 1, (int64_t[]){6, 1});
        if (st == KP_OK)
            st = logic_host->sample_tensor(s, "op", KP_I32, 1, (int64_t[]){2 * G}, 0, 0, NULL);
        if (st == KP_OK)
            st = logic_host->sample_view(s, "op", 1, (int64_t[]){G}, 0, (int64_t[]){2});
    } else {
        st = logic_host->sample_tensor(s, "w", KP_F32, 2, (int64_t[]){G, 16}, -3, 3, (void **)&w);
        for (int64_t i = 0; st == KP_OK && d[2] == 1 && i < 16 * G; i++)
            w[i] = floorf(w[i]); /* six values: most gates tie for the maximum */
        if (st == KP_OK)
            st = logic_host->sample_tensor(s, "C", KP_F32, 2, (int64_t[]){G, 4}, 0, 0, NULL);
        if (st == KP_OK)
            st = logic_host->sample_tensor(s, "op", KP_I32, 1, &G, 0, 0, NULL);
    }
    return st == KP_OK ? logic_host->sample_int(s, "hard", d[1]) : st;
}

/* Per gate: 16 exponentials (counted as one FLOP each) and 64 multiply-adds. */
static void coeffs_cost(const kp_call *call, kp_cost *out)
{
    double G = (double)call->args[CO_W].tensor.shape[0];
    out->flops = G * (16 + 16 + 128);
    out->bytes =
        G * (64 + (call->args[CO_C].present ? 16 : 0) + (call->args[CO_OP].present ? 4 : 0));
}

static const kp_tunable_desc coeffs_tunables[] = {{
    .name = "WG",
    .default_value = 64,
    .allowed = logic_pow2_256,
    .n_allowed = 9,
    .flags = KP_TUNABLE_WORKGROUP | KP_TUNABLE_NO_DEFINE,
    .doc = "work-items (gates) per work-group",
}};

static const char *const coeffs_bench[] = {"64000", "1000000", NULL};

const kp_kernel_desc logic_coeffs_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "logic.coeffs",
    .summary = "gate logits w [G, 16] to coefficients C [G, 4] (softmax or argmax) and op ids",
    .params = coeffs_params,
    .n_params = CO_N,
    .tunables = coeffs_tunables,
    .n_tunables = 1,
    .source = kp_kernel_logic_cl,
    .source_name = "logic.cl",
    .entry = "logic_coeffs",
    .check = coeffs_check,
    .enqueue = coeffs_enqueue,
    .reference = logic_coeffs_reference,
    .sample = coeffs_sample,
    .cost = coeffs_cost,
    .verify_sizes = coeffs_names,
    .bench_sizes = coeffs_bench,
    /* Sums of 16 terms in [0, 2] scaled by 1/s, and exp's few ulps: well inside 1e-6. */
    .atol = 1e-6,
    .rtol = 1e-6,
};

/* ---- logic.forward --------------------------------------------------------------------------- */

static const kp_param_desc forward_params[] = {
    [FW_X] = {.name = "x",
              .kind = KP_ARG_KIND_TENSOR,
              .access = KP_ACCESS_IN,
              .dtypes = F32,
              .doc = "[IN, N] inputs, feature-major (the batch N contiguous)"},
    [FW_A] = {.name = "a_idx",
              .kind = KP_ARG_KIND_TENSOR,
              .access = KP_ACCESS_IN,
              .dtypes = I32,
              .doc = "[G] each gate's first input, a row of x"},
    [FW_B] = {.name = "b_idx",
              .kind = KP_ARG_KIND_TENSOR,
              .access = KP_ACCESS_IN,
              .dtypes = I32,
              .doc = "[G] each gate's second input (may equal a_idx)"},
    [FW_C] = {.name = "C",
              .kind = KP_ARG_KIND_TENSOR,
              .access = KP_ACCESS_IN,
              .dtypes = F32,
              .doc = "[G, 4] coefficients from logic.coeffs (soft or hard)"},
    [FW_Y] = {.name = "y",
              .kind = KP_ARG_KIND_TENSOR,
              .access = KP_ACCESS_OUT,
              .dtypes = F32,
              .doc = "[G, N] y = C1 + Ca a + Cb b + Cab a b"},
    [FW_CHECK] = {.name = "check_wiring",
                  .kind = KP_ARG_KIND_INT,
                  .access = KP_ACCESS_IN,
                  .flags = KP_PARAM_OPTIONAL,
                  .int_default = 1,
                  .doc = "1: read a_idx and b_idx back and reject any outside x's rows (a "
                         "blocking read); 0: skip (indices are then clamped, never out of bounds)"},
};

enum { FW_TUNE_WG_N, FW_TUNE_WG_G, FW_TUNE_SPT, FW_TUNE_VW };

static kp_status forward_check(const kp_call *call, kp_launch *l)
{
    const kp_value *a = call->args;
    const kp_tensor *x = &a[FW_X].tensor, *ai = &a[FW_A].tensor;
    kp_status st = logic_expect(l, "x", x, 2, (int64_t[]){-1, -1}, "[IN, N]");
    if (st == KP_OK && x->shape[0] < 1)
        st = logic_host->fail(l, KP_ERR_INVALID_ARG, "x: a layer needs at least one input row");
    if (st == KP_OK)
        st = logic_expect(l, "a_idx", ai, 1, (int64_t[]){-1}, "[G]");
    int64_t G = ai->shape[0], N = x->shape[1];
    if (st == KP_OK)
        st = logic_expect(l, "b_idx", &a[FW_B].tensor, 1, (int64_t[]){G}, "[G]");
    if (st == KP_OK)
        st = logic_expect(l, "C", &a[FW_C].tensor, 2, (int64_t[]){G, 4}, "[G, 4]");
    if (st == KP_OK)
        st = logic_expect(l, "y", &a[FW_Y].tensor, 2, (int64_t[]){G, N}, "[G, N]");
    if (st == KP_OK)
        st = logic_check_flag(l, call, FW_CHECK);
    if (st == KP_OK)
        st = logic_fits_int(l, call);
    if (st == KP_OK && a[FW_CHECK].i)
        st = logic_check_wiring(l, call, FW_A, FW_B, x->shape[0], "x");
    return st;
}

static kp_status forward_enqueue(const kp_call *call, kp_launch *l)
{
    const kp_value *v = call->args;
    int64_t IN = v[FW_X].tensor.shape[0], N = v[FW_X].tensor.shape[1];
    int64_t G = v[FW_A].tensor.shape[0];
    int64_t wn = logic_host->tunable_index(l, FW_TUNE_WG_N);
    int64_t wg = logic_host->tunable_index(l, FW_TUNE_WG_G);
    int64_t spt = logic_host->tunable_index(l, FW_TUNE_SPT);
    int64_t vw = logic_host->tunable_index(l, FW_TUNE_VW);
    kp_status st = logic_check_workgroup(l, wn, wg, "WG_N x WG_G");
    if (st != KP_OK)
        return st;
    kp_clargs a = logic_clargs_vw(l, "logic_forward", vw);
    kp_clargs_int(&a, (int32_t)N);
    kp_clargs_int(&a, (int32_t)G);
    kp_clargs_int(&a, (int32_t)IN);
    kp_clargs_int(&a, (int32_t)spt);
    kp_clargs_tensor(&a, &v[FW_X].tensor, 2);
    kp_clargs_tensor(&a, &v[FW_A].tensor, 1);
    kp_clargs_tensor(&a, &v[FW_B].tensor, 1);
    kp_clargs_tensor(&a, &v[FW_C].tensor, 2);
    kp_clargs_tensor(&a, &v[FW_Y].tensor, 2);
    /* One work-group of WG_N lanes covers WG_N * SPT vectors of VW samples. */
    int64_t groups = (N + wn * spt * vw - 1) / (wn * spt * vw);
    return logic_clargs_enqueue(&a, groups * wn, G, (size_t)wn, (size_t)wg);
}

/* {IN, G, N}; "same" makes every third gate read one wire twice, "views" pads and offsets. */
static const char *const forward_names[] = {"one", "prime", "same", "views", "small", NULL};
static const int64_t forward_dims[][3] = {
    {1, 1, 1}, {37, 53, 97}, {16, 67, 33}, {29, 41, 75}, {500, 1000, 300}};

/* Coefficients of trained-looking gates: the softmax of logits in [-2, 2) through M. */
static void sample_coeffs(kp_sample *s, float *C, int64_t G)
{
    for (int64_t g = 0; g < G; g++) {
        float w[16];
        for (int i = 0; i < 16; i++)
            w[i] = (float)logic_sample_uniform(s, -2.0, 2.0);
        double p[16];
        logic_softmax16(w, p);
        for (int t = 0; t < 4; t++) {
            double c = 0;
            for (int i = 0; i < 16; i++)
                c += kp_logic_coeff(t, i) * p[i];
            C[4 * g + t] = (float)c;
        }
    }
}

static kp_status forward_sample(kp_sample *s, const char *name)
{
    int64_t d[3];
    int n = logic_sample_dims(name, forward_names, forward_dims, d);
    if (!n)
        return KP_ERR_NOT_FOUND;
    if (n == 2) /* "GxN" (benchmarks): a layer with as many inputs as gates */
        d[2] = d[1], d[1] = d[0];
    int64_t IN = d[0], G = d[1], N = d[2];
    int views = strcmp(name, "views") == 0;
    float *C = NULL;
    kp_status st;
    if (views) {
        st =
            logic_host->sample_tensor(s, "x", KP_F32, 1, (int64_t[]){IN * (N + 5) + 2}, 0, 1, NULL);
        if (st == KP_OK)
            st = logic_host->sample_view(s, "x", 2, (int64_t[]){IN, N}, 2, (int64_t[]){N + 5, 1});
        if (st == KP_OK)
            st = logic_host->sample_tensor(s, "y", KP_F32, 1, (int64_t[]){G * (N + 3) + 1}, 0, 0,
                                           NULL);
        if (st == KP_OK)
            st = logic_host->sample_view(s, "y", 2, (int64_t[]){G, N}, 1, (int64_t[]){N + 3, 1});
    } else {
        st = logic_host->sample_tensor(s, "x", KP_F32, 2, (int64_t[]){IN, N}, 0, 1, NULL);
        if (st == KP_OK)
            st = logic_host->sample_tensor(s, "y", KP_F32, 2, (int64_t[]){G, N}, 0, 0, NULL);
    }
    if (st == KP_OK)
        st = logic_sample_wiring(s, G, IN, strcmp(name, "same") == 0, NULL, NULL);
    if (st == KP_OK)
        st = logic_host->sample_tensor(s, "C", KP_F32, 2, (int64_t[]){G, 4}, 0, 0, (void **)&C);
    if (st == KP_OK)
        sample_coeffs(s, C, G);
    return st;
}

/* Three FMAs per gate and sample. Bytes: each used input row once (at most min(IN, 2G) rows),
 * each output once, the wiring and coefficients once; the gathers' actual traffic is up to two
 * input rows per gate (bench-logic reports both). */
static void forward_cost(const kp_call *call, kp_cost *out)
{
    double IN = (double)call->args[FW_X].tensor.shape[0];
    double N = (double)call->args[FW_X].tensor.shape[1];
    double G = (double)call->args[FW_A].tensor.shape[0];
    out->flops = 6.0 * G * N;
    out->bytes = 4.0 * (fmin(IN, 2 * G) * N + G * N) + 24.0 * G;
}

/* CPUs: a work-item per gate and run of 16-float vectors; GPUs: 32 coalesced scalar lanes. */
static const char *forward_resolve(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved)
{
    static const logic_auto by_type[] = {
        [FW_TUNE_WG_N] = {1, 32},
        [FW_TUNE_WG_G] = {4, 8},
        [FW_TUNE_SPT] = {4, 4},
        [FW_TUNE_VW] = {LOGIC_VW_CPU, LOGIC_VW_OTHER},
    };
    return logic_resolve(l, by_type, sizeof by_type / sizeof by_type[0], index, value, resolved);
}

static const kp_tunable_desc forward_tunables[] = {
    [FW_TUNE_WG_N] = LOGIC_AUTO_TUNABLE("WG_N", logic_auto_256, 10, 0,
                                        "work-items along the batch per work-group; 0: 1 on "
                                        "CPUs, 32 on others"),
    [FW_TUNE_WG_G] = LOGIC_AUTO_TUNABLE("WG_G", logic_auto_64, 8, 0,
                                        "gates per work-group (WG_N x WG_G work-items); 0: 4 on "
                                        "CPUs, 8 on others"),
    [FW_TUNE_SPT] = LOGIC_AUTO_TUNABLE("SPT", logic_auto_16, 6, 0,
                                       "vectors per work-item (WG_N apart), reusing its gate's "
                                       "wiring and coefficients; 0: 4"),
    [FW_TUNE_VW] = LOGIC_VW_TUNABLE,
};

static const char *const forward_bench[] = {"64000x1024", "64000x100", "8000x1024", NULL};

const kp_kernel_desc logic_forward_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "logic.forward",
    .summary = "a layer of G two-input gates y = C1 + Ca a + Cb b + Cab ab over x [IN, N]",
    .params = forward_params,
    .n_params = FW_N,
    .tunables = forward_tunables,
    .n_tunables = 4,
    .source = kp_kernel_logic_cl,
    .source_name = "logic.cl",
    .entry = "logic_forward",
    .check = forward_check,
    .enqueue = forward_enqueue,
    .reference = logic_forward_reference,
    .sample = forward_sample,
    .cost = forward_cost,
    .verify_sizes = forward_names,
    .bench_sizes = forward_bench,
    /* |C| <= 2 and inputs in [0, 1]: three roundings of terms below 2, well inside 2e-6. */
    .atol = 2e-6,
    .rtol = 1e-6,
    .resolve = forward_resolve,
};
