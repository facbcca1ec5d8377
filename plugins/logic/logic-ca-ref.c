/* SPDX-License-Identifier: Apache-2.0 */
/* Host references of logic.ca_step, logic.ca_step_backward and logic.ca_dw: per cell in double,
 * the backward as a scatter over the gates (the kernels gather over the reverse index). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernelport/ops/logic.h"
#include "logic.h"

#define ROW(call, i, type, r) (KP_HOST_PTR(call, i, type) + (r) * (call)->args[i].tensor.strides[0])
#define INT_AT(call, i, k)                                                                         \
    (KP_HOST_PTR(call, i, const int32_t)[(k) * (call)->args[i].tensor.strides[0]])

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static int64_t neighbour(int64_t v, int64_t d, int64_t n, int zero)
{
    int64_t u = v + d;
    if (u >= 0 && u < n)
        return u;
    return zero ? -1 : (u + n) % n;
}

/* The network as the kernels see it, indices clamped as they clamp them. */
typedef struct net_view {
    const kp_call *call;
    int net;
    int64_t C, N, G, L, P, A, H, W;
    int zero, has_fire;
    double rate;
} net_view;

static net_view view_of(const kp_call *call, int states, int net)
{
    const kp_value *v = call->args;
    net_view n = {.call = call,
                  .net = net,
                  .C = v[states].tensor.shape[0],
                  .N = v[states].tensor.shape[1],
                  .G = v[net + CA_A].tensor.shape[0],
                  .L = v[net + CA_LAYERS].tensor.shape[0] - 1,
                  .P = v[net + CA_C].tensor.shape[0],
                  .H = v[net + CA_HEIGHT].i,
                  .W = v[net + CA_WIDTH].i,
                  .zero = (int)v[net + CA_BOUNDARY].i,
                  .has_fire = v[net + CA_FIRE].present,
                  .rate = v[net + CA_RATE].f};
    n.A = 9 * n.C + n.G;
    return n;
}

static int64_t layer_start(const net_view *v, int64_t l)
{
    return clamp64(INT_AT(v->call, v->net + CA_LAYERS, l), 0, v->G);
}

/* Gate g's inputs and coefficients (in double, from the f32 row). */
static void gate(const net_view *v, int64_t g, int64_t top, int64_t *a, int64_t *b, double c[4])
{
    *a = clamp64(INT_AT(v->call, v->net + CA_A, g), 0, top);
    *b = clamp64(INT_AT(v->call, v->net + CA_B, g), 0, top);
    const int64_t p = clamp64(INT_AT(v->call, v->net + CA_PARAM, g), 0, v->P - 1);
    const float *row = ROW(v->call, v->net + CA_C, const float, p);
    for (int t = 0; t < 4; t++)
        c[t] = row[t];
}

static int fires(const net_view *v, int64_t n)
{
    const int i = v->net + CA_FIRE;
    return !v->has_fire ||
           KP_HOST_PTR(v->call, i, const float)[n * v->call->args[i].tensor.strides[0]] < v->rate;
}

kp_status logic_ca_step_reference(const kp_call *call, kp_launch *l)
{
    const net_view v = view_of(call, CS_STATE, CS_NET);
    double *x = malloc((size_t)v.A * sizeof *x);
    if (!x)
        return logic_host->fail(l, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    const int64_t HW = v.H * v.W;
    for (int64_t n = 0; n < v.N; n++) {
        const int64_t cell = n % HW, first = n - cell, y = cell / v.W, xx = cell % v.W;
        for (int64_t r = 0; r < 9 * v.C; r++) {
            const int64_t c = r / 9, k = r % 9;
            const int64_t u = neighbour(y, k / 3 - 1, v.H, v.zero);
            const int64_t w = neighbour(xx, k % 3 - 1, v.W, v.zero);
            x[r] = u < 0 || w < 0 ? 0.0 : ROW(call, CS_STATE, const float, c)[first + u * v.W + w];
        }
        for (int64_t li = 0, g = 0; li < v.L; li++) {
            const int64_t g1 = clamp64(layer_start(&v, li + 1), g, v.G), top = 9 * v.C + g - 1;
            for (; g < g1; g++) {
                int64_t ia, ib;
                double c[4];
                gate(&v, g, top, &ia, &ib, c);
                x[9 * v.C + g] = c[0] + c[1] * x[ia] + c[2] * x[ib] + c[3] * x[ia] * x[ib];
            }
        }
        for (int64_t r = 0; r < v.A; r++)
            ROW(call, CS_ACTS, float, r)[n] = (float)x[r];
        const int f = fires(&v, n);
        for (int64_t c = 0; c < v.C; c++)
            ROW(call, CS_NEXT, float, c)
        [n] = (float)(f ? x[9 * v.C + v.G - v.C + c] : x[9 * c + 4]);
    }
    free(x);
    return KP_OK;
}

kp_status logic_ca_step_backward_reference(const kp_call *call, kp_launch *l)
{
    const net_view v = view_of(call, CB_DNEXT, CB_NET);
    double *d = malloc((size_t)v.A * sizeof *d);
    if (!d)
        return logic_host->fail(l, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    const int accumulate = (int)call->args[CB_ACCUMULATE].i;
    for (int64_t n = 0; n < v.N; n++) {
        const double m = fires(&v, n) ? 1.0 : 0.0;
        memset(d, 0, (size_t)v.A * sizeof *d);
        for (int64_t c = 0; c < v.C; c++)
            d[9 * v.C + v.G - v.C + c] = m * ROW(call, CB_DNEXT, const float, c)[n];
        /* Gates in reverse: every reader of a gate is in a later layer, so its d is complete. */
        for (int64_t li = v.L - 1; li >= 0; li--) {
            const int64_t g0 = layer_start(&v, li), g1 = clamp64(layer_start(&v, li + 1), g0, v.G);
            for (int64_t g = g1 - 1; g >= g0; g--) {
                int64_t ia, ib;
                double c[4];
                gate(&v, g, v.A - 1, &ia, &ib, c);
                const double dy = d[9 * v.C + g];
                const double a = ROW(call, CB_ACTS, const float, ia)[n];
                const double b = ROW(call, CB_ACTS, const float, ib)[n];
                const double t[4] = {dy, dy * a, dy * b, dy * a * b};
                for (int k = 0; k < 4; k++) {
                    float *s = ROW(call, CB_SUMS, float, 4 * g + k) + n;
                    *s = (float)(accumulate ? *s + t[k] : t[k]);
                }
                d[ia] += dy * (c[1] + c[3] * b);
                d[ib] += dy * (c[2] + c[3] * a);
            }
        }
        for (int64_t r = 0; r < v.A; r++)
            ROW(call, CB_DACTS, float, r)[n] = (float)d[r];
    }
    /* dstate: dnext where the cell kept its state, plus the patch rows that read each cell. */
    const int64_t HW = v.H * v.W;
    for (int64_t c = 0; c < v.C; c++)
        for (int64_t n = 0; n < v.N; n++) {
            const int64_t cell = n % HW, first = n - cell, y = cell / v.W, x = cell % v.W;
            double s = fires(&v, n) ? 0.0 : ROW(call, CB_DNEXT, const float, c)[n];
            for (int k = 0; k < 9; k++) {
                const int64_t u = neighbour(y, 1 - k / 3, v.H, v.zero);
                const int64_t w = neighbour(x, 1 - k % 3, v.W, v.zero);
                if (u >= 0 && w >= 0)
                    s += ROW(call, CB_DACTS, const float, 9 * c + k)[first + u * v.W + w];
            }
            ROW(call, CB_DSTATE, float, c)[n] = (float)s;
        }
    free(d);
    return KP_OK;
}

kp_status logic_ca_dw_reference(const kp_call *call, kp_launch *l)
{
    const kp_value *v = call->args;
    const int64_t P = v[CD_W].tensor.shape[0], G = v[CD_SUMS].tensor.shape[0] / 4;
    const int64_t N = v[CD_SUMS].tensor.shape[1];
    for (int64_t p = 0; p < P; p++) {
        const int64_t g0 = clamp64(INT_AT(call, CD_START, p), 0, G);
        const int64_t g1 = clamp64(INT_AT(call, CD_START, p + 1), g0, G);
        double S[4] = {0, 0, 0, 0}, pr[16], gp[16], dot = 0;
        for (int64_t g = g0; g < g1; g++)
            for (int k = 0; k < 4; k++)
                for (int64_t n = 0; n < N; n++)
                    S[k] += ROW(call, CD_SUMS, const float, 4 * g + k)[n];
        logic_softmax16(ROW(call, CD_W, const float, p), pr);
        for (int i = 0; i < 16; i++) {
            gp[i] = 0;
            for (int t = 0; t < 4; t++)
                gp[i] += S[t] * kp_logic_coeff(t, i);
            dot += pr[i] * gp[i];
        }
        float *dw = ROW(call, CD_DW, float, p);
        for (int i = 0; i < 16; i++)
            dw[i] = (float)(pr[i] * (gp[i] - dot));
    }
    return KP_OK;
}
