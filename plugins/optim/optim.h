/* SPDX-License-Identifier: Apache-2.0 */
/* The optim plugin's shared declarations: parameter order, the arena and segment checks, the
 * arguments every kernel shares, and the samples. docs/kernels/optim.md describes the family. */
#ifndef KP_OPTIM_H
#define KP_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include "kernelport/plugin.h"

/* Set by init; valid while the plugin is loaded. */
extern const kp_host_api *optim_host;

/* Parameter indices, in the order the descriptors list them. */
enum {
    AD_PARAM,
    AD_GRAD,
    AD_EXP_AVG,
    AD_EXP_AVG_SQ,
    AD_MAX_EXP_AVG_SQ,
    AD_MASTER,
    AD_SEGMENTS,
    AD_SCALES,
    AD_GRAD_MUL,
    AD_STEP,
    AD_LR,
    AD_BETA1,
    AD_BETA2,
    AD_EPS,
    AD_WEIGHT_DECAY,
    AD_AMSGRAD,
    AD_MAXIMIZE,
    AD_CHECK,
    AD_N
};
enum {
    SG_PARAM,
    SG_GRAD,
    SG_BUF,
    SG_MASTER,
    SG_SEGMENTS,
    SG_SCALES,
    SG_GRAD_MUL,
    SG_STEP,
    SG_LR,
    SG_MOMENTUM,
    SG_DAMPENING,
    SG_WEIGHT_DECAY,
    SG_NESTEROV,
    SG_MAXIMIZE,
    SG_CHECK,
    SG_N
};
enum { EM_AVERAGED, EM_PARAM, EM_STEP, EM_DECAY, EM_WARMUP, EM_N };
enum { CL_GRAD, CL_NORM, CL_COEF, CL_SEGMENTS, CL_MAX_NORM, CL_SCALE_GRADS, CL_CHECK, CL_N };

/* The tunables every optim kernel has first: the work-group size and the run of groups of four
 * a work-item updates (results depend on neither); optim_resolve turns RUN's auto into the
 * device's value. */
enum { OPTIM_TUNE_WG, OPTIM_TUNE_RUN, OPTIM_N_TUNABLES };
extern const int64_t optim_workgroups[6], optim_runs[8];
#define OPTIM_TUNABLES                                                                             \
    [OPTIM_TUNE_WG] = {.name = "WG",                                                               \
                       .default_value = 256,                                                       \
                       .allowed = optim_workgroups,                                                \
                       .n_allowed = 6,                                                             \
                       .flags = KP_TUNABLE_WORKGROUP,                                              \
                       .doc = "work-items per work-group (results do not depend on it)"},          \
    [OPTIM_TUNE_RUN] = {.name = "RUN",                                                             \
                        .default_value = 0,                                                        \
                        .allowed = optim_runs,                                                     \
                        .n_allowed = 8,                                                            \
                        .doc = "groups of four elements each work-item updates one after the "     \
                               "other: 1 lets neighbouring work-items read neighbouring memory "   \
                               "(GPUs), more amortises a work-item's segment search (CPUs); 0 "    \
                               "(auto) resolves per device: 16 on CPUs, 1 elsewhere"}
extern const kp_tunable_desc optim_tunables[OPTIM_N_TUNABLES];
const char *optim_resolve(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved);

/* ---- optim-arena.c: checks ----------------------------------------------------------------- */

/*
 * The arrays of one call: `idx` lists parameter indices of tensors (absent optional ones are
 * skipped); each must be a contiguous [N] view, N taken from the first. Fails naming the array
 * and both shapes: "grad: expected [N] = [1009] like param, got f32[1008]".
 */
kp_status optim_check_arrays(kp_launch *l, const kp_call *call, const int *idx, int n_idx,
                             int64_t *n);
/*
 * The segment table (`seg`, optional i32 [n, 2]) and its multipliers (`scl`, optional f32 [n, 2],
 * only with a table; -1 for a kernel without them). With `check` (the call's check_segments) the
 * table is read back (a blocking read that waits for the work queued before it) and every segment
 * must lie inside the arena's n elements, after the one before it: "segments: segment 3 (offset 90,
 * length 20) reaches past the arena's 100 elements".
 */
kp_status optim_check_segments(kp_launch *l, const kp_call *call, int seg, int scl, int check,
                               int64_t n);
/* A rank-0 (or [1]) f32 tensor argument, when present: "grad_mul: expected a scalar ...". */
kp_status optim_check_scalar(kp_launch *l, const kp_call *call, int index);
/* Fails unless lo <= the float argument `index` <= hi (PyTorch's "Invalid ..." checks). */
kp_status optim_check_range(kp_launch *l, const kp_call *call, int index, double lo, double hi,
                            int hi_open);

/* ---- optim-arena.c: launches ---------------------------------------------------------------- */

/* Whether every present array of `idx` starts at a multiple of 4 elements (16-byte accesses). */
int optim_aligned(const kp_call *call, const int *idx, int n_idx);
/* "-D PARAM_BF16=x -D GRAD_BF16=y" for the dtypes of tensor arguments p and g (p < 0: f32). */
const char *optim_build_options(const kp_call *call, int p, int g, char *buf, size_t size);
/* A tensor argument, or when the call omitted it (or index is -1) an empty view of `stand_in`'s
 * buffer, which the kernel, seeing offset -1, never touches. */
void optim_clargs_optional(kp_clargs *a, const kp_call *call, int index, const kp_tensor *stand_in,
                           uint32_t rank);
/* The SEG_PARAMS of kernels/optim.cl: the segment count, the table and the multipliers (scl -1:
 * the kernel has none). */
void optim_clargs_segments(kp_clargs *a, const kp_call *call, int seg, int scl,
                           const kp_tensor *stand_in);
/* The elementwise kernels' NDRange: a work-item per RUN groups of four elements, rounded up to
 * the work-group size, which goes to *wg. */
size_t optim_global_size(kp_launch *l, int64_t n, size_t *wg);

/* ---- optim-arena.c: references ------------------------------------------------------------- */

/* What the kernels see of the segment table, on host memory: element e is updated when
 * optim_segment_of(...) >= 0, with the multipliers of that segment. */
typedef struct optim_segments {
    int64_t n;
    const int32_t *seg; /* NULL when the call has no table */
    int64_t seg_s0, seg_s1;
    const float *scl; /* NULL when there are no multipliers */
    int64_t scl_s0, scl_s1;
} optim_segments;

optim_segments optim_segments_of(const kp_call *call, int seg, int scl);
/* The segment holding element e (the kernels' binary search), or -1; with multipliers. */
int64_t optim_segment_of(const optim_segments *s, int64_t e, double *lr_mul, double *wd_mul);
/* Element i of a reference call's f32 or bf16 array argument, and a store to one. */
double optim_load(const kp_call *call, int index, int64_t i);
void optim_store(const kp_call *call, int index, int64_t i, double v);

/* ---- optim-arena.c: samples ---------------------------------------------------------------- */

/* The arena of a sample: its elements, the dtypes, segments (odd lengths with gaps) or none, and
 * whether every array starts one element in (the unaligned path). */
typedef struct optim_layout {
    int64_t n;
    int32_t param_dtype, grad_dtype;
    int segments; /* how many segments (0: none) */
    int scales;   /* per-segment multipliers */
    int offset;   /* element offset of every array (1: unaligned) */
} optim_layout;

/* Samples array `name` as [N] (dtype f32 unless given), in [lo, hi), at the layout's offset. */
kp_status optim_sample_array(kp_sample *s, const optim_layout *lay, const char *name, int32_t dtype,
                             double lo, double hi);
/* A sample size that is a plain element count ("25000000"), up to 2^31 - 1: into *n. */
int optim_size_number(const char *size, int64_t *n);
/* Samples `segments` (and `scales`) as the layout asks. */
kp_status optim_sample_segments(kp_sample *s, const optim_layout *lay);

/* ---- descriptors --------------------------------------------------------------------------- */

kp_status optim_register_adam(const kp_host_api *api, kp_registrar *reg);
kp_status optim_register_sgd(const kp_host_api *api, kp_registrar *reg);
kp_status optim_register_clip(const kp_host_api *api, kp_registrar *reg);
kp_status optim_register_ema(const kp_host_api *api, kp_registrar *reg);

#endif
