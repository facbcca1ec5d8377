// SPDX-License-Identifier: Apache-2.0
/* The host reference of Levenberg-Marquardt in double (the algorithm solve/lm.cl runs per
 * work-group): steps from a QR of J (MINPACK's way), scaled damping, Nielsen's update,
 * Ceres-style stopping. */
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

/* One problem's state at x: the triangular factor R of its weighted Jacobian (J = Q R), Q^T r,
 * J^T r and the diagonal of J^T J. */
typedef struct lm_state {
    const kp_expr_graph *g;
    const kp_lm_options *opt;
    const double *data; /* this problem's rows */
    int32_t m;          /* its instances */
    uint32_t S, O, D;
    double *scratch, *r, *J; /* the interpreter's scratch; one instance's outputs */
    double *a;               /* [m O, S + 1]: the weighted rows of J and r, factored in place */
    double R[MAX_PARAMS * MAX_PARAMS], qtr[MAX_PARAMS], g_[MAX_PARAMS], d[MAX_PARAMS];
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

void kp__lm_damping_accept(double rho, double *mu, double *nu)
{
    const double t = 2 * rho - 1;
    *mu *= fmax(1.0 / 3, 1 - t * t * t);
    *nu = 2;
}

int kp__lm_damping_refuse(double *mu, double *nu)
{
    *mu *= *nu;
    *nu *= 2;
    return !(*mu <= KP__LM_CEILING);
}

int kp__lm_unjudged(double cost, double cost_new, double pred, double tol)
{
    return pred > 0 && pred <= tol * cost && cost_new - cost <= tol * cost;
}

int kp__lm_contracts(double next, double step)
{
    return 4 * next <= step;
}

/* Householder QR of the rows [J | r] (n of them) in place: R and Q^T r's first S entries. Each
 * reflection's dot products run over the rows in order. Rows past n (fewer residuals than
 * parameters) leave zero rows of R. */
static void householder(double *a, size_t n, uint32_t S, double *R, double *qtr)
{
    const size_t w = S + 1;
    memset(R, 0, (size_t)S * S * sizeof *R);
    for (uint32_t k = 0; k < S; k++) {
        if (k >= n) {
            qtr[k] = 0;
            continue;
        }
        const double alpha = a[k * w + k];
        double sigma = 0;
        for (size_t i = k + 1; i < n; i++)
            sigma += a[i * w + k] * a[i * w + k];
        const double beta = sigma == 0 ? alpha : -copysign(sqrt(alpha * alpha + sigma), alpha);
        for (uint32_t j = k + 1; sigma != 0 && j <= S; j++) {
            double dj = 0;
            for (size_t i = k + 1; i < n; i++)
                dj += a[i * w + k] * a[i * w + j];
            const double f = ((alpha - beta) * a[k * w + j] + dj) / (beta * (beta - alpha));
            a[k * w + j] -= f * (alpha - beta);
            for (size_t i = k + 1; i < n; i++)
                a[i * w + j] -= f * a[i * w + k];
        }
        R[k * S + k] = beta;
        for (uint32_t j = k + 1; j < S; j++)
            R[k * S + j] = a[k * w + j];
        qtr[k] = a[k * w + S];
    }
}

/* The cost at x and, when `normal`, R and Q^T r of the weighted [J | r], J^T r and the diagonal
 * of J^T J (the last two summed over instances in order). Returns the cost (NaN or infinite when
 * some residual is). */
static double evaluate(lm_state *st, const double *x, int normal)
{
    const uint32_t S = st->S, O = st->O, w = S + 1;
    double cost = 0;
    for (int32_t i = 0; i < st->m; i++) {
        kp__expr_eval(st->g, st->data + (size_t)i * st->D, x, st->r, normal ? st->J : NULL,
                      st->scratch);
        for (uint32_t o = 0; o < O; o++) {
            double rho, rho1;
            kp__lm_loss(st->opt, st->r[o] * st->r[o], &rho, &rho1);
            cost += rho;
            if (!normal)
                continue;
            const double wt = sqrt(rho1);
            double *row = st->a + ((size_t)i * O + o) * w;
            for (uint32_t s = 0; s < S; s++)
                row[s] = wt * st->J[(size_t)o * S + s];
            row[S] = wt * st->r[o];
        }
    }
    if (!normal)
        return 0.5 * cost;
    const size_t n = (size_t)st->m * O;
    for (uint32_t j = 0; j < S; j++) {
        double gj = 0, dj = 0;
        for (size_t i = 0; i < n; i++) {
            gj += st->a[i * w + j] * st->a[i * w + S];
            dj += st->a[i * w + j] * st->a[i * w + j];
        }
        st->g_[j] = gj, st->d[j] = dj;
        /* A NaN or infinite derivative shows in the gradient; the cost carries it then, so that
         * one test catches both. */
        if (!isfinite(gj))
            cost = NAN;
    }
    if (isfinite(cost))
        householder(st->a, n, S, st->R, st->qtr);
    return 0.5 * cost;
}

/* The damped step: h minimizing |R h + Q^T r|^2 + mu |D^(1/2) h|^2, by Givens rotations that
 * fold the rows sqrt(mu D_j) e_j into a copy of R (MINPACK's qrsolv, without pivoting), so the
 * step is as accurate as J's conditioning allows rather than J^T J's. 0 when the damped system
 * is singular. */
static int damped_step(const lm_state *st, const double *D, double mu, double *h)
{
    const uint32_t S = st->S;
    double W[MAX_PARAMS * MAX_PARAMS], z[MAX_PARAMS], row[MAX_PARAMS];
    memcpy(W, st->R, (size_t)S * S * sizeof *W);
    memcpy(z, st->qtr, S * sizeof *z);
    for (uint32_t j = 0; j < S; j++) {
        const double s = sqrt(mu * D[j]);
        if (s == 0)
            continue;
        memset(row, 0, S * sizeof *row);
        row[j] = s;
        double zr = 0;
        for (uint32_t k = j; k < S; k++) {
            if (row[k] == 0)
                continue;
            double c, sn;
            if (fabs(W[k * S + k]) < fabs(row[k])) {
                const double t = W[k * S + k] / row[k];
                sn = 1 / sqrt(1 + t * t), c = sn * t;
            } else {
                const double t = row[k] / W[k * S + k];
                c = 1 / sqrt(1 + t * t), sn = c * t;
            }
            W[k * S + k] = c * W[k * S + k] + sn * row[k];
            const double zk = c * z[k] + sn * zr;
            zr = c * zr - sn * z[k];
            z[k] = zk;
            for (uint32_t i = k + 1; i < S; i++) {
                const double wi = c * W[k * S + i] + sn * row[i];
                row[i] = c * row[i] - sn * W[k * S + i];
                W[k * S + i] = wi;
            }
        }
    }
    for (uint32_t i = S; i-- > 0;) {
        if (!(W[i * S + i] != 0) || !isfinite(W[i * S + i]))
            return 0;
        double v = -z[i];
        for (uint32_t k = i + 1; k < S; k++)
            v -= W[i * S + k] * h[k];
        h[i] = v / W[i * S + i];
    }
    for (uint32_t i = 0; i < S; i++)
        if (!isfinite(h[i]))
            return 0;
    return 1;
}

static void scaling(const lm_state *st, double *D)
{
    for (uint32_t j = 0; j < st->S; j++) {
        const double d = st->d[j];
        D[j] = d < st->opt->min_diagonal ? st->opt->min_diagonal
               : d > KP__LM_CEILING      ? KP__LM_CEILING
                                         : d;
    }
}

/* Whether a step the ratio test refused is taken anyway (solve-internal.h's kp__lm_unjudged and
 * kp__lm_contracts say why): the next step from the trial point, with its factors, is computed
 * with the same damping. pred is twice the model's drop. */
static int settled(const lm_state *trial, const double *D, const double *h, double mu, double cost,
                   double cost_new, double pred)
{
    if (!kp__lm_unjudged(cost, cost_new, 0.5 * pred, KP__LM_UNJUDGED_F64))
        return 0;
    double Dn[MAX_PARAMS], hn[MAX_PARAMS], a = 0, b = 0;
    scaling(trial, Dn);
    if (!damped_step(trial, Dn, mu, hn))
        return 0;
    for (uint32_t j = 0; j < trial->S; j++) {
        a += Dn[j] * hn[j] * hn[j];
        b += D[j] * h[j] * h[j];
    }
    return kp__lm_contracts(a, b);
}

/* Solves one problem from x; its status, iterations in *iters, cost in *cost_out. */
static kp_lm_status lm_one(lm_state *st, double *x, int32_t *iters, double *cost_out)
{
    const kp_lm_options *opt = st->opt;
    const uint32_t S = st->S;
    double D[MAX_PARAMS], h[MAX_PARAMS], xn[MAX_PARAMS];
    double cost = evaluate(st, x, 1);
    int32_t it = 1;
    kp_lm_status status = KP_LM_MAX_ITERATIONS;
    if (!isfinite(cost)) {
        *iters = it, *cost_out = cost;
        return KP_LM_NONFINITE;
    }
    scaling(st, D);
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
        if (!damped_step(st, D, mu, h)) {
            if (kp__lm_damping_refuse(&mu, &nu)) {
                status = KP_LM_SINGULAR;
                break;
            }
            continue;
        }
        /* The model's reduction |J h|^2 + 2 mu h^T D h (twice the predicted drop in cost), a sum
         * of squares: no cancellation however small the step. */
        double hn = 0, xn2 = 0, pred = 0;
        for (uint32_t i = 0; i < S; i++) {
            double rh = 0;
            for (uint32_t k = i; k < S; k++)
                rh += st->R[i * S + k] * h[k];
            pred += rh * rh + 2 * mu * D[i] * h[i] * h[i];
            hn += h[i] * h[i], xn2 += x[i] * x[i];
            xn[i] = x[i] + h[i];
        }
        if (sqrt(hn) <= opt->step_tolerance * (sqrt(xn2) + opt->step_tolerance)) {
            status = KP_LM_STEP;
            break;
        }
        /* The trial point's factorization is kept only if the step is accepted. */
        double R[MAX_PARAMS * MAX_PARAMS], qtr[MAX_PARAMS], g[MAX_PARAMS], d[MAX_PARAMS];
        memcpy(R, st->R, sizeof R);
        memcpy(qtr, st->qtr, sizeof qtr);
        memcpy(g, st->g_, sizeof g);
        memcpy(d, st->d, sizeof d);
        const double cost_new = evaluate(st, xn, 1);
        it++;
        const double rho = (cost - cost_new) / (0.5 * pred);
        const int better = isfinite(cost_new) && pred > 0 && rho > 0;
        if (better || (isfinite(cost_new) && settled(st, D, h, mu, cost, cost_new, pred))) {
            memcpy(x, xn, S * sizeof *x);
            const double drop = cost - cost_new;
            cost = cost_new;
            scaling(st, D);
            if (better && drop <= opt->function_tolerance * (cost + drop)) {
                status = KP_LM_FUNCTION;
                break;
            }
            if (better)
                kp__lm_damping_accept(rho, &mu, &nu);
        } else {
            memcpy(st->R, R, sizeof R);
            memcpy(st->qtr, qtr, sizeof qtr);
            memcpy(st->g_, g, sizeof g);
            memcpy(st->d, d, sizeof d);
            kp__lm_damping_refuse(&mu, &nu);
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

static kp_status write_summary(const kp_lm_batch *b, char *out, size_t size)
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
        [KP_LM_SINGULAR] = "the damped system stayed singular (a parameter "
                           "without effect on the residuals, or wildly different scales)",
        [KP_LM_NONFINITE] = "a residual or derivative is NaN or infinite at the starting point"};
    for (int s = KP_LM_MAX_ITERATIONS; s < KP_LM_STATUS_COUNT && used < size; s++)
        if (counts[s])
            used +=
                (size_t)snprintf(out + used, size - used, "; %zu %s (first: problem %zu): %s",
                                 counts[s], kp_lm_status_name((kp_lm_status)s), first[s], why[s]);
    return KP_OK;
}

kp_status kp_lm_summary(const kp_lm_batch *b, char *out, size_t size)
{
    return kp__solve_report(NULL, write_summary(b, out, size));
}

static kp_status solve_host(const kp_expr_graph *g, const kp_lm_options *opt, kp_lm_batch *b)
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
    int32_t most = 0;
    for (size_t p = 0; p < b->n_problems; p++)
        most = b->rows[p + 1] - b->rows[p] > most ? b->rows[p + 1] - b->rows[p] : most;
    s.a = malloc(((size_t)most * s.O * (s.S + 1) + 1) * sizeof *s.a);
    if (!s.a) {
        free(s.scratch);
        return kp__solve_fail(KP_ERR_OUT_OF_MEMORY, "kp_lm_solve_host: out of host memory");
    }
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
    free(s.a);
    free(s.scratch);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    b->seconds[0] = b->seconds[2] = 0;
    b->seconds[1] = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    return KP_OK;
}

kp_status kp_lm_solve_host(const kp_expr_graph *g, const kp_lm_options *opt, kp_lm_batch *b)
{
    return kp__solve_report(NULL, solve_host(g, opt, b));
}
