/* SPDX-License-Identifier: Apache-2.0 */
/* gru.rollout's host reference: the rollout in double precision, one trajectory at a time. */
#include <math.h>
#include <stdlib.h>

#include "gru-rollout.h"
#include "kernelport/ops/gru.h"

/* Element (i0, i1, i2) of argument i's view (unused indices 0). */
static double at(const kp_call *call, int i, int64_t i0, int64_t i1, int64_t i2)
{
    const kp_tensor *t = &call->args[i].tensor;
    int64_t idx = 0, ix[3] = {i0, i1, i2};
    for (int d = 0; d < t->rank && d < 3; d++)
        idx += ix[d] * t->strides[d];
    return KP_HOST_PTR(call, i, const float)[idx];
}

static float *out_at(const kp_call *call, int i, int64_t i0, int64_t i1, int64_t i2)
{
    const kp_tensor *t = &call->args[i].tensor;
    return KP_HOST_PTR(call, i, float) + i0 * t->strides[0] + i1 * t->strides[1] +
           i2 * t->strides[2];
}

static double sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

/* Scratch of one trajectory, in doubles. */
typedef struct work {
    double *h, *x, *gi, *gh, *rh, *logit, *p;
} work;

/* One step for member e, trajectory b: x = [f, y_{t-1}, z_{t-1}] is in w->x, h_{t-1} in w->h.
 * Writes h_t into w->h and the logits and probabilities into w->logit, w->p. */
static void gru_cell(const kp_call *call, const ro_dims *d, int64_t e, work *w)
{
    const int64_t H = d->H, G = 3 * H;
    int lbr = call->args[RO_LBR].i != 0;
    for (int64_t j = 0; j < G; j++) {
        double gi = call->args[RO_B_IH].present ? at(call, RO_B_IH, e, j, 0) : 0.0;
        double gh = call->args[RO_B_HH].present ? at(call, RO_B_HH, e, j, 0) : 0.0;
        for (int64_t c = 0; c < d->I; c++)
            gi += at(call, RO_W_IH, e, j, c) * w->x[c];
        if (lbr || j < 2 * H)
            for (int64_t c = 0; c < H; c++)
                gh += at(call, RO_W_HH, e, j, c) * w->h[c];
        w->gi[j] = gi;
        w->gh[j] = gh;
    }
    if (!lbr) {
        /* n's hidden side multiplies r (.) h: the ONNX default, Cho et al.'s original. */
        for (int64_t u = 0; u < H; u++)
            w->rh[u] = sigmoid(w->gi[u] + w->gh[u]) * w->h[u];
        for (int64_t u = 0; u < H; u++)
            for (int64_t c = 0; c < H; c++)
                w->gh[2 * H + u] += at(call, RO_W_HH, e, 2 * H + u, c) * w->rh[c];
    }
    for (int64_t u = 0; u < H; u++) {
        double r = sigmoid(w->gi[u] + w->gh[u]), z = sigmoid(w->gi[H + u] + w->gh[H + u]);
        double n = tanh(w->gi[2 * H + u] + (lbr ? r * w->gh[2 * H + u] : w->gh[2 * H + u]));
        w->h[u] = (1.0 - z) * n + z * w->h[u];
    }
}

/* Runs trajectory (e, b) for T steps, writing its outputs. */
static void rollout_one(const kp_call *call, const ro_dims *d, int64_t e, int64_t b, work *w)
{
    const int64_t H = d->H, S = d->S, F = d->F;
    const int mode = (int)call->args[RO_MODE].i;
    const uint64_t seed = (uint64_t)call->args[RO_SEED].i;
    const int64_t fe = call->args[RO_F].tensor.shape[0] == 1 ? 0 : e;
    for (int64_t u = 0; u < H; u++)
        w->h[u] = at(call, RO_H0, e, b, u);
    for (int64_t c = 0; c < F; c++)
        w->x[c] = at(call, RO_F, fe, b, c);
    w->x[F] = at(call, RO_Y0, b, 0, 0);
    for (int64_t s = 0; s < S; s++)
        w->x[F + 1 + s] = at(call, RO_Z0, e, b, s);
    for (int64_t t = 0; t < d->T; t++) {
        gru_cell(call, d, e, w);
        double y = at(call, RO_B_Y, e, 0, 0), hn2 = 0, entropy = 0;
        for (int64_t u = 0; u < H; u++) {
            y += at(call, RO_W_Y, e, u, 0) * w->h[u];
            hn2 += w->h[u] * w->h[u];
        }
        if (S > 0) {
            int64_t best = 0;
            for (int64_t s = 0; s < S; s++) {
                double l = at(call, RO_B_P, e, s, 0);
                for (int64_t c = 0; c < H; c++)
                    l += at(call, RO_W_P, e, s, c) * w->h[c];
                w->logit[s] = l;
                if (l > w->logit[best])
                    best = s; /* strictly greater: ties keep the lowest index */
            }
            double total = 0, tl = 0;
            for (int64_t s = 0; s < S; s++) {
                double dl = w->logit[s] - w->logit[best];
                w->p[s] = exp(dl);
                total += w->p[s];
                tl += w->p[s] * dl;
            }
            entropy = log(total) - tl / total;
            int64_t k = best;
            if (mode == RO_MODE_SAMPLE) {
                /* Inverse CDF: the first category whose cumulative mass exceeds u * total. */
                double target = (double)kp_gru_rollout_uniform(seed, e, b, t) * total, cdf = 0;
                for (int64_t s = 0; s < S; s++) {
                    cdf += w->p[s];
                    if (cdf > target) {
                        k = s;
                        break;
                    }
                }
            }
            for (int64_t s = 0; s < S; s++) {
                double z = mode == RO_MODE_MEAN ? w->p[s] / total : s == k ? 1.0 : 0.0;
                w->x[F + 1 + s] = z;
                y += at(call, RO_W_Y, e, H + s, 0) * z;
            }
        }
        w->x[F] = y;
        *out_at(call, RO_Y, e, b, t) = (float)y;
        if (call->args[RO_ENTROPY].present)
            *out_at(call, RO_ENTROPY, e, b, t) = (float)entropy;
        if (call->args[RO_HNORM].present)
            *out_at(call, RO_HNORM, e, b, t) = (float)sqrt(hn2);
    }
    for (int64_t u = 0; u < H; u++)
        *out_at(call, RO_H_T, e, b, u) = (float)w->h[u];
}

kp_status gru_rollout_reference(const kp_call *call, kp_launch *l)
{
    ro_dims d;
    gru_rollout_dims(call, &d);
    size_t n = (size_t)(d.H + d.I + 3 * d.H + 3 * d.H + d.H + 2 * d.S);
    double *mem = malloc(n * sizeof *mem);
    if (!mem)
        return gru_host->fail(l, KP_ERR_OUT_OF_MEMORY, "reference: out of host memory");
    work w = {.h = mem};
    w.x = w.h + d.H;
    w.gi = w.x + d.I;
    w.gh = w.gi + 3 * d.H;
    w.rh = w.gh + 3 * d.H;
    w.logit = w.rh + d.H;
    w.p = w.logit + d.S;
    for (int64_t e = 0; e < d.E; e++)
        for (int64_t b = 0; b < d.B; b++)
            rollout_one(call, &d, e, b, &w);
    free(mem);
    return KP_OK;
}
