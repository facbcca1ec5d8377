/* SPDX-License-Identifier: Apache-2.0 */
/* gru.rollout on PoCL against its host reference: sizes, tunables, views, determinism, sampling
 * statistics, S = 0 and argument checks (test-gru-ops.c tests ops/gru.h's own helpers). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kernelport/ops/gru.h"
#include "test-util.h"

/* PoCL and the host device (which runs the reference), shared: each local size and tunable set
 * costs PoCL a compile. */
static kp_runtime *pocl, *host;

static kp_runtime *open_runtime(const char *device)
{
    kp_runtime_options o = test_options(test_build_path("lib/kernelport/plugins"), device, NULL);
    kp_runtime *r = NULL;
    kp_status st = kp_runtime_create(&o, &r);
    if (st != KP_OK)
        fprintf(stderr, "kp_runtime_create: %s\n", kp_last_error(NULL));
    assert_int_equal(st, KP_OK);
    return r;
}

static kp_kernel *rollout_kernel(kp_runtime *r)
{
    kp_kernel *k = NULL;
    assert_int_equal(kp_kernel_find(r, "gru.rollout", &k), KP_OK);
    return k;
}

/* ---- a rollout problem in host memory ---------------------------------------------------------
 */

enum { P_W_IH, P_W_HH, P_B_IH, P_B_HH, P_W_P, P_B_P, P_W_Y, P_B_Y, P_F, P_Y0, P_Z0, P_H0, P_IN };
enum { O_Y, O_HT, O_ENT, O_HN, P_OUT };
static const char *const in_names[P_IN] = {"w_ih", "w_hh", "b_ih", "b_hh", "w_p", "b_p",
                                           "w_y",  "b_y",  "f",    "y0",   "z0",  "h0"};
static const char *const out_names[P_OUT] = {"y", "h_T", "entropy", "hnorm"};

typedef struct problem problem;
struct problem {
    int64_t E, B, F, H, S, T, fE; /* fE: f's first dimension, 1 or E */
    int mode, lbr;
    int64_t seed;
    float *in[P_IN];
    int64_t in_n[P_IN];
    int omit[P_IN];                /* leave the input out of the call */
    const problem *shape_of[P_IN]; /* give the input that problem's shape (or NULL) */
    const char *kernel;            /* the kernel to launch; NULL: gru.rollout */
};

static problem make(int64_t E, int64_t B, int64_t F, int64_t H, int64_t S, int64_t T, int shared_f,
                    int mode, int lbr, unsigned seed)
{
    problem p = {.E = E,
                 .B = B,
                 .F = F,
                 .H = H,
                 .S = S,
                 .T = T,
                 .fE = shared_f ? 1 : E,
                 .mode = mode,
                 .lbr = lbr,
                 .seed = 7 + seed};
    const int64_t I = F + 1 + S,
                  n[P_IN] = {E * 3 * H * I, E * 3 * H * H, E * 3 * H, E * 3 * H,    E * S * H,
                             E * S,         E * (H + S),   E,         p.fE * B * F, B,
                             E * B * S,     E * B * H};
    const float w = 1.0f / sqrtf((float)H);
    for (int i = 0; i < P_IN; i++) {
        p.in_n[i] = n[i];
        p.in[i] = malloc((size_t)(n[i] ? n[i] : 1) * sizeof(float));
        assert_non_null(p.in[i]);
        test_fill(p.in[i], (size_t)n[i], seed * 31u + (unsigned)i);
        for (int64_t j = 0; j < n[i]; j++)
            p.in[i][j] *= i == P_B_P ? 1.5f : i <= P_B_Y ? w : 1.0f;
    }
    return p;
}

static void unmake(problem *p)
{
    for (int i = 0; i < P_IN; i++)
        free(p->in[i]);
}

static int64_t out_n(const problem *p, int o)
{
    return p->E * p->B * (o == O_HT ? p->H : p->T);
}

/* The tensors of input i: contiguous, of the problem's shape. */
static kp_tensor in_tensor(const problem *p, int i, kp_buffer *b)
{
    if (p->shape_of[i])
        p = p->shape_of[i];
    const int64_t E = p->E, B = p->B, H = p->H, S = p->S, I = p->F + 1 + p->S;
    const int64_t shapes[P_IN][3] = {{E, 3 * H, I},    {E, 3 * H, H}, {E, 3 * H}, {E, 3 * H},
                                     {E, S, H},        {E, S},        {E, H + S}, {E},
                                     {p->fE, B, p->F}, {B},           {E, B, S},  {E, B, H}};
    const int ranks[P_IN] = {3, 3, 2, 2, 3, 2, 2, 1, 3, 1, 3, 3};
    return kp_tensor_nd(b, KP_F32, ranks[i], shapes[i]);
}

/* Runs the problem on runtime r; outputs into out[o] (out_n floats each). Returns the status;
 * the launch's message is in kp_last_error(r). */
static kp_status run(kp_runtime *r, const problem *p, float *out[P_OUT])
{
    kp_buffer *b[P_IN + P_OUT] = {0};
    kp_arg args[24];
    size_t n = 0;
    kp_status st = KP_OK;
    for (int i = 0; i < P_IN && st == KP_OK; i++) {
        if (p->omit[i])
            continue;
        size_t bytes = (size_t)(p->in_n[i] ? p->in_n[i] : 1) * sizeof(float);
        st = kp_buffer_create(r, bytes, &b[i]);
        if (st == KP_OK)
            st = kp_buffer_write(r, b[i], 0, bytes, p->in[i]);
        args[n++] = kp_arg_tensor(in_names[i], in_tensor(p, i, b[i]));
    }
    for (int o = 0; o < P_OUT && st == KP_OK; o++) {
        st = kp_buffer_create(r, (size_t)(out_n(p, o) ? out_n(p, o) : 1) * sizeof(float),
                              &b[P_IN + o]);
        const int64_t shape[3] = {p->E, p->B, o == O_HT ? p->H : p->T};
        args[n++] = kp_arg_tensor(out_names[o], kp_tensor_nd(b[P_IN + o], KP_F32, 3, shape));
    }
    args[n++] = kp_arg_int("T", p->T);
    args[n++] = kp_arg_int("mode", p->mode);
    args[n++] = kp_arg_int("seed", p->seed);
    args[n++] = kp_arg_int("linear_before_reset", p->lbr);
    kp_kernel *k = rollout_kernel(r);
    if (p->kernel)
        assert_int_equal(kp_kernel_find(r, p->kernel, &k), KP_OK);
    if (st == KP_OK)
        st = kp_kernel_launch(r, k, args, n, NULL);
    for (int o = 0; o < P_OUT && st == KP_OK; o++)
        st = kp_buffer_read(r, b[P_IN + o], 0, (size_t)out_n(p, o) * sizeof(float), out[o]);
    for (int i = 0; i < P_IN + P_OUT; i++)
        kp_buffer_destroy(r, b[i]);
    return st;
}

static void run_ok(kp_runtime *r, const problem *p, float *out[P_OUT])
{
    kp_status st = run(r, p, out);
    if (st != KP_OK)
        fail_msg("gru.rollout failed: %s", kp_last_error(r));
}

static void alloc_out(const problem *p, float *out[P_OUT])
{
    for (int o = 0; o < P_OUT; o++) {
        out[o] = malloc((size_t)(out_n(p, o) ? out_n(p, o) : 1) * sizeof(float));
        assert_non_null(out[o]);
    }
}

static void free_out(float *out[P_OUT])
{
    for (int o = 0; o < P_OUT; o++)
        free(out[o]);
}

/* |a - b| <= tol (1 + |b|) everywhere; tol 0: bitwise equal. */
static void expect_close(const problem *p, float *a[P_OUT], float *b[P_OUT], double tol,
                         const char *what)
{
    for (int o = 0; o < P_OUT; o++)
        for (int64_t i = 0; i < out_n(p, o); i++) {
            double x = a[o][i], y = b[o][i];
            int ok = tol == 0 ? memcmp(&a[o][i], &b[o][i], sizeof(float)) == 0
                              : fabs(x - y) <= tol * (1 + fabs(y));
            if (!ok)
                fail_msg("%s: %s[%lld] is %.9g, expected %.9g (tolerance %g)", what, out_names[o],
                         (long long)i, x, y, tol);
        }
}

/* The plugin's tolerance, 2 (I + H) sqrt(T) u with u = 2^-24 (docs/kernels/gru.md), applied
 * relative to 1 + |reference|. */
static double tolerance(const problem *p)
{
    return 2.0 * (double)(p->F + 1 + p->S + p->H) * sqrt((double)p->T) * 0x1p-24;
}

/* PoCL against the host device on the same inputs. */
static void check_against_host(const problem *p, const char *what)
{
    float *dev[P_OUT], *ref[P_OUT];
    alloc_out(p, dev);
    alloc_out(p, ref);
    run_ok(pocl, p, dev);
    run_ok(host, p, ref);
    expect_close(p, dev, ref, tolerance(p), what);
    free_out(dev);
    free_out(ref);
}

/* ---- kernel against reference -----------------------------------------------------------------
 */

static void report_failure(void *user, const kp_verify_result *r)
{
    if (!r->passed)
        print_error("%s %s %s: max abs err %g (atol %g)\n", r->kernel, r->size, r->output,
                    r->max_abs_err, r->atol);
}

/* Every verify size (each mode and variant, H 1, 7, 33, 129, S 0, 5, 300, shared f), with the
 * default tunables and with four other sets: one work-item per row (passes of 32 rows: 3H and S
 * span several passes even at H = 7), two lanes per row with float2 loads, and WG 1's one
 * work-item per trajectory with float16 and float4 pieces (H and S are not multiples of 4 but
 * at H 129 and S 300, so the vector loops and their tails both run). */
static void test_verify_sizes_and_tunables(void **state)
{
    kp_kernel *k = rollout_kernel(pocl);
    const int64_t sets[][3] = {{256, 8, 4}, {32, 1, 1}, {64, 2, 2}, {1, 1, 16}, {1, 1, 4}};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        assert_int_equal(kp_kernel_tunable_set(pocl, k, "WG", sets[i][0]), KP_OK);
        assert_int_equal(kp_kernel_tunable_set(pocl, k, "LANES", sets[i][1]), KP_OK);
        assert_int_equal(kp_kernel_tunable_set(pocl, k, "VEC", sets[i][2]), KP_OK);
        kp_status st = kp_kernel_verify(pocl, k, NULL, 3 + i, report_failure, NULL);
        if (st != KP_OK)
            fail_msg("WG %lld LANES %lld VEC %lld: %s", (long long)sets[i][0],
                     (long long)sets[i][1], (long long)sets[i][2], kp_last_error(pocl));
    }
    assert_int_equal(kp_kernel_tuning_reset(pocl, k), KP_OK);
}

/* Awkward shapes of this file's own making, every mode and both variants, against the host. */
static void test_modes_and_variants(void **state)
{
    const int64_t dims[][6] = {{1, 1, 3, 1, 5, 6}, {3, 2, 3, 7, 5, 6}, {3, 2, 3, 33, 5, 1}};
    unsigned seed = 1;
    for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++)
        for (int mode = KP_GRU_ROLLOUT_MEAN; mode <= KP_GRU_ROLLOUT_ARGMAX; mode++)
            for (int lbr = 0; lbr <= 1; lbr++) {
                const int64_t *z = dims[d];
                problem p =
                    make(z[0], z[1], z[2], z[3], z[4], z[5], (int)(d & 1), mode, lbr, seed++);
                char what[96];
                snprintf(what, sizeof what, "E%lld B%lld H%lld mode %d lbr %d", (long long)z[0],
                         (long long)z[1], (long long)z[3], mode, lbr);
                check_against_host(&p, what);
                unmake(&p);
            }
}

/* Biases left out (zero) and S = 0 with the prior absent or empty: entropy is 0 then. */
static void test_s0_and_omitted(void **state)
{
    problem p = make(3, 2, 3, 7, 0, 6, 1, KP_GRU_ROLLOUT_SAMPLE, 1, 11);
    p.omit[P_W_P] = p.omit[P_B_P] = p.omit[P_Z0] = 1;
    check_against_host(&p, "S = 0, prior absent");
    p.omit[P_W_P] = p.omit[P_B_P] = p.omit[P_Z0] = 0; /* present but empty */
    p.omit[P_B_IH] = p.omit[P_B_HH] = 1;
    p.lbr = 0;
    check_against_host(&p, "S = 0, prior empty, no biases");
    float *out[P_OUT];
    alloc_out(&p, out);
    run_ok(pocl, &p, out);
    for (int64_t i = 0; i < out_n(&p, O_ENT); i++)
        assert_true(out[O_ENT][i] == 0.0f);
    free_out(out);
    unmake(&p);
}

/* kp_gru_rollout (kernelport/ops/gru.h) makes the same call as the named arguments: bitwise the
 * same outputs; a NULL buffer leaves an optional tensor out (entropy here, whose output buffer
 * must stay as written). */
static void test_typed_helper(void **state)
{
    (void)state;
    problem p = make(2, 3, 2, 5, 3, 4, 0, KP_GRU_ROLLOUT_ARGMAX, 1, 5);
    float *want[P_OUT], *got[P_OUT];
    alloc_out(&p, want);
    alloc_out(&p, got);
    run_ok(pocl, &p, want);
    kp_buffer *b[P_IN + P_OUT] = {0};
    kp_tensor t[P_IN + P_OUT];
    for (int i = 0; i < P_IN; i++) {
        size_t bytes = (size_t)p.in_n[i] * sizeof(float);
        assert_int_equal(kp_buffer_create(pocl, bytes, &b[i]), KP_OK);
        assert_int_equal(kp_buffer_write(pocl, b[i], 0, bytes, p.in[i]), KP_OK);
        t[i] = in_tensor(&p, i, b[i]);
    }
    const float marker = -7.0f;
    for (int o = 0; o < P_OUT; o++) {
        size_t bytes = (size_t)out_n(&p, o) * sizeof(float);
        assert_int_equal(kp_buffer_create(pocl, bytes, &b[P_IN + o]), KP_OK);
        for (int64_t i = 0; i < out_n(&p, o); i++)
            got[o][i] = marker;
        assert_int_equal(kp_buffer_write(pocl, b[P_IN + o], 0, bytes, got[o]), KP_OK);
        const int64_t shape[3] = {p.E, p.B, o == O_HT ? p.H : p.T};
        t[P_IN + o] = kp_tensor_nd(b[P_IN + o], KP_F32, 3, shape);
    }
    kp_gru_rollout_args a = {.w_ih = t[P_W_IH],
                             .w_hh = t[P_W_HH],
                             .b_ih = t[P_B_IH],
                             .b_hh = t[P_B_HH],
                             .w_p = t[P_W_P],
                             .b_p = t[P_B_P],
                             .w_y = t[P_W_Y],
                             .b_y = t[P_B_Y],
                             .f = t[P_F],
                             .y0 = t[P_Y0],
                             .z0 = t[P_Z0],
                             .h0 = t[P_H0],
                             .y = t[P_IN + O_Y],
                             .h_T = t[P_IN + O_HT],
                             .hnorm = t[P_IN + O_HN],
                             .T = p.T,
                             .mode = p.mode,
                             .seed = p.seed,
                             .linear_before_reset = p.lbr};
    kp_status st = kp_gru_rollout(pocl, &a, NULL);
    if (st != KP_OK)
        fail_msg("kp_gru_rollout: %s", kp_last_error(pocl));
    for (int o = 0; o < P_OUT; o++)
        assert_int_equal(
            kp_buffer_read(pocl, b[P_IN + o], 0, (size_t)out_n(&p, o) * sizeof(float), got[o]),
            KP_OK);
    for (int64_t i = 0; i < out_n(&p, O_ENT); i++) {
        assert_true(got[O_ENT][i] == marker);
        got[O_ENT][i] = want[O_ENT][i];
    }
    expect_close(&p, got, want, 0, "kp_gru_rollout against named arguments");
    for (int i = 0; i < P_IN + P_OUT; i++)
        kp_buffer_destroy(pocl, b[i]);
    free_out(want);
    free_out(got);
    unmake(&p);
}

/* Views: w_ih with padded rows at an offset, h0 stored [B, E, H], y stored [T, E, B] with the
 * rest of its buffer left alone, w_p with padded rows. PoCL against the host on the same views. */
static kp_status run_views(kp_runtime *r, const problem *p, float *y_store, size_t y_n, float *ht)
{
    const int64_t E = p->E, B = p->B, H = p->H, S = p->S, T = p->T, I = p->F + 1 + S;
    const int64_t wih_ld = I + 3, wih_off = 5, wp_ld = H + 2;
    size_t wih_n = (size_t)(wih_off + E * 3 * H * wih_ld), wp_n = (size_t)(E * S * wp_ld);
    float *wih = calloc(wih_n, sizeof *wih), *wp = calloc(wp_n, sizeof *wp);
    float *h0 = malloc((size_t)(E * B * H) * sizeof *h0);
    assert_true(wih && wp && h0);
    for (int64_t row = 0; row < E * 3 * H; row++)
        memcpy(wih + wih_off + row * wih_ld, p->in[P_W_IH] + row * I, (size_t)I * sizeof(float));
    for (int64_t row = 0; row < E * S; row++)
        memcpy(wp + row * wp_ld, p->in[P_W_P] + row * H, (size_t)H * sizeof(float));
    for (int64_t e = 0; e < E; e++)
        for (int64_t b = 0; b < B; b++)
            memcpy(h0 + (b * E + e) * H, p->in[P_H0] + (e * B + b) * H, (size_t)H * sizeof(float));
    const float *data[P_IN] = {wih,        p->in[P_W_HH], p->in[P_B_IH], p->in[P_B_HH],
                               wp,         p->in[P_B_P],  p->in[P_W_Y],  p->in[P_B_Y],
                               p->in[P_F], p->in[P_Y0],   p->in[P_Z0],   h0};
    const size_t count[P_IN] = {wih_n,
                                (size_t)p->in_n[1],
                                (size_t)p->in_n[2],
                                (size_t)p->in_n[3],
                                wp_n,
                                (size_t)p->in_n[5],
                                (size_t)p->in_n[6],
                                (size_t)p->in_n[7],
                                (size_t)p->in_n[8],
                                (size_t)p->in_n[9],
                                (size_t)p->in_n[10],
                                (size_t)p->in_n[11]};
    kp_buffer *b[P_IN + 2] = {0};
    kp_arg args[P_IN + 4];
    kp_status st = KP_OK;
    for (int i = 0; i < P_IN && st == KP_OK; i++) {
        st = kp_buffer_create(r, count[i] * sizeof(float), &b[i]);
        if (st == KP_OK)
            st = kp_buffer_write(r, b[i], 0, count[i] * sizeof(float), data[i]);
        args[i] = kp_arg_tensor(in_names[i], in_tensor(p, i, b[i]));
    }
    args[P_W_IH].tensor.offset = wih_off;
    args[P_W_IH].tensor.strides[1] = wih_ld;
    args[P_W_IH].tensor.strides[0] = 3 * H * wih_ld;
    args[P_W_P].tensor.strides[1] = wp_ld;
    args[P_W_P].tensor.strides[0] = S * wp_ld;
    args[P_H0].tensor.strides[0] = H;
    args[P_H0].tensor.strides[1] = E * H;
    if (st == KP_OK)
        st = kp_buffer_create(r, y_n * sizeof(float), &b[P_IN]);
    if (st == KP_OK)
        st = kp_buffer_write(r, b[P_IN], 0, y_n * sizeof(float), y_store);
    if (st == KP_OK)
        st = kp_buffer_create(r, (size_t)(E * B * H) * sizeof(float), &b[P_IN + 1]);
    kp_tensor ty = kp_tensor_3d(b[P_IN], KP_F32, E, B, T);
    ty.strides[0] = B;
    ty.strides[1] = 1;
    ty.strides[2] = E * B + 1; /* one float of padding between steps */
    size_t n = P_IN;
    args[n++] = kp_arg_tensor("y", ty);
    args[n++] = kp_arg_tensor("h_T", kp_tensor_3d(b[P_IN + 1], KP_F32, E, B, H));
    args[n++] = kp_arg_int("T", T);
    args[n++] = kp_arg_int("mode", p->mode);
    if (st == KP_OK)
        st = kp_kernel_launch(r, rollout_kernel(r), args, n, NULL);
    if (st == KP_OK)
        st = kp_buffer_read(r, b[P_IN], 0, y_n * sizeof(float), y_store);
    if (st == KP_OK)
        st = kp_buffer_read(r, b[P_IN + 1], 0, (size_t)(E * B * H) * sizeof(float), ht);
    for (int i = 0; i < P_IN + 2; i++)
        kp_buffer_destroy(r, b[i]);
    free(wih);
    free(wp);
    free(h0);
    return st;
}

static void test_strided_views(void **state)
{
    problem p = make(3, 2, 3, 33, 5, 4, 0, KP_GRU_ROLLOUT_MEAN, 1, 61);
    size_t y_n = (size_t)((p.E * p.B + 1) * p.T), h_n = (size_t)(p.E * p.B * p.H);
    float *ya = malloc(y_n * sizeof *ya), *yb = malloc(y_n * sizeof *yb);
    float *ha = malloc(h_n * sizeof *ha), *hb = malloc(h_n * sizeof *hb);
    assert_true(ya && yb && ha && hb);
    for (size_t i = 0; i < y_n; i++)
        ya[i] = yb[i] = -777.0f; /* padding must keep this */
    if (run_views(pocl, &p, ya, y_n, ha) != KP_OK || run_views(host, &p, yb, y_n, hb) != KP_OK)
        fail_msg("views: %s / %s", kp_last_error(pocl), kp_last_error(host));
    double tol = tolerance(&p);
    for (size_t i = 0; i < y_n; i++) {
        if ((i + 1) % (size_t)(p.E * p.B + 1) == 0)
            assert_true(ya[i] == -777.0f && yb[i] == -777.0f);
        else if (!(fabs(ya[i] - yb[i]) <= tol * (1 + fabs(yb[i]))))
            fail_msg("views: y storage [%zu] is %.9g, expected %.9g", i, ya[i], yb[i]);
    }
    for (size_t i = 0; i < h_n; i++)
        if (!(fabs(ha[i] - hb[i]) <= tol * (1 + fabs(hb[i]))))
            fail_msg("views: h_T[%zu] is %.9g, expected %.9g", i, ha[i], hb[i]);
    free(ya);
    free(yb);
    free(ha);
    free(hb);
    unmake(&p);
}

/* ---- determinism and sampling -----------------------------------------------------------------
 */

/* Same seed: bitwise the same outputs; another seed: other draws. */
static void test_same_seed_same_rollout(void **state)
{
    problem p = make(3, 2, 3, 33, 5, 6, 0, KP_GRU_ROLLOUT_SAMPLE, 1, 21);
    float *a[P_OUT], *b[P_OUT];
    alloc_out(&p, a);
    alloc_out(&p, b);
    run_ok(pocl, &p, a);
    run_ok(pocl, &p, b);
    expect_close(&p, a, b, 0, "the same seed twice");
    p.seed = 8;
    run_ok(pocl, &p, b);
    int differ = 0;
    for (int64_t i = 0; i < out_n(&p, O_Y); i++)
        differ |= a[O_Y][i] != b[O_Y][i];
    assert_true(differ);
    free_out(a);
    free_out(b);
    unmake(&p);
}

/*
 * A prior that ignores h (w_p = 0, logits = b_p) and a loss head that reads only the state
 * (w_y = [0; 10 s], b_y = 0): y_t = 10 k_t names each drawn category exactly. Returns the
 * problem; `probs` are the categories' probabilities.
 */
static problem categorical(int64_t E, int64_t B, int64_t T, const double *probs, int64_t S,
                           unsigned seed)
{
    problem p = make(E, B, 2, 5, S, T, 1, KP_GRU_ROLLOUT_SAMPLE, 1, seed);
    memset(p.in[P_W_P], 0, (size_t)p.in_n[P_W_P] * sizeof(float));
    memset(p.in[P_B_Y], 0, (size_t)p.in_n[P_B_Y] * sizeof(float));
    for (int64_t e = 0; e < E; e++)
        for (int64_t s = 0; s < S; s++)
            p.in[P_B_P][e * S + s] = (float)log(probs[s]);
    for (int64_t e = 0; e < E; e++)
        for (int64_t c = 0; c < p.H + S; c++)
            p.in[P_W_Y][e * (p.H + S) + c] = c < p.H ? 0.0f : (float)(10 * (c - p.H));
    return p;
}

/* The category the inverse CDF of `probs` gives for draw (e, b, t), or -1 within `margin` of a
 * boundary. */
static int expected_category(const problem *p, const double *probs, int64_t e, int64_t b, int64_t t,
                             double margin)
{
    double u = kp_gru_rollout_uniform((uint64_t)p->seed, e, b, t), cdf = 0;
    for (int64_t s = 0; s < p->S; s++) {
        cdf += probs[s];
        if (fabs(u - cdf) < margin && s + 1 < p->S)
            return -1;
        if (u < cdf)
            return (int)s;
    }
    return (int)p->S - 1;
}

/* Draws far from every boundary: PoCL and the host device pick the categories the inverse CDF
 * of the exact probabilities gives. */
static void test_sample_categories_match(void **state)
{
    const double probs[4] = {0.1, 0.2, 0.3, 0.4};
    problem p = categorical(2, 3, 8, probs, 4, 31);
    float *dev[P_OUT], *ref[P_OUT];
    alloc_out(&p, dev);
    alloc_out(&p, ref);
    run_ok(pocl, &p, dev);
    run_ok(host, &p, ref);
    int checked = 0;
    for (int64_t e = 0; e < p.E; e++)
        for (int64_t b = 0; b < p.B; b++)
            for (int64_t t = 0; t < p.T; t++) {
                int want = expected_category(&p, probs, e, b, t, 1e-4);
                int64_t i = (e * p.B + b) * p.T + t;
                if (want < 0)
                    continue;
                checked++;
                assert_float_equal(dev[O_Y][i], 10.0f * want, 0);
                assert_float_equal(ref[O_Y][i], 10.0f * want, 0);
            }
    assert_true(checked > 40);
    free_out(dev);
    free_out(ref);
    unmake(&p);
}

/*
 * 10 000 draws from (0.1, 0.2, 0.3, 0.4): Pearson's chi-square of the category counts stays
 * below 16.27, the 0.999 quantile of chi-square with 3 degrees of freedom (the seed is fixed, so
 * the test is deterministic; a biased sampler or a correlated stream would exceed it).
 */
static void test_sample_frequencies(void **state)
{
    const double probs[4] = {0.1, 0.2, 0.3, 0.4};
    problem p = categorical(2, 1000, 5, probs, 4, 41);
    float *out[P_OUT];
    alloc_out(&p, out);
    run_ok(pocl, &p, out);
    double count[4] = {0}, n = (double)out_n(&p, O_Y);
    for (int64_t i = 0; i < out_n(&p, O_Y); i++) {
        int k = (int)lrintf(out[O_Y][i] / 10.0f);
        assert_true(k >= 0 && k < 4);
        count[k]++;
    }
    double chi2 = 0;
    for (int s = 0; s < 4; s++)
        chi2 += (count[s] - n * probs[s]) * (count[s] - n * probs[s]) / (n * probs[s]);
    if (!(chi2 < 16.27))
        fail_msg("chi-square %.2f: counts %.0f %.0f %.0f %.0f of %.0f", chi2, count[0], count[1],
                 count[2], count[3], n);
    free_out(out);
    unmake(&p);
}

/* ---- argument checks --------------------------------------------------------------------------
 */

/* The launch fails with `status` and exactly `message`. */
static void expect_rejected(problem *p, kp_status status, const char *message)
{
    float *out[P_OUT];
    alloc_out(p, out);
    kp_status st = run(pocl, p, out);
    const char *got = kp_last_error(pocl);
    if (st != status || strcmp(got, message) != 0)
        fail_msg("expected %s \"%s\", got %s \"%s\"", kp_status_name(status), message,
                 kp_status_name(st), got);
    free_out(out);
}

/* Gives p input i of problem `from`, data and shape (from must outlive p's runs). */
static void swap_input(problem *p, int i, const problem *from)
{
    free(p->in[i]);
    p->in_n[i] = from->in_n[i];
    p->in[i] = malloc((size_t)(from->in_n[i] ? from->in_n[i] : 1) * sizeof(float));
    memcpy(p->in[i], from->in[i], (size_t)from->in_n[i] * sizeof(float));
    p->shape_of[i] = from;
}

static void test_rejections(void **state)
{
    problem p = make(3, 2, 3, 7, 5, 6, 0, KP_GRU_ROLLOUT_SAMPLE, 1, 51);
    p.T = 0;
    expect_rejected(&p, KP_ERR_INVALID_ARG, "kernel gru.rollout: T: must be 1..2147483647, got 0");
    p.T = 6;
    p.mode = 3;
    expect_rejected(&p, KP_ERR_INVALID_ARG,
                    "kernel gru.rollout: mode: 3 is not 0 (sample), 1 (mean) or 2 (argmax)");
    p.mode = 0;
    p.omit[P_W_P] = 1;
    expect_rejected(&p, KP_ERR_INVALID_ARG,
                    "kernel gru.rollout: w_p: the prior head is required when S = 5 (w_y has "
                    "H + S = 12 columns)");
    p.omit[P_W_P] = 0;
    p.omit[P_W_Y] = 1;
    expect_rejected(&p, KP_ERR_INVALID_ARG,
                    "kernel gru.rollout: missing argument \"w_y\" (f32 tensor, in)");
    p.omit[P_W_Y] = 0;
    unmake(&p);

    /* Each input taken from a problem that differs in one size: E, H, S, F or f's members. */
    const struct {
        int input;
        int64_t E, H, S, F, fE;
        const char *message;
    } cases[] = {
        {P_H0, 2, 7, 5, 3, 3, "h0: expected [E, B, H] = [3, 2, 7], got f32[2, 2, 7]"},
        {P_H0, 3, 8, 5, 3, 3, "h0: expected [E, B, H] = [3, 2, 7], got f32[3, 2, 8]"},
        {P_B_P, 3, 7, 6, 3, 3, "b_p: expected [E, S] = [3, 5], got f32[3, 6]"},
        {P_Z0, 3, 7, 4, 3, 3, "z0: expected [E, B, S] = [3, 2, 5], got f32[3, 2, 4]"},
        {P_W_IH, 3, 7, 5, 2, 3, "w_ih: expected I = F + 1 + S = 3 + 1 + 5 = 9 columns, got 8"},
        {P_F, 3, 7, 5, 3, 2,
         "f: its first dimension must be E = 3 or 1 (shared by the members), got 2"},
        {P_B_Y, 4, 7, 5, 3, 3, "b_y: expected [E] = [3], got f32[4]"},
        {P_W_Y, 2, 7, 5, 3, 3,
         "w_y: expected [E, H + S] = [3, 7 + S] with S >= 0 (it defines S), got f32[2, 12]"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        problem good = make(3, 2, 3, 7, 5, 6, 0, KP_GRU_ROLLOUT_SAMPLE, 1, 52);
        problem bad = make(cases[c].E, 2, cases[c].F, cases[c].H, cases[c].S, 6, 0,
                           KP_GRU_ROLLOUT_SAMPLE, 1, 53);
        int i = cases[c].input;
        if (i == P_F) {
            good.fE = cases[c].fE; /* f [2, B, F]: the first 12 of its 18 floats */
            good.in_n[P_F] = cases[c].fE * good.B * good.F;
        } else {
            swap_input(&good, i, &bad);
        }
        char message[300];
        snprintf(message, sizeof message, "kernel gru.rollout: %s", cases[c].message);
        expect_rejected(&good, KP_ERR_INVALID_ARG, message);
        unmake(&good);
        unmake(&bad);
    }
    /* An f with fewer rows than B: the kernel would read rows past it. */
    problem good = make(3, 3, 3, 7, 5, 6, 0, KP_GRU_ROLLOUT_SAMPLE, 1, 54);
    problem fewer = make(3, 2, 3, 7, 5, 6, 0, KP_GRU_ROLLOUT_SAMPLE, 1, 55);
    swap_input(&good, P_F, &fewer);
    expect_rejected(&good, KP_ERR_INVALID_ARG,
                    "kernel gru.rollout: f: expected [E or 1, B, F] with B = 3 (h0's), got "
                    "f32[3, 2, 3]");
    unmake(&good);
    unmake(&fewer);

    /* A broadcast f costs no memory whatever F is: I = F + 1 + S must not wrap around. */
    kp_buffer *in = NULL, *outs[2] = {0};
    assert_int_equal(kp_buffer_create(pocl, 64, &in), KP_OK);
    assert_int_equal(kp_buffer_create(pocl, 4, &outs[0]), KP_OK);
    assert_int_equal(kp_buffer_create(pocl, 4, &outs[1]), KP_OK);
    kp_tensor f = kp_tensor_3d(in, KP_F32, 1, 1, INT64_MAX);
    f.strides[0] = f.strides[1] = f.strides[2] = 0;
    kp_arg args[] = {KP_ARG_TENSOR("w_ih", kp_tensor_3d(in, KP_F32, 1, 3, 2)),
                     KP_ARG_TENSOR("w_hh", kp_tensor_3d(in, KP_F32, 1, 3, 1)),
                     KP_ARG_TENSOR("w_y", kp_tensor_2d(in, KP_F32, 1, 1)),
                     KP_ARG_TENSOR("b_y", kp_tensor_1d(in, KP_F32, 1)),
                     KP_ARG_TENSOR("f", f),
                     KP_ARG_TENSOR("y0", kp_tensor_1d(in, KP_F32, 1)),
                     KP_ARG_TENSOR("h0", kp_tensor_3d(in, KP_F32, 1, 1, 1)),
                     KP_ARG_TENSOR("h_T", kp_tensor_3d(outs[0], KP_F32, 1, 1, 1)),
                     KP_ARG_TENSOR("y", kp_tensor_3d(outs[1], KP_F32, 1, 1, 1)),
                     KP_ARG_INT("T", 1)};
    assert_int_equal(kp_kernel_launch(pocl, rollout_kernel(pocl), args, 10, NULL),
                     KP_ERR_UNSUPPORTED);
    assert_string_equal(kp_last_error(pocl),
                        "kernel gru.rollout: f: extents past 2^31 - 1 are not supported, got "
                        "f32[1, 1, 9223372036854775807] strides [0, 0, 0]");
    kp_buffer_destroy(pocl, in);
    kp_buffer_destroy(pocl, outs[0]);
    kp_buffer_destroy(pocl, outs[1]);
}

/* The value a tunable of gru.rollout resolves to on rt's device. */
static int64_t tuned(kp_runtime *rt, const char *name)
{
    kp_kernel *k = rollout_kernel(rt);
    kp_kernel_info info = {.struct_size = sizeof info};
    assert_int_equal(kp_kernel_info_get(k, &info), KP_OK);
    for (size_t i = 0; i < info.n_tunables; i++) {
        kp_tuning_info t = {.struct_size = sizeof t};
        assert_int_equal(kp_kernel_tuning(rt, k, i, &t), KP_OK);
        if (strcmp(t.name, name) == 0)
            return t.value;
    }
    fail_msg("gru.rollout has no tunable %s", name);
    return 0;
}

/* A hidden size whose local memory exceeds what the device has (read from it: PoCL reports its
 * L2 cache, 512 KiB to 1 MiB and more; Oclgrind 32 KiB), from broadcast views of small buffers
 * (row stride 0), so nothing large is allocated: KP_ERR_UNSUPPORTED, saying what to change. */
static void test_local_memory_limit(void **state)
{
    kp_device_info dev = {.struct_size = sizeof dev};
    assert_int_equal(kp_runtime_device(pocl, &dev, NULL), KP_OK);
    assert_true(dev.local_mem > 0);
    /* (2H + S + max(F, 1 + S) + 2 WG (LANES + 1)) floats + 516 bytes of the kernel's own, with
     * the WG and LANES the device resolves, just past the device's local memory. */
    const int64_t wg = tuned(pocl, "WG"), lanes = tuned(pocl, "LANES");
    const int64_t S = 0, F = 1, I = F + 1 + S, fixed = S + 1 + 2 * wg * (lanes + 1);
    const int64_t H = ((int64_t)dev.local_mem / 4 - fixed) / 2 + 1000;
    const double need_kib = (double)((2 * H + fixed) * 4 + 516) / 1024;
    kp_buffer *buf = NULL;
    assert_int_equal(kp_buffer_create(pocl, (size_t)(4 * H) * sizeof(float), &buf), KP_OK);
    kp_buffer *outs[2] = {0};
    assert_int_equal(kp_buffer_create(pocl, (size_t)H * sizeof(float), &outs[0]), KP_OK);
    assert_int_equal(kp_buffer_create(pocl, sizeof(float), &outs[1]), KP_OK);
    kp_tensor w_ih = kp_tensor_3d(buf, KP_F32, 1, 3 * H, I),
              w_hh = kp_tensor_3d(buf, KP_F32, 1, 3 * H, H);
    w_ih.strides[1] = 0;
    w_hh.strides[1] = 0;
    kp_arg args[] = {KP_ARG_TENSOR("w_ih", w_ih),
                     KP_ARG_TENSOR("w_hh", w_hh),
                     KP_ARG_TENSOR("w_y", kp_tensor_2d(buf, KP_F32, 1, H)),
                     KP_ARG_TENSOR("b_y", kp_tensor_1d(buf, KP_F32, 1)),
                     KP_ARG_TENSOR("f", kp_tensor_3d(buf, KP_F32, 1, 1, F)),
                     KP_ARG_TENSOR("y0", kp_tensor_1d(buf, KP_F32, 1)),
                     KP_ARG_TENSOR("h0", kp_tensor_3d(buf, KP_F32, 1, 1, H)),
                     KP_ARG_TENSOR("h_T", kp_tensor_3d(outs[0], KP_F32, 1, 1, H)),
                     KP_ARG_TENSOR("y", kp_tensor_3d(outs[1], KP_F32, 1, 1, 1)),
                     KP_ARG_INT("T", 1)};
    kp_status st = kp_kernel_launch(pocl, rollout_kernel(pocl), args, 10, NULL);
    assert_int_equal(st, KP_ERR_UNSUPPORTED);
    const char *msg = kp_last_error(pocl);
    char want[512];
    snprintf(want, sizeof want,
             "kernel gru.rollout: H = %lld, S = 0, F = 1 need %.1f KiB of local memory per "
             "work-group with WG = %lld, LANES = %lld, but %s has %.1f KiB; set smaller WG or "
             "LANES tunables",
             (long long)H, need_kib, (long long)wg, (long long)lanes, dev.name,
             (double)dev.local_mem / 1024);
    if (!strstr(msg, want))
        fail_msg("unexpected message: %s\nexpected: %s", msg, want);
    kp_buffer_destroy(pocl, buf);
    kp_buffer_destroy(pocl, outs[0]);
    kp_buffer_destroy(pocl, outs[1]);
}

/* gru.rollout_grid is for GPUs: on PoCL it reports KP_ERR_UNSUPPORTED naming the device, and a
 * manifest asking gru.rollout for GRID 1 runs one work-group per trajectory instead, with one
 * warning for any number of calls, which explain's path repeats. (scripts/gpu/gru.sh verifies the
 * grid kernel on the GPU.) */
static void test_grid_on_cpu(void **state)
{
    const char *manifest = test_write_tmp("grid.yaml", "kernelport: 1\n"
                                                       "tuning:\n"
                                                       "  - match: { type: cpu }\n"
                                                       "    kernels:\n"
                                                       "      gru.rollout: { GRID: 1 }\n");
    test_log log;
    kp_runtime_options o = test_options(test_build_path("lib/kernelport/plugins"), "pocl", &log);
    o.log_level = KP_LOG_INFO;
    o.manifest_path = manifest;
    kp_runtime *rt = NULL;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);

    problem p = make(3, 2, 3, 7, 5, 6, 0, KP_GRU_ROLLOUT_MEAN, 0, 21);
    float *dev[P_OUT], *ref[P_OUT];
    alloc_out(&p, dev);
    alloc_out(&p, ref);
    run_ok(host, &p, ref);
    for (int call = 0; call < 2; call++) {
        run_ok(rt, &p, dev);
        expect_close(&p, dev, ref, tolerance(&p), "GRID 1 on PoCL");
    }
    const char *warning = "GRID 1 asked for, but gru.rollout_grid does not run on CPUs";
    const char *first = strstr(log.text, warning);
    assert_non_null(first);
    assert_null(strstr(first + 1, warning));
    char path[512];
    assert_int_equal(kp_kernel_describe(rt, rollout_kernel(rt), path, sizeof path), KP_OK);
    if (!strstr(path, "gru_rollout (GRID 0, since GRID 1's gru.rollout_grid does not run on CPUs)"))
        fail_msg("unexpected path: %s", path);

    kp_kernel *grid = NULL;
    assert_int_equal(kp_kernel_find(rt, "gru.rollout_grid", &grid), KP_OK);
    assert_int_equal(kp_kernel_supported(rt, grid), KP_ERR_UNSUPPORTED);
    kp_device_info d = {.struct_size = sizeof d};
    assert_int_equal(kp_runtime_device(rt, &d, NULL), KP_OK);
    const char *msg = kp_last_error(rt);
    if (!strstr(msg, "gru.rollout_grid is for GPUs, and ") || !strstr(msg, d.name))
        fail_msg("unexpected message: %s", msg);
    /* A direct launch is refused the same way, before anything is built. */
    p.kernel = "gru.rollout_grid";
    assert_int_equal(run(rt, &p, dev), KP_ERR_UNSUPPORTED);
    msg = kp_last_error(rt);
    if (!strstr(msg, "gru.rollout_grid is for GPUs, and "))
        fail_msg("unexpected message: %s", msg);
    free_out(dev);
    free_out(ref);
    unmake(&p);
    kp_runtime_destroy(rt);
}

static int setup(void **state)
{
    pocl = open_runtime(test_device());
    host = open_runtime("host");
    return 0;
}

static int teardown(void **state)
{
    kp_runtime_destroy(pocl);
    kp_runtime_destroy(host);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verify_sizes_and_tunables),
        cmocka_unit_test(test_modes_and_variants),
        cmocka_unit_test(test_s0_and_omitted),
        cmocka_unit_test(test_typed_helper),
        cmocka_unit_test(test_strided_views),
        cmocka_unit_test(test_same_seed_same_rollout),
        cmocka_unit_test(test_sample_categories_match),
        cmocka_unit_test(test_sample_frequencies),
        cmocka_unit_test(test_rejections),
        cmocka_unit_test(test_local_memory_limit),
        cmocka_unit_test(test_grid_on_cpu),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
