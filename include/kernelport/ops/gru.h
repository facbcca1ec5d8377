/* SPDX-License-Identifier: Apache-2.0 */
/* Typed helpers of the gru family: the gru.rollout wrapper, its random numbers and its metrics. */
#ifndef KERNELPORT_OPS_GRU_H
#define KERNELPORT_OPS_GRU_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../kernelport.h"
#include "random.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------ */
/* gru.rollout                                                                                */
/* ------------------------------------------------------------------------------------------ */

/* How gru.rollout turns the prior's softmax into the stochastic state z_t (its `mode`). */
typedef enum kp_gru_rollout_mode {
    KP_GRU_ROLLOUT_SAMPLE = 0, /* one-hot draw of softmax(logits), inverse CDF, counter RNG */
    KP_GRU_ROLLOUT_MEAN = 1,   /* the probabilities softmax(logits) themselves */
    KP_GRU_ROLLOUT_ARGMAX = 2, /* one-hot at the most likely category (ties: lowest index) */
} kp_gru_rollout_mode;

/*
 * The arguments of gru.rollout (docs/kernels/gru.md, "gru.rollout", has the math). Every tensor
 * is f32 and a non-owning view. A tensor whose `buffer` is NULL is omitted: allowed for b_ih and
 * b_hh (zero biases), for w_p, b_p and z0 when S = 0, and for the outputs entropy and hnorm (not
 * computed); everything else is required.
 *   w_ih [E, 3H, I], w_hh [E, 3H, H], b_ih [E, 3H], b_hh [E, 3H]   GRU of each member, gates r, z,
 * n w_p [E, S, H], b_p [E, S]                                      prior head w_y [E, H + S], b_y
 * [E]                                        loss head f [E or 1, B, F], y0 [B], z0 [E, B, S], h0
 * [E, B, H]           inputs (I = F + 1 + S) y [E, B, T], h_T [E, B, H], entropy [E, B, T], hnorm
 * [E, B, T] outputs
 * struct_size: sizeof(kp_gru_rollout_args), or 0 (a designated initialiser that leaves it out)
 * for the 0.2 layout; a member added later is read only when struct_size covers it.
 */
typedef struct kp_gru_rollout_args {
    uint32_t struct_size;
    kp_tensor w_ih, w_hh, b_ih, b_hh, w_p, b_p, w_y, b_y;
    kp_tensor f, y0, z0, h0;
    kp_tensor y, h_T, entropy, hnorm;
    int64_t T;                   /* steps, >= 1 */
    int64_t mode;                /* a kp_gru_rollout_mode */
    int64_t seed;                /* the random stream of mode SAMPLE (any 64-bit value) */
    int64_t linear_before_reset; /* 1: PyTorch/cuDNN's GRU (the default); 0: ONNX's default */
} kp_gru_rollout_args;

/*
 * Launches gru.rollout on `rt` with `a` (borrowed during the call): looks the kernel up by name
 * and builds the named argument list, leaving out the tensors whose buffer is NULL. Asynchronous
 * like kp_kernel_launch, whose errors it returns (KP_ERR_NOT_FOUND when no loaded plugin
 * provides gru.rollout); `event` may be NULL.
 */
KP_INLINE kp_status kp_gru_rollout(kp_runtime *rt, const kp_gru_rollout_args *a, kp_event **event)
{
    kp_kernel *k = NULL;
    kp_status st = kp_kernel_find(rt, "gru.rollout", &k);
    if (st != KP_OK)
        return st;
    const struct {
        const char *name;
        const kp_tensor *t;
    } tensors[] = {
        {"w_ih", &a->w_ih}, {"w_hh", &a->w_hh}, {"b_ih", &a->b_ih},       {"b_hh", &a->b_hh},
        {"w_p", &a->w_p},   {"b_p", &a->b_p},   {"w_y", &a->w_y},         {"b_y", &a->b_y},
        {"f", &a->f},       {"y0", &a->y0},     {"z0", &a->z0},           {"h0", &a->h0},
        {"y", &a->y},       {"h_T", &a->h_T},   {"entropy", &a->entropy}, {"hnorm", &a->hnorm}};
    kp_arg args[20];
    size_t n = 0;
    for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++)
        if (tensors[i].t->buffer)
            args[n++] = kp_arg_tensor(tensors[i].name, *tensors[i].t);
    args[n++] = kp_arg_int("T", a->T);
    args[n++] = kp_arg_int("mode", a->mode);
    args[n++] = kp_arg_int("seed", a->seed);
    args[n++] = kp_arg_int("linear_before_reset", a->linear_before_reset);
    return kp_kernel_launch(rt, k, args, n, event);
}

/*
 * The uniform number in [0, 1) that gru.rollout's mode SAMPLE draws for member e, trajectory b
 * and step t: Philox4x32-10 (Salmon et al., SC'11; the generator of cuRAND and PyTorch) of the
 * counter (t, b, e, 0) under the key (low, high 32 bits of seed), whose first word's top 24 bits
 * make the float. Only 32-bit integer operations, so every device and the host reference draw
 * the same numbers; exposed so applications can reproduce or audit a rollout's draws.
 * Thread-safe, no state.
 */
KP_INLINE float kp_gru_rollout_uniform(uint64_t seed, int64_t e, int64_t b, int64_t t)
{
    const uint32_t counter[4] = {(uint32_t)t, (uint32_t)b, (uint32_t)e, 0};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t out[4];
    kp_philox4x32_10(counter, key, out);
    return (float)(out[0] >> 8) * 0x1p-24f;
}

/* ------------------------------------------------------------------------------------------ */
/* Research metrics of a rollout's loss trajectories                                          */
/* ------------------------------------------------------------------------------------------ */

/*
 * Summary figures of predicted loss trajectories y [E, B, T] (E members, B trajectories, T
 * steps). Each is a mean over the terms that exist, and 0 when there are none (T = 1 has no
 * deltas, T < 3 no second differences, E = 1 no spread).
 */
typedef struct kp_gru_rollout_metrics {
    uint32_t struct_size;       /* sizeof(kp_gru_rollout_metrics), set by the caller */
    double mean_abs_delta;      /* mean |y[e,b,t] - y[e,b,t-1]| over e, b and t >= 1 */
    double smoothness;          /* mean |y[e,b,t+1] - 2 y[e,b,t] + y[e,b,t-1]|: lower is smoother */
    double trajectory_variance; /* mean over (e, b) of the variance of y[e,b,:] over time */
    double ensemble_variance;   /* mean over (b, t) of the variance of y[:,b,t] over members */
    double ensemble_spread;     /* mean over (b, t) of max_e y[e,b,t] - min_e y[e,b,t] */
    double final_spread;        /* mean over b of the spread at the last step, t = T - 1 */
} kp_gru_rollout_metrics;

/*
 * Computes the metrics of y [E, B, T] (contiguous, row-major, host memory; borrowed). Variances
 * are population variances (divided by the count, not count - 1), accumulated in double. The
 * optional per-element outputs (each may be NULL, caller-owned, contiguous) receive:
 *   deltas [E, B, T - 1]   y[e,b,t] - y[e,b,t-1] for t = 1..T-1 (signed)
 *   variance [B, T]        the ensemble variance at each (b, t)
 *   spread [B, T]          max_e - min_e at each (b, t)
 * Writes only out->struct_size bytes of *out, and sets struct_size to the bytes written (the rule
 * of output structures, docs/stability.md). Returns 0, or -1 (nothing written) when y or out is
 * NULL, a dimension is < 1 or out->struct_size is below the 0.2 layout. Thread-safe; allocates
 * nothing.
 */
KP_INLINE int kp_gru_rollout_metrics_compute(const float *y, int64_t E, int64_t B, int64_t T,
                                             float *deltas, float *variance, float *spread,
                                             kp_gru_rollout_metrics *out)
{
    const size_t first = offsetof(kp_gru_rollout_metrics, final_spread) + sizeof(double);
    if (!y || !out || E < 1 || B < 1 || T < 1 || out->struct_size < first)
        return -1;
    kp_gru_rollout_metrics m;
    memset(&m, 0, sizeof m);
    double sum_delta = 0, sum_second = 0, sum_tvar = 0;
    for (int64_t e = 0; e < E; e++) {
        for (int64_t b = 0; b < B; b++) {
            const float *row = y + (e * B + b) * T;
            double mean = 0, m2 = 0;
            for (int64_t t = 0; t < T; t++) {
                /* Welford's update: one pass, no cancellation on long, offset trajectories. */
                double d = row[t] - mean;
                mean += d / (double)(t + 1);
                m2 += d * (row[t] - mean);
                if (t >= 1) {
                    double delta = (double)row[t] - row[t - 1];
                    sum_delta += fabs(delta);
                    if (deltas)
                        deltas[(e * B + b) * (T - 1) + t - 1] = (float)delta;
                }
                if (t >= 2)
                    sum_second += fabs((double)row[t] - 2.0 * row[t - 1] + row[t - 2]);
            }
            sum_tvar += m2 / (double)T;
        }
    }
    double sum_evar = 0, sum_spread = 0, sum_final = 0;
    for (int64_t b = 0; b < B; b++) {
        for (int64_t t = 0; t < T; t++) {
            double mean = 0, m2 = 0, lo = INFINITY, hi = -INFINITY;
            for (int64_t e = 0; e < E; e++) {
                double v = y[(e * B + b) * T + t], d = v - mean;
                mean += d / (double)(e + 1);
                m2 += d * (v - mean);
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
            }
            double var = m2 / (double)E, range = hi - lo;
            sum_evar += var;
            sum_spread += range;
            if (t == T - 1)
                sum_final += range;
            if (variance)
                variance[b * T + t] = (float)var;
            if (spread)
                spread[b * T + t] = (float)range;
        }
    }
    double n_traj = (double)E * (double)B;
    if (T > 1)
        m.mean_abs_delta = sum_delta / (n_traj * (double)(T - 1));
    if (T > 2)
        m.smoothness = sum_second / (n_traj * (double)(T - 2));
    m.trajectory_variance = sum_tvar / n_traj;
    m.ensemble_variance = sum_evar / ((double)B * (double)T);
    m.ensemble_spread = sum_spread / ((double)B * (double)T);
    m.final_spread = sum_final / (double)B;
    const size_t n = out->struct_size < sizeof m ? out->struct_size : sizeof m;
    m.struct_size = (uint32_t)n;
    memcpy(out, &m, n);
    return 0;
}

#ifdef __cplusplus
}
#endif

#endif
