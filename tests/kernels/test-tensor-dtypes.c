/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor family's storage dtypes: casts (tensor.copy between dtypes) against the host's
 * conversions bit for bit, f16's subnormals, infinities and NaNs, i32's truncation and
 * saturation; elementwise ops on mixed dtypes; a bf16 sum with f32 accumulation; softmax and
 * cross-entropy of bf16 rows; dtype combinations refused with the argument named. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kernelport/ops/tensor.h"
#include "test-util.h"

static kp_runtime *rt;

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

static kp_buffer *upload(const void *x, size_t bytes)
{
    kp_buffer *b = NULL;
    assert_int_equal(kp_buffer_create(rt, bytes ? bytes : 1, &b), KP_OK);
    if (x && bytes)
        assert_int_equal(kp_buffer_write(rt, b, 0, bytes, x), KP_OK);
    return b;
}

static void check(kp_status st, const char *what)
{
    if (st != KP_OK)
        fail_msg("%s: %s", what, kp_last_error(rt));
}

/*
 * Casts n elements of `from` (dtype df) to dtype dt into `to`, twice: contiguous (four elements a
 * vector) and as views one element in (element by element); both results must be the same.
 */
static void cast(const void *from, kp_dtype df, kp_dtype dt, size_t n, void *to)
{
    const size_t sf = kp_dtype_size(df), st = kp_dtype_size(dt);
    kp_buffer *bx = upload(NULL, (n + 1) * sf), *by = upload(NULL, (n + 1) * st);
    assert_int_equal(kp_buffer_write(rt, bx, 0, n * sf, from), KP_OK);
    check(kp_cast(rt, kp_tensor_1d(bx, df, (int64_t)n), kp_tensor_1d(by, dt, (int64_t)n)),
          "contiguous cast");
    assert_int_equal(kp_buffer_read(rt, by, 0, n * st, to), KP_OK);
    assert_int_equal(kp_buffer_write(rt, bx, sf, n * sf, from), KP_OK);
    kp_tensor x = kp_tensor_1d(bx, df, (int64_t)n), y = kp_tensor_1d(by, dt, (int64_t)n);
    x.offset = y.offset = 1;
    check(kp_cast(rt, x, y), "offset cast");
    unsigned char *again = malloc(n * st);
    assert_non_null(again);
    assert_int_equal(kp_buffer_read(rt, by, st, n * st, again), KP_OK);
    /* The same bits, but for NaNs: which one vstore_half gives is the device's business. */
    for (size_t i = 0; i < n; i++)
        if (memcmp(again + i * st, (const unsigned char *)to + i * st, st) != 0 &&
            !(isnan(kp_dtype_load(again, dt, (int64_t)i)) &&
              isnan(kp_dtype_load(to, dt, (int64_t)i))))
            fail_msg("%s -> %s: the vector and the element-by-element paths differ at element %zu",
                     kp_dtype_name(df), kp_dtype_name(dt), i);
    free(again);
    kp_buffer_destroy(rt, bx);
    kp_buffer_destroy(rt, by);
}

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Floats that meet every rounding case of a 16-bit dtype: exact ties either way, the largest
 * finite values and past them, signed zeros, infinities, a NaN, f16's subnormals (normal floats),
 * and a spread of ordinary values. No f32 subnormal: a device may flush those. */
static size_t special_floats(float *v, size_t cap)
{
    const float fixed[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN,
                           /* bf16 ties: 1 + 2^-8 rounds down to even, 1 + 3 * 2^-8 up */
                           from_bits(0x3f808000u), from_bits(0x3f818000u), from_bits(0x3f808001u),
                           /* the largest float (bf16 rounds it to infinity), bf16's largest */
                           from_bits(0x7f7fffffu), from_bits(0x7f7f0000u),
                           /* f16: the largest finite, the tie past it (to infinity), past it */
                           65504.0f, 65519.99f, 65520.0f, 1e5f, -1e5f,
                           /* f16 subnormals: the smallest, its tie with 0 (to even: 0), just above
                            * the tie, a tie between two subnormals (3 * 2^-25: to 2^-23), the
                            * largest subnormal, the smallest normal */
                           0x1p-24f, 0x1p-25f, 0x1.000002p-25f, 0x3p-25f, 0x3ffp-24f, 0x1p-14f,
                           -0x1p-24f,
                           /* f16 ties: 1 + 2^-11 to 1, 1 + 3 * 2^-11 to 1 + 2^-9 */
                           0x1.002p0f, 0x1.006p0f};
    size_t n = sizeof fixed / sizeof fixed[0];
    memcpy(v, fixed, sizeof fixed);
    uint32_t state = 12345;
    while (n < cap) {
        state = state * 1664525u + 1013904223u;
        /* exponents 2^-30 .. 2^30, any mantissa, either sign */
        const uint32_t e = 97 + (state >> 8) % 61, m = state * 2654435761u & 0x7fffffu;
        v[n++] = from_bits(((state & 1u) << 31) | (e << 23) | m);
    }
    return n;
}

/* f32 -> bf16 and -> f16 give the host's bits (kp_bf16_from_float, kp_half_from_float: nearest
 * even), a NaN staying a NaN; and back to f32 exactly (every one of the 65536 patterns). */
static void test_cast_16bit_round_trips(void **state)
{
    enum { N = 1031 };
    float v[N];
    uint16_t got[N];
    special_floats(v, N);
    for (int bf = 0; bf < 2; bf++) {
        const kp_dtype dt = bf ? KP_BF16 : KP_F16;
        cast(v, KP_F32, dt, N, got);
        for (size_t i = 0; i < N; i++) {
            const uint16_t want = bf ? kp_bf16_from_float(v[i]) : kp_half_from_float(v[i]);
            const int nan = bf ? (got[i] & 0x7fffu) > 0x7f80u : (got[i] & 0x7fffu) > 0x7c00u;
            if (isnan(v[i]) ? !nan : got[i] != want)
                fail_msg("f32 %a (0x%08x) -> %s: 0x%04x, the host gives 0x%04x", v[i],
                         bits_of(v[i]), kp_dtype_name(dt), got[i], want);
        }
        /* Every 16-bit pattern back to f32. */
        enum { ALL = 65536 };
        uint16_t *all = malloc(ALL * sizeof *all);
        float *wide = malloc(ALL * sizeof *wide);
        assert_non_null(all);
        assert_non_null(wide);
        for (uint32_t i = 0; i < ALL; i++)
            all[i] = (uint16_t)i;
        cast(all, dt, KP_F32, ALL, wide);
        for (uint32_t i = 0; i < ALL; i++) {
            const float want = bf ? kp_bf16_to_float(all[i]) : kp_half_to_float(all[i]);
            if (isnan(want) ? !isnan(wide[i]) : bits_of(wide[i]) != bits_of(want))
                fail_msg("%s 0x%04x -> f32: %a, the host gives %a", kp_dtype_name(dt), i, wide[i],
                         want);
        }
        free(all);
        free(wide);
    }
}

/* f32 -> i32 truncates toward zero (PyTorch's .to(torch.int32)) and saturates past i32's range,
 * NaN giving 0; i32 -> f32 rounds to nearest even past 2^24; i32 -> i32 and bf16 -> bf16 keep
 * every bit. */
static void test_cast_i32(void **state)
{
    const float f[] = {2.7f,           -2.7f,          -0.5f,         0.99f,
                       -0.0f,          16777217.0f,    2147483520.0f, 2147483648.0f,
                       -2147483648.0f, -2147483904.0f, 3e9f,          -3e9f,
                       1e20f,          INFINITY,       -INFINITY,     NAN};
    const int32_t want[] = {2,          -2,        0,         0,         0,         16777216,
                            2147483520, INT32_MAX, INT32_MIN, INT32_MIN, INT32_MAX, INT32_MIN,
                            INT32_MAX,  INT32_MAX, INT32_MIN, 0};
    enum { NF = sizeof f / sizeof f[0] };
    int32_t got[NF];
    cast(f, KP_F32, KP_I32, NF, got);
    for (int i = 0; i < NF; i++)
        if (got[i] != want[i])
            fail_msg("f32 %a -> i32: %d, want %d", f[i], got[i], want[i]);
    /* To nearest even: 2^24 + 1 is a tie (down to 2^24), 2^24 + 3 too (up to 2^24 + 4). */
    const int32_t n[] = {16777217, 16777219, -16777219, INT32_MAX, INT32_MIN, 7, -7, 0};
    const float nf[] = {16777216.0f,    16777220.0f, -16777220.0f, 2147483648.0f,
                        -2147483648.0f, 7.0f,        -7.0f,        0.0f};
    enum { NN = sizeof n / sizeof n[0] };
    float wide[NN];
    cast(n, KP_I32, KP_F32, NN, wide);
    for (int i = 0; i < NN; i++)
        if (wide[i] != nf[i])
            fail_msg("i32 %d -> f32: %a, want %a", n[i], wide[i], nf[i]);
    int32_t same[NN];
    cast(n, KP_I32, KP_I32, NN, same);
    assert_memory_equal(same, n, sizeof n);
    /* A signalling NaN and one with a payload, copied as bf16, keep their bits. */
    const uint16_t b[] = {0x7f81u, 0xffc5u, 0x0001u, 0x8000u, 0x3f80u};
    uint16_t bsame[5];
    cast(b, KP_BF16, KP_BF16, 5, bsame);
    assert_memory_equal(bsame, b, sizeof b);
}

/* y = a op b with a f16 [R, C], b bf16 [C] (broadcast) and y f32, then y bf16: the f32 results
 * are the host's (every sum and product of these values is exact in float), the bf16 ones those
 * rounded to nearest even. */
static void test_mixed_elementwise(void **state)
{
    enum { R = 7, C = 13 };
    uint16_t a[R * C], b[C], yb[R * C];
    float y[R * C];
    for (int i = 0; i < R * C; i++)
        a[i] = kp_half_from_float((float)(i % 11 - 5) * 0.3f);
    for (int j = 0; j < C; j++)
        b[j] = kp_bf16_from_float((float)(j - 6) * 0.7f);
    kp_buffer *ba = upload(a, sizeof a), *bb = upload(b, sizeof b);
    kp_buffer *by = upload(NULL, sizeof y), *byb = upload(NULL, sizeof yb);
    const kp_tensor ta = kp_tensor_2d(ba, KP_F16, R, C), tb = kp_tensor_1d(bb, KP_BF16, C);
    for (int op = 0; op < 2; op++) {
        const char *name = op ? "mul" : "add";
        check(kp_tensor_binary(rt, name, ta, tb, kp_tensor_2d(by, KP_F32, R, C)), name);
        check(kp_tensor_binary(rt, name, ta, tb, kp_tensor_2d(byb, KP_BF16, R, C)), name);
        assert_int_equal(kp_buffer_read(rt, by, 0, sizeof y, y), KP_OK);
        assert_int_equal(kp_buffer_read(rt, byb, 0, sizeof yb, yb), KP_OK);
        for (int i = 0; i < R * C; i++) {
            const double x0 = kp_half_to_float(a[i]), x1 = kp_bf16_to_float(b[i % C]);
            const float want = (float)(op ? x0 * x1 : x0 + x1);
            if (bits_of(y[i]) != bits_of(want) || yb[i] != kp_bf16_from_float(want))
                fail_msg("%s at %d: f32 %a and bf16 0x%04x, want %a and 0x%04x", name, i, y[i],
                         yb[i], want, kp_bf16_from_float(want));
        }
    }
    kp_buffer *bufs[] = {ba, bb, by, byb};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        kp_buffer_destroy(rt, bufs[i]);
}

/* A sum of bf16 rows accumulates in f32 (PyTorch's rule): into f32 it is within the float
 * rounding of the exact sum, and into bf16 it is that f32 result rounded to nearest even, never
 * a sum of bf16 partials. */
static void test_sum_bf16(void **state)
{
    enum { R = 5, C = 1000 };
    uint16_t *x = malloc(R * C * sizeof *x), yb[R];
    float y[R];
    assert_non_null(x);
    double exact[R] = {0};
    for (int i = 0; i < R * C; i++) {
        /* 1 + a little: a bf16 running sum would stall at 256 (its spacing passes 1 there). */
        x[i] = kp_bf16_from_float(1.0f + (float)(i % 7) / 128.0f);
        exact[i / C] += kp_bf16_to_float(x[i]);
    }
    kp_buffer *bx = upload(x, R * C * sizeof *x), *by = upload(NULL, sizeof y);
    kp_buffer *byb = upload(NULL, sizeof yb);
    const kp_tensor tx = kp_tensor_2d(bx, KP_BF16, R, C);
    check(kp_sum(rt, tx, kp_tensor_1d(by, KP_F32, R), KP_AXIS(1)), "sum into f32");
    check(kp_sum(rt, tx, kp_tensor_1d(byb, KP_BF16, R), KP_AXIS(1)), "sum into bf16");
    assert_int_equal(kp_buffer_read(rt, by, 0, sizeof y, y), KP_OK);
    assert_int_equal(kp_buffer_read(rt, byb, 0, sizeof yb, yb), KP_OK);
    for (int r = 0; r < R; r++) {
        if (fabs(y[r] - exact[r]) > 1e-5 * exact[r])
            fail_msg("row %d: f32 sum %.9g, exact %.9g", r, y[r], exact[r]);
        if (yb[r] != kp_bf16_from_float(y[r]))
            fail_msg("row %d: bf16 sum 0x%04x, the f32 sum %.9g rounds to 0x%04x", r, yb[r], y[r],
                     kp_bf16_from_float(y[r]));
    }
    kp_buffer_destroy(rt, bx);
    kp_buffer_destroy(rt, by);
    kp_buffer_destroy(rt, byb);
    free(x);
}

/* Whether bf16 `got` is the f32 value `want` (from double) rounded to nearest even, or its
 * neighbour: the device rounds its f32 result once, the host its double one. */
static int bf16_near(uint16_t got, double want)
{
    const int32_t w = kp_bf16_from_float((float)want);
    return abs((int32_t)got - w) <= 1 && ((got ^ (uint32_t)w) & 0x8000u) == 0;
}

/* Softmax of bf16 rows into bf16 (f32 inside): within a unit in the last place of the host's
 * softmax of the same bf16 values, in double. Rows of 100: whole vectors and a partial block. */
static void test_softmax_bf16(void **state)
{
    enum { R = 6, C = 100 };
    uint16_t x[R * C], y[R * C];
    for (int i = 0; i < R * C; i++)
        x[i] = kp_bf16_from_float((float)((i * 37) % 101 - 50) * 0.09f);
    kp_buffer *bx = upload(x, sizeof x), *by = upload(NULL, sizeof y);
    check(kp_softmax(rt, kp_tensor_2d(bx, KP_BF16, R, C), kp_tensor_2d(by, KP_BF16, R, C)),
          "softmax of bf16");
    assert_int_equal(kp_buffer_read(rt, by, 0, sizeof y, y), KP_OK);
    for (int r = 0; r < R; r++) {
        double m = -INFINITY, s = 0;
        for (int c = 0; c < C; c++)
            m = fmax(m, kp_bf16_to_float(x[r * C + c]));
        for (int c = 0; c < C; c++)
            s += exp(kp_bf16_to_float(x[r * C + c]) - m);
        for (int c = 0; c < C; c++) {
            const double want = exp(kp_bf16_to_float(x[r * C + c]) - m) / s;
            if (!bf16_near(y[r * C + c], want))
                fail_msg("softmax row %d column %d: bf16 0x%04x (%g), want %g", r, c, y[r * C + c],
                         kp_bf16_to_float(y[r * C + c]), want);
        }
    }
    kp_buffer_destroy(rt, bx);
    kp_buffer_destroy(rt, by);
}

/* Cross-entropy of bf16 logits against i32 labels (one row ignored): the f32 mean loss within
 * float rounding of the host's in double, the bf16 dlogits within a unit in the last place. */
static void test_cross_entropy_bf16(void **state)
{
    enum { R = 9, C = 37 };
    uint16_t x[R * C], d[R * C];
    int32_t labels[R];
    for (int i = 0; i < R * C; i++)
        x[i] = kp_bf16_from_float((float)((i * 53) % 97 - 48) * 0.07f);
    for (int r = 0; r < R; r++)
        labels[r] = r == 4 ? -100 : (r * 11) % C;
    kp_buffer *bx = upload(x, sizeof x), *bl = upload(labels, sizeof labels);
    kp_buffer *bd = upload(NULL, sizeof d), *bloss = upload(NULL, sizeof(float));
    const kp_tensor td = kp_tensor_2d(bd, KP_BF16, R, C);
    check(kp_cross_entropy(rt, kp_tensor_2d(bx, KP_BF16, R, C), kp_tensor_1d(bl, KP_I32, R),
                           kp_tensor_nd(bloss, KP_F32, 0, NULL), &td, NULL, -100, 0.0),
          "cross_entropy of bf16 logits");
    float loss;
    assert_int_equal(kp_buffer_read(rt, bloss, 0, sizeof loss, &loss), KP_OK);
    assert_int_equal(kp_buffer_read(rt, bd, 0, sizeof d, d), KP_OK);
    double total = 0, p[C];
    for (int r = 0; r < R; r++) {
        double m = -INFINITY, s = 0;
        for (int c = 0; c < C; c++)
            m = fmax(m, kp_bf16_to_float(x[r * C + c]));
        for (int c = 0; c < C; c++)
            s += p[c] = exp(kp_bf16_to_float(x[r * C + c]) - m);
        if (labels[r] >= 0)
            total += m + log(s) - kp_bf16_to_float(x[r * C + labels[r]]);
        for (int c = 0; c < C; c++) {
            const double want = labels[r] < 0 ? 0 : (p[c] / s - (c == labels[r])) / (double)(R - 1);
            if (!bf16_near(d[r * C + c], want))
                fail_msg("dlogits row %d column %d: bf16 0x%04x (%g), want %g", r, c, d[r * C + c],
                         kp_bf16_to_float(d[r * C + c]), want);
        }
    }
    const double want = total / (R - 1);
    if (fabs(loss - want) > 1e-5 * want)
        fail_msg("loss %.9g, want %.9g", loss, want);
    kp_buffer *bufs[] = {bx, bl, bd, bloss};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        kp_buffer_destroy(rt, bufs[i]);
}

static void expect_error(kp_status st, const char *part1, const char *part2)
{
    assert_int_equal(st, KP_ERR_INVALID_ARG);
    const char *msg = kp_last_error(rt);
    if (!strstr(msg, part1) || (part2 && !strstr(msg, part2)))
        fail_msg("message \"%s\" lacks \"%s\"%s%s", msg, part1, part2 ? " or " : "",
                 part2 ? part2 : "");
}

/* Combinations the family does not compute are refused naming the argument and the dtype; the
 * runtime goes on. */
static void test_bad_dtypes(void **state)
{
    kp_buffer *b = upload(NULL, 256), *o = upload(NULL, 256);
    /* Arithmetic on i32 would go through f32 and round past 2^24. */
    expect_error(kp_add(rt, kp_tensor_1d(b, KP_F16, 4), kp_tensor_1d(b, KP_I32, 4),
                        kp_tensor_1d(o, KP_F32, 4)),
                 "\"b\"", "dtype i32 is not accepted");
    expect_error(kp_exp(rt, kp_tensor_1d(b, KP_BF16, 4), kp_tensor_1d(o, KP_I32, 4)), "\"y\"",
                 "dtype i32 is not accepted");
    /* A reduction gives x's dtype or f32. */
    expect_error(kp_sum(rt, kp_tensor_2d(b, KP_BF16, 4, 8), kp_tensor_1d(o, KP_F16, 4), KP_AXIS(1)),
                 "y: dtype f16, but a sum of bf16 x is bf16 or f32", NULL);
    expect_error(
        kp_var(rt, kp_tensor_2d(b, KP_BF16, 4, 8), kp_tensor_1d(o, KP_F16, 4), KP_AXIS(1), 1.0),
        "y: dtype f16, but the var of bf16 x is bf16 or f32", NULL);
    expect_error(kp_tensor_reduce(rt, "argmax", kp_tensor_2d(b, KP_BF16, 4, 8),
                                  kp_tensor_1d(o, KP_BF16, 4), KP_AXIS(1)),
                 "\"y\"", "dtype bf16 is not accepted");
    /* No u8 or u32 tensors in the family. */
    expect_error(kp_cast(rt, kp_tensor_1d(b, KP_F32, 4), kp_tensor_1d(o, KP_U8, 4)), "\"y\"",
                 "dtype u8 is not accepted");
    /* In place only as the same view: an f32 y over an f16 x's bytes would overwrite elements
     * not yet read. */
    expect_error(kp_exp(rt, kp_tensor_1d(b, KP_F16, 8), kp_tensor_1d(b, KP_F32, 8)), "\"y\"",
                 "overlaps argument \"x\"");
    /* The row kernels store f32, f16 and bf16; a loss has its input's dtype or f32. */
    expect_error(kp_softmax(rt, kp_tensor_2d(b, KP_I32, 4, 8), kp_tensor_2d(o, KP_BF16, 4, 8)),
                 "\"x\"", "dtype i32 is not accepted");
    expect_error(kp_cross_entropy(rt, kp_tensor_2d(b, KP_BF16, 4, 8), kp_tensor_1d(b, KP_I32, 4),
                                  kp_tensor_nd(o, KP_F16, 0, NULL), NULL, NULL, -100, 0.0),
                 "loss: dtype f16, but the loss of bf16 logits is bf16 or f32", NULL);
    expect_error(kp_mse(rt, kp_tensor_1d(b, KP_F32, 4), kp_tensor_1d(b, KP_BF16, 4),
                        kp_tensor_nd(o, KP_BF16, 0, NULL), NULL),
                 "loss: dtype bf16, but the loss of f32 a is f32", NULL);
    const float one = 1.0f;
    float got = 0;
    assert_int_equal(kp_buffer_write(rt, b, 0, sizeof one, &one), KP_OK);
    check(kp_cast(rt, kp_tensor_1d(b, KP_F32, 1), kp_tensor_1d(o, KP_F32, 1)), "copy after errors");
    assert_int_equal(kp_buffer_read(rt, o, 0, sizeof got, &got), KP_OK);
    assert_true(got == 1.0f);
    kp_buffer_destroy(rt, b);
    kp_buffer_destroy(rt, o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cast_16bit_round_trips),
        cmocka_unit_test(test_cast_i32),
        cmocka_unit_test(test_mixed_elementwise),
        cmocka_unit_test(test_sum_bf16),
        cmocka_unit_test(test_softmax_bf16),
        cmocka_unit_test(test_cross_entropy_bf16),
        cmocka_unit_test(test_bad_dtypes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
