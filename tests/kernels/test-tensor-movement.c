/* SPDX-License-Identifier: Apache-2.0 */
/* Negative strides (flipped views) through the core's checks and the tensor kernels, and the
 * movement calls of kernelport/ops/tensor.h built on tensor.copy and tensor.fill: flip, pad,
 * concatenation and their backward, against host loops. */
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

enum { CAP = 4096 };

static kp_buffer *upload(const float *x, size_t n)
{
    kp_buffer *b = NULL;
    assert_int_equal(kp_buffer_create(rt, (n ? n : 1) * sizeof(float), &b), KP_OK);
    if (x && n)
        assert_int_equal(kp_buffer_write(rt, b, 0, n * sizeof(float), x), KP_OK);
    return b;
}

static void download(kp_buffer *b, float *x, size_t n)
{
    assert_int_equal(kp_buffer_read(rt, b, 0, n * sizeof(float), x), KP_OK);
}

static void expect_error(kp_status st, kp_status want, const char *part1, const char *part2)
{
    if (st != want)
        fail_msg("status %s, expected %s (\"%s\")", kp_status_name(st), kp_status_name(want),
                 part1);
    const char *msg = kp_last_error(rt);
    if (!strstr(msg, part1) || (part2 && !strstr(msg, part2)))
        fail_msg("message \"%s\" lacks \"%s\"%s%s", msg, part1, part2 ? " or " : "",
                 part2 ? part2 : "");
}

/* Element index of t at row-major coordinates c. */
static int64_t at(const kp_tensor *t, const int64_t *c)
{
    int64_t off = t->offset;
    for (int32_t d = 0; d < t->rank; d++)
        off += c[d] * t->strides[d];
    return off;
}

/* Row-major coordinates of element i of shape [rank]. */
static void coords(const kp_tensor *t, int64_t i, int64_t *c)
{
    for (int32_t d = t->rank - 1; d >= 0; d--) {
        c[d] = i % t->shape[d];
        i /= t->shape[d];
    }
}

static kp_tensor view(kp_buffer *b, int32_t rank, const int64_t *shape)
{
    return kp_tensor_nd(b, KP_F32, rank, shape);
}

static void expect_same(const float *got, const float *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof got[i]) != 0)
            fail_msg("element %zu: %g, expected %g", i, (double)got[i], (double)want[i]);
}

/* ---- the view helpers ---- */

/* Flip and narrow move the offset and never wrap: a move past int64 gives offset INT64_MAX
 * (launches reject it). */
static void test_view_helpers(void **state)
{
    kp_tensor t = kp_tensor_2d(NULL, KP_F32, 3, 4);
    kp_tensor f = kp_tensor_flip(t, 0);
    assert_true(f.offset == 8 && f.strides[0] == -4 && f.strides[1] == 1);
    f = kp_tensor_flip(kp_tensor_flip(f, 1), 1);
    assert_true(f.offset == 8 && f.strides[1] == 1);
    f = kp_tensor_flip(f, 0);
    assert_memory_equal(&f, &t, sizeof t);
    kp_tensor n = kp_tensor_narrow(kp_tensor_flip(t, 0), 0, 1, 2);
    assert_true(n.offset == 4 && n.shape[0] == 2 && n.strides[0] == -4);
    n = kp_tensor_narrow(t, 1, 4, 0);
    assert_true(n.offset == 0 && n.shape[1] == 0);
    n = kp_tensor_narrow(t, 1, 2, 3);
    assert_true(n.offset == INT64_MAX && n.shape[1] == 0);
    kp_tensor big = t;
    big.strides[0] = INT64_MAX / 2 + 1;
    assert_true(kp_tensor_flip(big, 0).offset == INT64_MAX);
    assert_true(kp_tensor_narrow(big, 0, 2, 1).offset == INT64_MAX);
    big.strides[0] = INT64_MIN;
    assert_true(kp_tensor_flip(big, 0).offset == INT64_MAX);
    assert_true(kp_tensor_step_overflows(INT64_MAX - 3, 1, 3) == 0);
    assert_true(kp_tensor_step_overflows(INT64_MAX - 3, 1, 4) == 1);
    assert_true(kp_tensor_step_overflows(0, 3, -(INT64_MAX / 3)) == 0);
    assert_true(kp_tensor_step_overflows(0, 4, -(INT64_MAX / 3)) == 1);
}

/* ---- negative strides through the launch checks ---- */

/* A flipped input, a flipped output and a flipped in-place operand give the host's values; the
 * elementwise space coalesces a fully flipped pair into one dimension of stride -1. */
static void test_flipped_views_compute(void **state)
{
    enum { R = 7, C = 11 };
    float x[R * C], b[R * C], got[R * C], want[R * C];
    test_fill(x, R * C, 3);
    test_fill(b, R * C, 4);
    kp_buffer *bx = upload(x, R * C), *bb = upload(b, R * C), *by = upload(NULL, R * C);
    const int64_t shape[2] = {R, C};
    /* y[i, j] = x[R-1-i, C-1-j] + b[R-1-i, j], y written reversed along its rows. */
    kp_tensor fx = kp_tensor_flip(kp_tensor_flip(view(bx, 2, shape), 0), 1);
    kp_tensor fb = kp_tensor_flip(view(bb, 2, shape), 0);
    kp_tensor fy = kp_tensor_flip(view(by, 2, shape), 1);
    assert_int_equal(kp_add(rt, fx, fb, fy), KP_OK);
    download(by, got, R * C);
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++)
            want[i * C + (C - 1 - j)] = x[(R - 1 - i) * C + C - 1 - j] + b[(R - 1 - i) * C + j];
    expect_same(got, want, R * C);
    /* In place through one flipped view: y is x's very view. */
    kp_tensor all = kp_tensor_flip(kp_tensor_flip(view(bx, 2, shape), 0), 1);
    assert_int_equal(kp_tensor_unary(rt, "neg", all, all), KP_OK);
    download(bx, got, R * C);
    for (int i = 0; i < R * C; i++)
        want[i] = -x[i];
    expect_same(got, want, R * C);
    /* A sum over the reversed last axis: the same terms, in the order of the view. */
    kp_buffer *bs = upload(NULL, R);
    assert_int_equal(kp_sum(rt, kp_tensor_flip(view(bb, 2, shape), 1),
                            kp_tensor_flip(kp_tensor_1d(bs, KP_F32, R), 0), KP_AXIS(1)),
                     KP_OK);
    download(bs, got, R);
    for (int i = 0; i < R; i++) {
        double s = 0;
        for (int j = 0; j < C; j++)
            s += b[i * C + C - 1 - j];
        assert_true(fabs(got[R - 1 - i] - s) <= 1e-5);
    }
    kp_buffer_destroy(rt, bx);
    kp_buffer_destroy(rt, bb);
    kp_buffer_destroy(rt, by);
    kp_buffer_destroy(rt, bs);
}

/* Reversed operands whose blocks of four fall on 16 bytes (offset 3 mod 4) go as reversed
 * float4 accesses (VEC4), a tail of 47 % 4 elements one by one: y[46 - i] = x[47 - i] + b[i],
 * y and x reversed, b forward. */
static void test_reversed_vectors(void **state)
{
    enum { N = 47 };
    float x[N + 1], b[N], y[N + 5], want[N + 5];
    test_fill(x, N + 1, 12);
    test_fill(b, N, 13);
    test_fill(want, N + 5, 14);
    kp_buffer *bx = upload(x, N + 1), *bb = upload(b, N), *by = upload(want, N + 5);
    kp_tensor tx = kp_tensor_1d(bx, KP_F32, N), ty = kp_tensor_1d(by, KP_F32, N);
    tx.strides[0] = ty.strides[0] = -1;
    tx.offset = N;
    ty.offset = N + 4;
    assert_int_equal(kp_add(rt, tx, kp_tensor_1d(bb, KP_F32, N), ty), KP_OK);
    for (int i = 0; i < N; i++)
        want[N + 4 - i] = x[N - i] + b[i];
    download(by, y, N + 5);
    expect_same(y, want, N + 5);
    kp_buffer_destroy(rt, bx);
    kp_buffer_destroy(rt, bb);
    kp_buffer_destroy(rt, by);
}

/* A flagged parameter's view is bounded by its lowest and highest elements: one reaching before
 * element 0 is refused, so is one past the end, and steps past int64 are caught, not wrapped. */
static void test_negative_stride_ranges(void **state)
{
    kp_buffer *b = upload(NULL, 16), *o = upload(NULL, 16);
    kp_tensor x = kp_tensor_1d(b, KP_F32, 5), y = kp_tensor_1d(o, KP_F32, 5);
    x.strides[0] = -1;
    x.offset = 3;
    expect_error(kp_flip(rt, x, y, 0), KP_ERR_INVALID_ARG,
                 "kernel tensor.copy: argument \"x\": f32[5] strides [-1] offset 3 reaches "
                 "element -1, before its buffer's start",
                 NULL);
    x.offset = 16;
    expect_error(kp_flip(rt, x, y, 0), KP_ERR_INVALID_ARG,
                 "argument \"x\": f32[5] strides [-1] offset 16 needs 68 bytes but its buffer has "
                 "64",
                 NULL);
    /* (4 - 1) * (INT64_MIN / 2) passes int64; 2 * -(2^62) is INT64_MIN itself, far below 0. */
    x.offset = 4;
    x.shape[0] = 4;
    x.strides[0] = INT64_MIN / 2;
    y.shape[0] = 4;
    expect_error(kp_flip(rt, x, y, 0), KP_ERR_INVALID_ARG, "needs -1 bytes but its buffer has 64",
                 NULL);
    x.shape[0] = 3;
    x.strides[0] = -((int64_t)1 << 62);
    y.shape[0] = 3;
    expect_error(kp_flip(rt, x, y, 0), KP_ERR_INVALID_ARG, "reaches element -9223372036854775804",
                 NULL);
    /* The whole buffer reversed is fine; so is an empty flipped view. */
    float h[16], got[16];
    test_fill(h, 16, 5);
    kp_buffer *full = upload(h, 16);
    assert_int_equal(kp_flip(rt, kp_tensor_1d(full, KP_F32, 16), kp_tensor_1d(o, KP_F32, 16), 1),
                     KP_OK);
    download(o, got, 16);
    for (int i = 0; i < 16; i++)
        assert_true(got[i] == h[15 - i]);
    kp_tensor empty = kp_tensor_1d(full, KP_F32, 0);
    empty.strides[0] = -1;
    kp_kernel *copy = NULL;
    assert_int_equal(kp_kernel_find(rt, "tensor.copy", &copy), KP_OK);
    const kp_arg args[2] = {kp_arg_tensor("x", empty),
                            kp_arg_tensor("y", kp_tensor_1d(o, KP_F32, 0))};
    assert_int_equal(kp_kernel_launch(rt, copy, args, 2, NULL), KP_OK);
    /* An empty output's other strides go unchecked, INT64_MIN too, which has no absolute value:
     * the overlap check must not take one (UBSan stops there). */
    kp_tensor wide = kp_tensor_2d(o, KP_F32, 2, 0);
    wide.strides[0] = INT64_MIN;
    const kp_arg args2[2] = {kp_arg_tensor("x", kp_tensor_2d(full, KP_F32, 2, 0)),
                             kp_arg_tensor("y", wide)};
    assert_int_equal(kp_kernel_launch(rt, copy, args2, 2, NULL), KP_OK);
    kp_buffer_destroy(rt, b);
    kp_buffer_destroy(rt, o);
    kp_buffer_destroy(rt, full);
}

/* An output's elements overlap by its absolute strides; an output overlapping an input in its
 * range is refused whichever way either runs. */
static void test_negative_stride_overlaps(void **state)
{
    float h[16];
    test_fill(h, 16, 6);
    kp_buffer *b = upload(h, 16), *o = upload(NULL, 16);
    kp_tensor rows = kp_tensor_2d(o, KP_F32, 4, 4);
    rows.strides[0] = -3;
    rows.offset = 9;
    expect_error(kp_flip(rt, kp_tensor_2d(b, KP_F32, 4, 4), rows, 0), KP_ERR_INVALID_ARG,
                 "argument \"y\": f32[4, 4] strides [-3, 1] offset 9: the output's elements would "
                 "overlap",
                 NULL);
    kp_tensor cols = kp_tensor_flip(kp_tensor_transpose(kp_tensor_2d(o, KP_F32, 4, 4), 0, 1), 1);
    assert_int_equal(kp_flip(rt, kp_tensor_2d(b, KP_F32, 4, 4), cols, 0), KP_OK);
    /* y: b's elements reversed, in b itself (not the same view, so not in place). */
    expect_error(kp_flip(rt, kp_tensor_1d(b, KP_F32, 16), kp_tensor_1d(b, KP_F32, 16), 1),
                 KP_ERR_INVALID_ARG, "output overlaps argument \"x\"", NULL);
    kp_tensor tail = kp_tensor_flip(kp_tensor_1d(b, KP_F32, 8), 0);
    tail.offset = 15;
    assert_int_equal(kp_flip(rt, kp_tensor_1d(b, KP_F32, 8), tail, 0), KP_OK);
    float got[16];
    download(b, got, 16);
    for (int i = 0; i < 8; i++)
        assert_true(got[15 - i] == h[i] && got[i] == h[i]);
    kp_buffer_destroy(rt, b);
    kp_buffer_destroy(rt, o);
}

/* ---- flip, pad, concatenation ---- */

/* x [2, 3, 5] (and [1], [7]) reversed along dims against the host; flipping twice is the
 * identity, which makes flip its own backward. */
static void test_flip(void **state)
{
    const int64_t shape[3] = {2, 3, 5};
    const int64_t masks[] = {0, 1, 4, 5, 6, KP_ALL_AXES};
    float x[30], got[30], back[30], want[30];
    test_fill(x, 30, 7);
    kp_buffer *bx = upload(x, 30), *by = upload(NULL, 30), *bz = upload(NULL, 30);
    kp_tensor tx = view(bx, 3, shape), ty = view(by, 3, shape), tz = view(bz, 3, shape);
    for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++) {
        assert_int_equal(kp_flip(rt, tx, ty, masks[m]), KP_OK);
        assert_int_equal(kp_flip(rt, ty, tz, masks[m]), KP_OK);
        download(by, got, 30);
        download(bz, back, 30);
        for (int64_t i = 0; i < 30; i++) {
            int64_t c[3];
            coords(&tx, i, c);
            for (int d = 0; d < 3; d++)
                if ((masks[m] >> d) & 1)
                    c[d] = shape[d] - 1 - c[d];
            want[i] = x[at(&tx, c)];
        }
        expect_same(got, want, 30);
        expect_same(back, x, 30);
    }
    for (int64_t n = 1; n <= 7; n += 6) {
        assert_int_equal(kp_flip(rt, kp_tensor_1d(bx, KP_F32, n), kp_tensor_1d(by, KP_F32, n), 1),
                         KP_OK);
        download(by, got, (size_t)n);
        for (int64_t i = 0; i < n; i++)
            assert_true(got[i] == x[n - 1 - i]);
    }
    expect_error(kp_flip(rt, tx, kp_tensor_3d(by, KP_F32, 2, 5, 3), 1), KP_ERR_INVALID_ARG,
                 "kp_flip: x [2, 3, 5] and y [2, 5, 3] differ at dimension 1", NULL);
    expect_error(kp_flip(rt, tx, ty, 8), KP_ERR_INVALID_ARG,
                 "kp_flip: dims 0x8 names a dimension past x [2, 3, 5]", NULL);
    kp_buffer_destroy(rt, bx);
    kp_buffer_destroy(rt, by);
    kp_buffer_destroy(rt, bz);
}

/* y [rank] = x padded: the host's loop over y's coordinates. */
static void pad_host(const kp_tensor *x, const float *hx, const kp_tensor *y, float *hy,
                     const int64_t *before, float value)
{
    for (int64_t i = 0; i < kp_tensor_numel(y); i++) {
        int64_t c[KP_MAX_RANK];
        coords(y, i, c);
        int inside = 1;
        for (int32_t d = 0; d < y->rank; d++) {
            c[d] -= before[d];
            inside &= c[d] >= 0 && c[d] < x->shape[d];
        }
        int64_t yc[KP_MAX_RANK];
        coords(y, i, yc);
        hy[at(y, yc)] = inside ? hx[at(x, c)] : value;
    }
}

/* Pads on several axes (none on some; the last padded after only), a y reversed along one axis,
 * one element and a rank-0 pad; the backward takes the slice back; <pad(x), dy> = <x,
 * pad_backward(dy)> in double (a linear map and its adjoint: the finite-difference check of a
 * linear op). */
static void test_pad(void **state)
{
    static const struct {
        int32_t rank;
        int64_t x[3], y[3], before[3];
        unsigned flip_y;
    } cases[] = {
        {3, {3, 5, 2}, {6, 5, 7}, {1, 0, 2}, 0},
        {3, {3, 5, 2}, {6, 5, 7}, {1, 0, 2}, 2},
        {2, {13, 7}, {17, 8}, {2, 0}, 1},
        {1, {1}, {3}, {1}, 0},
        {0, {0}, {0}, {0}, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        float hx[CAP], hd[CAP], got[CAP], want[CAP], back[CAP];
        kp_buffer *bx = upload(NULL, CAP), *by = upload(NULL, CAP), *bd = upload(NULL, CAP);
        kp_tensor x = view(bx, cases[k].rank, cases[k].x), y = view(by, cases[k].rank, cases[k].y);
        for (int32_t d = 0; d < cases[k].rank; d++)
            if ((cases[k].flip_y >> d) & 1)
                y = kp_tensor_flip(y, d);
        const int64_t nx = kp_tensor_numel(&x), ny = kp_tensor_numel(&y);
        test_fill(hx, (size_t)nx, 11 + (unsigned)k);
        test_fill(want, (size_t)ny, 99); /* y's old contents: all must be overwritten */
        assert_int_equal(kp_buffer_write(rt, bx, 0, (size_t)nx * 4, hx), KP_OK);
        assert_int_equal(kp_buffer_write(rt, by, 0, (size_t)ny * 4, want), KP_OK);
        assert_int_equal(kp_pad(rt, x, y, cases[k].before, 2.5), KP_OK);
        pad_host(&x, hx, &y, want, cases[k].before, 2.5f);
        download(by, got, (size_t)ny);
        expect_same(got, want, (size_t)ny);
        /* Backward: dx = dy's slice; the adjoint identity with padding 0. */
        test_fill(hd, (size_t)ny, 23 + (unsigned)k);
        kp_buffer *bdy = upload(hd, (size_t)ny);
        kp_tensor dy = view(bdy, cases[k].rank, cases[k].y);
        assert_int_equal(
            kp_pad_backward(rt, dy, view(bd, cases[k].rank, cases[k].x), cases[k].before), KP_OK);
        download(bd, back, (size_t)nx);
        assert_int_equal(kp_pad(rt, x, view(by, cases[k].rank, cases[k].y), cases[k].before, 0),
                         KP_OK);
        download(by, got, (size_t)ny);
        double lhs = 0, rhs = 0;
        for (int64_t i = 0; i < ny; i++)
            lhs += (double)got[i] * hd[i];
        for (int64_t i = 0; i < nx; i++)
            rhs += (double)hx[i] * back[i];
        assert_true(fabs(lhs - rhs) <= 1e-9 * (1 + fabs(lhs)));
        kp_buffer_destroy(rt, bx);
        kp_buffer_destroy(rt, by);
        kp_buffer_destroy(rt, bd);
        kp_buffer_destroy(rt, bdy);
    }
}

static void test_pad_bad_inputs(void **state)
{
    float h[64];
    test_fill(h, 64, 8);
    kp_buffer *b = upload(h, 64), *o = upload(h, 64);
    const int64_t before[2] = {1, 1}, negative[2] = {0, -1};
    expect_error(kp_pad(rt, kp_tensor_2d(b, KP_F32, 3, 4), kp_tensor_1d(o, KP_F32, 20), before, 0),
                 KP_ERR_INVALID_ARG, "kp_pad: x [3, 4] and y [20] differ in rank", NULL);
    expect_error(
        kp_pad(rt, kp_tensor_2d(b, KP_F32, 3, 4), kp_tensor_2d(o, KP_F32, 3, 6), before, 0),
        KP_ERR_INVALID_ARG,
        "kp_pad: x [3, 4] does not fit in y [3, 6] after before[0] = 1 (dimension 0: 1 + 3 > 3)",
        NULL);
    expect_error(
        kp_pad(rt, kp_tensor_2d(b, KP_F32, 3, 4), kp_tensor_2d(o, KP_F32, 5, 6), negative, 0),
        KP_ERR_INVALID_ARG, "kp_pad: before[1] is -1 (must be >= 0)", NULL);
    expect_error(
        kp_pad_backward(rt, kp_tensor_2d(o, KP_F32, 4, 5), kp_tensor_2d(b, KP_F32, 4, 5), before),
        KP_ERR_INVALID_ARG, "kp_pad_backward: dx [4, 5] does not fit in dy [4, 5]", NULL);
    /* x inside y's border: refused before any launch, so y (and x) are left as they were. */
    expect_error(kp_pad(rt, kp_tensor_2d(b, KP_F32, 2, 2), kp_tensor_2d(b, KP_F32, 4, 4),
                        (const int64_t[]){2, 2}, 0),
                 KP_ERR_INVALID_ARG, "output overlaps argument \"x\"", NULL);
    float got[64];
    download(b, got, 64);
    expect_same(got, h, 64);
    kp_buffer_destroy(rt, b);
    kp_buffer_destroy(rt, o);
}

/* Parts of [2, 3], [0, 3] (empty) and [5, 3] along axis 0; [4, 1], [4, 0], [4, 6] along axis -1
 * into a y reversed along its rows; a single part; the backward copies the slices back, and
 * <concat(parts), dy> = sum of <part, dpart>. */
static void test_concat(void **state)
{
    static const struct {
        int32_t axis;
        size_t n;
        int64_t parts[3][2];
        int64_t y[2];
        int flip_y;
    } cases[] = {
        {0, 3, {{2, 3}, {0, 3}, {5, 3}}, {7, 3}, 0},
        {-1, 3, {{4, 1}, {4, 0}, {4, 6}}, {4, 7}, 1},
        {1, 1, {{3, 5}}, {3, 5}, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        float hp[3][64], got[CAP], want[CAP], hd[CAP], back[64];
        kp_buffer *bp[3], *bd[3], *by = upload(NULL, CAP);
        kp_tensor parts[3], dparts[3];
        kp_tensor y = kp_tensor_2d(by, KP_F32, cases[k].y[0], cases[k].y[1]);
        if (cases[k].flip_y)
            y = kp_tensor_flip(y, 0);
        const int32_t axis = cases[k].axis < 0 ? cases[k].axis + 2 : cases[k].axis;
        int64_t start = 0;
        for (size_t i = 0; i < cases[k].n; i++) {
            parts[i] = kp_tensor_2d(NULL, KP_F32, cases[k].parts[i][0], cases[k].parts[i][1]);
            const int64_t n = kp_tensor_numel(&parts[i]);
            test_fill(hp[i], (size_t)n, 31 + (unsigned)(k * 3 + i));
            bp[i] = upload(hp[i], (size_t)n);
            bd[i] = upload(NULL, (size_t)n);
            parts[i].buffer = bp[i];
            dparts[i] = parts[i];
            dparts[i].buffer = bd[i];
            /* The host: part i's element (r, c) lands at y's (r, c) moved along axis. */
            for (int64_t e = 0; e < n; e++) {
                int64_t c[2];
                coords(&parts[i], e, c);
                c[axis] += start;
                want[at(&y, c)] = hp[i][e];
            }
            start += parts[i].shape[axis];
        }
        assert_int_equal(kp_concat(rt, parts, cases[k].n, y, cases[k].axis), KP_OK);
        const int64_t ny = kp_tensor_numel(&y);
        download(by, got, (size_t)ny);
        expect_same(got, want, (size_t)ny);
        test_fill(hd, (size_t)ny, 77 + (unsigned)k);
        kp_buffer *bdy = upload(hd, (size_t)ny);
        kp_tensor dy = kp_tensor_2d(bdy, KP_F32, cases[k].y[0], cases[k].y[1]);
        assert_int_equal(kp_concat_backward(rt, dy, dparts, cases[k].n, cases[k].axis), KP_OK);
        assert_int_equal(kp_concat(rt, parts, cases[k].n,
                                   kp_tensor_2d(by, KP_F32, cases[k].y[0], cases[k].y[1]),
                                   cases[k].axis),
                         KP_OK);
        download(by, got, (size_t)ny);
        double lhs = 0, rhs = 0;
        for (int64_t e = 0; e < ny; e++)
            lhs += (double)got[e] * hd[e];
        for (size_t i = 0; i < cases[k].n; i++) {
            const int64_t n = kp_tensor_numel(&parts[i]);
            if (n)
                download(bd[i], back, (size_t)n);
            for (int64_t e = 0; e < n; e++)
                rhs += (double)hp[i][e] * back[e];
            kp_buffer_destroy(rt, bp[i]);
            kp_buffer_destroy(rt, bd[i]);
        }
        assert_true(fabs(lhs - rhs) <= 1e-9 * (1 + fabs(lhs)));
        kp_buffer_destroy(rt, by);
        kp_buffer_destroy(rt, bdy);
    }
}

static void test_concat_bad_inputs(void **state)
{
    kp_buffer *b = upload(NULL, 64), *o = upload(NULL, 64);
    kp_tensor parts[2] = {kp_tensor_2d(b, KP_F32, 2, 3), kp_tensor_2d(b, KP_F32, 4, 3)};
    expect_error(kp_concat(rt, parts, 2, kp_tensor_2d(o, KP_F32, 7, 3), 0), KP_ERR_INVALID_ARG,
                 "kp_concat: the parts' extents along axis 0 sum to 6, but y [7, 3] has 7", NULL);
    expect_error(kp_concat(rt, parts, 2, kp_tensor_2d(o, KP_F32, 2, 6), 1), KP_ERR_INVALID_ARG,
                 "kp_concat: parts[1] [4, 3] and y [2, 6] differ at dimension 0 (only axis 1 may)",
                 NULL);
    expect_error(kp_concat(rt, parts, 2, kp_tensor_2d(o, KP_F32, 6, 3), 2), KP_ERR_INVALID_ARG,
                 "kp_concat: axis 2 is outside -2 .. 1 for y [6, 3]", NULL);
    expect_error(kp_concat(rt, parts, 2, kp_tensor_1d(o, KP_F32, 18), 0), KP_ERR_INVALID_ARG,
                 "kp_concat: parts[0] [2, 3] and y [18] differ in rank", NULL);
    kp_tensor same[2] = {kp_tensor_2d(o, KP_F32, 2, 3), kp_tensor_2d(o, KP_F32, 2, 3)};
    expect_error(kp_concat_backward(rt, kp_tensor_2d(b, KP_F32, 4, 3), same, 2, 0),
                 KP_ERR_INVALID_ARG, "kp_concat_backward: dparts[0] and dparts[1] overlap", NULL);
    kp_buffer_destroy(rt, b);
    kp_buffer_destroy(rt, o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_view_helpers),
        cmocka_unit_test(test_flipped_views_compute),
        cmocka_unit_test(test_reversed_vectors),
        cmocka_unit_test(test_negative_stride_ranges),
        cmocka_unit_test(test_negative_stride_overlaps),
        cmocka_unit_test(test_flip),
        cmocka_unit_test(test_pad),
        cmocka_unit_test(test_pad_bad_inputs),
        cmocka_unit_test(test_concat),
        cmocka_unit_test(test_concat_bad_inputs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
