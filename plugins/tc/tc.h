/* SPDX-License-Identifier: Apache-2.0 */
/* The tc plugin's shared declarations: parameters, the planned call, support, references. */
#ifndef KP_TC_H
#define KP_TC_H

#include <stdint.h>

#include "kernelport/ops/tc.h"
#include "kernelport/plugin.h"

extern const kp_host_api *tc_host;

/* tc.gemm's parameters, in the order the descriptor lists them. */
enum { TC_A, TC_B, TC_C, TC_ALPHA, TC_BETA, TC_TRANS_A, TC_TRANS_B, TC_PRECISION, TC_NPARAMS };

/* Tunables, in the order the descriptor lists them. */
enum {
    TC_TUNE_BM,
    TC_TUNE_BN,
    TC_TUNE_BK,
    TC_TUNE_BK_X3,
    TC_TUNE_WM,
    TC_TUNE_WN,
    TC_TUNE_LDSM,
    TC_TUNE_BT,
    TC_TUNE_SMALL,
    TC_TUNE_STAGES,
    TC_TUNE_WGMMA,
    TC_TUNE_WG_BM,
    TC_TUNE_WG_BN,
    TC_TUNE_WG_BK,
    TC_TUNE_WG_STAGES,
    TC_TUNE_WG_LAG,
    TC_TUNE_H_BK,
    TC_TUNE_H_STAGES,
    TC_N_TUNABLES
};

/* One operand as the kernel reads it: the call's tensor, or its transpose, as a row-major view
 * (rows, columns; strides {row pitch, 1}, the pitch 0 for a single row), which goes to the
 * kernel as its kp_view2: tc.cl reads the offset and the row pitch strides[0]. */
typedef struct tc_operand {
    kp_tensor view;
} tc_operand;

/* The product the kernel runs: C [m, n] = alpha op(a) op(b) + beta C, all row-major. A
 * column-major C is run as C^T = op(B)^T op(A)^T, so a and b may be the call's B and A. */
typedef struct tc_plan {
    int64_t m, n, k;
    int ta, tb;
    tc_operand a, b, c;
    int precision;
    int half; /* A and B are 16-bit tensors, f16 or bf16 as precision says (tc_gemm_h) */
    int cout; /* C's dtype: 0 f32, 1 f16, 2 bf16 (16-bit only with half) */
} tc_plan;

/* ---- tc-gemm.c ------------------------------------------------------------------------------ */

extern const kp_kernel_desc tc_gemm_desc;

/* KP_OK on an NVIDIA GPU of compute capability 8.0 or newer (and for host references); otherwise
 * fails the launch with KP_ERR_UNSUPPORTED naming the device. */
kp_status tc_supported(kp_launch *l);

/* ---- tc-reference.c ------------------------------------------------------------------------- */

/* x as the kernel's precision sees it: TF32 (nearest, ties away), IEEE half or bfloat16 (nearest
 * even); unchanged for tf32x3. */
double tc_round(int precision, float x);
kp_status tc_gemm_reference(const kp_call *call, kp_launch *l);
void tc_gemm_tolerance(const kp_call *call, double *atol, double *rtol);
kp_status tc_gemm_sample(kp_sample *s, const char *size);
void tc_gemm_cost(const kp_call *call, kp_cost *out);
extern const char *const tc_verify_sizes[];
extern const char *const tc_bench_sizes[];

#endif
