// SPDX-License-Identifier: Apache-2.0
/* The dense path of the large-problem LM, for problems of few parameters: J^T J gathered row by
 * row through the transposed index, and the damped system J^T J + mu D factored by Cholesky. The
 * host reference and the device driver both step through here (the device assembles the rows
 * with solve/sparse.cl's sp_jtj, which sums in this order). */
#include <math.h>
#include <string.h>

#include "solve-internal.h"

int kp__lm_dense(const kp_lm_sparse_options *o, size_t P)
{
    return o->dense_max_parameters > 0 && P <= o->dense_max_parameters;
}

void kp__lm_jtj_row(const double *J, const int32_t *index, const int32_t *tptr, const int32_t *tent,
                    size_t n, size_t O, size_t S, size_t lo, size_t hi, size_t p, double *row)
{
    memset(row, 0, (hi - lo) * sizeof *row);
    for (int32_t e = tptr[p]; e < tptr[p + 1]; e++) {
        const size_t i = (size_t)tent[e] / S, s1 = (size_t)tent[e] % S;
        if (i >= n)
            continue;
        for (size_t s2 = 0; s2 < S; s2++) {
            const size_t q2 = (size_t)index[i * S + s2];
            if (q2 < lo || q2 >= hi)
                continue;
            double t = 0;
            for (size_t o = 0; o < O; o++)
                t += J[(i * O + o) * S + s1] * J[(i * O + o) * S + s2];
            row[q2 - lo] += t;
        }
    }
}

int kp__lm_cholesky(const double *A, size_t lda, const double *D, double mu, size_t n, double *L)
{
    for (size_t j = 0; j < n; j++) {
        double v = A[j * lda + j] + mu * D[j];
        for (size_t t = 0; t < j; t++)
            v -= L[j * lda + t] * L[j * lda + t];
        if (!(v > 0) || !isfinite(v))
            return 0;
        v = sqrt(v);
        L[j * lda + j] = v;
        for (size_t i = j + 1; i < n; i++) {
            double w = A[i * lda + j];
            for (size_t t = 0; t < j; t++)
                w -= L[i * lda + t] * L[j * lda + t];
            L[i * lda + j] = w / v;
        }
    }
    return 1;
}

void kp__lm_cholesky_solve(const double *L, size_t lda, size_t n, const double *r, double *z)
{
    for (size_t i = 0; i < n; i++) {
        double v = r[i];
        for (size_t t = 0; t < i; t++)
            v -= L[i * lda + t] * z[t];
        z[i] = v / L[i * lda + i];
    }
    for (size_t i = n; i-- > 0;) {
        double v = z[i];
        for (size_t t = i + 1; t < n; t++)
            v -= L[t * lda + i] * z[t];
        z[i] = v / L[i * lda + i];
    }
}

int kp__lm_dense_step(const double *A, const double *D, const double *g, double mu, size_t P,
                      double *L, double *h)
{
    if (!kp__lm_cholesky(A, P, D, mu, P, L))
        return 0;
    for (size_t q = 0; q < P; q++)
        h[q] = -g[q];
    kp__lm_cholesky_solve(L, P, P, h, h);
    int finite = 1;
    for (size_t q = 0; q < P; q++)
        finite &= isfinite(h[q]) != 0;
    return finite; /* a step that overflowed is no step: the caller raises the damping */
}
