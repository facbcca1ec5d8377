// SPDX-License-Identifier: Apache-2.0
/* Levenberg-Marquardt on one large sparse problem on the device: kp_lm_sparse_solve_host's
 * algorithm with the residuals from the generated kernel and every vector on the device; the
 * host takes the decisions from dot products it reads back (4096 partial sums each, added in
 * order; the dot products a decision needs together come back in one read). Small problems take
 * the dense path: J^T J assembled on the device (sp_jtj), read back once per accepted step and
 * factored on the host in double (lm-dense.c), the step written back. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "solve-internal.h"

enum { K_JV, K_JTU, K_DOT, K_VEC, K_LOSS, K_BLOCK, K_BSOLVE, K_JTJ };
enum { DOT_PARTS = 4096, DOT_SLOTS = 2 };

struct kp_lm_sparse {
    kp_runtime *rt;
    kp_residual *res;
    kp_kernel *k[KP__SPARSE_KERNELS];
    int f32;
};

static kp_status create_sparse(kp_runtime *rt, const kp_expr_graph *g, kp_precision precision,
                               kp_lm_sparse **out)
{
    if (out)
        *out = NULL;
    if (!out)
        return kp__solve_fail(KP_ERR_INVALID_ARG, "kp_lm_sparse_create: NULL out");
    kp_lm_sparse *lm = calloc(1, sizeof *lm);
    if (!lm)
        return kp__solve_fail(KP_ERR_OUT_OF_MEMORY, "kp_lm_sparse_create: out of host memory");
    kp_status st = kp_residual_create(rt, g, precision, &lm->res);
    if (st == KP_OK) {
        lm->rt = rt;
        lm->f32 = kp_residual_precision(lm->res) == KP_PRECISION_F32;
        st = kp__sparse_kernels(rt, lm->f32, lm->k);
    }
    if (st != KP_OK) {
        kp_lm_sparse_destroy(lm);
        return st;
    }
    *out = lm;
    return KP_OK;
}

kp_status kp_lm_sparse_create(kp_runtime *rt, const kp_expr_graph *g, kp_precision precision,
                              kp_lm_sparse **out)
{
    return kp__solve_report(rt, create_sparse(rt, g, precision, out));
}

void kp_lm_sparse_destroy(kp_lm_sparse *lm)
{
    if (!lm)
        return;
    kp_residual_destroy(lm->res);
    free(lm);
}

kp_precision kp_lm_sparse_precision(const kp_lm_sparse *lm)
{
    return lm ? (lm->f32 ? KP_PRECISION_F32 : KP_PRECISION_F64) : KP_PRECISION_AUTO;
}

/* The solve's device state. Vectors of P: g, d, D, h, res, z, p, q, x, xt; of n O: u, rho, ones;
 * the two evaluation sets r[k], J[k]. */
typedef struct dev {
    kp_lm_sparse *lm;
    kp_runtime *rt;
    kp_dtype dt;
    size_t n, P, S, O, e, nd;
    kp_buffer *data, *index, *tptr, *tent, *partial;
    kp_buffer *r[2], *J[2], *u, *rho, *ones;
    kp_buffer *g, *d, *D, *h, *res, *z, *p, *q, *x, *xt;
    kp_buffer *blocks; /* [ceil(P / bs), bs, bs] with block-Jacobi (bs > 1) */
    size_t bs;
    kp_buffer *A; /* [P, P] J^T J on the dense path */
    int dense;
    double *hA, *hL, *hg, *hh; /* the dense path's host copies: J^T J, its factor, g, h */
    double *host_partial, *host_g;
    int cur;
    const kp_lm_sparse_options *opt;
    kp_lm_options lm_opt; /* opt->lm's, or the defaults */
    kp_status st;
    double seconds[4];
} dev;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static kp_tensor vecP(const dev *v, kp_buffer *b)
{
    return kp_tensor_1d(b, v->dt, (int64_t)v->P);
}

static kp_tensor vecN(const dev *v, kp_buffer *b)
{
    return kp_tensor_2d(b, v->dt, (int64_t)v->n, (int64_t)v->O);
}

static kp_tensor jac(const dev *v, kp_buffer *b)
{
    return kp_tensor_3d(b, v->dt, (int64_t)v->n, (int64_t)v->O, (int64_t)v->S);
}

static void launch(dev *v, int k, const kp_arg *args, size_t n)
{
    if (v->st == KP_OK && (v->st = kp_kernel_launch(v->rt, v->lm->k[k], args, n, NULL)) != KP_OK)
        kp__solve_fail(v->st, "kp_lm_sparse_solve: %s", kp_last_error(v->rt));
}

/* out = op(a, b, c) over m elements (solve/sparse.cl's sp_vec). */
static void vec(dev *v, int op, double alpha, double beta, kp_tensor a, kp_tensor b, kp_tensor c,
                kp_tensor out)
{
    kp_arg args[] = {kp_arg_tensor("a", a),     kp_arg_tensor("b", b), kp_arg_tensor("c", c),
                     kp_arg_tensor("out", out), kp_arg_int("op", op),  kp_arg_float("alpha", alpha),
                     kp_arg_float("beta", beta)};
    launch(v, K_VEC, args, 7);
}

/* Enqueues a . b over the flattened tensors: 4096 partial sums into the partials' slot. */
static void dot_enqueue(dev *v, int slot, kp_tensor a, kp_tensor b)
{
    const int64_t m = kp_tensor_numel(&a);
    a = kp_tensor_1d(a.buffer, v->dt, m);
    b = kp_tensor_1d(b.buffer, v->dt, m);
    kp_tensor part = kp_tensor_1d(v->partial, v->dt, DOT_PARTS);
    part.offset = (int64_t)slot * DOT_PARTS;
    kp_arg args[] = {kp_arg_tensor("a", a), kp_arg_tensor("b", b), kp_arg_tensor("partial", part)};
    launch(v, K_DOT, args, 3);
}

/* Slots 0 .. n-1's dot products in one blocking read, each slot's partials added in order; NaN
 * after a failure. */
static void dots_read(dev *v, int n, double *out)
{
    if (v->st == KP_OK &&
        (v->st = kp_buffer_read(v->rt, v->partial, 0, (size_t)n * DOT_PARTS * v->e,
                                v->host_partial)) != KP_OK)
        kp__solve_fail(v->st, "kp_lm_sparse_solve: %s", kp_last_error(v->rt));
    for (int k = 0; k < n; k++) {
        double s = 0;
        for (int t = k * DOT_PARTS; v->st == KP_OK && t < (k + 1) * DOT_PARTS; t++)
            s += v->e == 4 ? ((const float *)v->host_partial)[t] : v->host_partial[t];
        out[k] = v->st == KP_OK ? s : NAN;
    }
}

static double dot(dev *v, kp_tensor a, kp_tensor b)
{
    double s;
    dot_enqueue(v, 0, a, b);
    dots_read(v, 1, &s);
    return s;
}

/* sum D h^2 (D and h at the current point); z is overwritten. */
static double dnorm(dev *v)
{
    vec(v, 0, 0, 0, vecP(v, v->h), vecP(v, v->h), vecP(v, v->h), vecP(v, v->z));
    vec(v, 2, 1, 0, vecP(v, v->z), vecP(v, v->D), vecP(v, v->h), vecP(v, v->z));
    return dot(v, vecP(v, v->h), vecP(v, v->z));
}

/* 1 where every element of x (a vector of P) is finite, as the host reference checks each: the
 * sum of x_i (0 x_i) is NaN exactly where some x_i is not finite, where |x|^2 would also overflow
 * for large finite ones. `scratch` (a vector of P) is overwritten. */
static int all_finite(dev *v, kp_buffer *x, kp_buffer *scratch)
{
    vec(v, 0, 0, 0, vecP(v, x), vecP(v, x), vecP(v, x), vecP(v, scratch));
    return isfinite(dot(v, vecP(v, x), vecP(v, scratch)));
}

static void jv(dev *v, kp_buffer *in, kp_buffer *out)
{
    kp_arg args[] = {
        kp_arg_tensor("J", jac(v, v->J[v->cur])),
        kp_arg_tensor("index", kp_tensor_2d(v->index, KP_I32, (int64_t)v->n, (int64_t)v->S)),
        kp_arg_tensor("v", vecP(v, in)), kp_arg_tensor("u", vecN(v, out))};
    launch(v, K_JV, args, 4);
}

static void jtu(dev *v, int k, kp_buffer *u, kp_buffer *out, int square)
{
    kp_arg args[] = {kp_arg_tensor("J", jac(v, v->J[k])),
                     kp_arg_tensor("u", vecN(v, u)),
                     kp_arg_tensor("tptr", kp_tensor_1d(v->tptr, KP_I32, (int64_t)v->P + 1)),
                     kp_arg_tensor("tent", kp_tensor_1d(v->tent, KP_I32, (int64_t)(v->n * v->S))),
                     kp_arg_tensor("out", vecP(v, out)),
                     kp_arg_int("square", square)};
    launch(v, K_JTU, args, 6);
}

/* Residuals and Jacobian at x into set k, weighted by the loss; the cost (NaN where a residual
 * or derivative is not finite). */
static double evaluate(dev *v, kp_buffer *x, int k)
{
    const double t0 = now();
    const kp_lm_options *o = &v->lm_opt;
    double cost = NAN;
    if (v->st == KP_OK) {
        kp_tensor data = {0};
        if (v->data)
            data = kp_tensor_2d(v->data, v->dt, (int64_t)v->n, (int64_t)v->nd);
        kp_status st =
            kp_residual_evaluate(v->lm->res, (int64_t)v->n, data,
                                 kp_tensor_2d(v->index, KP_I32, (int64_t)v->n, (int64_t)v->S),
                                 vecP(v, x), vecN(v, v->r[k]), jac(v, v->J[k]));
        if (st == KP_ERR_VERIFY)
            return NAN; /* not finite: the caller refuses the point */
        if (st != KP_OK) {
            v->st = st;
            return NAN;
        }
        if (o->loss != KP_LOSS_SQUARED) {
            kp_arg args[] = {kp_arg_tensor("r", vecN(v, v->r[k])),
                             kp_arg_tensor("J", jac(v, v->J[k])),
                             kp_arg_tensor("rho", vecN(v, v->rho)), kp_arg_int("loss", o->loss),
                             kp_arg_float("scale", o->loss_scale)};
            launch(v, K_LOSS, args, 5);
            cost = 0.5 * dot(v, vecN(v, v->rho), vecN(v, v->ones));
        } else
            cost = 0.5 * dot(v, vecN(v, v->r[k]), vecN(v, v->r[k]));
    }
    v->seconds[0] += now() - t0;
    return cost;
}

static kp_tensor blocks(const dev *v)
{
    return kp_tensor_3d(v->blocks, v->dt, (int64_t)((v->P + v->bs - 1) / v->bs), (int64_t)v->bs,
                        (int64_t)v->bs);
}

/* z = M^-1 r: the diagonal (Jacobi) or the blocks. */
static void precondition(dev *v, double mu, kp_buffer *r, kp_buffer *z)
{
    if (v->bs <= 1) {
        vec(v, 1, mu, 0, vecP(v, r), vecP(v, v->d), vecP(v, v->D), vecP(v, z));
        return;
    }
    kp_arg args[] = {kp_arg_tensor("B", blocks(v)), kp_arg_tensor("D", vecP(v, v->D)),
                     kp_arg_tensor("r", vecP(v, r)), kp_arg_tensor("z", vecP(v, z)),
                     kp_arg_float("mu", mu)};
    launch(v, K_BSOLVE, args, 5);
}

/* g = J^T r, d = diag J^T J, D = d clamped, at the current point; 0 when g is not finite. */
static int normal(dev *v)
{
    const double t0 = now();
    jtu(v, v->cur, v->r[v->cur], v->g, 0);
    jtu(v, v->cur, v->r[v->cur], v->d, 1);
    vec(v, 3, v->lm_opt.min_diagonal, KP__LM_CEILING, vecP(v, v->d), vecP(v, v->d), vecP(v, v->d),
        vecP(v, v->D));
    if (v->dense) {
        kp_arg args[] = {
            kp_arg_tensor("J", jac(v, v->J[v->cur])),
            kp_arg_tensor("index", kp_tensor_2d(v->index, KP_I32, (int64_t)v->n, (int64_t)v->S)),
            kp_arg_tensor("tptr", kp_tensor_1d(v->tptr, KP_I32, (int64_t)v->P + 1)),
            kp_arg_tensor("tent", kp_tensor_1d(v->tent, KP_I32, (int64_t)(v->n * v->S))),
            kp_arg_tensor("A", kp_tensor_2d(v->A, v->dt, (int64_t)v->P, (int64_t)v->P))};
        launch(v, K_JTJ, args, 5);
        /* f32 arrives in hL (scratch until the next factorization) and widens into hA. */
        const size_t PP = v->P * v->P;
        void *dst = v->e == 8 ? (void *)v->hA : (void *)v->hL;
        if (v->st == KP_OK && (v->st = kp_buffer_read(v->rt, v->A, 0, PP * v->e, dst)) != KP_OK)
            kp__solve_fail(v->st, "kp_lm_sparse_solve: %s", kp_last_error(v->rt));
        for (size_t t = 0; v->e == 4 && t < PP; t++)
            v->hA[t] = ((const float *)v->hL)[t];
    }
    if (v->bs > 1) {
        kp_arg args[] = {
            kp_arg_tensor("J", jac(v, v->J[v->cur])),
            kp_arg_tensor("index", kp_tensor_2d(v->index, KP_I32, (int64_t)v->n, (int64_t)v->S)),
            kp_arg_tensor("tptr", kp_tensor_1d(v->tptr, KP_I32, (int64_t)v->P + 1)),
            kp_arg_tensor("tent", kp_tensor_1d(v->tent, KP_I32, (int64_t)(v->n * v->S))),
            kp_arg_tensor("B", blocks(v))};
        launch(v, K_BLOCK, args, 5);
    }
    /* CG's vectors are free until the step: z takes the check's products. */
    const int finite = all_finite(v, v->g, v->z);
    v->seconds[1] += now() - t0;
    return finite;
}

/* Preconditioned CG from h = 0 to cg_tolerance |g| or max_cg iterations (as the host reference;
 * *rel: |res| / |g| where it stopped); iterations, or -1 on breakdown before a step. Two blocking
 * reads an iteration: p.q, then |res|^2 and res.z together (z computed before the test, so once
 * more than the host reference, at the last iteration). */
static int cg(dev *v, double mu, uint32_t max_cg, double *rel)
{
    const double t0 = now();
    vec(v, 0, 0, 0, vecP(v, v->g), vecP(v, v->g), vecP(v, v->g), vecP(v, v->h));
    vec(v, 0, -1, 0, vecP(v, v->g), vecP(v, v->g), vecP(v, v->g), vecP(v, v->res));
    precondition(v, mu, v->res, v->z);
    vec(v, 0, 1, 0, vecP(v, v->z), vecP(v, v->z), vecP(v, v->z), vecP(v, v->p));
    double two[2];
    dot_enqueue(v, 0, vecP(v, v->g), vecP(v, v->g));
    dot_enqueue(v, 1, vecP(v, v->res), vecP(v, v->z));
    dots_read(v, 2, two);
    const double gnorm = sqrt(two[0]);
    double rz = two[1];
    int k = 0;
    *rel = 1;
    while (v->st == KP_OK && k < (int)max_cg) {
        jv(v, v->p, v->u);
        jtu(v, v->cur, v->u, v->q, 0);
        vec(v, 2, mu, 0, vecP(v, v->q), vecP(v, v->D), vecP(v, v->p), vecP(v, v->q));
        const double pq = dot(v, vecP(v, v->p), vecP(v, v->q));
        if (!(pq > 0) || !isfinite(pq)) {
            if (k == 0)
                k = -1;
            break;
        }
        const double alpha = rz / pq;
        vec(v, 0, 1, alpha, vecP(v, v->h), vecP(v, v->p), vecP(v, v->p), vecP(v, v->h));
        vec(v, 0, 1, -alpha, vecP(v, v->res), vecP(v, v->q), vecP(v, v->q), vecP(v, v->res));
        k++;
        precondition(v, mu, v->res, v->z);
        dot_enqueue(v, 0, vecP(v, v->res), vecP(v, v->res));
        dot_enqueue(v, 1, vecP(v, v->res), vecP(v, v->z));
        dots_read(v, 2, two);
        *rel = sqrt(two[0]) / gnorm;
        if (*rel <= v->opt->cg_tolerance)
            break;
        const double rz_new = two[1];
        const double beta = rz_new / rz;
        rz = rz_new;
        vec(v, 0, 1, beta, vecP(v, v->z), vecP(v, v->p), vecP(v, v->p), vecP(v, v->p));
    }
    v->seconds[2] += now() - t0;
    return k;
}

/* Host doubles (n of them) into device buffer b, through tmp (n floats) in f32. */
static void write_reals(dev *v, kp_buffer *b, const double *src, size_t n, float *tmp)
{
    for (size_t q = 0; v->e == 4 && q < n; q++)
        tmp[q] = (float)src[q];
    if (v->st == KP_OK && (v->st = kp_buffer_write(v->rt, b, 0, n * v->e,
                                                   v->e == 4 ? (void *)tmp : (void *)src)) != KP_OK)
        kp__solve_fail(v->st, "kp_lm_sparse_solve: %s", kp_last_error(v->rt));
}

/* Device buffer b (n reals) into host doubles, through tmp in f32. */
static void read_reals(dev *v, kp_buffer *b, double *dst, size_t n, float *tmp)
{
    if (v->st == KP_OK && (v->st = kp_buffer_read(v->rt, b, 0, n * v->e,
                                                  v->e == 4 ? (void *)tmp : (void *)dst)) != KP_OK)
        kp__solve_fail(v->st, "kp_lm_sparse_solve: %s", kp_last_error(v->rt));
    for (size_t q = 0; v->st == KP_OK && v->e == 4 && q < n; q++)
        dst[q] = tmp[q];
}

/* The dense path's step (lm-dense.c) from g (host_g, read this iteration) and D: h on the host,
 * refined against the matrix-free operator on the device as the host reference refines it; 0
 * iterations, or -1 when the matrix does not factor. */
static int dense_step(dev *v, double mu, double *rel)
{
    const double t0 = now();
    const size_t P = v->P;
    double *h = v->hh, *D = v->hh + P, *res = v->hh + 2 * P, gnorm = 0;
    float *tmp = (float *)(v->hh + 3 * P);
    *rel = 1;
    read_reals(v, v->D, D, P, tmp);
    for (size_t q = 0; v->st == KP_OK && q < P; q++) {
        v->hg[q] = v->e == 4 ? ((const float *)v->host_g)[q] : v->host_g[q];
        gnorm += v->hg[q] * v->hg[q];
    }
    gnorm = sqrt(gnorm);
    const int ok = v->st == KP_OK && kp__lm_dense_step(v->hA, D, v->hg, mu, P, v->hL, h);
    for (int pass = 0; ok && v->st == KP_OK; pass++) {
        write_reals(v, v->h, h, P, tmp);
        /* res = -(J^T J h + mu D h + g) */
        jv(v, v->h, v->u);
        jtu(v, v->cur, v->u, v->q, 0);
        vec(v, 2, mu, 0, vecP(v, v->q), vecP(v, v->D), vecP(v, v->h), vecP(v, v->q));
        vec(v, 0, -1, -1, vecP(v, v->q), vecP(v, v->g), vecP(v, v->g), vecP(v, v->res));
        *rel = sqrt(dot(v, vecP(v, v->res), vecP(v, v->res))) / gnorm;
        if (*rel <= v->opt->cg_tolerance || pass == KP__LM_DENSE_PASSES)
            break;
        read_reals(v, v->res, res, P, tmp);
        kp__lm_cholesky_solve(v->hL, P, P, res, res);
        for (size_t q = 0; q < P; q++)
            h[q] += res[q];
    }
    v->seconds[2] += now() - t0;
    return ok ? 0 : -1;
}

static kp_buffer *make(dev *v, size_t bytes)
{
    kp_buffer *b = NULL;
    if (v->st == KP_OK && (v->st = kp_buffer_create(v->rt, bytes ? bytes : 1, &b)) != KP_OK)
        kp__solve_fail(v->st, "kp_lm_sparse_solve: %s", kp_last_error(v->rt));
    return b;
}

/* Host doubles into a new device buffer of the solver's precision. */
static kp_buffer *upload(dev *v, const double *src, size_t n)
{
    kp_buffer *b = make(v, n * v->e);
    if (!b || n == 0)
        return b;
    float *tmp = v->e == 4 ? malloc(n * 4) : NULL;
    if (v->e == 4 && !tmp)
        v->st = kp__solve_fail(KP_ERR_OUT_OF_MEMORY, "kp_lm_sparse_solve: out of host memory");
    else
        write_reals(v, b, src, n, tmp);
    free(tmp);
    return b;
}

static void release(dev *v)
{
    kp_buffer *all[] = {v->data, v->index, v->tptr, v->tent, v->partial, v->r[0],
                        v->r[1], v->J[0],  v->J[1], v->u,    v->rho,     v->ones,
                        v->g,    v->d,     v->D,    v->h,    v->res,     v->z,
                        v->p,    v->q,     v->x,    v->xt,   v->blocks,  v->A};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        kp_buffer_destroy(v->rt, all[i]);
    free(v->host_partial);
    free(v->host_g);
    free(v->hA);
}

static kp_status run_sparse(kp_lm_sparse *lm, const kp_lm_sparse_options *opt,
                            const kp_lm_sparse_problem *pb, kp_lm_sparse_report *rep)
{
    if (!lm)
        return kp__solve_fail(KP_ERR_INVALID_ARG, "kp_lm_sparse_solve: NULL solver");
    const kp_expr_graph *g = kp__residual_graph(lm->res);
    kp_status st = kp__lm_sparse_check(g, opt, pb, rep, "kp_lm_sparse_solve");
    if (st != KP_OK)
        return st;
    const kp_lm_sparse_options defaults = kp_lm_sparse_options_default();
    const double t_start = now();
    dev v = {.lm = lm,
             .rt = lm->rt,
             .dt = lm->f32 ? KP_F32 : KP_F64,
             .n = pb->n_instances,
             .P = pb->n_x,
             .S = g->n_params,
             .O = g->n_outputs,
             .e = lm->f32 ? 4 : 8,
             .nd = g->n_data,
             .opt = opt ? opt : &defaults,
             .lm_opt = kp__lm_sparse_lm(opt)};
    int32_t *tptr = calloc(v.P + 1, sizeof *tptr), *tent = malloc((v.n * v.S + 1) * sizeof *tent);
    v.host_partial = malloc(DOT_SLOTS * DOT_PARTS * sizeof(double));
    v.host_g = malloc((v.P + 1) * sizeof(double));
    if (!tptr || !tent || !v.host_partial || !v.host_g)
        v.st = kp__solve_fail(KP_ERR_OUT_OF_MEMORY, "kp_lm_sparse_solve: out of host memory");
    if (v.st == KP_OK)
        kp__lm_sparse_transpose(pb->index, v.n, v.S, v.P, tptr, tent);
    /* Data and the index once; every vector on the device from here. */
    if (g->n_data)
        v.data = upload(&v, pb->data, v.n * g->n_data);
    v.index = make(&v, v.n * v.S * 4);
    v.tptr = make(&v, (v.P + 1) * 4);
    v.tent = make(&v, v.n * v.S * 4);
    if (v.st == KP_OK)
        v.st = kp_buffer_write(v.rt, v.index, 0, v.n * v.S * 4, pb->index);
    if (v.st == KP_OK)
        v.st = kp_buffer_write(v.rt, v.tptr, 0, (v.P + 1) * 4, tptr);
    if (v.st == KP_OK)
        v.st = kp_buffer_write(v.rt, v.tent, 0, v.n * v.S * 4, tent);
    free(tptr);
    free(tent);
    v.partial = make(&v, DOT_SLOTS * DOT_PARTS * v.e);
    for (int k = 0; k < 2; k++) {
        v.r[k] = make(&v, v.n * v.O * v.e);
        v.J[k] = make(&v, v.n * v.O * v.S * v.e);
    }
    v.u = make(&v, v.n * v.O * v.e);
    v.rho = make(&v, v.n * v.O * v.e);
    v.ones = make(&v, v.n * v.O * v.e);
    kp_buffer **vp[] = {&v.g, &v.d, &v.D, &v.h, &v.res, &v.z, &v.p, &v.q, &v.xt};
    for (size_t i = 0; i < sizeof vp / sizeof *vp; i++)
        *vp[i] = make(&v, v.P * v.e);
    v.x = upload(&v, pb->x, v.P);
    v.dense = kp__lm_dense(v.opt, v.P);
    v.bs = v.opt->block_size > 1 && !v.dense ? v.opt->block_size : 1; /* CG's preconditioner */
    if (v.bs > 1)
        v.blocks = make(&v, (v.P + v.bs - 1) / v.bs * v.bs * v.bs * v.e);
    if (v.dense) {
        v.A = make(&v, v.P * v.P * v.e);
        v.hA = malloc((2 * v.P * v.P + 5 * v.P + 1) * sizeof *v.hA);
        if (!v.hA && v.st == KP_OK)
            v.st = kp__solve_fail(KP_ERR_OUT_OF_MEMORY, "kp_lm_sparse_solve: out of host memory");
        if (v.hA) {
            v.hL = v.hA + v.P * v.P;
            v.hg = v.hL + v.P * v.P;
            v.hh = v.hg + v.P; /* h, D, the refinement's residual, f32 scratch */
        }
    }
    if (v.st == KP_OK) {
        const double one = 1;
        const float onef = 1;
        v.st = kp_buffer_fill(v.rt, v.ones, 0, v.n * v.O * v.e,
                              v.e == 8 ? (void *)&one : (void *)&onef, v.e);
    }
    if (v.st != KP_OK) {
        release(&v);
        return v.st;
    }
    const kp_lm_options *o = &v.lm_opt;
    double cost = evaluate(&v, v.x, v.cur);
    int32_t it = 1;
    int64_t cg_total = 0;
    kp_lm_status status = KP_LM_MAX_ITERATIONS;
    rep->initial_cost = cost;
    if (!isfinite(cost) || !normal(&v))
        status = KP_LM_NONFINITE;
    double mu = o->initial_damping, nu = 2;
    const uint32_t max_cg = kp__lm_max_cg(v.opt, v.P);
    while (v.st == KP_OK && status == KP_LM_MAX_ITERATIONS) {
        double gmax = 0;
        if ((v.st = kp_buffer_read(v.rt, v.g, 0, v.P * v.e, v.host_g)) != KP_OK)
            break;
        for (size_t q = 0; q < v.P; q++)
            gmax = fmax(gmax, fabs(v.e == 4 ? ((const float *)v.host_g)[q] : v.host_g[q]));
        if (gmax <= o->gradient_tolerance) {
            status = KP_LM_GRADIENT;
            break;
        }
        if ((uint32_t)it >= o->max_iterations)
            break;
        double rel;
        const int k = v.dense ? dense_step(&v, mu, &rel) : cg(&v, mu, max_cg, &rel);
        if (v.st != KP_OK)
            break;
        kp_lm_sparse_progress pr = {.iteration = it,
                                    .cg_iterations = k < 0 ? 0 : k,
                                    .cost = cost,
                                    .damping = mu,
                                    .gradient_max = gmax,
                                    .cg_residual = k < 0 ? 1 : rel,
                                    .dense = v.dense};
        if (k < 0) {
            if (kp__lm_damping_refuse(&mu, &nu))
                status = KP_LM_SINGULAR;
            if (v.opt->progress)
                v.opt->progress(v.opt->user, &pr);
            continue;
        }
        cg_total += k;
        double hx[2];
        dot_enqueue(&v, 0, vecP(&v, v.h), vecP(&v, v.h));
        dot_enqueue(&v, 1, vecP(&v, v.x), vecP(&v, v.x));
        dots_read(&v, 2, hx);
        const double hn = sqrt(hx[0]), xn = sqrt(hx[1]);
        if (hn <= o->step_tolerance * (xn + o->step_tolerance)) {
            status = KP_LM_STEP;
            break;
        }
        jv(&v, v.h, v.u);
        double gu[2];
        dot_enqueue(&v, 0, vecP(&v, v.g), vecP(&v, v.h));
        dot_enqueue(&v, 1, vecN(&v, v.u), vecN(&v, v.u));
        dots_read(&v, 2, gu);
        const double pred = -gu[0] - 0.5 * gu[1];
        vec(&v, 0, 1, 1, vecP(&v, v.x), vecP(&v, v.h), vecP(&v, v.h), vecP(&v, v.xt));
        double cost_t = evaluate(&v, v.xt, 1 - v.cur);
        it++;
        if (isfinite(cost_t)) {
            jtu(&v, 1 - v.cur, v.r[1 - v.cur], v.q, 0);
            cost_t = all_finite(&v, v.q, v.z) ? cost_t : NAN;
        }
        const double rho = (cost - cost_t) / pred;
        const double tol = v.e == 4 ? KP__LM_UNJUDGED_F32 : KP__LM_UNJUDGED_F64;
        if (isfinite(cost_t) && pred > 0 && rho > 0) {
            const double drop = cost - cost_t;
            v.cur = 1 - v.cur;
            kp_buffer *t = v.x;
            v.x = v.xt;
            v.xt = t;
            cost = cost_t;
            normal(&v);
            if (drop <= o->function_tolerance * (cost + drop))
                status = KP_LM_FUNCTION;
            kp__lm_damping_accept(rho, &mu, &nu);
            pr.accepted = 1;
        } else if (isfinite(cost_t) && kp__lm_unjudged(cost, cost_t, pred, tol)) {
            /* The trial point's normal equations, kept if the step from there contracts. */
            const double step = dnorm(&v);
            v.cur = 1 - v.cur;
            normal(&v);
            if (v.dense && v.st == KP_OK)
                v.st = kp_buffer_read(v.rt, v.g, 0, v.P * v.e, v.host_g);
            double rel_next;
            const int kn = v.dense ? dense_step(&v, mu, &rel_next) : cg(&v, mu, max_cg, &rel_next);
            cg_total += kn < 0 ? 0 : kn;
            if (kn >= 0 && kp__lm_contracts(dnorm(&v), step)) {
                kp_buffer *t = v.x;
                v.x = v.xt;
                v.xt = t;
                cost = cost_t;
                pr.accepted = 1;
            } else {
                v.cur = 1 - v.cur;
                normal(&v);
                kp__lm_damping_refuse(&mu, &nu);
            }
        } else {
            kp__lm_damping_refuse(&mu, &nu);
        }
        pr.iteration = it;
        pr.cost = cost;
        if (v.opt->progress)
            v.opt->progress(v.opt->user, &pr);
    }
    if (v.st == KP_OK) {
        float *tmp = v.e == 4 ? malloc(v.P * 4 + 1) : NULL;
        if (v.e == 4 && !tmp)
            v.st = kp__solve_fail(KP_ERR_OUT_OF_MEMORY, "kp_lm_sparse_solve: out of host memory");
        else
            read_reals(&v, v.x, pb->x, v.P, tmp);
        free(tmp);
    }
    rep->status = status;
    rep->iterations = it;
    rep->cg_iterations = cg_total;
    rep->cost = cost;
    rep->dense = v.dense;
    memcpy(rep->seconds, v.seconds, sizeof v.seconds);
    rep->seconds[3] = now() - t_start - v.seconds[0] - v.seconds[1] - v.seconds[2];
    release(&v);
    return v.st;
}

kp_status kp_lm_sparse_solve(kp_lm_sparse *lm, const kp_lm_sparse_options *opt,
                             const kp_lm_sparse_problem *pb, kp_lm_sparse_report *rep)
{
    return kp__solve_report(lm ? lm->rt : NULL, run_sparse(lm, opt, pb, rep));
}
