/* SPDX-License-Identifier: Apache-2.0 */
/* Launch and buffer validation: exact messages, nothing enqueued, the runtime still usable. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test-util.h"

#define N 16

/* One PoCL runtime for the whole file: x, y (the output) and a spare buffer. */
typedef struct fixture {
    kp_runtime *rt;
    kp_kernel *axpy, *scale;
    kp_buffer *x, *y, *big;
    float hx[N], hy[N];
} fixture;

static int setup(void **state)
{
    static fixture f;
    kp_runtime_options o =
        test_options(test_build_path(KP_TEST_EXAMPLE_PLUGIN_DIR), test_device(), NULL);
    if (kp_runtime_create(&o, &f.rt) != KP_OK) {
        fprintf(stderr, "kp_runtime_create: %s\n", kp_last_error(NULL));
        return -1;
    }
    if (kp_kernel_find(f.rt, "example.axpy", &f.axpy) != KP_OK ||
        kp_kernel_find(f.rt, "example.scale_rows", &f.scale) != KP_OK ||
        kp_buffer_create(f.rt, N * sizeof(float), &f.x) != KP_OK ||
        kp_buffer_create(f.rt, N * sizeof(float), &f.y) != KP_OK ||
        kp_buffer_create(f.rt, 4 * N * sizeof(float), &f.big) != KP_OK)
        return -1;
    test_fill_nonzero(f.hx, N, 1);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    kp_runtime_destroy(f->rt);
    return 0;
}

/* Puts fresh values in y (and x), so a launch that should not have run is visible. */
static void reset(fixture *f, unsigned seed)
{
    test_fill_nonzero(f->hy, N, seed);
    assert_int_equal(kp_buffer_write(f->rt, f->x, 0, sizeof f->hx, f->hx), KP_OK);
    assert_int_equal(kp_buffer_write(f->rt, f->y, 0, sizeof f->hy, f->hy), KP_OK);
}

static void expect_y_unchanged(fixture *f)
{
    float got[N];
    assert_int_equal(kp_finish(f->rt), KP_OK);
    assert_int_equal(kp_buffer_read(f->rt, f->y, 0, sizeof got, got), KP_OK);
    assert_memory_equal(got, f->hy, sizeof got);
}

static kp_tensor tx(fixture *f)
{
    return kp_tensor_1d(f->x, KP_F32, N);
}

static kp_tensor ty(fixture *f)
{
    return kp_tensor_1d(f->y, KP_F32, N);
}

/* A correct launch after a rejected one computes the right answer. */
static void expect_good_launch(fixture *f)
{
    reset(f, 99);
    kp_arg args[] = {KP_ARG_INT("n", N), KP_ARG_FLOAT("alpha", 2.0), KP_ARG_TENSOR("x", tx(f)),
                     KP_ARG_TENSOR("y", ty(f))};
    kp_status st = kp_kernel_launch(f->rt, f->axpy, args, 4, NULL);
    if (st != KP_OK)
        fprintf(stderr, "good launch: %s\n", kp_last_error(f->rt));
    assert_int_equal(st, KP_OK);
    float got[N];
    assert_int_equal(kp_buffer_read(f->rt, f->y, 0, sizeof got, got), KP_OK);
    for (int i = 0; i < N; i++) {
        float want = fmaf(2.0f, f->hx[i], f->hy[i]);
        assert_memory_equal(&got[i], &want, sizeof want);
    }
}

/* Launches axpy with `args`, expects `status` and `message` exactly, y untouched, and then a
 * good launch to work. */
static void expect_rejected(fixture *f, kp_kernel *k, const kp_arg *args, size_t n,
                            kp_status status, const char *message)
{
    reset(f, 7);
    kp_event *ev = (kp_event *)&ev; /* not NULL: a failed launch must clear it */
    assert_int_equal(kp_kernel_launch(f->rt, k, args, n, &ev), status);
    assert_null(ev);
    assert_string_equal(kp_last_error(f->rt), message);
    expect_y_unchanged(f);
    expect_good_launch(f);
}

static void test_missing_argument(void **state)
{
    fixture *f = *state;
    kp_arg no_x[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("y", ty(f))};
    expect_rejected(f, f->axpy, no_x, 2, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: missing argument \"x\" (f32 tensor, in)");
    kp_arg no_n[] = {KP_ARG_TENSOR("x", tx(f)), KP_ARG_TENSOR("y", ty(f))};
    expect_rejected(f, f->axpy, no_n, 2, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: missing argument \"n\" (int, in)");
    expect_rejected(f, f->axpy, NULL, 0, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: missing argument \"n\" (int, in)");
}

static void test_unknown_argument_lists_parameters(void **state)
{
    fixture *f = *state;
    kp_arg args[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("x", tx(f)), KP_ARG_TENSOR("y", ty(f)),
                     KP_ARG_FLOAT("beta", 1.0)};
    expect_rejected(f, f->axpy, args, 4, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: unknown argument \"beta\" (parameters: n, alpha, x, y)");
}

static void test_argument_without_name(void **state)
{
    fixture *f = *state;
    kp_arg args[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR(NULL, tx(f)), KP_ARG_TENSOR("y", ty(f))};
    expect_rejected(f, f->axpy, args, 3, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: argument 1 has no name");
}

static void test_argument_given_twice(void **state)
{
    fixture *f = *state;
    kp_arg args[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("x", tx(f)), KP_ARG_TENSOR("y", ty(f)),
                     KP_ARG_TENSOR("x", tx(f))};
    expect_rejected(f, f->axpy, args, 4, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: argument \"x\": given twice");
}

static void test_wrong_kind(void **state)
{
    fixture *f = *state;
    kp_arg args[] = {KP_ARG_FLOAT("n", 16.0), KP_ARG_TENSOR("x", tx(f)), KP_ARG_TENSOR("y", ty(f))};
    expect_rejected(f, f->axpy, args, 3, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: argument \"n\": expected int, got float");
    kp_arg tensor_alpha[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("alpha", tx(f)),
                             KP_ARG_TENSOR("x", tx(f)), KP_ARG_TENSOR("y", ty(f))};
    expect_rejected(f, f->axpy, tensor_alpha, 4, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: argument \"alpha\": expected float, got tensor");
}

static void test_wrong_dtype(void **state)
{
    fixture *f = *state;
    kp_arg args[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("x", kp_tensor_1d(f->x, KP_I32, N)),
                     KP_ARG_TENSOR("y", ty(f))};
    expect_rejected(f, f->axpy, args, 3, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: argument \"x\": dtype i32 is not accepted (expected "
                    "f32)");
    kp_arg none[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("x", tx(f)),
                     KP_ARG_TENSOR("y", kp_tensor_1d(f->y, KP_DTYPE_NONE, N))};
    expect_rejected(f, f->axpy, none, 3, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: argument \"y\": dtype none is not accepted (expected "
                    "f32)");
}

static void test_null_buffer(void **state)
{
    fixture *f = *state;
    kp_arg args[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("x", kp_tensor_1d(NULL, KP_F32, N)),
                     KP_ARG_TENSOR("y", ty(f))};
    expect_rejected(f, f->axpy, args, 3, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: argument \"x\": the tensor has no buffer");
}

static void test_negative_stride_and_offset(void **state)
{
    fixture *f = *state;
    kp_tensor back = tx(f);
    back.strides[0] = -1;
    back.offset = N - 1;
    kp_arg args[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("x", back), KP_ARG_TENSOR("y", ty(f))};
    expect_rejected(f, f->axpy, args, 3, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: argument \"x\": dimension 0 has shape 16 and stride -1 "
                    "(both must be >= 0: this kernel does not accept negative strides)");
    kp_tensor before = tx(f);
    before.offset = -1;
    kp_arg neg[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("x", before), KP_ARG_TENSOR("y", ty(f))};
    expect_rejected(f, f->axpy, neg, 3, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: argument \"x\": negative offset -1");
}

static void test_bad_rank(void **state)
{
    fixture *f = *state;
    int64_t shape[9] = {1, 1, 1, 1, 1, 1, 1, 1, 16};
    kp_arg args[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("x", kp_tensor_nd(f->x, KP_F32, 9, shape)),
                     KP_ARG_TENSOR("y", ty(f))};
    expect_rejected(f, f->axpy, args, 3, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: argument \"x\": rank -1 is outside 0..8");
}

static void test_view_past_its_buffer(void **state)
{
    fixture *f = *state;
    kp_tensor shifted = tx(f);
    shifted.offset = 1;
    kp_arg args[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("x", shifted), KP_ARG_TENSOR("y", ty(f))};
    expect_rejected(f, f->axpy, args, 3, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: argument \"x\": f32[16] offset 1 needs 68 bytes but "
                    "its buffer has 64");
    kp_tensor strided = ty(f);
    strided.strides[0] = 2;
    kp_arg args2[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("x", tx(f)), KP_ARG_TENSOR("y", strided)};
    expect_rejected(f, f->axpy, args2, 3, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: argument \"y\": f32[16] strides [2] needs 124 bytes but "
                    "its buffer has 64");
    /* An extent that overflows int64 is caught, not wrapped around. */
    kp_tensor huge = tx(f);
    huge.strides[0] = INT64_MAX / 2;
    kp_arg args3[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("x", huge), KP_ARG_TENSOR("y", ty(f))};
    char want[200];
    snprintf(want, sizeof want,
             "kernel example.axpy: argument \"x\": f32[16] strides [%lld] needs -1 bytes but its "
             "buffer has 64",
             (long long)(INT64_MAX / 2));
    expect_rejected(f, f->axpy, args3, 3, KP_ERR_INVALID_ARG, want);
}

/* Stride-0 dimensions cost no memory: [2^32, 2^32] is a view of one element whose element count
 * passes int64 (it wrapped to 0, so scale_rows' limit of 2^31 elements let it through and PoCL
 * computed nothing). Refused before the kernel sees it, also when an extent is 0. */
static void test_extents_multiplying_past_int64(void **state)
{
    fixture *f = *state;
    const int64_t big = (int64_t)1 << 32;
    kp_tensor x = kp_tensor_2d(f->x, KP_F32, big, big), s = kp_tensor_1d(f->x, KP_F32, big),
              y = kp_tensor_2d(f->y, KP_F32, big, big);
    x.strides[0] = x.strides[1] = s.strides[0] = y.strides[0] = y.strides[1] = 0;
    kp_arg args[] = {KP_ARG_TENSOR("x", x), KP_ARG_TENSOR("scale", s), KP_ARG_TENSOR("y", y)};
    expect_rejected(f, f->scale, args, 3, KP_ERR_INVALID_ARG,
                    "kernel example.scale_rows: argument \"x\": f32[4294967296, 4294967296] "
                    "strides [0, 0]: its extents multiply past 2^63 - 1");
    kp_tensor empty = kp_tensor_3d(f->x, KP_F32, 0, big, big);
    empty.strides[0] = empty.strides[1] = empty.strides[2] = 0;
    kp_arg args2[] = {KP_ARG_INT("n", 0), KP_ARG_TENSOR("x", empty), KP_ARG_TENSOR("y", ty(f))};
    expect_rejected(f, f->axpy, args2, 3, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: argument \"x\": f32[0, 4294967296, 4294967296] strides "
                    "[0, 0, 0]: its extents multiply past 2^63 - 1");
}

/* An output whose elements share memory would be written by several work-items at once: a
 * broadcast (stride 0) or rows closer than a row apart. */
static void test_output_overlapping_itself(void **state)
{
    fixture *f = *state;
    kp_tensor y = ty(f);
    y.strides[0] = 0;
    kp_arg args[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("x", tx(f)), KP_ARG_TENSOR("y", y)};
    expect_rejected(f, f->axpy, args, 3, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: argument \"y\": f32[16] strides [0]: the output's "
                    "elements would overlap (each stride must exceed the span of the dimensions "
                    "with smaller strides)");
    kp_tensor rows = kp_tensor_2d(f->y, KP_F32, 4, 4);
    rows.strides[0] = 3;
    kp_arg args2[] = {KP_ARG_TENSOR("x", kp_tensor_2d(f->x, KP_F32, 4, 4)),
                      KP_ARG_TENSOR("scale", kp_tensor_1d(f->x, KP_F32, 4)),
                      KP_ARG_TENSOR("y", rows)};
    expect_rejected(f, f->scale, args2, 3, KP_ERR_INVALID_ARG,
                    "kernel example.scale_rows: argument \"y\": f32[4, 4] strides [3, 1]: the "
                    "output's elements would overlap (each stride must exceed the span of the "
                    "dimensions with smaller strides)");
    /* Outputs whose elements are all apart: transposed, and with a stride 0 on an extent of 1. */
    kp_tensor cols = kp_tensor_transpose(kp_tensor_2d(f->y, KP_F32, 4, 4), 0, 1);
    kp_tensor x = kp_tensor_2d(f->x, KP_F32, 4, 4), scale = kp_tensor_1d(f->x, KP_F32, 4);
    kp_arg ok[] = {KP_ARG_TENSOR("x", x), KP_ARG_TENSOR("scale", scale), KP_ARG_TENSOR("y", cols)};
    assert_int_equal(kp_kernel_launch(f->rt, f->scale, ok, 3, NULL), KP_OK);
    float got[N];
    assert_int_equal(kp_buffer_read(f->rt, f->y, 0, sizeof got, got), KP_OK);
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++) {
            float want = f->hx[r * 4 + c] * f->hx[r];
            assert_memory_equal(&got[c * 4 + r], &want, sizeof want);
        }
    kp_tensor row = kp_tensor_2d(f->y, KP_F32, 1, N);
    row.strides[0] = 0;
    kp_arg one_row[] = {KP_ARG_TENSOR("x", kp_tensor_2d(f->x, KP_F32, 1, N)),
                        KP_ARG_TENSOR("scale", kp_tensor_1d(f->x, KP_F32, 1)),
                        KP_ARG_TENSOR("y", row)};
    assert_int_equal(kp_kernel_launch(f->rt, f->scale, one_row, 3, NULL), KP_OK);
    expect_good_launch(f);
}

/* A buffer of another runtime lives in another context (or host memory): refused by launches and
 * by every buffer call, and left alone by kp_buffer_destroy. */
static void test_buffer_of_another_runtime(void **state)
{
    fixture *f = *state;
    kp_runtime_options o = test_options(NULL, "host", NULL);
    kp_runtime *other = NULL;
    assert_int_equal(kp_runtime_create(&o, &other), KP_OK);
    kp_buffer *foreign = NULL;
    assert_int_equal(kp_buffer_create(other, N * sizeof(float), &foreign), KP_OK);
    assert_int_equal(kp_buffer_write(other, foreign, 0, sizeof f->hx, f->hx), KP_OK);
    kp_arg args[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("x", kp_tensor_1d(foreign, KP_F32, N)),
                     KP_ARG_TENSOR("y", ty(f))};
    expect_rejected(f, f->axpy, args, 3, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: argument \"x\": the tensor's buffer belongs to another "
                    "runtime");
    float host[N];
    assert_int_equal(kp_buffer_read(f->rt, foreign, 0, sizeof host, host), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(f->rt),
                        "kp_buffer_read: the buffer belongs to another runtime");
    assert_int_equal(kp_buffer_write(f->rt, foreign, 0, sizeof host, host), KP_ERR_INVALID_ARG);
    assert_int_equal(kp_buffer_copy(f->rt, foreign, 0, f->y, 0, 16), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(f->rt),
                        "kp_buffer_copy (source): the buffer belongs to another runtime");
    assert_int_equal(kp_buffer_copy(f->rt, f->x, 0, foreign, 0, 16), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(f->rt),
                        "kp_buffer_copy (destination): the buffer belongs to another runtime");
    assert_int_equal(kp_buffer_fill(f->rt, foreign, 0, 16, host, 4), KP_ERR_INVALID_ARG);
    kp_buffer_destroy(f->rt, foreign);
    assert_string_equal(kp_last_error(f->rt), "kp_buffer_destroy: the buffer belongs to another "
                                              "runtime, which still owns it");
    /* Its own runtime still has it, unchanged. */
    assert_int_equal(kp_buffer_read(other, foreign, 0, sizeof host, host), KP_OK);
    assert_memory_equal(host, f->hx, sizeof host);
    kp_runtime_destroy(other);
    expect_good_launch(f);
}

/* An empty view touches no memory, but its offset must still be within its buffer. */
static void test_empty_view_past_its_buffer(void **state)
{
    fixture *f = *state;
    kp_tensor far = kp_tensor_1d(f->x, KP_F32, 0);
    far.offset = (int64_t)1 << 40;
    kp_arg args[] = {KP_ARG_INT("n", 0), KP_ARG_TENSOR("x", far),
                     KP_ARG_TENSOR("y", kp_tensor_1d(f->y, KP_F32, 0))};
    expect_rejected(f, f->axpy, args, 3, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: argument \"x\": f32[0] offset 1099511627776 starts at "
                    "byte 4398046511104 but its buffer has 64");
    args[1].tensor.offset = N + 1;
    expect_rejected(f, f->axpy, args, 3, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: argument \"x\": f32[0] offset 17 starts at byte 68 but "
                    "its buffer has 64");
    /* At the very end is still within. */
    args[1].tensor.offset = N;
    assert_int_equal(kp_kernel_launch(f->rt, f->axpy, args, 3, NULL), KP_OK);
}

static void test_output_overlapping_input(void **state)
{
    fixture *f = *state;
    float big[4 * N];
    test_fill_nonzero(big, 4 * N, 5);
    assert_int_equal(kp_buffer_write(f->rt, f->big, 0, sizeof big, big), KP_OK);
    kp_tensor x = kp_tensor_1d(f->big, KP_F32, N), y = x;
    y.offset = 8;
    kp_arg args[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("x", x), KP_ARG_TENSOR("y", y)};
    expect_rejected(f, f->axpy, args, 3, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: argument \"y\": output overlaps argument \"x\" in the "
                    "same buffer (bytes [32, 96) and [0, 64))");
    /* The rejected launch wrote nothing into the shared buffer either. */
    float got[4 * N];
    assert_int_equal(kp_buffer_read(f->rt, f->big, 0, sizeof got, got), KP_OK);
    assert_memory_equal(got, big, sizeof got);
    /* Disjoint views of one buffer are fine. */
    y.offset = 2 * N;
    kp_arg ok[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("x", x), KP_ARG_TENSOR("y", y)};
    assert_int_equal(kp_kernel_launch(f->rt, f->axpy, ok, 3, NULL), KP_OK);
    assert_int_equal(kp_buffer_read(f->rt, f->big, 0, sizeof got, got), KP_OK);
    for (int i = 0; i < N; i++) {
        float want = big[i] + big[2 * N + i];
        assert_memory_equal(&got[2 * N + i], &want, sizeof want);
    }
}

static void test_kernel_check_message(void **state)
{
    fixture *f = *state;
    kp_arg short_x[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("x", kp_tensor_1d(f->x, KP_F32, N - 1)),
                        KP_ARG_TENSOR("y", ty(f))};
    expect_rejected(f, f->axpy, short_x, 3, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: x: expected shape [n] = [16], got rank 1 with 15 "
                    "elements");
    kp_arg negative_n[] = {KP_ARG_INT("n", -1), KP_ARG_TENSOR("x", tx(f)),
                           KP_ARG_TENSOR("y", ty(f))};
    expect_rejected(f, f->axpy, negative_n, 3, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: n: -1 is outside 0..2147483647");
    kp_arg flat[] = {KP_ARG_TENSOR("x", tx(f)), KP_ARG_TENSOR("scale", tx(f)),
                     KP_ARG_TENSOR("y", ty(f))};
    expect_rejected(f, f->scale, flat, 3, KP_ERR_INVALID_ARG,
                    "kernel example.scale_rows: x: expected rank 2 [rows, cols], got rank 1");
}

static void test_args_null_with_count(void **state)
{
    fixture *f = *state;
    expect_rejected(f, f->axpy, NULL, 3, KP_ERR_INVALID_ARG,
                    "kernel example.axpy: 3 arguments but args is NULL");
}

static void test_null_runtime_or_kernel(void **state)
{
    fixture *f = *state;
    kp_arg args[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("x", tx(f)), KP_ARG_TENSOR("y", ty(f))};
    expect_rejected(f, NULL, args, 3, KP_ERR_INVALID_ARG,
                    "kp_kernel_launch: NULL runtime or kernel");
    assert_int_equal(kp_kernel_launch(NULL, f->axpy, args, 3, NULL), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(NULL), "kp_kernel_launch: NULL runtime or kernel");
}

static void test_find_missing_kernel(void **state)
{
    fixture *f = *state;
    kp_kernel *k = (kp_kernel *)f;
    assert_int_equal(kp_kernel_find(f->rt, "example.axpby", &k), KP_ERR_NOT_FOUND);
    assert_null(k);
    assert_string_equal(kp_last_error(f->rt),
                        "no kernel named \"example.axpby\" (did you mean: example.axpy, "
                        "example.scale_rows)");
    assert_int_equal(kp_kernel_find(f->rt, "gru.step", &k), KP_ERR_NOT_FOUND);
    assert_string_equal(kp_last_error(f->rt), "no kernel named \"gru.step\" (see `kernelport "
                                              "kernels` and `kernelport plugins`)");
    /* The family alone is not a kernel's name. */
    assert_int_equal(kp_kernel_find(f->rt, "example", &k), KP_ERR_NOT_FOUND);
    assert_string_equal(kp_last_error(f->rt), "no kernel named \"example\" (did you mean: "
                                              "example.axpy, example.scale_rows)");
    assert_int_equal(kp_kernel_find(f->rt, NULL, &k), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(f->rt), "kp_kernel_find: NULL runtime or name");
    assert_int_equal(kp_kernel_find(f->rt, "example.axpy", NULL), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(f->rt), "kp_kernel_find: out is NULL");
    expect_good_launch(f);
}

static void test_buffer_errors(void **state)
{
    fixture *f = *state;
    kp_runtime *rt = f->rt;
    kp_buffer *b = (kp_buffer *)f;
    char bytes[2 * N * sizeof(float)] = {0};

    assert_int_equal(kp_buffer_create(rt, 0, &b), KP_ERR_INVALID_ARG);
    assert_null(b);
    assert_string_equal(kp_last_error(rt), "kp_buffer_create: size is 0");
    assert_int_equal(kp_buffer_create(rt, 16, NULL), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt), "kp_buffer_create: out is NULL");
    assert_int_equal(kp_buffer_create(NULL, 16, &b), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(NULL), "kp_buffer_create: runtime is NULL");
    assert_int_equal(kp_buffer_create(rt, SIZE_MAX, &b), KP_ERR_OUT_OF_MEMORY);
    assert_non_null(strstr(kp_last_error(rt), "the device's largest allocation is"));

    reset(f, 11);
    assert_int_equal(kp_buffer_read(rt, f->y, 60, 8, bytes), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt),
                        "kp_buffer_read: range [60, 68) is outside the buffer of 64 bytes");
    assert_int_equal(kp_buffer_write(rt, f->y, 0, 65, bytes), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt),
                        "kp_buffer_write: range [0, 65) is outside the buffer of 64 bytes");
    assert_int_equal(kp_buffer_write(rt, f->y, 65, 0, bytes), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt),
                        "kp_buffer_write: range [65, 65) is outside the buffer of 64 bytes");
    /* An offset + size that wraps around is still outside. */
    assert_int_equal(kp_buffer_write(rt, f->y, 8, SIZE_MAX, bytes), KP_ERR_INVALID_ARG);
    assert_int_equal(kp_buffer_write(rt, f->y, 0, 4, NULL), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt), "kp_buffer_write: host pointer is NULL");
    assert_int_equal(kp_buffer_read(rt, NULL, 0, 4, bytes), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt), "kp_buffer_read: buffer is NULL");

    uint32_t pattern[32] = {0};
    assert_int_equal(kp_buffer_fill(rt, f->y, 0, 48, pattern, 3), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt),
                        "kp_buffer_fill: pattern size 3 is not 1, 2, 4, ..., 128");
    assert_int_equal(kp_buffer_fill(rt, f->y, 0, 64, pattern, 0), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt),
                        "kp_buffer_fill: pattern size 0 is not 1, 2, 4, ..., 128");
    assert_int_equal(kp_buffer_fill(rt, f->y, 0, 64, pattern, 256), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt),
                        "kp_buffer_fill: pattern size 256 is not 1, 2, 4, ..., 128");
    assert_int_equal(kp_buffer_fill(rt, f->y, 2, 8, pattern, 4), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt), "kp_buffer_fill: offset 2 and size 8 must be multiples "
                                           "of the pattern size 4");
    assert_int_equal(kp_buffer_fill(rt, f->y, 32, 64, pattern, 4), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt),
                        "kp_buffer_fill: range [32, 96) is outside the buffer of 64 bytes");

    assert_int_equal(kp_buffer_copy(rt, f->y, 0, f->y, 8, 16), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt), "kp_buffer_copy: source and destination overlap");
    assert_int_equal(kp_buffer_copy(rt, f->y, 16, f->y, 0, 17), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt), "kp_buffer_copy: source and destination overlap");
    assert_int_equal(kp_buffer_copy(rt, f->x, 0, f->y, 32, 64), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt), "kp_buffer_copy (destination): range [32, 96) is "
                                           "outside the buffer of 64 bytes");
    assert_int_equal(kp_buffer_copy(rt, f->x, 8, f->y, 0, 60), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt), "kp_buffer_copy (source): range [8, 68) is outside "
                                           "the buffer of 64 bytes");
    /* None of those touched y. */
    expect_y_unchanged(f);

    /* The valid neighbours of those calls work. */
    assert_int_equal(kp_buffer_copy(rt, f->y, 0, f->y, 16, 16), KP_OK);
    uint32_t one = 0x3f800000u; /* 1.0f */
    assert_int_equal(kp_buffer_fill(rt, f->y, 48, 16, &one, 4), KP_OK);
    float got[N];
    assert_int_equal(kp_buffer_read(rt, f->y, 0, sizeof got, got), KP_OK);
    assert_memory_equal(&got[0], &f->hy[0], 16);
    assert_memory_equal(&got[4], &f->hy[0], 16);
    assert_memory_equal(&got[8], &f->hy[8], 16);
    for (int i = 12; i < N; i++)
        assert_true(got[i] == 1.0f);
    assert_int_equal(kp_buffer_size(f->y), 64);
    assert_int_equal(kp_buffer_size(NULL), 0);
    kp_buffer_destroy(rt, NULL);
    kp_buffer_destroy(NULL, NULL);
    expect_good_launch(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_argument),
        cmocka_unit_test(test_unknown_argument_lists_parameters),
        cmocka_unit_test(test_argument_without_name),
        cmocka_unit_test(test_argument_given_twice),
        cmocka_unit_test(test_wrong_kind),
        cmocka_unit_test(test_wrong_dtype),
        cmocka_unit_test(test_null_buffer),
        cmocka_unit_test(test_negative_stride_and_offset),
        cmocka_unit_test(test_bad_rank),
        cmocka_unit_test(test_view_past_its_buffer),
        cmocka_unit_test(test_output_overlapping_input),
        cmocka_unit_test(test_extents_multiplying_past_int64),
        cmocka_unit_test(test_output_overlapping_itself),
        cmocka_unit_test(test_buffer_of_another_runtime),
        cmocka_unit_test(test_empty_view_past_its_buffer),
        cmocka_unit_test(test_kernel_check_message),
        cmocka_unit_test(test_args_null_with_count),
        cmocka_unit_test(test_null_runtime_or_kernel),
        cmocka_unit_test(test_find_missing_kernel),
        cmocka_unit_test(test_buffer_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
