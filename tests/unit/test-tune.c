/* SPDX-License-Identifier: Apache-2.0 */
/* The tuner's search on fake measurements whose fastest point is known, and kp_kernel_tune. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "kernelport/plugin.h"
#include "test-util.h"
#include "tuning/tune.h"

/* A bowl with its minimum at `best`; points in `skip` fail to build, points in `wrong` are the
 * fastest of all but give wrong results. */
typedef struct fake {
    size_t n;
    int64_t best[4];
    int64_t skip[4];
    int skip_on;
    int64_t wrong[4];
    int wrong_on;
    int reject_all;
    int fatal_after;
    int calls;
} fake;

static int same(const int64_t *a, const int64_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

static kp__tune_outcome fake_eval(void *user, const int64_t *v, double *seconds, char **why)
{
    fake *f = user;
    f->calls++;
    if (f->fatal_after && f->calls > f->fatal_after)
        return KP__TUNE_FATAL;
    if (f->reject_all)
        return KP__TUNE_REJECTED;
    if (f->skip_on && same(v, f->skip, f->n))
        return KP__TUNE_SKIPPED;
    if (f->wrong_on && same(v, f->wrong, f->n)) {
        *seconds = 1e-9;
        return KP__TUNE_REJECTED;
    }
    double t = 1.0;
    for (size_t i = 0; i < f->n; i++)
        t += fabs(log2((double)v[i]) - log2((double)f->best[i]));
    *seconds = t;
    return KP__TUNE_MEASURED;
}

static const int64_t pow2[] = {1, 2, 4, 8, 16, 32, 64, 128};

static kp__tune_space space_of(size_t n, size_t count, int64_t start)
{
    kp__tune_space s = {.n = n};
    for (size_t i = 0; i < n; i++) {
        s.values[i] = pow2;
        s.counts[i] = count;
        s.start[i] = start;
    }
    return s;
}

static void test_grid_finds_the_fastest(void **state)
{
    kp__tune_space s = space_of(2, 8, 1); /* 64 points: the full grid */
    fake f = {.n = 2, .best = {16, 4}};
    kp_tune_result r = {.struct_size = sizeof r};
    assert_int_equal(kp__tune_search(&s, fake_eval, NULL, &f, 0, 64, 1, NULL, &r), KP_OK);
    assert_int_equal(r.values[0], 16);
    assert_int_equal(r.values[1], 4);
    assert_true(r.exhaustive);
    assert_int_equal(r.tried, 64);
    assert_int_equal(f.calls, 64); /* the start point is not measured twice */
    assert_true(r.default_s > r.best_s);
    assert_true(r.speedup > 1.0);
}

static void test_build_failure_is_skipped(void **state)
{
    kp__tune_space s = space_of(2, 8, 1);
    fake f = {.n = 2, .best = {16, 4}, .skip = {16, 4}, .skip_on = 1};
    kp_tune_result r = {.struct_size = sizeof r};
    assert_int_equal(kp__tune_search(&s, fake_eval, NULL, &f, 0, 64, 1, NULL, &r), KP_OK);
    assert_int_equal(r.skipped, 1);
    assert_false(r.values[0] == 16 && r.values[1] == 4);
    assert_int_equal(r.tried, 63);
}

static void test_wrong_result_rejected_even_if_fastest(void **state)
{
    kp__tune_space s = space_of(2, 8, 1);
    fake f = {.n = 2, .best = {16, 4}, .wrong = {128, 128}, .wrong_on = 1};
    kp_tune_result r = {.struct_size = sizeof r};
    assert_int_equal(kp__tune_search(&s, fake_eval, NULL, &f, 0, 64, 1, NULL, &r), KP_OK);
    assert_int_equal(r.rejected, 1);
    assert_int_equal(r.values[0], 16);
    assert_int_equal(r.values[1], 4);
}

static void test_descent_on_a_large_space(void **state)
{
    kp__tune_space s = space_of(3, 8, 2); /* 512 points: more than the grid limit */
    fake f = {.n = 3, .best = {64, 1, 8}};
    kp_tune_result r = {.struct_size = sizeof r};
    assert_int_equal(kp__tune_search(&s, fake_eval, NULL, &f, 0, 64, 7, NULL, &r), KP_OK);
    assert_false(r.exhaustive);
    assert_int_equal(r.values[0], 64);
    assert_int_equal(r.values[1], 1);
    assert_int_equal(r.values[2], 8);
    assert_true(r.tried < 512);
}

static void test_budget_stops_the_search(void **state)
{
    kp__tune_space s = space_of(3, 8, 2);
    fake f = {.n = 3, .best = {64, 1, 8}};
    kp_tune_result r = {.struct_size = sizeof r};
    /* A budget already spent after the first point still returns the start as the best. */
    assert_int_equal(kp__tune_search(&s, fake_eval, NULL, &f, 1e-9, 64, 7, NULL, &r), KP_OK);
    assert_true(r.tried >= 1 && r.tried < 8);
    assert_int_equal(r.values[0], 2);
}

static void test_start_rejected_is_an_error(void **state)
{
    kp__tune_space s = space_of(1, 8, 4);
    fake f = {.n = 1, .best = {4}, .reject_all = 1};
    kp_tune_result r = {.struct_size = sizeof r};
    assert_int_equal(kp__tune_search(&s, fake_eval, NULL, &f, 0, 64, 1, NULL, &r), KP_ERR_VERIFY);
}

static void test_fatal_stops(void **state)
{
    kp__tune_space s = space_of(2, 8, 1);
    fake f = {.n = 2, .best = {16, 4}, .fatal_after = 3};
    kp_tune_result r = {.struct_size = sizeof r};
    assert_int_equal(kp__tune_search(&s, fake_eval, NULL, &f, 0, 64, 1, NULL, &r), KP_ERR_INTERNAL);
    assert_int_equal(f.calls, 4);
}

/* A trivial kernel: every point takes 1 s, but the first measurement of the process runs cold
 * (1.46 s), and the starting point is measured first. Re-timed points take `again` (start) or
 * `again_best` (any other point), cycling through `jitter`. */
typedef struct flat {
    int calls;
    double again, again_best;
    double jitter[3];
    int timed;
    int64_t order[8]; /* the first value of each point re-timed, in order */
} flat;

static kp__tune_outcome cold_first(void *user, const int64_t *v, double *seconds, char **why)
{
    flat *f = user;
    *seconds = f->calls++ == 0 ? 1.46 : 1.0;
    return KP__TUNE_MEASURED;
}

static int flat_time(void *user, const int64_t *v, double *seconds)
{
    flat *f = user;
    if (f->timed < 8)
        f->order[f->timed] = v[0];
    *seconds = (v[0] == 1 ? f->again : f->again_best) * f->jitter[(f->timed++ / 2) % 3];
    return 0;
}

static void test_cold_start_is_not_a_speedup(void **state)
{
    kp__tune_space s = space_of(1, 8, 1);
    flat f = {.again = 1.0, .again_best = 1.0, .jitter = {1.0, 1.02, 0.99}};
    kp_tune_result r = {.struct_size = sizeof r};
    assert_int_equal(kp__tune_search(&s, cold_first, flat_time, &f, 0, 64, 1, NULL, &r), KP_OK);
    /* The search saw 1.46x; timed again alternately, the two are the same within 3%. */
    assert_int_not_equal(r.values[0], 1);
    assert_false(r.improved);
    assert_true(r.speedup > 0.97 && r.speedup < 1.03);
    assert_true(r.noise > 0.02 && r.noise < 0.04);
    assert_int_equal(f.timed, 2 * KP__TUNE_ROUNDS);
    /* Alternating: start, best; best, start; start, best. */
    const int64_t b = r.values[0];
    const int64_t want[] = {1, b, b, 1, 1, b};
    for (int i = 0; i < 6; i++)
        assert_int_equal(f.order[i], want[i]);
}

static void test_speedup_beyond_the_spread_is_improved(void **state)
{
    kp__tune_space s = space_of(1, 8, 1);
    flat f = {.again = 1.5, .again_best = 1.0, .jitter = {1.0, 1.05, 0.95}};
    kp_tune_result r = {.struct_size = sizeof r};
    assert_int_equal(kp__tune_search(&s, cold_first, flat_time, &f, 0, 64, 1, NULL, &r), KP_OK);
    assert_true(r.improved);
    assert_float_equal(r.default_s, 1.5, 1e-12);
    assert_float_equal(r.best_s, 1.0, 1e-12);
    assert_float_equal(r.speedup, 1.5, 1e-12);
    /* The start still fastest: nothing to compare, nothing improved. */
    fake g = {.n = 1, .best = {1}};
    assert_int_equal(kp__tune_search(&s, fake_eval, NULL, &g, 0, 64, 1, NULL, &r), KP_OK);
    assert_int_equal(r.values[0], 1);
    assert_false(r.improved);
    assert_float_equal(r.speedup, 1.0, 1e-12);
}

static void count_steps(void *user, const kp_tune_step *step)
{
    int *n = user;
    assert_string_equal(step->kernel, "example.axpy");
    assert_int_equal(step->n_values, 1);
    (*n)++;
}

static void test_kernel_tune_on_the_host_device(void **state)
{
    kp_runtime_options o = test_options(test_build_path(KP_TEST_EXAMPLE_PLUGIN_DIR), "host", NULL);
    kp_runtime *rt;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    kp_kernel *k;
    assert_int_equal(kp_kernel_find(rt, "example.axpy", &k), KP_OK);
    kp_tune_options t = kp_tune_options_default();
    int steps = 0;
    t.size = "small";
    kp_bench_options bench = kp_bench_options_default();
    bench.min_runs = 2;
    bench.min_seconds = 0;
    t.bench = &bench;
    t.report = count_steps;
    t.user = &steps;
    kp_tune_result r = {.struct_size = sizeof r};
    assert_int_equal(kp_kernel_tune(rt, k, &t, &r), KP_OK);
    assert_int_equal(r.n_values, 1);
    assert_int_equal(r.tried, 9); /* WG in {1, 2, ..., 256} */
    assert_int_equal(steps, 9);
    assert_true(r.exhaustive);
    kp_tuning_info info = {.struct_size = sizeof info};
    assert_int_equal(kp_kernel_tuning(rt, k, 0, &info), KP_OK);
    assert_string_equal(info.origin, "default"); /* tuning leaves the kernel as it found it */

    /* Overrides: allowed values only, reported as the application's. */
    assert_int_equal(kp_kernel_tunable_set(rt, k, "WG", 48), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt), "kernel example.axpy: WG = 48 is not allowed "
                                           "(allowed: 1, 2, 4, 8, 16, 32, 64, 128, 256)");
    assert_int_equal(kp_kernel_tunable_set(rt, k, "XX", 1), KP_ERR_INVALID_ARG);
    assert_int_equal(kp_kernel_tunable_set(rt, k, "WG", 1), KP_OK);
    assert_int_equal(kp_kernel_tuning(rt, k, 0, &info), KP_OK);
    assert_int_equal(info.value, 1);
    assert_string_equal(info.origin, "set by the application");
    assert_int_equal(kp_kernel_tuning_reset(rt, k), KP_OK);
    assert_int_equal(kp_kernel_tuning(rt, k, 0, &info), KP_OK);
    assert_int_equal(info.value, 64);
    kp_runtime_destroy(rt);
}

/* A kernel registered at run time whose ranged tunable reaches INT64_MAX: the tuner's candidates
 * are the powers of two up to 2^62 (doubling once more overflowed). Host device: y = x. */
static kp_status copy_reference(const kp_call *call, kp_launch *l)
{
    (void)l;
    ((float *)call->args[1].host)[0] = ((const float *)call->args[0].host)[0];
    return KP_OK;
}

static kp_status copy_enqueue(const kp_call *call, kp_launch *l)
{
    (void)call;
    (void)l;
    return KP_ERR_UNSUPPORTED;
}

static kp_status copy_sample(kp_sample *s, const char *size)
{
    (void)size;
    const kp_host_api *host = kp_host_api_get();
    int64_t one = 1;
    kp_status st = host->sample_tensor(s, "x", KP_F32, 1, &one, -1.0, 1.0, NULL);
    return st == KP_OK ? host->sample_tensor(s, "y", KP_F32, 1, &one, 0.0, 0.0, NULL) : st;
}

static void test_tunable_up_to_int64_max(void **state)
{
    kp_runtime_options o = test_options(NULL, "host", NULL);
    kp_runtime *rt;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    static const kp_param_desc params[] = {
        {.name = "x", .kind = KP_ARG_KIND_TENSOR, .access = KP_ACCESS_IN, .dtypes = KP_DT(KP_F32)},
        {.name = "y", .kind = KP_ARG_KIND_TENSOR, .access = KP_ACCESS_OUT, .dtypes = KP_DT(KP_F32)},
    };
    static const kp_tunable_desc chunk = {
        .name = "CHUNK", .default_value = 1, .min = 1, .max = INT64_MAX};
    static const char *const sizes[] = {"one", NULL};
    const kp_kernel_desc d = {.struct_size = sizeof d,
                              .name = "wide.copy",
                              .summary = "y = x, with a tunable up to INT64_MAX",
                              .params = params,
                              .n_params = 2,
                              .tunables = &chunk,
                              .n_tunables = 1,
                              .enqueue = copy_enqueue,
                              .reference = copy_reference,
                              .sample = copy_sample,
                              .verify_sizes = sizes};
    kp_kernel *k;
    assert_int_equal(kp_kernel_register(rt, &d, &k), KP_OK);
    kp_tune_options t = kp_tune_options_default();
    kp_bench_options bench = kp_bench_options_default();
    bench.min_runs = 1;
    bench.min_seconds = 0;
    t.bench = &bench;
    kp_tune_result r = {.struct_size = sizeof r};
    assert_int_equal(kp_kernel_tune(rt, k, &t, &r), KP_OK);
    assert_int_equal(r.tried, 63); /* 2^0 .. 2^62 */
    assert_true(r.exhaustive);
    kp_runtime_destroy(rt);
}

static void test_wrong_only_at_the_timing_size_is_rejected(void **state)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/test-plugins/tune-trap", test_env("KP_TEST_BUILD"));
    kp_runtime_options o = test_options(dir, "pocl", NULL);
    o.flags |= KP_RUNTIME_NO_DISK_CACHE;
    kp_runtime *rt;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    kp_kernel *k;
    assert_int_equal(kp_kernel_find(rt, "trap.double", &k), KP_OK);
    kp_tune_options t = kp_tune_options_default();
    kp_bench_options bench = kp_bench_options_default();
    bench.min_runs = 1;
    bench.min_seconds = 0;
    t.bench = &bench;
    kp_tune_result r = {.struct_size = sizeof r};
    assert_int_equal(kp_kernel_tune(rt, k, &t, &r), KP_OK);
    /* MODE=1 passes verification at n = 37 but is wrong at the timing size. */
    assert_int_equal(r.values[0], 0);
    assert_int_equal(r.rejected, 1);
    assert_int_equal(r.tried, 1);
    kp_runtime_destroy(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grid_finds_the_fastest),
        cmocka_unit_test(test_build_failure_is_skipped),
        cmocka_unit_test(test_wrong_result_rejected_even_if_fastest),
        cmocka_unit_test(test_descent_on_a_large_space),
        cmocka_unit_test(test_budget_stops_the_search),
        cmocka_unit_test(test_start_rejected_is_an_error),
        cmocka_unit_test(test_fatal_stops),
        cmocka_unit_test(test_cold_start_is_not_a_speedup),
        cmocka_unit_test(test_speedup_beyond_the_spread_is_improved),
        cmocka_unit_test(test_kernel_tune_on_the_host_device),
        cmocka_unit_test(test_wrong_only_at_the_timing_size_is_rejected),
        cmocka_unit_test(test_tunable_up_to_int64_max),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
