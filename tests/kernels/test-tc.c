/* SPDX-License-Identifier: Apache-2.0 */
/* The tc plugin where there are no tensor cores (PoCL, CI): tc.gemm says so and names the device,
 * bad arguments are named first, the host reference rounds as the tensor cores do, and a
 * manifest that routes blas.gemm through tc.gemm falls back to FP32 with one warning. (The
 * kernel itself runs on the GPU machine: scripts/gpu/tc.sh.) */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../test-util.h"
#include "kernelport/ops/tc.h"

static kp_runtime *open_runtime(const char *device, const char *manifest, test_log *log)
{
    kp_runtime_options o = test_options(test_build_path("lib/kernelport/plugins"), device, log);
    o.log_level = KP_LOG_INFO;
    o.manifest_path = manifest;
    kp_runtime *rt = NULL;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    return rt;
}

static kp_kernel *find(kp_runtime *rt, const char *name)
{
    kp_kernel *k = NULL;
    assert_int_equal(kp_kernel_find(rt, name, &k), KP_OK);
    return k;
}

/* C = op(A) op(B) of an m x k and a k x n problem in `prec`, on rt; returns C (malloc'ed) or
 * NULL with *st set when the launch fails. */
static float *gemm(kp_runtime *rt, const char *kernel, const float *a, const float *b, int64_t m,
                   int64_t n, int64_t k, int prec, kp_status *st)
{
    kp_buffer *da, *db, *dc;
    assert_int_equal(kp_buffer_create(rt, (size_t)(m * k) * 4, &da), KP_OK);
    assert_int_equal(kp_buffer_create(rt, (size_t)(k * n) * 4, &db), KP_OK);
    assert_int_equal(kp_buffer_create(rt, (size_t)(m * n) * 4, &dc), KP_OK);
    assert_int_equal(kp_buffer_write(rt, da, 0, (size_t)(m * k) * 4, a), KP_OK);
    assert_int_equal(kp_buffer_write(rt, db, 0, (size_t)(k * n) * 4, b), KP_OK);
    kp_arg args[] = {KP_ARG_TENSOR("A", kp_tensor_2d(da, KP_F32, m, k)),
                     KP_ARG_TENSOR("B", kp_tensor_2d(db, KP_F32, k, n)),
                     KP_ARG_TENSOR("C", kp_tensor_2d(dc, KP_F32, m, n)),
                     KP_ARG_INT("precision", prec)};
    size_t n_args = prec < 0 ? 3 : 4;
    float *c = malloc((size_t)(m * n) * 4);
    assert_non_null(c);
    *st = kp_kernel_launch(rt, find(rt, kernel), args, n_args, NULL);
    if (*st == KP_OK)
        assert_int_equal(kp_buffer_read(rt, dc, 0, (size_t)(m * n) * 4, c), KP_OK);
    kp_buffer_destroy(rt, da);
    kp_buffer_destroy(rt, db);
    kp_buffer_destroy(rt, dc);
    if (*st != KP_OK) {
        free(c);
        return NULL;
    }
    return c;
}

/* On PoCL: KP_ERR_UNSUPPORTED naming the device, never a build (PoCL's LLVM aborts on PTX); the
 * runtime goes on working; `kernelport verify` counts it as skipped. */
static void test_unsupported(void **state)
{
    (void)state;
    kp_runtime *rt = open_runtime(test_device(), NULL, NULL);
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1};
    kp_status st;
    assert_null(gemm(rt, "tc.gemm", a, b, 2, 2, 3, KP_TC_TF32, &st));
    assert_int_equal(st, KP_ERR_UNSUPPORTED);
    kp_device_info d = {.struct_size = sizeof d};
    assert_int_equal(kp_runtime_device(rt, &d, NULL), KP_OK);
    assert_non_null(strstr(kp_last_error(rt), "compute capability 8.0"));
    assert_non_null(strstr(kp_last_error(rt), d.name));
    float *c = gemm(rt, "blas.gemm", a, b, 2, 2, 3, -1, &st);
    assert_int_equal(st, KP_OK);
    assert_float_equal(c[0], 1 * 1 + 2 * 0 + 3 * 1, 0);
    assert_float_equal(c[3], 4 * 0 + 5 * 1 + 6 * 1, 0);
    free(c);
    kp_runtime_destroy(rt);
}

/* Argument errors come before the device test, each naming its argument. */
static void test_bad_arguments(void **state)
{
    (void)state;
    kp_runtime *rt = open_runtime(test_device(), NULL, NULL);
    float a[6] = {0}, b[6] = {0};
    kp_status st;
    assert_null(gemm(rt, "tc.gemm", a, b, 2, 2, 3, 7, &st));
    assert_int_equal(st, KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "precision: 7 is none of"));

    kp_buffer *ba, *bb, *bc;
    assert_int_equal(kp_buffer_create(rt, 64 * 4, &ba), KP_OK);
    assert_int_equal(kp_buffer_create(rt, 64 * 4, &bb), KP_OK);
    assert_int_equal(kp_buffer_create(rt, 64 * 4, &bc), KP_OK);
    kp_arg args[] = {KP_ARG_TENSOR("A", kp_tensor_2d(ba, KP_F32, 2, 3)),
                     KP_ARG_TENSOR("B", kp_tensor_2d(bb, KP_F32, 4, 2)),
                     KP_ARG_TENSOR("C", kp_tensor_2d(bc, KP_F32, 2, 2))};
    assert_int_equal(kp_kernel_launch(rt, find(rt, "tc.gemm"), args, 3, NULL), KP_ERR_INVALID_ARG);
    assert_non_null(
        strstr(kp_last_error(rt), "B: op(B) must be [K, N] = [3, 2], got shape [4, 2]"));
    kp_tensor strided = kp_tensor_2d(ba, KP_F32, 2, 3);
    strided.strides[0] = 6;
    strided.strides[1] = 2;
    args[0] = KP_ARG_TENSOR("A", strided);
    args[1] = KP_ARG_TENSOR("B", kp_tensor_2d(bb, KP_F32, 3, 2));
    assert_int_equal(kp_kernel_launch(rt, find(rt, "tc.gemm"), args, 3, NULL), KP_ERR_UNSUPPORTED);
    assert_non_null(strstr(kp_last_error(rt), "A: strides [6, 2]"));
    /* Rows of C one element apart: work-items would write the same elements (the core says so). */
    kp_tensor overlapping = kp_tensor_2d(bc, KP_F32, 2, 2);
    overlapping.strides[0] = 1;
    args[0] = KP_ARG_TENSOR("A", kp_tensor_2d(ba, KP_F32, 2, 3));
    args[2] = KP_ARG_TENSOR("C", overlapping);
    assert_int_equal(kp_kernel_launch(rt, find(rt, "tc.gemm"), args, 3, NULL), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "f32[2, 2] strides [1, 1]: the output's elements "
                                              "would overlap"));
    /* K = 2^32 from broadcast operands: no memory, but more than the kernel's int counts. */
    kp_tensor wide_a = kp_tensor_2d(ba, KP_F32, 2, (int64_t)1 << 32),
              wide_b = kp_tensor_2d(bb, KP_F32, (int64_t)1 << 32, 2);
    wide_a.strides[0] = 1;
    wide_a.strides[1] = wide_b.strides[0] = 0;
    args[0] = KP_ARG_TENSOR("A", wide_a);
    args[1] = KP_ARG_TENSOR("B", wide_b);
    args[2] = KP_ARG_TENSOR("C", kp_tensor_2d(bc, KP_F32, 2, 2));
    assert_int_equal(kp_kernel_launch(rt, find(rt, "tc.gemm"), args, 3, NULL), KP_ERR_UNSUPPORTED);
    assert_string_equal(kp_last_error(rt), "kernel tc.gemm: A: views reaching beyond 2^31 elements "
                                           "are not supported");
    args[1] = KP_ARG_TENSOR("B", kp_tensor_2d(bb, KP_F32, 3, 2));
    /* f16 tensors: A and B alike, and only in precision f16. */
    args[0] = KP_ARG_TENSOR("A", kp_tensor_2d(ba, KP_F16, 2, 3));
    args[2] = KP_ARG_TENSOR("C", kp_tensor_2d(bc, KP_F32, 2, 2));
    kp_arg half[] = {args[0], args[1], args[2], KP_ARG_INT("precision", KP_TC_F16)};
    assert_int_equal(kp_kernel_launch(rt, find(rt, "tc.gemm"), half, 4, NULL), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "B: dtype f32, but A is f16: A and B must have one"));
    half[1] = KP_ARG_TENSOR("B", kp_tensor_2d(bb, KP_F16, 3, 2));
    half[3] = KP_ARG_INT("precision", KP_TC_BF16);
    assert_int_equal(kp_kernel_launch(rt, find(rt, "tc.gemm"), half, 4, NULL), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "precision: bf16 takes f32 inputs; f16 tensors"));
    half[0] = KP_ARG_TENSOR("A", kp_tensor_2d(ba, KP_BF16, 2, 3));
    half[1] = KP_ARG_TENSOR("B", kp_tensor_2d(bb, KP_BF16, 3, 2));
    half[3] = KP_ARG_INT("precision", KP_TC_F16);
    assert_int_equal(kp_kernel_launch(rt, find(rt, "tc.gemm"), half, 4, NULL), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "bf16 tensors A and B run only with precision 3"));
    half[3] = KP_ARG_INT("precision", KP_TC_BF16);
    assert_int_equal(kp_kernel_launch(rt, find(rt, "tc.gemm"), half, 4, NULL), KP_ERR_UNSUPPORTED);
    half[0] = KP_ARG_TENSOR("A", kp_tensor_2d(ba, KP_F16, 2, 3));
    half[1] = KP_ARG_TENSOR("B", kp_tensor_2d(bb, KP_F16, 3, 2));
    /* C: f32, or the inputs' own 16-bit dtype. */
    half[3] = KP_ARG_INT("precision", KP_TC_F16);
    half[2] = KP_ARG_TENSOR("C", kp_tensor_2d(bc, KP_BF16, 2, 2));
    assert_int_equal(kp_kernel_launch(rt, find(rt, "tc.gemm"), half, 4, NULL), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "C: dtype bf16 with A and B f16"));
    half[2] = KP_ARG_TENSOR("C", kp_tensor_2d(bc, KP_F16, 2, 2));
    assert_int_equal(kp_kernel_launch(rt, find(rt, "tc.gemm"), half, 4, NULL), KP_ERR_UNSUPPORTED);
    /* Valid at last: the device test speaks. */
    half[3] = KP_ARG_INT("precision", KP_TC_F16);
    assert_int_equal(kp_kernel_launch(rt, find(rt, "tc.gemm"), half, 4, NULL), KP_ERR_UNSUPPORTED);
    kp_buffer_destroy(rt, ba);
    kp_buffer_destroy(rt, bb);
    kp_buffer_destroy(rt, bc);
    kp_runtime_destroy(rt);
}

/* The host reference (the host backend runs it) rounds the inputs as each precision does:
 * 1 + 2^-12 is 1 in tf32 and f16 (ties and below round to 1), 1 + 2^-11 + 2^-12 rounds up in
 * tf32 (nearest, ties away) to 1 + 2^-10, bf16 keeps 7 bits, tf32x3 keeps all of them. */
static void test_reference_rounding(void **state)
{
    (void)state;
    kp_runtime *rt = open_runtime("host", NULL, NULL);
    const float small = 1.0f + 0x1p-12f, tie = 1.0f + 0x1p-11f, up = 1.0f + 0x1p-11f + 0x1p-12f;
    const float one = 1.0f;
    const struct {
        float x;
        int prec;
        double want;
    } cases[] = {
        {small, KP_TC_TF32, 1.0},
        {small, KP_TC_F16, 1.0},
        {small, KP_TC_TF32X3, small},
        {tie, KP_TC_TF32, 1.0 + 0x1p-10},
        {tie, KP_TC_F16, 1.0},
        {up, KP_TC_TF32, 1.0 + 0x1p-10},
        {1.0f + 0x1p-8f, KP_TC_BF16, 1.0},
        {1.0f + 0x1p-8f + 0x1p-9f, KP_TC_BF16, 1.0 + 0x1p-7},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kp_status st;
        float *c = gemm(rt, "tc.gemm", &cases[i].x, &one, 1, 1, 1, cases[i].prec, &st);
        assert_int_equal(st, KP_OK);
        if (c[0] != (float)cases[i].want)
            fail_msg("case %zu: precision %d of %.9g gave %.9g, want %.9g", i, cases[i].prec,
                     (double)cases[i].x, (double)c[0], cases[i].want);
        free(c);
    }
    /* A 16-bit C is rounded once from the exact sum: (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20 in f16 is
     * 1 + 2^-9, and with beta 1 over C = 2^-11 the sum 1 + 2^-9 + 2^-11 + 2^-20 rounds up to
     * 1 + 2^-9 + 2^-10 (just above the tie that rounding the product first would leave, which
     * goes to even: 1 + 2^-9). */
    kp_buffer *b;
    assert_int_equal(kp_buffer_create(rt, 8, &b), KP_OK);
    uint16_t h[3] = {kp_half_from_float(1.0f + 0x1p-10f), kp_half_from_float(1.0f + 0x1p-10f),
                     kp_half_from_float(0x1p-11f)};
    assert_int_equal(kp_buffer_write(rt, b, 0, sizeof h, h), KP_OK);
    kp_tensor x = kp_tensor_2d(b, KP_F16, 1, 1), y = x, z = x;
    y.offset = 1;
    z.offset = 2;
    kp_arg args[] = {KP_ARG_TENSOR("A", x), KP_ARG_TENSOR("B", y), KP_ARG_TENSOR("C", z),
                     KP_ARG_INT("precision", KP_TC_F16), KP_ARG_FLOAT("beta", 1.0)};
    assert_int_equal(kp_kernel_launch(rt, find(rt, "tc.gemm"), args, 5, NULL), KP_OK);
    assert_int_equal(kp_buffer_read(rt, b, 0, sizeof h, h), KP_OK);
    assert_float_equal(kp_half_to_float(h[2]), 1.0f + 0x1p-9f + 0x1p-10f, 0);
    args[4] = KP_ARG_FLOAT("beta", 0.0);
    assert_int_equal(kp_kernel_launch(rt, find(rt, "tc.gemm"), args, 5, NULL), KP_OK);
    assert_int_equal(kp_buffer_read(rt, b, 0, sizeof h, h), KP_OK);
    assert_float_equal(kp_half_to_float(h[2]), 1.0f + 0x1p-9f, 0);
    kp_buffer_destroy(rt, b);
    kp_runtime_destroy(rt);
}

/* A manifest asking blas.gemm for tf32 on a device without tensor cores: FP32 results (exact
 * here: small integers), one warning for any number of calls, and explain's path says why. */
static void test_routing_falls_back(void **state)
{
    (void)state;
    const char *manifest = test_write_tmp("route.yaml", "kernelport: 1\n"
                                                        "tuning:\n"
                                                        "  - match: { type: cpu }\n"
                                                        "    kernels:\n"
                                                        "      blas.gemm: { precision: tf32 }\n");
    test_log log;
    kp_runtime *rt = open_runtime("pocl", manifest, &log);
    float a[12], b[12];
    for (int i = 0; i < 12; i++) {
        a[i] = (float)(i % 5) + 0x1p-12f * (float)(i % 3); /* bits that tf32 would round away */
        b[i] = (float)(i % 7) - 3.0f;
    }
    for (int call = 0; call < 3; call++) {
        kp_status st;
        float *c = gemm(rt, "blas.gemm", a, b, 3, 3, 4, -1, &st);
        assert_int_equal(st, KP_OK);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                double want = 0;
                for (int q = 0; q < 4; q++)
                    want += (double)a[i * 4 + q] * b[q * 3 + j];
                assert_float_equal(c[i * 3 + j], want, 1e-6 * (1 + fabs(want)));
            }
        free(c);
    }
    const char *warning = "precision tf32 asked for, but tc.gemm cannot run here";
    const char *first = strstr(log.text, warning);
    assert_non_null(first);
    assert_null(strstr(first + 1, warning));
    char path[512];
    assert_int_equal(kp_kernel_describe(rt, find(rt, "blas.gemm"), path, sizeof path), KP_OK);
    assert_non_null(strstr(path, "CLBlast's FP32 GEMM: the manifest asks for precision tf32"));
    kp_runtime_destroy(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unsupported),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_reference_rounding),
        cmocka_unit_test(test_routing_falls_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
