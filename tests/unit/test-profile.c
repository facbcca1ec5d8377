/* SPDX-License-Identifier: Apache-2.0 */
/* KP_PROFILE: every launch counted per kernel, past the pending batch; refused launches and
 * launches whose event the caller took are not; an unwritable file is an error in the log. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test-util.h"

#define N 16
#define AXPYS 1030 /* more than the profile's batch of 1024 pending events */

static kp_runtime *open_profiled(const char *path, test_log *log)
{
    setenv("KP_PROFILE", path, 1);
    kp_runtime_options o =
        test_options(test_build_path(KP_TEST_EXAMPLE_PLUGIN_DIR), test_device(), log);
    o.flags &= ~(uint32_t)KP_RUNTIME_NO_ENV; /* the tests' runtimes ignore the environment */
    kp_runtime *rt = NULL;
    kp_status st = kp_runtime_create(&o, &rt);
    unsetenv("KP_PROFILE");
    if (st != KP_OK)
        fail_msg("kp_runtime_create: %s", kp_last_error(NULL));
    return rt;
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    return text;
}

/* The count after `"kernel": "name", "calls": ` in the JSON report. */
static long calls_of(const char *json, const char *kernel)
{
    char key[128];
    snprintf(key, sizeof key, "\"kernel\": \"%s\", \"calls\": ", kernel);
    const char *at = strstr(json, key);
    return at ? strtol(at + strlen(key), NULL, 10) : -1;
}

static void test_counts_launches(void **state)
{
    const char *path = test_write_tmp("profile.json", "");
    kp_runtime *rt = open_profiled(path, NULL);
    kp_kernel *axpy, *scale;
    kp_buffer *x, *y, *z;
    assert_int_equal(kp_kernel_find(rt, "example.axpy", &axpy), KP_OK);
    assert_int_equal(kp_kernel_find(rt, "example.scale_rows", &scale), KP_OK);
    assert_int_equal(kp_buffer_create(rt, N * sizeof(float), &x), KP_OK);
    assert_int_equal(kp_buffer_create(rt, N * sizeof(float), &y), KP_OK);
    assert_int_equal(kp_buffer_create(rt, N * sizeof(float), &z), KP_OK);
    float h[N];
    test_fill_nonzero(h, N, 1);
    assert_int_equal(kp_buffer_write(rt, x, 0, sizeof h, h), KP_OK);
    assert_int_equal(kp_buffer_write(rt, y, 0, sizeof h, h), KP_OK);
    kp_arg args[] = {KP_ARG_INT("n", N), KP_ARG_FLOAT("alpha", 0.5),
                     KP_ARG_TENSOR("x", kp_tensor_1d(x, KP_F32, N)),
                     KP_ARG_TENSOR("y", kp_tensor_1d(y, KP_F32, N))};
    for (int i = 0; i < AXPYS; i++)
        assert_int_equal(kp_kernel_launch(rt, axpy, args, 4, NULL), KP_OK);
    kp_arg rows[] = {KP_ARG_TENSOR("x", kp_tensor_2d(x, KP_F32, 4, 4)),
                     KP_ARG_TENSOR("scale", kp_tensor_1d(y, KP_F32, 4)),
                     KP_ARG_TENSOR("y", kp_tensor_2d(z, KP_F32, 4, 4))};
    for (int i = 0; i < 3; i++)
        assert_int_equal(kp_kernel_launch(rt, scale, rows, 3, NULL), KP_OK);
    /* Refused: nothing ran. Timed by the caller: its event is the caller's. */
    args[0] = KP_ARG_INT("n", N + 1);
    assert_int_equal(kp_kernel_launch(rt, axpy, args, 4, NULL), KP_ERR_INVALID_ARG);
    args[0] = KP_ARG_INT("n", N);
    kp_event *ev = NULL;
    assert_int_equal(kp_kernel_launch(rt, axpy, args, 4, &ev), KP_OK);
    assert_int_equal(kp_event_wait(rt, ev), KP_OK);
    kp_event_destroy(rt, ev);
    kp_runtime_destroy(rt);

    const char *json = read_all(path);
    assert_int_equal(calls_of(json, "example.axpy"), AXPYS);
    assert_int_equal(calls_of(json, "example.scale_rows"), 3);
    assert_non_null(strstr(json, "\"unread\": 0,"));
    assert_non_null(strstr(json, "\"total_seconds\": "));
}

static void test_unwritable_file(void **state)
{
    test_log log = {0};
    kp_runtime *rt = open_profiled("/nonexistent-dir/profile.txt", &log);
    kp_runtime_destroy(rt);
    assert_non_null(strstr(log.text, "KP_PROFILE: cannot write /nonexistent-dir/profile.txt"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_launches),
        cmocka_unit_test(test_unwritable_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
