// SPDX-License-Identifier: Apache-2.0
/*
 * bench-cpu-routes: on a CPU device, the choices between a kernel's own GEMM and blas.gemm's
 * host-blas route (OpenBLAS as a native kernel in the queue), each against the OpenBLAS host path
 * of the same math, interleaved in one process: conv.conv2d with GEMM tiled and blas (COL_MAX_MB
 * 256 and 8) on the four bench-conv shapes, gru.step and gru.sequence with BATCH_GEMM at its
 * default, at 256 (the fused kernel below it) and at 1 (every product a GEMM), gru.step also
 * queued back to back, and blas.gemm at bench-blas's sizes against cblas_sgemm. Every figure is
 * wall time per call of a burst of back-to-back calls (each launch then kp_finish; queued: the
 * launches, then one kp_finish), so that the device and the host path are timed alike; bursts of
 * each variant alternate over rounds, after a pause that lets OpenBLAS's threads stop spinning, and
 * the median burst counts. Results are checked against the host path's before any timing.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

#ifdef KP_HAVE_OPENBLAS
#include <cblas.h>
#endif

enum { MAX_VARIANTS = 5, MAX_ROUNDS = 15 };

/* One tuning of a kernel a case compares: tunable `name` set to `value` and `name2` to `value2`
 * (NULL: none). `queued`: the burst's launches go back to back with one kp_finish at its end (a
 * loop of steps as an application runs it), not a kp_finish after each. */
typedef struct variant {
    const char *label; /* "GEMM=blas" */
    const char *name;
    int64_t value;
    const char *name2;
    int64_t value2;
    int queued;
} variant;

/* A case: its kernel launch, the host path, and a check of the device's result. */
typedef struct bcase {
    char name[96];
    const char *kernel;
    kp_kernel *k;
    kp_arg args[10];
    size_t n_args;
    variant v[MAX_VARIANTS];
    int n_variants;
    void (*host)(void *user);
    void *user;
    double flops;
    /* max relative difference of the device's result from the host path's (run first), and the
     * tolerance */
    double (*error)(kpb *b, void *user, double *tol);
} bcase;

static int rounds = 5;

static void nap(double seconds)
{
    struct timespec t = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&t, NULL);
}

static kp_status launch(kpb *b, bcase *c)
{
    kp_status st = kp_kernel_launch(b->rt, c->k, c->args, c->n_args, NULL);
    return st == KP_OK ? kp_finish(b->rt) : st;
}

static kp_status apply(kpb *b, bcase *c, int v)
{
    const variant *x = &c->v[v];
    kp_status st = x->name ? kp_kernel_tunable_set(b->rt, c->k, x->name, x->value) : KP_OK;
    if (st == KP_OK && x->name2)
        st = kp_kernel_tunable_set(b->rt, c->k, x->name2, x->value2);
    return st;
}

/* Seconds per call of a burst of `reps` calls of variant v (v == n_variants: the host path). */
static kp_status burst(kpb *b, bcase *c, int v, int reps, double *seconds)
{
    kp_status st = v < c->n_variants ? apply(b, c, v) : KP_OK;
    int queued = v < c->n_variants && c->v[v].queued;
    double t0 = kpb_now();
    for (int i = 0; i < reps && st == KP_OK; i++) {
        if (queued)
            st = kp_kernel_launch(b->rt, c->k, c->args, c->n_args, NULL);
        else if (v < c->n_variants)
            st = launch(b, c);
        else
            c->host(c->user);
    }
    if (queued && st == KP_OK)
        st = kp_finish(b->rt);
    *seconds = (kpb_now() - t0) / reps;
    return st;
}

static int run_case(kpb *b, bcase *c)
{
    int n = c->n_variants + 1, reps[MAX_VARIANTS + 1];
    double t[MAX_VARIANTS + 1][MAX_ROUNDS], err[MAX_VARIANTS], tol = 0;
    char note[400] = "";
    kp_status st = kp_kernel_find(b->rt, c->kernel, &c->k);
    fprintf(stderr, "bench-cpu-routes: %s %s\n", c->kernel, c->name);
    c->host(c->user);
    /* Each variant once, checked, then once more to size its bursts (about 50 ms). */
    for (int v = 0; v < n && st == KP_OK; v++) {
        if (v < c->n_variants) {
            st = apply(b, c, v);
            if (st == KP_OK)
                st = launch(b, c);
            if (st == KP_OK)
                err[v] = c->error(b, c->user, &tol);
            if (st == KP_OK && !(err[v] <= tol)) {
                st = KP_ERR_VERIFY;
                snprintf(note, sizeof note, "!! WRONG RESULT (%s): relative error %.3g > %.3g",
                         c->v[v].label, err[v], tol);
            }
        }
        double one = 0;
        if (st == KP_OK)
            st = burst(b, c, v, 1, &one);
        reps[v] = one > 0.05 ? 1 : one > 0 ? (int)(0.05 / one) + 1 : 100;
        reps[v] = reps[v] > 200 ? 200 : reps[v];
    }
    for (int r = 0; r < rounds && st == KP_OK; r++)
        for (int i = 0; i < n && st == KP_OK; i++) {
            int v = (i + r) % n; /* each round starts with another */
            nap(0.2);
            st = burst(b, c, v, reps[v], &t[v][r]);
        }
    if (st != KP_OK && !note[0])
        snprintf(note, sizeof note, "%s", kp_last_error(b->rt));
    double host = st == KP_OK ? kpb_median(t[c->n_variants], (size_t)rounds) : 0;
    for (int v = 0; v < c->n_variants; v++) {
        char ours[160], peer[96];
        snprintf(ours, sizeof ours, "%s %s", c->kernel, c->v[v].label);
        snprintf(peer, sizeof peer, "OpenBLAS host path (%d threads)", openblas_get_num_threads());
        kpb_row row = {.case_name = c->name,
                       .ours = ours,
                       .peer = peer,
                       .flops = c->flops,
                       .status = st,
                       .note = note[0] ? note : NULL};
        if (st == KP_OK) {
            row.ours_s = kpb_median(t[v], (size_t)rounds);
            row.peer_s = host;
            kpb_row_metric(&row, "max_rel_err", err[v]);
        }
        kpb_add(b, &row);
    }
    if (c->n_variants > 0)
        apply(b, c, 0);
    return st != KP_OK;
}

/* ---- buffers ------------------------------------------------------------------------------- */

static kp_buffer *upload(kpb *b, const float *x, size_t n)
{
    kp_buffer *d = NULL;
    if (kp_buffer_create(b->rt, n * sizeof(float), &d) == KP_OK && x &&
        kp_buffer_write(b->rt, d, 0, n * sizeof(float), x) != KP_OK) {
        kp_buffer_destroy(b->rt, d);
        d = NULL;
    }
    return d;
}

static float *random_floats(size_t n, uint64_t seed, double scale)
{
    float *x = malloc(n * sizeof *x);
    if (!x) {
        fprintf(stderr, "bench-cpu-routes: out of memory\n");
        exit(1);
    }
    kpb_fill(x, n, seed);
    for (size_t i = 0; i < n; i++)
        x[i] *= (float)scale;
    return x;
}

/* max |got - want| / max |want| of the device buffer `d` against `want`. */
static double rel_error(kpb *b, kp_buffer *d, const float *want, size_t n)
{
    float *got = malloc(n * sizeof *got);
    double diff = 0, ref = 0;
    if (!got || kp_buffer_read(b->rt, d, 0, n * sizeof *got, got) != KP_OK) {
        free(got);
        return INFINITY;
    }
    for (size_t i = 0; i < n; i++) {
        if (isnan(got[i]))
            diff = INFINITY;
        diff = fmax(diff, fabs((double)got[i] - want[i]));
        ref = fmax(ref, fabs((double)want[i]));
    }
    free(got);
    return diff / (ref > 0 ? ref : 1.0);
}

/* ---- conv.conv2d ----------------------------------------------------------------------------- */

typedef struct conv_problem {
    int64_t N, C, H, W, K, KH, KW, stride, pad, OH, OW, L, R;
    float *x, *w, *y, *col, *bias; /* bias: NULL for none */
    kp_buffer *dy;
} conv_problem;

/* bench-conv's host path: per image, im2col on the host, then y_n = W col_n (OpenBLAS), then
 * the bias where there is one. */
static void host_conv(void *user)
{
    conv_problem *p = user;
    for (int64_t n = 0; n < p->N; n++) {
        for (int64_t r = 0; r < p->R; r++) {
            int64_t c = r / (p->KH * p->KW), kh = r / p->KW % p->KH, kw = r % p->KW;
            const float *plane = p->x + (n * p->C + c) * p->H * p->W;
            for (int64_t oh = 0; oh < p->OH; oh++) {
                int64_t h = oh * p->stride - p->pad + kh;
                for (int64_t ow = 0; ow < p->OW; ow++) {
                    int64_t w = ow * p->stride - p->pad + kw;
                    int in = h >= 0 && h < p->H && w >= 0 && w < p->W;
                    p->col[r * p->L + oh * p->OW + ow] = in ? plane[h * p->W + w] : 0.0f;
                }
            }
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)p->K, (int)p->L, (int)p->R,
                    1.0f, p->w, (int)p->R, p->col, (int)p->L, 0.0f, p->y + n * p->K * p->L,
                    (int)p->L);
        for (int64_t k = 0; p->bias && k < p->K; k++)
            for (int64_t l = 0; l < p->L; l++)
                p->y[(n * p->K + k) * p->L + l] += p->bias[k];
    }
}

static double conv_error(kpb *b, void *user, double *tol)
{
    conv_problem *p = user;
    *tol = 4.0 * (double)p->R * 0x1p-24;
    return rel_error(b, p->dy, p->y, (size_t)(p->N * p->K * p->L));
}

static int bench_conv(kpb *b, const int64_t s[9], int with_bias)
{
    conv_problem p = {.N = s[0],
                      .C = s[1],
                      .H = s[2],
                      .W = s[3],
                      .K = s[4],
                      .KH = s[5],
                      .KW = s[6],
                      .stride = s[7],
                      .pad = s[8]};
    if (b->quick)
        p.N = 2;
    p.OH = (p.H + 2 * p.pad - p.KH) / p.stride + 1;
    p.OW = (p.W + 2 * p.pad - p.KW) / p.stride + 1;
    p.L = p.OH * p.OW;
    p.R = p.C * p.KH * p.KW;
    size_t nx = (size_t)(p.N * p.C * p.H * p.W), nw = (size_t)(p.K * p.R),
           ny = (size_t)(p.N * p.K * p.L);
    p.x = random_floats(nx, 21, 1.0);
    p.w = random_floats(nw, 22, 1.0 / sqrt((double)p.R));
    p.y = random_floats(ny, 23, 1.0);
    p.col = random_floats((size_t)(p.R * p.L), 24, 1.0);
    p.bias = with_bias ? random_floats((size_t)p.K, 25, 1.0) : NULL;
    kp_buffer *dx = upload(b, p.x, nx), *dw = upload(b, p.w, nw);
    kp_buffer *db = with_bias ? upload(b, p.bias, (size_t)p.K) : NULL;
    p.dy = upload(b, NULL, ny);
    bcase c = {.kernel = "conv.conv2d",
               .v = {{"GEMM=tiled", "GEMM", 2, "COL_MAX_MB", 256},
                     {"GEMM=blas", "GEMM", 1, "COL_MAX_MB", 256},
                     {"GEMM=tiled COL_MAX_MB=8", "GEMM", 2, "COL_MAX_MB", 8},
                     {"GEMM=blas COL_MAX_MB=8", "GEMM", 1, "COL_MAX_MB", 8}},
               .n_variants = 4,
               .host = host_conv,
               .user = &p,
               .flops = 2.0 * (double)ny * (double)p.R,
               .error = conv_error};
    snprintf(c.name, sizeof c.name, "N%lld C%lld %lldx%lld K%lld %lldx%lld%s%s%s", (long long)p.N,
             (long long)p.C, (long long)p.H, (long long)p.W, (long long)p.K, (long long)p.KH,
             (long long)p.KW, p.pad ? " p1" : "", p.stride > 1 ? " s2" : "",
             with_bias ? " bias" : "");
    int64_t xs[] = {p.N, p.C, p.H, p.W}, ws[] = {p.K, p.C, p.KH, p.KW},
            ys[] = {p.N, p.K, p.OH, p.OW};
    kp_arg args[] = {KP_ARG_TENSOR("x", kp_tensor_nd(dx, KP_F32, 4, xs)),
                     KP_ARG_TENSOR("w", kp_tensor_nd(dw, KP_F32, 4, ws)),
                     KP_ARG_TENSOR("y", kp_tensor_nd(p.dy, KP_F32, 4, ys)),
                     KP_ARG_INT("stride_h", p.stride),
                     KP_ARG_INT("stride_w", p.stride),
                     KP_ARG_INT("pad_h", p.pad),
                     KP_ARG_INT("pad_w", p.pad)};
    memcpy(c.args, args, sizeof args);
    c.n_args = sizeof args / sizeof args[0];
    if (with_bias)
        c.args[c.n_args++] = KP_ARG_TENSOR("bias", kp_tensor_1d(db, KP_F32, p.K));
    int failed = dx && dw && p.dy && (db || !with_bias) ? run_case(b, &c) : 1;
    kp_buffer_destroy(b->rt, db);
    kp_buffer_destroy(b->rt, dx);
    kp_buffer_destroy(b->rt, dw);
    kp_buffer_destroy(b->rt, p.dy);
    free(p.x), free(p.w), free(p.y), free(p.col), free(p.bias);
    return failed;
}

/* ---- gru.step and gru.sequence --------------------------------------------------------------- */

/* T steps of B rows (gru.step: T 1), linear_before_reset 1, biases present. */
typedef struct gru_problem {
    int T, B, NI, H; /* NI: "I" is <complex.h>'s, which cblas.h includes */
    float *w_ih, *w_hh, *b_ih, *b_hh, *x, *h0;
    float *gx, *gh, *h_all; /* host path: [T B, 3H], [B, 3H], [T, B, H] */
    kp_buffer *d_out;
} gru_problem;

static float sigmoidf(float v)
{
    return 1.0f / (1.0f + expf(-v));
}

/* gx = x W_ih^T + b_ih for every step in one sgemm (a GEMV at T B = 1), then per step gh = h
 * W_hh^T + b_hh and the gates. */
static void host_gru(void *user)
{
    gru_problem *p = user;
    int G = 3 * p->H, TB = p->T * p->B;
    for (int i = 0; i < TB; i++)
        memcpy(p->gx + (size_t)i * G, p->b_ih, (size_t)G * sizeof(float));
    if (TB == 1)
        cblas_sgemv(CblasRowMajor, CblasNoTrans, G, p->NI, 1.0f, p->w_ih, p->NI, p->x, 1, 1.0f,
                    p->gx, 1);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, TB, G, p->NI, 1.0f, p->x, p->NI,
                    p->w_ih, p->NI, 1.0f, p->gx, G);
    const float *h = p->h0;
    for (int t = 0; t < p->T; t++) {
        for (int i = 0; i < p->B; i++)
            memcpy(p->gh + (size_t)i * G, p->b_hh, (size_t)G * sizeof(float));
        if (p->B == 1)
            cblas_sgemv(CblasRowMajor, CblasNoTrans, G, p->H, 1.0f, p->w_hh, p->H, h, 1, 1.0f,
                        p->gh, 1);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, p->B, G, p->H, 1.0f, h, p->H,
                        p->w_hh, p->H, 1.0f, p->gh, G);
        float *out = p->h_all + (size_t)t * p->B * p->H;
        for (int i = 0; i < p->B; i++) {
            const float *gx = p->gx + ((size_t)t * p->B + i) * G, *gh = p->gh + (size_t)i * G;
            for (int u = 0; u < p->H; u++) {
                float r = sigmoidf(gx[u] + gh[u]), z = sigmoidf(gx[p->H + u] + gh[p->H + u]);
                float n = tanhf(gx[2 * p->H + u] + r * gh[2 * p->H + u]);
                out[(size_t)i * p->H + u] = (1.0f - z) * n + z * h[(size_t)i * p->H + u];
            }
        }
        h = out;
    }
}

static double gru_error(kpb *b, void *user, double *tol)
{
    gru_problem *p = user;
    *tol = 1e-4;
    return rel_error(b, p->d_out, p->h_all, (size_t)p->T * p->B * p->H);
}

static int bench_gru(kpb *b, int T, int B, int ni, int H, int sequence)
{
    gru_problem p = {.T = T, .B = B, .NI = ni, .H = H};
    size_t G = 3 * (size_t)H;
    double k = 1.0 / sqrt((double)H);
    p.w_ih = random_floats(G * ni, 31, k), p.w_hh = random_floats(G * H, 32, k);
    p.b_ih = random_floats(G, 33, k), p.b_hh = random_floats(G, 34, k);
    p.x = random_floats((size_t)T * B * ni, 35, 1.0), p.h0 = random_floats((size_t)B * H, 36, 1.0);
    p.gx = random_floats((size_t)T * B * G, 37, 1.0), p.gh = random_floats(B * G, 38, 1.0);
    p.h_all = random_floats((size_t)T * B * H, 39, 1.0);
    kp_buffer *d[] = {upload(b, p.w_ih, G * ni),
                      upload(b, p.w_hh, G * H),
                      upload(b, p.b_ih, G),
                      upload(b, p.b_hh, G),
                      upload(b, p.x, (size_t)T * B * ni),
                      upload(b, p.h0, (size_t)B * H)};
    p.d_out = upload(b, NULL, (size_t)T * B * H);
    /* The default, the former CPU default (256: the fused kernel below it), every product a GEMM,
     * and for a step the default queued back to back. */
    bcase c = {.kernel = sequence ? "gru.sequence" : "gru.step",
               .v = {{"BATCH_GEMM=default", NULL, 0, NULL, 0, 0},
                     {"BATCH_GEMM=256", "BATCH_GEMM", 256, NULL, 0, 0},
                     {"BATCH_GEMM=1", "BATCH_GEMM", 1, NULL, 0, 0},
                     {"BATCH_GEMM=default, queued", NULL, 0, NULL, 0, 1}},
               .n_variants = sequence ? 3 : 4,
               .host = host_gru,
               .user = &p,
               .flops = 2.0 * (double)T * B * G * (ni + H),
               .error = gru_error};
    snprintf(c.name, sizeof c.name, "%sT%d B%d I%d H%d", sequence ? "" : "step ", T, B, ni, H);
    int ok = p.d_out != NULL;
    for (size_t i = 0; i < 6; i++)
        ok = ok && d[i];
    kp_arg args[] = {KP_ARG_TENSOR("w_ih", kp_tensor_2d(d[0], KP_F32, (int64_t)G, ni)),
                     KP_ARG_TENSOR("w_hh", kp_tensor_2d(d[1], KP_F32, (int64_t)G, H)),
                     KP_ARG_TENSOR("b_ih", kp_tensor_1d(d[2], KP_F32, (int64_t)G)),
                     KP_ARG_TENSOR("b_hh", kp_tensor_1d(d[3], KP_F32, (int64_t)G)),
                     sequence ? KP_ARG_TENSOR("x", kp_tensor_3d(d[4], KP_F32, T, B, ni))
                              : KP_ARG_TENSOR("x", kp_tensor_2d(d[4], KP_F32, B, ni)),
                     sequence ? KP_ARG_TENSOR("h0", kp_tensor_2d(d[5], KP_F32, B, H))
                              : KP_ARG_TENSOR("h", kp_tensor_2d(d[5], KP_F32, B, H)),
                     sequence ? KP_ARG_TENSOR("h_all", kp_tensor_3d(p.d_out, KP_F32, T, B, H))
                              : KP_ARG_TENSOR("h_out", kp_tensor_2d(p.d_out, KP_F32, B, H))};
    memcpy(c.args, args, sizeof args);
    c.n_args = sizeof args / sizeof args[0];
    int failed = 1;
    if (ok) {
        /* The default variant: BATCH_GEMM as the device resolves it, read back for the label. */
        kp_kernel *kk;
        kp_tuning_info ti = {.struct_size = sizeof ti};
        static char label[48], queued[48];
        if (kp_kernel_find(b->rt, c.kernel, &kk) == KP_OK)
            for (size_t i = 0; kp_kernel_tuning(b->rt, kk, i, &ti) == KP_OK; i++)
                if (strcmp(ti.name, "BATCH_GEMM") == 0) {
                    snprintf(label, sizeof label, "BATCH_GEMM=%lld", (long long)ti.value);
                    snprintf(queued, sizeof queued, "BATCH_GEMM=%lld, queued", (long long)ti.value);
                    c.v[0] = (variant){label, "BATCH_GEMM", ti.value, NULL, 0, 0};
                    c.v[3] = (variant){queued, "BATCH_GEMM", ti.value, NULL, 0, 1};
                }
        failed = run_case(b, &c);
    }
    for (size_t i = 0; i < 6; i++)
        kp_buffer_destroy(b->rt, d[i]);
    kp_buffer_destroy(b->rt, p.d_out);
    free(p.w_ih), free(p.w_hh), free(p.b_ih), free(p.b_hh), free(p.x), free(p.h0);
    free(p.gx), free(p.gh), free(p.h_all);
    return failed;
}

/* ---- blas.gemm ------------------------------------------------------------------------------- */

typedef struct gemm_problem {
    int m, n, k;
    float *a, *bm, *c;
    kp_buffer *dc;
} gemm_problem;

static void host_gemm(void *user)
{
    gemm_problem *p = user;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, p->m, p->n, p->k, 1.0f, p->a, p->k,
                p->bm, p->n, 0.0f, p->c, p->n);
}

static double gemm_error(kpb *b, void *user, double *tol)
{
    gemm_problem *p = user;
    *tol = 4.0 * p->k * 0x1p-24;
    return rel_error(b, p->dc, p->c, (size_t)p->m * p->n);
}

/* What bench-blas reports for a library-backed launch, the event's span (a marker before the
 * call to the end of its last command), against the wall time of the same launches, each on its
 * own after the queue emptied: 0.2 s apart, timed from the launch to the end of the wait. */
static int event_span(kpb *b, bcase *c)
{
    double span[MAX_ROUNDS * 3], wall[MAX_ROUNDS * 3];
    int runs = rounds * 3;
    kp_status st = KP_OK;
    for (int r = 0; r < runs && st == KP_OK; r++) {
        kp_event *ev = NULL;
        nap(0.2);
        double t0 = kpb_now();
        st = kp_kernel_launch(b->rt, c->k, c->args, c->n_args, &ev);
        if (st == KP_OK)
            st = kp_event_elapsed(b->rt, ev, &span[r]);
        wall[r] = kpb_now() - t0;
        kp_event_destroy(b->rt, ev);
    }
    kpb_row row = {.case_name = c->name,
                   .ours = "blas.gemm event span, one launch",
                   .peer = "the same launch's wall time",
                   .flops = c->flops,
                   .status = st};
    if (st == KP_OK) {
        row.ours_s = kpb_median(span, (size_t)runs);
        row.peer_s = kpb_median(wall, (size_t)runs);
    }
    kpb_add(b, &row);
    return st != KP_OK;
}

static int bench_gemm(kpb *b, int m, int n, int k)
{
    gemm_problem p = {.m = m, .n = n, .k = k};
    p.a = random_floats((size_t)m * k, 41, 1.0), p.bm = random_floats((size_t)k * n, 42, 1.0);
    p.c = random_floats((size_t)m * n, 43, 1.0);
    kp_buffer *da = upload(b, p.a, (size_t)m * k), *db = upload(b, p.bm, (size_t)k * n);
    p.dc = upload(b, NULL, (size_t)m * n);
    bcase c = {.kernel = "blas.gemm",
               .v = {{"route=host-blas", NULL, 0, NULL, 0}},
               .n_variants = 1,
               .host = host_gemm,
               .user = &p,
               .flops = 2.0 * m * n * k,
               .error = gemm_error};
    snprintf(c.name, sizeof c.name, "%dx%dx%d", m, n, k);
    kp_arg args[] = {KP_ARG_TENSOR("A", kp_tensor_2d(da, KP_F32, m, k)),
                     KP_ARG_TENSOR("B", kp_tensor_2d(db, KP_F32, k, n)),
                     KP_ARG_TENSOR("C", kp_tensor_2d(p.dc, KP_F32, m, n))};
    memcpy(c.args, args, sizeof args);
    c.n_args = 3;
    int failed = da && db && p.dc ? run_case(b, &c) : 1;
    if (!failed)
        failed = event_span(b, &c);
    kp_buffer_destroy(b->rt, da);
    kp_buffer_destroy(b->rt, db);
    kp_buffer_destroy(b->rt, p.dc);
    free(p.a), free(p.bm), free(p.c);
    return failed;
}

/* ---- threads ------------------------------------------------------------------------------- */

/*
 * Whether OpenBLAS's threads, which spin for a while after each call (OPENBLAS_THREAD_TIMEOUT),
 * slow the PoCL kernel that follows a host-blas GEMM in the queue: conv.im2col (PoCL's workers
 * on every core) timed alone after the queue idled, and timed right after a 512^3 blas.gemm,
 * alternated. Wall time of the im2col launch and kp_finish only; medians over the rounds.
 */
static int bench_threads(kpb *b)
{
    enum { n = 512, N = 8, C = 64, HW = 56, R = C * 9 };
    kp_kernel *gemm, *im2col;
    if (kp_kernel_find(b->rt, "blas.gemm", &gemm) != KP_OK ||
        kp_kernel_find(b->rt, "conv.im2col", &im2col) != KP_OK)
        return 1;
    float *x = random_floats((size_t)N * C * HW * HW, 51, 1.0), *m = random_floats(n * n, 52, 1.0);
    kp_buffer *dx = upload(b, x, (size_t)N * C * HW * HW),
              *dcol = upload(b, NULL, (size_t)N * R * HW * HW);
    kp_buffer *da = upload(b, m, n * n), *dc = upload(b, NULL, n * n);
    kp_arg g[] = {KP_ARG_TENSOR("A", kp_tensor_2d(da, KP_F32, n, n)),
                  KP_ARG_TENSOR("B", kp_tensor_2d(da, KP_F32, n, n)),
                  KP_ARG_TENSOR("C", kp_tensor_2d(dc, KP_F32, n, n))};
    kp_arg a[] = {KP_ARG_TENSOR("im", kp_tensor_nd(dx, KP_F32, 4, (int64_t[]){N, C, HW, HW})),
                  KP_ARG_TENSOR("col", kp_tensor_3d(dcol, KP_F32, N, R, HW * HW)),
                  KP_ARG_INT("kernel_h", 3),
                  KP_ARG_INT("kernel_w", 3),
                  KP_ARG_INT("pad_h", 1),
                  KP_ARG_INT("pad_w", 1)};
    double idle[MAX_ROUNDS * 3], after[MAX_ROUNDS * 3];
    int runs = rounds * 3;
    kp_status st = dx && dcol && da && dc ? KP_OK : KP_ERR_OUT_OF_MEMORY;
    fprintf(stderr, "bench-cpu-routes: conv.im2col after idling and after blas.gemm\n");
    for (int r = -1; r < runs && st == KP_OK; r++) {
        nap(0.2);
        double t0 = kpb_now();
        st = kp_kernel_launch(b->rt, im2col, a, 6, NULL);
        if (st == KP_OK)
            st = kp_finish(b->rt);
        double t1 = kpb_now();
        st = st == KP_OK ? kp_kernel_launch(b->rt, gemm, g, 3, NULL) : st;
        st = st == KP_OK ? kp_finish(b->rt) : st;
        double t2 = kpb_now();
        st = st == KP_OK ? kp_kernel_launch(b->rt, im2col, a, 6, NULL) : st;
        st = st == KP_OK ? kp_finish(b->rt) : st;
        if (r >= 0) { /* r -1 warms up */
            idle[r] = t1 - t0;
            after[r] = kpb_now() - t2;
        }
    }
    kpb_row row = {.case_name = "N8 C64 56x56 3x3 p1",
                   .ours = "conv.im2col right after a 512^3 blas.gemm",
                   .peer = "conv.im2col after 0.2 s idle",
                   .bytes = 4.0 * ((double)N * C * HW * HW + (double)N * R * HW * HW),
                   .status = st};
    if (st == KP_OK) {
        row.ours_s = kpb_median(after, (size_t)runs);
        row.peer_s = kpb_median(idle, (size_t)runs);
    } else {
        row.note = (char *)kp_last_error(b->rt);
    }
    kpb_add(b, &row);
    kp_buffer_destroy(b->rt, dx);
    kp_buffer_destroy(b->rt, dcol);
    kp_buffer_destroy(b->rt, da);
    kp_buffer_destroy(b->rt, dc);
    free(x), free(m);
    return st != KP_OK;
}

int main(int argc, char **argv)
{
    const char *only = NULL, *rounds_text = NULL;
    const kpb_flag flags[] = {
        {"--only",
         "conv, gru or gemm: one family's cases; threads: a PoCL kernel after a host-blas GEMM",
         NULL, &only},
        {"--rounds", "bursts of each variant (default 5, at most 15)", NULL, &rounds_text},
        {NULL, NULL, NULL, NULL},
    };
    kpb b;
    kpb_open_flags(&b, "bench-cpu-routes", argc, argv, flags);
    if (rounds_text)
        rounds = atoi(rounds_text);
    rounds = rounds < 1 ? 1 : rounds > MAX_ROUNDS ? MAX_ROUNDS : rounds;
    if (b.quick && !rounds_text)
        rounds = 3;
    kpb_note(&b,
             "wall time per call of bursts of back-to-back calls (launch, kp_finish) for both "
             "sides; %d bursts of each variant alternated, 0.2 s apart; the median",
             rounds);
    kpb_note_tuning(&b, "blas.gemm");
    int failures = 0;
    if (!only || strcmp(only, "gemm") == 0) {
        const int sizes[][3] = {
            {256, 256, 256}, {512, 512, 512}, {64, 768, 256}, {1024, 1024, 1024}};
        for (size_t i = 0; i < 4; i++)
            failures += bench_gemm(&b, sizes[i][0], sizes[i][1], sizes[i][2]);
    }
    if (!only || strcmp(only, "conv") == 0) {
        kpb_note_tuning(&b, "conv.conv2d");
        const int64_t shapes[][9] = {{64, 1, 28, 28, 16, 5, 5, 1, 0},
                                     {64, 64, 56, 56, 64, 3, 3, 1, 1},
                                     {32, 128, 28, 28, 128, 3, 3, 1, 0},
                                     {8, 3, 224, 224, 64, 7, 7, 2, 0}};
        for (size_t i = 0; i < 4; i++)
            failures += bench_conv(&b, shapes[i], 0);
        /* The bias: through the output pass (tiled) or a pass of its own (blas, into y). */
        failures += bench_conv(&b, shapes[0], 1);
        failures += bench_conv(&b, shapes[3], 1);
    }
    if (!only || strcmp(only, "gru") == 0) {
        kpb_note_tuning(&b, "gru.sequence");
        failures += bench_gru(&b, 1, 1, 321, 256, 0);   /* bench-gru's step */
        failures += bench_gru(&b, 1, 1, 1024, 1024, 0); /* kernelport bench's h1024 */
        failures += bench_gru(&b, 1, 64, 512, 512, 0);  /* a batch of rows below 256 */
        failures += bench_gru(&b, 50, 1, 321, 256, 1);  /* kernelport bench's seed */
        failures += bench_gru(&b, 50, 16, 64, 256, 1);
        failures += bench_gru(&b, 50, 128, 65, 64, 1); /* kernelport bench's wm */
        failures += bench_gru(&b, 15, 128, 512, 512, 1);
    }
    if (only && strcmp(only, "threads") == 0)
        failures += bench_threads(&b);
    if (failures)
        kpb_note(&b, "!! %d case(s) FAILED: see the rows marked !!", failures);
    int rc = kpb_close(&b);
    return rc ? rc : failures ? 1 : 0;
}
