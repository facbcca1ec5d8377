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

/* Tunable value lists shared by the descriptors; the logic_auto_* ones start with 0, "by device
 * type" (CPUs and GPUs want work-groups of different shapes: docs/kernels/logic.md). */
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
/* OpenCL kernels index with int: every present tensor's view must stay below 2^31 elements. */
kp_status logic_fits_int(kp_launch *l, const kp_call *call);
/* The call's check_wiring argument is 0 or 1. */
kp_status logic_check_flag(kp_launch *l, const kp_call *call, int index);
/*
 * Reads the int32 1-D tensor argument `index` into a malloc'ed array of its shape[0] elements
 * (the caller frees it): its host memory in a reference run, else a blocking read through the
 * runtime's queue (which waits for the work queued before it).
 */
kp_status logic_read_ints(kp_launch *l, const kp_call *call, int index, int32_t **out);
/* Every a_idx[g] and b_idx[g] within 0..in_dim-1, else fails naming the first bad gate:
 * "a_idx: gate 3 reads input 12, outside x's rows 0..9". */
kp_status logic_check_wiring(kp_launch *l, const kp_call *call, int a, int b, int64_t in_dim,
                             const char *x_name);

/* ---- logic-util.c: launches ---------------------------------------------------------------- */

/* Arguments set in order; the first failure sticks in `st` and the rest become no-ops. */
typedef struct logic_args {
    kp_launch *l;
    kp_clkernel *k;
    uint32_t i;
    kp_status st;
} logic_args;

/* Gets OpenCL kernel `entry` (one program serves the family: no tunable is compiled in). */
logic_args logic_args_start(kp_launch *l, const char *entry);
/* The same with -D VW=vw: kernels that share a VW share one program. */
logic_args logic_args_start_vw(kp_launch *l, const char *entry, int64_t vw);
/* Tunable `index`'s value, its 0 resolved by device type: `cpu` on CPUs, `other` elsewhere. */
int64_t logic_tuned(kp_launch *l, uint32_t index, int64_t cpu, int64_t other);
/* The vector width of tunable `index` (a VW tunable), 0 resolved: 16 on CPUs, 1 on others. */
int64_t logic_vw(kp_launch *l, uint32_t index);
/* A tunable whose 0 resolves by device type, with its doc's "0: ..." part. Work-group shapes
 * made of two such tunables are not flagged KP_TUNABLE_WORKGROUP (the core would replace the 0
 * default): logic_check_workgroup checks their product at launch instead. */
#define LOGIC_AUTO_TUNABLE(nm, list, n, flg, text)                                                 \
    {                                                                                              \
        .name = nm, .default_value = 0, .allowed = list, .n_allowed = n,                           \
        .flags = (flg) | KP_TUNABLE_NO_DEFINE, .doc = text                                         \
    }
#define LOGIC_VW_TUNABLE                                                                           \
    LOGIC_AUTO_TUNABLE("VW", logic_auto_16, 6, 0,                                                  \
                       "floats (words) per vector along the batch, compiled in; 0: 16 on CPUs, 1 " \
                       "on others")
void logic_arg_int(logic_args *a, int64_t v);
void logic_arg_float(logic_args *a, double v);
/* The tensor's buffer, then int2 (offset, stride of dimension 0); `t` NULL or without a buffer
 * passes `fallback` and (0, 0). */
void logic_arg_view(logic_args *a, const kp_tensor *t, const kp_buffer *fallback);
void logic_arg_local(logic_args *a, size_t bytes);
/* A whole buffer (a scratch buffer), with no view. */
void logic_arg_buffer(logic_args *a, const kp_buffer *buf);
/* Enqueues a 2-D range of global0 x global1 work-items (each rounded up to the local size). */
kp_status logic_args_launch(logic_args *a, int64_t global0, int64_t global1, size_t local0,
                            size_t local1);
/* Fails with KP_ERR_UNSUPPORTED when local0 x local1 exceeds the device's work-group limit. */
kp_status logic_check_workgroup(kp_launch *l, int64_t local0, int64_t local1, const char *what);
/* Whether this call runs on a CPU device (tunable defaults of 0 resolve by device type). */
int logic_on_cpu(kp_launch *l);

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

/* Softmax of 16 logits in double (max subtracted first). */
void logic_softmax16(const float *w, double p[16]);

#endif
