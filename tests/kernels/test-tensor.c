/* SPDX-License-Identifier: Apache-2.0 */
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
    (void)state;
    return test_runtime(test_build_path("lib/kernelport/plugins"), &rt);
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
        kp_kernel_info info = {.struct_size = sizeof info};
        assert_int_equal(kp_kernel_info_get(k, &info), KP_OK);
        if (!kp_kernel_name_matches("tensor.*", info.name))
            continue;
        kp_status st = kp_kernel_verify(rt, k, NULL, 7, NULL, NULL);
        if (st != KP_OK)
            fail_msg("%s: %s", info.name, kp_last_error(rt));
        verified++;
    }
    /* 18 unary ops and 8 differentiable binary ops with their backward, cmplt, cmpeq and where,
     * 7 reductions and 2 reduction backwards, 5 generators, copy and its backward; softmax and
     * log_softmax with their backward, cross_entropy, mse and bce_with_logits; var, std,
     * logsumexp and the backward of those three and of max and min; mul_sum. */
    assert_int_equal(verified, 18 * 2 + 8 * 2 + 3 + 7 + 2 + 5 + 2 + 4 + 3 + 3 + 5 + 1);
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
            kp_kernel_info info = {.struct_size = sizeof info};
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
         * copy's; var, std, logsumexp and the backward of var, std, max and min; mul_sum. */
        assert_int_equal(verified, 18 + 8 + 7 + 2 + 1 + 3 + 4 + 1);
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
        /* var, std and logsumexp over the same axes: Welford's and the rescaled sums' merges
         * (lanes, chunks) in their fixed order too. */
        static const char *const stats[] = {"tensor.var", "tensor.std", "tensor.logsumexp"};
        for (size_t j = 0; j < 3; j++) {
            run v = r;
            v.kernel = stats[j];
            expect_same_bits(&v);
        }
    }
    /* The backward of var (the mean, then dx) and of max (ties counted, shared) over the first
     * axis: x rounded to halves so that the column maxima tie. */
    for (int i = 0; i < R * C; i++)
        x[i] = 0.5f * floorf(x[i] * 4.0f);
    assert_int_equal(kp_buffer_write(rt, bx, 0, R * C * sizeof *x, x), KP_OK);
    kp_buffer *bdx = upload(NULL, R * C), *bmax = upload(NULL, C);
    assert_int_equal(kp_tensor_reduce(rt, "max", tx, kp_tensor_1d(bmax, KP_F32, C), KP_AXIS(0)),
                     KP_OK);
    run vb = {.kernel = "tensor.var_backward",
              .args = {kp_arg_tensor("dy", kp_tensor_1d(brow, KP_F32, C)), kp_arg_tensor("x", tx),
                       kp_arg_tensor("dx", kp_tensor_2d(bdx, KP_F32, R, C)),
                       kp_arg_int("axes", KP_AXIS(0))},
              .n_args = 4,
              .out = {bdx},
              .out_n = {R * C}};
    expect_same_bits(&vb);
    run mb = vb;
    mb.kernel = "tensor.max_backward";
    mb.args[4] = kp_arg_tensor("y", kp_tensor_1d(bmax, KP_F32, C));
    mb.n_args = 5;
    expect_same_bits(&mb);
    kp_buffer_destroy(rt, bdx);
    kp_buffer_destroy(rt, bmax);
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
    /* A product [R, C] x [C] summed over C (a matrix-vector product) and the same vector's dot
     * with the columns (x^T col, summed over R). */
    run mv = {.kernel = "tensor.mul_sum",
              .args = {kp_arg_tensor("a", tx), kp_arg_tensor("b", kp_tensor_1d(brow, KP_F32, C)),
                       kp_arg_tensor("y", kp_tensor_2d(o2, KP_F32, R, 1))},
              .n_args = 3,
              .out = {o2},
              .out_n = {R}};
    expect_same_bits(&mv);
    run vm = {.kernel = "tensor.mul_sum",
              .args = {kp_arg_tensor("a", tx), kp_arg_tensor("b", kp_tensor_2d(bcol, KP_F32, R, 1)),
                       kp_arg_tensor("y", kp_tensor_1d(o1, KP_F32, C))},
              .n_args = 3,
              .out = {o1},
              .out_n = {C}};
    expect_same_bits(&vm);
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

/* ---- rows: softmax, log_softmax, their backward, and the losses ---- */

static const char *const row_kernels[] = {"tensor.softmax",          "tensor.log_softmax",
                                          "tensor.softmax_backward", "tensor.log_softmax_backward",
                                          "tensor.cross_entropy",    "tensor.mse",
                                          "tensor.bce_with_logits"};

/* Verification on this device as a GPU runs the row kernels (VW 4, aligned float4 blocks; EPL
 * 16: rows of 4099 in 256 lanes) and with blocks of 8 and few columns a lane (EPL 4), rows cached
 * and not, and the pointwise losses at every block width: each code path runs here whatever
 * this device's defaults. */
static void test_rows_verify_at_other_lane_counts(void **state)
{
    static const int64_t vw[] = {4, 8, 16}, epl[] = {16, 4};
    for (size_t i = 0; i < sizeof row_kernels / sizeof row_kernels[0]; i++) {
        kp_kernel *k = find(row_kernels[i]);
        const int rows = i < 5;
        for (size_t e = 0; e < (rows ? 2u : 3u); e++)
            for (int64_t cache = 0; cache < (rows ? 2 : 1); cache++) {
                assert_int_equal(kp_kernel_tunable_set(rt, k, "VW", vw[e]), KP_OK);
                if (rows) {
                    assert_int_equal(kp_kernel_tunable_set(rt, k, "EPL", epl[e]), KP_OK);
                    assert_int_equal(kp_kernel_tunable_set(rt, k, "CACHE", cache), KP_OK);
                }
                kp_status st = kp_kernel_verify(rt, k, NULL, 11, NULL, NULL);
                if (st != KP_OK)
                    fail_msg("%s at VW %lld, CACHE %lld: %s", row_kernels[i], (long long)vw[e],
                             (long long)cache, kp_last_error(rt));
            }
        assert_int_equal(kp_kernel_tuning_reset(rt, k), KP_OK);
    }
}

/* Runs `kernel` four times, at WG 32 then 256 where it is tuned (the row kernels; the loss sums'
 * work-groups are fixed), then uncached (CACHE off), and compares the bits of every output with
 * the first run's. Tuned kernels go through this at this device's lane counts and at a GPU's
 * (VW 4, EPL 16: rows of 4099 in 256 lanes, more than WG 32), each against its own first run. */
static void expect_row_bits(const char *kernel, const kp_arg *args, size_t n_args,
                            kp_buffer *const *out, const size_t *out_n, int n_out, int tuned)
{
    kp_kernel *k = find(kernel);
    for (int gpu_lanes = 0; gpu_lanes < (tuned ? 2 : 1); gpu_lanes++) {
        float *first[3] = {NULL, NULL, NULL};
        for (int attempt = 0; attempt < (tuned ? 5 : 4); attempt++) {
            if (gpu_lanes) {
                assert_int_equal(kp_kernel_tunable_set(rt, k, "VW", 4), KP_OK);
                assert_int_equal(kp_kernel_tunable_set(rt, k, "EPL", 16), KP_OK);
            }
            if (tuned && attempt < 4)
                assert_int_equal(kp_kernel_tunable_set(rt, k, "WG", attempt < 2 ? 32 : 256), KP_OK);
            if (attempt == 4)
                assert_int_equal(kp_kernel_tunable_set(rt, k, "CACHE", 1), KP_OK);
            kp_status st = kp_kernel_launch(rt, k, args, n_args, NULL);
            if (st != KP_OK)
                fail_msg("%s: %s", kernel, kp_last_error(rt));
            for (int o = 0; o < n_out; o++) {
                float *got = malloc(out_n[o] * sizeof *got);
                assert_non_null(got);
                download(out[o], got, out_n[o]);
                if (!first[o]) {
                    first[o] = got;
                    continue;
                }
                if (memcmp(first[o], got, out_n[o] * sizeof *got) != 0)
                    fail_msg("%s: output %d differs at attempt %d (EPL %s)", kernel, o, attempt,
                             gpu_lanes ? "16" : "default");
                free(got);
            }
        }
        for (int o = 0; o < n_out; o++)
            free(first[o]);
        assert_int_equal(kp_kernel_tuning_reset(rt, k), KP_OK);
    }
}

static void test_rows_deterministic(void **state)
{
    /* Rows of 4099 (lanes 16 here, 256 on GPUs) and of 1000 (CE's benchmark width). */
    enum { R = 13, C = 4099, N = 67, K = 1000 };
    float *x = malloc(R * C * sizeof *x), *dy = malloc(R * C * sizeof *dy);
    float *logits = malloc(N * K * sizeof *logits);
    int32_t labels[N];
    assert_non_null(x);
    test_fill(x, R * C, 21);
    test_fill(dy, R * C, 22);
    test_fill(logits, N * K, 23);
    for (int i = 0; i < N; i++)
        labels[i] = i % 7 == 3 ? KP_IGNORE_INDEX : (i * 131) % K;
    kp_buffer *bx = upload(x, R * C), *bdy = upload(dy, R * C), *by = upload(NULL, R * C);
    kp_buffer *bdx = upload(NULL, R * C), *bl = upload(logits, N * K), *bd = upload(NULL, N * K);
    kp_buffer *blab = upload((const float *)labels, N), *bloss = upload(NULL, 1);
    kp_buffer *blosses = upload(NULL, N);
    const kp_tensor tx = kp_tensor_2d(bx, KP_F32, R, C), ty = kp_tensor_2d(by, KP_F32, R, C);
    const kp_tensor tdy = kp_tensor_2d(bdy, KP_F32, R, C), tdx = kp_tensor_2d(bdx, KP_F32, R, C);
    const size_t rc = R * C;
    for (int log_mode = 0; log_mode < 2; log_mode++) {
        const kp_arg fw[] = {kp_arg_tensor("x", tx), kp_arg_tensor("y", ty)};
        expect_row_bits(log_mode ? "tensor.log_softmax" : "tensor.softmax", fw, 2, &by, &rc, 1, 1);
        const kp_arg bw[] = {kp_arg_tensor("dy", tdy), kp_arg_tensor("y", ty),
                             kp_arg_tensor("dx", tdx)};
        expect_row_bits(log_mode ? "tensor.log_softmax_backward" : "tensor.softmax_backward", bw, 3,
                        &bdx, &rc, 1, 1);
    }
    const kp_arg ce[] = {kp_arg_tensor("logits", kp_tensor_2d(bl, KP_F32, N, K)),
                         kp_arg_tensor("labels", kp_tensor_1d(blab, KP_I32, N)),
                         kp_arg_tensor("loss", kp_tensor_nd(bloss, KP_F32, 0, NULL)),
                         kp_arg_tensor("dlogits", kp_tensor_2d(bd, KP_F32, N, K)),
                         kp_arg_tensor("losses", kp_tensor_1d(blosses, KP_F32, N)),
                         kp_arg_float("label_smoothing", 0.1)};
    kp_buffer *const ce_out[] = {bloss, bd, blosses};
    const size_t ce_n[] = {1, N * K, N};
    expect_row_bits("tensor.cross_entropy", ce, 6, ce_out, ce_n, 3, 1);
    /* 53,287 elements in 14 chunks, and a broadcast b. */
    const kp_arg mse[] = {kp_arg_tensor("a", tx), kp_arg_tensor("b", kp_tensor_1d(bdy, KP_F32, C)),
                          kp_arg_tensor("loss", kp_tensor_nd(bloss, KP_F32, 0, NULL)),
                          kp_arg_tensor("da", tdx)};
    kp_buffer *const pw_out[] = {bloss, bdx};
    const size_t pw_n[] = {1, rc};
    expect_row_bits("tensor.mse", mse, 4, pw_out, pw_n, 2, 0);
    const kp_arg bce[] = {kp_arg_tensor("logits", tx), kp_arg_tensor("targets", tdy),
                          kp_arg_tensor("loss", kp_tensor_nd(bloss, KP_F32, 0, NULL)),
                          kp_arg_tensor("dlogits", tdx)};
    expect_row_bits("tensor.bce_with_logits", bce, 4, pw_out, pw_n, 2, 0);
    kp_buffer *bufs[] = {bx, bdy, by, bdx, bl, bd, blab, bloss, blosses};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        kp_buffer_destroy(rt, bufs[i]);
    free(x);
    free(dy);
    free(logits);
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

/* ---- var, std, logsumexp, and the backward of reductions ---- */

enum { SX0 = 3, SX1 = 4, SX2 = 5, SN = SX0 * SX1 * SX2 };
static const char *const stat_names[] = {"var", "std", "logsumexp", "max", "min"};

/* sum over j of dy[j] f(x[., j, .]), f one of stat_names reduced over dimensions 0 and 2 of x
 * [3, 4, 5], in double (var and std with correction 1). */
static double stat_objective(int which, const double *x, const double *dy)
{
    double total = 0;
    for (int j = 0; j < SX1; j++) {
        double sum = 0, m = which == 4 ? INFINITY : -INFINITY, ss = 0;
        for (int i = 0; i < SX0; i++)
            for (int k = 0; k < SX2; k++) {
                const double v = x[(i * SX1 + j) * SX2 + k];
                sum += v;
                m = which == 4 ? fmin(m, v) : fmax(m, v);
            }
        const double n = SX0 * SX2, mean = sum / n;
        for (int i = 0; i < SX0; i++)
            for (int k = 0; k < SX2; k++) {
                const double v = x[(i * SX1 + j) * SX2 + k];
                ss += which == 2 ? exp(v - m) : (v - mean) * (v - mean);
            }
        const double f = which == 0   ? ss / (n - 1)
                         : which == 1 ? sqrt(ss / (n - 1))
                         : which == 2 ? m + log(ss)
                                      : m;
        total += dy[j] * f;
    }
    return total;
}

/* Each reduction backward (x [3, 4, 5] over dimensions 0 and 2, dy [4]) on the device against
 * central differences in double of sum(dy f(x)), y taken from the device's forward. */
static void test_stats_gradients_match_finite_differences(void **state)
{
    float xf[SN], dyf[SX1], got[SN];
    double x[SN], dy[SX1];
    test_fill(xf, SN, 51);
    test_fill(dyf, SX1, 52);
    for (int i = 0; i < SN; i++)
        x[i] = xf[i];
    for (int j = 0; j < SX1; j++)
        dy[j] = dyf[j];
    kp_buffer *bx = upload(xf, SN), *bdy = upload(dyf, SX1), *by = upload(NULL, SX1);
    kp_buffer *bdx = upload(NULL, SN);
    const kp_tensor tx = kp_tensor_3d(bx, KP_F32, SX0, SX1, SX2);
    const kp_tensor tdx = kp_tensor_3d(bdx, KP_F32, SX0, SX1, SX2);
    const kp_tensor tdy = kp_tensor_1d(bdy, KP_F32, SX1), ty = kp_tensor_1d(by, KP_F32, SX1);
    const int64_t axes = KP_AXIS(0) | KP_AXIS(2);
    for (int which = 0; which < 5; which++) {
        kp_status st;
        if (which == 0) {
            st = kp_var_backward(rt, tdy, tx, tdx, axes, 1.0);
        } else {
            st = which == 1   ? kp_std(rt, tx, ty, axes, 1.0)
                 : which == 2 ? kp_logsumexp(rt, tx, ty, axes)
                              : kp_tensor_reduce(rt, stat_names[which], tx, ty, axes);
            if (st == KP_OK)
                st = kp_tensor_reduce_backward(rt, stat_names[which], tdy, tx, ty, tdx, axes, 1.0);
        }
        if (st != KP_OK)
            fail_msg("%s_backward: %s", stat_names[which], kp_last_error(rt));
        download(bdx, got, SN);
        for (int i = 0; i < SN; i++) {
            const double h = 1e-5, keep = x[i];
            x[i] = keep + h;
            const double up = stat_objective(which, x, dy);
            x[i] = keep - h;
            const double down = stat_objective(which, x, dy);
            x[i] = keep;
            const double want = (up - down) / (2 * h);
            if (fabs(got[i] - want) > 1e-6 + 1e-5 * fabs(want))
                fail_msg("%s_backward: element %d is %.9g, finite differences give %.9g",
                         stat_names[which], i, got[i], want);
        }
    }
    kp_buffer *bufs[] = {bx, bdy, by, bdx};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        kp_buffer_destroy(rt, bufs[i]);
}

/* Whether a and b are the same value, NaN matching NaN. */
static int same_value(float a, float b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

/*
 * The special values on every route (REDUCE 1: one work-item per output; 2: lanes, whose idle
 * lanes hold empty states; 3: chunks of one term each, every term a merge): logsumexp of all
 * -inf is -inf, with a +inf (or two) +inf, with a NaN NaN, and -inf terms add nothing; var with
 * N - correction 0 is NaN (N 1) or inf (N 2, correction 2), NaN where the terms are equal, and 0
 * for equal terms with correction 1; max's and min's backward share dy evenly among tied
 * extremes, and a NaN extreme's among x's NaNs.
 */
static void test_stats_edge_cases(void **state)
{
    enum { C = 300 };
    float x[4 * C], y[4], want[4], d[4 * C];
    test_fill(x, 4 * C, 61);
    /* Row 3's -inf: the first two terms (two empty chunks merge first), every 32nd (lanes 0
     * and 32 hold nothing else and meet first in the tree) and every third. */
    for (int c = 0; c < C; c++) {
        x[c] = -INFINITY;
        if (c < 2 || c % 32 == 0 || c % 3 == 0)
            x[3 * C + c] = -INFINITY;
    }
    x[C + 100] = x[C + 200] = INFINITY;
    x[2 * C + 250] = NAN;
    double m = -INFINITY, s = 0;
    for (int c = 0; c < C; c++)
        m = x[3 * C + c] > m ? x[3 * C + c] : m;
    for (int c = 0; c < C; c++)
        s += exp(x[3 * C + c] - m);
    want[0] = -INFINITY, want[1] = INFINITY, want[2] = NAN, want[3] = (float)(m + log(s));
    /* var: [1.5, 1.5] (correction 2: 0 / 0), [1, 2] (1 / 0), [1.5, 1.5] with correction 1. */
    const float v[6] = {1.5f, 1.5f, 1.0f, 2.0f, 1.5f, 1.5f};
    const float vwant[3] = {NAN, INFINITY, 0.0f};
    kp_buffer *bx = upload(x, 4 * C), *by = upload(NULL, 4), *bv = upload(v, 6);
    kp_kernel *lse = find("tensor.logsumexp"), *var = find("tensor.var");
    for (int64_t route = 1; route <= 3; route++) {
        assert_int_equal(kp_kernel_tunable_set(rt, lse, "REDUCE", route), KP_OK);
        assert_int_equal(kp_kernel_tunable_set(rt, var, "REDUCE", route), KP_OK);
        assert_int_equal(kp_logsumexp(rt, kp_tensor_2d(bx, KP_F32, 4, C),
                                      kp_tensor_1d(by, KP_F32, 4), KP_AXIS(1)),
                         KP_OK);
        download(by, y, 4);
        for (int r = 0; r < 4; r++)
            if (!(same_value(y[r], want[r]) ||
                  (r == 3 && fabsf(y[r] - want[r]) <= 1e-5f * fabsf(want[r]))))
                fail_msg("logsumexp row %d at REDUCE %d: %g, not %g", r, (int)route, y[r], want[r]);
        /* One term of correction 1: 0 / 0. */
        assert_int_equal(kp_var(rt, kp_tensor_2d(bv, KP_F32, 2, 1), kp_tensor_1d(by, KP_F32, 2),
                                KP_AXIS(1), 1.0),
                         KP_OK);
        download(by, y, 2);
        assert_true(isnan(y[0]) && isnan(y[1]));
        assert_int_equal(kp_var(rt, kp_tensor_2d(bv, KP_F32, 2, 2), kp_tensor_1d(by, KP_F32, 2),
                                KP_AXIS(1), 2.0),
                         KP_OK);
        download(by, y, 2);
        for (int r = 0; r < 2; r++)
            if (!same_value(y[r], vwant[r]))
                fail_msg("var row %d at REDUCE %d: %g, not %g", r, (int)route, y[r], vwant[r]);
        assert_int_equal(kp_var(rt, kp_tensor_2d(bv, KP_F32, 3, 2), kp_tensor_1d(by, KP_F32, 3),
                                KP_AXIS(1), 1.0),
                         KP_OK);
        download(by, y, 3);
        assert_true(y[2] == 0.0f);
    }
    assert_int_equal(kp_kernel_tuning_reset(rt, lse), KP_OK);
    assert_int_equal(kp_kernel_tuning_reset(rt, var), KP_OK);
    /* Ties: rows [1, 3, 3, 2], [3, 3, 3, 0], [NaN, 1, NaN, 5]; dy [2, 3, 4]. */
    const float t[12] = {1, 3, 3, 2, 3, 3, 3, 0, NAN, 1, NAN, 5}, tdy[3] = {2, 3, 4};
    const float twant[12] = {0, 1, 1, 0, 1, 1, 1, 0, 2, 0, 2, 0};
    kp_buffer *bt = upload(t, 12), *bdy = upload(tdy, 3), *bm = upload(NULL, 3);
    kp_buffer *bd = upload(NULL, 12);
    const kp_tensor tt = kp_tensor_2d(bt, KP_F32, 3, 4), tm = kp_tensor_1d(bm, KP_F32, 3);
    assert_int_equal(kp_tensor_reduce(rt, "max", tt, tm, KP_AXIS(1)), KP_OK);
    assert_int_equal(kp_max_backward(rt, kp_tensor_1d(bdy, KP_F32, 3), tt, tm,
                                     kp_tensor_2d(bd, KP_F32, 3, 4), KP_AXIS(1)),
                     KP_OK);
    download(bd, d, 12);
    for (int i = 0; i < 12; i++)
        if (d[i] != twant[i])
            fail_msg("max_backward element %d: %g, not %g", i, d[i], twant[i]);
    kp_buffer *bufs[] = {bx, by, bv, bt, bdy, bm, bd};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        kp_buffer_destroy(rt, bufs[i]);
}

/* Softmax or log_softmax of one row, in double. */
static void softmax_row(const double *x, int n, int log_mode, double *y)
{
    double m = -INFINITY, s = 0;
    for (int c = 0; c < n; c++)
        m = x[c] > m ? x[c] : m;
    for (int c = 0; c < n; c++)
        s += exp(x[c] - m);
    for (int c = 0; c < n; c++)
        y[c] = log_mode ? x[c] - m - log(s) : exp(x[c] - m) / s;
}

/* The scalar whose gradient each row kernel computes, in double, at x (rows of C): the softmax
 * family's sum(dy * f(x)); cross-entropy's mean loss (labels, ignore -100, smoothing e); the
 * pointwise losses' mean of x against t. */
static double row_objective(int which, const double *x, int rows, int C, const double *dy,
                            const int32_t *labels, double e)
{
    double total = 0, y[16];
    int count = 0;
    for (int r = 0; r < rows; r++) {
        const double *xr = x + r * C;
        if (which < 2) {
            softmax_row(xr, C, which, y);
            for (int c = 0; c < C; c++)
                total += dy[r * C + c] * y[c];
        } else if (which == 2) {
            if (labels[r] == -100)
                continue;
            count++;
            softmax_row(xr, C, 1, y);
            double smooth = 0;
            for (int c = 0; c < C; c++)
                smooth -= y[c];
            total += -(1 - e) * y[labels[r]] + e / C * smooth;
        } else {
            for (int c = 0; c < C; c++) {
                const double v = xr[c], t = dy[r * C + c];
                total +=
                    which == 3 ? (v - t) * (v - t) : (v > 0 ? v : 0) - v * t + log1p(exp(-fabs(v)));
            }
        }
    }
    return which == 2 ? total / count : which > 2 ? total / (rows * C) : total;
}

/* Each row kernel's gradient on the device against central differences of its objective in
 * double: softmax_backward and log_softmax_backward (given the forward's y), cross_entropy's
 * dlogits with ignored rows and label smoothing, mse's da, bce_with_logits' dlogits. */
static void test_rows_gradients_match_finite_differences(void **state)
{
    enum { R = 5, C = 7 };
    float xf[R * C], dyf[R * C], yf[R * C], got[R * C];
    double x[R * C], dy[R * C], y[C];
    const int32_t labels[R] = {3, -100, 0, 6, 2};
    test_fill(xf, R * C, 31);
    test_fill(dyf, R * C, 32);
    for (int i = 0; i < R * C; i++) {
        xf[i] *= 3.0f;
        x[i] = xf[i];
        dy[i] = dyf[i];
    }
    kp_buffer *bx = upload(xf, R * C), *bdy = upload(dyf, R * C), *by = upload(NULL, R * C);
    kp_buffer *bdx = upload(NULL, R * C), *blab = upload((const float *)labels, R);
    kp_buffer *bloss = upload(NULL, 1);
    const kp_tensor tx = kp_tensor_2d(bx, KP_F32, R, C), tdx = kp_tensor_2d(bdx, KP_F32, R, C);
    const kp_tensor tdy = kp_tensor_2d(bdy, KP_F32, R, C), ty = kp_tensor_2d(by, KP_F32, R, C);
    const kp_tensor loss = kp_tensor_nd(bloss, KP_F32, 0, NULL);
    static const char *const names[] = {"softmax_backward", "log_softmax_backward", "cross_entropy",
                                        "mse", "bce_with_logits"};
    for (int which = 0; which < 5; which++) {
        kp_status st;
        if (which < 2) {
            for (int r = 0; r < R; r++) {
                softmax_row(x + r * C, C, which, y);
                for (int c = 0; c < C; c++)
                    yf[r * C + c] = (float)y[c];
            }
            assert_int_equal(kp_buffer_write(rt, by, 0, sizeof yf, yf), KP_OK);
            st = which ? kp_log_softmax_backward(rt, tdy, ty, tdx)
                       : kp_softmax_backward(rt, tdy, ty, tdx);
        } else if (which == 2) {
            st = kp_cross_entropy(rt, tx, kp_tensor_1d(blab, KP_I32, R), loss, &tdx, NULL,
                                  KP_IGNORE_INDEX, 0.1);
        } else {
            /* The second operand: dy as the target (BCE's in 0 .. 1). */
            for (int i = 0; i < R * C; i++)
                yf[i] = which == 3 ? dyf[i] : 0.5f + 0.5f * dyf[i];
            assert_int_equal(kp_buffer_write(rt, by, 0, sizeof yf, yf), KP_OK);
            for (int i = 0; i < R * C; i++)
                dy[i] = yf[i];
            st = which == 3 ? kp_mse(rt, tx, ty, loss, &tdx)
                            : kp_bce_with_logits(rt, tx, ty, loss, &tdx);
        }
        if (st != KP_OK)
            fail_msg("%s: %s", names[which], kp_last_error(rt));
        download(bdx, got, R * C);
        for (int i = 0; i < R * C; i++) {
            const double h = 1e-5, keep = x[i];
            x[i] = keep + h;
            const double up = row_objective(which, x, R, C, dy, labels, 0.1);
            x[i] = keep - h;
            const double down = row_objective(which, x, R, C, dy, labels, 0.1);
            x[i] = keep;
            const double want = (up - down) / (2 * h);
            if (fabs(got[i] - want) > 1e-6 + 1e-5 * fabs(want))
                fail_msg("%s: element %d is %.9g, finite differences give %.9g", names[which], i,
                         got[i], want);
        }
    }
    kp_buffer *bufs[] = {bx, bdy, by, bdx, blab, bloss};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        kp_buffer_destroy(rt, bufs[i]);
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

/* Row kernels' bad inputs and edge cases: a label outside 0 .. C - 1 makes its row's loss and
 * gradient NaN (a GPU cannot raise as PyTorch does) and leaves the other rows alone; every row
 * ignored gives NaN (0 / 0, as PyTorch) and a zero gradient; wrong shapes and values are refused
 * naming the argument; in-place softmax works; empty rows do nothing. */
static void test_rows_bad_inputs(void **state)
{
    enum { N = 4, C = 5 };
    float x[N * C], d[N * C], losses[N], loss;
    test_fill(x, N * C, 41);
    int32_t labels[N] = {1, C, 4, -1};
    kp_buffer *bx = upload(x, N * C), *bd = upload(NULL, N * C), *bl = upload(NULL, N);
    kp_buffer *blab = upload((const float *)labels, N), *bloss = upload(NULL, 1);
    const kp_tensor tx = kp_tensor_2d(bx, KP_F32, N, C), td = kp_tensor_2d(bd, KP_F32, N, C);
    const kp_tensor tl = kp_tensor_1d(bl, KP_F32, N), tlab = kp_tensor_1d(blab, KP_I32, N);
    const kp_tensor tloss = kp_tensor_nd(bloss, KP_F32, 0, NULL);
    assert_int_equal(kp_cross_entropy(rt, tx, tlab, tloss, &td, &tl, KP_IGNORE_INDEX, 0.0), KP_OK);
    download(bloss, &loss, 1);
    download(bl, losses, N);
    download(bd, d, N * C);
    assert_true(isnan(loss));
    for (int r = 0; r < N; r++) {
        const int bad = r % 2 == 1;
        assert_true(isnan(losses[r]) == bad);
        for (int c = 0; c < C; c++)
            assert_true(isnan(d[r * C + c]) == bad);
    }
    /* Every row ignored. */
    const int32_t ignored[N] = {-100, -100, -100, -100};
    assert_int_equal(kp_buffer_write(rt, blab, 0, sizeof ignored, ignored), KP_OK);
    assert_int_equal(kp_cross_entropy(rt, tx, tlab, tloss, &td, &tl, KP_IGNORE_INDEX, 0.0), KP_OK);
    download(bloss, &loss, 1);
    download(bd, d, N * C);
    assert_true(isnan(loss));
    for (int i = 0; i < N * C; i++)
        assert_true(d[i] == 0.0f);
    /* Shapes, dtypes and values. */
    expect_error(kp_cross_entropy(rt, tx, kp_tensor_1d(blab, KP_I32, N - 1), tloss, NULL, NULL,
                                  KP_IGNORE_INDEX, 0.0),
                 KP_ERR_INVALID_ARG, "labels", "[3]");
    expect_error(kp_cross_entropy(rt, tx, kp_tensor_1d(bl, KP_F32, N), tloss, NULL, NULL,
                                  KP_IGNORE_INDEX, 0.0),
                 KP_ERR_INVALID_ARG, "labels", "dtype f32 is not accepted");
    expect_error(kp_cross_entropy(rt, tx, tlab, tl, NULL, NULL, KP_IGNORE_INDEX, 0.0),
                 KP_ERR_INVALID_ARG, "loss", "[4]");
    const kp_tensor td_bad = kp_tensor_2d(bd, KP_F32, N, C - 1);
    expect_error(kp_cross_entropy(rt, tx, tlab, tloss, &td_bad, NULL, KP_IGNORE_INDEX, 0.0),
                 KP_ERR_INVALID_ARG, "dlogits", "[4, 4]");
    expect_error(kp_cross_entropy(rt, tx, tlab, tloss, NULL, NULL, KP_IGNORE_INDEX, 1.5),
                 KP_ERR_INVALID_ARG, "label_smoothing: 1.5 is not in 0 .. 1", NULL);
    expect_error(kp_cross_entropy(rt, kp_tensor_nd(bx, KP_F32, 0, NULL), tlab, tloss, NULL, NULL,
                                  KP_IGNORE_INDEX, 0.0),
                 KP_ERR_INVALID_ARG, "logits: rank 0", NULL);
    expect_error(kp_softmax(rt, tx, kp_tensor_2d(bd, KP_F32, C, N)), KP_ERR_INVALID_ARG, "y",
                 "[5, 4]");
    expect_error(kp_softmax_backward(rt, tx, kp_tensor_1d(bx, KP_F32, C), td), KP_ERR_INVALID_ARG,
                 "y", "[5]");
    expect_error(kp_mse(rt, tx, kp_tensor_1d(bd, KP_F32, N), tloss, NULL), KP_ERR_INVALID_ARG,
                 "a [4, 5] and b [4] do not broadcast together", NULL);
    const kp_tensor col = kp_tensor_2d(bx, KP_F32, N, 1), dcol = kp_tensor_2d(bd, KP_F32, N, 1);
    expect_error(kp_mse(rt, col, tx, tloss, &dcol), KP_ERR_UNSUPPORTED,
                 "da: a [4, 1] is broadcast to [4, 5]", NULL);
    expect_error(kp_bce_with_logits(rt, tx, kp_tensor_1d(bd, KP_F32, C), tloss, NULL),
                 KP_ERR_INVALID_ARG, "targets", "[5]");
    /* In place: softmax into x's own view gives what it gives elsewhere. */
    float y[N * C], z[N * C];
    assert_int_equal(kp_softmax(rt, tx, td), KP_OK);
    download(bd, y, N * C);
    assert_int_equal(kp_softmax(rt, tx, tx), KP_OK);
    download(bx, z, N * C);
    assert_memory_equal(y, z, sizeof y);
    /* Empty rows, and no rows: nothing to write; a mean over no rows is NaN. */
    assert_int_equal(kp_softmax(rt, kp_tensor_2d(bx, KP_F32, N, 0), kp_tensor_2d(bd, KP_F32, N, 0)),
                     KP_OK);
    assert_int_equal(kp_cross_entropy(rt, kp_tensor_2d(bx, KP_F32, 0, C),
                                      kp_tensor_1d(blab, KP_I32, 0), tloss, NULL, NULL,
                                      KP_IGNORE_INDEX, 0.0),
                     KP_OK);
    download(bloss, &loss, 1);
    assert_true(isnan(loss));
    kp_buffer *bufs[] = {bx, bd, bl, blab, bloss};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        kp_buffer_destroy(rt, bufs[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradients_match_finite_differences),
        cmocka_unit_test(test_stats_gradients_match_finite_differences),
        cmocka_unit_test(test_stats_edge_cases),
        cmocka_unit_test(test_verify_every_kernel),
        cmocka_unit_test(test_verify_gpu_routes),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_random_matches_host),
        cmocka_unit_test(test_rows_verify_at_other_lane_counts),
        cmocka_unit_test(test_rows_deterministic),
        cmocka_unit_test(test_rows_gradients_match_finite_differences),
        cmocka_unit_test(test_rows_bad_inputs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
