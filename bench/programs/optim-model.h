/* SPDX-License-Identifier: Apache-2.0 */
/* The optimizer benchmarks' model (bench-optim, bench-tensor's AdamW row): 100 f32 tensors held
 * in one arena per array, their sizes from one rule that bench/peers/optim_model.py follows too,
 * and AdamW's step on the host. */
#ifndef KP_BENCH_OPTIM_MODEL_H
#define KP_BENCH_OPTIM_MODEL_H

#include <stdint.h>

#include "harness.h"

enum { OPTIM_TENSORS = 100 };

/* The hyperparameters every AdamW case steps with (PyTorch's defaults but weight decay 1e-2). */
#define OPTIM_LR 1e-3
#define OPTIM_BETA1 0.9
#define OPTIM_BETA2 0.999
#define OPTIM_EPS 1e-8
#define OPTIM_WD 1e-2

/* w_i = 1 + 37 i mod 101 for i = 0..99, n_i = floor(total w_i / sum w), the last takes the rest. */
void optim_model_sizes(int64_t total, int64_t *numel);

/* Each array of the model in one arena, each tensor at a multiple of 4 elements. */
typedef struct optim_arena {
    int64_t total, n; /* parameters; the arena's length in elements */
    int32_t seg[2 * OPTIM_TENSORS];
    float scales[OPTIM_TENSORS][2];
    kp_buffer *p, *g, *m, *v, *segments, *scale, *norm, *coef;
} optim_arena;

/* Lays out a->total parameters and fills the arrays: p and g uniform in [-1, 1) (seeds 1 and 2),
 * m = g / 10, v = m^2; every third tensor without weight decay in `scales`. `host` holds a->n
 * floats (at most total + 4 * OPTIM_TENSORS) and ends up holding v. */
kp_status optim_arena_init(kpb *b, optim_arena *a, float *host);

void optim_arena_fini(kpb *b, optim_arena *a);

/* One AdamW step on host arrays in float, the formulas of kernels/optim.cl. */
typedef struct optim_host_adamw {
    int64_t n;
    float *p, *g, *m, *v;
    float lr, beta1, beta2, eps, wd, step_size, bc2_sqrt;
} optim_host_adamw;

/* Sets h's hyperparameters to the OPTIM_* ones for step `step` (1 for the first). */
void optim_host_adamw_at(optim_host_adamw *h, int step);

/* Steps h's arrays (a kpb_time_host function). */
void optim_host_adamw_step(void *h);

#endif
