/* SPDX-License-Identifier: Apache-2.0 */
/* Ceres Solver as bench-solve's CPU peer (#27), in the same process and on the same arrays:
 * AutoDiffCostFunction's residual + Jacobian evaluation, one small problem per 2D Gaussian fit
 * (DENSE_QR), and the mesh problem with SPARSE_NORMAL_CHOLESKY or CGNR. Compiled (C++) only when
 * CMake finds Ceres and KP_WITH_CERES is on (KP_HAVE_CERES). Every function spreads its work over
 * `threads` threads. */
#ifndef KP_BENCH_CERES_PEER_H
#define KP_BENCH_CERES_PEER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "Ceres 2.1.0": the version compiled against. */
const char *kpc_version(void);

/* Rat43, b1 / (1 + exp(b2 - b3 x))^(1/b4) - y, for n instances (data [n, 2]: y, x) at b[4]:
 * r [n] and J [n, 4], one AutoDiffCostFunction per thread whose functor is pointed at each
 * instance's data in turn (Evaluate's cost, not the cost functions' construction). */
void kpc_rat43(size_t n, const double *data, const double *b, double *r, double *J, int threads);

/* The edge term |b - a| - L for n edges: vertex a's coordinates are x[index[6k] .. + 2], b's
 * x[index[6k + 3] .. + 2] (consecutive, as a parameter block of 3 needs); r [n], J [n, 6]. */
void kpc_edges(size_t n, const double *L, const double *x, const int32_t *index, double *r,
               double *J, int threads);

/* B fits of a exp(-((u - x0)^2 + (v - y0)^2) / (2 s^2)) + c - z, 25 points each (fit p's rows
 * rows[p] .. rows[p + 1] - 1 of data [., 3]: u, v, z), each its own ceres::Problem solved with
 * DENSE_QR, Ceres's default tolerances, at most max_iterations iterations, one thread per problem,
 * the fits spread over the threads. x [B, 5]: starts in, estimates out; converged[p]: 1 where
 * Ceres reported CONVERGENCE. Returns 0, or -1 when a fit has other than 25 points. */
int kpc_gauss2d(size_t B, const int32_t *rows, const double *data, double *x, int *converged,
                int max_iterations, int threads);

typedef struct kpc_mesh_report {
    int iterations;        /* Ceres's, successful or not, without iteration 0 */
    int successful;        /* accepted steps */
    int converged;         /* termination CONVERGENCE */
    int linear_iterations; /* CG iterations in all (CGNR), or 0 */
    double setup_s;        /* building the ceres::Problem (not in total_s) */
    double total_s;        /* Solver::Solve */
    double minimizer_s, preprocessor_s;
    double initial_cost, final_cost;
    char message[160]; /* Ceres's termination message */
} kpc_mesh_report;

/* The mesh problem (mesh-problem.h): n edges, data [n, 2] (L, w), index as kpc_edges', x [P]
 * in and out; Levenberg-Marquardt with SPARSE_NORMAL_CHOLESKY (cgnr 0) or CGNR with the Jacobi
 * preconditioner (cgnr 1), at most max_iterations iterations and max_seconds of Solve, function
 * tolerance as given (the rest Ceres's defaults). */
void kpc_mesh(size_t n, const double *data, const int32_t *index, size_t P, double *x, int cgnr,
              int max_iterations, double max_seconds, double function_tolerance, int threads,
              kpc_mesh_report *rep);

#ifdef __cplusplus
}
#endif

#endif
