/* SPDX-License-Identifier: Apache-2.0 */
/* gru.step: one GRU cell step h_out = GRU(x, h): fused for small batches, GEMMs for large. */
#include <stdio.h>
#include <string.h>

#include "gru-cell.h"
#include "gru-kernels.h"

#define F32 KP_DT(KP_F32)

static const kp_param_desc params[] = {
    [STEP_X] = {.name = "x",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_IN,
                .dtypes = F32,
                .doc = "[B, I] input; any strides"},
    [STEP_H] = {.name = "h",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_IN,
                .dtypes = F32,
                .doc = "[B, H] previous state"},
    [STEP_W_IH] = {.name = "w_ih",
                   .kind = KP_ARG_KIND_TENSOR,
                   .access = KP_ACCESS_IN,
                   .dtypes = F32,
                   .doc = "[3H, I] input weights, rows r, z, n (PyTorch weight_ih_l0)"},
    [STEP_W_HH] = {.name = "w_hh",
                   .kind = KP_ARG_KIND_TENSOR,
                   .access = KP_ACCESS_IN,
                   .dtypes = F32,
                   .doc = "[3H, H] recurrent weights, rows r, z, n (PyTorch weight_hh_l0)"},
    [STEP_B_IH] = {.name = "b_ih",
                   .kind = KP_ARG_KIND_TENSOR,
                   .access = KP_ACCESS_IN,
                   .dtypes = F32,
                   .flags = KP_PARAM_OPTIONAL,
                   .doc = "[3H] input bias (omitted: zero)"},
    [STEP_B_HH] = {.name = "b_hh",
                   .kind = KP_ARG_KIND_TENSOR,
                   .access = KP_ACCESS_IN,
                   .dtypes = F32,
                   .flags = KP_PARAM_OPTIONAL,
                   .doc = "[3H] recurrent bias (omitted: zero)"},
    [STEP_H_OUT] = {.name = "h_out",
                    .kind = KP_ARG_KIND_TENSOR,
                    .access = KP_ACCESS_OUT,
                    .dtypes = F32,
                    .doc = "[B, H] new state; may not overlap h"},
    [STEP_LBR] = {.name = "linear_before_reset",
                  .kind = KP_ARG_KIND_INT,
                  .access = KP_ACCESS_IN,
                  .flags = KP_PARAM_OPTIONAL,
                  .int_default = 1,
                  .doc = "1: n = tanh(W_in x + b_in + r (W_hn h + b_hn)) (PyTorch, cuDNN); "
                         "0: n = tanh(W_in x + b_in + W_hn (r h) + b_hn) (ONNX default)"},
};

static kp_status step_check(const kp_call *call, kp_launch *l)
{
    const kp_tensor *x = &call->args[STEP_X].tensor, *h = &call->args[STEP_H].tensor;
    char got[160];
    if (x->rank != 2 || x->shape[0] < 1 || x->shape[1] < 1)
        return gru_host->fail(l, KP_ERR_INVALID_ARG, "x: expected [B, I] with B, I >= 1, got %s",
                              kp_tensor_describe(x, got, sizeof got));
    gru_dims d = {.T = 1, .B = x->shape[0], .I = x->shape[1]};
    if (h->rank != 2 || h->shape[0] != d.B || h->shape[1] < 1)
        return gru_host->fail(l, KP_ERR_INVALID_ARG,
                              "h: expected [B, H] with B = %lld (x's) and H >= 1, got %s",
                              (long long)d.B, kp_tensor_describe(h, got, sizeof got));
    d.H = h->shape[1];
    kp_status st =
        gru_check_weights(l, call, STEP_W_IH, STEP_W_HH, STEP_B_IH, STEP_B_HH, STEP_LBR, &d);
    if (st == KP_OK)
        st = gru_expect(l, "h_out", &call->args[STEP_H_OUT].tensor, 2, (int64_t[]){d.B, d.H},
                        "[B, H]");
    return st == KP_OK ? gru_check_int_range(l, call, &d) : st;
}

static gru_cell cell_of(const kp_call *call)
{
    const kp_value *a = call->args;
    gru_cell c = {.B = a[STEP_X].tensor.shape[0],
                  .I = a[STEP_X].tensor.shape[1],
                  .H = a[STEP_H].tensor.shape[1],
                  .lbr = (int)a[STEP_LBR].i,
                  .x = a[STEP_X].tensor,
                  .h = a[STEP_H].tensor,
                  .w_ih = a[STEP_W_IH].tensor,
                  .w_hh = a[STEP_W_HH].tensor,
                  .h_out = a[STEP_H_OUT].tensor};
    if (a[STEP_B_IH].present)
        c.b_ih = a[STEP_B_IH].tensor;
    if (a[STEP_B_HH].present)
        c.b_hh = a[STEP_B_HH].tensor;
    return c;
}

static kp_status step_enqueue(const kp_call *call, kp_launch *l)
{
    gru_cell c = cell_of(call);
    if (c.B >= gru_batch_gemm(l)) {
        /* Without blas.gemm (no CLBlast, or disabled) the fused kernel does the large batch too. */
        kp_status st = gru_cell_gemm(l, &c, 0);
        if (st != KP_ERR_NOT_FOUND)
            return st;
    }
    return gru_cell_fused(l, &c, 3);
}

/* ---- samples and cost ------------------------------------------------------------------------ */

typedef struct step_size {
    const char *name;
    int64_t B, I, H;
    int lbr, views;
} step_size;

static const step_size sizes[] = {
    {"one", 1, 1, 1, 1, 0},           {"h3", 2, 4, 3, 1, 0},
    {"prime", 3, 5, 7, 1, 0},         {"h257", 1, 13, 257, 1, 0},
    {"gemm", 37, 13, 257, 1, 0},      {"lbr0", 3, 5, 7, 0, 0},
    {"lbr0-gemm", 37, 13, 257, 0, 0}, {"views", 3, 6, 5, 1, 1},
    {"views-gemm", 40, 6, 5, 0, 2},   {"seed", 1, 321, 256, 1, 0},
    {"h1024", 1, 1024, 1024, 1, 0},   {"big", 1024, 1024, 1024, 1, 0},
    {"h2048", 256, 2048, 2048, 1, 0},
};

/* Strided views: h rows padded and offset, w_ih stored transposed (column-major), b_ih every
 * other element, no b_hh, h_out padded. x takes every other column with `views` 1 (no unit stride:
 * the GEMM path cannot take it and the fused kernel's general loop runs) and is stored transposed
 * with `views` 2 (blas.gemm's layout rules then apply). */
static kp_status sample_views(kp_sample *s, const step_size *z)
{
    gru_dims d = {.T = 1, .B = z->B, .I = z->I, .H = z->H, .lbr = z->lbr};
    int64_t H3 = 3 * d.H;
    kp_status st =
        gru_host->sample_tensor(s, "x", KP_F32, 1, (int64_t[]){d.B * 2 * d.I + 1}, -1.0, 1.0, NULL);
    if (st == KP_OK && z->views == 1)
        st = gru_host->sample_view(s, "x", 2, (int64_t[]){d.B, d.I}, 1, (int64_t[]){2 * d.I, 2});
    else if (st == KP_OK)
        st = gru_host->sample_view(s, "x", 2, (int64_t[]){d.B, d.I}, 1, (int64_t[]){1, d.B});
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "h", KP_F32, 1, (int64_t[]){d.B * (d.H + 3) + 2}, -1.0, 1.0,
                                     NULL);
    if (st == KP_OK)
        st = gru_host->sample_view(s, "h", 2, (int64_t[]){d.B, d.H}, 2, (int64_t[]){d.H + 3, 1});
    if (st == KP_OK)
        st = gru_sample_weights(s, &d, 0);
    if (st == KP_OK)
        st = gru_host->sample_view(s, "w_ih", 2, (int64_t[]){H3, d.I}, 0, (int64_t[]){1, H3});
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "b_ih", KP_F32, 1, (int64_t[]){2 * H3}, -0.5, 0.5, NULL);
    if (st == KP_OK)
        st = gru_host->sample_view(s, "b_ih", 1, (int64_t[]){H3}, 1, (int64_t[]){2});
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "h_out", KP_F32, 1, (int64_t[]){d.B * (d.H + 1) + 3}, 0, 0,
                                     NULL);
    if (st == KP_OK)
        st =
            gru_host->sample_view(s, "h_out", 2, (int64_t[]){d.B, d.H}, 3, (int64_t[]){d.H + 1, 1});
    return st == KP_OK ? gru_host->sample_int(s, "linear_before_reset", d.lbr) : st;
}

static kp_status step_sample(kp_sample *s, const char *name)
{
    const step_size *z = NULL;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0] && !z; i++)
        if (strcmp(sizes[i].name, name) == 0)
            z = &sizes[i];
    long long b, in, hid;
    step_size any = {name, 0, 0, 0, 1, 0};
    if (!z && sscanf(name, "%lldx%lldx%lld", &b, &in, &hid) == 3 && b > 0 && in > 0 && hid > 0) {
        any.B = b, any.I = in, any.H = hid; /* "BxIxH", as benchmarks and the tuner ask */
        z = &any;
    }
    if (!z)
        return KP_ERR_NOT_FOUND;
    if (z->views)
        return sample_views(s, z);
    gru_dims d = {.T = 1, .B = z->B, .I = z->I, .H = z->H, .lbr = z->lbr};
    kp_status st =
        gru_host->sample_tensor(s, "x", KP_F32, 2, (int64_t[]){d.B, d.I}, -1.0, 1.0, NULL);
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "h", KP_F32, 2, (int64_t[]){d.B, d.H}, -1.0, 1.0, NULL);
    if (st == KP_OK)
        st = gru_sample_weights(s, &d, 1);
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "h_out", KP_F32, 2, (int64_t[]){d.B, d.H}, 0, 0, NULL);
    return st == KP_OK ? gru_host->sample_int(s, "linear_before_reset", d.lbr) : st;
}

/* Six matrix-vector products per row (2 * 3H (I + H) FLOPs) plus about 12 per unit for the
 * gates; bytes: both weight matrices once, x, h and h_out once per row. */
static void step_cost(const kp_call *call, kp_cost *out)
{
    double B = (double)call->args[STEP_X].tensor.shape[0];
    double I = (double)call->args[STEP_X].tensor.shape[1];
    double H = (double)call->args[STEP_H].tensor.shape[1];
    out->flops = B * (6.0 * H * (I + H) + 12.0 * H);
    out->bytes = 4.0 * (3.0 * H * (I + H) + 6.0 * H + B * (I + 2.0 * H));
}

/* ---- descriptor ------------------------------------------------------------------------------ */

static const char *const verify_sizes[] = {"one",  "h3",        "prime", "h257",       "gemm",
                                           "lbr0", "lbr0-gemm", "views", "views-gemm", NULL};
static const char *const bench_sizes[] = {"seed", "h1024", "big", "h2048", NULL};

const kp_kernel_desc gru_step_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "gru.step",
    .summary = "one GRU cell step h_out = GRU(x, h), PyTorch weight layout (gates r, z, n), f32",
    .params = params,
    .n_params = STEP_N,
    .tunables = gru_cell_tunables,
    .n_tunables = GRU_TUNE_ROWS_H,
    .source = kp_kernel_gru_cl,
    .source_name = "gru.cl",
    .entry = "gru_fused",
    .check = step_check,
    .enqueue = step_enqueue,
    .reference = gru_step_reference,
    .sample = step_sample,
    .cost = step_cost,
    .verify_sizes = verify_sizes,
    .bench_sizes = bench_sizes,
    .tolerance = gru_step_tolerance,
    .resolve = gru_cell_resolve,
};
