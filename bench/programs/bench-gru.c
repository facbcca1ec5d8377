/* SPDX-License-Identifier: Apache-2.0 */
/* bench-gru: gru.rollout (and gru.step when present) against an OpenBLAS host path. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "kernelport/ops/gru.h"

#ifdef KP_HAVE_OPENBLAS
#include <cblas.h>
#endif

/* y = A x (+ y when beta is 1): A is rows x cols with leading dimension lda, row-major. */
static void sgemv(int rows, int cols, const float *A, int lda, const float *x, float beta, float *y)
{
#ifdef KP_HAVE_OPENBLAS
    cblas_sgemv(CblasRowMajor, CblasNoTrans, rows, cols, 1.0f, A, lda, x, 1, beta, y, 1);
#else
    for (int r = 0; r < rows; r++) {
        float s = 0;
        for (int c = 0; c < cols; c++)
            s += A[(size_t)r * lda + c] * x[c];
        y[r] = s + (beta != 0 ? y[r] : 0);
    }
#endif
}

static float sigmoidf(float x)
{
    return 1.0f / (1.0f + expf(-x));
}

/* One rollout problem: the seed plan's ensemble at some sizes, host and device copies. */
typedef struct rollout {
    const char *name;
    int E, B, F, H, S, T;
    int NI;           /* F + 1 + S, the input size ("I" is <complex.h>'s, which cblas.h includes) */
    float *w[12];     /* w_ih, w_hh, b_ih, b_hh, w_p, b_p, w_y, b_y, f, y0, z0, h0 */
    size_t n[12];     /* their element counts */
    kp_buffer *d[16]; /* the same, then y, h_T, entropy, hnorm */
    float *y, *h_t;   /* device results read back */
    float *ref_y, *ref_h; /* the host path's results */
    float *scratch;       /* the host path's work space */
} rollout;

enum { W_IH, W_HH, B_IH, B_HH, W_P, B_P, W_Y, B_Y, F_IN, Y0, Z0, H0 };
static const char *const names[16] = {"w_ih", "w_hh", "b_ih",    "b_hh", "w_p", "b_p",
                                      "w_y",  "b_y",  "f",       "y0",   "z0",  "h0",
                                      "y",    "h_T",  "entropy", "hnorm"};

static void rollout_fini(kpb *b, rollout *p)
{
    for (int i = 0; i < 12; i++)
        free(p->w[i]);
    for (int i = 0; i < 16; i++)
        kp_buffer_destroy(b->rt, p->d[i]);
    free(p->y);
    free(p->h_t);
    free(p->ref_y);
    free(p->ref_h);
    free(p->scratch);
}

/* Random weights scaled as PyTorch initialises them (U(-1/sqrt(H), 1/sqrt(H))), inputs in
 * [-1, 1); uploads everything. Returns KP_OK or the failing call's status. */
static kp_status rollout_init(kpb *b, rollout *p)
{
    const size_t E = (size_t)p->E, B = (size_t)p->B, H = (size_t)p->H, S = (size_t)p->S;
    p->NI = p->F + 1 + p->S;
    const size_t sizes[12] = {E * 3 * H * (size_t)p->NI,
                              E * 3 * H * H,
                              E * 3 * H,
                              E * 3 * H,
                              E * S * H,
                              E * S,
                              E * (H + S),
                              E,
                              B * (size_t)p->F,
                              B,
                              E * B * S,
                              E * B * H};
    const float scale = 1.0f / sqrtf((float)p->H);
    for (int i = 0; i < 12; i++) {
        p->n[i] = sizes[i];
        p->w[i] = malloc((sizes[i] ? sizes[i] : 1) * sizeof(float));
        if (!p->w[i])
            return KP_ERR_OUT_OF_MEMORY;
        kpb_fill(p->w[i], sizes[i], 100 + (uint64_t)i);
        if (i <= B_Y)
            for (size_t j = 0; j < sizes[i]; j++)
                p->w[i][j] *= i == B_P ? 1.5f : scale;
        if (i == Z0) /* a softmax-like start: positive, summing to about 1 */
            for (size_t j = 0; j < sizes[i]; j++)
                p->w[i][j] = (p->w[i][j] + 1.0f) / (float)S;
    }
    size_t out = E * B * (size_t)p->T;
    p->y = malloc(out * sizeof(float));
    p->h_t = malloc(E * B * H * sizeof(float));
    p->ref_y = malloc(out * sizeof(float));
    p->ref_h = malloc(E * B * H * sizeof(float));
    p->scratch = malloc((size_t)(3 * p->H * 3 + p->NI + 2 * p->S + p->H) * sizeof(float));
    if (!p->y || !p->h_t || !p->ref_y || !p->ref_h || !p->scratch)
        return KP_ERR_OUT_OF_MEMORY;
    kp_status st = KP_OK;
    for (int i = 0; i < 12 && st == KP_OK; i++) {
        st = kp_buffer_create(b->rt, (p->n[i] ? p->n[i] : 1) * sizeof(float), &p->d[i]);
        if (st == KP_OK && p->n[i])
            st = kp_buffer_write(b->rt, p->d[i], 0, p->n[i] * sizeof(float), p->w[i]);
    }
    const size_t outs[4] = {out, E * B * H, out, out};
    for (int i = 0; i < 4 && st == KP_OK; i++)
        st = kp_buffer_create(b->rt, outs[i] * sizeof(float), &p->d[12 + i]);
    return st;
}

/* The launch arguments (mode, seed: the draw); 20 of them. */
static size_t rollout_args(const rollout *p, int mode, kp_arg *args)
{
    const int64_t E = p->E, B = p->B, H = p->H, S = p->S, T = p->T;
    const int64_t shapes[16][3] = {{E, 3 * H, p->NI}, {E, 3 * H, H}, {E, 3 * H}, {E, 3 * H},
                                   {E, S, H},         {E, S},        {E, H + S}, {E},
                                   {1, B, p->F},      {B},           {E, B, S},  {E, B, H},
                                   {E, B, T},         {E, B, H},     {E, B, T},  {E, B, T}};
    const int ranks[16] = {3, 3, 2, 2, 3, 2, 2, 1, 3, 1, 3, 3, 3, 3, 3, 3};
    size_t n = 0;
    for (int i = 0; i < 16; i++)
        args[n++] = kp_arg_tensor(names[i], kp_tensor_nd(p->d[i], KP_F32, ranks[i], shapes[i]));
    args[n++] = kp_arg_int("T", T);
    args[n++] = kp_arg_int("mode", mode);
    args[n++] = kp_arg_int("seed", 12345);
    args[n++] = kp_arg_int("linear_before_reset", 1);
    return n;
}

/* The host path: the same rollout with OpenBLAS sgemv and the same shortcuts as the kernel
 * (the features' product once per trajectory, a one-hot state as a column of W_ih). */
typedef struct host_call {
    rollout *p;
    int mode;
} host_call;

static void host_rollout(void *user)
{
    host_call *c = user;
    rollout *p = c->p;
    const int H = p->H, S = p->S, F = p->F, NI = p->NI, G = 3 * H;
    float *cf = p->scratch, *gi = cf + G, *gh = gi + G, *x = gh + G, *lg = x + NI, *pr = lg + S;
    float *h = pr + S;
    for (int e = 0; e < p->E; e++) {
        const float *wih = p->w[W_IH] + (size_t)e * G * NI, *whh = p->w[W_HH] + (size_t)e * G * H;
        const float *bih = p->w[B_IH] + e * G, *bhh = p->w[B_HH] + e * G;
        const float *wp = p->w[W_P] + (size_t)e * S * H, *bp = p->w[B_P] + e * S;
        const float *wy = p->w[W_Y] + e * (H + S), by = p->w[B_Y][e];
        for (int b = 0; b < p->B; b++) {
            memcpy(cf, bih, (size_t)G * sizeof(float));
            sgemv(G, F, wih, NI, p->w[F_IN] + b * F, 1.0f, cf);
            memcpy(h, p->w[H0] + ((size_t)e * p->B + b) * H, (size_t)H * sizeof(float));
            memcpy(x + 1, p->w[Z0] + ((size_t)e * p->B + b) * S, (size_t)S * sizeof(float));
            x[0] = p->w[Y0][b];
            int k = -1; /* the previous one-hot category; -1: x holds a dense state */
            for (int t = 0; t < p->T; t++) {
                if (k < 0) {
                    sgemv(G, 1 + S, wih + F, NI, x, 0.0f, gi);
                    for (int j = 0; j < G; j++)
                        gi[j] += cf[j];
                } else {
                    for (int j = 0; j < G; j++)
                        gi[j] = cf[j] + wih[(size_t)j * NI + F] * x[0] +
                                wih[(size_t)j * NI + F + 1 + k];
                }
                memcpy(gh, bhh, (size_t)G * sizeof(float));
                sgemv(G, H, whh, H, h, 1.0f, gh);
                float y = by;
                for (int u = 0; u < H; u++) {
                    float r = sigmoidf(gi[u] + gh[u]), z = sigmoidf(gi[H + u] + gh[H + u]);
                    float n = tanhf(gi[2 * H + u] + r * gh[2 * H + u]);
                    h[u] = (1.0f - z) * n + z * h[u];
                    y += wy[u] * h[u];
                }
                memcpy(lg, bp, (size_t)S * sizeof(float));
                sgemv(S, H, wp, H, h, 1.0f, lg);
                int best = 0;
                for (int s = 1; s < S; s++)
                    best = lg[s] > lg[best] ? s : best;
                float total = 0;
                for (int s = 0; s < S; s++)
                    total += pr[s] = expf(lg[s] - lg[best]);
                k = best;
                if (c->mode == KP_GRU_ROLLOUT_MEAN) {
                    k = -1;
                    for (int s = 0; s < S; s++) {
                        x[1 + s] = pr[s] / total;
                        y += wy[H + s] * x[1 + s];
                    }
                } else if (c->mode == KP_GRU_ROLLOUT_SAMPLE) {
                    float target = kp_gru_rollout_uniform(12345, e, b, t) * total, cdf = 0;
                    for (int s = 0; s < S; s++)
                        if ((cdf += pr[s]) > target) {
                            k = s;
                            break;
                        }
                }
                if (k >= 0)
                    y += wy[H + k];
                x[0] = y;
                p->ref_y[((size_t)e * p->B + b) * p->T + t] = y;
            }
            memcpy(p->ref_h + ((size_t)e * p->B + b) * H, h, (size_t)H * sizeof(float));
        }
    }
}

/* max |device - host| over y and h_T, after one launch in `mode`. */
static kp_status compare(kpb *b, kp_kernel *k, rollout *p, int mode, double *err)
{
    kp_arg args[20];
    size_t n = rollout_args(p, mode, args);
    kp_status st = kp_kernel_launch(b->rt, k, args, n, NULL);
    size_t ny = (size_t)p->E * p->B * p->T, nh = (size_t)p->E * p->B * p->H;
    if (st == KP_OK)
        st = kp_buffer_read(b->rt, p->d[12], 0, ny * sizeof(float), p->y);
    if (st == KP_OK)
        st = kp_buffer_read(b->rt, p->d[13], 0, nh * sizeof(float), p->h_t);
    if (st != KP_OK)
        return st;
    host_call c = {p, mode};
    host_rollout(&c);
    *err = 0;
    for (size_t i = 0; i < ny; i++)
        *err = fmax(*err, isnan(p->y[i]) ? INFINITY : fabs(p->y[i] - p->ref_y[i]));
    for (size_t i = 0; i < nh; i++)
        *err = fmax(*err, isnan(p->h_t[i]) ? INFINITY : fabs(p->h_t[i] - p->ref_h[i]));
    return KP_OK;
}

/* The peer's name into buf (kpb_add copies it). */
static char *peer_name(const kpb *b, char *buf, size_t size)
{
#ifdef KP_HAVE_OPENBLAS
    snprintf(buf, size, "OpenBLAS sgemv host path (%d threads%s)", openblas_get_num_threads(),
             b->device.type == KP_DEVICE_CPU ? "" : "; best CPU path");
#else
    (void)b;
    snprintf(buf, size, "plain C host path (no OpenBLAS)");
#endif
    return buf;
}

/* OpenBLAS's threads spin for a while after a call; on a CPU device they would compete with the
 * kernel being timed, so the kernel waits them out. */
static void let_host_threads_idle(const kpb *b)
{
    if (b->device.type == KP_DEVICE_CPU) {
        struct timespec ts = {0, 300 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* Times one size in one mode, then checks it in mode mean (no draw can flip there) against the
 * host path, and times the host path. */
static int bench_rollout(kpb *b, kp_kernel *k, rollout proto, int mode)
{
    rollout p = proto;
    char name[96], note[300] = "";
    snprintf(name, sizeof name, "%s %s", p.name, mode == KP_GRU_ROLLOUT_MEAN ? "mean" : "sample");
    kpb_row row = {.case_name = name, .ours = "gru.rollout"};
    double err = 0;
    kp_status st = rollout_init(b, &p);
    kp_arg args[20];
    size_t n = rollout_args(&p, mode, args);
    let_host_threads_idle(b);
    if (st == KP_OK)
        st = kpb_time_kernel(b, k, args, n, &row.ours_s, &row.ours_p10, &row.ours_p90);
    if (st == KP_OK)
        st = compare(b, k, &p, KP_GRU_ROLLOUT_MEAN, &err);
    /* f32 on both sides: a few units of rounding per term of the longest sum, over sqrt(T). */
    double tol = 8.0 * (p.NI + p.H) * sqrt((double)p.T) * 0x1p-24;
    double E = p.E, B = p.B, H = p.H, S = p.S, T = p.T, NI = p.NI;
    row.flops = E * B * T * (2 * 3 * H * H + 2 * S * H + 2 * 3 * H * (mode ? 1 + S : 2));
    row.bytes = 4 * E * (3 * H * NI + 3 * H * H + S * H);
    if (st != KP_OK) {
        snprintf(note, sizeof note, "%s", kp_last_error(b->rt));
        row.status = st;
        row.ours_s = 0;
    } else if (!(err <= tol)) {
        snprintf(note, sizeof note, "!! WRONG RESULT: max |device - host| %.3g > %.3g (mode mean)",
                 err, tol);
        row.status = KP_ERR_VERIFY;
        row.ours_s = 0;
    }
    kpb_row_metric(&row, "max_abs_err_mean_mode", err);
    kpb_row_metric(&row, "tolerance", tol);
    char peer[96];
    if (p.ref_y) {
        host_call c = {&p, mode};
        row.peer = peer_name(b, peer, sizeof peer);
        row.peer_s = kpb_time_host(b, host_rollout, &c);
    }
    row.note = note[0] ? note : NULL;
    kpb_add(b, &row);
    rollout_fini(b, &p);
    return row.status != KP_OK;
}

/* ---- gru.step at B = 1 ---------------------------------------------------------------------- */

typedef struct step_call {
    int H, NI;
    float *w_ih, *w_hh, *b_ih, *b_hh, *x, *h, *gi, *gh;
} step_call;

static void host_step(void *user)
{
    step_call *c = user;
    int H = c->H, G = 3 * H;
    memcpy(c->gi, c->b_ih, (size_t)G * sizeof(float));
    memcpy(c->gh, c->b_hh, (size_t)G * sizeof(float));
    sgemv(G, c->NI, c->w_ih, c->NI, c->x, 1.0f, c->gi);
    sgemv(G, H, c->w_hh, H, c->h, 1.0f, c->gh);
    for (int u = 0; u < H; u++) {
        float r = sigmoidf(c->gi[u] + c->gh[u]), z = sigmoidf(c->gi[H + u] + c->gh[H + u]);
        float n = tanhf(c->gi[2 * H + u] + r * c->gh[2 * H + u]);
        c->gi[u] = (1.0f - z) * n + z * c->h[u]; /* h' (gi's r part is no longer needed) */
    }
}

/* Wall time per launch of STREAM launches queued back to back, then a finish: a loop of steps as
 * a caller runs it, host-side launch work and the runtime's scheduling included, which the
 * event-timed median leaves out. Median over rounds. */
static kp_status time_stream(kpb *b, kp_kernel *k, const kp_arg *args, size_t n, double *median)
{
    enum { MAX_RUNS = 200, STREAM = 50 };
    double t[MAX_RUNS], total = 0;
    int runs = 0;
    kp_status st = kp_finish(b->rt);
    while (st == KP_OK && runs < MAX_RUNS && kpb_more_runs(b, runs, total)) {
        double t0 = kpb_now();
        for (int i = 0; i < STREAM && st == KP_OK; i++)
            st = kp_kernel_launch(b->rt, k, args, n, NULL);
        if (st == KP_OK)
            st = kp_finish(b->rt);
        t[runs] = (kpb_now() - t0) / STREAM;
        total += t[runs++] * STREAM;
    }
    if (st == KP_OK)
        *median = kpb_median(t, (size_t)runs);
    return st;
}

static int bench_step(kpb *b, int H, int NI)
{
    kp_kernel *k;
    if (kp_kernel_find(b->rt, "gru.step", &k) != KP_OK) {
        kpb_note(b, "gru.step is not registered: its row is left out");
        return 0;
    }
    int G = 3 * H;
    size_t sz[6] = {(size_t)G * NI, (size_t)G * H, (size_t)G, (size_t)G, (size_t)NI, (size_t)H};
    float *w[6] = {0};
    kp_buffer *d[7] = {0};
    kp_status st = KP_OK;
    for (int i = 0; i < 6 && st == KP_OK; i++) {
        w[i] = malloc(sz[i] * sizeof(float));
        if (!w[i]) {
            st = KP_ERR_OUT_OF_MEMORY;
            break;
        }
        kpb_fill(w[i], sz[i], 200 + (uint64_t)i);
        st = kp_buffer_create(b->rt, sz[i] * sizeof(float), &d[i]);
        if (st == KP_OK)
            st = kp_buffer_write(b->rt, d[i], 0, sz[i] * sizeof(float), w[i]);
    }
    if (st == KP_OK)
        st = kp_buffer_create(b->rt, (size_t)H * sizeof(float), &d[6]);
    char name[64];
    snprintf(name, sizeof name, "step B=1 H=%d I=%d", H, NI);
    kpb_row row = {.case_name = name,
                   .ours = "gru.step",
                   .flops = 2.0 * G * (NI + H),
                   .bytes = 4.0 * G * (NI + H + 2)};
    let_host_threads_idle(b);
    if (st == KP_OK) {
        kp_arg args[] = {KP_ARG_TENSOR("w_ih", kp_tensor_2d(d[0], KP_F32, G, NI)),
                         KP_ARG_TENSOR("w_hh", kp_tensor_2d(d[1], KP_F32, G, H)),
                         KP_ARG_TENSOR("b_ih", kp_tensor_1d(d[2], KP_F32, G)),
                         KP_ARG_TENSOR("b_hh", kp_tensor_1d(d[3], KP_F32, G)),
                         KP_ARG_TENSOR("x", kp_tensor_2d(d[4], KP_F32, 1, NI)),
                         KP_ARG_TENSOR("h", kp_tensor_2d(d[5], KP_F32, 1, H)),
                         KP_ARG_TENSOR("h_out", kp_tensor_2d(d[6], KP_F32, 1, H))};
        st = kpb_time_kernel(b, k, args, 7, &row.ours_s, &row.ours_p10, &row.ours_p90);
        double stream = 0;
        if (st == KP_OK)
            st = time_stream(b, k, args, 7, &stream);
        if (st == KP_OK)
            kpb_row_metric(&row, "stream_us", stream * 1e6);
    }
    float *gi = malloc((size_t)G * sizeof(float)), *gh = malloc((size_t)G * sizeof(float));
    char peer[96], note[300];
    if (st == KP_OK && gi && gh) {
        step_call c = {H, NI, w[0], w[1], w[2], w[3], w[4], w[5], gi, gh};
        row.peer = peer_name(b, peer, sizeof peer);
        row.peer_s = kpb_time_host(b, host_step, &c);
    }
    if (st != KP_OK) {
        snprintf(note, sizeof note, "%s", kp_last_error(b->rt));
        row.status = st;
        row.ours_s = 0;
        row.note = note;
    }
    kpb_add(b, &row);
    free(gi);
    free(gh);
    for (int i = 0; i < 6; i++)
        free(w[i]);
    for (int i = 0; i < 7; i++)
        kp_buffer_destroy(b->rt, d[i]);
    return st != KP_OK;
}

int main(int argc, char **argv)
{
    kpb b;
    kpb_open(&b, "bench-gru", argc, argv);
    kp_kernel *k;
    if (kp_kernel_find(b.rt, "gru.rollout", &k) != KP_OK) {
        fprintf(stderr, "bench-gru: %s\n", kp_last_error(b.rt));
        kp_runtime_destroy(b.rt);
        return 1;
    }
    b.max_case_s = b.quick ? 0.3 : 2.0;
    kpb_note_tuning(&b, "gru.rollout");
    kpb_note_tuning(&b, "gru.rollout_grid");
    kpb_note(&b, "rollouts: E members x B trajectories, F 64, S 256, linear_before_reset 1, mode "
                 "sample (seed 12345) unless the case says mean; each size is first checked in "
                 "mode mean against the host path (max |y and h_T difference|)");
    kpb_note(&b, "host path: the same rollout in f32 with sgemv per matrix and the kernel's "
                 "shortcuts (features' product once, a one-hot z_t as one column of W_ih)");
    const rollout sizes[] = {
        {.name = "seed E5 B1 H256 T50", .E = 5, .B = 1, .F = 64, .H = 256, .S = 256, .T = 50},
        {.name = "seed100 E5 B1 H256 T100", .E = 5, .B = 1, .F = 64, .H = 256, .S = 256, .T = 100},
        {.name = "h1024 E5 B1 H1024 T50", .E = 5, .B = 1, .F = 64, .H = 1024, .S = 256, .T = 50},
    };
    int failures = 0;
    for (size_t i = 0; i < (b.quick ? 1u : 3u); i++)
        failures += bench_rollout(&b, k, sizes[i], KP_GRU_ROLLOUT_SAMPLE);
    failures += bench_rollout(&b, k, sizes[0], KP_GRU_ROLLOUT_MEAN);
    failures += bench_step(&b, 256, 321);
    if (failures)
        kpb_note(&b, "!! %d case(s) FAILED: see the rows marked !!", failures);
    int rc = kpb_close(&b);
    return rc ? rc : failures ? 1 : 0;
}
