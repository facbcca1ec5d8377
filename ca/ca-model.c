/* SPDX-License-Identifier: Apache-2.0 */
/* A logic-gate CA's buffers and its rollouts, loss, backward and training step (kernelport/ca.h).
 */
#include <stdlib.h>
#include <string.h>

#include "ca-internal.h"
#include "kernelport/ops/optim.h"
#include "kernelport/ops/tensor.h"

/* The network's int32 tables, in the order the buffers hold them. */
enum { T_LAYERS, T_A, T_B, T_PARAM, T_PSTART, T_CSR_START, T_CSR_ENTRIES, T_N };
/* The float buffers. */
enum {
    B_W,       /* [4][P, 16]: logits, gradient, AdamW's two moments (one arena each 16 P) */
    B_COEFFS,  /* [2][P, 4]: soft, hard */
    B_STATES,  /* [2][T + 1][C, N]: soft, hard rollouts */
    B_ACTS,    /* [T][A, N]: the soft rollout's activations */
    B_HACTS,   /* [A, N]: the hard rollout's, per step overwritten */
    B_DACTS,   /* [A, N] */
    B_DSTATE,  /* [3][C, N]: the loss's gradient, then two alternating step gradients */
    B_SUMS,    /* [4G, N] */
    B_FIRE,    /* [T, N] */
    B_TARGET,  /* [N] */
    B_SCALARS, /* loss, hard loss, N, norm, clip coefficient, clip bounds */
    B_N
};
enum { S_LOSS, S_HLOSS, S_CELLS, S_NORM, S_COEF, S_HI, S_LO, S_N };

struct kp_ca {
    kp_runtime *rt;
    kp_ca_options o; /* o.net points at cfg, the caller's configuration copied */
    kp_logic_ca_config cfg;
    kp_logic_ca_net net;
    int64_t C, N, G, P, A, T;
    kp_kernel *step, *backward, *dw, *coeffs;
    kp_buffer *tables[T_N], *buf[B_N];
};

kp_ca_options kp_ca_options_default(void)
{
    kp_ca_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.batch = 1;
    o.steps = 1;
    o.fire_rate = 1;
    o.lr = 0.05;
    o.beta1 = 0.9;
    o.beta2 = 0.99;
    o.eps = 1e-8;
    o.weight_decay = 0.01;
    o.clip_norm = 100;
    return o;
}

static kp_tensor f32(kp_buffer *b, int64_t offset, int32_t rank, const int64_t *shape)
{
    kp_tensor t = kp_tensor_nd(b, KP_F32, rank, shape);
    t.offset = offset;
    return t;
}

static kp_tensor table(const kp_ca *ca, int i, int64_t n)
{
    return kp_tensor_1d(ca->tables[i], KP_I32, n);
}

static kp_tensor scalar(const kp_ca *ca, int i)
{
    return f32(ca->buf[B_SCALARS], i, 0, NULL);
}

/* Logit arena k: 0 logits, 1 gradient, 2 and 3 AdamW's moments. */
static kp_tensor arena(const kp_ca *ca, int k)
{
    return f32(ca->buf[B_W], k * 16 * ca->P, 2, (int64_t[]){ca->P, 16});
}

static kp_tensor coeffs(const kp_ca *ca, int hard)
{
    return f32(ca->buf[B_COEFFS], hard * 4 * ca->P, 2, (int64_t[]){ca->P, 4});
}

kp_tensor kp_ca_state(const kp_ca *ca, int32_t t, int hard)
{
    const int64_t at = hard && t > 0 ? (ca->T + 1 + t) : t;
    return f32(ca->buf[B_STATES], at * ca->C * ca->N, 2, (int64_t[]){ca->C, ca->N});
}

/* Step t's activations: kept per step for the soft rollout's backward, else one buffer. */
static kp_tensor acts(const kp_ca *ca, int64_t t, int hard)
{
    const int keep = !hard && !ca->o.inference_only;
    return f32(keep ? ca->buf[B_ACTS] : ca->buf[B_HACTS], keep ? t * ca->A * ca->N : 0, 2,
               (int64_t[]){ca->A, ca->N});
}

/* Gradient buffer i: 0 the loss's, 1 and 2 alternate through the steps. */
static kp_tensor dstate(const kp_ca *ca, int i)
{
    return f32(ca->buf[B_DSTATE], i * ca->C * ca->N, 2, (int64_t[]){ca->C, ca->N});
}

kp_tensor kp_ca_target(const kp_ca *ca)
{
    return kp_tensor_1d(ca->buf[B_TARGET], KP_F32, ca->N);
}

kp_tensor kp_ca_logits(const kp_ca *ca)
{
    return arena(ca, 0);
}

kp_tensor kp_ca_grad(const kp_ca *ca)
{
    return arena(ca, 1);
}

const kp_logic_ca_net *kp_ca_net(const kp_ca *ca)
{
    return &ca->net;
}

int64_t kp_ca_cells(const kp_ca *ca)
{
    return ca->N;
}

kp_runtime *kp__ca_runtime(const kp_ca *ca)
{
    return ca->rt;
}

const kp_ca_options *kp__ca_options(const kp_ca *ca)
{
    return &ca->o;
}

void kp_ca_destroy(kp_ca *ca)
{
    if (!ca)
        return;
    for (int i = 0; i < T_N; i++)
        kp_buffer_destroy(ca->rt, ca->tables[i]);
    for (int i = 0; i < B_N; i++)
        kp_buffer_destroy(ca->rt, ca->buf[i]);
    kp_logic_ca_net_free(&ca->net);
    free(ca);
}

/* The grid's options; then the networks, built into ca->net. */
static kp_status check_options(kp_runtime *rt, const kp_ca_options *o, kp_logic_ca_net *net)
{
    char why[256];
    if (o->height < 1 || o->width < 1 || o->height > 65535 || o->width > 65535)
        return kp_last_error_set(
            rt, KP_ERR_INVALID_ARG,
            "kp_ca_create: height, width: %d x %d is not a grid (1 .. 65535 each)", o->height,
            o->width);
    if (o->batch < 1 || o->steps < 1 || (double)o->batch * o->height * o->width > 1e8)
        return kp_last_error_set(
            rt, KP_ERR_INVALID_ARG,
            "kp_ca_create: batch %d, steps %d: both must be at least 1 and the "
            "cells at most 10^8",
            o->batch, o->steps);
    if (o->boundary != 0 && o->boundary != 1)
        return kp_last_error_set(rt, KP_ERR_INVALID_ARG,
                                 "kp_ca_create: boundary: %d is not 0 (periodic) or 1 (zero)",
                                 o->boundary);
    if (!(o->fire_rate > 0 && o->fire_rate <= 1))
        return kp_last_error_set(rt, KP_ERR_INVALID_ARG,
                                 "kp_ca_create: fire_rate: %g is not in (0, 1]", o->fire_rate);
    if (!(o->lr >= 0) || !(o->clip_norm > 0))
        return kp_last_error_set(rt, KP_ERR_INVALID_ARG,
                                 "kp_ca_create: lr %g, clip_norm %g: lr must be at least 0 and "
                                 "clip_norm positive",
                                 o->lr, o->clip_norm);
    if (kp_logic_ca_net_build(o->net, net, why, sizeof why) != 0)
        return kp_last_error_set(rt, KP_ERR_INVALID_ARG, "kp_ca_create: %s", why);
    return KP_OK;
}

static kp_status upload_tables(kp_ca *ca)
{
    const kp_logic_ca_net *n = &ca->net;
    const int32_t *src[T_N] = {n->layers,      n->a_idx,     n->b_idx,      n->param,
                               n->param_start, n->csr_start, n->csr_entries};
    const int64_t len[T_N] = {n->n_layers + 1, ca->G,     ca->G,    ca->G,
                              ca->P + 1,       ca->A + 1, 2 * ca->G};
    kp_status st = KP_OK;
    for (int i = 0; st == KP_OK && i < T_N; i++) {
        const size_t bytes = (size_t)len[i] * sizeof(int32_t);
        st = kp_buffer_create(ca->rt, bytes, &ca->tables[i]);
        if (st == KP_OK)
            st = kp_buffer_write(ca->rt, ca->tables[i], 0, bytes, src[i]);
    }
    return st;
}

static kp_status create_buffers(kp_ca *ca)
{
    const int64_t C = ca->C, N = ca->N, T = ca->T, A = ca->A;
    /* An inference_only CA keeps one element where the backward's buffers would be. */
    const int64_t train = !ca->o.inference_only;
    const int64_t floats[B_N] = {[B_W] = 4 * 16 * ca->P,
                                 [B_COEFFS] = 2 * 4 * ca->P,
                                 [B_STATES] = 2 * (T + 1) * C * N,
                                 [B_ACTS] = train ? T * A * N : 1,
                                 [B_HACTS] = A * N,
                                 [B_DACTS] = train ? A * N : 1,
                                 [B_DSTATE] = 3 * C * N,
                                 [B_SUMS] = train ? 4 * ca->G * N : 1,
                                 [B_FIRE] = T * N,
                                 [B_TARGET] = N,
                                 [B_SCALARS] = S_N};
    const float zero = 0;
    kp_status st = KP_OK;
    for (int i = 0; st == KP_OK && i < B_N; i++) {
        const size_t bytes = (size_t)floats[i] * sizeof(float);
        st = kp_buffer_create(ca->rt, bytes, &ca->buf[i]);
        if (st == KP_OK)
            st = kp_buffer_fill(ca->rt, ca->buf[i], 0, bytes, &zero, sizeof zero);
    }
    float *w = st == KP_OK ? malloc((size_t)ca->P * 16 * sizeof *w) : NULL;
    if (st == KP_OK && !w)
        st = kp_last_error_set(ca->rt, KP_ERR_OUT_OF_MEMORY, "kp_ca_create: out of host memory");
    if (st == KP_OK) {
        kp_logic_init_pass_through(w, ca->P);
        st = kp_buffer_write(ca->rt, ca->buf[B_W], 0, (size_t)ca->P * 16 * sizeof *w, w);
    }
    free(w);
    const float cells = (float)N, bounds[2] = {(float)ca->o.clip_norm, -(float)ca->o.clip_norm};
    if (st == KP_OK)
        st = kp_buffer_write(ca->rt, ca->buf[B_SCALARS], S_CELLS * sizeof(float), sizeof cells,
                             &cells);
    if (st == KP_OK)
        st = kp_buffer_write(ca->rt, ca->buf[B_SCALARS], S_HI * sizeof(float), sizeof bounds,
                             bounds);
    return st;
}

kp_status kp_ca_create(kp_runtime *rt, const kp_ca_options *options, kp_ca **out)
{
    if (!out)
        return kp_last_error_set(rt, KP_ERR_INVALID_ARG, "kp_ca_create: out is NULL");
    *out = NULL;
    if (!rt || !options)
        return kp_last_error_set(rt, KP_ERR_INVALID_ARG,
                                 "kp_ca_create: rt and options are required");
    if (options->struct_size != sizeof(kp_ca_options))
        return kp_last_error_set(rt, KP_ERR_INVALID_ARG,
                                 "kp_ca_create: options: struct_size %u, expected %zu (start from "
                                 "kp_ca_options_default)",
                                 options->struct_size, sizeof(kp_ca_options));
    if (!options->net)
        return kp_last_error_set(rt, KP_ERR_INVALID_ARG,
                                 "kp_ca_create: options: net is NULL (set it to the networks' "
                                 "kp_logic_ca_config)");
    kp_ca *ca = calloc(1, sizeof *ca);
    if (!ca)
        return kp_last_error_set(rt, KP_ERR_OUT_OF_MEMORY, "kp_ca_create: out of host memory");
    ca->rt = rt;
    ca->o = *options;
    kp_status st = check_options(rt, options, &ca->net);
    if (st != KP_OK) {
        free(ca);
        return st;
    }
    /* The caller's configuration need not outlive the call: its bytes up to its struct_size (0:
     * the first layout), none past this library's layout. */
    const size_t given =
        options->net->struct_size ? options->net->struct_size : KP_LOGIC_CA_CONFIG_FIRST;
    memcpy(&ca->cfg, options->net, given < sizeof ca->cfg ? given : sizeof ca->cfg);
    ca->cfg.struct_size = sizeof ca->cfg;
    ca->o.net = &ca->cfg;
    ca->C = ca->net.channels;
    ca->N = (int64_t)options->batch * options->height * options->width;
    ca->G = ca->net.n_gates;
    ca->P = ca->net.n_params;
    ca->A = ca->net.n_rows;
    ca->T = options->steps;
    /* An inference_only CA has no per-step activations and no sums [4G, N]. */
    if ((double)(options->inference_only ? 1 : ca->T) * (double)ca->A * (double)ca->N >
            2147483647.0 ||
        (!options->inference_only && 4.0 * (double)ca->G * (double)ca->N > 2147483647.0))
        st = kp_last_error_set(
            rt, KP_ERR_UNSUPPORTED,
            "kp_ca_create: %lld steps of %lld activations for %lld cells pass 2^31 "
            "elements in one buffer",
            (long long)ca->T, (long long)ca->A, (long long)ca->N);
    kp_kernel **kernels[] = {&ca->step, &ca->backward, &ca->dw, &ca->coeffs};
    const char *names[] = {"logic.ca_step", "logic.ca_step_backward", "logic.ca_dw",
                           "logic.coeffs"};
    for (int i = 0; st == KP_OK && i < 4; i++)
        st = kp_kernel_find(rt, names[i], kernels[i]);
    if (st == KP_OK)
        st = upload_tables(ca);
    if (st == KP_OK)
        st = create_buffers(ca);
    if (st != KP_OK) {
        kp_ca_destroy(ca);
        return st;
    }
    *out = ca;
    return KP_OK;
}

/* ---- launches -------------------------------------------------------------------------------- */

static int fires(const kp_ca *ca)
{
    return ca->o.fire_rate < 1;
}

/* The network's arguments after a kernel's own, the wiring trusted (built by the CA). */
static size_t net_args(const kp_ca *ca, kp_arg *a, size_t n, int hard, int64_t t, int backward)
{
    a[n++] = kp_arg_tensor("layers", table(ca, T_LAYERS, ca->net.n_layers + 1));
    a[n++] = kp_arg_tensor("a_idx", table(ca, T_A, ca->G));
    a[n++] = kp_arg_tensor("b_idx", table(ca, T_B, ca->G));
    a[n++] = kp_arg_tensor("param", table(ca, T_PARAM, ca->G));
    a[n++] = kp_arg_tensor("C", coeffs(ca, hard));
    if (fires(ca)) {
        a[n++] = kp_arg_tensor("fire", f32(ca->buf[B_FIRE], t * ca->N, 1, (int64_t[]){ca->N}));
        a[n++] = kp_arg_float("fire_rate", ca->o.fire_rate);
    }
    a[n++] = kp_arg_int("height", ca->o.height);
    a[n++] = kp_arg_int("width", ca->o.width);
    a[n++] = kp_arg_int("boundary", ca->o.boundary);
    a[n++] = kp_arg_int("check_wiring", 0);
    if (backward) {
        a[n++] = kp_arg_tensor("csr_start", table(ca, T_CSR_START, ca->A + 1));
        a[n++] = kp_arg_tensor("csr_entries", table(ca, T_CSR_ENTRIES, 2 * ca->G));
    }
    return n;
}

/* The initial states (tensor.bernoulli, p 0.5) or the fire masks (tensor.uniform) of training
 * step `step`: the draws of step s follow those of step s - 1 in the key's stream. */
static kp_status draw(kp_ca *ca, int bernoulli, kp_tensor y, uint64_t key, int64_t step)
{
    kp_kernel *k = NULL;
    kp_status st = kp_kernel_find(ca->rt, bernoulli ? "tensor.bernoulli" : "tensor.uniform", &k);
    kp_arg a[] = {kp_arg_tensor("y", y), kp_arg_int("seed", (int64_t)key),
                  kp_arg_int("offset", (step - 1) * kp_tensor_numel(&y))};
    return st == KP_OK ? kp_kernel_launch(ca->rt, k, a, 3, NULL) : st;
}

/* loss = N mean((state_T[0] - target)^2), the gradient 2 (state_T[0] - target) into row 0 of
 * the loss's gradient buffer (the other rows stay 0). */
kp_status kp_ca_loss(kp_ca *ca, int hard)
{
    const kp_tensor out = kp_tensor_narrow(kp_ca_state(ca, (int32_t)ca->T, hard), 0, 0, 1);
    const kp_tensor target =
        kp_tensor_narrow(f32(ca->buf[B_TARGET], 0, 2, (int64_t[]){1, ca->N}), 0, 0, 1);
    const kp_tensor loss = scalar(ca, hard ? S_HLOSS : S_LOSS), cells = scalar(ca, S_CELLS);
    const kp_tensor d = kp_tensor_narrow(dstate(ca, 0), 0, 0, 1);
    kp_status st = kp_mse(ca->rt, out, target, loss, hard ? NULL : &d);
    if (st == KP_OK)
        st = kp_mul(ca->rt, loss, cells, loss);
    if (st == KP_OK && !hard)
        st = kp_mul(ca->rt, d, cells, d);
    return st;
}

kp_status kp_ca_backward(kp_ca *ca)
{
    kp_arg a[24];
    kp_status st = KP_OK;
    if (ca->o.inference_only)
        return kp_last_error_set(ca->rt, KP_ERR_UNSUPPORTED,
                                 "kp_ca_backward: the CA was created inference_only");
    for (int64_t t = ca->T - 1; st == KP_OK && t >= 0; t--) {
        /* Step T - 1 reads the loss's gradient; the steps below alternate buffers 1 and 2. */
        const int in = t == ca->T - 1 ? 0 : 1 + (int)((ca->T - 2 - t) % 2);
        const int out = 1 + (int)((ca->T - 1 - t) % 2);
        size_t n = 0;
        a[n++] = kp_arg_tensor("acts", acts(ca, t, 0));
        a[n++] = kp_arg_tensor("dnext", dstate(ca, in));
        a[n++] = kp_arg_tensor("dacts", f32(ca->buf[B_DACTS], 0, 2, (int64_t[]){ca->A, ca->N}));
        a[n++] = kp_arg_tensor("dstate", dstate(ca, out));
        a[n++] = kp_arg_tensor("sums", f32(ca->buf[B_SUMS], 0, 2, (int64_t[]){4 * ca->G, ca->N}));
        a[n++] = kp_arg_int("accumulate", t < ca->T - 1);
        n = net_args(ca, a, n, 0, t, 1);
        st = kp_kernel_launch(ca->rt, ca->backward, a, n, NULL);
    }
    kp_arg d[] = {kp_arg_tensor("sums", f32(ca->buf[B_SUMS], 0, 2, (int64_t[]){4 * ca->G, ca->N})),
                  kp_arg_tensor("param_start", table(ca, T_PSTART, ca->P + 1)),
                  kp_arg_tensor("w", kp_ca_logits(ca)), kp_arg_tensor("dw", kp_ca_grad(ca)),
                  kp_arg_int("check_wiring", 0)};
    return st == KP_OK ? kp_kernel_launch(ca->rt, ca->dw, d, 5, NULL) : st;
}

static kp_status coefficients(kp_ca *ca, int hard)
{
    kp_arg a[] = {kp_arg_tensor("w", kp_ca_logits(ca)), kp_arg_tensor("C", coeffs(ca, hard)),
                  kp_arg_int("hard", hard)};
    return kp_kernel_launch(ca->rt, ca->coeffs, a, 3, NULL);
}

kp_status kp_ca_rollout(kp_ca *ca, int hard)
{
    kp_arg a[24];
    kp_status st = coefficients(ca, hard);
    for (int64_t t = 0; st == KP_OK && t < ca->T; t++) {
        size_t n = 0;
        a[n++] = kp_arg_tensor("state", kp_ca_state(ca, (int32_t)t, hard));
        a[n++] = kp_arg_tensor("next", kp_ca_state(ca, (int32_t)t + 1, hard));
        a[n++] = kp_arg_tensor("acts", acts(ca, t, hard));
        n = net_args(ca, a, n, hard, t, 0);
        st = kp_kernel_launch(ca->rt, ca->step, a, n, NULL);
    }
    return st;
}

/* A graph parameter for the launch just recorded, when recording. */
static kp_status param(kp_ca *ca, int recording, const char *name, const char *arg)
{
    return recording ? kp_graph_param(ca->rt, name, arg) : KP_OK;
}

static kp_status train_step(kp_ca *ca, int64_t step, int recording)
{
    const kp_tensor all = f32(ca->buf[B_W], 0, 1, (int64_t[]){16 * ca->P});
    kp_status st = KP_OK;
    if (ca->o.random_init) {
        st = draw(ca, 1, kp_tensor_1d(ca->buf[B_STATES], KP_F32, ca->C * ca->N), ca->o.seed, step);
        if (st == KP_OK)
            st = param(ca, recording, "init_offset", "offset");
    }
    if (st == KP_OK && fires(ca)) {
        st = draw(ca, 0, kp_tensor_1d(ca->buf[B_FIRE], KP_F32, ca->T * ca->N),
                  ca->o.seed ^ KP_CA_FIRE_KEY, step);
        if (st == KP_OK)
            st = param(ca, recording, "fire_offset", "offset");
    }
    if (st == KP_OK)
        st = kp_ca_rollout(ca, 0);
    if (st == KP_OK)
        st = kp_ca_loss(ca, 0);
    if (st == KP_OK)
        st = kp_ca_backward(ca);
    kp_tensor grad = all;
    grad.offset = 16 * ca->P;
    if (st == KP_OK && ca->o.clip_elementwise)
        st = kp_tensor_binary(ca->rt, "minimum", grad, scalar(ca, S_HI), grad);
    if (st == KP_OK && ca->o.clip_elementwise)
        st = kp_tensor_binary(ca->rt, "maximum", grad, scalar(ca, S_LO), grad);
    if (st == KP_OK && !ca->o.clip_elementwise)
        st = kp_optim_clip_coef(ca->rt, grad, scalar(ca, S_NORM), scalar(ca, S_COEF),
                                ca->o.clip_norm, NULL);
    if (st == KP_OK) {
        kp_adam_options o = kp_adamw_defaults();
        const kp_tensor coef = scalar(ca, S_COEF);
        o.lr = ca->o.lr;
        o.beta1 = ca->o.beta1;
        o.beta2 = ca->o.beta2;
        o.eps = ca->o.eps;
        o.weight_decay = ca->o.weight_decay;
        o.grad_mul = ca->o.clip_elementwise ? NULL : &coef;
        o.check_segments = 0;
        kp_tensor moments[2] = {all, all};
        moments[0].offset = 2 * 16 * ca->P;
        moments[1].offset = 3 * 16 * ca->P;
        st = kp_optim_adamw(ca->rt, all, grad, moments[0], moments[1], step, &o);
        if (st == KP_OK)
            st = param(ca, recording, "step", "step");
    }
    if (st == KP_OK)
        st = kp_ca_rollout(ca, 1);
    return st == KP_OK ? kp_ca_loss(ca, 1) : st;
}

kp_status kp_ca_train_step(kp_ca *ca, int64_t step)
{
    if (step < 1)
        return kp_last_error_set(ca->rt, KP_ERR_INVALID_ARG,
                                 "kp_ca_train_step: step %lld is below 1", (long long)step);
    if (ca->o.inference_only)
        return kp_last_error_set(ca->rt, KP_ERR_UNSUPPORTED,
                                 "kp_ca_train_step: the CA was created inference_only");
    return train_step(ca, step, 0);
}

kp_status kp_ca_record(kp_ca *ca, kp_graph **out)
{
    *out = NULL;
    if (ca->o.inference_only)
        return kp_last_error_set(ca->rt, KP_ERR_UNSUPPORTED,
                                 "kp_ca_record: the CA was created inference_only");
    kp_status st = kp_graph_begin(ca->rt, 0);
    if (st != KP_OK)
        return st;
    st = train_step(ca, 1, 1);
    kp_graph *g = NULL;
    const kp_status end = kp_graph_end(ca->rt, &g);
    if (st != KP_OK || end != KP_OK) {
        kp_graph_destroy(g);
        return st != KP_OK ? st : end;
    }
    *out = g;
    return KP_OK;
}

kp_status kp_ca_replay(kp_ca *ca, kp_graph *g, int64_t step)
{
    if (step < 1)
        return kp_last_error_set(ca->rt, KP_ERR_INVALID_ARG, "kp_ca_replay: step %lld is below 1",
                                 (long long)step);
    kp_status st = kp_graph_set_int(g, "step", step);
    if (st == KP_OK && ca->o.random_init)
        st = kp_graph_set_int(g, "init_offset", (step - 1) * ca->C * ca->N);
    if (st == KP_OK && fires(ca))
        st = kp_graph_set_int(g, "fire_offset", (step - 1) * ca->T * ca->N);
    return st == KP_OK ? kp_graph_replay(g, NULL) : st;
}

int kp_ca_launches_per_step(const kp_ca *ca)
{
    /* Draws, two coefficient launches, 2 T steps, T backward steps, dw, two losses of 3 and 2,
     * clipping (one launch, or two elementwise) and AdamW. */
    return ca->o.random_init + fires(ca) + ca->o.clip_elementwise + 2 + 3 * (int)ca->T + 1 + 5 + 2;
}

kp_status kp_ca_read_losses(kp_ca *ca, float *soft, float *hard)
{
    float s[S_N];
    kp_status st = kp_buffer_read(ca->rt, ca->buf[B_SCALARS], 0, sizeof s, s);
    if (st == KP_OK && soft)
        *soft = s[S_LOSS];
    if (st == KP_OK && hard)
        *hard = s[S_HLOSS];
    return st;
}

kp_status kp_ca_read_ops(kp_ca *ca, int32_t *ops)
{
    kp_buffer *b = NULL;
    const size_t bytes = (size_t)ca->P * sizeof *ops;
    kp_status st = kp_buffer_create(ca->rt, bytes, &b);
    if (st == KP_OK) {
        kp_arg a[] = {kp_arg_tensor("w", kp_ca_logits(ca)),
                      kp_arg_tensor("op", kp_tensor_1d(b, KP_I32, ca->P))};
        st = kp_kernel_launch(ca->rt, ca->coeffs, a, 2, NULL);
    }
    if (st == KP_OK)
        st = kp_buffer_read(ca->rt, b, 0, bytes, ops);
    kp_buffer_destroy(ca->rt, b);
    return st;
}

int64_t kp_ca_active_params(const kp_ca *ca, const int32_t *ops)
{
    const kp_logic_ca_net *n = &ca->net;
    const int64_t base = 9 * ca->C;
    char *live = calloc((size_t)ca->G, 1), *counted = calloc((size_t)ca->P, 1);
    int64_t active = -1;
    if (live && counted) {
        active = 0;
        for (int64_t c = 0; c < ca->C; c++)
            live[ca->G - ca->C + c] = 1;
        /* Readers come after what they read: one pass down the gates marks every live input. */
        for (int64_t g = ca->G - 1; g >= 0; g--) {
            if (!live[g])
                continue;
            const int op = ops[n->param[g]];
            const int reads_a = kp_logic_coeff(KP_LOGIC_TA, op) || kp_logic_coeff(KP_LOGIC_TAB, op);
            const int reads_b = kp_logic_coeff(KP_LOGIC_TB, op) || kp_logic_coeff(KP_LOGIC_TAB, op);
            if (reads_a && n->a_idx[g] >= base)
                live[n->a_idx[g] - base] = 1;
            if (reads_b && n->b_idx[g] >= base)
                live[n->b_idx[g] - base] = 1;
            if (op != KP_LOGIC_A && op != KP_LOGIC_B && !counted[n->param[g]]) {
                counted[n->param[g]] = 1;
                active++;
            }
        }
    }
    free(live);
    free(counted);
    return active;
}
