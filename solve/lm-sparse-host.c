// SPDX-License-Identifier: Apache-2.0
/* The host reference of Levenberg-Marquardt on one large sparse problem: the normal equations
 * solved matrix-free by Jacobi-preconditioned conjugate gradients, J^T gathered per parameter
 * through the transposed index in a fixed order; small problems by dense Cholesky (lm-dense.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "solve-internal.h"

kp_lm_sparse_options kp_lm_sparse_options_default(void)
{
    return (kp_lm_sparse_options){.struct_size = sizeof(kp_lm_sparse_options),
                                  .cg_tolerance = 1e-3,
                                  .block_size = 1,
                                  .dense_max_parameters = 256};
}

uint32_t kp__lm_max_cg(const kp_lm_sparse_options *o, size_t P)
{
    if (o->max_cg_iterations > 0)
        return o->max_cg_iterations;
    const double cap = ceil(4 * sqrt((double)P));
    return cap < 100 ? 100 : cap > 1e6 ? 1000000 : (uint32_t)cap;
}

kp_lm_options kp__lm_sparse_lm(const kp_lm_sparse_options *opt)
{
    return opt && opt->lm ? *opt->lm : kp_lm_options_default();
}

/* The problem's state: the weighted residuals and Jacobian at x (cur) and at the trial point. */
typedef struct sparse {
    const kp_expr_graph *g;
    const kp_lm_sparse_options *opt;
    kp_lm_options lm_opt; /* opt->lm's, or the defaults */
    const kp_lm_sparse_problem *pb;
    size_t n, P;
    uint32_t S, O, D;
    int32_t *tptr, *tent; /* parameter q's uses: tent[tptr[q] .. tptr[q+1]-1] = i * S + s */
    double *wr[2], *wJ[2];
    int cur;
    double *scratch, *r1, *J1; /* the interpreter's, and one instance's outputs */
    double *g_, *d, *D_, *h, *res, *z, *p, *q, *xt, *u;
    size_t bs;      /* the preconditioner's block size (1: Jacobi) */
    double *blocks; /* [ceil(P / bs), bs, bs]: the diagonal blocks of J^T J */
    int dense;      /* the dense path: A = J^T J [P, P] and its factor's scratch L */
    double *A, *L;
    double seconds[4];
    double cg_residual; /* where the last CG stopped: |res| / |g| */
} sparse;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Weighted residuals and Jacobian at x into set k; the cost. */
static double evaluate(sparse *sp, const double *x, int k)
{
    const double t0 = now();
    const uint32_t S = sp->S, O = sp->O;
    double cost = 0, p[KP_EXPR_MAX_SLOTS];
    for (size_t i = 0; i < sp->n; i++) {
        for (uint32_t s = 0; s < S; s++)
            p[s] = x[sp->pb->index[i * S + s]];
        kp__expr_eval(sp->g, sp->pb->data ? sp->pb->data + i * sp->D : NULL, p, sp->r1, sp->J1,
                      sp->scratch);
        for (uint32_t o = 0; o < O; o++) {
            double rho, rho1;
            kp__lm_loss(&sp->lm_opt, sp->r1[o] * sp->r1[o], &rho, &rho1);
            cost += rho;
            const double w = sqrt(rho1);
            sp->wr[k][i * O + o] = w * sp->r1[o];
            for (uint32_t s = 0; s < S; s++)
                sp->wJ[k][(i * O + o) * S + s] = w * sp->J1[o * S + s];
        }
    }
    sp->seconds[0] += now() - t0;
    return 0.5 * cost;
}

/* u = J v (per instance and output), J at the current point. */
static void jv(const sparse *sp, const double *v, double *u)
{
    const uint32_t S = sp->S, O = sp->O;
    const double *J = sp->wJ[sp->cur];
    for (size_t i = 0; i < sp->n; i++)
        for (uint32_t o = 0; o < O; o++) {
            double t = 0;
            for (uint32_t s = 0; s < S; s++)
                t += J[(i * O + o) * S + s] * v[sp->pb->index[i * S + s]];
            u[i * O + o] = t;
        }
}

/* out = J^T u, or with u NULL the diagonal of J^T J; per parameter over its uses in order; J of
 * set k. */
static void jtu_of(const sparse *sp, int k, const double *u, double *out)
{
    const uint32_t S = sp->S, O = sp->O;
    const double *J = sp->wJ[k];
    for (size_t q = 0; q < sp->P; q++) {
        double t = 0;
        for (int32_t e = sp->tptr[q]; e < sp->tptr[q + 1]; e++) {
            const size_t i = (size_t)sp->tent[e] / S, s = (size_t)sp->tent[e] % S;
            for (uint32_t o = 0; o < O; o++) {
                const double j = J[(i * O + o) * S + s];
                t += j * (u ? u[i * O + o] : j);
            }
        }
        out[q] = t;
    }
}

static void jtu(const sparse *sp, const double *u, double *out)
{
    jtu_of(sp, sp->cur, u, out);
}

static double dot(const double *a, const double *b, size_t n)
{
    double t = 0;
    for (size_t i = 0; i < n; i++)
        t += a[i] * b[i];
    return t;
}

void kp__lm_block(const double *J, const int32_t *index, const int32_t *tptr, const int32_t *tent,
                  size_t n, size_t O, size_t S, size_t P, size_t bs, size_t k, double *B)
{
    const size_t q0 = k * bs, q1 = q0 + bs < P ? q0 + bs : P;
    memset(B, 0, bs * bs * sizeof *B);
    for (size_t q = q0; q < q1; q++)
        kp__lm_jtj_row(J, index, tptr, tent, n, O, S, q0, q1, q, B + (q - q0) * bs);
}

void kp__lm_block_solve(const double *B, const double *D, const double *r, double mu, size_t b,
                        size_t bs, double *z)
{
    double L[64];
    if (kp__lm_cholesky(B, bs, D, mu, b, L)) {
        kp__lm_cholesky_solve(L, bs, b, r, z);
        return;
    }
    for (size_t i = 0; i < b; i++) { /* the block's diagonal, as Jacobi takes it */
        const double m = B[i * bs + i] + mu * D[i];
        z[i] = m > 0 ? r[i] / m : r[i];
    }
}

/* z = M^-1 r: the diagonal (Jacobi), or the blocks. */
static void precondition(const sparse *sp, double mu, const double *r, double *z)
{
    const size_t P = sp->P, bs = sp->bs;
    if (bs <= 1) {
        for (size_t q = 0; q < P; q++) {
            const double m = sp->d[q] + mu * sp->D_[q];
            z[q] = m > 0 ? r[q] / m : r[q];
        }
        return;
    }
    for (size_t q0 = 0; q0 < P; q0 += bs)
        kp__lm_block_solve(sp->blocks + q0 * bs, sp->D_ + q0, r + q0, mu, q0 + bs < P ? bs : P - q0,
                           bs, z + q0);
}

/* J^T r and the scaling at the current point; 0 when the gradient is not finite (a NaN or
 * infinite derivative shows there). */
static int normal(sparse *sp)
{
    const double t0 = now();
    jtu(sp, sp->wr[sp->cur], sp->g_);
    int finite = 1;
    for (size_t q = 0; q < sp->P; q++)
        finite &= isfinite(sp->g_[q]) != 0;
    jtu(sp, NULL, sp->d);
    for (size_t q = 0; q < sp->P; q++) {
        const double v = sp->d[q], lo = sp->lm_opt.min_diagonal;
        sp->D_[q] = v < lo ? lo : v > KP__LM_CEILING ? KP__LM_CEILING : v;
    }
    for (size_t q = 0; sp->dense && q < sp->P; q++)
        kp__lm_jtj_row(sp->wJ[sp->cur], sp->pb->index, sp->tptr, sp->tent, sp->n, sp->O, sp->S, 0,
                       sp->P, q, sp->A + q * sp->P);
    for (size_t k = 0; sp->bs > 1 && k * sp->bs < sp->P; k++)
        kp__lm_block(sp->wJ[sp->cur], sp->pb->index, sp->tptr, sp->tent, sp->n, sp->O, sp->S, sp->P,
                     sp->bs, k, sp->blocks + k * sp->bs * sp->bs);
    sp->seconds[1] += now() - t0;
    return finite;
}

/* Preconditioned CG on (J^T J + mu D) h = -g from h = 0, to cg_tolerance |g| or max_cg
 * iterations. Returns the iterations, or -1 when it broke down before taking a step. */
static int cg(sparse *sp, double mu, uint32_t max_cg)
{
    const double t0 = now();
    const size_t P = sp->P;
    const double gnorm = sqrt(dot(sp->g_, sp->g_, P));
    double rz = 0;
    for (size_t q = 0; q < P; q++) {
        sp->h[q] = 0;
        sp->res[q] = -sp->g_[q];
    }
    precondition(sp, mu, sp->res, sp->z);
    for (size_t q = 0; q < P; q++) {
        sp->p[q] = sp->z[q];
        rz += sp->res[q] * sp->z[q];
    }
    int k = 0;
    sp->cg_residual = 1;
    while (k < (int)max_cg) {
        jv(sp, sp->p, sp->u);
        jtu(sp, sp->u, sp->q);
        for (size_t q = 0; q < P; q++)
            sp->q[q] += mu * sp->D_[q] * sp->p[q];
        const double pq = dot(sp->p, sp->q, P);
        if (!(pq > 0) || !isfinite(pq)) {
            if (k == 0)
                k = -1;
            break;
        }
        const double alpha = rz / pq;
        for (size_t q = 0; q < P; q++) {
            sp->h[q] += alpha * sp->p[q];
            sp->res[q] -= alpha * sp->q[q];
        }
        k++;
        sp->cg_residual = sqrt(dot(sp->res, sp->res, P)) / gnorm;
        if (sp->cg_residual <= sp->opt->cg_tolerance)
            break;
        precondition(sp, mu, sp->res, sp->z);
        const double rz_new = dot(sp->res, sp->z, P);
        const double beta = rz_new / rz;
        rz = rz_new;
        for (size_t q = 0; q < P; q++)
            sp->p[q] = sp->z[q] + beta * sp->p[q];
    }
    sp->seconds[2] += now() - t0;
    return k;
}

/* sum D h^2, D at the current point. */
static double dnorm(const sparse *sp, const double *h)
{
    double t = 0;
    for (size_t q = 0; q < sp->P; q++)
        t += sp->D_[q] * h[q] * h[q];
    return t;
}

/* The step h: by CG, or on the dense path by Cholesky, refined against the matrix-free operator
 * (0 iterations). Returns CG's iterations, or -1 when the system broke down or did not factor. */
static int linear_solve(sparse *sp, double mu, uint32_t max_cg)
{
    if (!sp->dense)
        return cg(sp, mu, max_cg);
    const double t0 = now();
    const size_t P = sp->P;
    const int ok = kp__lm_dense_step(sp->A, sp->D_, sp->g_, mu, P, sp->L, sp->h);
    const double gnorm = sqrt(dot(sp->g_, sp->g_, P));
    for (int pass = 0; ok; pass++) {
        jv(sp, sp->h, sp->u);
        jtu(sp, sp->u, sp->res);
        for (size_t q = 0; q < P; q++)
            sp->res[q] = -(sp->res[q] + mu * sp->D_[q] * sp->h[q] + sp->g_[q]);
        sp->cg_residual = sqrt(dot(sp->res, sp->res, P)) / gnorm;
        if (sp->cg_residual <= sp->opt->cg_tolerance || pass == KP__LM_DENSE_PASSES)
            break;
        kp__lm_cholesky_solve(sp->L, P, P, sp->res, sp->z);
        for (size_t q = 0; q < P; q++)
            sp->h[q] += sp->z[q];
    }
    sp->seconds[2] += now() - t0;
    return ok ? 0 : -1;
}

kp_status kp__lm_sparse_check(const kp_expr_graph *g, const kp_lm_sparse_options *opt,
                              const kp_lm_sparse_problem *pb, const kp_lm_sparse_report *rep,
                              const char *fn)
{
    if (!g || !pb || !rep || pb->struct_size < sizeof *pb || rep->struct_size < sizeof *rep ||
        (opt && opt->struct_size < sizeof *opt))
        return kp__solve_fail(KP_ERR_INVALID_ARG,
                              "%s: NULL graph, problem or report, or a bad struct_size", fn);
    if (g->status != KP_OK || g->n_outputs == 0 || g->n_params == 0)
        return kp__solve_fail(KP_ERR_INVALID_ARG,
                              "%s: the graph must be valid, with outputs and parameters%s%s", fn,
                              g->status ? ": " : "", g->message);
    if (opt && opt->lm && opt->lm->struct_size < sizeof *opt->lm)
        return kp__solve_fail(KP_ERR_INVALID_ARG,
                              "%s: options.lm: struct_size %u is too small (set it to "
                              "sizeof(kp_lm_options), or start from kp_lm_options_default)",
                              fn, opt->lm->struct_size);
    if (opt && opt->block_size > 8)
        return kp__solve_fail(KP_ERR_INVALID_ARG, "%s: block_size %u (at most 8)", fn,
                              opt->block_size);
    if (opt && opt->dense_max_parameters > KP__LM_DENSE_MAX)
        return kp__solve_fail(KP_ERR_INVALID_ARG,
                              "%s: dense_max_parameters %u (at most %d: the dense path holds "
                              "P x P matrices)",
                              fn, opt->dense_max_parameters, KP__LM_DENSE_MAX);
    if (!pb->x || (pb->n_instances && !pb->index) || (pb->n_instances && g->n_data && !pb->data))
        return kp__solve_fail(KP_ERR_INVALID_ARG, "%s: x, index and data must not be NULL", fn);
    if (pb->n_x > INT32_MAX || pb->n_instances > INT32_MAX / KP_EXPR_MAX_SLOTS)
        return kp__solve_fail(KP_ERR_INVALID_ARG,
                              "%s: %zu parameters and %zu instances (at most "
                              "%d and %d)",
                              fn, pb->n_x, pb->n_instances, INT32_MAX,
                              INT32_MAX / KP_EXPR_MAX_SLOTS);
    for (size_t i = 0; i < pb->n_instances; i++)
        for (uint32_t s = 0; s < g->n_params; s++) {
            const int32_t q = pb->index[i * g->n_params + s];
            if (q < 0 || (size_t)q >= pb->n_x)
                return kp__solve_fail(KP_ERR_INVALID_ARG,
                                      "%s: instance %zu: parameter slot %u (%s) has index %d, "
                                      "outside [0, %zu)",
                                      fn, i, s, g->param_names[s], q, pb->n_x);
        }
    return KP_OK;
}

static void sparse_free(sparse *sp)
{
    free(sp->tptr), free(sp->tent), free(sp->scratch);
    for (int k = 0; k < 2; k++)
        free(sp->wr[k]), free(sp->wJ[k]);
    free(sp->g_);
    free(sp->blocks);
    free(sp->A), free(sp->L);
}

/* The transposed index and every buffer; 0 when memory ran out. */
static int sparse_alloc(sparse *sp)
{
    const size_t n = sp->n, P = sp->P, S = sp->S, O = sp->O;
    int32_t top = 0;
    for (uint32_t o = 0; o < sp->O; o++)
        top = sp->g->outputs[o] > top ? sp->g->outputs[o] : top;
    sp->tptr = calloc(P + 1, sizeof *sp->tptr);
    sp->tent = malloc((n * S + 1) * sizeof *sp->tent);
    sp->scratch = malloc(((size_t)(top + 1) * (1 + S) + O * (1 + S)) * sizeof *sp->scratch);
    for (int k = 0; k < 2; k++) {
        sp->wr[k] = malloc((n * O + 1) * sizeof *sp->wr[k]);
        sp->wJ[k] = malloc((n * O * S + 1) * sizeof *sp->wJ[k]);
    }
    sp->g_ = malloc((9 * P + n * O + 1) * sizeof *sp->g_);
    if (sp->bs > 1)
        sp->blocks = malloc(((P + sp->bs - 1) / sp->bs) * sp->bs * sp->bs * sizeof *sp->blocks);
    if (sp->dense) {
        sp->A = malloc((P * P + 1) * sizeof *sp->A);
        sp->L = malloc((P * P + 1) * sizeof *sp->L);
    }
    if (!sp->tptr || !sp->tent || !sp->scratch || !sp->wr[0] || !sp->wr[1] || !sp->wJ[0] ||
        !sp->wJ[1] || !sp->g_ || (sp->bs > 1 && !sp->blocks) || (sp->dense && (!sp->A || !sp->L)))
        return 0;
    sp->r1 = sp->scratch + (size_t)(top + 1) * (1 + S);
    sp->J1 = sp->r1 + O;
    double *v = sp->g_;
    sp->d = v + P, sp->D_ = v + 2 * P, sp->h = v + 3 * P, sp->res = v + 4 * P;
    sp->z = v + 5 * P, sp->p = v + 6 * P, sp->q = v + 7 * P, sp->xt = v + 8 * P;
    sp->u = v + 9 * P;
    return kp__lm_sparse_transpose(sp->pb->index, n, S, P, sp->tptr, sp->tent);
}

int kp__lm_sparse_transpose(const int32_t *index, size_t n, size_t S, size_t P, int32_t *tptr,
                            int32_t *tent)
{
    /* A counting sort of the uses by parameter, each parameter's in increasing i * S + s. */
    memset(tptr, 0, (P + 1) * sizeof *tptr);
    for (size_t e = 0; e < n * S; e++)
        tptr[index[e] + 1]++;
    for (size_t q = 0; q < P; q++)
        tptr[q + 1] += tptr[q];
    int32_t *fill = malloc((P + 1) * sizeof *fill);
    if (!fill)
        return 0;
    memcpy(fill, tptr, (P + 1) * sizeof *fill);
    for (size_t e = 0; e < n * S; e++)
        tent[fill[index[e]]++] = (int32_t)e;
    free(fill);
    return 1;
}

static kp_status solve_sparse_host(const kp_expr_graph *g, const kp_lm_sparse_options *opt,
                                   const kp_lm_sparse_problem *pb, kp_lm_sparse_report *rep)
{
    kp_status st = kp__lm_sparse_check(g, opt, pb, rep, "kp_lm_sparse_solve_host");
    if (st != KP_OK)
        return st;
    const kp_lm_sparse_options defaults = kp_lm_sparse_options_default();
    const double t_start = now();
    sparse sp = {.g = g,
                 .opt = opt ? opt : &defaults,
                 .lm_opt = kp__lm_sparse_lm(opt),
                 .pb = pb,
                 .n = pb->n_instances,
                 .P = pb->n_x,
                 .S = g->n_params,
                 .O = g->n_outputs,
                 .D = g->n_data};
    sp.dense = kp__lm_dense(sp.opt, sp.P);
    sp.bs = sp.opt->block_size > 1 && !sp.dense ? sp.opt->block_size : 1; /* CG's preconditioner */
    if (!sparse_alloc(&sp)) {
        sparse_free(&sp);
        return kp__solve_fail(KP_ERR_OUT_OF_MEMORY, "kp_lm_sparse_solve_host: out of host memory");
    }
    const kp_lm_options *o = &sp.lm_opt;
    double *x = pb->x;
    double cost = evaluate(&sp, x, sp.cur);
    int32_t it = 1;
    int64_t cg_total = 0;
    kp_lm_status status = KP_LM_MAX_ITERATIONS;
    rep->initial_cost = cost;
    if (!isfinite(cost) || !normal(&sp))
        status = KP_LM_NONFINITE;
    double mu = o->initial_damping, nu = 2;
    const uint32_t max_cg = kp__lm_max_cg(sp.opt, sp.P);
    while (status == KP_LM_MAX_ITERATIONS) {
        double gmax = 0;
        for (size_t q = 0; q < sp.P; q++)
            gmax = fmax(gmax, fabs(sp.g_[q]));
        if (gmax <= o->gradient_tolerance) {
            status = KP_LM_GRADIENT;
            break;
        }
        if ((uint32_t)it >= o->max_iterations)
            break;
        const int k = linear_solve(&sp, mu, max_cg);
        kp_lm_sparse_progress pr = {.iteration = it,
                                    .cg_iterations = k < 0 ? 0 : k,
                                    .cost = cost,
                                    .damping = mu,
                                    .gradient_max = gmax,
                                    .cg_residual = k < 0 ? 1 : sp.cg_residual,
                                    .dense = sp.dense};
        if (k < 0) {
            if (kp__lm_damping_refuse(&mu, &nu))
                status = KP_LM_SINGULAR;
            if (sp.opt->progress)
                sp.opt->progress(sp.opt->user, &pr);
            continue;
        }
        cg_total += k;
        const double hn = sqrt(dot(sp.h, sp.h, sp.P)), xn = sqrt(dot(x, x, sp.P));
        if (hn <= o->step_tolerance * (xn + o->step_tolerance)) {
            status = KP_LM_STEP;
            break;
        }
        /* The model's reduction at h, exact whatever CG left of the residual. */
        jv(&sp, sp.h, sp.u);
        const double pred = -dot(sp.g_, sp.h, sp.P) - 0.5 * dot(sp.u, sp.u, sp.n * sp.O);
        for (size_t q = 0; q < sp.P; q++)
            sp.xt[q] = x[q] + sp.h[q];
        double cost_t = evaluate(&sp, sp.xt, 1 - sp.cur);
        it++;
        /* The trial's gradient decides too: a point where a derivative is not finite is refused
         * like one where the cost is not. */
        jtu_of(&sp, 1 - sp.cur, sp.wr[1 - sp.cur], sp.q);
        for (size_t q = 0; q < sp.P; q++)
            cost_t = isfinite(sp.q[q]) ? cost_t : NAN;
        const double rho = (cost - cost_t) / pred;
        if (isfinite(cost_t) && pred > 0 && rho > 0) {
            const double drop = cost - cost_t;
            sp.cur = 1 - sp.cur;
            memcpy(x, sp.xt, sp.P * sizeof *x);
            cost = cost_t;
            normal(&sp);
            if (drop <= o->function_tolerance * (cost + drop))
                status = KP_LM_FUNCTION;
            kp__lm_damping_accept(rho, &mu, &nu);
            pr.accepted = 1;
        } else if (isfinite(cost_t) && kp__lm_unjudged(cost, cost_t, pred, KP__LM_UNJUDGED_F64)) {
            /* The trial point's normal equations, kept if the step from there contracts. */
            const double step = dnorm(&sp, sp.h);
            sp.cur = 1 - sp.cur;
            normal(&sp);
            const int kn = linear_solve(&sp, mu, max_cg);
            cg_total += kn < 0 ? 0 : kn;
            if (kn >= 0 && kp__lm_contracts(dnorm(&sp, sp.h), step)) {
                memcpy(x, sp.xt, sp.P * sizeof *x);
                cost = cost_t;
                pr.accepted = 1;
            } else {
                sp.cur = 1 - sp.cur;
                normal(&sp);
                kp__lm_damping_refuse(&mu, &nu);
            }
        } else {
            kp__lm_damping_refuse(&mu, &nu);
        }
        pr.iteration = it;
        pr.cost = cost;
        if (sp.opt->progress)
            sp.opt->progress(sp.opt->user, &pr);
    }
    rep->status = status;
    rep->iterations = it;
    rep->cg_iterations = cg_total;
    rep->cost = cost;
    rep->dense = sp.dense;
    memcpy(rep->seconds, sp.seconds, sizeof sp.seconds);
    rep->seconds[3] = now() - t_start - sp.seconds[0] - sp.seconds[1] - sp.seconds[2];
    sparse_free(&sp);
    return KP_OK;
}

kp_status kp_lm_sparse_solve_host(const kp_expr_graph *g, const kp_lm_sparse_options *opt,
                                  const kp_lm_sparse_problem *pb, kp_lm_sparse_report *rep)
{
    return kp__solve_report(NULL, solve_sparse_host(g, opt, pb, rep));
}
