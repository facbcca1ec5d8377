/* SPDX-License-Identifier: Apache-2.0 */
/* The Fashion-MNIST CNN's buffers, its training step and its weights file (cnn-model.h). */
#include "cnn-model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernelport/ops/optim.h"
#include "kernelport/ops/random.h"
#include "kernelport/ops/tensor.h"

enum { C1 = 32, C2 = 64, S1 = 28, S2 = 14, S3 = 7, FLAT = C2 * S3 * S3, HID = 128 };

/* The parameters, in the arena's order and the weights file's. Linear weights are [in, out].
 * fan_in: a weight's inputs per output (its initial bound); 0 for the biases, which start at 0. */
enum { W1, B1, W2, B2, W3, B3, W4, B4, N_PARAMS };
static const struct {
    const char *name;
    int rank;
    int64_t shape[4];
    int fan_in;
} params[N_PARAMS] = {
    {"conv1.weight", 4, {C1, 1, 3, 3}, 9},      {"conv1.bias", 1, {C1}, 0},
    {"conv2.weight", 4, {C2, C1, 3, 3}, 288},   {"conv2.bias", 1, {C2}, 0},
    {"fc1.weight", 2, {FLAT, HID}, FLAT},       {"fc1.bias", 1, {HID}, 0},
    {"fc2.weight", 2, {HID, CNN_CLASSES}, HID}, {"fc2.bias", 1, {CNN_CLASSES}, 0},
};

/* The activations and their gradients: each [batch, ...] of these extents. */
enum {
    A_X,
    A_A1,
    A_P1,
    A_A2,
    A_P2,
    A_H,
    A_LOGITS,
    A_DLOGITS,
    A_DH,
    A_DH2,
    A_DP2,
    A_DP2R,
    A_DA2R,
    A_DP1,
    A_DP1R,
    A_DA1R,
    N_ACTS
};
static const int64_t act_numel[N_ACTS] = {CNN_PIXELS, C1 *S1 *S1, C1 *S2 *S2,  C2 *S2 *S2,
                                          FLAT,       HID,        CNN_CLASSES, CNN_CLASSES,
                                          HID,        HID,        FLAT,        FLAT,
                                          C2 *S2 *S2, C1 *S2 *S2, C1 *S2 *S2,  C1 *S1 *S1};

struct cnn {
    kp_runtime *rt;
    int batch;
    double lr, beta2, weight_decay;
    double ema_decay; /* 0: no moving average */
    kp_kernel *gemm, *conv, *conv_bw, *conv_bb, *conv_bd, *pool, *pool_b;
    int32_t segments[2 * N_PARAMS];
    int64_t arena_len;
    kp_buffer *param, *grad, *exp_avg, *exp_avg_sq;
    kp_buffer *ema; /* the parameters' moving average (cnn_use_ema), or NULL */
    kp_buffer *act[N_ACTS];
    kp_buffer *labels, *idx1, *idx2, *pred; /* i32 */
    kp_buffer *loss, *loss_sum;
    float *x_host;   /* the staged batch, normalised (cnn_stage_batch) */
    int32_t *y_host; /* its labels */
    int staged;      /* its images */
};

/* ---- views ---------------------------------------------------------------------------------- */

static kp_tensor param_view(const cnn *m, kp_buffer *arena, int i)
{
    return kp_optim_arena_view(arena, KP_F32, m->segments, (size_t)i, params[i].rank,
                               params[i].shape);
}

static kp_tensor nchw(kp_buffer *b, kp_dtype dtype, int64_t n, int64_t c, int64_t h, int64_t w)
{
    return kp_tensor_nd(b, dtype, 4, (int64_t[]){n, c, h, w});
}

static kp_tensor rows(kp_buffer *b, int64_t n, int64_t cols)
{
    return kp_tensor_2d(b, KP_F32, n, cols);
}

static kp_tensor transposed(kp_tensor t)
{
    int64_t s = t.shape[0];
    t.shape[0] = t.shape[1];
    t.shape[1] = s;
    s = t.strides[0];
    t.strides[0] = t.strides[1];
    t.strides[1] = s;
    return t;
}

static kp_tensor scalar(kp_buffer *b)
{
    return kp_tensor_nd(b, KP_F32, 0, NULL);
}

/* ---- launches ------------------------------------------------------------------------------- */

static kp_status gemm(cnn *m, kp_tensor a, kp_tensor b, kp_tensor c)
{
    kp_arg args[] = {kp_arg_tensor("A", a), kp_arg_tensor("B", b), kp_arg_tensor("C", c)};
    return kp_kernel_launch(m->rt, m->gemm, args, 3, NULL);
}

/* y = conv(x, w) + bias, 3 x 3, padding 1. */
static kp_status conv(cnn *m, kp_tensor x, kp_tensor w, kp_tensor bias, kp_tensor y)
{
    kp_arg args[] = {kp_arg_tensor("x", x), kp_arg_tensor("w", w),  kp_arg_tensor("bias", bias),
                     kp_arg_tensor("y", y), kp_arg_int("pad_h", 1), kp_arg_int("pad_w", 1)};
    return kp_kernel_launch(m->rt, m->conv, args, 6, NULL);
}

/* dw and db of conv(x, w) from dy; dx too when given. */
static kp_status conv_backward(cnn *m, kp_tensor x, kp_tensor w, kp_tensor dy, kp_tensor dw,
                               kp_tensor db, const kp_tensor *dx)
{
    kp_arg bw[] = {kp_arg_tensor("x", x), kp_arg_tensor("dy", dy), kp_arg_tensor("dw", dw),
                   kp_arg_int("pad_h", 1), kp_arg_int("pad_w", 1)};
    kp_arg bb[] = {kp_arg_tensor("dy", dy), kp_arg_tensor("db", db)};
    kp_status st = kp_kernel_launch(m->rt, m->conv_bw, bw, 5, NULL);
    if (st == KP_OK)
        st = kp_kernel_launch(m->rt, m->conv_bb, bb, 2, NULL);
    if (st == KP_OK && dx) {
        kp_arg bd[] = {kp_arg_tensor("dy", dy), kp_arg_tensor("w", w), kp_arg_tensor("dx", *dx),
                       kp_arg_int("pad_h", 1), kp_arg_int("pad_w", 1)};
        st = kp_kernel_launch(m->rt, m->conv_bd, bd, 5, NULL);
    }
    return st;
}

static kp_status pool(cnn *m, kp_tensor x, kp_tensor y, kp_tensor idx)
{
    kp_arg args[] = {kp_arg_tensor("x", x), kp_arg_tensor("y", y), kp_arg_tensor("indices", idx),
                     kp_arg_int("kernel_h", 2), kp_arg_int("kernel_w", 2)};
    return kp_kernel_launch(m->rt, m->pool, args, 5, NULL);
}

static kp_status pool_backward(cnn *m, kp_tensor dy, kp_tensor idx, kp_tensor dx)
{
    kp_arg args[] = {kp_arg_tensor("dy", dy), kp_arg_tensor("indices", idx),
                     kp_arg_tensor("dx", dx), kp_arg_int("kernel_h", 2), kp_arg_int("kernel_w", 2)};
    return kp_kernel_launch(m->rt, m->pool_b, args, 5, NULL);
}

/* The forward of the first n images, to the logits; ReLUs in place (their backward reads the
 * output, whose sign is the input's). Each conv's ReLU runs after its pool, on a quarter of the
 * values: max-pool and ReLU commute (ReLU is monotone), and the gradients are the same too (a
 * window's index differs only where its maximum is <= 0, whose gradient is 0 either way). */
static kp_status forward(cnn *m, kp_buffer *w, int64_t n)
{
    kp_runtime *rt = m->rt;
    kp_buffer **a = m->act;
    const kp_tensor a1 = nchw(a[A_A1], KP_F32, n, C1, S1, S1),
                    a2 = nchw(a[A_A2], KP_F32, n, C2, S2, S2),
                    p1 = nchw(a[A_P1], KP_F32, n, C1, S2, S2),
                    p2 = nchw(a[A_P2], KP_F32, n, C2, S3, S3), h = rows(a[A_H], n, HID),
                    logits = rows(a[A_LOGITS], n, CNN_CLASSES);
    kp_status st =
        conv(m, nchw(a[A_X], KP_F32, n, 1, S1, S1), param_view(m, w, W1), param_view(m, w, B1), a1);
    if (st == KP_OK)
        st = pool(m, a1, p1, nchw(m->idx1, KP_I32, n, C1, S2, S2));
    if (st == KP_OK)
        st = kp_relu(rt, p1, p1);
    if (st == KP_OK)
        st = conv(m, p1, param_view(m, w, W2), param_view(m, w, B2), a2);
    if (st == KP_OK)
        st = pool(m, a2, p2, nchw(m->idx2, KP_I32, n, C2, S3, S3));
    if (st == KP_OK)
        st = kp_relu(rt, p2, p2);
    if (st == KP_OK)
        st = gemm(m, rows(a[A_P2], n, FLAT), param_view(m, w, W3), h);
    if (st == KP_OK)
        st = kp_add(rt, h, param_view(m, w, B3), h);
    if (st == KP_OK)
        st = kp_relu(rt, h, h);
    if (st == KP_OK)
        st = gemm(m, h, param_view(m, w, W4), logits);
    return st == KP_OK ? kp_add(rt, logits, param_view(m, w, B4), logits) : st;
}

void cnn_bucket(const cnn *m, int part, int64_t *offset, int64_t *count)
{
    /* Part p completes the gradients of layer 4 - p: parameters W4 - 2p and B4 - 2p, adjacent
     * in the arena. */
    const int w = W4 - 2 * part, b = w + 1;
    *offset = m->segments[2 * w];
    *count = m->segments[2 * b] + m->segments[2 * b + 1] - m->segments[2 * w];
}

kp_buffer *cnn_grad_arena(const cnn *m)
{
    return m->grad;
}

kp_status cnn_use_grad_arena(cnn *m, kp_buffer *grad)
{
    const float zero = 0;
    const size_t bytes = (size_t)m->arena_len * sizeof(float);
    kp_status st = kp_buffer_size(grad) < bytes
                       ? kp_last_error_set(m->rt, KP_ERR_INVALID_ARG,
                                           "cnn_use_grad_arena: %zu bytes, the arena has %zu",
                                           kp_buffer_size(grad), bytes)
                       : kp_buffer_fill(m->rt, grad, 0, bytes, &zero, sizeof zero);
    if (st != KP_OK) {
        kp_buffer_destroy(m->rt, grad);
        return st;
    }
    kp_buffer_destroy(m->rt, m->grad);
    m->grad = grad;
    return KP_OK;
}

kp_buffer *cnn_param_arena(const cnn *m)
{
    return m->param;
}

kp_status cnn_use_ema(cnn *m, double decay)
{
    if (!(decay > 0 && decay <= 1))
        return kp_last_error_set(m->rt, KP_ERR_INVALID_ARG,
                                 "cnn_use_ema: decay %g is outside (0, 1]", decay);
    kp_status st =
        m->ema ? KP_OK : kp_buffer_create(m->rt, (size_t)m->arena_len * sizeof(float), &m->ema);
    if (st == KP_OK)
        m->ema_decay = decay;
    return st;
}

kp_status cnn_step_part(cnn *m, int part)
{
    kp_runtime *rt = m->rt;
    kp_buffer **a = m->act;
    const int64_t n = m->batch;
    const kp_tensor h = rows(a[A_H], n, HID), dlogits = rows(a[A_DLOGITS], n, CNN_CLASSES),
                    dh = rows(a[A_DH], n, HID), dh2 = rows(a[A_DH2], n, HID),
                    p2 = rows(a[A_P2], n, FLAT), x = nchw(a[A_X], KP_F32, n, 1, S1, S1),
                    p1 = nchw(a[A_P1], KP_F32, n, C1, S2, S2),
                    da2r = nchw(a[A_DA2R], KP_F32, n, C2, S2, S2),
                    dp1 = nchw(a[A_DP1], KP_F32, n, C1, S2, S2),
                    da1r = nchw(a[A_DA1R], KP_F32, n, C1, S1, S1);
    kp_status st = KP_OK;
    if (part == 0) {
        /* The forward, the loss, fc2's gradients and the gradient fc1's output gets. */
        st = forward(m, m->param, n);
        if (st == KP_OK)
            st = kp_cross_entropy(rt, rows(a[A_LOGITS], n, CNN_CLASSES),
                                  kp_tensor_1d(m->labels, KP_I32, n), scalar(m->loss), &dlogits,
                                  NULL, KP_IGNORE_INDEX, 0.0);
        if (st == KP_OK)
            st = kp_add(rt, scalar(m->loss_sum), scalar(m->loss), scalar(m->loss_sum));
        if (st == KP_OK)
            st = gemm(m, transposed(h), dlogits, param_view(m, m->grad, W4));
        if (st == KP_OK)
            st = kp_sum(rt, dlogits, param_view(m, m->grad, B4), KP_AXIS(0));
        if (st == KP_OK)
            st = gemm(m, dlogits, transposed(param_view(m, m->param, W4)), dh);
        if (st == KP_OK)
            st = kp_tensor_unary_backward(rt, "relu", dh, h, dh2);
    } else if (part == 1) {
        /* fc1, and the gradient pool2's output gets */
        st = gemm(m, transposed(p2), dh2, param_view(m, m->grad, W3));
        if (st == KP_OK)
            st = kp_sum(rt, dh2, param_view(m, m->grad, B3), KP_AXIS(0));
        if (st == KP_OK)
            st = gemm(m, dh2, transposed(param_view(m, m->param, W3)), rows(a[A_DP2], n, FLAT));
    } else if (part == 2) {
        /* relu2 (on the pooled values: forward), pool2, conv2 */
        const kp_tensor dp2r = nchw(a[A_DP2R], KP_F32, n, C2, S3, S3);
        st = kp_tensor_unary_backward(rt, "relu", nchw(a[A_DP2], KP_F32, n, C2, S3, S3),
                                      nchw(a[A_P2], KP_F32, n, C2, S3, S3), dp2r);
        if (st == KP_OK)
            st = pool_backward(m, dp2r, nchw(m->idx2, KP_I32, n, C2, S3, S3), da2r);
        if (st == KP_OK)
            st = conv_backward(m, p1, param_view(m, m->param, W2), da2r, param_view(m, m->grad, W2),
                               param_view(m, m->grad, B2), &dp1);
    } else if (part == 3) {
        /* relu1, pool1, conv1 (no gradient for the images) */
        const kp_tensor dp1r = nchw(a[A_DP1R], KP_F32, n, C1, S2, S2);
        st = kp_tensor_unary_backward(rt, "relu", dp1, p1, dp1r);
        if (st == KP_OK)
            st = pool_backward(m, dp1r, nchw(m->idx1, KP_I32, n, C1, S2, S2), da1r);
        if (st == KP_OK)
            st = conv_backward(m, x, param_view(m, m->param, W1), da1r, param_view(m, m->grad, W1),
                               param_view(m, m->grad, B1), NULL);
    } else {
        st = KP_ERR_INVALID_ARG;
    }
    return st;
}

int64_t cnn_arena_len(const cnn *m)
{
    return m->arena_len;
}

static kp_tensor arena_range(const cnn *m, kp_buffer *arena, int64_t offset, int64_t count)
{
    return kp_tensor_narrow(kp_tensor_1d(arena, KP_F32, m->arena_len), 0, offset, count);
}

static kp_status adamw_step(cnn *m, int64_t step, double lr, int64_t offset, int64_t count)
{
    kp_adam_options o = kp_adamw_defaults();
    o.lr = lr;
    o.beta2 = m->beta2;
    o.weight_decay = m->weight_decay;
    o.check_segments = 0;
    return kp_optim_adamw(m->rt, arena_range(m, m->param, offset, count),
                          arena_range(m, m->grad, offset, count),
                          arena_range(m, m->exp_avg, offset, count),
                          arena_range(m, m->exp_avg_sq, offset, count), step, &o);
}

/* With warm-up: an average of the recent weights from the first steps on (at 0.999 without it, a
 * quarter of the first step's weights would remain after 3 epochs). */
static kp_status ema_step(cnn *m, int64_t step, int64_t offset, int64_t count)
{
    return kp_optim_ema(m->rt, arena_range(m, m->ema, offset, count),
                        arena_range(m, m->param, offset, count), step, m->ema_decay, 1);
}

kp_status cnn_optimizer_step(cnn *m, int64_t step, double lr, int64_t offset, int64_t count)
{
    kp_status st = adamw_step(m, step, lr, offset, count);
    return st == KP_OK && m->ema ? ema_step(m, step, offset, count) : st;
}

kp_status cnn_record_parts(cnn *m, kp_graph **parts)
{
    kp_status st = KP_OK;
    for (int part = 0; part < CNN_PARTS; part++) {
        parts[part] = NULL;
        if (st != KP_OK || (st = kp_graph_begin(m->rt, 0)) != KP_OK)
            continue;
        st = cnn_step_part(m, part);
        kp_status end = kp_graph_end(m->rt, &parts[part]);
        if (st == KP_OK)
            st = end;
    }
    for (int part = 0; st != KP_OK && part < CNN_PARTS; part++) {
        kp_graph_destroy(parts[part]);
        parts[part] = NULL;
    }
    return st;
}

kp_status cnn_record_optimizer(cnn *m, int64_t offset, int64_t count, kp_graph **out)
{
    *out = NULL;
    kp_status st = kp_graph_begin(m->rt, 0);
    if (st != KP_OK)
        return st;
    st = adamw_step(m, 1, m->lr, offset, count);
    if (st == KP_OK)
        st = kp_graph_param(m->rt, "step", "step");
    if (st == KP_OK)
        st = kp_graph_param(m->rt, "lr", "lr");
    if (st == KP_OK && m->ema && (st = ema_step(m, 1, offset, count)) == KP_OK)
        st = kp_graph_param(m->rt, "step", "step");
    kp_status end = kp_graph_end(m->rt, out);
    if (st != KP_OK) {
        kp_graph_destroy(*out);
        *out = NULL;
    }
    return st == KP_OK ? end : st;
}

/* What the model is evaluated, saved and compared with: the average when there is one. */
static kp_buffer *weights(const cnn *m)
{
    return m->ema ? m->ema : m->param;
}

kp_status cnn_predict(cnn *m, int n, int32_t *classes)
{
    kp_status st = forward(m, weights(m), n);
    if (st == KP_OK)
        st = kp_tensor_reduce(m->rt, "argmax", rows(m->act[A_LOGITS], n, CNN_CLASSES),
                              kp_tensor_1d(m->pred, KP_I32, n), KP_AXIS(1));
    return st == KP_OK ? kp_buffer_read(m->rt, m->pred, 0, (size_t)n * sizeof *classes, classes)
                       : st;
}

kp_status cnn_take_loss_sum(cnn *m, double *sum)
{
    float v = 0;
    const float zero = 0;
    kp_status st = kp_buffer_read(m->rt, m->loss_sum, 0, sizeof v, &v);
    if (st == KP_OK)
        st = kp_buffer_write(m->rt, m->loss_sum, 0, sizeof zero, &zero);
    *sum = v;
    return st;
}

void cnn_stage_batch(cnn *m, const uint8_t *images, const uint8_t *labels, int n)
{
    const size_t px = (size_t)n * CNN_PIXELS;
    for (size_t i = 0; i < px; i++)
        m->x_host[i] = ((float)images[i] / 255.0f - 0.2860f) / 0.3530f;
    for (int i = 0; i < n; i++)
        m->y_host[i] = labels[i];
    m->staged = n;
}

kp_status cnn_upload_batch(cnn *m)
{
    kp_status st = kp_buffer_write(m->rt, m->act[A_X], 0,
                                   (size_t)m->staged * CNN_PIXELS * sizeof *m->x_host, m->x_host);
    if (st == KP_OK)
        st = kp_buffer_write(m->rt, m->labels, 0, (size_t)m->staged * sizeof *m->y_host, m->y_host);
    return st;
}

kp_status cnn_set_batch(cnn *m, const uint8_t *images, const uint8_t *labels, int n)
{
    cnn_stage_batch(m, images, labels, n);
    return cnn_upload_batch(m);
}

/* ---- creation ------------------------------------------------------------------------------- */

void cnn_destroy(cnn *m)
{
    if (!m)
        return;
    kp_buffer *b[] = {m->param, m->grad, m->exp_avg, m->exp_avg_sq, m->ema,     m->labels,
                      m->idx1,  m->idx2, m->pred,    m->loss,       m->loss_sum};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        kp_buffer_destroy(m->rt, b[i]);
    for (int i = 0; i < N_ACTS; i++)
        kp_buffer_destroy(m->rt, m->act[i]);
    free(m->x_host);
    free(m->y_host);
    free(m);
}

static kp_status find(kp_runtime *rt, const char *name, kp_kernel **k)
{
    return kp_kernel_find(rt, name, k);
}

kp_status cnn_create(kp_runtime *rt, int batch, uint64_t seed, double lr, double beta2,
                     double weight_decay, cnn **out)
{
    *out = NULL;
    cnn *m = calloc(1, sizeof *m);
    if (!m)
        return KP_ERR_OUT_OF_MEMORY;
    *m = (cnn){.rt = rt, .batch = batch, .lr = lr, .beta2 = beta2, .weight_decay = weight_decay};
    m->x_host = malloc((size_t)batch * CNN_PIXELS * sizeof *m->x_host);
    m->y_host = malloc((size_t)batch * sizeof *m->y_host);
    kp_status st = m->x_host && m->y_host ? find(rt, "blas.gemm", &m->gemm) : KP_ERR_OUT_OF_MEMORY;
    const char *names[] = {"conv.conv2d",
                           "conv.conv2d_backward_weight",
                           "conv.conv2d_backward_bias",
                           "conv.conv2d_backward_data",
                           "conv.maxpool2d",
                           "conv.maxpool2d_backward"};
    kp_kernel **ks[] = {&m->conv, &m->conv_bw, &m->conv_bb, &m->conv_bd, &m->pool, &m->pool_b};
    for (int i = 0; st == KP_OK && i < 6; i++)
        st = find(rt, names[i], ks[i]);
    int64_t numel[N_PARAMS];
    for (int i = 0; i < N_PARAMS; i++) {
        numel[i] = 1;
        for (int d = 0; d < params[i].rank; d++)
            numel[i] *= params[i].shape[d];
    }
    m->arena_len = kp_optim_arena_layout(N_PARAMS, numel, 4, m->segments);
    const size_t arena_bytes = (size_t)m->arena_len * sizeof(float);
    kp_buffer **arenas[] = {&m->param, &m->grad, &m->exp_avg, &m->exp_avg_sq};
    for (int i = 0; st == KP_OK && i < 4; i++)
        st = kp_buffer_create(rt, arena_bytes, arenas[i]);
    for (int i = 0; st == KP_OK && i < N_ACTS; i++)
        st = kp_buffer_create(rt, (size_t)batch * (size_t)act_numel[i] * sizeof(float), &m->act[i]);
    kp_buffer **ints[] = {&m->labels, &m->idx1, &m->idx2, &m->pred};
    const int64_t int_numel[] = {1, C1 * S2 * S2, C2 * S3 * S3, 1};
    for (int i = 0; st == KP_OK && i < 4; i++)
        st = kp_buffer_create(rt, (size_t)batch * (size_t)int_numel[i] * sizeof(int32_t), ints[i]);
    if (st == KP_OK)
        st = kp_buffer_create(rt, sizeof(float), &m->loss);
    if (st == KP_OK)
        st = kp_buffer_create(rt, sizeof(float), &m->loss_sum);
    float *init = st == KP_OK ? calloc((size_t)m->arena_len, sizeof *init) : NULL;
    if (st == KP_OK && !init)
        st = KP_ERR_OUT_OF_MEMORY;
    if (st == KP_OK) {
        /* He uniform for ReLU, zero biases (calloc's): PyTorch's default (bound 1/sqrt(fan_in)
         * for both) trained to 0.2-0.5% lower test accuracy after 3 epochs (README.md). */
        for (int i = 0; i < N_PARAMS; i++) {
            const double bound = params[i].fan_in ? sqrt(6.0 / (double)params[i].fan_in) : 0;
            for (int64_t j = 0; bound > 0 && j < numel[i]; j++) {
                const uint64_t at = (uint64_t)m->segments[2 * i] + (uint64_t)j;
                init[at] = (float)((2.0 * kp_random_uniform(seed, 0, at) - 1.0) * bound);
            }
        }
        const float zero = 0;
        st = kp_buffer_write(rt, m->param, 0, arena_bytes, init);
        kp_buffer *zeroed[] = {m->grad, m->exp_avg, m->exp_avg_sq, m->loss_sum};
        for (int i = 0; st == KP_OK && i < 4; i++)
            st = kp_buffer_fill(rt, zeroed[i], 0, kp_buffer_size(zeroed[i]), &zero, sizeof zero);
    }
    free(init);
    if (st != KP_OK) {
        cnn_destroy(m);
        return st;
    }
    *out = m;
    return KP_OK;
}

/* ---- the weights file ----------------------------------------------------------------------- */

static const char magic[8] = {'K', 'P', 'W', 'E', 'I', 'G', 'H', 'T'};

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

kp_status cnn_save(cnn *m, const char *path, char *err, size_t err_size)
{
    float *host = malloc((size_t)m->arena_len * sizeof *host);
    if (!host)
        return KP_ERR_OUT_OF_MEMORY;
    kp_status st = kp_buffer_read(m->rt, weights(m), 0, (size_t)m->arena_len * sizeof *host, host);
    FILE *f = st == KP_OK ? fopen(path, "wb") : NULL;
    if (st == KP_OK && !f) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        st = KP_ERR_IO;
    }
    int bad = 0;
    if (f) {
        unsigned char head[16];
        memcpy(head, magic, 8);
        put_u32(head + 8, 1);
        put_u32(head + 12, N_PARAMS);
        bad |= fwrite(head, 1, 16, f) != 16;
        for (int i = 0; i < N_PARAMS && !bad; i++) {
            unsigned char t[8 + 16 + 4 * 4];
            const uint32_t len = (uint32_t)strlen(params[i].name);
            put_u32(t, len);
            put_u32(t + 4, (uint32_t)params[i].rank);
            bad |= fwrite(t, 1, 8, f) != 8 || fwrite(params[i].name, 1, len, f) != len;
            for (int d = 0; d < params[i].rank; d++)
                put_u32(t + 8 + 4 * d, (uint32_t)params[i].shape[d]);
            const size_t dims = 4 * (size_t)params[i].rank;
            bad |= fwrite(t + 8, 1, dims, f) != dims;
            const int32_t off = m->segments[2 * i], n = m->segments[2 * i + 1];
            for (int32_t j = 0; j < n && !bad; j++) {
                uint32_t bits;
                memcpy(&bits, &host[off + j], 4);
                put_u32(t, bits);
                bad |= fwrite(t, 1, 4, f) != 4;
            }
        }
        bad |= fclose(f) != 0;
        if (bad) {
            snprintf(err, err_size, "%s: writing failed", path);
            st = KP_ERR_IO;
        }
    }
    free(host);
    return st;
}

/* The weights file at `path` into `host`, an arena's floats (zero-filled by the caller: the
 * padding stays zero). */
static kp_status read_file(const cnn *m, const char *path, float *host, char *err, size_t err_size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return KP_ERR_IO;
    }
    unsigned char head[16];
    kp_status st = KP_OK;
    if (fread(head, 1, 16, f) != 16 || memcmp(head, magic, 8) != 0 || get_u32(head + 8) != 1 ||
        get_u32(head + 12) != N_PARAMS) {
        snprintf(err, err_size, "%s: not a version-1 weights file of this model's %d tensors", path,
                 N_PARAMS);
        st = KP_ERR_IO;
    }
    for (int i = 0; st == KP_OK && i < N_PARAMS; i++) {
        unsigned char t[8];
        char name[64] = "";
        uint32_t len = 0, rank = 0;
        if (fread(t, 1, 8, f) == 8) {
            len = get_u32(t);
            rank = get_u32(t + 4);
        }
        int ok = len < sizeof name && fread(name, 1, len, f) == len &&
                 strcmp(name, params[i].name) == 0 && rank == (uint32_t)params[i].rank;
        for (uint32_t d = 0; ok && d < rank; d++)
            ok = fread(t, 1, 4, f) == 4 && get_u32(t) == (uint32_t)params[i].shape[d];
        const int32_t off = m->segments[2 * i], n = m->segments[2 * i + 1];
        for (int32_t j = 0; ok && j < n; j++) {
            ok = fread(t, 1, 4, f) == 4;
            const uint32_t bits = get_u32(t);
            memcpy(&host[off + j], &bits, 4);
        }
        if (!ok) {
            snprintf(err, err_size, "%s: tensor %d is not %s of the expected shape, or ends early",
                     path, i, params[i].name);
            st = KP_ERR_IO;
        }
    }
    fclose(f);
    return st;
}

kp_status cnn_load(cnn *m, const char *path, char *err, size_t err_size)
{
    const size_t bytes = (size_t)m->arena_len * sizeof(float);
    float *host = calloc((size_t)m->arena_len, sizeof *host);
    kp_status st = host ? read_file(m, path, host, err, err_size) : KP_ERR_OUT_OF_MEMORY;
    if (st == KP_OK)
        st = kp_buffer_write(m->rt, m->param, 0, bytes, host);
    if (st == KP_OK && m->ema)
        st = kp_buffer_write(m->rt, m->ema, 0, bytes, host);
    free(host);
    return st;
}

kp_status cnn_difference(cnn *m, const char *path, double *max_abs, double *mean_abs, char *err,
                         size_t err_size)
{
    const size_t n = (size_t)m->arena_len, bytes = n * sizeof(float);
    float *mine = malloc(bytes), *theirs = calloc(n, sizeof *theirs);
    kp_status st = mine && theirs ? KP_OK : KP_ERR_OUT_OF_MEMORY;
    if (st == KP_OK)
        st = kp_buffer_read(m->rt, weights(m), 0, bytes, mine);
    if (st == KP_OK)
        st = read_file(m, path, theirs, err, err_size);
    double most = 0, sum = 0;
    size_t count = 0;
    for (int i = 0; st == KP_OK && i < N_PARAMS; i++)
        for (int32_t j = 0; j < m->segments[2 * i + 1]; j++) {
            const size_t at = (size_t)m->segments[2 * i] + (size_t)j;
            const double d = fabs((double)mine[at] - (double)theirs[at]);
            most = d > most ? d : most;
            sum += d;
            count++;
        }
    *max_abs = most;
    *mean_abs = count ? sum / (double)count : 0;
    free(mine);
    free(theirs);
    return st;
}
