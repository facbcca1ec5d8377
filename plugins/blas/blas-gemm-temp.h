/* SPDX-License-Identifier: Apache-2.0 */
/* CLBlast's GEMM with a temporary buffer the caller keeps, declared for C and C++ alike (no
 * Kernelport headers). CLBlast's C API (1.5.3) has no such argument: its indirect GEMM (the path
 * for large products) then creates and releases a device buffer on every call for the operands it
 * pads or transposes. */
#ifndef KP_BLAS_GEMM_TEMP_H
#define KP_BLAS_GEMM_TEMP_H

#include <stddef.h>

#include <CL/cl.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The enumerations are CLBlast's C values (CLBlastLayout, CLBlastTranspose); `f16` picks half
 * over single precision. Each returns CLBlast's status, 0 on success. */
int blas_gemm_temp_bytes(int layout, int trans_a, int trans_b, size_t m, size_t n, size_t k,
                         size_t a_offset, size_t a_ld, size_t b_offset, size_t b_ld,
                         size_t c_offset, size_t c_ld, int f16, cl_command_queue *queue,
                         size_t *bytes);
/* alpha and beta are CLBlast's scalars of the precision: a float, or a cl_half's bits. `temp`
 * may be NULL (CLBlast allocates its own). */
int blas_gemm_with_temp(int layout, int trans_a, int trans_b, size_t m, size_t n, size_t k,
                        const void *alpha, cl_mem a, size_t a_offset, size_t a_ld, cl_mem b,
                        size_t b_offset, size_t b_ld, const void *beta, cl_mem c, size_t c_offset,
                        size_t c_ld, int f16, cl_command_queue *queue, cl_event *event,
                        cl_mem temp);

#ifdef __cplusplus
}
#endif

#endif
