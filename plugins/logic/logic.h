/* SPDX-License-Identifier: Apache-2.0 */
/* The logic plugin's shared declarations: parameters, descriptors, checks, launches, references. */
#ifndef KP_LOGIC_H
#define KP_LOGIC_H

#include <stddef.h>
#include <stdint.h>

#include "kernelport/plugin.h"

/* Set by init; valid while the plugin is loaded. */
extern const kp_host_api *logic_host;

/* One descriptor per kernel, grouped by file. */
extern const kp_kernel_desc logic_coeffs_desc;            /* logic-gates.c */
extern const kp_kernel_desc logic_forward_desc;           /* logic-gates.c */
extern const kp_kernel_desc logic_backward_desc;          /* logic-backward.c */
extern const kp_kernel_desc logic_pack_desc;              /* logic-packed.c */
extern const kp_kernel_desc logic_unpack_desc;            /* logic-packed.c */
extern const kp_kernel_desc logic_eval_packed_desc;       /* logic-packed.c */
extern const kp_kernel_desc logic_groupsum_desc;          /* logic-groupsum.c */
extern const kp_kernel_desc logic_groupsum_backward_desc; /* logic-groupsum.c */
extern const kp_kernel_desc logic_groupsum_packed_desc;   /* logic-groupsum.c */
extern const kp_kernel_desc logic_perceive_desc;          /* logic-perceive.c */
extern const kp_kernel_desc logic_perceive_backward_desc; /* logic-perceive.c */
extern const kp_kernel_desc logic_perceive_packed_desc;   /* logic-perceive-packed.c */
extern const kp_kernel_desc logic_ca_step_desc;           /* logic-ca.c */
extern const kp_kernel_desc logic_ca_step_backward_desc;  /* logic-ca.c */
extern const kp_kernel_desc logic_ca_dw_desc;             /* logic-ca.c */

/* Parameter indices, in the order the descriptors list them. */
enum { CO_W, CO_C, CO_OP, CO_HARD, CO_N };
enum { FW_X, FW_A, FW_B, FW_C, FW_Y, FW_CHECK, FW_N };
enum { BW_X, BW_A, BW_B, BW_W, BW_C, BW_DY, BW_START, BW_ENTRIES, BW_DX, BW_DW, BW_CHECK, BW_N };
enum { PK_X, PK_BITS, PK_N };
enum { UP_BITS, UP_Y, UP_N };
enum { EV_X, EV_A, EV_B, EV_OP, EV_Y, EV_SAMPLES, EV_CHECK, EV_N };
enum { GS_Y, GS_OUT, GS_TAU, GS_N };
enum { GB_DOUT, GB_DY, GB_TAU, GB_N };
enum { GP_BITS, GP_OUT, GP_TAU, GP_N };
enum { PC_GRID, PC_OUT, PC_BOUNDARY, PC_N };
enum { PB_DOUT, PB_DGRID, PB_BOUNDARY, PB_N };
enum { PP_BITS, PP_OUT, PP_HEIGHT, PP_WIDTH, PP_BOUNDARY, PP_FIRST, PP_N };
/* logic.ca_step and logic.ca_step_backward list the network's arguments in the same order after
 * their own (CA_LAYERS ...), at offsets CS_NET and CB_NET. */
enum {
    CA_LAYERS,
    CA_A,
    CA_B,
    CA_PARAM,
    CA_C,
    CA_FIRE,
    CA_RATE,
    CA_HEIGHT,
    CA_WIDTH,
    CA_BOUNDARY,
    CA_CHECK,
    CA_START,
    CA_ENTRIES,
    CA_N
};
enum { CS_STATE, CS_NEXT, CS_ACTS, CS_NET };
enum { CB_ACTS, CB_DNEXT, CB_DACTS, CB_DSTATE, CB_SUMS, CB_ACCUMULATE, CB_NET };
enum { CD_SUMS, CD_START, CD_W, CD_DW, CD_CHECK, CD_N };

/* Tunable value lists shared by the descriptors; the logic_auto_* ones start with 0, "by device
 * type" (CPUs and GPUs want work-groups of different shapes: docs/kernels/logic.md), which the
 * descriptors' resolve hooks turn into the device's value (logic_resolve). */
extern const int64_t logic_pow2_256[9];  /* 1, 2, 4, ..., 256 */
extern const int64_t logic_auto_256[10]; /* 0, 1, 2, 4, ..., 256 */
extern const int64_t logic_auto_64[8];   /* 0, 1, 2, 4, ..., 64 */
extern const int64_t logic_auto_16[6];   /* 0, 1, 2, 4, 8, 16 */

/* ---- logic-util.c: checks ---------------------------------------------------------------------
 */

/* Fails unless `t` has rank `rank` and `shape` (-1 matches any extent), and a contiguous last
 * dimension when rank >= 2: "y: expected [G, N] = [7, 100], got f32[7, 99]". */
kp_status logic_expect(kp_launch *l, const char *name, const kp_tensor *t, int32_t rank,
                       const int64_t *shape, const char *pattern);
/* OpenCL kernels index with int: every present tensor's view must stay below 2^31 elements, and
 * its extents and strides too (the views the kernels get are int32, kp_view<R>). */
kp_status logic_fits_int(kp_launch *l, const kp_call *call);
/* The call's check_wiring argument is 0 or 1. */
kp_status logic_check_flag(kp_launch *l, const kp_call *call, int index);
/*
 * Reads the int32 1-D tensor argument `index` into a malloc'ed array of its shape[0] elements
 * (the caller frees it): its host memory in a reference run, else host->buffer_read, a blocking
 * read that waits for the work queued before it.
 */
kp_status logic_read_ints(kp_launch *l, const kp_call *call, int index, int32_t **out);
/* Every a_idx[g] and b_idx[g] within 0..in_dim-1, else fails naming the first bad gate:
 * "a_idx: gate 3 reads input 12, outside x's rows 0..9". */
kp_status logic_check_wiring(kp_launch *l, const kp_call *call, int a, int b, int64_t in_dim,
                             const char *x_name);

/* ---- logic-util.c: launches ---------------------------------------------------------------- */

/* The argument list of OpenCL kernel `entry` built with -D VW=vw: the entries that vectorise along
 * the batch share one program per width. The others take kp_clargs_begin(logic_host, l, entry,
 * NULL), one program for all of them (no tunable of the family is compiled in by the core). */
kp_clargs logic_clargs_vw(kp_launch *l, const char *entry, int64_t vw);
/* Optional tensor argument `v` as a rank-`rank` view or, when the call omitted it, an empty view
 * of `stand_in`'s buffer, which the kernel (told by a flag) never touches. */
void logic_clargs_optional(kp_clargs *a, const kp_value *v, const kp_tensor *stand_in,
                           uint32_t rank);
/* Enqueues a 2-D range of global0 x global1 work-items (each rounded up to the local size). */
kp_status logic_clargs_enqueue(kp_clargs *a, int64_t global0, int64_t global1, size_t local0,
                               size_t local1);
/* Fails with KP_ERR_UNSUPPORTED when local0 x local1 exceeds the device's work-group limit. */
kp_status logic_check_workgroup(kp_launch *l, int64_t local0, int64_t local1, const char *what);

/* ---- logic-util.c: tunables decided by device type ------------------------------------------ */

/* What a tunable's 0 ("auto") becomes: `cpu` on CPU devices, `other` on every other device. An
 * entry of two zeros has no auto value; a 0 for one device type keeps the 0 there, for the launch
 * to decide from the call's shapes (eval_packed's VW and WPI on CPUs, documented in their docs). */
typedef struct logic_auto {
    int64_t cpu, other;
} logic_auto;
/* The body of a descriptor's resolve hook over `by_type`, n entries indexed like its tunables:
 * resolves a 0 and returns the reason (`kernelport explain` prints it), else NULL. */
const char *logic_resolve(kp_launch *l, const logic_auto *by_type, uint32_t n, uint32_t index,
                          int64_t value, int64_t *resolved);
/* The resolve hook of the kernels whose tunables are {WG, VW} (LOGIC_VW_TUNABLE second). */
const char *logic_resolve_vw(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved);
/* A tunable whose 0 the descriptor's resolve hook turns into a value by device type, with its
 * doc's "0: ..." part; the launch reads the resolved value. Work-group shapes made of two such
 * tunables are not flagged KP_TUNABLE_WORKGROUP: the core bounds each workgroup tunable alone and
 * never lets one be 0, so logic_check_workgroup checks their product at launch instead. They are
 * NO_DEFINE: the one value compiled in, VW, is passed as -D VW by the launch (logic_clargs_vw),
 * because eval_packed's may be decided per call and because entries that share a width then
 * share one program whichever kernel builds it. */
#define LOGIC_AUTO_TUNABLE(nm, list, n, flg, text)                                                 \
    {                                                                                              \
        .name = nm, .default_value = 0, .allowed = list, .n_allowed = n,                           \
        .flags = (flg) | KP_TUNABLE_NO_DEFINE, .doc = text                                         \
    }
#define LOGIC_VW_TUNABLE                                                                           \
    LOGIC_AUTO_TUNABLE("VW", logic_auto_16, 6, 0,                                                  \
                       "floats (words) per vector along the batch, compiled in; 0: 16 on CPUs, 1 " \
                       "on others")
/* LOGIC_VW_TUNABLE's values by device type: a logic_auto {LOGIC_VW_CPU, LOGIC_VW_OTHER}. */
#define LOGIC_VW_CPU 16
#define LOGIC_VW_OTHER 1

/* ---- logic-util.c: samples ----------------------------------------------------------------- */

/* Finds `name` among `names` (NULL-terminated), else parses "AxB" or "AxBxC"; fills up to 3
 * values. Returns the number found (0: unknown). */
int logic_sample_dims(const char *name, const char *const *names, const int64_t (*dims)[3],
                      int64_t out[3]);
/* A sample's random wiring of G gates over IN inputs into a_idx and b_idx; with `same`, every
 * third gate reads one wire twice. *a and *b (may be NULL) receive the sample's arrays. */
kp_status logic_sample_wiring(kp_sample *s, int64_t G, int64_t IN, int same, int32_t **a,
                              int32_t **b);
/* A float in [lo, hi) from the sample's stream. */
double logic_sample_uniform(kp_sample *s, double lo, double hi);

/* ---- logic-reference.c: double-precision host math ------------------------------------------ */

kp_status logic_coeffs_reference(const kp_call *call, kp_launch *l);
kp_status logic_forward_reference(const kp_call *call, kp_launch *l);
kp_status logic_backward_reference(const kp_call *call, kp_launch *l);
kp_status logic_pack_reference(const kp_call *call, kp_launch *l);
kp_status logic_unpack_reference(const kp_call *call, kp_launch *l);
kp_status logic_eval_packed_reference(const kp_call *call, kp_launch *l);
kp_status logic_groupsum_reference(const kp_call *call, kp_launch *l);
kp_status logic_groupsum_backward_reference(const kp_call *call, kp_launch *l);
kp_status logic_groupsum_packed_reference(const kp_call *call, kp_launch *l);
kp_status logic_perceive_reference(const kp_call *call, kp_launch *l);
kp_status logic_perceive_backward_reference(const kp_call *call, kp_launch *l);
kp_status logic_perceive_packed_reference(const kp_call *call, kp_launch *l);
kp_status logic_ca_step_reference(const kp_call *call, kp_launch *l);          /* logic-ca-ref.c */
kp_status logic_ca_step_backward_reference(const kp_call *call, kp_launch *l); /* logic-ca-ref.c */
kp_status logic_ca_dw_reference(const kp_call *call, kp_launch *l);            /* logic-ca-ref.c */

/* ---- logic-ca-sample.c: the CA kernels' samples ---------------------------------------------- */

/* Sizes "one", "prime", "zero", "fire" (verify) and "ca" (the checkerboard's network, bench). */
kp_status logic_ca_step_sample(kp_sample *s, const char *name);
kp_status logic_ca_step_backward_sample(kp_sample *s, const char *name);
kp_status logic_ca_dw_sample(kp_sample *s, const char *name);
extern const char *const logic_ca_verify_sizes[];
extern const char *const logic_ca_bench_sizes[];

/* Softmax of 16 logits in double (max subtracted first). */
void logic_softmax16(const float *w, double p[16]);

#endif
