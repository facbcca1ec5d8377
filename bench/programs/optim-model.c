/* SPDX-License-Identifier: Apache-2.0 */
/* The optimizer benchmarks' model: its sizes, its arena and AdamW's step on the host. */
#include "optim-model.h"

#include <math.h>

#include "kernelport/ops/optim.h"

void optim_model_sizes(int64_t total, int64_t *numel)
{
    int64_t w[OPTIM_TENSORS], sum = 0, used = 0;
    for (int i = 0; i < OPTIM_TENSORS; i++)
        sum += w[i] = 1 + (37 * i) % 101;
    for (int i = 0; i < OPTIM_TENSORS - 1; i++)
        used += numel[i] = total * w[i] / sum;
    numel[OPTIM_TENSORS - 1] = total - used;
}

static kp_status create(kpb *b, size_t bytes, const void *data, kp_buffer **out)
{
    kp_status st = kp_buffer_create(b->rt, bytes, out);
    return st == KP_OK && data ? kp_buffer_write(b->rt, *out, 0, bytes, data) : st;
}

kp_status optim_arena_init(kpb *b, optim_arena *a, float *host)
{
    int64_t numel[OPTIM_TENSORS];
    optim_model_sizes(a->total, numel);
    a->n = kp_optim_arena_layout(OPTIM_TENSORS, numel, 4, a->seg);
    if (a->n < 0)
        return KP_ERR_INVALID_ARG;
    for (int i = 0; i < OPTIM_TENSORS; i++) {
        /* Every third tensor is a bias or a norm: no weight decay. */
        a->scales[i][0] = 1.0f;
        a->scales[i][1] = i % 3 == 2 ? 0.0f : 1.0f;
    }
    const size_t bytes = (size_t)a->n * 4;
    const float zero = 0;
    kp_status st = KP_OK;
    kpb_fill(host, (size_t)a->n, 1);
    st = create(b, bytes, host, &a->p);
    kpb_fill(host, (size_t)a->n, 2);
    if (st == KP_OK)
        st = create(b, bytes, host, &a->g);
    for (int64_t i = 0; i < a->n; i++)
        host[i] *= 0.1f;
    if (st == KP_OK)
        st = create(b, bytes, host, &a->m);
    for (int64_t i = 0; i < a->n; i++)
        host[i] = host[i] * host[i];
    if (st == KP_OK)
        st = create(b, bytes, host, &a->v);
    if (st == KP_OK)
        st = create(b, sizeof a->seg, a->seg, &a->segments);
    if (st == KP_OK)
        st = create(b, sizeof a->scales, a->scales, &a->scale);
    if (st == KP_OK)
        st = create(b, 4, &zero, &a->norm);
    return st == KP_OK ? create(b, 4, &zero, &a->coef) : st;
}

void optim_arena_fini(kpb *b, optim_arena *a)
{
    kp_buffer *bufs[] = {a->p, a->g, a->m, a->v, a->segments, a->scale, a->norm, a->coef};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        kp_buffer_destroy(b->rt, bufs[i]);
}

void optim_host_adamw_at(optim_host_adamw *h, int step)
{
    h->lr = (float)OPTIM_LR;
    h->beta1 = (float)OPTIM_BETA1;
    h->beta2 = (float)OPTIM_BETA2;
    h->eps = (float)OPTIM_EPS;
    h->wd = (float)OPTIM_WD;
    h->step_size = (float)(OPTIM_LR / (1 - pow(OPTIM_BETA1, step)));
    h->bc2_sqrt = (float)sqrt(1 - pow(OPTIM_BETA2, step));
}

void optim_host_adamw_step(void *user)
{
    optim_host_adamw *h = user;
    for (int64_t i = 0; i < h->n; i++) {
        float x = h->p[i], g = h->g[i];
        x = fmaf(-h->lr * h->wd, x, x);
        float m = fmaf(h->beta1, h->m[i], (1 - h->beta1) * g);
        float v = fmaf(h->beta2, h->v[i], (1 - h->beta2) * g * g);
        h->m[i] = m;
        h->v[i] = v;
        h->p[i] = x - h->step_size * m / (sqrtf(v) / h->bc2_sqrt + h->eps);
    }
}
