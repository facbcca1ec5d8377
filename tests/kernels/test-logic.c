/* SPDX-License-Identifier: Apache-2.0 */
/* The logic plugin on PoCL: ops, forward/backward against double math, packed inference, CA. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test-logic.h"

kp_runtime *rt;

static int setup(void **state)
{
    (void)state;
    return test_runtime(test_build_path("lib/kernelport/plugins"), &rt);
}

static int teardown(void **state)
{
    kp_runtime_destroy(rt);
    return 0;
}

/* ---- device helpers -------------------------------------------------------------------------- */

kp_buffer *up(const void *data, size_t bytes)
{
    kp_buffer *b = NULL;
    assert_int_equal(kp_buffer_create(rt, bytes ? bytes : 4, &b), KP_OK);
    if (data && bytes)
        assert_int_equal(kp_buffer_write(rt, b, 0, bytes, data), KP_OK);
    return b;
}

kp_buffer *out_f32(size_t n)
{
    float *nan = malloc((n ? n : 1) * sizeof *nan);
    assert_non_null(nan);
    for (size_t i = 0; i < n; i++)
        nan[i] = NAN;
    kp_buffer *b = up(nan, n * sizeof *nan);
    free(nan);
    return b;
}

void down(kp_buffer *b, void *dst, size_t bytes)
{
    assert_int_equal(kp_buffer_read(rt, b, 0, bytes, dst), KP_OK);
}

kp_status launch(const char *name, const kp_arg *args, size_t n)
{
    kp_kernel *k = NULL;
    assert_int_equal(kp_kernel_find(rt, name, &k), KP_OK);
    kp_status st = kp_kernel_launch(rt, k, args, n, NULL);
    if (st != KP_OK)
        fprintf(stderr, "%s: %s\n", name, kp_last_error(rt));
    return st;
}

/* ---- the math in double, written from the definitions ------------------------------- */

double op_soft(int i, double a, double b)
{
    switch (i) {
    case 0:
        return 0;
    case 1:
        return a * b;
    case 2:
        return a - a * b;
    case 3:
        return a;
    case 4:
        return b - a * b;
    case 5:
        return b;
    case 6:
        return a + b - 2 * a * b;
    case 7:
        return a + b - a * b;
    case 8:
        return 1 - (a + b - a * b);
    case 9:
        return 1 - (a + b - 2 * a * b);
    case 10:
        return 1 - b;
    case 11:
        return 1 - b + a * b;
    case 12:
        return 1 - a;
    case 13:
        return 1 - a + a * b;
    case 14:
        return 1 - a * b;
    default:
        return 1;
    }
}

static void softmax(const double *w, double *p)
{
    double m = w[0], s = 0;
    for (int i = 1; i < 16; i++)
        m = fmax(m, w[i]);
    for (int i = 0; i < 16; i++)
        s += p[i] = exp(w[i] - m);
    for (int i = 0; i < 16; i++)
        p[i] /= s;
}

/* A layer in double: y [G, N] = sum_i softmax(w)_i op_i(x[a], x[b]). */
typedef struct model {
    int64_t IN, G, N;
    int32_t *a, *b;
    double *w, *x; /* [G, 16], [IN, N] */
} model;

static double model_y(const model *m, int64_t g, int64_t n)
{
    double p[16], y = 0, a = m->x[m->a[g] * m->N + n], b = m->x[m->b[g] * m->N + n];
    softmax(&m->w[16 * g], p);
    for (int i = 0; i < 16; i++)
        y += p[i] * op_soft(i, a, b);
    return y;
}

/* L = sum r[g, n] y[g, n]: the loss whose gradients dw and dx are for dy = r. */
static double model_loss(const model *m, const double *r)
{
    double L = 0;
    for (int64_t g = 0; g < m->G; g++)
        for (int64_t n = 0; n < m->N; n++)
            L += r[g * m->N + n] * model_y(m, g, n);
    return L;
}

double *rand_doubles(size_t n, unsigned seed, double lo, double hi)
{
    float *f = malloc((n ? n : 1) * sizeof *f);
    double *d = malloc((n ? n : 1) * sizeof *d);
    assert_true(f && d);
    test_fill(f, n, seed);
    for (size_t i = 0; i < n; i++) /* representable in f32: both sides see the same values */
        d[i] = (double)(float)(lo + (hi - lo) * 0.5 * (f[i] + 1.0));
    free(f);
    return d;
}

static model model_make(int64_t IN, int64_t G, int64_t N, unsigned seed, int same)
{
    model m = {.IN = IN, .G = G, .N = N};
    m.a = malloc((size_t)G * sizeof *m.a), m.b = malloc((size_t)G * sizeof *m.b);
    assert_true(m.a && m.b);
    uint64_t s = seed;
    for (int64_t g = 0; g < G; g++) {
        m.a[g] = (int32_t)kp_logic_random_below(&s, (uint64_t)IN);
        m.b[g] = same && g % 2 == 0 ? m.a[g] : (int32_t)kp_logic_random_below(&s, (uint64_t)IN);
    }
    m.w = rand_doubles((size_t)(16 * G), seed + 1, -2, 2);
    m.x = rand_doubles((size_t)(IN * N), seed + 2, 0, 1);
    return m;
}

static void model_free(model *m)
{
    free(m->a), free(m->b), free(m->w), free(m->x);
}

static float *to_f32(const double *d, size_t n)
{
    float *f = malloc((n ? n : 1) * sizeof *f);
    assert_non_null(f);
    for (size_t i = 0; i < n; i++)
        f[i] = (float)d[i];
    return f;
}

/* The layer on the device: C from the soft coefficients, y, and (dy given) dx and dw. */
typedef struct run {
    float *y, *dx, *dw, *C; /* host copies of the results */
} run;

static run device_run(const model *m, const double *dy)
{
    size_t G = (size_t)m->G, IN = (size_t)m->IN, N = (size_t)m->N;
    float *w = to_f32(m->w, 16 * G), *x = to_f32(m->x, IN * N);
    int32_t *start = malloc((IN + 1) * sizeof *start), *entries = malloc(2 * G * sizeof *entries);
    assert_int_equal(kp_logic_csr_build(m->a, m->b, m->G, m->IN, start, entries), 0);
    kp_buffer *bw = up(w, 16 * G * 4), *bx = up(x, IN * N * 4), *ba = up(m->a, G * 4);
    kp_buffer *bb = up(m->b, G * 4), *bc = out_f32(4 * G), *by = out_f32(G * N);
    kp_arg co[] = {KP_ARG_TENSOR("w", T2(bw, KP_F32, m->G, 16)),
                   KP_ARG_TENSOR("C", T2(bc, KP_F32, m->G, 4))};
    assert_int_equal(launch("logic.coeffs", co, 2), KP_OK);
    kp_arg fw[] = {KP_ARG_TENSOR("x", T2(bx, KP_F32, m->IN, m->N)),
                   KP_ARG_TENSOR("a_idx", T1(ba, KP_I32, m->G)),
                   KP_ARG_TENSOR("b_idx", T1(bb, KP_I32, m->G)),
                   KP_ARG_TENSOR("C", T2(bc, KP_F32, m->G, 4)),
                   KP_ARG_TENSOR("y", T2(by, KP_F32, m->G, m->N))};
    assert_int_equal(launch("logic.forward", fw, 5), KP_OK);
    run r = {.y = malloc(G * N * 4), .C = malloc(4 * G * 4)};
    down(by, r.y, G * N * 4);
    down(bc, r.C, 4 * G * 4);
    kp_buffer *bdy = NULL, *bs = NULL, *be = NULL, *bdx = NULL, *bdw = NULL;
    if (dy) {
        float *d = to_f32(dy, G * N);
        bdy = up(d, G * N * 4), bs = up(start, (IN + 1) * 4), be = up(entries, 2 * G * 4);
        bdx = out_f32(IN * N), bdw = out_f32(16 * G);
        kp_arg bw_args[] = {KP_ARG_TENSOR("x", T2(bx, KP_F32, m->IN, m->N)),
                            KP_ARG_TENSOR("a_idx", T1(ba, KP_I32, m->G)),
                            KP_ARG_TENSOR("b_idx", T1(bb, KP_I32, m->G)),
                            KP_ARG_TENSOR("w", T2(bw, KP_F32, m->G, 16)),
                            KP_ARG_TENSOR("C", T2(bc, KP_F32, m->G, 4)),
                            KP_ARG_TENSOR("dy", T2(bdy, KP_F32, m->G, m->N)),
                            KP_ARG_TENSOR("csr_start", T1(bs, KP_I32, m->IN + 1)),
                            KP_ARG_TENSOR("csr_entries", T1(be, KP_I32, 2 * m->G)),
                            KP_ARG_TENSOR("dx", T2(bdx, KP_F32, m->IN, m->N)),
                            KP_ARG_TENSOR("dw", T2(bdw, KP_F32, m->G, 16))};
        assert_int_equal(launch("logic.backward", bw_args, 10), KP_OK);
        r.dx = malloc(IN * N * 4), r.dw = malloc(16 * G * 4);
        down(bdx, r.dx, IN * N * 4);
        down(bdw, r.dw, 16 * G * 4);
        free(d);
    }
    kp_buffer *all[] = {bw, bx, ba, bb, bc, by, bdy, bs, be, bdx, bdw};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        kp_buffer_destroy(rt, all[i]);
    free(w), free(x), free(start), free(entries);
    return r;
}

static void run_free(run *r)
{
    free(r->y), free(r->dx), free(r->dw), free(r->C);
}

/* ---- ops ------------------------------------------------------------------------------------- */

/* Gate k has the largest logit at op k: hard coefficients and op ids, then the forward on the
 * four input pairs gives op k's truth table, and the op id is its own truth table. */
static void test_hard_truth_tables(void **state)
{
    float w[16 * 16] = {0}, x[8] = {0, 0, 1, 1, 0, 1, 0, 1}; /* rows a, b over (a, b) pairs */
    int32_t a[16], b[16], op[16];
    for (int k = 0; k < 16; k++) {
        w[16 * k + k] = 3.0f;
        w[16 * k + (k + 5) % 16] = 3.0f; /* a tie: the lower id wins */
        a[k] = 0, b[k] = 1;
    }
    for (int k = 0; k < 16; k++)
        if ((k + 5) % 16 < k)
            w[16 * k + k] = 4.0f; /* keep k the winner where the tie partner is lower */
    kp_buffer *bw = up(w, sizeof w), *bx = up(x, sizeof x), *ba = up(a, sizeof a);
    kp_buffer *bb = up(b, sizeof b), *bc = out_f32(64), *by = out_f32(64), *bo = up(NULL, 64);
    kp_arg co[] = {KP_ARG_TENSOR("w", T2(bw, KP_F32, 16, 16)),
                   KP_ARG_TENSOR("C", T2(bc, KP_F32, 16, 4)),
                   KP_ARG_TENSOR("op", T1(bo, KP_I32, 16)), KP_ARG_INT("hard", 1)};
    assert_int_equal(launch("logic.coeffs", co, 4), KP_OK);
    kp_arg fw[] = {
        KP_ARG_TENSOR("x", T2(bx, KP_F32, 2, 4)), KP_ARG_TENSOR("a_idx", T1(ba, KP_I32, 16)),
        KP_ARG_TENSOR("b_idx", T1(bb, KP_I32, 16)), KP_ARG_TENSOR("C", T2(bc, KP_F32, 16, 4)),
        KP_ARG_TENSOR("y", T2(by, KP_F32, 16, 4))};
    assert_int_equal(launch("logic.forward", fw, 5), KP_OK);
    float y[64];
    down(by, y, sizeof y);
    down(bo, op, sizeof op);
    for (int k = 0; k < 16; k++) {
        assert_int_equal(op[k], k);
        for (int j = 0; j < 4; j++) {
            int av = (int)x[j], bv = (int)x[4 + j];
            int want = k >> (3 - (2 * av + bv)) & 1; /* bit 3 at (0,0) ... bit 0 at (1,1) */
            assert_float_equal(y[4 * k + j], (float)want, 0);
            assert_int_equal(op_soft(k, av, bv), want);
            assert_int_equal(kp_logic_op_bits(k, av ? ~0ull : 0, bv ? ~0ull : 0) & 1, want);
        }
    }
    kp_buffer *all[] = {bw, bx, ba, bb, bc, by, bo};
    for (size_t i = 0; i < 7; i++)
        kp_buffer_destroy(rt, all[i]);
}

/* Each op's relaxation: a gate whose softmax is (to f32) one-hot at op k computes op_soft(k) on
 * soft inputs; random logits give the mixture. */
static void test_soft_relaxations(void **state)
{
    model m = model_make(8, 32, 37, 11, 0);
    for (int64_t g = 0; g < 16; g++)
        for (int i = 0; i < 16; i++)
            m.w[16 * g + i] = i == g ? 60.0 : 0.0; /* e^-60: one-hot in f32 */
    run r = device_run(&m, NULL);
    for (int64_t g = 0; g < m.G; g++)
        for (int64_t n = 0; n < m.N; n++) {
            double a = m.x[m.a[g] * m.N + n], b = m.x[m.b[g] * m.N + n];
            double want = g < 16 ? op_soft((int)g, a, b) : model_y(&m, g, n);
            assert_float_equal(r.y[g * m.N + n], want, 2e-6);
            if (g < 16)
                assert_float_equal(kp_logic_op_soft((int)g, a, b), want, 1e-15);
        }
    run_free(&r);
    model_free(&m);
}

/* ---- forward and backward against double math ----------------------------------------------- */

/* dL/dw and dL/dx of L = sum dy y, in double, straight from the definition. */
static void model_grads(const model *m, const double *dy, double *dw, double *dx)
{
    memset(dx, 0, (size_t)(m->IN * m->N) * sizeof *dx);
    for (int64_t g = 0; g < m->G; g++) {
        double p[16], dp[16] = {0}, dot = 0;
        softmax(&m->w[16 * g], p);
        for (int64_t n = 0; n < m->N; n++) {
            double a = m->x[m->a[g] * m->N + n], b = m->x[m->b[g] * m->N + n];
            double e = dy[g * m->N + n], h = 1e-3, da = 0, db = 0;
            for (int i = 0; i < 16; i++) {
                dp[i] += e * op_soft(i, a, b);
                /* each op is affine in a for fixed b (and the reverse): exact slopes */
                da += p[i] * (op_soft(i, a + h, b) - op_soft(i, a, b)) / h;
                db += p[i] * (op_soft(i, a, b + h) - op_soft(i, a, b)) / h;
            }
            dx[m->a[g] * m->N + n] += e * da;
            dx[m->b[g] * m->N + n] += e * db;
        }
        for (int i = 0; i < 16; i++)
            dot += p[i] * dp[i];
        for (int i = 0; i < 16; i++)
            dw[16 * g + i] = p[i] * (dp[i] - dot);
    }
}

static void check_layer(int64_t IN, int64_t G, int64_t N, unsigned seed, int same)
{
    model m = model_make(IN, G, N, seed, same);
    double *dy = rand_doubles((size_t)(G * N), seed + 7, -1, 1);
    double *dw = malloc((size_t)(16 * G) * sizeof *dw), *dx = malloc((size_t)(IN * N) * sizeof *dx);
    model_grads(&m, dy, dw, dx);
    run r = device_run(&m, dy);
    double sq = sqrt((double)N);
    for (int64_t g = 0; g < G; g++)
        for (int64_t n = 0; n < N; n++)
            assert_float_equal(r.y[g * N + n], model_y(&m, g, n), 2e-6);
    for (int64_t i = 0; i < 16 * G; i++)
        assert_float_equal(r.dw[i], dw[i], 1e-5 * (1 + sq) + 1e-5 * fabs(dw[i]));
    for (int64_t i = 0; i < IN * N; i++)
        assert_float_equal(r.dx[i], dx[i], 1e-5 * (1 + fabs(dx[i])));
    run_free(&r);
    free(dy), free(dw), free(dx);
    model_free(&m);
}

/* Sizes 1, primes, G not a multiple of any work-group, N not a multiple of 32 or of a vector. */
static void test_against_double(void **state)
{
    check_layer(1, 1, 1, 1, 0);
    check_layer(13, 29, 97, 2, 0);
    check_layer(64, 67, 33, 3, 1);
    check_layer(3, 257, 1031, 4, 0); /* several dw blocks, a long tail */
}

/* Central differences of the double loss against the device's gradients. */
static void test_finite_differences(void **state)
{
    model m = model_make(5, 7, 9, 21, 1);
    double *r = rand_doubles(7 * 9, 22, -1, 1), h = 1e-5;
    run dev = device_run(&m, r);
    for (int64_t i = 0; i < 16 * m.G; i++) {
        double keep = m.w[i];
        m.w[i] = keep + h;
        double up_ = model_loss(&m, r);
        m.w[i] = keep - h;
        double down_ = model_loss(&m, r);
        m.w[i] = keep;
        assert_float_equal(dev.dw[i], (up_ - down_) / (2 * h), 2e-5);
    }
    for (int64_t i = 0; i < m.IN * m.N; i++) {
        double keep = m.x[i];
        m.x[i] = keep + h;
        double up_ = model_loss(&m, r);
        m.x[i] = keep - h;
        double down_ = model_loss(&m, r);
        m.x[i] = keep;
        assert_float_equal(dev.dx[i], (up_ - down_) / (2 * h), 2e-5);
    }
    run_free(&dev);
    free(r);
    model_free(&m);
}

/* A gate reading one wire twice: y = C1 + (Ca + Cb) x + Cab x^2, so dx = dy (Ca + Cb + 2 Cab x),
 * not difflogic's doubled a side 2 dy (Ca + Cab x). */
static void test_same_wire(void **state)
{
    model m = model_make(1, 1, 5, 31, 1); /* one input, one gate: a_idx = b_idx = 0 */
    m.w[16 * 0 + 2] = 3.0;                /* A AND NOT B leads: Ca and Cb differ */
    double dy[5] = {1, -0.5, 0.25, 1, -1};
    run r = device_run(&m, dy);
    const float *C = r.C;
    for (int n = 0; n < 5; n++) {
        double x = m.x[n], want = dy[n] * (C[1] + C[2] + 2 * C[3] * x);
        double doubled = 2 * dy[n] * (C[1] + C[3] * x);
        assert_float_equal(r.dx[n], want, 1e-6);
        assert_true(fabs(want - doubled) > 1e-3);
    }
    run_free(&r);
    model_free(&m);
}

/* Two backward runs give the same bits, here with small dw blocks (many of them, each summed by
 * four lanes) so that both stages of the reduction have work; and the result is right. */
static void test_backward_deterministic(void **state)
{
    kp_kernel *k = NULL;
    assert_int_equal(kp_kernel_find(rt, "logic.backward", &k), KP_OK);
    assert_int_equal(kp_kernel_tunable_set(rt, k, "DW_LANES", 4), KP_OK);
    assert_int_equal(kp_kernel_tunable_set(rt, k, "DW_ITEMS", 2), KP_OK);
    model m = model_make(61, 127, 2111, 41, 1);
    double *dy = rand_doubles(127 * 2111, 42, -1, 1);
    double *dw = malloc(16 * 127 * sizeof *dw), *dx = malloc(61 * 2111 * sizeof *dx);
    assert_true(dw && dx);
    run r1 = device_run(&m, dy), r2 = device_run(&m, dy);
    assert_memory_equal(r1.dw, r2.dw, 16 * 127 * sizeof(float));
    assert_memory_equal(r1.dx, r2.dx, 61 * 2111 * sizeof(float));
    model_grads(&m, dy, dw, dx);
    for (int i = 0; i < 16 * 127; i++)
        assert_float_equal(r1.dw[i], dw[i], 1e-5 * (1 + sqrt(2111.0)) + 1e-5 * fabs(dw[i]));
    assert_int_equal(kp_kernel_tuning_reset(rt, k), KP_OK);
    run_free(&r1), run_free(&r2);
    free(dy), free(dw), free(dx);
    model_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hard_truth_tables),
        cmocka_unit_test(test_soft_relaxations),
        cmocka_unit_test(test_against_double),
        cmocka_unit_test(test_finite_differences),
        cmocka_unit_test(test_same_wire),
        cmocka_unit_test(test_backward_deterministic),
        cmocka_unit_test(test_packed_matches_unpacked),
        cmocka_unit_test(test_groupsum_matches),
        cmocka_unit_test(test_perceive_indices),
        cmocka_unit_test(test_perceive_adjoint),
        cmocka_unit_test(test_wiring_rejected),
        cmocka_unit_test(test_shapes_rejected),
        cmocka_unit_test(test_verify_all),
        cmocka_unit_test(test_verify_gpu_shapes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
