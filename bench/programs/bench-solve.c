/* SPDX-License-Identifier: Apache-2.0 */
/* bench-solve: the solve layer's generated kernels (#27). Residual + Jacobian evaluation of the
 * NIST Rat43 model (4 parameters) for n instances, the same for a mesh's edge-length term
 * (parameters gathered through the index); batched Levenberg-Marquardt on 2D Gaussian fits (5
 * parameters, 5 x 5 points, noisy, random truths); the mesh problem of examples/mesh-solve solved
 * as one sparse problem. The peer, in the same process on the same arrays, is Ceres where it is
 * compiled in (KP_HAVE_CERES: AutoDiffCostFunction, one Problem per fit with DENSE_QR, the mesh
 * with SPARSE_NORMAL_CHOLESKY and CGNR, on --threads threads), else a hand-written C loop with
 * the analytic Jacobian and the host reference solver (also reported beside Ceres). SciPy's
 * least_squares fits the problems --dump writes (bench/peers/peer-solve.py); torch.func is in
 * that script too. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "icosphere.h"
#include "kernelport/solve.h"
#include "mesh-problem.h"
#ifdef KP_HAVE_CERES
#include "ceres-peer.h"
#endif

static const char *const rat43 = "b1 / (1 + exp(b2 - b3*x))^(1/b4) - y";
static const char *const gauss2d = "a*exp(-((u - x0)^2 + (v - y0)^2) / (2*s^2)) + c - z";

static kp_expr_graph *graph(const char *params, const char *data, const char *text)
{
    kp_expr_graph *g = NULL;
    if (kp_expr_graph_create(&g) != KP_OK || kp_expr_declare(g, 1, params) != KP_OK ||
        kp_expr_declare(g, 0, data) != KP_OK || kp_expr_parse(g, text) != KP_OK) {
        fprintf(stderr, "bench-solve: %s\n", g ? kp_expr_graph_error(g) : "out of memory");
        exit(1);
    }
    return g;
}

/* --threads: the Ceres peer's threads (default: every core online); --peer-seconds: the most a
 * Ceres mesh solve may take. */
static int peer_threads = 1;
static double peer_seconds = 120;
/* --rounds: the evaluation rows (rat43, edges) repeated, ours and Ceres in turn each time; the
 * round in the row's name when there are several. */
static int rounds = 1, round_no = 1;

static const char *round_suffix(void)
{
    static char text[16];
    if (rounds > 1)
        snprintf(text, sizeof text, " #%d", round_no);
    else
        text[0] = '\0';
    return text;
}

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench-solve: %s: %s\n", what, why);
    exit(1);
}

/* Rat43's residual and Jacobian written by hand, one thread: the CPU baseline. */
typedef struct rat43_call {
    size_t n;
    const double *data, *p;
    double *r, *J;
} rat43_call;

static void rat43_by_hand(void *user)
{
    const rat43_call *c = user;
    const double b1 = c->p[0], b2 = c->p[1], b3 = c->p[2], b4 = c->p[3];
    for (size_t i = 0; i < c->n; i++) {
        const double y = c->data[2 * i], x = c->data[2 * i + 1];
        const double e = exp(b2 - b3 * x), base = 1 + e, q = pow(base, 1 / b4);
        const double f = b1 / q, dlogq_dbase = 1 / (b4 * base);
        c->r[i] = f - y;
        c->J[4 * i] = 1 / q;
        c->J[4 * i + 1] = -f * dlogq_dbase * e;
        c->J[4 * i + 2] = f * dlogq_dbase * e * x;
        c->J[4 * i + 3] = f * log(base) / (b4 * b4);
    }
}

/* The same evaluation by Ceres. */
static void rat43_on_ceres(void *user)
{
#ifdef KP_HAVE_CERES
    const rat43_call *c = user;
    kpc_rat43(c->n, c->data, c->p, c->r, c->J, peer_threads);
#else
    (void)user;
#endif
}

/* Where Ceres is compiled in, it becomes the row's peer: the hand-written loop's time (already in
 * row->peer_s, its r and J in *r and *J) moves to the figure hand_c_s, Ceres evaluates into arrays
 * of its own (`run` with *r and *J, the call's, swapped for them) and is checked against the loop.
 * Also the nanoseconds per residual of both. */
static void peer_ceres(kpb *b, kpb_row *row, int64_t n, double **r, double **J, int S,
                       void (*run)(void *), void *call)
{
    kpb_row_metric(row, "ns_per_residual", row->ours_s / (double)n * 1e9);
#ifdef KP_HAVE_CERES
    const size_t un = (size_t)n;
    double *cr = malloc(un * sizeof *cr), *cj = malloc(un * (size_t)S * sizeof *cj);
    if (!cr || !cj)
        die("ceres", "out of host memory");
    double *hand_r = *r, *hand_j = *J;
    *r = cr;
    *J = cj;
    kpb_row_metric(row, "hand_c_s", row->peer_s);
    static char peer[96];
    snprintf(peer, sizeof peer, "%s AutoDiffCostFunction::Evaluate (%d threads)", kpc_version(),
             peer_threads);
    row->peer = peer;
    row->peer_s = kpb_time_host(b, run, call);
    double worst = 0;
    for (size_t i = 0; i < un * (size_t)(S + 1); i++) {
        const double want = i < un ? hand_r[i] : hand_j[i - un];
        const double got = i < un ? cr[i] : cj[i - un];
        worst = fmax(worst, fabs(got - want) / (1 + fabs(want)));
    }
    kpb_row_metric(row, "ceres_max_rel_err", worst);
    kpb_row_metric(row, "ceres_ns_per_residual", row->peer_s / (double)n * 1e9);
    kpb_row_metric(row, "ceres_instances_per_s", (double)n / row->peer_s);
    *r = hand_r;
    *J = hand_j;
    free(cr), free(cj);
#else
    (void)b, (void)r, (void)J, (void)S, (void)run, (void)call;
#endif
}

/* Our side as the caller sees it: launch to finish, wall time (the kernel's own time, from its
 * event, leaves out PoCL's launch overhead, which Ceres's wall time has no counterpart of), and
 * the 1-minute load average of the machine when the row was measured (shared machines). */
typedef struct launch_call {
    kpb *b;
    kp_kernel *k;
    const kp_arg *args;
    size_t n_args;
} launch_call;

static void launch_and_finish(void *user)
{
    const launch_call *c = user;
    if (kp_kernel_launch(c->b->rt, c->k, c->args, c->n_args, NULL) != KP_OK ||
        kp_finish(c->b->rt) != KP_OK)
        die("launch", kp_last_error(c->b->rt));
}

static void wall_and_load(kpb *b, kpb_row *row, int64_t n, kp_kernel *k, const kp_arg *args,
                          size_t n_args)
{
    launch_call c = {b, k, args, n_args};
    kpb_row_metric(row, "wall_ns_per_residual", kpb_time_host(b, launch_and_finish, &c) / n * 1e9);
    double load[1];
    if (getloadavg(load, 1) == 1)
        kpb_row_metric(row, "load1", load[0]);
}

static void bench_rat43(kpb *b, int64_t n, kp_precision prec)
{
    kp_expr_graph *g = graph("b1 b2 b3 b4", "y x", rat43);
    kp_residual *res;
    if (kp_residual_create(b->rt, g, prec, &res) != KP_OK)
        die("rat43", kp_last_error(b->rt));
    const int f32 = kp_residual_precision(res) == KP_PRECISION_F32;
    const size_t e = f32 ? 4 : 8, un = (size_t)n;
    double *data = malloc(un * 2 * sizeof *data), *r = malloc(un * sizeof *r),
           *J = malloc(un * 4 * sizeof *J), p[4] = {700, 5, 0.75, 1.3};
    int32_t *index = malloc(un * 4 * sizeof *index);
    float *tmp = malloc(un * 2 * sizeof *tmp);
    if (!data || !r || !J || !index || !tmp)
        die("rat43", "out of host memory");
    kpb_fill(tmp, un * 2, 7);
    for (size_t i = 0; i < un; i++) {
        data[2 * i] = 400 + 300 * tmp[2 * i];     /* y */
        data[2 * i + 1] = 8 + 7 * tmp[2 * i + 1]; /* x */
        for (int s = 0; s < 4; s++)
            index[4 * i + s] = s;
    }
    for (size_t i = 0; f32 && i < un * 2; i++)
        tmp[i] = (float)data[i];
    float pf[4] = {700, 5, 0.75f, 1.3f};
    kp_buffer *bd, *bi, *bp, *br, *bj;
    if (kp_buffer_create(b->rt, un * 2 * e, &bd) != KP_OK ||
        kp_buffer_create(b->rt, un * 4 * 4, &bi) != KP_OK ||
        kp_buffer_create(b->rt, 4 * e, &bp) != KP_OK ||
        kp_buffer_create(b->rt, un * e, &br) != KP_OK ||
        kp_buffer_create(b->rt, un * 4 * e, &bj) != KP_OK)
        die("rat43", kp_last_error(b->rt));
    kp_buffer_write(b->rt, bd, 0, un * 2 * e, f32 ? (void *)tmp : (void *)data);
    kp_buffer_write(b->rt, bi, 0, un * 4 * 4, index);
    kp_buffer_write(b->rt, bp, 0, 4 * e, f32 ? (void *)pf : (void *)p);
    const kp_dtype dt = f32 ? KP_F32 : KP_F64;
    kp_buffer *bs;
    const int32_t big[2] = {INT32_MAX, INT32_MAX};
    if (kp_buffer_create(b->rt, 8, &bs) != KP_OK)
        die("rat43", kp_last_error(b->rt));
    kp_buffer_write(b->rt, bs, 0, 8, big);
    kp_arg args[] = {kp_arg_tensor("data", kp_tensor_2d(bd, dt, n, 2)),
                     kp_arg_tensor("index", kp_tensor_2d(bi, KP_I32, n, 4)),
                     kp_arg_tensor("params", kp_tensor_1d(bp, dt, 4)),
                     kp_arg_tensor("r", kp_tensor_2d(br, dt, n, 1)),
                     kp_arg_tensor("jac", kp_tensor_3d(bj, dt, n, 1, 4)),
                     kp_arg_tensor("status", kp_tensor_1d(bs, KP_I32, 2))};
    char name[64], ours[96];
    snprintf(name, sizeof name, "rat43 r+J n=%lld %s%s", (long long)n, f32 ? "f32" : "f64",
             round_suffix());
    kp_kernel_info info = {.struct_size = sizeof info};
    kp_kernel_info_get(kp_residual_kernel(res), &info);
    snprintf(ours, sizeof ours, "%s", info.name);
    kpb_row row = {.case_name = name, .ours = ours, .bytes = (double)n * (e * 7 + 16)};
    kp_status st = kpb_time_kernel(b, kp_residual_kernel(res), args, 6, &row.ours_s, &row.ours_p10,
                                   &row.ours_p90);
    if (st != KP_OK)
        die(name, kp_last_error(b->rt));
    /* The result against the hand-written loop, as a figure (relative, largest over r and J). */
    rat43_call c = {un, data, p, r, J};
    row.peer = "hand-written C, analytic Jacobian (1 thread, double)";
    row.peer_s = kpb_time_host(b, rat43_by_hand, &c);
    peer_ceres(b, &row, n, &c.r, &c.J, 4, rat43_on_ceres, &c);
    wall_and_load(b, &row, n, kp_residual_kernel(res), args, 6);
    double *dr = malloc(un * e), *dj = malloc(un * 4 * e), worst = 0;
    if (!dr || !dj)
        die(name, "out of host memory");
    kp_buffer_read(b->rt, br, 0, un * e, dr);
    kp_buffer_read(b->rt, bj, 0, un * 4 * e, dj);
    for (size_t i = 0; i < un * 5; i++) {
        const double want = i < un ? r[i] : J[i - un];
        const double got = f32 ? (i < un ? ((float *)dr)[i] : ((float *)dj)[i - un])
                               : (i < un ? dr[i] : dj[i - un]);
        worst = fmax(worst, fabs(got - want) / (1 + fabs(want)));
    }
    kpb_row_metric(&row, "max_rel_err", worst);
    kpb_row_metric(&row, "instances_per_s", (double)n / row.ours_s);
    kpb_add(b, &row);
    kp_buffer *bufs[] = {bd, bi, bp, br, bj, bs};
    for (int i = 0; i < 6; i++)
        kp_buffer_destroy(b->rt, bufs[i]);
    free(dr), free(dj), free(data), free(r), free(J), free(index), free(tmp);
    kp_residual_destroy(res);
    kp_expr_graph_destroy(g);
}

/* A mesh edge's length and its six partials by hand, one thread: the CPU baseline of the edge
 * term. */
typedef struct edge_call {
    size_t n;
    const double *L, *x;
    const int32_t *index;
    double *r, *J;
} edge_call;

static void edges_by_hand(void *user)
{
    const edge_call *c = user;
    for (size_t k = 0; k < c->n; k++) {
        const double *a = c->x + c->index[6 * k], *b = c->x + c->index[6 * k + 3];
        const double d[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
        const double len = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        c->r[k] = len - c->L[k];
        for (int i = 0; i < 3; i++) {
            c->J[6 * k + i] = -d[i] / len;
            c->J[6 * k + 3 + i] = d[i] / len;
        }
    }
}

static void edges_on_ceres(void *user)
{
#ifdef KP_HAVE_CERES
    const edge_call *c = user;
    kpc_edges(c->n, c->L, c->x, c->index, c->r, c->J, peer_threads);
#else
    (void)user;
#endif
}

/* The edge-length term over an icosphere's edges: the index gathers each edge's two vertices. */
static void bench_edges(kpb *b, int level, kp_precision prec)
{
    icosphere m;
    if (icosphere_make(level, &m) != 0)
        die("edges", "out of host memory");
    kp_expr_graph *g = graph("ax ay az bx by bz", "L", "norm3(bx - ax, by - ay, bz - az) - L");
    kp_residual *res;
    if (kp_residual_create(b->rt, g, prec, &res) != KP_OK)
        die("edges", kp_last_error(b->rt));
    const int f32 = kp_residual_precision(res) == KP_PRECISION_F32;
    const size_t e = f32 ? 4 : 8, n = (size_t)m.n_edges, P = (size_t)m.n_vertices * 3;
    double *L = malloc(n * sizeof *L), *r = malloc(n * sizeof *r), *J = malloc(n * 6 * sizeof *J);
    int32_t *index = malloc(n * 6 * sizeof *index);
    void *dl = malloc(n * e), *dx = malloc(P * e), *dr = malloc(n * e), *dj = malloc(n * 6 * e);
    if (!L || !r || !J || !index || !dl || !dx || !dr || !dj)
        die("edges", "out of host memory");
    for (size_t k = 0; k < n; k++) {
        L[k] = 0.9;
        for (int c = 0; c < 3; c++) {
            index[6 * k + c] = 3 * m.e[2 * k] + c;
            index[6 * k + 3 + c] = 3 * m.e[2 * k + 1] + c;
        }
    }
    for (size_t i = 0; i < n || i < P; i++) {
        if (f32) {
            if (i < n)
                ((float *)dl)[i] = (float)L[i];
            if (i < P)
                ((float *)dx)[i] = (float)m.v[i];
        } else {
            if (i < n)
                ((double *)dl)[i] = L[i];
            if (i < P)
                ((double *)dx)[i] = m.v[i];
        }
    }
    kp_buffer *bd, *bi, *bp, *br, *bj, *bs;
    const int32_t big[2] = {INT32_MAX, INT32_MAX};
    if (kp_buffer_create(b->rt, n * e, &bd) != KP_OK ||
        kp_buffer_create(b->rt, n * 24, &bi) != KP_OK ||
        kp_buffer_create(b->rt, P * e, &bp) != KP_OK ||
        kp_buffer_create(b->rt, n * e, &br) != KP_OK ||
        kp_buffer_create(b->rt, n * 6 * e, &bj) != KP_OK ||
        kp_buffer_create(b->rt, 8, &bs) != KP_OK)
        die("edges", kp_last_error(b->rt));
    kp_buffer_write(b->rt, bd, 0, n * e, dl);
    kp_buffer_write(b->rt, bi, 0, n * 24, index);
    kp_buffer_write(b->rt, bp, 0, P * e, dx);
    kp_buffer_write(b->rt, bs, 0, 8, big);
    const kp_dtype dt = f32 ? KP_F32 : KP_F64;
    const int64_t ni = (int64_t)n;
    kp_arg args[] = {kp_arg_tensor("data", kp_tensor_2d(bd, dt, ni, 1)),
                     kp_arg_tensor("index", kp_tensor_2d(bi, KP_I32, ni, 6)),
                     kp_arg_tensor("params", kp_tensor_1d(bp, dt, (int64_t)P)),
                     kp_arg_tensor("r", kp_tensor_2d(br, dt, ni, 1)),
                     kp_arg_tensor("jac", kp_tensor_3d(bj, dt, ni, 1, 6)),
                     kp_arg_tensor("status", kp_tensor_1d(bs, KP_I32, 2))};
    char name[64], ours[96];
    snprintf(name, sizeof name, "edges r+J n=%zu %s%s", n, f32 ? "f32" : "f64", round_suffix());
    kp_kernel_info info = {.struct_size = sizeof info};
    kp_kernel_info_get(kp_residual_kernel(res), &info);
    snprintf(ours, sizeof ours, "%s", info.name);
    kpb_row row = {.case_name = name, .ours = ours, .bytes = (double)n * (e * 14 + 24)};
    if (kpb_time_kernel(b, kp_residual_kernel(res), args, 6, &row.ours_s, &row.ours_p10,
                        &row.ours_p90) != KP_OK)
        die(name, kp_last_error(b->rt));
    edge_call c = {n, L, m.v, index, r, J};
    row.peer = "hand-written C, analytic Jacobian (1 thread, double)";
    row.peer_s = kpb_time_host(b, edges_by_hand, &c);
    peer_ceres(b, &row, ni, &c.r, &c.J, 6, edges_on_ceres, &c);
    wall_and_load(b, &row, ni, kp_residual_kernel(res), args, 6);
    kp_buffer_read(b->rt, br, 0, n * e, dr);
    kp_buffer_read(b->rt, bj, 0, n * 6 * e, dj);
    double worst = 0;
    for (size_t i = 0; i < n * 7; i++) {
        const double want = i < n ? r[i] : J[i - n];
        const double got = f32 ? (i < n ? ((float *)dr)[i] : ((float *)dj)[i - n])
                               : (i < n ? ((double *)dr)[i] : ((double *)dj)[i - n]);
        worst = fmax(worst, fabs(got - want) / (1 + fabs(want)));
    }
    kpb_row_metric(&row, "max_rel_err", worst);
    kpb_row_metric(&row, "instances_per_s", (double)n / row.ours_s);
    kpb_add(b, &row);
    kp_buffer *bufs[] = {bd, bi, bp, br, bj, bs};
    for (int i = 0; i < 6; i++)
        kp_buffer_destroy(b->rt, bufs[i]);
    free(L), free(r), free(J), free(index), free(dl), free(dx), free(dr), free(dj);
    kp_residual_destroy(res);
    kp_expr_graph_destroy(g);
    icosphere_free(&m);
}

/* The starting points copied over x before each timed launch (the solver overwrites x). */
typedef struct restart {
    kp_runtime *rt;
    kp_buffer *x0, *x;
    size_t bytes;
} restart;

static void restart_x(void *user)
{
    restart *r = user;
    kp_buffer_copy(r->rt, r->x0, 0, r->x, 0, r->bytes);
}

typedef struct host_fit {
    const kp_expr_graph *g;
    kp_lm_batch batch;
    const double *x0;
    size_t n_x;
} host_fit;

static void fit_on_host(void *user)
{
    host_fit *h = user;
    memcpy(h->batch.x, h->x0, h->n_x * sizeof *h->x0);
    kp_lm_solve_host(h->g, NULL, &h->batch);
}

enum { SIDE = 5, POINTS = SIDE * SIDE, GP = 5 };

/* --dump DIR: the fits SciPy's peer solves. */
static const char *dump;
enum { DUMP_FITS = 10000 };

/* Writes the first DUMP_FITS fits (or B) as DIR/gauss2d-B.f64: per fit 85 doubles in this
 * machine's byte order: the truth (a x0 y0 s c), the start, then the 25 points' u, v, z. */
static int dump_fits(size_t B, const double *data, const double *truth, const double *x0)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/gauss2d-%zu.f64", dump, B);
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "bench-solve: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    int bad = 0;
    for (size_t p = 0; p < B && p < DUMP_FITS; p++) {
        bad |= fwrite(truth + p * GP, sizeof *truth, GP, f) != GP;
        bad |= fwrite(x0 + p * GP, sizeof *x0, GP, f) != GP;
        bad |= fwrite(data + p * POINTS * 3, sizeof *data, POINTS * 3, f) != POINTS * 3;
    }
    bad |= fclose(f) != 0;
    if (bad)
        fprintf(stderr, "bench-solve: writing %s failed\n", path);
    return bad;
}

/* The largest relative error of a fit's estimates against its truth. */
static double param_err(const double *x, const double *truth)
{
    double worst = 0;
    for (int j = 0; j < GP; j++)
        worst = fmax(worst, fabs(x[j] - truth[j]) / fabs(truth[j]));
    return worst;
}

#ifdef KP_HAVE_CERES
typedef struct ceres_fits {
    size_t B;
    const int32_t *rows;
    const double *data, *x0;
    double *x;
    int *converged;
} ceres_fits;

static void fit_on_ceres(void *user)
{
    ceres_fits *c = user;
    memcpy(c->x, c->x0, c->B * GP * sizeof *c->x);
    if (kpc_gauss2d(c->B, c->rows, c->data, c->x, c->converged, 100, peer_threads) != 0)
        die("gauss2d", "Ceres's peer takes 25 points per fit");
}
#endif

/* Where Ceres is compiled in, it becomes the row's peer (one Problem per fit, DENSE_QR, on up to
 * 10^5 fits, 10^4 with --quick, scaled to B); the host reference's time moves to host_ref_s. */
static void peer_ceres_fits(kpb *b, kpb_row *row, size_t B, const int32_t *rows, const double *data,
                            const double *x0, const double *truth)
{
#ifdef KP_HAVE_CERES
    const size_t most = b->quick ? 10000 : 100000, cb = B < most ? B : most;
    ceres_fits c = {
        cb, rows, data, x0, malloc(cb * GP * sizeof *c.x), malloc(cb * sizeof *c.converged)};
    double *errs = malloc(cb * sizeof *errs);
    if (!c.x || !c.converged || !errs)
        die("gauss2d", "out of host memory");
    kpb_row_metric(row, "host_ref_s", row->peer_s);
    static char peer[128];
    snprintf(peer, sizeof peer, "%s, a Problem per fit, DENSE_QR (%d threads; %zu fits, scaled)",
             kpc_version(), peer_threads, cb);
    row->peer = peer;
    row->peer_s = kpb_time_host(b, fit_on_ceres, &c) * (double)B / (double)cb;
    size_t converged = 0;
    for (size_t p = 0; p < cb; p++) {
        converged += c.converged[p] != 0;
        errs[p] = param_err(c.x + p * GP, truth + p * GP);
    }
    kpb_row_metric(row, "ceres_fits_per_s", (double)B / row->peer_s);
    kpb_row_metric(row, "ceres_converged_fraction", (double)converged / (double)cb);
    kpb_row_metric(row, "ceres_median_param_rel_err", kpb_median(errs, cb));
    free(c.x), free(c.converged), free(errs);
#else
    (void)b, (void)row, (void)B, (void)rows, (void)data, (void)x0, (void)truth;
#endif
}

static void bench_gauss2d(kpb *b, size_t B, kp_precision prec)
{
    kp_expr_graph *g = graph("a x0 y0 s c", "u v z", gauss2d);
    kp_lm *lm;
    if (kp_lm_create(b->rt, g, prec, &lm) != KP_OK)
        die("gauss2d", kp_last_error(b->rt));
    const int f32 = kp_lm_precision(lm) == KP_PRECISION_F32;
    const size_t e = f32 ? 4 : 8, n = B * POINTS;
    double *data = malloc(n * 3 * sizeof *data), *truth = malloc(B * GP * sizeof *truth),
           *x0 = malloc(B * GP * sizeof *x0), *x = malloc(B * GP * sizeof *x);
    int32_t *rows = malloc((B + 1) * sizeof *rows), *status = malloc(B * sizeof *status);
    float *rnd = malloc((B * (GP * 2) + n) * sizeof *rnd);
    if (!data || !truth || !x0 || !x || !rows || !status || !rnd)
        die("gauss2d", "out of host memory");
    kpb_fill(rnd, B * GP * 2 + n, 11);
    for (size_t p = 0; p < B; p++) {
        const float *u = rnd + p * GP * 2;
        double *t = truth + p * GP;
        t[0] = 1.5 + 0.5 * u[0]; /* amplitude */
        t[1] = 2.0 + 0.3 * u[1]; /* centre, on the 0..4 grid */
        t[2] = 2.0 + 0.3 * u[2];
        t[3] = 1.0 + 0.2 * u[3];  /* width */
        t[4] = 0.1 + 0.05 * u[4]; /* offset */
        for (int j = 0; j < GP; j++)
            x0[p * GP + j] = t[j] * (1 + 0.1 * u[GP + j]); /* starts within 10% of the truth */
        rows[p] = (int32_t)(p * POINTS);
        for (int k = 0; k < POINTS; k++) {
            const double uu = k % SIDE, vv = k / SIDE, dx = uu - t[1], dy = vv - t[2];
            double *d = data + (p * POINTS + k) * 3;
            d[0] = uu;
            d[1] = vv;
            d[2] = t[0] * exp(-(dx * dx + dy * dy) / (2 * t[3] * t[3])) + t[4] +
                   0.01 * rnd[B * GP * 2 + p * POINTS + k];
        }
    }
    rows[B] = (int32_t)n;
    /* Device buffers in the solver's precision. */
    void *dd = malloc(n * 3 * e), *dx0 = malloc(B * GP * e);
    if (!dd || !dx0)
        die("gauss2d", "out of host memory");
    if (f32) {
        for (size_t i = 0; i < n * 3; i++)
            ((float *)dd)[i] = (float)data[i];
        for (size_t i = 0; i < B * GP; i++)
            ((float *)dx0)[i] = (float)x0[i];
    } else {
        memcpy(dd, data, n * 3 * e);
        memcpy(dx0, x0, B * GP * e);
    }
    kp_buffer *bd, *br, *bx0, *bx, *bc, *bi, *bs;
    if (kp_buffer_create(b->rt, n * 3 * e, &bd) != KP_OK ||
        kp_buffer_create(b->rt, (B + 1) * 4, &br) != KP_OK ||
        kp_buffer_create(b->rt, B * GP * e, &bx0) != KP_OK ||
        kp_buffer_create(b->rt, B * GP * e, &bx) != KP_OK ||
        kp_buffer_create(b->rt, B * e, &bc) != KP_OK ||
        kp_buffer_create(b->rt, B * 4, &bi) != KP_OK ||
        kp_buffer_create(b->rt, B * 4, &bs) != KP_OK)
        die("gauss2d", kp_last_error(b->rt));
    kp_buffer_write(b->rt, bd, 0, n * 3 * e, dd);
    kp_buffer_write(b->rt, br, 0, (B + 1) * 4, rows);
    kp_buffer_write(b->rt, bx0, 0, B * GP * e, dx0);
    const kp_dtype dt = f32 ? KP_F32 : KP_F64;
    const kp_lm_options o = kp_lm_options_default();
    kp_arg args[] = {
        kp_arg_tensor("data", kp_tensor_2d(bd, dt, (int64_t)n, 3)),
        kp_arg_tensor("rows", kp_tensor_1d(br, KP_I32, (int64_t)B + 1)),
        kp_arg_tensor("x", kp_tensor_2d(bx, dt, (int64_t)B, GP)),
        kp_arg_tensor("cost", kp_tensor_1d(bc, dt, (int64_t)B)),
        kp_arg_tensor("iterations", kp_tensor_1d(bi, KP_I32, (int64_t)B)),
        kp_arg_tensor("status", kp_tensor_1d(bs, KP_I32, (int64_t)B)),
        kp_arg_int("instances", (int64_t)n),
        kp_arg_int("max_iterations", o.max_iterations),
    };
    restart rs = {b->rt, bx0, bx, B * GP * e};
    b->before_timed = restart_x;
    b->before_timed_user = &rs;
    char name[64], ours[96];
    snprintf(name, sizeof name, "gauss2d fits B=%zu %s", B, f32 ? "f32" : "f64");
    kp_kernel_info info = {.struct_size = sizeof info};
    kp_kernel_info_get(kp_lm_kernel(lm), &info);
    snprintf(ours, sizeof ours, "%s", info.name);
    kpb_row row = {.case_name = name, .ours = ours, .bytes = (double)n * 3 * e};
    restart_x(&rs);
    kp_status st = kpb_time_kernel(b, kp_lm_kernel(lm), args, sizeof args / sizeof *args,
                                   &row.ours_s, &row.ours_p10, &row.ours_p90);
    b->before_timed = NULL;
    if (st != KP_OK)
        die(name, kp_last_error(b->rt));
    /* The last timed launch started from x0: its estimates and statuses. */
    void *dx = malloc(B * GP * e);
    if (!dx)
        die(name, "out of host memory");
    kp_buffer_read(b->rt, bx, 0, B * GP * e, dx);
    kp_buffer_read(b->rt, bs, 0, B * 4, status);
    size_t converged = 0;
    double *errs = malloc(B * sizeof *errs);
    if (!errs)
        die(name, "out of host memory");
    for (size_t p = 0; p < B; p++) {
        converged += KP_LM_CONVERGED(status[p]);
        double v[GP];
        for (int j = 0; j < GP; j++)
            v[j] = f32 ? ((float *)dx)[p * GP + j] : ((double *)dx)[p * GP + j];
        errs[p] = param_err(v, truth + p * GP);
    }
    kpb_row_metric(&row, "fits_per_s", (double)B / row.ours_s);
    kpb_row_metric(&row, "converged_fraction", (double)converged / (double)B);
    kpb_row_metric(&row, "median_param_rel_err", kpb_median(errs, B));
    /* The host reference on at most 10^4 of the fits, scaled to B. */
    const size_t hb = B < 10000 ? B : 10000;
    host_fit h = {.g = g, .x0 = x0, .n_x = hb * GP};
    h.batch = (kp_lm_batch){
        .struct_size = sizeof h.batch, .n_problems = hb, .rows = rows, .data = data, .x = x};
    row.peer = "kp_lm_solve_host (1 thread, double; timed on up to 10^4 fits, scaled)";
    row.peer_s = kpb_time_host(b, fit_on_host, &h) * (double)B / (double)hb;
    peer_ceres_fits(b, &row, B, rows, data, x0, truth);
    if (dump && dump_fits(B, data, truth, x0) != 0)
        exit(1);
    kpb_add(b, &row);
    kp_buffer *bufs[] = {bd, br, bx0, bx, bc, bi, bs};
    for (int i = 0; i < 7; i++)
        kp_buffer_destroy(b->rt, bufs[i]);
    free(dx), free(errs), free(dd), free(dx0), free(data), free(truth), free(x0), free(x);
    free(rows), free(status), free(rnd);
    kp_lm_destroy(lm);
    kp_expr_graph_destroy(g);
}

/* Counts the LM's steps, accepted or not: Ceres's iterations. */
static void count_step(void *user, const kp_lm_sparse_progress *p)
{
    (void)p;
    ++*(int *)user;
}

/* mesh-solve's problem (examples/mesh-solve, block-Jacobi CG to the solver's default tolerance
 * and cap, at most 50 Jacobian evaluations, function tolerance 1e-10) to convergence on the
 * device, and, where compiled in and `peer`, Ceres's
 * Levenberg-Marquardt on the same problem from the same start with SPARSE_NORMAL_CHOLESKY and
 * CGNR (Jacobi): a row for each. `solver`: -1 the library's choice (dense Cholesky up to its
 * default dense_max_parameters, else CG), 0 CG, 1 dense Cholesky (up to 4096 parameters; the
 * row's case then ends in "cg" or "dense"). The device's kernels are compiled by a solve at
 * level 1 on the same path first. */
static void bench_mesh(kpb *b, int level, kp_precision prec, int solver, int peer)
{
    enum { MAX_IT = 50 };
    const double ftol = 1e-10;
    mesh_problem mp, warm;
    if (mesh_problem_make(level, 0.1, 0.66, &mp) != 0 ||
        mesh_problem_make(1, 0.1, 0.66, &warm) != 0)
        die("mesh", "out of host memory");
    kp_expr_graph *g = graph("ax ay az bx by bz", "L w", MESH_RESIDUAL);
    kp_lm_sparse *lm;
    if (kp_lm_sparse_create(b->rt, g, prec, &lm) != KP_OK)
        die("mesh", kp_solve_last_error());
    const int f32 = kp_lm_sparse_precision(lm) == KP_PRECISION_F32;
    double *x = malloc(mp.P * sizeof *x);
    if (!x)
        die("mesh", "out of host memory");
    int steps = 0;
    kp_lm_options lo = kp_lm_options_default();
    lo.max_iterations = MAX_IT;
    lo.function_tolerance = ftol;
    kp_lm_sparse_options so = kp_lm_sparse_options_default();
    so.lm = &lo;
    so.block_size = 3;
    so.progress = count_step;
    so.user = &steps;
    if (solver >= 0)
        so.dense_max_parameters = solver ? 4096 : 0;
    if (solver == 1 && mp.P > so.dense_max_parameters) {
        fprintf(stderr,
                "bench-solve: mesh level %d: %zu parameters, above the dense path's 4096: "
                "no dense row\n",
                level, mp.P);
        goto done;
    }
    const int dense = so.dense_max_parameters > 0 && mp.P <= so.dense_max_parameters;
    kp_lm_sparse_options warm_so = so; /* the timed solve's path, so that it compiles nothing */
    warm_so.dense_max_parameters = dense ? 4096 : 0;
    kp_lm_sparse_report rep = {.struct_size = sizeof rep};
    kp_lm_sparse_problem pb = {.struct_size = sizeof pb,
                               .n_instances = warm.n,
                               .data = warm.data,
                               .index = warm.index,
                               .n_x = warm.P,
                               .x = warm.x0};
    if (kp_lm_sparse_solve(lm, &warm_so, &pb, &rep) != KP_OK)
        die("mesh", kp_solve_last_error());
    memcpy(x, mp.x0, mp.P * sizeof *x);
    pb = (kp_lm_sparse_problem){.struct_size = sizeof pb,
                                .n_instances = mp.n,
                                .data = mp.data,
                                .index = mp.index,
                                .n_x = mp.P,
                                .x = x};
    steps = 0;
    const double t0 = kpb_now();
    if (kp_lm_sparse_solve(lm, &so, &pb, &rep) != KP_OK)
        die("mesh", kp_solve_last_error());
    const double ours_s = kpb_now() - t0;
    char name[96];
    snprintf(name, sizeof name, "mesh level %d (%zu residuals) %s%s", level, 2 * mp.n,
             f32 ? "f32" : "f64",
             solver < 0 ? ""
             : solver   ? " dense"
                        : " cg");
    kpb_row row = {.case_name = name,
                   .ours = rep.dense ? "kp_lm_sparse_solve (dense Cholesky)"
                                     : "kp_lm_sparse_solve (block-Jacobi CG)",
                   .ours_s = ours_s,
                   .ours_p10 = ours_s,
                   .ours_p90 = ours_s};
    fprintf(stderr, "bench-solve: %s: %s after %d evaluations (%d steps), cost %.3e, %.2f s\n",
            name, kp_lm_status_name(rep.status), rep.iterations, steps, rep.cost, ours_s);
    kpb_row_metric(&row, "ms_per_step", 1e3 * ours_s / steps);
    kpb_row_metric(&row, "steps", steps);
    kpb_row_metric(&row, "final_cost", rep.cost);
    kpb_row_metric(&row, "converged", KP_LM_CONVERGED(rep.status));
    kpb_row_metric(&row, "evaluations", rep.iterations);
    kpb_row_metric(&row, "cg_iterations", (double)rep.cg_iterations);
    kpb_row_metric(&row, "dense", rep.dense);
    kpb_row_metric(&row, "parameters", (double)mp.P);
#ifdef KP_HAVE_CERES
    static const char *const solvers[] = {"SPARSE_NORMAL_CHOLESKY", "CGNR (Jacobi)"};
    for (int cgnr = 0; cgnr < 2 * peer; cgnr++) {
        memcpy(x, mp.x0, mp.P * sizeof *x);
        kpc_mesh_report cr;
        kpc_mesh(mp.n, mp.data, mp.index, mp.P, x, cgnr, MAX_IT, peer_seconds, ftol, peer_threads,
                 &cr);
        fprintf(stderr, "bench-solve: %s: Ceres %s: %d iterations, cost %.3e, %.2f s (%s)\n", name,
                solvers[cgnr], cr.iterations, cr.final_cost, cr.total_s, cr.message);
        char peer[128];
        snprintf(peer, sizeof peer, "%s LM, %s (%d threads)", kpc_version(), solvers[cgnr],
                 peer_threads);
        kpb_row r = row;
        r.peer = peer;
        r.peer_s = cr.total_s;
        kpb_row_metric(&r, "peer_ms_per_step", 1e3 * cr.minimizer_s / cr.iterations);
        kpb_row_metric(&r, "peer_steps", cr.iterations);
        kpb_row_metric(&r, "peer_final_cost", cr.final_cost);
        kpb_row_metric(&r, "peer_converged", cr.converged);
        kpb_row_metric(&r, "peer_linear_iterations", cr.linear_iterations);
        kpb_add(b, &r);
    }
    if (!peer)
        kpb_add(b, &row);
#else
    (void)peer;
    kpb_add(b, &row);
#endif
done:
    free(x);
    kp_lm_sparse_destroy(lm);
    kp_expr_graph_destroy(g);
    mesh_problem_free(&mp);
    mesh_problem_free(&warm);
}

/* Whether `part` is in the comma-separated list (NULL: every part). */
static int wanted(const char *list, const char *part)
{
    if (!list)
        return 1;
    const size_t n = strlen(part);
    for (const char *p = list; (p = strstr(p, part)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == 0))
            return 1;
    return 0;
}

/* A comma-separated list of integers in [lo, hi] into out (at most max): their count, or -1
 * (after saying why, naming the flag) for anything else. */
static int parse_list(const char *flag, const char *list, long long lo, long long hi,
                      long long *out, int max)
{
    int n = 0;
    for (const char *l = list; *l;) {
        char *end;
        const long long v = strtoll(l, &end, 10);
        if (end == l || v < lo || v > hi || (*end && *end != ',') || n == max) {
            fprintf(stderr, "bench-solve: %s %s: expected at most %d values, %lld to %lld\n", flag,
                    list, max, lo, hi);
            return -1;
        }
        out[n++] = v;
        l = *end ? end + 1 : end;
    }
    return n;
}

int main(int argc, char **argv)
{
    const char *threads = NULL, *parts = NULL, *precisions = NULL, *mesh_levels = NULL,
               *fit_list = NULL, *seconds = NULL, *round_list = NULL, *instances = NULL,
               *edge_levels = NULL, *mesh_solvers = NULL;
    const kpb_flag flags[] = {
        {"--threads", "the Ceres peer's threads (default: every core online)", NULL, &threads},
        {"--peer-seconds",
         "the most a Ceres mesh solve may take (default 120; then its time a "
         "step still counts)",
         NULL, &seconds},
        {"--parts", "comma-separated: rat43,edges,gauss2d,mesh (default: all)", NULL, &parts},
        {"--rounds", "times the rat43 and edges rows run, each ours then Ceres (default 1)", NULL,
         &round_list},
        {"--precision", "f64, f32 or f64,f32 (default: both, f64 where the device has it)", NULL,
         &precisions},
        {"--fits",
         "gauss2d batch sizes, comma-separated (default 10000,100000,1000000; --quick "
         "a tenth of the first two)",
         NULL, &fit_list},
        {"--instances",
         "Rat43 instance counts, comma-separated (default 100000,1000000,10000000; --quick the "
         "first two)",
         NULL, &instances},
        {"--edge-levels",
         "icosphere levels of the edge-term rows, 30 x 4^L edges (default 6,8,9: 1.2e5 to "
         "7.9e6; 11: 1.3e8; --quick 5,7)",
         NULL, &edge_levels},
        {"--mesh-levels", "icosphere levels of the mesh rows (default 4,6,7; --quick 2,3)", NULL,
         &mesh_levels},
        {"--mesh-solvers",
         "cg, dense or cg,dense: a mesh row per linear solver, Ceres beside the first (default: "
         "one row, the library's choice: dense Cholesky up to 256 parameters, level 1)",
         NULL, &mesh_solvers},
        {"--dump",
         "write each gauss2d size's first 10^4 fits to DIR/gauss2d-B.f64 (SciPy's "
         "peer: bench/peers/peer-solve.py --problems DIR)",
         NULL, &dump},
        {NULL, NULL, NULL, NULL}};
    kpb b;
    kpb_open_flags(&b, "bench-solve", argc, argv, flags);
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    peer_threads = threads ? atoi(threads) : online > 0 ? (int)online : 1;
    if (peer_threads < 1 || peer_threads > 1024) {
        fprintf(stderr, "bench-solve: --threads %s: expected 1 to 1024\n", threads);
        return 2;
    }
    rounds = round_list ? atoi(round_list) : 1;
    if (rounds < 1 || rounds > 100) {
        fprintf(stderr, "bench-solve: --rounds %s: expected 1 to 100\n", round_list);
        return 2;
    }
    peer_seconds = seconds ? strtod(seconds, NULL) : peer_seconds;
    if (!(peer_seconds > 0)) {
        fprintf(stderr, "bench-solve: --peer-seconds %s: expected a positive number\n", seconds);
        return 2;
    }
    const int fp64 = b.device.fp64 != 0;
    enum { MAX_LIST = 16 };
    long long sizes[MAX_LIST], edges[MAX_LIST], fits[MAX_LIST], levels[MAX_LIST];
    const int n_sizes = parse_list("--instances",
                                   instances ? instances
                                   : b.quick ? "100000,1000000"
                                             : "100000,1000000,10000000",
                                   1, 1000000000, sizes, MAX_LIST),
              n_edges = parse_list("--edge-levels",
                                   edge_levels ? edge_levels
                                   : b.quick   ? "5,7"
                                               : "6,8,9",
                                   1, 11, edges, MAX_LIST),
              n_fits = parse_list("--fits",
                                  fit_list  ? fit_list
                                  : b.quick ? "1000,10000"
                                            : "10000,100000,1000000",
                                  1, 100000000, fits, MAX_LIST),
              n_levels = parse_list("--mesh-levels",
                                    mesh_levels ? mesh_levels
                                    : b.quick   ? "2,3"
                                                : "4,6,7",
                                    0, 9, levels, MAX_LIST);
    if (n_sizes < 0 || n_edges < 0 || n_fits < 0 || n_levels < 0)
        return 2;
    int solvers[2] = {-1}, n_solvers = 1;
    if (mesh_solvers) {
        n_solvers = 0;
        if (wanted(mesh_solvers, "cg"))
            solvers[n_solvers++] = 0;
        if (wanted(mesh_solvers, "dense"))
            solvers[n_solvers++] = 1;
        if (n_solvers == 0) {
            fprintf(stderr, "bench-solve: --mesh-solvers %s: expected cg, dense or cg,dense\n",
                    mesh_solvers);
            return 2;
        }
    }
    for (int f32 = 0; f32 < 2; f32++) {
        if ((!f32 && !fp64) || (precisions && !wanted(precisions, f32 ? "f32" : "f64")))
            continue;
        const kp_precision p = f32 ? KP_PRECISION_F32 : KP_PRECISION_F64;
        for (round_no = 1; round_no <= rounds; round_no++) {
            for (int i = 0; i < n_sizes && wanted(parts, "rat43"); i++) {
                fprintf(stderr, "bench-solve: rat43 n=%lld %s%s\n", sizes[i], f32 ? "f32" : "f64",
                        round_suffix());
                bench_rat43(&b, (int64_t)sizes[i], p);
            }
            for (int i = 0; i < n_edges && wanted(parts, "edges"); i++) {
                fprintf(stderr, "bench-solve: edges level %lld %s%s\n", edges[i],
                        f32 ? "f32" : "f64", round_suffix());
                bench_edges(&b, (int)edges[i], p);
            }
        }
        for (int i = 0; i < n_fits && wanted(parts, "gauss2d"); i++) {
            fprintf(stderr, "bench-solve: gauss2d B=%lld %s\n", fits[i], f32 ? "f32" : "f64");
            bench_gauss2d(&b, (size_t)fits[i], p);
        }
        for (int i = 0; i < n_levels && wanted(parts, "mesh"); i++) {
            for (int k = 0; k < n_solvers; k++) {
                fprintf(stderr, "bench-solve: mesh level %lld %s%s\n", levels[i],
                        f32 ? "f32" : "f64",
                        solvers[k] < 0 ? ""
                        : solvers[k]   ? " dense"
                                       : " cg");
                bench_mesh(&b, (int)levels[i], p, solvers[k], k == 0);
            }
        }
    }
    kpb_note(&b,
             "rat43: %s; gauss2d: %s, 5 x 5 points, noise 0.01, starts within 10%% of "
             "random truths, default options",
             rat43, gauss2d);
#ifdef KP_HAVE_CERES
    kpb_note(&b,
             "peer: %s on %d threads (rows' hand_c_s, host_ref_s: the hand-written loop's and "
             "the host reference's seconds)",
             kpc_version(), peer_threads);
#else
    kpb_note(&b, "built without Ceres (cmake -DKP_WITH_CERES=ON where libceres-dev is "
                 "installed): peers are the hand-written loop and the host reference");
#endif
    kpb_note(&b, "mesh: examples/mesh-solve's problem, at most 50 Jacobian evaluations, function "
                 "tolerance 1e-10; a step is an LM iteration, accepted or not (Ceres's count)");
    kpb_note(&b, "peers in bench/peers/peer-solve.py: torch.func.vmap(jacfwd) on CUDA; "
                 "scipy.optimize.least_squares on the fits --dump writes");
    return kpb_close(&b);
}
