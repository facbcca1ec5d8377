/* SPDX-License-Identifier: Apache-2.0 */
/* KP_KERNEL_DIR: kernels' OpenCL sources read from disk instead of the embedded copies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "test-util.h"

/* Runs example.axpy with alpha 2 on x = 1, y = 1 and returns y[0]. */
static float run_axpy(const char *kernel_dir, test_log *log)
{
    setenv("KP_KERNEL_DIR", kernel_dir, 1);
    kp_runtime_options o =
        test_options(test_build_path(KP_TEST_EXAMPLE_PLUGIN_DIR), test_device(), log);
    /* The environment is what this test is about. */
    o.flags =
        KP_RUNTIME_NO_USER_MANIFESTS | KP_RUNTIME_NO_INSTALLED_PLUGINS | KP_RUNTIME_NO_DISK_CACHE;
    kp_runtime *rt;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    kp_kernel *k;
    assert_int_equal(kp_kernel_find(rt, "example.axpy", &k), KP_OK);
    float one[3] = {1, 1, 1}, y[3];
    kp_buffer *bx, *by;
    assert_int_equal(kp_buffer_create(rt, sizeof one, &bx), KP_OK);
    assert_int_equal(kp_buffer_create(rt, sizeof one, &by), KP_OK);
    assert_int_equal(kp_buffer_write(rt, bx, 0, sizeof one, one), KP_OK);
    assert_int_equal(kp_buffer_write(rt, by, 0, sizeof one, one), KP_OK);
    kp_arg args[] = {KP_ARG_INT("n", 3), KP_ARG_FLOAT("alpha", 2),
                     KP_ARG_TENSOR("x", kp_tensor_1d(bx, KP_F32, 3)),
                     KP_ARG_TENSOR("y", kp_tensor_1d(by, KP_F32, 3))};
    assert_int_equal(kp_kernel_launch(rt, k, args, 4, NULL), KP_OK);
    assert_int_equal(kp_buffer_read(rt, by, 0, sizeof y, y), KP_OK);
    kp_runtime_destroy(rt);
    unsetenv("KP_KERNEL_DIR");
    return y[0];
}

static char *make_dir(void)
{
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s/kernels-XXXXXX", test_env("KP_TEST_TMP"));
    assert_non_null(mkdtemp(dir));
    return dir;
}

static void test_source_from_the_directory(void **state)
{
    /* The same kernel with "+ 100" in its update: its result shows which source ran. */
    char path[8192], src[8192];
    snprintf(src, sizeof src, "%s/../../kernels/example.cl", test_env("KP_TEST_FIXTURES"));
    size_t len;
    FILE *f = fopen(src, "rb");
    assert_non_null(f);
    static char text[65536];
    len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = '\0';
    const char *needle = "fma(alpha, x[kp_at1(xv, i)], y[kp_at1(yv, i)])";
    char *at = strstr(text, needle);
    assert_non_null(at);
    char *dir = make_dir();
    snprintf(path, sizeof path, "%s/example.cl", dir);
    f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(text, 1, (size_t)(at - text), f);
    fputs("100.0f + ", f);
    fputs(at, f);
    fclose(f);
    test_log log;
    assert_float_equal(run_axpy(dir, &log), 103.0f, 0);
    assert_non_null(strstr(log.text, "info: kernel example.axpy: source from "));
}

static void test_missing_file_falls_back_to_the_embedded_source(void **state)
{
    test_log log;
    char *dir = make_dir();
    assert_float_equal(run_axpy(dir, &log), 3.0f, 0);
    assert_non_null(strstr(log.text, "warn: KP_KERNEL_DIR "));
    assert_non_null(strstr(log.text, " holds none of the loaded kernels' sources (such as "
                                     "example.cl): every kernel uses its embedded source"));
}

/* A directory holding one family's sources replaces those and says nothing of the other
 * families' kernels (it warned once per kernel of every other plugin: 116 lines). */
static void test_other_families_are_not_warned_about(void **state)
{
    char src[8192], path[8192];
    snprintf(src, sizeof src, "%s/../../kernels/example.cl", test_env("KP_TEST_FIXTURES"));
    static char text[65536];
    FILE *f = fopen(src, "rb");
    assert_non_null(f);
    size_t len = fread(text, 1, sizeof text, f);
    fclose(f);
    char *dir = make_dir();
    snprintf(path, sizeof path, "%s/example.cl", dir);
    f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(text, 1, len, f);
    fclose(f);
    setenv("KP_KERNEL_DIR", dir, 1);
    test_log log;
    kp_runtime_options o =
        test_options(test_build_path("lib/kernelport/plugins"), test_device(), &log);
    o.flags = KP_RUNTIME_NO_USER_MANIFESTS | KP_RUNTIME_NO_INSTALLED_PLUGINS;
    kp_runtime *rt;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    unsetenv("KP_KERNEL_DIR");
    assert_true(kp_kernel_count(rt) > 10);
    assert_non_null(strstr(log.text, "info: kernel example.axpy: source from "));
    assert_null(strstr(log.text, "warn:"));
    kp_runtime_destroy(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_source_from_the_directory),
        cmocka_unit_test(test_missing_file_falls_back_to_the_embedded_source),
        cmocka_unit_test(test_other_families_are_not_warned_about),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
