/* SPDX-License-Identifier: Apache-2.0 */
/* gru.rollout's shared declarations: parameter order, the kernels' arguments, the reference. */
#ifndef KP_GRU_ROLLOUT_H
#define KP_GRU_ROLLOUT_H

#include "gru.h"

/* Parameter indices, in the order the descriptor lists them. */
enum {
    RO_W_IH,
    RO_W_HH,
    RO_B_IH,
    RO_B_HH,
    RO_W_P,
    RO_B_P,
    RO_W_Y,
    RO_B_Y,
    RO_F,
    RO_Y0,
    RO_Z0,
    RO_H0,
    RO_T,
    RO_MODE,
    RO_SEED,
    RO_LBR,
    RO_Y,
    RO_H_T,
    RO_ENTROPY,
    RO_HNORM,
    RO_NPARAMS
};

/* Values of the `mode` parameter (kp_gru_rollout_mode in kernelport/ops/gru.h). */
enum { RO_MODE_SAMPLE = 0, RO_MODE_MEAN = 1, RO_MODE_ARGMAX = 2 };

/* The sizes of a call, read from its tensors (valid after gru_rollout_check). */
typedef struct ro_dims {
    int64_t E, B, F, H, S, T, I;
} ro_dims;

void gru_rollout_dims(const kp_call *call, ro_dims *d);

/* Shared by gru.rollout and gru.rollout_grid (gru-rollout.c): the parameters, the shape checks,
 * the arguments both kernels start with (RO_PARAMS in kernels/gru-rollout.cl: B, F, H, S, T, mode,
 * linear_before_reset, the seed's two halves, then the 16 tensors as buffer and kp_view pairs),
 * cost and tolerance. */
extern const kp_param_desc gru_rollout_params[RO_NPARAMS];
kp_status gru_rollout_check_shapes(const kp_call *call, kp_launch *l);
void gru_rollout_args(kp_clargs *a, const kp_call *call);
void gru_rollout_cost(const kp_call *call, kp_cost *out);
void gru_rollout_tolerance(const kp_call *call, double *atol, double *rtol);

/* gru.rollout with GRID 1: the call, run as gru.rollout_grid (gru-rollout-grid.c), which runs on
 * every device but CPUs (KP_ERR_UNSUPPORTED there). */
kp_status gru_rollout_through_grid(const kp_call *call, kp_launch *l);
int gru_rollout_grid_runs_on(const kp_device_info *d);
/* Whether gru.rollout_grid runs on l's device and two work-groups or more per trajectory fit
 * there (with one, it has nothing over gru.rollout's own kernel, which is tuned for that case);
 * l may be any kernel's launch. */
int gru_rollout_grid_spreads(const kp_call *call, kp_launch *l);

/* The same math in double on host memory (gru-rollout-reference.c). */
kp_status gru_rollout_reference(const kp_call *call, kp_launch *l);

/* Builds the sample arguments of a named size (gru-rollout-sample.c). */
kp_status gru_rollout_sample(kp_sample *s, const char *size);
extern const char *const gru_rollout_verify_sizes[];
extern const char *const gru_rollout_bench_sizes[];

#endif
