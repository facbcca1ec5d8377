// SPDX-License-Identifier: Apache-2.0
// Ceres Solver as bench-solve's CPU peer (ceres-peer.h).
#include "ceres-peer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <ceres/ceres.h>
#include <ceres/version.h>

namespace
{

// Calls body(begin, end) on `threads` threads, over chunks of `chunk` items taken in turn.
template <class Body> void parallel(size_t n, int threads, size_t chunk, const Body &body)
{
    std::atomic<size_t> next{0};
    auto worker = [&] {
        for (size_t b; (b = next.fetch_add(chunk)) < n;)
            body(b, std::min(n, b + chunk));
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; t++)
        pool.emplace_back(worker);
    worker();
    for (auto &t : pool)
        t.join();
}

// The instance's data are reached through a pointer that kpc_rat43 moves: one cost function per
// thread evaluates every instance.
struct Rat43 {
    const double *yx = nullptr;
    template <class T> bool operator()(const T *b, T *r) const
    {
        r[0] = b[0] / pow(1.0 + exp(b[1] - b[2] * yx[1]), 1.0 / b[3]) - yx[0];
        return true;
    }
};

struct Edge {
    double L = 0;
    template <class T> bool operator()(const T *a, const T *b, T *r) const
    {
        const T d0 = b[0] - a[0], d1 = b[1] - a[1], d2 = b[2] - a[2];
        r[0] = sqrt(d0 * d0 + d1 * d1 + d2 * d2) - L;
        return true;
    }
};

// mesh-problem.h's two residuals per edge.
struct MeshEdge {
    double L, w;
    template <class T> bool operator()(const T *a, const T *b, T *r) const
    {
        const T d0 = b[0] - a[0], d1 = b[1] - a[1], d2 = b[2] - a[2];
        r[0] = sqrt(d0 * d0 + d1 * d1 + d2 * d2) - L;
        r[1] = w * (sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]) -
                    sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]));
        return true;
    }
};

enum { GAUSS_POINTS = 25 };

struct Gauss2D {
    const double *uvz; // [25, 3]
    template <class T> bool operator()(const T *p, T *r) const
    {
        for (int k = 0; k < GAUSS_POINTS; k++) {
            const double *d = uvz + 3 * k;
            const T du = d[0] - p[1], dv = d[1] - p[2];
            r[k] = p[0] * exp(-(du * du + dv * dv) / (2.0 * p[3] * p[3])) + p[4] - d[2];
        }
        return true;
    }
};

double now()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

} // namespace

extern "C" const char *kpc_version(void)
{
    static const std::string v = std::string("Ceres ") + CERES_VERSION_STRING;
    return v.c_str();
}

extern "C" void kpc_rat43(size_t n, const double *data, const double *b, double *r, double *J,
                          int threads)
{
    parallel(n, threads, 4096, [&](size_t lo, size_t hi) {
        auto *f = new Rat43;
        ceres::AutoDiffCostFunction<Rat43, 1, 4> cost(f);
        const double *params[] = {b};
        for (size_t i = lo; i < hi; i++) {
            f->yx = data + 2 * i;
            double *jac[] = {J + 4 * i};
            cost.Evaluate(params, r + i, jac);
        }
    });
}

extern "C" void kpc_edges(size_t n, const double *L, const double *x, const int32_t *index,
                          double *r, double *J, int threads)
{
    parallel(n, threads, 4096, [&](size_t lo, size_t hi) {
        auto *f = new Edge;
        ceres::AutoDiffCostFunction<Edge, 1, 3, 3> cost(f);
        for (size_t k = lo; k < hi; k++) {
            f->L = L[k];
            const double *params[] = {x + index[6 * k], x + index[6 * k + 3]};
            double *jac[] = {J + 6 * k, J + 6 * k + 3};
            cost.Evaluate(params, r + k, jac);
        }
    });
}

extern "C" int kpc_gauss2d(size_t B, const int32_t *rows, const double *data, double *x,
                           int *converged, int max_iterations, int threads)
{
    for (size_t p = 0; p < B; p++)
        if (rows[p + 1] - rows[p] != GAUSS_POINTS)
            return -1;
    ceres::Solver::Options o;
    o.linear_solver_type = ceres::DENSE_QR;
    o.max_num_iterations = max_iterations;
    o.num_threads = 1;
    o.logging_type = ceres::SILENT;
    parallel(B, threads, 64, [&](size_t lo, size_t hi) {
        for (size_t p = lo; p < hi; p++) {
            ceres::Problem problem;
            problem.AddResidualBlock(new ceres::AutoDiffCostFunction<Gauss2D, GAUSS_POINTS, 5>(
                                         new Gauss2D{data + 3 * (size_t)rows[p]}),
                                     nullptr, x + 5 * p);
            ceres::Solver::Summary s;
            ceres::Solve(o, &problem, &s);
            converged[p] = s.termination_type == ceres::CONVERGENCE;
        }
    });
    return 0;
}

extern "C" void kpc_mesh(size_t n, const double *data, const int32_t *index, size_t P, double *x,
                         int cgnr, int max_iterations, double max_seconds,
                         double function_tolerance, int threads, kpc_mesh_report *rep)
{
    (void)P;
    const double t0 = now();
    ceres::Problem problem;
    for (size_t k = 0; k < n; k++)
        problem.AddResidualBlock(new ceres::AutoDiffCostFunction<MeshEdge, 2, 3, 3>(
                                     new MeshEdge{data[2 * k], data[2 * k + 1]}),
                                 nullptr, x + index[6 * k], x + index[6 * k + 3]);
    ceres::Solver::Options o;
    o.linear_solver_type = cgnr ? ceres::CGNR : ceres::SPARSE_NORMAL_CHOLESKY;
    if (cgnr)
        o.preconditioner_type = ceres::JACOBI;
    o.max_num_iterations = max_iterations;
    o.max_solver_time_in_seconds = max_seconds;
    o.function_tolerance = function_tolerance;
    o.num_threads = threads;
    o.logging_type = ceres::SILENT;
    rep->setup_s = now() - t0;
    ceres::Solver::Summary s;
    ceres::Solve(o, &problem, &s);
    rep->iterations = (int)s.iterations.size() - 1;
    rep->successful = s.num_successful_steps;
    rep->converged = s.termination_type == ceres::CONVERGENCE;
    rep->linear_iterations = 0;
    for (const auto &it : s.iterations)
        rep->linear_iterations += it.linear_solver_iterations;
    rep->total_s = s.total_time_in_seconds;
    rep->minimizer_s = s.minimizer_time_in_seconds;
    rep->preprocessor_s = s.preprocessor_time_in_seconds;
    rep->initial_cost = s.initial_cost;
    rep->final_cost = s.final_cost;
    std::snprintf(rep->message, sizeof rep->message, "%s", s.message.c_str());
}
