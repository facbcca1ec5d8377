/* SPDX-License-Identifier: Apache-2.0 */
/* The world model's parameters, training step and rollout as Kernelport launches (wm-model.h). */
#include "wm-model.h"

#include <math.h>
#include <stdlib.h>

#include "kernelport/ops/gru.h"
#include "kernelport/ops/optim.h"
#include "kernelport/ops/random.h"
#include "kernelport/ops/tensor.h"

/*
 * One arena of E member blocks of P floats; within a block, PyTorch's GRU layout then the head:
 * w_ih [3H, I], w_hh [3H, H], b_ih [3H], b_hh [3H], w_y [H], b_y [1]. The gradients and AdamW's
 * states use the same offsets, so AdamW updates a member's block in one launch and gru.rollout
 * reads all members' weights as [E, ...] views of member stride P.
 */
typedef struct layout {
    int64_t w_ih, w_hh, b_ih, b_hh, w_y, b_y, size;
} layout;

struct wm_model {
    kp_runtime *rt;
    wm_config c;
    int64_t H, I, T, B;
    layout at;
    kp_kernel *sequence, *backward;
    kp_buffer *param, *grad, *exp_avg, *exp_avg_sq;
    kp_buffer *h0, *h_all, *ws, *pred, *dpred, *dh_all, *dx, *dh0, *loss, *loss_sum, *dwy_part;
};

static kp_tensor view(kp_buffer *b, int64_t at, int32_t rank, const int64_t *shape)
{
    kp_tensor t = kp_tensor_nd(b, KP_F32, rank, shape);
    t.offset = at;
    return t;
}

/* Member e's tensor at offset `at` of its block, as `rank` extents. */
static kp_tensor member_view(const wm_model *m, kp_buffer *b, int e, int64_t at, int32_t rank,
                             const int64_t *shape)
{
    return view(b, (int64_t)e * m->at.size + at, rank, shape);
}

/* All E members' tensor at offset `at` as [E, shape...]: the member stride is the block. */
static kp_tensor ensemble_view(const wm_model *m, kp_buffer *b, int first, int count, int64_t at,
                               int32_t rank, const int64_t *shape)
{
    int64_t full[KP_MAX_RANK];
    full[0] = count;
    for (int32_t d = 0; d < rank; d++)
        full[d + 1] = shape[d];
    kp_tensor t = view(b, (int64_t)first * m->at.size + at, rank + 1, full);
    t.strides[0] = m->at.size;
    return t;
}

static kp_status buffer(kp_runtime *rt, int64_t floats, kp_buffer **out)
{
    return kp_buffer_create(rt, (size_t)floats * sizeof(float), out);
}

static kp_status zero(kp_runtime *rt, kp_buffer *b)
{
    const float z = 0;
    return kp_buffer_fill(rt, b, 0, kp_buffer_size(b), &z, sizeof z);
}

void wm_model_destroy(wm_model *m)
{
    if (!m)
        return;
    kp_buffer *b[] = {m->param, m->grad,  m->exp_avg, m->exp_avg_sq, m->h0,  m->h_all, m->ws,
                      m->pred,  m->dpred, m->dh_all,  m->dx,         m->dh0, m->loss,  m->loss_sum};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        kp_buffer_destroy(m->rt, b[i]);
    free(m);
}

kp_status wm_model_create(kp_runtime *rt, const wm_config *c, wm_model **out)
{
    *out = NULL;
    wm_model *m = calloc(1, sizeof *m);
    if (!m)
        return KP_ERR_OUT_OF_MEMORY;
    m->rt = rt;
    m->c = *c;
    const int64_t H = c->hidden, I = c->features + 1, T = c->horizon, B = c->batch, E = c->members;
    m->H = H, m->I = I, m->T = T, m->B = B;
    layout *a = &m->at;
    a->w_ih = 0;
    a->w_hh = a->w_ih + 3 * H * I;
    a->b_ih = a->w_hh + 3 * H * H;
    a->b_hh = a->b_ih + 3 * H;
    a->w_y = a->b_hh + 3 * H;
    a->b_y = a->w_y + H;
    a->size = a->b_y + 1;
    kp_status st = kp_kernel_find(rt, "gru.sequence", &m->sequence);
    if (st == KP_OK)
        st = kp_kernel_find(rt, "gru.sequence_backward", &m->backward);
    kp_buffer **bufs[] = {&m->param, &m->grad, &m->exp_avg, &m->exp_avg_sq, &m->h0,
                          &m->h_all, &m->ws,   &m->pred,    &m->dpred,      &m->dh_all,
                          &m->dx,    &m->dh0,  &m->loss,    &m->loss_sum,   &m->dwy_part};
    const int64_t np = E * a->size;
    const int64_t sizes[] = {np,    np,    np,        np,        B * H, T * B * H, 4 * T * B * H,
                             T * B, T * B, T * B * H, T * B * I, B * H, 1,         1,
                             T * H};
    for (size_t i = 0; st == KP_OK && i < sizeof sizes / sizeof sizes[0]; i++)
        st = buffer(rt, sizes[i], bufs[i]);
    float *init = st == KP_OK ? malloc((size_t)np * sizeof *init) : NULL;
    if (st == KP_OK && !init)
        st = KP_ERR_OUT_OF_MEMORY;
    if (st == KP_OK) {
        /* PyTorch's GRU and nn.Linear(H, 1) both draw U(-1/sqrt(H), 1/sqrt(H)). */
        const double bound = 1.0 / sqrt((double)H);
        for (int64_t e = 0; e < E; e++)
            for (int64_t i = 0; i < a->size; i++)
                init[e * a->size + i] =
                    (float)((2.0 * kp_random_uniform(c->seed, (uint64_t)e << 32, (uint64_t)i) -
                             1.0) *
                            bound);
        st = kp_buffer_write(rt, m->param, 0, (size_t)np * sizeof(float), init);
        kp_buffer *zeroed[] = {m->grad, m->exp_avg, m->exp_avg_sq, m->h0, m->loss_sum};
        for (size_t i = 0; st == KP_OK && i < sizeof zeroed / sizeof zeroed[0]; i++)
            st = zero(rt, zeroed[i]);
    }
    free(init);
    if (st != KP_OK) {
        wm_model_destroy(m);
        return st;
    }
    *out = m;
    return KP_OK;
}

int wm_model_launches_per_step(void)
{
    return 11;
}

kp_status wm_model_train_step(wm_model *m, int e, kp_tensor x, kp_tensor y, int64_t step)
{
    kp_runtime *rt = m->rt;
    const int64_t H = m->H, I = m->I, T = m->T, B = m->B, TB = T * B;
    const layout *a = &m->at;
    kp_tensor w_ih = member_view(m, m->param, e, a->w_ih, 2, (int64_t[]){3 * H, I});
    kp_tensor w_hh = member_view(m, m->param, e, a->w_hh, 2, (int64_t[]){3 * H, H});
    kp_tensor b_ih = member_view(m, m->param, e, a->b_ih, 1, (int64_t[]){3 * H});
    kp_tensor b_hh = member_view(m, m->param, e, a->b_hh, 1, (int64_t[]){3 * H});
    kp_tensor w_y = member_view(m, m->param, e, a->w_y, 2, (int64_t[]){H, 1});
    kp_tensor w_y_row = member_view(m, m->param, e, a->w_y, 2, (int64_t[]){1, H});
    kp_tensor b_y = member_view(m, m->param, e, a->b_y, 1, (int64_t[]){1});
    kp_tensor h0 = kp_tensor_2d(m->h0, KP_F32, B, H);
    kp_tensor h_all = kp_tensor_3d(m->h_all, KP_F32, T, B, H);
    kp_tensor h_rows = kp_tensor_2d(m->h_all, KP_F32, TB, H);
    kp_tensor ws = kp_tensor_3d(m->ws, KP_F32, T, B, 4 * H);
    kp_tensor pred = kp_tensor_2d(m->pred, KP_F32, TB, 1);
    kp_tensor dpred = kp_tensor_2d(m->dpred, KP_F32, TB, 1);
    kp_tensor target = y;
    target.rank = 2;
    target.shape[0] = TB, target.shape[1] = 1;
    target.strides[0] = 1, target.strides[1] = 1;
    kp_tensor loss = kp_tensor_nd(m->loss, KP_F32, 0, NULL);
    kp_tensor loss_sum = kp_tensor_nd(m->loss_sum, KP_F32, 0, NULL);
    kp_arg fwd[] = {kp_arg_tensor("x", x),         kp_arg_tensor("h0", h0),
                    kp_arg_tensor("w_ih", w_ih),   kp_arg_tensor("w_hh", w_hh),
                    kp_arg_tensor("b_ih", b_ih),   kp_arg_tensor("b_hh", b_hh),
                    kp_arg_tensor("h_all", h_all), kp_arg_tensor("workspace", ws)};
    kp_status st = kp_kernel_launch(rt, m->sequence, fwd, sizeof fwd / sizeof fwd[0], NULL);
    /* The head over all T B states at once, the loss and its gradient. */
    if (st == KP_OK)
        st = kp_matmul(rt, h_rows, w_y, pred);
    if (st == KP_OK)
        st = kp_add(rt, pred, b_y, pred);
    if (st == KP_OK)
        st = kp_mse(rt, pred, target, loss, &dpred);
    if (st == KP_OK)
        st = kp_add(rt, loss_sum, loss, loss_sum);
    /* Backward through the head: dw_y = h^T dpred in two stages (per step over the batch, then
     * over the steps: each output of one product over all T B rows would be one work-item's
     * sequential sum), db_y = sum dpred, dh = dpred w_y^T. */
    kp_tensor part = kp_tensor_2d(m->dwy_part, KP_F32, T, H);
    if (st == KP_OK)
        st = kp_mul_sum(rt, h_all, kp_tensor_3d(m->dpred, KP_F32, T, B, 1),
                        kp_tensor_3d(m->dwy_part, KP_F32, T, 1, H));
    if (st == KP_OK)
        st = kp_sum(rt, part, member_view(m, m->grad, e, a->w_y, 1, &H), KP_AXIS(0));
    if (st == KP_OK)
        st = kp_sum(rt, dpred, member_view(m, m->grad, e, a->b_y, 1, (int64_t[]){1}), KP_AXIS(0));
    if (st == KP_OK)
        st = kp_mul(rt, dpred, w_y_row, kp_tensor_2d(m->dh_all, KP_F32, TB, H));
    if (st == KP_OK) {
        kp_arg bwd[] = {
            kp_arg_tensor("x", x),
            kp_arg_tensor("h0", h0),
            kp_arg_tensor("h_all", h_all),
            kp_arg_tensor("workspace", ws),
            kp_arg_tensor("w_ih", w_ih),
            kp_arg_tensor("w_hh", w_hh),
            kp_arg_tensor("dh_all", kp_tensor_3d(m->dh_all, KP_F32, T, B, H)),
            kp_arg_tensor("dx", kp_tensor_3d(m->dx, KP_F32, T, B, I)),
            kp_arg_tensor("dh0", kp_tensor_2d(m->dh0, KP_F32, B, H)),
            kp_arg_tensor("dw_ih", member_view(m, m->grad, e, a->w_ih, 2, (int64_t[]){3 * H, I})),
            kp_arg_tensor("dw_hh", member_view(m, m->grad, e, a->w_hh, 2, (int64_t[]){3 * H, H})),
            kp_arg_tensor("db_ih", member_view(m, m->grad, e, a->b_ih, 1, (int64_t[]){3 * H})),
            kp_arg_tensor("db_hh", member_view(m, m->grad, e, a->b_hh, 1, (int64_t[]){3 * H}))};
        st = kp_kernel_launch(rt, m->backward, bwd, sizeof bwd / sizeof bwd[0], NULL);
    }
    if (st == KP_OK) {
        kp_adam_options o = kp_adamw_defaults();
        o.lr = m->c.lr;
        o.check_segments = 0;
        const int64_t n = a->size;
        st = kp_optim_adamw(rt, member_view(m, m->param, e, 0, 1, &n),
                            member_view(m, m->grad, e, 0, 1, &n),
                            member_view(m, m->exp_avg, e, 0, 1, &n),
                            member_view(m, m->exp_avg_sq, e, 0, 1, &n), step, &o);
    }
    return st;
}

kp_status wm_model_take_loss(wm_model *m, double *sum)
{
    float s = 0;
    kp_status st = kp_buffer_read(m->rt, m->loss_sum, 0, sizeof s, &s);
    *sum = s;
    return st == KP_OK ? zero(m->rt, m->loss_sum) : st;
}

kp_status wm_model_rollout(wm_model *m, int first, int count, kp_tensor f, float *y)
{
    kp_runtime *rt = m->rt;
    const int64_t H = m->H, I = m->I, T = m->T, B = f.shape[1];
    const layout *a = &m->at;
    kp_buffer *y0 = NULL, *h0 = NULL, *out = NULL, *h_T = NULL;
    kp_status st = buffer(rt, B, &y0);
    if (st == KP_OK)
        st = buffer(rt, count * B * H, &h0);
    if (st == KP_OK)
        st = buffer(rt, count * B * T, &out);
    if (st == KP_OK)
        st = buffer(rt, count * B * H, &h_T);
    if (st == KP_OK)
        st = zero(rt, y0);
    if (st == KP_OK)
        st = zero(rt, h0);
    if (st == KP_OK) {
        kp_gru_rollout_args r = {
            .w_ih = ensemble_view(m, m->param, first, count, a->w_ih, 2, (int64_t[]){3 * H, I}),
            .w_hh = ensemble_view(m, m->param, first, count, a->w_hh, 2, (int64_t[]){3 * H, H}),
            .b_ih = ensemble_view(m, m->param, first, count, a->b_ih, 1, (int64_t[]){3 * H}),
            .b_hh = ensemble_view(m, m->param, first, count, a->b_hh, 1, (int64_t[]){3 * H}),
            .w_y = ensemble_view(m, m->param, first, count, a->w_y, 1, (int64_t[]){H}),
            .b_y = ensemble_view(m, m->param, first, count, a->b_y, 0, NULL),
            .f = f,
            .y0 = kp_tensor_1d(y0, KP_F32, B),
            .h0 = kp_tensor_3d(h0, KP_F32, count, B, H),
            .y = kp_tensor_3d(out, KP_F32, count, B, T),
            .h_T = kp_tensor_3d(h_T, KP_F32, count, B, H),
            .T = T,
            .mode = KP_GRU_ROLLOUT_MEAN,
            .linear_before_reset = 1};
        st = kp_gru_rollout(rt, &r, NULL);
    }
    if (st == KP_OK)
        st = kp_buffer_read(rt, out, 0, (size_t)(count * B * T) * sizeof(float), y);
    kp_buffer *bufs[] = {y0, h0, out, h_T};
    for (int i = 0; i < 4; i++)
        kp_buffer_destroy(rt, bufs[i]);
    return st;
}
