/* The tensor family: every kernel against its host reference, the same bits across runs and
 * work-group sizes, each op's gradient against finite differences, and bad inputs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../plugins/tensor/tensor.h"
#include "kernelport/ops/random.h"
#include "kernelport/ops/tensor.h"
#include "test-util.h"

static kp_runtime *rt;

static int setup(void **state)
{
    kp_runtime_options o =
        test_options(test_build_path("lib/kernelport/plugins"), test_device(), NULL);
    kp_status st = kp_runtime_create(&o, &rt);
    if (st != KP_OK)
        fprintf(stderr, "kp_runtime_create: %s\n", kp_last_error(NULL));
    return st == KP_OK ? 0 : -1;
}

static int teardown(void **state)
{
    kp_runtime_destroy(rt);
    return 0;
}

static kp_kernel *find(const char *name)
{
    kp_kernel *k = NULL;
    assert_int_equal(kp_kernel_find(rt, name, &k), KP_OK);
    return k;
}

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

/* ---- every kernel against its reference ---- */

static void test_verify_every_kernel(void **state)
{
    size_t verified = 0;
    for (size_t i = 0; i < kp_kernel_count(rt); i++) {
        kp_kernel *k = kp_kernel_at(rt, i);
        kp_kernel_info info;
        assert_int_equal(kp_kernel_info_get(k, &info), KP_OK);
        if (!kp_kernel_name_matches("tensor.*", info.name))
            continue;
        kp_status st = kp_kernel_verify(rt, k, NULL, 7, NULL, NULL);
        if (st != KP_OK)
            fail_msg("%s: %s", info.name, kp_last_error(rt));
        verified++;
    }
    /* 18 unary ops and 8 differentiable binary ops with their backward, cmplt, cmpeq and where,
     * 7 reductions and 2 reduction backwards, 5 generators, copy and its backward. */
    assert_int_equal(verified, 18 * 2 + 8 * 2 + 3 + 7 + 2 + 5 + 2);
}

/* Every kernel that may reduce, verified again with its terms summed by 64 lanes (REDUCE 2: the
 * GPUs' route for contiguous terms) and in chunks (3: few outputs of many terms), which the
 * default picks only on GPUs. */
static void test_verify_gpu_routes(void **state)
{
    for (int64_t route = 2; route <= 3; route++) {
        size_t verified = 0;
        for (size_t i = 0; i < kp_kernel_count(rt); i++) {
            kp_kernel *k = kp_kernel_at(rt, i);
            kp_kernel_info info;
            assert_int_equal(kp_kernel_info_get(k, &info), KP_OK);
            if (!kp_kernel_name_matches("tensor.*", info.name) ||
                kp_kernel_tunable_set(rt, k, "REDUCE", route) != KP_OK)
                continue;
            kp_status st = kp_kernel_verify(rt, k, NULL, 11, NULL, NULL);
            if (st != KP_OK)
                fail_msg("%s with REDUCE %d: %s", info.name, (int)route, kp_last_error(rt));
            assert_int_equal(kp_kernel_tuning_reset(rt, k), KP_OK);
            verified++;
        }
        /* The 26 backward kernels of elementwise ops, 7 reductions, 2 of their backward,
         * copy's. */
        assert_int_equal(verified, 18 + 8 + 7 + 2 + 1);
    }
}

/* ---- the same bits on every run and at every work-group size ---- */

typedef struct run {
    const char *kernel;
    kp_arg args[6];
    size_t n_args;
    kp_buffer *out[2];
    size_t out_n[2];
} run;

/* Runs r at work-group sizes 32 and 256, twice each, and compares every output's bits; then
 * the same by 64 lanes per output element (REDUCE 2) and in chunks (3): each route's bits must
 * agree with themselves. */
static void expect_same_bits(run *r)
{
    kp_kernel *k = find(r->kernel);
    float *first[2] = {NULL, NULL};
    for (int attempt = 0; attempt < 12; attempt++) {
        if (attempt % 4 == 0 && attempt) {
            free(first[0]);
            free(first[1]);
            first[0] = first[1] = NULL;
            assert_int_equal(kp_kernel_tunable_set(rt, k, "REDUCE", 1 + attempt / 4), KP_OK);
        }
        assert_int_equal(kp_kernel_tunable_set(rt, k, "WG", attempt % 4 < 2 ? 32 : 256), KP_OK);
        kp_status st = kp_kernel_launch(rt, k, r->args, r->n_args, NULL);
        if (st != KP_OK)
            fail_msg("%s: %s", r->kernel, kp_last_error(rt));
        for (int o = 0; o < 2 && r->out[o]; o++) {
            float *got = malloc(r->out_n[o] * sizeof *got);
            assert_non_null(got);
            download(r->out[o], got, r->out_n[o]);
            if (!first[o]) {
                first[o] = got;
                continue;
            }
            if (memcmp(first[o], got, r->out_n[o] * sizeof *got) != 0)
                fail_msg("%s: output %d differs at attempt %d (WG %d)", r->kernel, o, attempt,
                         attempt % 4 < 2 ? 32 : 256);
            free(got);
        }
    }
    free(first[0]);
    free(first[1]);
    assert_int_equal(kp_kernel_tuning_reset(rt, k), KP_OK);
}

static void test_deterministic(void **state)
{
    enum { R = 97, C = 131 };
    float *x = malloc(R * C * sizeof *x), *col = malloc(R * sizeof *col),
          *row = malloc(C * sizeof *row);
    assert_non_null(x);
    test_fill(x, R * C, 3);
    test_fill(col, R, 4);
    test_fill(row, C, 5);
    kp_buffer *bx = upload(x, R * C), *bcol = upload(col, R), *brow = upload(row, C);
    kp_buffer *o1 = upload(NULL, C), *o2 = upload(NULL, R);
    kp_tensor tx = kp_tensor_2d(bx, KP_F32, R, C);
    /* Sums over the first axis, the last and both. */
    const struct {
        int64_t axes;
        kp_tensor y;
        kp_buffer *b;
        size_t n;
    } sums[] = {{1, kp_tensor_1d(o1, KP_F32, C), o1, C},
                {2, kp_tensor_1d(o2, KP_F32, R), o2, R},
                {-1, kp_tensor_nd(o1, KP_F32, 0, NULL), o1, 1}};
    for (size_t i = 0; i < sizeof sums / sizeof sums[0]; i++) {
        run r = {.kernel = "tensor.sum",
                 .args = {kp_arg_tensor("x", tx), kp_arg_tensor("y", sums[i].y),
                          kp_arg_int("axes", sums[i].axes)},
                 .n_args = 3,
                 .out = {sums[i].b},
                 .out_n = {sums[i].n}};
        expect_same_bits(&r);
    }
    /* The gradients of a [R, 1] * b [C] (into [R, C]): each summed over the other's axis. */
    run r = {.kernel = "tensor.mul_backward",
             .args = {kp_arg_tensor("dy", tx), kp_arg_tensor("a", kp_tensor_2d(bcol, KP_F32, R, 1)),
                      kp_arg_tensor("b", kp_tensor_1d(brow, KP_F32, C)),
                      kp_arg_tensor("da", kp_tensor_2d(o2, KP_F32, R, 1)),
                      kp_arg_tensor("db", kp_tensor_1d(o1, KP_F32, C))},
             .n_args = 5,
             .out = {o2, o1},
             .out_n = {R, C}};
    expect_same_bits(&r);
    kp_buffer *bufs[] = {bx, bcol, brow, o1, o2};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        kp_buffer_destroy(rt, bufs[i]);
    free(x);
    free(col);
    free(row);
}

/* ---- random numbers: the host's bits ---- */

/* tensor.uniform in [0, 1) and tensor.bernoulli give exactly kp_random_uniform's numbers, on a
 * strided y, past a 32-bit boundary of the stream's offset. */
static void test_random_matches_host(void **state)
{
    enum { R = 13, C = 77 };
    const int64_t seed = (int64_t)0x9e3779b97f4a7c15ull, offset = (1LL << 32) - 100;
    kp_buffer *b = upload(NULL, R * C);
    /* y [C, R] as the transpose of its storage: element (i, j) of the row-major order is at j C +
     * i. */
    kp_tensor y = kp_tensor_2d(b, KP_F32, C, R);
    y.strides[0] = 1;
    y.strides[1] = C;
    kp_arg args[] = {kp_arg_tensor("y", y), kp_arg_float("low", 0.0), kp_arg_float("high", 1.0),
                     kp_arg_int("seed", seed), kp_arg_int("offset", offset)};
    assert_int_equal(kp_kernel_launch(rt, find("tensor.uniform"), args, 5, NULL), KP_OK);
    float got[R * C];
    download(b, got, R * C);
    for (int64_t i = 0; i < C; i++)
        for (int64_t j = 0; j < R; j++)
            assert_true(got[j * C + i] ==
                        kp_random_uniform((uint64_t)seed, (uint64_t)offset, (uint64_t)(i * R + j)));
    kp_arg bern[] = {kp_arg_tensor("y", kp_tensor_1d(b, KP_F32, R * C)), kp_arg_float("p", 0.25),
                     kp_arg_float("value", 4.0), kp_arg_int("seed", seed)};
    assert_int_equal(kp_kernel_launch(rt, find("tensor.bernoulli"), bern, 4, NULL), KP_OK);
    download(b, got, R * C);
    for (int64_t i = 0; i < R * C; i++)
        assert_true(got[i] ==
                    (kp_random_uniform((uint64_t)seed, 0, (uint64_t)i) < 0.25f ? 4.0f : 0.0f));
    kp_buffer_destroy(rt, b);
}

/* ---- gradients against finite differences, in double on the host ---- */

static double central(int map, int which, double a, double b)
{
    double h = 1e-6 * (1.0 + fabs(which ? b : a));
    double up = which ? tensor_map_host(map, a, b + h, 0, 0) : tensor_map_host(map, a + h, b, 0, 0);
    double down =
        which ? tensor_map_host(map, a, b - h, 0, 0) : tensor_map_host(map, a - h, b, 0, 0);
    return (up - down) / (2 * h);
}

static void expect_close(const char *op, const char *what, double x, double got, double want)
{
    if (fabs(got - want) > 1e-6 * (1.0 + fabs(want)))
        fail_msg("%s: %s at %g is %.12g, finite differences give %.12g", op, what, x, got, want);
}

static void test_gradients_match_finite_differences(void **state)
{
    for (size_t i = 0; i < tensor_n_unary; i++) {
        const tensor_op *op = &tensor_unary_ops[i];
        /* Points inside the sample range, off kinks at 0 (relu, abs). */
        for (int p = 0; p < 9; p++) {
            double x = op->lo + (op->hi - op->lo) * (p + 0.37) / 9.0;
            expect_close(op->name, "dy f'(x)", x, tensor_map_host(op->d_map, 1.0, x, 0, 0),
                         central(op->map, 0, x, 0));
            expect_close(op->name, "2 dy f'(x)", x, tensor_map_host(op->d_map, 2.0, x, 0, 0),
                         2 * central(op->map, 0, x, 0));
        }
    }
    for (size_t i = 0; i < tensor_n_binary; i++) {
        const tensor_op *op = &tensor_binary_ops[i];
        if (op->d_map < 0)
            continue;
        for (int p = 0; p < 9; p++)
            for (int q = 0; q < 9; q++) {
                double a = op->lo + (op->hi - op->lo) * (p + 0.37) / 9.0;
                double b = op->b_lo + (op->b_hi - op->b_lo) * (q + 0.61) / 9.0;
                /* mod jumps where a / b crosses an integer; the extremes where a meets b. */
                if (op->map == TM_MOD && fabs(a / b - round(a / b)) < 1e-3)
                    continue;
                expect_close(op->name, "da", a, tensor_map_host(op->d_map, 1.0, a, b, 0),
                             central(op->map, 0, a, b));
                expect_close(op->name, "db", b, tensor_map_host(op->db_map, 1.0, a, b, 0),
                             central(op->map, 1, a, b));
            }
    }
}

/* ---- bad inputs: clear errors, and the runtime goes on ---- */

static kp_status add(kp_tensor a, kp_tensor b, kp_tensor y)
{
    return kp_add(rt, a, b, y);
}

static void expect_error(kp_status st, kp_status want, const char *part1, const char *part2)
{
    assert_int_equal(st, want);
    const char *msg = kp_last_error(rt);
    if (!strstr(msg, part1) || (part2 && !strstr(msg, part2)))
        fail_msg("message \"%s\" lacks \"%s\"%s%s", msg, part1, part2 ? " or " : "",
                 part2 ? part2 : "");
}

static void test_bad_inputs(void **state)
{
    float x[64];
    test_fill(x, 64, 9);
    kp_buffer *b = upload(x, 64), *o = upload(NULL, 64);
    /* Shapes that do not broadcast: both shapes in the message. */
    expect_error(add(kp_tensor_2d(b, KP_F32, 3, 4), kp_tensor_1d(b, KP_F32, 5),
                     kp_tensor_2d(o, KP_F32, 3, 4)),
                 KP_ERR_INVALID_ARG, "a [3, 4] and b [5] do not broadcast together", NULL);
    expect_error(add(kp_tensor_2d(b, KP_F32, 3, 4), kp_tensor_1d(b, KP_F32, 4),
                     kp_tensor_2d(o, KP_F32, 3, 5)),
                 KP_ERR_INVALID_ARG, "a: shape [3, 4] does not broadcast to [3, 5]", NULL);
    /* A wrong dtype, an output overlapping an input in part, a rank past 8. */
    expect_error(
        add(kp_tensor_1d(b, KP_I32, 4), kp_tensor_1d(b, KP_F32, 4), kp_tensor_1d(o, KP_F32, 4)),
        KP_ERR_INVALID_ARG, "dtype i32 is not accepted", NULL);
    kp_tensor shifted = kp_tensor_1d(b, KP_F32, 8);
    shifted.offset = 1;
    expect_error(add(kp_tensor_1d(b, KP_F32, 8), kp_tensor_1d(b, KP_F32, 8), shifted),
                 KP_ERR_INVALID_ARG, "overlaps argument", NULL);
    kp_tensor nine = kp_tensor_1d(b, KP_F32, 1);
    nine.rank = 9;
    expect_error(add(nine, kp_tensor_1d(b, KP_F32, 1), kp_tensor_1d(o, KP_F32, 1)),
                 KP_ERR_INVALID_ARG, "rank 9 is outside 0..8", NULL);
    expect_error(kp_sum(rt, kp_tensor_2d(b, KP_F32, 4, 8), kp_tensor_1d(o, KP_F32, 5), KP_AXIS(0)),
                 KP_ERR_INVALID_ARG, "y: shape [5], but x [4, 8] reduced over axes 0x1", NULL);
    expect_error(
        kp_tensor_unary(rt, "nosuchop", kp_tensor_1d(b, KP_F32, 4), kp_tensor_1d(o, KP_F32, 4)),
        KP_ERR_NOT_FOUND, "tensor.nosuchop", NULL);
    /* In place, y = a + b with y a's very view, is allowed and right; then the runtime goes on.
     * (A b inside y would be refused: its element is rewritten while others read it.) */
    const float half = 0.5f;
    kp_buffer *c = upload(&half, 1);
    expect_error(add(kp_tensor_1d(b, KP_F32, 32), kp_tensor_nd(b, KP_F32, 0, NULL),
                     kp_tensor_1d(b, KP_F32, 32)),
                 KP_ERR_INVALID_ARG, "overlaps argument \"b\"", NULL);
    assert_int_equal(add(kp_tensor_1d(b, KP_F32, 32), kp_tensor_nd(c, KP_F32, 0, NULL),
                         kp_tensor_1d(b, KP_F32, 32)),
                     KP_OK);
    float got[64];
    download(b, got, 64);
    for (int i = 0; i < 64; i++)
        assert_true(got[i] == (i < 32 ? x[i] + 0.5f : x[i]));
    kp_buffer_destroy(rt, b);
    kp_buffer_destroy(rt, c);
    kp_buffer_destroy(rt, o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradients_match_finite_differences),
        cmocka_unit_test(test_verify_every_kernel),
        cmocka_unit_test(test_verify_gpu_routes),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_random_matches_host),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
