/* SPDX-License-Identifier: Apache-2.0 */
/* One of the blas plugin's C++ functions (blas-gemm-temp.h has the others), declared for C and
 * C++ alike (no Kernelport headers). */
#ifndef KP_BLAS_RETRIEVE_H
#define KP_BLAS_RETRIEVE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Reads CLBlast's current parameters of `kernel` for a device (a cl_device_id) and precision
 * (16, 32) into values[i] for names[i]. Returns CLBlast's status (0 on success), or
 * BLAS_RETRIEVE_MISMATCH when CLBlast's parameter names differ from `names` (why says how). */
#define BLAS_RETRIEVE_MISMATCH (-100000)
int blas_retrieve_parameters(void *device, const char *kernel, int precision, size_t n,
                             const char *const *names, size_t *values, char *why, size_t why_size);

#ifdef __cplusplus
}
#endif

#endif
