// SPDX-License-Identifier: Apache-2.0
/* The host reference of Levenberg-Marquardt in double (the algorithm solve/lm.cl runs per
 * work-group): normal equations, scaled damping, Nielsen's update, Ceres-style stopping. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "solve-internal.h"

enum { MAX_PARAMS = 32 };

kp_lm_options kp_lm_options_default(void)
{
    return (kp_lm_options){.struct_size = sizeof(kp_lm_options),
                           .max_iterations = 100,
                           .gradient_tolerance = 1e-10,
                           .step_tolerance = 1e-8,
                           .function_tolerance = 1e-6,
                           .initial_damping = 1e-4,
                           .min_diagonal = 1e-6,
                           .loss = KP_LOSS_SQUARED,
                           .loss_scale = 1.0};
}

const char *kp_lm_status_name(kp_lm_status s)
{
    static const char *const names[KP_LM_STATUS_COUNT] = {
        "gradient", "step", "function", "max-iterations", "singular", "non-finite"};
    return (unsigned)s < KP_LM_STATUS_COUNT ? names[s] : "unknown";
}

/* One problem's state: the normal equations at x and their right-hand side. */
typedef struct lm_state {
    const kp_expr_graph *g;
    const kp_lm_options *opt;
    const double *data; /* this problem's rows */
    int32_t m;          /* its instances */
    uint32_t S, O, D;
    double *scratch, *r, *J; /* the interpreter's scratch; one instance's outputs */
    double A[MAX_PARAMS * MAX_PARAMS], g_[MAX_PARAMS], diag[MAX_PARAMS];
} lm_state;

void kp__lm_loss(const kp_lm_options *opt, double s, double *rho, double *rho1)
{
    const double a = opt->loss_scale, a2 = a * a;
    switch (opt->loss) {
    case KP_LOSS_HUBER:
        if (s <= a2) {
            *rho = s, *rho1 = 1;
        } else {
            const double r = sqrt(s);
            *rho = 2 * a * r - a2, *rho1 = a / r;
        }
        break;
    case KP_LOSS_CAUCHY:
        *rho = a2 * log1p(s / a2), *rho1 = 1 / (1 + s / a2);
        break;
    default:
        *rho = s, *rho1 = 1;
    }
}

/* The cost at x and, when `normal`, J^T J and J^T r (both weighted by the loss), summed over
 * instances in order. Returns the cost (NaN or infinite when some residual is). */
static double evaluate(lm_state *st, const double *x, int normal)
{
    const uint32_t S = st->S, O = st->O;
    double cost = 0;
    if (normal) {
        memset(st->A, 0, sizeof st->A);
        memset(st->g_, 0, sizeof st->g_);
    }
    for (int32_t i = 0; i < st->m; i++) {
        kp__expr_eval(st->g, st->data + (size_t)i * st->D, x, st->r, normal ? st->J : NULL,
                      st->scratch);
        for (uint32_t o = 0; o < O; o++) {
            double rho, rho1;
            kp__lm_loss(st->opt, st->r[o] * st->r[o], &rho, &rho1);
            cost += rho;
            if (!normal)
                continue;
            const double w = sqrt(rho1), ro = w * st->r[o];
            const double *Jo = st->J + (size_t)o * S;
            for (uint32_t a = 0; a < S; a++) {
                st->g_[a] += w * Jo[a] * ro;
                for (uint32_t b = 0; b <= a; b++)
                    st->A[a * S + b] += (w * Jo[a]) * (w * Jo[b]);
            }
        }
    }
    /* A NaN or infinite derivative shows in the gradient; the cost carries it then, so that one
     * test catches both. */
    for (uint32_t a = 0; normal && a < S; a++)
        if (!isfinite(st->g_[a]))
            cost = NAN;
    return 0.5 * cost;
}

/* Cholesky of the S x S lower triangle of M in place; the failing column, or -1. */
static int cholesky(double *M, uint32_t S)
{
    for (uint32_t j = 0; j < S; j++) {
        double d = M[j * S + j];
        for (uint32_t k = 0; k < j; k++)
            d -= M[j * S + k] * M[j * S + k];
        if (!(d > 0) || !isfinite(d))
            return (int)j;
        d = sqrt(d);
        M[j * S + j] = d;
        for (uint32_t i = j + 1; i < S; i++) {
            double v = M[i * S + j];
            for (uint32_t k = 0; k < j; k++)
                v -= M[i * S + k] * M[j * S + k];
            M[i * S + j] = v / d;
        }
    }
    return -1;
}

/* Solves L L^T h = -g. */
static void solve(const double *L, const double *g, double *h, uint32_t S)
{
    for (uint32_t i = 0; i < S; i++) {
        double v = -g[i];
        for (uint32_t k = 0; k < i; k++)
            v -= L[i * S + k] * h[k];
        h[i] = v / L[i * S + i];
    }
    for (uint32_t i = S; i-- > 0;) {
        double v = h[i];
        for (uint32_t k = i + 1; k < S; k++)
            v -= L[k * S + i] * h[k];
        h[i] = v / L[i * S + i];
    }
}

static void scaling(lm_state *st)
{
    for (uint32_t j = 0; j < st->S; j++) {
        double d = st->A[j * st->S + j];
        st->diag[j] = d < st->opt->min_diagonal ? st->opt->min_diagonal : d > 1e32 ? 1e32 : d;
    }
}

/* Solves one problem from x; its status, iterations in *iters, cost in *cost_out. */
static kp_lm_status lm_one(lm_state *st, double *x, int32_t *iters, double *cost_out)
{
    const kp_lm_options *opt = st->opt;
    const uint32_t S = st->S;
    double M[MAX_PARAMS * MAX_PARAMS], h[MAX_PARAMS], xn[MAX_PARAMS];
    double cost = evaluate(st, x, 1);
    int32_t it = 1;
    kp_lm_status status = KP_LM_MAX_ITERATIONS;
    if (!isfinite(cost)) {
        *iters = it, *cost_out = cost;
        return KP_LM_NONFINITE;
    }
    scaling(st);
    /* The damping mu * diag(J^T J) is relative to each parameter's own curvature (Marquardt's
     * scaling), so mu starts at a plain number: Ceres's 1 / initial trust radius. */
    double mu = opt->initial_damping, nu = 2;
    for (;;) {
        double gmax = 0;
        for (uint32_t j = 0; j < S; j++)
            gmax = fabs(st->g_[j]) > gmax ? fabs(st->g_[j]) : gmax;
        if (gmax <= opt->gradient_tolerance) {
            status = KP_LM_GRADIENT;
            break;
        }
        if ((uint32_t)it >= opt->max_iterations)
            break;
        for (uint32_t a = 0; a < S; a++)
            for (uint32_t b = 0; b <= a; b++)
                M[a * S + b] = st->A[a * S + b] + (a == b ? mu * st->diag[a] : 0);
        if (cholesky(M, S) >= 0) {
            mu *= nu, nu *= 2;
            if (!(mu <= 1e32)) {
                status = KP_LM_SINGULAR;
                break;
            }
            continue;
        }
        solve(M, st->g_, h, S);
        double hn = 0, xn2 = 0, pred = 0;
        for (uint32_t j = 0; j < S; j++) {
            hn += h[j] * h[j], xn2 += x[j] * x[j];
            pred += h[j] * (mu * st->diag[j] * h[j] - st->g_[j]);
            xn[j] = x[j] + h[j];
        }
        if (sqrt(hn) <= opt->step_tolerance * (sqrt(xn2) + opt->step_tolerance)) {
            status = KP_LM_STEP;
            break;
        }
        /* The trial point's normal equations are kept only if the step is accepted. */
        double A[MAX_PARAMS * MAX_PARAMS], g[MAX_PARAMS];
        memcpy(A, st->A, sizeof A);
        memcpy(g, st->g_, sizeof g);
        const double cost_new = evaluate(st, xn, 1);
        it++;
        const double rho = (cost - cost_new) / (0.5 * pred);
        if (isfinite(cost_new) && pred > 0 && rho > 0) {
            memcpy(x, xn, S * sizeof *x);
            const double drop = cost - cost_new;
            cost = cost_new;
            scaling(st);
            if (drop <= opt->function_tolerance * (cost + drop)) {
                status = KP_LM_FUNCTION;
                break;
            }
            const double t = 2 * rho - 1;
            mu *= fmax(1.0 / 3, 1 - t * t * t);
            nu = 2;
        } else {
            memcpy(st->A, A, sizeof A);
            memcpy(st->g_, g, sizeof g);
            mu *= nu, nu *= 2;
        }
    }
    *iters = it, *cost_out = cost;
    return status;
}

/* The checks kp_lm_solve_host and kp_lm_solve share. */
kp_status kp__lm_check(const kp_expr_graph *g, const kp_lm_options *opt, const kp_lm_batch *b,
                       const char *fn)
{
    if (!g || !b || b->struct_size < sizeof *b)
        return kp__solve_fail(KP_ERR_INVALID_ARG, "%s: NULL graph or batch, or a bad struct_size",
                              fn);
    if (g->status != KP_OK || g->n_outputs == 0 || g->n_params == 0 || g->n_params > MAX_PARAMS)
        return kp__solve_fail(KP_ERR_INVALID_ARG,
                              "%s: the graph must be valid, with outputs and 1 to %d parameters "
                              "(it has %u)%s%s",
                              fn, MAX_PARAMS, g->n_params, g->status ? ": " : "", g->message);
    if (opt && opt->struct_size < sizeof *opt)
        return kp__solve_fail(KP_ERR_INVALID_ARG, "%s: options struct_size %u is too small", fn,
                              opt->struct_size);
    if (!b->rows || !b->x || (g->n_data && !b->data && b->n_problems))
        return kp__solve_fail(KP_ERR_INVALID_ARG, "%s: rows, x and data must not be NULL", fn);
    if (b->n_problems > INT32_MAX || b->rows[0] != 0)
        return kp__solve_fail(KP_ERR_INVALID_ARG, "%s: rows[0] must be 0 (it is %d)", fn,
                              b->rows[0]);
    for (size_t p = 0; p < b->n_problems; p++)
        if (b->rows[p + 1] < b->rows[p])
            return kp__solve_fail(KP_ERR_INVALID_ARG,
                                  "%s: rows must not decrease: rows[%zu] = %d < rows[%zu] = %d", fn,
                                  p + 1, b->rows[p + 1], p, b->rows[p]);
    return KP_OK;
}

kp_status kp_lm_summary(const kp_lm_batch *b, char *out, size_t size)
{
    if (!b || !b->status || !out || size == 0)
        return kp__solve_fail(KP_ERR_INVALID_ARG, "kp_lm_summary: NULL batch, status or out");
    size_t counts[KP_LM_STATUS_COUNT] = {0}, first[KP_LM_STATUS_COUNT];
    for (size_t p = b->n_problems; p-- > 0;)
        if ((unsigned)b->status[p] < KP_LM_STATUS_COUNT) {
            counts[b->status[p]]++;
            first[b->status[p]] = p;
        }
    size_t used = (size_t)snprintf(out, size, "%zu of %zu converged",
                                   counts[0] + counts[1] + counts[2], b->n_problems);
    static const char *const why[KP_LM_STATUS_COUNT] = {
        [KP_LM_MAX_ITERATIONS] = "not converged within max_iterations",
        [KP_LM_SINGULAR] = "the damped normal equations could not be factored (a parameter "
                           "without effect on the residuals, or wildly different scales)",
        [KP_LM_NONFINITE] = "a residual or derivative is NaN or infinite at the starting point"};
    for (int s = KP_LM_MAX_ITERATIONS; s < KP_LM_STATUS_COUNT && used < size; s++)
        if (counts[s])
            used +=
                (size_t)snprintf(out + used, size - used, "; %zu %s (first: problem %zu): %s",
                                 counts[s], kp_lm_status_name((kp_lm_status)s), first[s], why[s]);
    return KP_OK;
}

kp_status kp_lm_solve_host(const kp_expr_graph *g, const kp_lm_options *opt, kp_lm_batch *b)
{
    kp_status st = kp__lm_check(g, opt, b, "kp_lm_solve_host");
    if (st != KP_OK)
        return st;
    const kp_lm_options defaults = kp_lm_options_default();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int32_t top = 0;
    for (uint32_t o = 0; o < g->n_outputs; o++)
        top = g->outputs[o] > top ? g->outputs[o] : top;
    lm_state s = {
        .g = g, .opt = opt ? opt : &defaults, .S = g->n_params, .O = g->n_outputs, .D = g->n_data};
    s.scratch =
        malloc(((size_t)(top + 1) * (1 + s.S) + s.O * (1 + (size_t)s.S)) * sizeof *s.scratch);
    if (!s.scratch)
        return kp__solve_fail(KP_ERR_OUT_OF_MEMORY, "kp_lm_solve_host: out of host memory");
    s.r = s.scratch + (size_t)(top + 1) * (1 + s.S);
    s.J = s.r + s.O;
    for (size_t p = 0; p < b->n_problems; p++) {
        s.data = b->data ? b->data + (size_t)b->rows[p] * s.D : NULL;
        s.m = b->rows[p + 1] - b->rows[p];
        int32_t it;
        double cost;
        kp_lm_status ls = lm_one(&s, b->x + p * s.S, &it, &cost);
        if (b->cost)
            b->cost[p] = cost;
        if (b->iterations)
            b->iterations[p] = it;
        if (b->status)
            b->status[p] = ls;
    }
    free(s.scratch);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    b->seconds[0] = b->seconds[2] = 0;
    b->seconds[1] = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    return KP_OK;
}
