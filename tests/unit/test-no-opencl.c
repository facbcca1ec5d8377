/* SPDX-License-Identifier: Apache-2.0 */
/* With no OpenCL platform (OCL_ICD_VENDORS empty): host fallback, or failure under require. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test-util.h"

static const char *plugin_dir(void)
{
    return test_build_path(KP_TEST_EXAMPLE_PLUGIN_DIR);
}

static const char *const fallback_warning =
    "warn: no OpenCL platform found: kernels run as their host references (install an OpenCL "
    "driver such as pocl-opencl-icd for a real device)\n";

static kp_runtime *fallback_runtime(test_log *log)
{
    kp_runtime_options o = test_options(plugin_dir(), NULL, log);
    kp_runtime *rt = NULL;
    kp_status st = kp_runtime_create(&o, &rt);
    if (st != KP_OK)
        fprintf(stderr, "kp_runtime_create: %s\n", kp_last_error(NULL));
    assert_int_equal(st, KP_OK);
    return rt;
}

static void test_environment_hides_opencl(void **state)
{
    /* ctest points the ICD loader at an empty directory; without it this file tests nothing. */
    const char *vendors = getenv("OCL_ICD_VENDORS");
    assert_non_null(vendors);
    assert_non_null(strstr(vendors, "empty-vendors"));
}

static void test_falls_back_to_host_with_warning(void **state)
{
    test_log log;
    kp_runtime *rt = fallback_runtime(&log);
    assert_int_equal(kp_device_count(rt), 1);
    kp_device_info d = {.struct_size = sizeof d};
    const char *why;
    assert_int_equal(kp_runtime_device(rt, &d, &why), KP_OK);
    assert_int_equal(d.type, KP_DEVICE_HOST);
    assert_int_equal(d.vendor, KP_VENDOR_HOST);
    assert_int_equal(d.index, 0);
    assert_string_equal(why, "no OpenCL platform found: host fallback");
    if (!strstr(log.text, fallback_warning))
        fail_msg("log lacks the fallback warning:\n%s", log.text);
    assert_int_equal(kp_kernel_count(rt), 2);
    kp_runtime_destroy(rt);
}

static void test_kernels_run_their_references(void **state)
{
    test_log log;
    kp_runtime *rt = fallback_runtime(&log);
    kp_kernel *axpy, *scale;
    assert_int_equal(kp_kernel_find(rt, "example.axpy", &axpy), KP_OK);
    assert_int_equal(kp_kernel_find(rt, "example.scale_rows", &scale), KP_OK);

    enum { n = 1009, rows = 31, cols = 67 };
    static float x[n], y[n], got[n], m[rows * cols], s[rows], out[rows * cols];
    test_fill_nonzero(x, n, 1);
    test_fill_nonzero(y, n, 2);
    test_fill_nonzero(m, rows * cols, 3);
    test_fill_nonzero(s, rows, 4);
    kp_buffer *bx, *by, *bm, *bs, *bo;
    assert_int_equal(kp_buffer_create(rt, sizeof x, &bx), KP_OK);
    assert_int_equal(kp_buffer_create(rt, sizeof y, &by), KP_OK);
    assert_int_equal(kp_buffer_create(rt, sizeof m, &bm), KP_OK);
    assert_int_equal(kp_buffer_create(rt, sizeof s, &bs), KP_OK);
    assert_int_equal(kp_buffer_create(rt, sizeof out, &bo), KP_OK);
    assert_int_equal(kp_buffer_write(rt, bx, 0, sizeof x, x), KP_OK);
    assert_int_equal(kp_buffer_write(rt, by, 0, sizeof y, y), KP_OK);
    assert_int_equal(kp_buffer_write(rt, bm, 0, sizeof m, m), KP_OK);
    assert_int_equal(kp_buffer_write(rt, bs, 0, sizeof s, s), KP_OK);

    kp_arg a[] = {KP_ARG_INT("n", n), KP_ARG_FLOAT("alpha", -0.5),
                  KP_ARG_TENSOR("x", kp_tensor_1d(bx, KP_F32, n)),
                  KP_ARG_TENSOR("y", kp_tensor_1d(by, KP_F32, n))};
    kp_event *ev = NULL;
    assert_int_equal(kp_kernel_launch(rt, axpy, a, 4, &ev), KP_OK);
    double t = -1;
    assert_int_equal(kp_event_elapsed(rt, ev, &t), KP_OK);
    assert_true(t >= 0);
    kp_event_destroy(rt, ev);
    assert_int_equal(kp_finish(rt), KP_OK);
    assert_int_equal(kp_buffer_read(rt, by, 0, sizeof got, got), KP_OK);
    for (int i = 0; i < n; i++) {
        float want = fmaf(-0.5f, x[i], y[i]);
        assert_memory_equal(&got[i], &want, sizeof want);
    }

    /* x as the transpose of a [cols, rows] matrix. */
    kp_tensor mt = kp_tensor_transpose(kp_tensor_2d(bm, KP_F32, cols, rows), 0, 1);
    kp_arg b[] = {KP_ARG_TENSOR("x", mt), KP_ARG_TENSOR("scale", kp_tensor_1d(bs, KP_F32, rows)),
                  KP_ARG_TENSOR("y", kp_tensor_2d(bo, KP_F32, rows, cols))};
    assert_int_equal(kp_kernel_launch(rt, scale, b, 3, NULL), KP_OK);
    assert_int_equal(kp_buffer_read(rt, bo, 0, sizeof out, out), KP_OK);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            float want = m[c * rows + r] * s[r];
            assert_memory_equal(&out[r * cols + c], &want, sizeof want);
        }
    kp_runtime_destroy(rt);
}

static void count_report(void *user, const kp_verify_result *r)
{
    assert_true(r->passed);
    ++*(int *)user;
}

static void test_verify_passes(void **state)
{
    test_log log;
    kp_runtime *rt = fallback_runtime(&log);
    for (size_t i = 0; i < kp_kernel_count(rt); i++) {
        int reports = 0;
        kp_kernel *k = kp_kernel_at(rt, i);
        assert_int_equal(kp_kernel_verify(rt, k, NULL, 7, count_report, &reports), KP_OK);
        assert_int_equal(reports, 3); /* sizes one, prime, small; one output each */
    }
    /* Warm-up has nothing to build on the host. */
    assert_int_equal(kp_runtime_warmup(rt, NULL), KP_OK);
    kp_runtime_destroy(rt);
}

static void test_require_opencl_fails(void **state)
{
    const char *m = test_write_tmp("require.yaml", "kernelport: 1\n"
                                                   "require: opencl\n");
    test_log log;
    kp_runtime_options o = test_options(plugin_dir(), NULL, &log);
    o.manifest_path = m;
    kp_runtime *rt = (kp_runtime *)&o;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_ERR_NO_DEVICE);
    assert_null(rt);
    assert_string_equal(kp_last_error(NULL),
                        "no OpenCL platform was found and the manifest says require: opencl "
                        "(install an OpenCL driver, e.g. pocl-opencl-icd)");
    /* `require: any` (a later layer) restores the fallback. */
    const char *any = test_write_tmp("require-any.yaml", "kernelport: 1\n"
                                                         "require: any\n");
    o.manifest_path = any;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    kp_runtime_destroy(rt);
}

static void test_opencl_device_specs_fail(void **state)
{
    kp_runtime_options o = test_options(plugin_dir(), "pocl", NULL);
    kp_runtime *rt = (kp_runtime *)&o;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_ERR_NO_DEVICE);
    assert_null(rt);
    assert_string_equal(kp_last_error(NULL),
                        "device spec \"pocl\" matches no device; the devices are:\n"
                        "  0: host host \"Kernelport host reference\"");
    /* Naming the host works. */
    o.device = "host";
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    kp_runtime_destroy(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_environment_hides_opencl),
        cmocka_unit_test(test_falls_back_to_host_with_warning),
        cmocka_unit_test(test_kernels_run_their_references),
        cmocka_unit_test(test_verify_passes),
        cmocka_unit_test(test_require_opencl_fails),
        cmocka_unit_test(test_opencl_device_specs_fail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
