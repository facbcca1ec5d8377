/* SPDX-License-Identifier: Apache-2.0 */
/* gru.step, .sequence and .sequence_backward on PoCL against double host math and differences. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test-util.h"

/* One runtime for everything (each new kernel or local size costs PoCL a compile), and one
 * without the blas plugin for the fallbacks. */
static kp_runtime *rt;
static kp_runtime *noblas;

static kp_runtime *open_runtime(const char *manifest)
{
    kp_runtime_options o =
        test_options(test_build_path("lib/kernelport/plugins"), test_device(), NULL);
    o.manifest_path = manifest;
    kp_runtime *r = NULL;
    kp_status st = kp_runtime_create(&o, &r);
    if (st != KP_OK)
        fprintf(stderr, "kp_runtime_create: %s\n", kp_last_error(NULL));
    assert_int_equal(st, KP_OK);
    return r;
}

static kp_kernel *find(kp_runtime *r, const char *name)
{
    kp_kernel *k = NULL;
    assert_int_equal(kp_kernel_find(r, name, &k), KP_OK);
    return k;
}

/* ---- the model in double --------------------------------------------------------------------- */

/* A GRU problem: inputs and weights in double (what finite differences perturb), contiguous. */
typedef struct model {
    int64_t T, B, I, H;
    int lbr;
    double *x, *h0, *w_ih, *w_hh, *b_ih, *b_hh; /* [T,B,I] [B,H] [3H,I] [3H,H] [3H] [3H] */
} model;

static double *random_doubles(size_t n, unsigned seed, double scale)
{
    float *f = malloc(n * sizeof *f);
    double *d = malloc(n * sizeof *d);
    assert_true(f && d);
    test_fill(f, n, seed);
    for (size_t i = 0; i < n; i++)
        d[i] = (double)(float)(scale * f[i]); /* representable in f32: both sides see it */
    free(f);
    return d;
}

static model model_make(int64_t T, int64_t B, int64_t I, int64_t H, int lbr, unsigned seed)
{
    double k = 1.0 / sqrt((double)H);
    model m = {.T = T, .B = B, .I = I, .H = H, .lbr = lbr};
    m.x = random_doubles((size_t)(T * B * I), seed, 1.0);
    m.h0 = random_doubles((size_t)(B * H), seed + 1, 1.0);
    m.w_ih = random_doubles((size_t)(3 * H * I), seed + 2, k);
    m.w_hh = random_doubles((size_t)(3 * H * H), seed + 3, k);
    m.b_ih = random_doubles((size_t)(3 * H), seed + 4, k);
    m.b_hh = random_doubles((size_t)(3 * H), seed + 5, k);
    return m;
}

static void model_free(model *m)
{
    free(m->x), free(m->h0), free(m->w_ih), free(m->w_hh), free(m->b_ih), free(m->b_hh);
}

static double sig(double a)
{
    return 1.0 / (1.0 + exp(-a));
}

/* h_all [T, B, H] and, when ws is not NULL, (r, z, n, hn or r h_prev) [T, B, 4H]. */
static void host_forward(const model *m, double *h_all, double *ws)
{
    int64_t H = m->H, I = m->I;
    double *g = malloc((size_t)(6 * H) * sizeof *g), *rh = malloc((size_t)H * sizeof *rh);
    assert_true(g && rh);
    for (int64_t t = 0; t < m->T; t++)
        for (int64_t b = 0; b < m->B; b++) {
            const double *x = &m->x[(t * m->B + b) * I];
            const double *h = t ? &h_all[((t - 1) * m->B + b) * H] : &m->h0[b * H];
            double *out = &h_all[(t * m->B + b) * H];
            for (int64_t q = 0; q < 3 * H; q++) {
                double sx = m->b_ih[q], sh = m->b_hh[q];
                for (int64_t k = 0; k < I; k++)
                    sx += m->w_ih[q * I + k] * x[k];
                for (int64_t k = 0; k < H && (q < 2 * H || m->lbr); k++)
                    sh += m->w_hh[q * H + k] * h[k];
                g[q] = sx, g[3 * H + q] = sh;
            }
            for (int64_t j = 0; j < H; j++)
                rh[j] = sig(g[j] + g[3 * H + j]) * h[j];
            for (int64_t j = 0; j < H; j++) {
                double r = sig(g[j] + g[3 * H + j]), z = sig(g[H + j] + g[4 * H + j]);
                double hn = g[5 * H + j];
                if (!m->lbr) /* W_hn (r * h) + b_hn */
                    for (int64_t k = 0; k < H; k++)
                        hn += m->w_hh[(2 * H + j) * H + k] * rh[k];
                double n = tanh(g[2 * H + j] + (m->lbr ? r * hn : hn));
                out[j] = (1.0 - z) * n + z * h[j];
                if (ws) {
                    double *w = &ws[(t * m->B + b) * 4 * H];
                    w[j] = r, w[H + j] = z, w[2 * H + j] = n, w[3 * H + j] = m->lbr ? hn : rh[j];
                }
            }
        }
    free(g), free(rh);
}

/* ---- device side ----------------------------------------------------------------------------- */

static kp_buffer *upload_doubles(kp_runtime *r, const double *d, size_t n)
{
    float *f = malloc((n ? n : 1) * sizeof *f);
    assert_non_null(f);
    for (size_t i = 0; i < n; i++)
        f[i] = (float)d[i];
    kp_buffer *b = NULL;
    assert_int_equal(kp_buffer_create(r, (n ? n : 1) * sizeof(float), &b), KP_OK);
    assert_int_equal(kp_buffer_write(r, b, 0, n * sizeof(float), f), KP_OK);
    free(f);
    return b;
}

static kp_buffer *output(kp_runtime *r, size_t n)
{
    double *garbage = malloc(n * sizeof *garbage);
    assert_non_null(garbage);
    for (size_t i = 0; i < n; i++)
        garbage[i] = NAN; /* an element the kernel forgets stays NaN and fails the comparison */
    kp_buffer *b = upload_doubles(r, garbage, n);
    free(garbage);
    return b;
}

static float *download(kp_runtime *r, kp_buffer *b, size_t n)
{
    float *out = malloc(n * sizeof *out);
    assert_non_null(out);
    assert_int_equal(kp_buffer_read(r, b, 0, n * sizeof(float), out), KP_OK);
    return out;
}

static void launch_ok(kp_runtime *r, const char *kernel, const kp_arg *args, size_t n)
{
    kp_status st = kp_kernel_launch(r, find(r, kernel), args, n, NULL);
    if (st != KP_OK)
        fail_msg("%s: %s", kernel, kp_last_error(r));
}

/* Device weights and inputs of a model, as tensors. */
typedef struct dev_model {
    kp_buffer *x, *h0, *w_ih, *w_hh, *b_ih, *b_hh;
    kp_tensor tx, th0, tw_ih, tw_hh, tb_ih, tb_hh;
} dev_model;

static dev_model dev_upload(kp_runtime *r, const model *m)
{
    int64_t T = m->T, B = m->B, I = m->I, H = m->H;
    dev_model d;
    d.x = upload_doubles(r, m->x, (size_t)(T * B * I));
    d.h0 = upload_doubles(r, m->h0, (size_t)(B * H));
    d.w_ih = upload_doubles(r, m->w_ih, (size_t)(3 * H * I));
    d.w_hh = upload_doubles(r, m->w_hh, (size_t)(3 * H * H));
    d.b_ih = upload_doubles(r, m->b_ih, (size_t)(3 * H));
    d.b_hh = upload_doubles(r, m->b_hh, (size_t)(3 * H));
    d.tx = kp_tensor_3d(d.x, KP_F32, T, B, I);
    d.th0 = kp_tensor_2d(d.h0, KP_F32, B, H);
    d.tw_ih = kp_tensor_2d(d.w_ih, KP_F32, 3 * H, I);
    d.tw_hh = kp_tensor_2d(d.w_hh, KP_F32, 3 * H, H);
    d.tb_ih = kp_tensor_1d(d.b_ih, KP_F32, 3 * H);
    d.tb_hh = kp_tensor_1d(d.b_hh, KP_F32, 3 * H);
    return d;
}

static void dev_free(kp_runtime *r, dev_model *d)
{
    kp_buffer *all[] = {d->x, d->h0, d->w_ih, d->w_hh, d->b_ih, d->b_hh};
    for (size_t i = 0; i < 6; i++)
        kp_buffer_destroy(r, all[i]);
}

static void expect_close(const float *got, const double *want, size_t n, double atol, double rtol,
                         const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - want[i]) <= atol + rtol * fabs(want[i])))
            fail_msg("%s: element %zu is %.9g, expected %.9g (tolerance %.3g + %.3g |want|)", what,
                     i, (double)got[i], want[i], atol, rtol);
}

/* Two device results that should agree: want converted to double. */
static void expect_agree(const float *got, const float *want, size_t n, double atol, double rtol,
                         const char *what)
{
    double *w = malloc(n * sizeof *w);
    assert_non_null(w);
    for (size_t i = 0; i < n; i++)
        w[i] = want[i];
    expect_close(got, w, n, atol, rtol, what);
    free(w);
}

/* f32 sums of K terms of unit size: random rounding errors grow as sqrt(K) u; 8 sqrt(K) u
 * leaves margin while a wrong gate or index errs by orders of magnitude more. */
static double sum_tol(int64_t k)
{
    return 8.0 * sqrt((double)k) * 0x1p-24 + 1e-7;
}

/* gru.step on r at batch B (x [B, I] is step 0 of the model) against host_forward. */
static float *run_step(kp_runtime *r, const model *m)
{
    dev_model d = dev_upload(r, m);
    kp_buffer *out = output(r, (size_t)(m->B * m->H));
    kp_tensor x = kp_tensor_2d(d.x, KP_F32, m->B, m->I);
    kp_arg args[] = {KP_ARG_TENSOR("x", x),
                     KP_ARG_TENSOR("h", d.th0),
                     KP_ARG_TENSOR("w_ih", d.tw_ih),
                     KP_ARG_TENSOR("w_hh", d.tw_hh),
                     KP_ARG_TENSOR("b_ih", d.tb_ih),
                     KP_ARG_TENSOR("b_hh", d.tb_hh),
                     KP_ARG_TENSOR("h_out", kp_tensor_2d(out, KP_F32, m->B, m->H)),
                     KP_ARG_INT("linear_before_reset", m->lbr)};
    launch_ok(r, "gru.step", args, sizeof args / sizeof args[0]);
    float *got = download(r, out, (size_t)(m->B * m->H));
    kp_buffer_destroy(r, out);
    dev_free(r, &d);
    return got;
}

static void check_step(kp_runtime *r, const model *m, const char *what)
{
    model first = *m; /* the model's first step */
    first.T = 1;
    double *want = malloc((size_t)(m->B * m->H) * sizeof *want);
    assert_non_null(want);
    host_forward(&first, want, NULL);
    float *got = run_step(r, m);
    expect_close(got, want, (size_t)(m->B * m->H), sum_tol(m->I + m->H), 0.0, what);
    free(got), free(want);
}

/* ---- gru.step -------------------------------------------------------------------------------- */

/* No 1024 limit: H from 1 to 4096 at B = 1 through the fused kernel, both variants. */
static void test_step_hidden_sizes(void **state)
{
    const int64_t hs[] = {1, 3, 257, 1024, 2048, 4096};
    for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++) {
        model m = model_make(1, 1, 5, hs[i], 1, (unsigned)(10 + i));
        char what[64];
        for (int lbr = 1; lbr >= 0; lbr--) {
            m.lbr = lbr;
            snprintf(what, sizeof what, "step H = %lld, linear_before_reset %d", (long long)hs[i],
                     lbr);
            check_step(rt, &m, what);
        }
        model_free(&m);
    }
}

/* ---- gru.sequence ---------------------------------------------------------------------------- */

typedef struct seq_out {
    float *h_all, *ws;
} seq_out;

static seq_out run_sequence(kp_runtime *r, const model *m, const dev_model *d, kp_buffer **h_buf,
                            kp_buffer **ws_buf)
{
    size_t nh = (size_t)(m->T * m->B * m->H), nw = 4 * nh;
    *h_buf = output(r, nh);
    *ws_buf = output(r, nw);
    kp_arg args[] = {
        KP_ARG_TENSOR("x", d->tx),
        KP_ARG_TENSOR("h0", d->th0),
        KP_ARG_TENSOR("w_ih", d->tw_ih),
        KP_ARG_TENSOR("w_hh", d->tw_hh),
        KP_ARG_TENSOR("b_ih", d->tb_ih),
        KP_ARG_TENSOR("b_hh", d->tb_hh),
        KP_ARG_TENSOR("h_all", kp_tensor_3d(*h_buf, KP_F32, m->T, m->B, m->H)),
        KP_ARG_TENSOR("workspace", kp_tensor_3d(*ws_buf, KP_F32, m->T, m->B, 4 * m->H)),
        KP_ARG_INT("linear_before_reset", m->lbr)};
    launch_ok(r, "gru.sequence", args, sizeof args / sizeof args[0]);
    seq_out o = {download(r, *h_buf, nh), download(r, *ws_buf, nw)};
    return o;
}

static void check_sequence(kp_runtime *r, const model *m, const char *what)
{
    size_t nh = (size_t)(m->T * m->B * m->H);
    double *h_all = malloc(nh * sizeof *h_all), *ws = malloc(4 * nh * sizeof *ws);
    assert_true(h_all && ws);
    host_forward(m, h_all, ws);
    dev_model d = dev_upload(r, m);
    kp_buffer *hb, *wb;
    seq_out o = run_sequence(r, m, &d, &hb, &wb);
    /* Step errors add up over T steps (a PyTorch-initialised cell contracts). */
    double tol = (double)m->T * sum_tol(m->I + m->H);
    char msg[96];
    snprintf(msg, sizeof msg, "%s: h_all", what);
    expect_close(o.h_all, h_all, nh, tol, 0.0, msg);
    snprintf(msg, sizeof msg, "%s: workspace", what);
    expect_close(o.ws, ws, 4 * nh, tol, 1e-6, msg);
    free(o.h_all), free(o.ws), free(h_all), free(ws);
    kp_buffer_destroy(r, hb), kp_buffer_destroy(r, wb);
    dev_free(r, &d);
}

/* T = 1 and T = 9, both variants, with their workspaces. */
static void test_sequence(void **state)
{
    for (int lbr = 1; lbr >= 0; lbr--) {
        model one = model_make(1, 2, 3, 5, lbr, 40), nine = model_make(9, 3, 5, 7, lbr, 41);
        check_sequence(rt, &one, lbr ? "T 1, lbr 1" : "T 1, lbr 0");
        check_sequence(rt, &nine, lbr ? "T 9, lbr 1" : "T 9, lbr 0");
        model_free(&one), model_free(&nine);
    }
}

/* The fused kernel's GPU shapes on PoCL too (LANES 0 and VW 0 pick 1 and 16 on a CPU): lanes
 * reducing in local memory, several units per work-group with some past H, narrower vectors; and
 * the GEMM path's gate kernel with them (one unit per work-item). */
static void test_fused_lane_shapes(void **state)
{
    const int64_t shapes[][2] = {{32, 4}, {8, 8}};
    kp_kernel *ks[] = {find(rt, "gru.step"), find(rt, "gru.sequence")};
    for (int s = 0; s < 2; s++) {
        for (int i = 0; i < 2; i++) {
            assert_int_equal(kp_kernel_tunable_set(rt, ks[i], "LANES", shapes[s][0]), KP_OK);
            assert_int_equal(kp_kernel_tunable_set(rt, ks[i], "VW", shapes[s][1]), KP_OK);
        }
        for (int lbr = 1; lbr >= 0; lbr--) {
            model m = model_make(3, 2, 5, 3, lbr, 20), big = model_make(1, 2, 37, 257, lbr, 21);
            check_step(rt, &m, "step, lanes"), check_step(rt, &big, "step H 257, lanes");
            check_sequence(rt, &m, "sequence, lanes");
            /* The GEMM path's gate kernel as GPUs run it: one unit per work-item. */
            for (int i = 0; i < 2; i++)
                assert_int_equal(kp_kernel_tunable_set(rt, ks[i], "BATCH_GEMM", 1), KP_OK);
            check_step(rt, &big, "step H 257 by GEMM, lanes");
            check_sequence(rt, &m, "sequence by GEMM, lanes");
            for (int i = 0; i < 2; i++)
                assert_int_equal(kp_kernel_tunable_set(rt, ks[i], "BATCH_GEMM", 1 << 30), KP_OK);
            model_free(&m), model_free(&big);
        }
        for (int i = 0; i < 2; i++)
            assert_int_equal(kp_kernel_tuning_reset(rt, ks[i]), KP_OK);
    }
}

/* ---- gru.sequence_backward ------------------------------------------------------------------- */

/* L = sum dh_all * h_all + sum dh_last * h_{T-1}, in double. */
static double loss(const model *m, const double *dh_all, const double *dh_last)
{
    size_t nh = (size_t)(m->T * m->B * m->H), nl = (size_t)(m->B * m->H);
    double *h = malloc(nh * sizeof *h), sum = 0.0;
    assert_non_null(h);
    host_forward(m, h, NULL);
    for (size_t i = 0; i < nh; i++)
        sum += dh_all[i] * h[i];
    for (size_t i = 0; i < nl; i++)
        sum += dh_last[i] * h[nh - nl + i];
    free(h);
    return sum;
}

/* Central differences of the loss for every element of `p` (n of them). */
static double *finite_differences(model *m, double *p, size_t n, const double *dh_all,
                                  const double *dh_last)
{
    double *g = malloc(n * sizeof *g);
    assert_non_null(g);
    for (size_t i = 0; i < n; i++) {
        double keep = p[i], eps = 1e-6;
        p[i] = keep + eps;
        double up = loss(m, dh_all, dh_last);
        p[i] = keep - eps;
        double down = loss(m, dh_all, dh_last);
        p[i] = keep;
        g[i] = (up - down) / (2.0 * eps);
    }
    return g;
}

typedef struct grads {
    float *dx, *dh0, *dw_ih, *dw_hh, *db_ih, *db_hh;
} grads;

static grads run_backward(kp_runtime *r, const model *m, const double *dh_all,
                          const double *dh_last)
{
    int64_t T = m->T, B = m->B, I = m->I, H = m->H;
    dev_model d = dev_upload(r, m);
    kp_buffer *hb, *wb;
    seq_out fwd = run_sequence(r, m, &d, &hb, &wb);
    free(fwd.h_all), free(fwd.ws);
    size_t sizes[] = {(size_t)(T * B * I), (size_t)(B * H), (size_t)(3 * H * I),
                      (size_t)(3 * H * H), (size_t)(3 * H), (size_t)(3 * H)};
    kp_buffer *out[6];
    for (int i = 0; i < 6; i++)
        out[i] = output(r, sizes[i]);
    kp_buffer *da = upload_doubles(r, dh_all, (size_t)(T * B * H));
    kp_buffer *dl = upload_doubles(r, dh_last, (size_t)(B * H));
    kp_arg args[] = {KP_ARG_TENSOR("x", d.tx),
                     KP_ARG_TENSOR("h0", d.th0),
                     KP_ARG_TENSOR("h_all", kp_tensor_3d(hb, KP_F32, T, B, H)),
                     KP_ARG_TENSOR("workspace", kp_tensor_3d(wb, KP_F32, T, B, 4 * H)),
                     KP_ARG_TENSOR("w_ih", d.tw_ih),
                     KP_ARG_TENSOR("w_hh", d.tw_hh),
                     KP_ARG_TENSOR("dh_all", kp_tensor_3d(da, KP_F32, T, B, H)),
                     KP_ARG_TENSOR("dh_last", kp_tensor_2d(dl, KP_F32, B, H)),
                     KP_ARG_TENSOR("dx", kp_tensor_3d(out[0], KP_F32, T, B, I)),
                     KP_ARG_TENSOR("dh0", kp_tensor_2d(out[1], KP_F32, B, H)),
                     KP_ARG_TENSOR("dw_ih", kp_tensor_2d(out[2], KP_F32, 3 * H, I)),
                     KP_ARG_TENSOR("dw_hh", kp_tensor_2d(out[3], KP_F32, 3 * H, H)),
                     KP_ARG_TENSOR("db_ih", kp_tensor_1d(out[4], KP_F32, 3 * H)),
                     KP_ARG_TENSOR("db_hh", kp_tensor_1d(out[5], KP_F32, 3 * H)),
                     KP_ARG_INT("linear_before_reset", m->lbr)};
    launch_ok(r, "gru.sequence_backward", args, sizeof args / sizeof args[0]);
    float *got[6];
    for (int i = 0; i < 6; i++) {
        got[i] = download(r, out[i], sizes[i]);
        kp_buffer_destroy(r, out[i]);
    }
    kp_buffer_destroy(r, da), kp_buffer_destroy(r, dl), kp_buffer_destroy(r, hb);
    kp_buffer_destroy(r, wb);
    dev_free(r, &d);
    grads g = {got[0], got[1], got[2], got[3], got[4], got[5]};
    return g;
}

static void grads_free(grads *g)
{
    free(g->dx), free(g->dh0), free(g->dw_ih), free(g->dw_hh), free(g->db_ih), free(g->db_hh);
}

/* The backward against central differences of the double forward, for every input and weight,
 * both variants, on a tiny problem. */
static void test_backward_finite_differences(void **state)
{
    for (int lbr = 1; lbr >= 0; lbr--) {
        model m = model_make(3, 2, 3, 4, lbr, 50u + (unsigned)lbr);
        double *dh_all = random_doubles((size_t)(3 * 2 * 4), 60, 1.0);
        double *dh_last = random_doubles((size_t)(2 * 4), 61, 1.0);
        grads g = run_backward(rt, &m, dh_all, dh_last);
        struct {
            const char *name;
            double *p;
            size_t n;
            const float *got;
        } wrt[] = {{"dx", m.x, 18, g.dx},          {"dh0", m.h0, 8, g.dh0},
                   {"dw_ih", m.w_ih, 36, g.dw_ih}, {"dw_hh", m.w_hh, 48, g.dw_hh},
                   {"db_ih", m.b_ih, 12, g.db_ih}, {"db_hh", m.b_hh, 12, g.db_hh}};
        for (size_t i = 0; i < sizeof wrt / sizeof wrt[0]; i++) {
            double *fd = finite_differences(&m, wrt[i].p, wrt[i].n, dh_all, dh_last);
            char what[64];
            snprintf(what, sizeof what, "%s, linear_before_reset %d", wrt[i].name, lbr);
            /* f32 forward states and gradients against exact derivatives: a few u relative. */
            expect_close(wrt[i].got, fd, wrt[i].n, 2e-6, 1e-5, what);
            free(fd);
        }
        grads_free(&g);
        free(dh_all), free(dh_last);
        model_free(&m);
    }
}

/* ---- both paths, and without blas.gemm ------------------------------------------------------- */

/* BATCH_GEMM of the three kernels; 0 forgets every override (the defaults decide again). */
static void set_batch_gemm(kp_runtime *r, int64_t value)
{
    const char *names[] = {"gru.step", "gru.sequence", "gru.sequence_backward"};
    for (int i = 0; i < 3; i++) {
        kp_kernel *k = find(r, names[i]);
        assert_int_equal(value ? kp_kernel_tunable_set(r, k, "BATCH_GEMM", value)
                               : kp_kernel_tuning_reset(r, k),
                         KP_OK);
    }
}

/* y = alpha x + y through example.axpy over n elements. */
static void axpy(kp_buffer *x, kp_buffer *y, int64_t n, double alpha)
{
    kp_arg args[] = {KP_ARG_INT("n", n), KP_ARG_FLOAT("alpha", alpha),
                     KP_ARG_TENSOR("x", kp_tensor_1d(x, KP_F32, n)),
                     KP_ARG_TENSOR("y", kp_tensor_1d(y, KP_F32, n))};
    launch_ok(rt, "example.axpy", args, sizeof args / sizeof args[0]);
}

/* The step keeps the queue's order on each path (the fused kernel; every product through
 * blas.gemm, OpenBLAS in the queue on CPUs built with it, where products of one row this size run
 * as sgemv): kernels write x and h, the step reads them and writes h_out, a kernel reads h_out
 * and another writes h again, with no wait between. A step run ahead of the writers reads zeros,
 * one run after the second writer reads 2 h, one run behind the reader leaves zeros. */
static void test_step_queue_order(void **state)
{
    model m = model_make(1, 1, 601, 601, 1, 95); /* products of 1 x 1803 x 601: over 10^6 */
    const size_t H = 601, I = 601;
    double *want = malloc(H * sizeof *want), *zeros = calloc(I + H, sizeof *zeros);
    assert_true(want && zeros);
    host_forward(&m, want, NULL);
    for (size_t j = 0; j < H; j++)
        want[j] *= 2.0;
    const int64_t settings[] = {0, 1};
    for (int i = 0; i < 2; i++) {
        set_batch_gemm(rt, settings[i]);
        /* The outputs first: PoCL 3.1 hands a native kernel's buffers over in creation order. */
        kp_buffer *out = upload_doubles(rt, zeros, H), *d = upload_doubles(rt, zeros, H);
        kp_buffer *x = upload_doubles(rt, zeros, I), *h = upload_doubles(rt, zeros, H);
        dev_model dm = dev_upload(rt, &m);
        axpy(dm.x, x, (int64_t)I, 1.0);
        axpy(dm.h0, h, (int64_t)H, 1.0);
        kp_arg args[] = {KP_ARG_TENSOR("x", kp_tensor_2d(x, KP_F32, 1, (int64_t)I)),
                         KP_ARG_TENSOR("h", kp_tensor_2d(h, KP_F32, 1, (int64_t)H)),
                         KP_ARG_TENSOR("w_ih", dm.tw_ih),
                         KP_ARG_TENSOR("w_hh", dm.tw_hh),
                         KP_ARG_TENSOR("b_ih", dm.tb_ih),
                         KP_ARG_TENSOR("b_hh", dm.tb_hh),
                         KP_ARG_TENSOR("h_out", kp_tensor_2d(out, KP_F32, 1, (int64_t)H))};
        launch_ok(rt, "gru.step", args, sizeof args / sizeof args[0]);
        axpy(out, d, (int64_t)H, 2.0);
        axpy(dm.h0, h, (int64_t)H, 1.0);
        float *got = download(rt, d, H);
        expect_close(got, want, H, 2.0 * sum_tol(m.I + m.H), 0.0,
                     settings[i] ? "kernel, step by GEMM, kernel" : "kernel, step, kernel");
        free(got);
        kp_buffer_destroy(rt, out), kp_buffer_destroy(rt, d);
        kp_buffer_destroy(rt, x), kp_buffer_destroy(rt, h);
        dev_free(rt, &dm);
    }
    set_batch_gemm(rt, 0);
    free(want), free(zeros);
    model_free(&m);
}

/* At a prime batch, input and hidden size, both variants: every product through blas.gemm
 * (BATCH_GEMM 1), the plugin's own kernels only (never), a sequence's projection by GEMM and its
 * steps fused (64), and, with the blas plugin disabled, the fallbacks it forces. Each forward
 * matches the host; the backwards match each other. */
static void test_paths_agree(void **state)
{
    if (!noblas)
        noblas = open_runtime(test_write_tmp("noblas.yaml", "kernelport: 1\n"
                                                            "plugins: { disable: [blas] }\n"));
    kp_kernel *k = NULL;
    assert_int_equal(kp_kernel_find(noblas, "blas.gemm", &k), KP_ERR_NOT_FOUND);
    set_batch_gemm(noblas, 1);
    for (int lbr = 1; lbr >= 0; lbr--) {
        model m = model_make(3, 37, 13, 257, lbr, 70u + (unsigned)lbr);
        double *dh_all = random_doubles((size_t)(3 * 37 * 257), 71, 1.0);
        double *dh_last = random_doubles((size_t)(37 * 257), 72, 1.0);
        const int64_t settings[] = {1 << 30, 64, 1};
        for (int i = 0; i < 3; i++) {
            set_batch_gemm(rt, settings[i]);
            check_step(rt, &m, settings[i] == 1 ? "step by GEMM" : "step fused");
            check_sequence(rt, &m, settings[i] == 1 ? "sequence by GEMM" : "sequence fused");
        }
        check_step(noblas, &m, "step without blas.gemm");
        check_sequence(noblas, &m, "sequence without blas.gemm");
        grads a = run_backward(rt, &m, dh_all, dh_last);
        grads b = run_backward(noblas, &m, dh_all, dh_last);
        set_batch_gemm(rt, 1 << 30);
        grads c = run_backward(rt, &m, dh_all, dh_last);
        const float *pa[] = {a.dx, a.dh0, a.dw_ih, a.dw_hh, a.db_ih, a.db_hh};
        const float *pb[] = {b.dx, b.dh0, b.dw_ih, b.dw_hh, b.db_ih, b.db_hh};
        const float *pc[] = {c.dx, c.dh0, c.dw_ih, c.dw_hh, c.db_ih, c.db_hh};
        size_t n[] = {3 * 37 * 13, 37 * 257, 771 * 13, 771 * 257, 771, 771};
        for (int i = 0; i < 6; i++) { /* dW and db sum T B = 111 products of O(1) terms */
            expect_agree(pa[i], pb[i], n[i], 1e-5, 1e-4, "backward by GEMM vs without blas");
            expect_agree(pc[i], pb[i], n[i], 1e-5, 1e-4, "backward, own kernels");
        }
        grads_free(&a), grads_free(&b), grads_free(&c);
        free(dh_all), free(dh_last);
        model_free(&m);
    }
    set_batch_gemm(rt, 0);
}

/* The GEMM path's vector gates (16 units per work-item where LANES is 1) at the edges of a
 * vector: H 1, 16 (one whole vector), 37 (two and a tail of 5); batch 1, the CPUs' BATCH_GEMM 8
 * and a prime 11; T 1 and a prime 7; through blas.gemm's default route (OpenBLAS on CPUs built
 * with it) and through CLBlast, each at the resolved BATCH_GEMM and at 1 (every product a GEMM). */
static void test_gemm_gates_edges(void **state)
{
    kp_runtime *clblast =
        open_runtime(test_write_tmp("clblast.yaml", "kernelport: 1\n"
                                                    "tuning:\n"
                                                    "  - match: {}\n"
                                                    "    kernels:\n"
                                                    "      blas.gemm: { route: clblast }\n"));
    const int64_t shapes[][4] = {{1, 1, 1, 1}, {1, 8, 13, 16}, {7, 11, 5, 37}}; /* T B I H */
    kp_runtime *routes[] = {rt, clblast};
    for (int ri = 0; ri < 2; ri++)
        for (int64_t batch_gemm = 0; batch_gemm <= 1; batch_gemm++) {
            set_batch_gemm(routes[ri], batch_gemm);
            for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
                for (int lbr = 1; lbr >= 0; lbr--) {
                    const int64_t *z = shapes[i];
                    model m = model_make(z[0], z[1], z[2], z[3], lbr, 90u + (unsigned)i);
                    char what[128];
                    snprintf(what, sizeof what,
                             "%s route, BATCH_GEMM %s, T %lld B %lld H %lld lbr %d",
                             ri ? "clblast" : "default", batch_gemm ? "1" : "resolved",
                             (long long)z[0], (long long)z[1], (long long)z[3], lbr);
                    check_step(routes[ri], &m, what);
                    check_sequence(routes[ri], &m, what);
                    model_free(&m);
                }
        }
    set_batch_gemm(rt, 0);
    kp_runtime_destroy(clblast);
}

/* ---- verification ---------------------------------------------------------------------------- */

static void report(void *user, const kp_verify_result *r)
{
    if (!r->passed)
        fprintf(stderr, "verify %s %s %s: max abs err %g (atol %g, rtol %g)\n", r->kernel, r->size,
                r->output, r->max_abs_err, r->atol, r->rtol);
}

static void test_verify(void **state)
{
    const char *names[] = {"gru.step", "gru.sequence", "gru.sequence_backward"};
    for (int i = 0; i < 3; i++) {
        kp_status st = kp_kernel_verify(rt, find(rt, names[i]), NULL, 7, report, NULL);
        if (st != KP_OK)
            fail_msg("verify %s: %s", names[i], kp_last_error(rt));
    }
}

/* ROWS_H of the two sequence kernels (0 forgets the override). */
static void set_rows_h(kp_runtime *r, int64_t value)
{
    const char *names[] = {"gru.sequence", "gru.sequence_backward"};
    for (int i = 0; i < 2; i++) {
        kp_kernel *k = find(r, names[i]);
        assert_int_equal(value ? kp_kernel_tunable_set(r, k, "ROWS_H", value)
                               : kp_kernel_tuning_reset(r, k),
                         KP_OK);
    }
}

/* The rows route (every step in one launch, a work-group per batch row) against the host forward,
 * finite differences and the per-step backward: H past the work-group size and not a multiple
 * of it, a prime batch, with and without the projection GEMM (the x products in the kernel), and
 * the verify sizes (dh_all or dh_last absent). linear_before_reset 0 keeps the per-step route. */
static void test_rows_route(void **state)
{
    for (int lbr = 1; lbr >= 0; lbr--) {
        model m = model_make(9, 5, 13, 67, lbr, 80u + (unsigned)lbr);
        double *dh_all = random_doubles((size_t)(9 * 5 * 67), 81, 1.0);
        double *dh_last = random_doubles((size_t)(5 * 67), 82, 1.0);
        set_rows_h(rt, -1);
        grads steps = run_backward(rt, &m, dh_all, dh_last);
        set_rows_h(rt, 1024);
        const int64_t projection[] = {1, 1 << 30};
        for (int i = 0; i < 2; i++) {
            set_batch_gemm(rt, projection[i]);
            check_sequence(rt, &m, i ? "rows, x products in the kernel" : "rows, projected x");
        }
        grads rows = run_backward(rt, &m, dh_all, dh_last);
        set_batch_gemm(rt, 0); /* forgets ROWS_H too */
        const float *pa[] = {rows.dx, rows.dh0, rows.dw_ih, rows.dw_hh, rows.db_ih, rows.db_hh};
        const float *pb[] = {steps.dx,    steps.dh0,   steps.dw_ih,
                             steps.dw_hh, steps.db_ih, steps.db_hh};
        size_t n[] = {9 * 5 * 13, 5 * 67, 201 * 13, 201 * 67, 201, 201};
        for (int i = 0; i < 6; i++)
            expect_agree(pa[i], pb[i], n[i], 1e-5, 1e-4, "backward by rows vs per step");
        grads_free(&rows), grads_free(&steps);
        free(dh_all), free(dh_last);
        model_free(&m);
    }
    set_rows_h(rt, 1024);
    model tiny = model_make(3, 2, 3, 4, 1, 90);
    double *dh_all = random_doubles((size_t)(3 * 2 * 4), 91, 1.0);
    double *dh_last = random_doubles((size_t)(2 * 4), 92, 1.0);
    grads g = run_backward(rt, &tiny, dh_all, dh_last);
    double *fd = finite_differences(&tiny, tiny.w_hh, 48, dh_all, dh_last);
    expect_close(g.dw_hh, fd, 48, 2e-6, 1e-5, "dw_hh by rows");
    free(fd);
    fd = finite_differences(&tiny, tiny.h0, 8, dh_all, dh_last);
    expect_close(g.dh0, fd, 8, 2e-6, 1e-5, "dh0 by rows");
    free(fd);
    grads_free(&g);
    free(dh_all), free(dh_last);
    model_free(&tiny);
    const char *names[] = {"gru.sequence", "gru.sequence_backward"};
    for (int i = 0; i < 2; i++) {
        kp_status st = kp_kernel_verify(rt, find(rt, names[i]), NULL, 9, report, NULL);
        if (st != KP_OK)
            fail_msg("verify %s by rows: %s", names[i], kp_last_error(rt));
    }
    set_rows_h(rt, 0);
}

/* SPLIT_MN's chunked weight products and bias sums (GPUs' default) against the GEMM path and
 * the one-pass column sums, both variants, and the verify sizes. */
static void test_split_products(void **state)
{
    kp_kernel *k = find(rt, "gru.sequence_backward");
    for (int lbr = 1; lbr >= 0; lbr--) {
        model m = model_make(9, 5, 13, 67, lbr, 100u + (unsigned)lbr);
        double *dh_all = random_doubles((size_t)(9 * 5 * 67), 101, 1.0);
        double *dh_last = random_doubles((size_t)(5 * 67), 102, 1.0);
        assert_int_equal(kp_kernel_tunable_set(rt, k, "SPLIT_MN", -1), KP_OK);
        grads whole = run_backward(rt, &m, dh_all, dh_last);
        assert_int_equal(kp_kernel_tunable_set(rt, k, "SPLIT_MN", 1048576), KP_OK);
        grads split = run_backward(rt, &m, dh_all, dh_last);
        const float *pa[] = {split.dw_ih, split.dw_hh, split.db_ih, split.db_hh};
        const float *pb[] = {whole.dw_ih, whole.dw_hh, whole.db_ih, whole.db_hh};
        size_t n[] = {201 * 13, 201 * 67, 201, 201};
        for (int i = 0; i < 4; i++)
            expect_agree(pa[i], pb[i], n[i], 1e-5, 1e-4, "split weight products vs GEMM");
        grads_free(&whole), grads_free(&split);
        free(dh_all), free(dh_last);
        model_free(&m);
    }
    kp_status st = kp_kernel_verify(rt, k, NULL, 11, report, NULL);
    if (st != KP_OK)
        fail_msg("verify gru.sequence_backward, split products: %s", kp_last_error(rt));
    assert_int_equal(kp_kernel_tuning_reset(rt, k), KP_OK);
}

/* ---- argument checks ------------------------------------------------------------------------- */

/* A zeroed buffer per argument, so outputs never overlap inputs unless a test wants them to. */
static kp_buffer *bufs[16];

static kp_tensor t_nd(int slot, int32_t rank, const int64_t *shape)
{
    if (!bufs[slot]) {
        static const float zero[4096];
        assert_int_equal(kp_buffer_create(rt, sizeof zero, &bufs[slot]), KP_OK);
        assert_int_equal(kp_buffer_write(rt, bufs[slot], 0, sizeof zero, zero), KP_OK);
    }
    return kp_tensor_nd(bufs[slot], KP_F32, rank, shape);
}

#define T1(slot, a) t_nd(slot, 1, (int64_t[]){a})
#define T2(slot, a, b) t_nd(slot, 2, (int64_t[]){a, b})
#define T3(slot, a, b, c) t_nd(slot, 3, (int64_t[]){a, b, c})

/* Launches `kernel` with `base` where the argument named like `with` is replaced by it (left out
 * when it has no kind), and expects KP_ERR_INVALID_ARG with `message` in the error. */
static void reject(const char *kernel, const kp_arg *base, size_t n, kp_arg with,
                   const char *message)
{
    kp_arg args[32];
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(base[i].name, with.name) != 0)
            args[m++] = base[i];
        else if (with.kind != KP_ARG_NONE)
            args[m++] = with;
    kp_status st = kp_kernel_launch(rt, find(rt, kernel), args, m, NULL);
    if (st != KP_ERR_INVALID_ARG || !strstr(kp_last_error(rt), message))
        fail_msg("%s with %s changed: got %s \"%s\", expected \"%s\"", kernel, with.name,
                 kp_status_name(st), kp_last_error(rt), message);
}

#define OMIT(n) ((kp_arg){.name = (n)})
#define TA(n, t) KP_ARG_TENSOR(n, t)

/* B 2, I 3, H 4 (3H 12); T 2 for the sequences. */
static void test_rejects_step(void **state)
{
    const kp_arg base[] = {
        KP_ARG_TENSOR("x", T2(0, 2, 3)),     KP_ARG_TENSOR("h", T2(1, 2, 4)),
        KP_ARG_TENSOR("w_ih", T2(2, 12, 3)), KP_ARG_TENSOR("w_hh", T2(3, 12, 4)),
        KP_ARG_TENSOR("b_ih", T1(4, 12)),    KP_ARG_TENSOR("b_hh", T1(5, 12)),
        KP_ARG_TENSOR("h_out", T2(6, 2, 4)), KP_ARG_INT("linear_before_reset", 1)};
    size_t n = sizeof base / sizeof base[0];
    launch_ok(rt, "gru.step", base, n);
    reject("gru.step", base, n, TA("x", T1(0, 3)),
           "kernel gru.step: x: expected [B, I] with B, I >= 1, got f32[3]");
    reject("gru.step", base, n, TA("h", T2(1, 3, 4)),
           "h: expected [B, H] with B = 2 (x's) and H >= 1, got f32[3, 4]");
    reject("gru.step", base, n, OMIT("h"), "missing argument \"h\"");
    reject("gru.step", base, n, TA("w_ih", T2(2, 12, 4)),
           "w_ih: expected [3H, I] = [12, 3], got f32[12, 4]");
    reject("gru.step", base, n, TA("w_hh", T2(3, 12, 5)),
           "w_hh: expected [3H, H] = [12, 4], got f32[12, 5]");
    reject("gru.step", base, n, TA("w_hh", T2(3, 9, 4)),
           "w_hh: expected [3H, H] = [12, 4], got f32[9, 4]");
    reject("gru.step", base, n, TA("b_hh", T1(5, 11)), "b_hh: expected [3H] = [12], got f32[11]");
    reject("gru.step", base, n, TA("h_out", T2(6, 2, 5)),
           "h_out: expected [B, H] = [2, 4], got f32[2, 5]");
    reject("gru.step", base, n, TA("h_out", T2(1, 2, 4)), "output overlaps argument \"h\"");
    reject("gru.step", base, n, KP_ARG_INT("linear_before_reset", 2),
           "linear_before_reset: 2 is not 0 (ONNX) or 1 (PyTorch)");
    /* A broadcast h costs no memory whatever H is: 3H must not wrap around. */
    kp_tensor wide = T2(1, 2, INT64_MAX / 3 + 1);
    wide.strides[0] = 1;
    wide.strides[1] = 0;
    kp_arg args[sizeof base / sizeof base[0]];
    memcpy(args, base, sizeof args);
    args[1] = TA("h", wide);
    assert_int_equal(kp_kernel_launch(rt, find(rt, "gru.step"), args, n, NULL), KP_ERR_UNSUPPORTED);
    assert_string_equal(kp_last_error(rt), "kernel gru.step: T, B, I, H = 1, 2, 3, "
                                           "3074457345618258603: sizes beyond 2^31 - 1 are not "
                                           "supported");
}

static void test_rejects_sequence(void **state)
{
    const kp_arg base[] = {
        KP_ARG_TENSOR("x", T3(0, 2, 2, 3)),     KP_ARG_TENSOR("h0", T2(1, 2, 4)),
        KP_ARG_TENSOR("w_ih", T2(2, 12, 3)),    KP_ARG_TENSOR("w_hh", T2(3, 12, 4)),
        KP_ARG_TENSOR("h_all", T3(6, 2, 2, 4)), KP_ARG_TENSOR("workspace", T3(7, 2, 2, 16))};
    size_t n = sizeof base / sizeof base[0];
    launch_ok(rt, "gru.sequence", base, n);
    reject("gru.sequence", base, n, TA("x", T3(0, 0, 2, 3)),
           "x: T = 0: a sequence needs at least one step (got f32[0, 2, 3])");
    reject("gru.sequence", base, n, OMIT("h0"), "missing argument \"h0\"");
    reject("gru.sequence", base, n, TA("w_hh", T2(3, 15, 5)),
           "w_hh: expected [3H, H] = [12, 4], got f32[15, 5]");
    reject("gru.sequence", base, n, TA("h_all", T3(6, 3, 2, 4)),
           "h_all: expected [T, B, H] = [2, 2, 4], got f32[3, 2, 4]");
    reject("gru.sequence", base, n, TA("workspace", T3(7, 2, 2, 12)),
           "workspace: expected [T, B, 4H] = [2, 2, 16], got f32[2, 2, 12]");
}

static void test_rejects_backward(void **state)
{
    const kp_arg base[] = {
        KP_ARG_TENSOR("x", T3(0, 2, 2, 3)),      KP_ARG_TENSOR("h0", T2(1, 2, 4)),
        KP_ARG_TENSOR("h_all", T3(2, 2, 2, 4)),  KP_ARG_TENSOR("workspace", T3(3, 2, 2, 16)),
        KP_ARG_TENSOR("w_ih", T2(4, 12, 3)),     KP_ARG_TENSOR("w_hh", T2(5, 12, 4)),
        KP_ARG_TENSOR("dh_all", T3(6, 2, 2, 4)), KP_ARG_TENSOR("dx", T3(7, 2, 2, 3)),
        KP_ARG_TENSOR("dh0", T2(8, 2, 4)),       KP_ARG_TENSOR("dw_ih", T2(9, 12, 3)),
        KP_ARG_TENSOR("dw_hh", T2(10, 12, 4)),   KP_ARG_TENSOR("db_ih", T1(11, 12)),
        KP_ARG_TENSOR("db_hh", T1(12, 12))};
    size_t n = sizeof base / sizeof base[0];
    const char *k = "gru.sequence_backward";
    launch_ok(rt, k, base, n);
    reject(k, base, n, TA("x", T3(0, 0, 2, 3)), "x: T = 0: a sequence needs at least one step");
    reject(k, base, n, OMIT("dh_all"), "dh_all, dh_last: give at least one upstream gradient");
    reject(k, base, n, OMIT("workspace"), "missing argument \"workspace\"");
    reject(k, base, n, TA("w_hh", T2(5, 12, 3)),
           "w_hh: expected [3H, H] = [12, 4], got f32[12, 3]");
    reject(k, base, n, TA("dw_hh", T2(10, 12, 3)),
           "dw_hh: expected [3H, H] = [12, 4], got f32[12, 3]");
    reject(k, base, n, TA("dh_all", T3(6, 2, 2, 5)),
           "dh_all: expected [T, B, H] = [2, 2, 4], got f32[2, 2, 5]");
    kp_tensor wide = T2(1, 2, INT64_MAX / 4 + 1);
    wide.strides[0] = 1;
    wide.strides[1] = 0;
    kp_arg args[sizeof base / sizeof base[0]];
    memcpy(args, base, sizeof args);
    args[1] = TA("h0", wide);
    assert_int_equal(kp_kernel_launch(rt, find(rt, k), args, n, NULL), KP_ERR_UNSUPPORTED);
    assert_string_equal(kp_last_error(rt), "kernel gru.sequence_backward: T, B, I, H = 2, 2, 3, "
                                           "2305843009213693952: sizes beyond 2^31 - 1 are not "
                                           "supported");
}

static int setup(void **state)
{
    rt = open_runtime(NULL);
    return 0;
}

static int teardown(void **state)
{
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        kp_buffer_destroy(rt, bufs[i]);
    kp_runtime_destroy(noblas);
    kp_runtime_destroy(rt);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step_hidden_sizes),
        cmocka_unit_test(test_step_queue_order),
        cmocka_unit_test(test_sequence),
        cmocka_unit_test(test_fused_lane_shapes),
        cmocka_unit_test(test_backward_finite_differences),
        cmocka_unit_test(test_paths_agree),
        cmocka_unit_test(test_gemm_gates_edges),
        cmocka_unit_test(test_verify),
        cmocka_unit_test(test_rows_route),
        cmocka_unit_test(test_split_products),
        cmocka_unit_test(test_rejects_step),
        cmocka_unit_test(test_rejects_sequence),
        cmocka_unit_test(test_rejects_backward),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
