/* gru.rollout's shared declarations: parameter order, the kernel's argument block, the reference.
 */
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

/*
 * Sizes and element offsets/strides of every tensor, passed to the OpenCL kernel by value as one
 * struct (ro_args in kernels/gru-rollout.cl, field for field: only 32-bit fields, so both sides
 * lay it out alike). Strides name the dimension they step: _e member, _b trajectory, _r row,
 * _t step; inner dimensions of the weight matrices are contiguous (check requires it).
 */
typedef struct ro_args {
    int32_t E, B, F, H, S, T;
    int32_t mode, lbr, has_bih, has_bhh, has_ent, has_hn;
    uint32_t seed_lo, seed_hi;
    int32_t wih_o, wih_e, wih_r;
    int32_t whh_o, whh_e, whh_r;
    int32_t bih_o, bih_e, bih_r;
    int32_t bhh_o, bhh_e, bhh_r;
    int32_t wp_o, wp_e, wp_r;
    int32_t bp_o, bp_e, bp_r;
    int32_t wy_o, wy_e, wy_r;
    int32_t by_o, by_e;
    int32_t f_o, f_e, f_b, f_r;
    int32_t y0_o, y0_b;
    int32_t z0_o, z0_e, z0_b, z0_r;
    int32_t h0_o, h0_e, h0_b, h0_r;
    int32_t y_o, y_e, y_b, y_t;
    int32_t hT_o, hT_e, hT_b, hT_r;
    int32_t en_o, en_e, en_b, en_t;
    int32_t hn_o, hn_e, hn_b, hn_t;
} ro_args;

/* The sizes of a call, read from its tensors (valid after gru_rollout_check). */
typedef struct ro_dims {
    int64_t E, B, F, H, S, T, I;
} ro_dims;

void gru_rollout_dims(const kp_call *call, ro_dims *d);

/* Shared by gru.rollout and gru.rollout_grid (gru-rollout.c): the parameters, the shape checks,
 * the kernel's argument block, its 16 buffer arguments from index `first`, cost and tolerance. */
extern const kp_param_desc gru_rollout_params[RO_NPARAMS];
kp_status gru_rollout_check_shapes(const kp_call *call, kp_launch *l);
void gru_rollout_pack(const kp_call *call, ro_args *r);
kp_status gru_rollout_bind(kp_launch *l, kp_clkernel *k, uint32_t first, const kp_call *call);
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
