/* SPDX-License-Identifier: Apache-2.0 */
/* The XOR model's buffers and its training step as Kernelport launches (xor-model.h). */
#include "xor-model.h"

#include <math.h>
#include <stdlib.h>

#include "kernelport/ops/optim.h"
#include "kernelport/ops/random.h"
#include "kernelport/ops/tensor.h"

enum { ROWS = 4 };

struct xor_model {
    kp_runtime *rt;
    int h;
    double lr;
    kp_kernel *gemm; /* blas.gemm for the products, or NULL: tensor.mul_sum */
    /* The parameter arena W1 [2, H], b1 [H], W2 [H, 1], b2 [1] and its gradients and AdamW
     * states at the same offsets. */
    kp_buffer *param, *grad, *exp_avg, *exp_avg_sq;
    kp_buffer *x, *t;             /* inputs [4, 2], targets [4, 1] */
    kp_buffer *a, *hid, *da, *dh; /* [4, H]: pre-activation, tanh, and their gradients */
    kp_buffer *z, *dz, *loss;     /* logits [4, 1], their gradient, the loss */
};

static int64_t n_params(int h)
{
    return 4 * (int64_t)h + 1;
}

/* A view of the arena: `rank` extents from `shape`, contiguous, from element `at`. */
static kp_tensor arena(kp_buffer *b, int64_t at, int32_t rank, const int64_t *shape)
{
    kp_tensor t = kp_tensor_nd(b, KP_F32, rank, shape);
    t.offset = at;
    return t;
}

static kp_tensor w1(const xor_model *m, kp_buffer *b)
{
    return arena(b, 0, 2, (int64_t[]){2, m->h});
}

static kp_tensor b1(const xor_model *m, kp_buffer *b)
{
    return arena(b, 2 * (int64_t)m->h, 1, (int64_t[]){m->h});
}

static kp_tensor w2(const xor_model *m, kp_buffer *b)
{
    return arena(b, 3 * (int64_t)m->h, 2, (int64_t[]){m->h, 1});
}

static kp_tensor b2(const xor_model *m, kp_buffer *b)
{
    return arena(b, 4 * (int64_t)m->h, 1, (int64_t[]){1});
}

static kp_tensor all(const xor_model *m, kp_buffer *b)
{
    return kp_tensor_1d(b, KP_F32, n_params(m->h));
}

/* The transpose of a 2-D view, as strides (blas.gemm takes either layout). */
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

/* C = A B. */
static kp_status matmul(xor_model *m, kp_tensor a, kp_tensor b, kp_tensor c)
{
    if (!m->gemm)
        return kp_matmul(m->rt, a, b, c);
    kp_arg args[] = {kp_arg_tensor("A", a), kp_arg_tensor("B", b), kp_arg_tensor("C", c)};
    return kp_kernel_launch(m->rt, m->gemm, args, 3, NULL);
}

static kp_status make_buffer(kp_runtime *rt, int64_t floats, kp_buffer **out)
{
    return kp_buffer_create(rt, (size_t)floats * sizeof(float), out);
}

void xor_model_destroy(xor_model *m)
{
    if (!m)
        return;
    kp_buffer **b[] = {&m->param, &m->grad, &m->exp_avg, &m->exp_avg_sq, &m->x,  &m->t,   &m->a,
                       &m->hid,   &m->da,   &m->dh,      &m->z,          &m->dz, &m->loss};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        kp_buffer_destroy(m->rt, *b[i]);
    free(m);
}

kp_status xor_model_create(kp_runtime *rt, int hidden, uint64_t seed, double lr, int blas,
                           xor_model **out)
{
    *out = NULL;
    xor_model *m = calloc(1, sizeof *m);
    if (!m)
        return KP_ERR_OUT_OF_MEMORY;
    m->rt = rt;
    m->h = hidden;
    m->lr = lr;
    const int64_t np = n_params(hidden), rh = ROWS * (int64_t)hidden;
    kp_status st = blas ? kp_kernel_find(rt, "blas.gemm", &m->gemm) : KP_OK;
    kp_buffer **buffers[] = {&m->param, &m->grad, &m->exp_avg, &m->exp_avg_sq, &m->x,
                             &m->t,     &m->a,    &m->hid,     &m->da,         &m->dh,
                             &m->z,     &m->dz,   &m->loss};
    const int64_t sizes[] = {np, np, np, np, ROWS * 2, ROWS, rh, rh, rh, rh, ROWS, ROWS, 1};
    for (size_t i = 0; st == KP_OK && i < sizeof sizes / sizeof sizes[0]; i++)
        st = make_buffer(rt, sizes[i], buffers[i]);
    float *init = st == KP_OK ? calloc((size_t)np, sizeof *init) : NULL;
    if (st == KP_OK && !init)
        st = KP_ERR_OUT_OF_MEMORY;
    if (st == KP_OK) {
        /* nn.Linear's bounds: 1/sqrt(fan_in) for the weights and the biases of each layer. */
        for (int64_t i = 0; i < np; i++) {
            const double bound = i < 3 * (int64_t)hidden ? 1.0 / sqrt(2.0) : 1.0 / sqrt(hidden);
            init[i] = (float)((2.0 * kp_random_uniform(seed, 0, (uint64_t)i) - 1.0) * bound);
        }
        const float x[ROWS * 2] = {0, 0, 0, 1, 1, 0, 1, 1}, t[ROWS] = {0, 1, 1, 0}, zero = 0;
        st = kp_buffer_write(rt, m->param, 0, (size_t)np * sizeof(float), init);
        if (st == KP_OK)
            st = kp_buffer_write(rt, m->x, 0, sizeof x, x);
        if (st == KP_OK)
            st = kp_buffer_write(rt, m->t, 0, sizeof t, t);
        kp_buffer *states[] = {m->exp_avg, m->exp_avg_sq, m->grad};
        for (int i = 0; st == KP_OK && i < 3; i++)
            st = kp_buffer_fill(rt, states[i], 0, (size_t)np * sizeof(float), &zero, sizeof zero);
    }
    free(init);
    if (st != KP_OK) {
        xor_model_destroy(m);
        return st;
    }
    *out = m;
    return KP_OK;
}

int xor_model_launches_per_step(const xor_model *m)
{
    (void)m;
    return 13;
}

kp_status xor_model_step(xor_model *m, int64_t step)
{
    kp_runtime *rt = m->rt;
    const int h = m->h;
    const kp_tensor x = kp_tensor_2d(m->x, KP_F32, ROWS, 2),
                    t = kp_tensor_2d(m->t, KP_F32, ROWS, 1);
    const kp_tensor a = kp_tensor_2d(m->a, KP_F32, ROWS, h),
                    hid = kp_tensor_2d(m->hid, KP_F32, ROWS, h);
    const kp_tensor da = kp_tensor_2d(m->da, KP_F32, ROWS, h),
                    dh = kp_tensor_2d(m->dh, KP_F32, ROWS, h);
    const kp_tensor z = kp_tensor_2d(m->z, KP_F32, ROWS, 1),
                    dz = kp_tensor_2d(m->dz, KP_F32, ROWS, 1);
    const kp_tensor loss = kp_tensor_nd(m->loss, KP_F32, 0, NULL);
    /* Forward: a = x W1 + b1, hid = tanh(a), z = hid W2 + b2, the loss and dz in one launch. */
    kp_status st = matmul(m, x, w1(m, m->param), a);
    if (st == KP_OK)
        st = kp_add(rt, a, b1(m, m->param), a);
    if (st == KP_OK)
        st = kp_tensor_unary(rt, "tanh", a, hid);
    if (st == KP_OK)
        st = matmul(m, hid, w2(m, m->param), z);
    if (st == KP_OK)
        st = kp_add(rt, z, b2(m, m->param), z);
    if (st == KP_OK)
        st = kp_bce_with_logits(rt, z, t, loss, &dz);
    /* Backward: dW2 = hid^T dz, db2 = sum dz, dh = dz W2^T, da = dh tanh'(a), dW1 = x^T da,
     * db1 = sum da. */
    if (st == KP_OK)
        st = matmul(m, transposed(hid), dz, w2(m, m->grad));
    if (st == KP_OK)
        st = kp_sum(rt, dz, b2(m, m->grad), KP_AXIS(0));
    if (st == KP_OK)
        st = matmul(m, dz, transposed(w2(m, m->param)), dh);
    if (st == KP_OK)
        st = kp_tensor_unary_backward(rt, "tanh", dh, a, da);
    if (st == KP_OK)
        st = matmul(m, transposed(x), da, w1(m, m->grad));
    if (st == KP_OK)
        st = kp_sum(rt, da, b1(m, m->grad), KP_AXIS(0));
    if (st == KP_OK) {
        kp_adam_options o = kp_adamw_defaults();
        o.lr = m->lr;
        o.check_segments = 0;
        st = kp_optim_adamw(rt, all(m, m->param), all(m, m->grad), all(m, m->exp_avg),
                            all(m, m->exp_avg_sq), step, &o);
    }
    return st;
}

kp_status xor_model_record(xor_model *m, kp_graph **out)
{
    *out = NULL;
    kp_status st = kp_graph_begin(m->rt, 0);
    if (st != KP_OK)
        return st;
    st = xor_model_step(m, 1);
    /* AdamW is the step's last launch: its step count becomes the graph's parameter. */
    if (st == KP_OK)
        st = kp_graph_param(m->rt, "step", "step");
    kp_graph *g = NULL;
    kp_status end = kp_graph_end(m->rt, &g);
    if (st != KP_OK || end != KP_OK) {
        kp_graph_destroy(g);
        return st != KP_OK ? st : end;
    }
    *out = g;
    return KP_OK;
}

kp_status xor_model_read(xor_model *m, float *loss, float out[4])
{
    float z[ROWS];
    kp_status st = kp_buffer_read(m->rt, m->loss, 0, sizeof *loss, loss);
    if (st == KP_OK)
        st = kp_buffer_read(m->rt, m->z, 0, sizeof z, z);
    for (int i = 0; st == KP_OK && i < ROWS; i++)
        out[i] = 1.0f / (1.0f + expf(-z[i]));
    return st;
}

kp_status xor_model_params(xor_model *m, float *params, int *n)
{
    *n = (int)n_params(m->h);
    return kp_buffer_read(m->rt, m->param, 0, (size_t)*n * sizeof(float), params);
}
