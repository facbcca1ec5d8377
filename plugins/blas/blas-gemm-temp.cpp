/* SPDX-License-Identifier: Apache-2.0 */
// CLBlast's C++ GEMM entry points, which take a temporary buffer; see blas-gemm-temp.h.
#include <clblast.h>
#include <clblast_half.h>

#include "blas-gemm-temp.h"

namespace
{

clblast::Layout as_layout(int v)
{
    return static_cast<clblast::Layout>(v);
}

clblast::Transpose as_trans(int v)
{
    return static_cast<clblast::Transpose>(v);
}

template <typename T>
int gemm(int layout, int ta, int tb, size_t m, size_t n, size_t k, const void *alpha, cl_mem a,
         size_t ao, size_t lda, cl_mem b, size_t bo, size_t ldb, const void *beta, cl_mem c,
         size_t co, size_t ldc, cl_command_queue *queue, cl_event *event, cl_mem temp)
{
    return static_cast<int>(clblast::Gemm<T>(
        as_layout(layout), as_trans(ta), as_trans(tb), m, n, k, *static_cast<const T *>(alpha), a,
        ao, lda, b, bo, ldb, *static_cast<const T *>(beta), c, co, ldc, queue, event, temp));
}

} // namespace

// CLBlast catches its own exceptions and returns statuses; nothing here throws.
int blas_gemm_temp_bytes(int layout, int ta, int tb, size_t m, size_t n, size_t k, size_t ao,
                         size_t lda, size_t bo, size_t ldb, size_t co, size_t ldc, int f16,
                         cl_command_queue *queue, size_t *bytes)
{
    size_t size = 0;
    clblast::StatusCode st =
        f16 ? clblast::GemmTempBufferSize<half>(as_layout(layout), as_trans(ta), as_trans(tb), m, n,
                                                k, ao, lda, bo, ldb, co, ldc, queue, size)
            : clblast::GemmTempBufferSize<float>(as_layout(layout), as_trans(ta), as_trans(tb), m,
                                                 n, k, ao, lda, bo, ldb, co, ldc, queue, size);
    *bytes = size;
    return static_cast<int>(st);
}

int blas_gemm_with_temp(int layout, int ta, int tb, size_t m, size_t n, size_t k, const void *alpha,
                        cl_mem a, size_t ao, size_t lda, cl_mem b, size_t bo, size_t ldb,
                        const void *beta, cl_mem c, size_t co, size_t ldc, int f16,
                        cl_command_queue *queue, cl_event *event, cl_mem temp)
{
    return f16 ? gemm<half>(layout, ta, tb, m, n, k, alpha, a, ao, lda, b, bo, ldb, beta, c, co,
                            ldc, queue, event, temp)
               : gemm<float>(layout, ta, tb, m, n, k, alpha, a, ao, lda, b, bo, ldb, beta, c, co,
                             ldc, queue, event, temp);
}
