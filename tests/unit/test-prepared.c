/* SPDX-License-Identifier: Apache-2.0 */
/* Prepared launches (kp_prepared_*): 10,000 launches of one recorded example.axpy, arguments
 * changed between launches, a destroyed buffer, a tuning change, a kernel whose enqueue cannot be
 * recorded, the host device, and bad arguments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test-util.h"

static kp_runtime *open_runtime(const char *device, test_log *log)
{
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s", test_build_path(KP_TEST_EXAMPLE_PLUGIN_DIR));
    snprintf(b, sizeof b, "%s", test_build_path("test-plugins/nested"));
    static const char *dirs[2];
    dirs[0] = a;
    dirs[1] = b;
    kp_runtime_options o = test_options(NULL, device, log);
    o.plugin_dirs = dirs;
    o.n_plugin_dirs = 2;
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

static kp_buffer *upload(kp_runtime *rt, const float *v, size_t n)
{
    kp_buffer *b = NULL;
    assert_int_equal(kp_buffer_create(rt, n * sizeof *v, &b), KP_OK);
    assert_int_equal(kp_buffer_write(rt, b, 0, n * sizeof *v, v), KP_OK);
    return b;
}

/* Small integers, so sums of thousands of them stay exact in float. */
static void integers(float *v, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++)
        v[i] = (float)((int)((i * 7 + (size_t)seed * 13) % 9) - 4);
}

enum { N = 1009 };

/* y += alpha x launched `times` times: y0 + times * alpha * x, exactly. */
static void expect_axpy(kp_runtime *rt, kp_buffer *by, const float *x, const float *y0, int n,
                        float alpha, int times)
{
    float got[N];
    assert_int_equal(kp_buffer_read(rt, by, 0, (size_t)n * sizeof *got, got), KP_OK);
    for (int i = 0; i < n; i++)
        if (got[i] != y0[i] + (float)times * alpha * x[i])
            fail_msg("element %d is %g, expected %g", i, (double)got[i],
                     (double)(y0[i] + (float)times * alpha * x[i]));
}

/* Logged (debug) when a prepared launch cannot be recorded. */
#define UNRECORDED "prepared launches run its enqueue each time"

static void test_ten_thousand_launches(void **state)
{
    test_log log;
    kp_runtime *rt = open_runtime(test_device(), &log);
    float x[N], y0[N];
    integers(x, N, 1);
    integers(y0, N, 2);
    kp_buffer *bx = upload(rt, x, N), *by = upload(rt, y0, N);
    kp_arg args[] = {KP_ARG_INT("n", N), KP_ARG_FLOAT("alpha", 1.0),
                     KP_ARG_TENSOR("x", kp_tensor_1d(bx, KP_F32, N)),
                     KP_ARG_TENSOR("y", kp_tensor_1d(by, KP_F32, N))};
    kp_prepared *p = NULL;
    assert_int_equal(kp_prepared_create(rt, find(rt, "example.axpy"), args, 4, &p), KP_OK);
    for (int i = 0; i < 10000; i++)
        assert_int_equal(kp_prepared_launch(p, NULL), KP_OK);
    expect_axpy(rt, by, x, y0, N, 1.0f, 10000);
    /* Timed like any launch. */
    kp_event *ev = NULL;
    assert_int_equal(kp_prepared_launch(p, &ev), KP_OK);
    double s = -1;
    assert_int_equal(kp_event_elapsed(rt, ev, &s), KP_OK);
    assert_true(s >= 0);
    kp_event_destroy(rt, ev);
    expect_axpy(rt, by, x, y0, N, 1.0f, 10001);
    assert_null(strstr(log.text, UNRECORDED));
    kp_prepared_destroy(p);
    kp_runtime_destroy(rt);
}

/* A scalar, a view and a buffer changed between launches: each launch uses the values bound. */
static void test_changed_arguments(void **state)
{
    kp_runtime *rt = open_runtime(test_device(), NULL);
    float x[N], y0[N], x2[N];
    integers(x, N, 3);
    integers(y0, N, 4);
    integers(x2, N, 5);
    kp_buffer *bx = upload(rt, x, N), *by = upload(rt, y0, N), *bx2 = upload(rt, x2, N);
    kp_arg args[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("x", kp_tensor_1d(bx, KP_F32, N)),
                     KP_ARG_TENSOR("y", kp_tensor_1d(by, KP_F32, N))};
    kp_prepared *p = NULL;
    assert_int_equal(kp_prepared_create(rt, find(rt, "example.axpy"), args, 3, &p), KP_OK);
    assert_int_equal(kp_prepared_launch(p, NULL), KP_OK); /* alpha's default, 1 */
    assert_int_equal(kp_prepared_set_float(p, "alpha", 2.0), KP_OK);
    assert_int_equal(kp_prepared_launch(p, NULL), KP_OK);
    expect_axpy(rt, by, x, y0, N, 1.0f, 3);
    /* The next batch: another buffer for x. */
    assert_int_equal(kp_prepared_set_tensor(p, "x", kp_tensor_1d(bx2, KP_F32, N)), KP_OK);
    assert_int_equal(kp_prepared_set_float(p, "alpha", 1.0), KP_OK);
    assert_int_equal(kp_buffer_write(rt, by, 0, sizeof y0, y0), KP_OK);
    assert_int_equal(kp_prepared_launch(p, NULL), KP_OK);
    expect_axpy(rt, by, x2, y0, N, 1.0f, 1);
    /* Fewer elements: the tail stays as it was. */
    assert_int_equal(kp_prepared_set_int(p, "n", 10), KP_OK);
    assert_int_equal(kp_prepared_set_tensor(p, "x", kp_tensor_1d(bx2, KP_F32, 10)), KP_OK);
    assert_int_equal(kp_prepared_set_tensor(p, "y", kp_tensor_1d(by, KP_F32, 10)), KP_OK);
    assert_int_equal(kp_prepared_launch(p, NULL), KP_OK);
    float got[N];
    assert_int_equal(kp_buffer_read(rt, by, 0, sizeof got, got), KP_OK);
    for (int i = 0; i < N; i++)
        assert_true(got[i] == y0[i] + (i < 10 ? 2.0f : 1.0f) * x2[i]);
    kp_prepared_destroy(p);
    kp_runtime_destroy(rt);
}

/* The kernel's check runs on the launch after a change, so a mismatch is refused there, and the
 * previous arguments stay bound when a change itself is refused. */
static void test_bad_arguments(void **state)
{
    kp_runtime *rt = open_runtime(test_device(), NULL);
    float x[N], y0[N];
    integers(x, N, 6);
    integers(y0, N, 7);
    kp_buffer *bx = upload(rt, x, N), *by = upload(rt, y0, N);
    kp_kernel *k = find(rt, "example.axpy");
    kp_arg args[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("x", kp_tensor_1d(bx, KP_F32, N)),
                     KP_ARG_TENSOR("y", kp_tensor_1d(by, KP_F32, N))};
    kp_prepared *p = NULL;
    /* What kp_kernel_launch refuses, create refuses with the same message. */
    kp_arg missing[] = {args[0], args[1]};
    assert_int_equal(kp_prepared_create(rt, k, missing, 2, &p), KP_ERR_INVALID_ARG);
    assert_null(p);
    assert_string_equal(kp_last_error(rt),
                        "kernel example.axpy: missing argument \"y\" (f32 tensor, inout)");
    assert_int_equal(kp_prepared_create(rt, k, args, 3, &p), KP_OK);
    assert_int_equal(kp_prepared_set_int(p, "nn", 3), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "unknown argument \"nn\""));
    assert_int_equal(kp_prepared_set_float(p, "n", 3), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt),
                        "kernel example.axpy: argument \"n\": expected int, got float");
    kp_tensor past = kp_tensor_1d(bx, KP_F32, N + 1);
    assert_int_equal(kp_prepared_set_tensor(p, "x", past), KP_ERR_INVALID_ARG);
    /* A buffer of another runtime: it would outlive its runtime's destroy unseen. */
    kp_runtime *other = open_runtime("host", NULL);
    kp_buffer *foreign = upload(other, x, N);
    assert_int_equal(kp_prepared_set_tensor(p, "x", kp_tensor_1d(foreign, KP_F32, N)),
                     KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt), "kernel example.axpy: argument \"x\": the tensor's "
                                           "buffer belongs to another runtime");
    kp_runtime_destroy(other);
    /* n no longer matches x: the kernel's own check, at the next launch. */
    assert_int_equal(kp_prepared_set_int(p, "n", 5), KP_OK);
    assert_int_equal(kp_prepared_launch(p, NULL), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "x: expected shape [n] = [5]"));
    assert_int_equal(kp_prepared_set_int(p, "n", N), KP_OK);
    assert_int_equal(kp_prepared_launch(p, NULL), KP_OK);
    expect_axpy(rt, by, x, y0, N, 1.0f, 1);
    kp_prepared_destroy(p);
    kp_runtime_destroy(rt);
}

/* A bound buffer destroyed: launching says so instead of touching freed memory; binding another
 * buffer makes it launchable again. */
static void test_destroyed_buffer(void **state)
{
    kp_runtime *rt = open_runtime(test_device(), NULL);
    float x[N], y0[N];
    integers(x, N, 8);
    integers(y0, N, 9);
    kp_buffer *bx = upload(rt, x, N), *by = upload(rt, y0, N);
    kp_arg args[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("x", kp_tensor_1d(bx, KP_F32, N)),
                     KP_ARG_TENSOR("y", kp_tensor_1d(by, KP_F32, N))};
    kp_prepared *p = NULL;
    assert_int_equal(kp_prepared_create(rt, find(rt, "example.axpy"), args, 3, &p), KP_OK);
    assert_int_equal(kp_prepared_launch(p, NULL), KP_OK);
    assert_int_equal(kp_finish(rt), KP_OK);
    kp_buffer_destroy(rt, bx);
    assert_int_equal(kp_prepared_launch(p, NULL), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt),
                        "kernel example.axpy: argument \"x\": its buffer was destroyed (bind "
                        "another with kp_prepared_set)");
    kp_buffer *bx2 = upload(rt, x, N);
    assert_int_equal(kp_prepared_set_tensor(p, "x", kp_tensor_1d(bx2, KP_F32, N)), KP_OK);
    assert_int_equal(kp_prepared_launch(p, NULL), KP_OK);
    expect_axpy(rt, by, x, y0, N, 1.0f, 2);
    kp_prepared_destroy(p);
    kp_runtime_destroy(rt);
}

/* A tuning change after recording: the next launch records with the new work-group size. */
static void test_tuning_change_records_again(void **state)
{
    kp_runtime *rt = open_runtime(test_device(), NULL);
    float x[N], y0[N];
    integers(x, N, 10);
    integers(y0, N, 11);
    kp_buffer *bx = upload(rt, x, N), *by = upload(rt, y0, N);
    kp_kernel *k = find(rt, "example.axpy");
    kp_arg args[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("x", kp_tensor_1d(bx, KP_F32, N)),
                     KP_ARG_TENSOR("y", kp_tensor_1d(by, KP_F32, N))};
    kp_prepared *p = NULL;
    assert_int_equal(kp_prepared_create(rt, k, args, 3, &p), KP_OK);
    assert_int_equal(kp_prepared_launch(p, NULL), KP_OK);
    assert_int_equal(kp_kernel_tunable_set(rt, k, "WG", 16), KP_OK);
    kp_event *ev = NULL;
    assert_int_equal(kp_prepared_launch(p, &ev), KP_OK);
    kp_event_destroy(rt, ev);
    assert_int_equal(kp_kernel_tuning_reset(rt, k), KP_OK);
    assert_int_equal(kp_prepared_launch(p, NULL), KP_OK);
    expect_axpy(rt, by, x, y0, N, 1.0f, 3);
    kp_prepared_destroy(p);
    kp_runtime_destroy(rt);
}

/* nested.axpy2 launches example.axpy from its enqueue: not recordable, so each prepared launch
 * runs the enqueue, on PoCL and on the host device alike; example.axpy on the host runs its
 * reference. */
static void test_unrecordable_and_host(void **state)
{
    const char *const devices[] = {test_device(), "host"};
    for (int d = 0; d < 2; d++) {
        test_log log;
        kp_runtime *rt = open_runtime(devices[d], &log);
        float x[N], y0[N];
        integers(x, N, 12);
        integers(y0, N, 13);
        kp_buffer *bx = upload(rt, x, N), *by = upload(rt, y0, N);
        kp_arg args[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("x", kp_tensor_1d(bx, KP_F32, N)),
                         KP_ARG_TENSOR("y", kp_tensor_1d(by, KP_F32, N))};
        kp_prepared *nested = NULL, *axpy = NULL;
        assert_int_equal(kp_prepared_create(rt, find(rt, "nested.axpy2"), args, 3, &nested), KP_OK);
        assert_int_equal(kp_prepared_create(rt, find(rt, "example.axpy"), args, 3, &axpy), KP_OK);
        for (int i = 0; i < 5; i++) {
            assert_int_equal(kp_prepared_launch(nested, NULL), KP_OK);
            assert_int_equal(kp_prepared_launch(axpy, NULL), KP_OK);
        }
        expect_axpy(rt, by, x, y0, N, 1.0f, 15);
        if (d == 0)
            assert_non_null(strstr(log.text, "kernel nested.axpy2: " UNRECORDED " (host->launch)"));
        assert_null(strstr(log.text, "kernel example.axpy: " UNRECORDED));
        kp_prepared_destroy(axpy);
        /* Left for kp_runtime_destroy to release. */
        (void)nested;
        kp_runtime_destroy(rt);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ten_thousand_launches),
        cmocka_unit_test(test_changed_arguments),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_destroyed_buffer),
        cmocka_unit_test(test_tuning_change_records_again),
        cmocka_unit_test(test_unrecordable_and_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
