/* SPDX-License-Identifier: Apache-2.0 */
/* tc.gemm's precisions: what the `precision` argument of tc.gemm takes (and the blas.gemm
 * tunable `precision` writes by name in a manifest). */
#ifndef KERNELPORT_OPS_TC_H
#define KERNELPORT_OPS_TC_H

typedef enum kp_tc_precision {
    KP_TC_TF32 = 0,   /* inputs rounded to TF32 (10-bit mantissa, cvt.rna), FP32 accumulation */
    KP_TC_TF32X3 = 1, /* a = hi + lo in TF32, three products: FP32-level accuracy */
    KP_TC_F16 = 2,    /* inputs rounded to IEEE half (nearest even), FP32 accumulation */
    KP_TC_BF16 = 3,   /* inputs rounded to bfloat16 (nearest even), FP32 accumulation */
    KP_TC_PRECISION_COUNT
} kp_tc_precision;

#endif
