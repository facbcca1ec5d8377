/* SPDX-License-Identifier: Apache-2.0 */
/* gru.sequence: T GRU steps from h0, every state kept, optionally the workspace for backward. */
#include <stdio.h>
#include <string.h>

#include "gru-cell.h"
#include "gru-kernels.h"

#define F32 KP_DT(KP_F32)

static const kp_param_desc params[] = {
    [SEQ_X] = {.name = "x",
               .kind = KP_ARG_KIND_TENSOR,
               .access = KP_ACCESS_IN,
               .dtypes = F32,
               .doc = "[T, B, I] inputs, time first; any strides"},
    [SEQ_H0] = {.name = "h0",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_IN,
                .dtypes = F32,
                .doc = "[B, H] initial state"},
    [SEQ_W_IH] = {.name = "w_ih",
                  .kind = KP_ARG_KIND_TENSOR,
                  .access = KP_ACCESS_IN,
                  .dtypes = F32,
                  .doc = "[3H, I] input weights, rows r, z, n"},
    [SEQ_W_HH] = {.name = "w_hh",
                  .kind = KP_ARG_KIND_TENSOR,
                  .access = KP_ACCESS_IN,
                  .dtypes = F32,
                  .doc = "[3H, H] recurrent weights, rows r, z, n"},
    [SEQ_B_IH] = {.name = "b_ih",
                  .kind = KP_ARG_KIND_TENSOR,
                  .access = KP_ACCESS_IN,
                  .dtypes = F32,
                  .flags = KP_PARAM_OPTIONAL,
                  .doc = "[3H] input bias (omitted: zero)"},
    [SEQ_B_HH] = {.name = "b_hh",
                  .kind = KP_ARG_KIND_TENSOR,
                  .access = KP_ACCESS_IN,
                  .dtypes = F32,
                  .flags = KP_PARAM_OPTIONAL,
                  .doc = "[3H] recurrent bias (omitted: zero)"},
    [SEQ_H_ALL] = {.name = "h_all",
                   .kind = KP_ARG_KIND_TENSOR,
                   .access = KP_ACCESS_OUT,
                   .dtypes = F32,
                   .doc = "[T, B, H] the state after each step (h_all[T - 1] is the last)"},
    [SEQ_WS] = {.name = "workspace",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_OUT,
                .dtypes = F32,
                .flags = KP_PARAM_OPTIONAL,
                .doc = "[T, B, 4H] saved for gru.sequence_backward: r, z, n, then hn = W_hn h + "
                       "b_hn (linear_before_reset 1) or r * h_prev (0)"},
    [SEQ_LBR] = {.name = "linear_before_reset",
                 .kind = KP_ARG_KIND_INT,
                 .access = KP_ACCESS_IN,
                 .flags = KP_PARAM_OPTIONAL,
                 .int_default = 1,
                 .doc = "1: PyTorch/cuDNN cell; 0: ONNX default (see gru.step)"},
};

static kp_status sequence_check(const kp_call *call, kp_launch *l)
{
    const kp_tensor *x = &call->args[SEQ_X].tensor, *h0 = &call->args[SEQ_H0].tensor;
    gru_dims d;
    kp_status st = gru_check_sequence(l, x, h0, &d);
    if (st != KP_OK)
        return st;
    st = gru_check_weights(l, call, SEQ_W_IH, SEQ_W_HH, SEQ_B_IH, SEQ_B_HH, SEQ_LBR, &d);
    if (st == KP_OK)
        st = gru_expect(l, "h_all", &call->args[SEQ_H_ALL].tensor, 3, (int64_t[]){d.T, d.B, d.H},
                        "[T, B, H]");
    if (st == KP_OK && call->args[SEQ_WS].present)
        st = gru_expect(l, "workspace", &call->args[SEQ_WS].tensor, 3,
                        (int64_t[]){d.T, d.B, 4 * d.H}, "[T, B, 4H]");
    return st == KP_OK ? gru_check_int_range(l, call, &d) : st;
}

/* The rows route: W_hh^T once into scratch slot 4, then every step in one gru_seq_rows launch. */
static kp_status rows_forward(kp_launch *l, const kp_call *call, const kp_tensor *gx_all)
{
    const kp_value *a = call->args;
    const kp_tensor *x = &a[SEQ_X].tensor, none = {0};
    int64_t T = x->shape[0], B = x->shape[1], I = x->shape[2], H = a[SEQ_H0].tensor.shape[1];
    kp_buffer *buf, *stand_in = a[SEQ_H0].tensor.buffer;
    kp_status st = gru_host->scratch(l, 4, (size_t)(3 * H * H) * sizeof(float), &buf);
    kp_tensor w_t = gru_scratch_matrix(buf, 0, H, 3 * H);
    if (st == KP_OK)
        st = gru_transpose(l, &a[SEQ_W_HH].tensor, &w_t);
    if (st != KP_OK)
        return st;
    size_t wg = gru_wg(l), global = (size_t)B * wg;
    kp_clargs c = kp_clargs_begin(gru_host, l, "gru_seq_rows", NULL);
    const int dims[] = {(int)T, (int)B, (int)I, (int)H};
    for (int i = 0; i < 4; i++)
        kp_clargs_int(&c, dims[i]);
    gru_clargs_tensor(&c, x, 3, stand_in);
    gru_clargs_tensor(&c, gx_all, 2, stand_in);
    const kp_tensor *mats[] = {&a[SEQ_H0].tensor, &a[SEQ_W_IH].tensor, &w_t,
                               a[SEQ_B_IH].present ? &a[SEQ_B_IH].tensor : &none,
                               a[SEQ_B_HH].present ? &a[SEQ_B_HH].tensor : &none};
    for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++)
        gru_clargs_tensor(&c, mats[i], 2, stand_in);
    gru_clargs_tensor(&c, &a[SEQ_H_ALL].tensor, 3, stand_in);
    gru_clargs_tensor(&c, a[SEQ_WS].present ? &a[SEQ_WS].tensor : &none, 3, stand_in);
    kp_clargs_local(&c, (size_t)(2 * H) * sizeof(float));
    return kp_clargs_enqueue(&c, 1, &global, &wg);
}

/*
 * The input projection x w_ih^T of all T steps is one GEMM into scratch slot 0 when T B reaches
 * BATCH_GEMM (and blas.gemm exists and x's strides let [T, B, I] read as [T B, I]); each step
 * then adds only its recurrent part: all steps in one gru_seq_rows launch where ROWS_H allows,
 * else per step through GEMMs when B reaches BATCH_GEMM, else the fused kernel, which computes
 * the x-part itself when there is no projection.
 */
static kp_status sequence_enqueue(const kp_call *call, kp_launch *l)
{
    const kp_value *a = call->args;
    const kp_tensor *x = &a[SEQ_X].tensor, *h_all = &a[SEQ_H_ALL].tensor;
    int64_t T = x->shape[0], B = x->shape[1], H = a[SEQ_H0].tensor.shape[1];
    int64_t batch_gemm = gru_batch_gemm(l);
    gru_cell c = {.B = B,
                  .I = x->shape[2],
                  .H = H,
                  .lbr = (int)a[SEQ_LBR].i,
                  .w_ih = a[SEQ_W_IH].tensor,
                  .w_hh = a[SEQ_W_HH].tensor};
    if (a[SEQ_B_IH].present)
        c.b_ih = a[SEQ_B_IH].tensor;
    if (a[SEQ_B_HH].present)
        c.b_hh = a[SEQ_B_HH].tensor;
    kp_tensor x_flat, gx_all = {0};
    int have_blas = 1;
    kp_status st = KP_OK;
    if (T * B >= batch_gemm && gru_flatten(x, 0, T, &x_flat)) {
        kp_buffer *buf;
        st = gru_host->scratch(l, 0, (size_t)(T * B * 3 * H) * sizeof(float), &buf);
        kp_tensor w_ih_t = kp_tensor_transpose(c.w_ih, 0, 1);
        gx_all = gru_scratch_matrix(buf, 0, T * B, 3 * H);
        if (st == KP_OK)
            st = gru_blas_gemm(l, &x_flat, &w_ih_t, &gx_all, 0.0);
        if (st == KP_ERR_NOT_FOUND) {
            have_blas = 0;
            gx_all.buffer = NULL;
            st = KP_OK;
        }
    }
    if (st == KP_OK && gru_rows_route(l, H, c.lbr, 2 * H))
        return rows_forward(l, call, &gx_all);
    /* CLBlast's GEMM kernel reads the weight operand of h W_hh^T as W_hh^T stored, and would copy
     * it transposed on every step (48 MB a step at H 2048): one copy serves all T steps. OpenBLAS
     * reads the transposed operand as it is, and the copy took PoCL 2.4 ms at H 512 (2-core EPYC),
     * so it is skipped there. */
    if (st == KP_OK && have_blas && B >= batch_gemm && T > 1 && !gru_host_blas(l)) {
        kp_buffer *buf;
        st = gru_host->scratch(l, 4, (size_t)(3 * H * H) * sizeof(float), &buf);
        if (st == KP_OK) {
            c.w_hh_t = gru_scratch_matrix(buf, 0, H, 3 * H);
            st = gru_transpose(l, &c.w_hh, &c.w_hh_t);
        }
    }
    for (int64_t t = 0; st == KP_OK && t < T; t++) {
        c.x = gru_step_of(x, t);
        c.h = t ? gru_step_of(h_all, t - 1) : a[SEQ_H0].tensor;
        c.h_out = gru_step_of(h_all, t);
        if (a[SEQ_WS].present)
            c.ws = gru_step_of(&a[SEQ_WS].tensor, t);
        if (gru_present(&gx_all))
            c.gx = gru_sub(&gx_all, t * B, B, 0, 3 * H);
        st = KP_ERR_NOT_FOUND;
        if (have_blas && B >= batch_gemm) {
            st = gru_cell_gemm(l, &c, 1);
            have_blas = st != KP_ERR_NOT_FOUND;
        }
        if (st == KP_ERR_NOT_FOUND)
            st = gru_cell_fused(l, &c, 4);
    }
    return st;
}

/* ---- samples and cost ------------------------------------------------------------------------ */

typedef struct seq_size {
    const char *name;
    int64_t T, B, I, H;
    int lbr, ws;
} seq_size;

static const seq_size sizes[] = {
    {"t1", 1, 1, 1, 3, 1, 1},
    {"prime", 9, 3, 5, 7, 1, 1},
    {"lbr0", 9, 3, 5, 7, 0, 1},
    {"nows", 9, 2, 4, 3, 0, 0},
    {"gemm", 9, 37, 13, 257, 1, 1},
    {"lbr0-gemm", 9, 37, 13, 257, 0, 1},
    {"h257", 9, 1, 13, 257, 0, 1},
    {"seed", 50, 1, 321, 256, 1, 1},
    {"wm", 50, 128, 65, 64, 1, 1},
    {"h1024", 50, 1, 1024, 1024, 1, 1},
    {"big", 15, 1024, 1024, 1024, 1, 1},
    {"h2048", 15, 256, 2048, 2048, 1, 1},
};

static kp_status sequence_sample(kp_sample *s, const char *name)
{
    const seq_size *z = NULL;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0] && !z; i++)
        if (strcmp(sizes[i].name, name) == 0)
            z = &sizes[i];
    long long t, b, in, hid;
    seq_size any = {name, 0, 0, 0, 0, 1, 1};
    if (!z && sscanf(name, "%lldx%lldx%lldx%lld", &t, &b, &in, &hid) == 4 && t > 0 && b > 0 &&
        in > 0 && hid > 0) {
        any.T = t, any.B = b, any.I = in, any.H = hid; /* "TxBxIxH" */
        z = &any;
    }
    if (!z)
        return KP_ERR_NOT_FOUND;
    gru_dims d = {.T = z->T, .B = z->B, .I = z->I, .H = z->H, .lbr = z->lbr};
    kp_status st =
        gru_host->sample_tensor(s, "x", KP_F32, 3, (int64_t[]){d.T, d.B, d.I}, -1.0, 1.0, NULL);
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "h0", KP_F32, 2, (int64_t[]){d.B, d.H}, -1.0, 1.0, NULL);
    if (st == KP_OK)
        st = gru_sample_weights(s, &d, 1);
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "h_all", KP_F32, 3, (int64_t[]){d.T, d.B, d.H}, 0, 0, NULL);
    if (st == KP_OK && z->ws)
        st = gru_host->sample_tensor(s, "workspace", KP_F32, 3, (int64_t[]){d.T, d.B, 4 * d.H}, 0,
                                     0, NULL);
    return st == KP_OK ? gru_host->sample_int(s, "linear_before_reset", d.lbr) : st;
}

/* T steps of gru.step's work; the weights are read once (the fewest bytes: a device that kept
 * them on chip), the states and the workspace written once. */
static void sequence_cost(const kp_call *call, kp_cost *out)
{
    const kp_tensor *x = &call->args[SEQ_X].tensor;
    double T = (double)x->shape[0], B = (double)x->shape[1], I = (double)x->shape[2];
    double H = (double)call->args[SEQ_H0].tensor.shape[1];
    double ws = call->args[SEQ_WS].present ? 4.0 * H : 0.0;
    out->flops = T * B * (6.0 * H * (I + H) + 12.0 * H);
    out->bytes = 4.0 * (3.0 * H * (I + H) + 6.0 * H + B * H + T * B * (I + H + ws));
}

/* ---- descriptor ------------------------------------------------------------------------------ */

static const char *const verify_sizes[] = {"t1",   "prime",     "lbr0", "nows",
                                           "gemm", "lbr0-gemm", "h257", NULL};
static const char *const bench_sizes[] = {"seed", "wm", "h1024", "big", "h2048", NULL};

const kp_kernel_desc gru_sequence_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "gru.sequence",
    .summary = "T GRU steps from h0: all states, optional workspace for backward, f32",
    .params = params,
    .n_params = SEQ_N,
    .tunables = gru_cell_tunables,
    .n_tunables = GRU_TUNE_SPLIT_MN,
    .source = kp_kernel_gru_cl,
    .source_name = "gru.cl",
    .entry = "gru_fused",
    .check = sequence_check,
    .enqueue = sequence_enqueue,
    .reference = gru_sequence_reference,
    .sample = sequence_sample,
    .cost = sequence_cost,
    .verify_sizes = verify_sizes,
    .bench_sizes = bench_sizes,
    .tolerance = gru_sequence_tolerance,
    .resolve = gru_cell_resolve,
};
