/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fault injection (tests/cl-faults.c): each OpenCL call that allocates a buffer, builds a program
 * or enqueues work during one run of a scenario fails in turn, the n-th on the n-th run, each run
 * on a new runtime so that the program builds happen within it. A scenario is a kernel's
 * verification (sample inputs written, the kernel launched, outputs read and compared with the
 * host reference) or a prepared, timed launch checked against host math. Each failure must come
 * back as an error of its kind with a message, or be worked around with right results and a note
 * in the log naming the call; the same runtime must then run the scenario cleanly, and destroying
 * it must release every OpenCL object it made. Under the sanitizer build LeakSanitizer checks at
 * exit that no failure leaked memory.
 *
 * `test-faults [--messages] KERNEL...` sweeps the verification of the kernels named instead
 * (--messages prints each failure's message).
 */
#include <math.h>
#include <setjmp.h>
#include <time.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cl-faults.h"
#include "test-util.h"

static int show_messages;

/* A run of something on a runtime: KP_OK, the error it met, or KP_ERR_VERIFY for wrong results
 * (with kp_last_error's message for kp_kernel_verify, printed here for the others). */
typedef kp_status (*scenario)(kp_runtime *rt, const char *kernel);

/* How often each function was failed over a sweep. */
typedef struct tally {
    const char *name[32];
    int count[32];
    int n;
} tally;

static void tally_add(tally *t, const char *name)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->name[i], name) == 0) {
            t->count[i]++;
            return;
        }
    assert_true(t->n < 32);
    t->name[t->n] = name;
    t->count[t->n++] = 1;
}

static int tally_has(const tally *t, const char *name)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->name[i], name) == 0)
            return 1;
    return 0;
}

/* Whether the log has a warning or a note naming `call`. */
static int logged(const test_log *log, const char *call)
{
    for (const char *line = log->text; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *hit = strstr(line, call);
        if ((strncmp(line, "warn: ", 6) == 0 || strncmp(line, "info: ", 6) == 0) && hit &&
            hit < line + len)
            return 1;
        line += len + (end != NULL);
    }
    return 0;
}

/* The blas kernels' route in the runtimes the sweeps open: CLBlast's (the one that builds and
 * enqueues OpenCL kernels; OpenBLAS on PoCL would be the default), or with host_blas set the
 * host-blas route (maps, a native kernel and unmaps). */
static int host_blas;

/* A PoCL runtime with every plugin of the build; binaries "always" also stores programs in the
 * disk cache, so that a later runtime loads them from there. blas.gemm's warm-up runs its
 * indirect GEMM at the smallest size allowed (64^3 rather than CLBlast's own, several times
 * slower on PoCL), as each of its hundreds of runs does. */
static kp_runtime *open_runtime(const char *binaries, test_log *log)
{
    char text[512];
    const char *r = host_blas ? "host-blas" : "clblast";
    snprintf(text, sizeof text,
             "kernelport: 1\ncache: { binaries: %s }\ntuning:\n  - kernels:\n      blas.gemm: "
             "{ route: %s, clblast.GemmRoutine.XGEMM_MIN_INDIRECT_SIZE: 64 }\n"
             "      blas.gemm_batched: { route: %s }\n      blas.gemv: { route: %s }\n",
             binaries, r, r, r);
    kp_runtime_options o = test_options(test_build_path("lib/kernelport/plugins"), "pocl", log);
    o.manifest_path = test_write_tmp("faults.yaml", text);
    /* A cache of its own: "never" must find no binary that "always" stored. */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/cache-%s", test_env("KP_TEST_TMP"), binaries);
    o.cache_dir = dir;
    kp_runtime *rt = NULL;
    kp_status st = kp_runtime_create(&o, &rt);
    if (st != KP_OK)
        fail_msg("kp_runtime_create: %s", kp_last_error(NULL));
    return rt;
}

/* OpenCL objects alive before the sweep: none, unless a failed test left its runtime. */
static long before;

/* Destroys the runtime, which must leave no OpenCL object behind. */
static void destroy(kp_runtime *rt, const char *kernel, const char *failed, long n)
{
    kp_runtime_destroy(rt);
    char live[256];
    if (cl_faults_live(live, sizeof live) > before)
        fail_msg("%s: the runtime destroyed after %s failed (call %ld) left %s", kernel,
                 failed ? failed : "nothing", n, live);
}

static kp_kernel *find(kp_runtime *rt, const char *name)
{
    kp_kernel *k = NULL;
    assert_int_equal(kp_kernel_find(rt, name, &k), KP_OK);
    return k;
}

/* ---- scenarios ------------------------------------------------------------------------------ */

/* kp_kernel_verify on the kernel's first (smallest) sample size. */
static kp_status verify(kp_runtime *rt, const char *kernel)
{
    kp_kernel *k = find(rt, kernel);
    return kp_kernel_verify(rt, k, kp_kernel_sample_sizes(k, 0)[0], 1, NULL, NULL);
}

/* kp_runtime_warmup of the kernel (its program built ahead, or its library's warm-up), then its
 * verification. */
static kp_status warmup_then_verify(kp_runtime *rt, const char *kernel)
{
    kp_status st = kp_runtime_warmup(rt, kernel);
    return st == KP_OK ? verify(rt, kernel) : st;
}

static kp_status upload(kp_runtime *rt, const float *data, size_t n, kp_buffer **out)
{
    kp_status st = kp_buffer_create(rt, n * sizeof *data, out);
    if (st == KP_OK)
        st = kp_buffer_write(rt, *out, 0, n * sizeof *data, data);
    return st;
}

/* Launches the prepared call twice (recording it, then replaying), each timed. */
static kp_status launch_timed_twice(kp_runtime *rt, kp_prepared *p)
{
    kp_status st = KP_OK;
    for (int i = 0; i < 2 && st == KP_OK; i++) {
        kp_event *ev = NULL;
        double seconds;
        st = kp_prepared_launch(p, &ev);
        if (st == KP_OK)
            st = kp_event_elapsed(rt, ev, &seconds);
        kp_event_destroy(rt, ev);
    }
    return st;
}

/* KP_OK when each got[i] is want[i] within `tol` relative (exactly when 0); else prints the first
 * that is not. */
static kp_status compare(const char *kernel, const float *got, const double *want, size_t n,
                         double tol)
{
    for (size_t i = 0; i < n; i++)
        if (fabs(got[i] - want[i]) > tol * fmax(1.0, fabs(want[i]))) {
            printf("%s: element %zu is %g, expected %g\n", kernel, i, (double)got[i], want[i]);
            return KP_ERR_VERIFY;
        }
    return KP_OK;
}

/* example.axpy prepared and launched twice: y + 2 alpha x, exact on these integers. */
static kp_status prepared_axpy(kp_runtime *rt)
{
    enum { n = 37 };
    float x[n], y[n];
    double want[n];
    for (int i = 0; i < n; i++) {
        x[i] = (float)(i % 7 - 3);
        y[i] = (float)(i % 5);
        want[i] = y[i] + 2 * 1.5 * x[i];
    }
    kp_buffer *bx = NULL, *by = NULL;
    kp_prepared *p = NULL;
    kp_status st = upload(rt, x, n, &bx);
    if (st == KP_OK)
        st = upload(rt, y, n, &by);
    if (st == KP_OK) {
        kp_arg args[] = {KP_ARG_INT("n", n), KP_ARG_FLOAT("alpha", 1.5),
                         KP_ARG_TENSOR("x", kp_tensor_1d(bx, KP_F32, n)),
                         KP_ARG_TENSOR("y", kp_tensor_1d(by, KP_F32, n))};
        st = kp_prepared_create(rt, find(rt, "example.axpy"), args, 4, &p);
    }
    if (st == KP_OK)
        st = launch_timed_twice(rt, p);
    if (st == KP_OK)
        st = kp_buffer_read(rt, by, 0, sizeof y, y);
    if (st == KP_OK)
        st = compare("example.axpy", y, want, n, 0);
    kp_prepared_destroy(p);
    kp_buffer_destroy(rt, bx);
    kp_buffer_destroy(rt, by);
    return st;
}

/* blas.gemm, C = A B of [3, 4] by [4, 5], prepared and launched twice (beta 0: the same C). */
static kp_status prepared_gemm(kp_runtime *rt)
{
    enum { m = 3, k = 4, n = 5 };
    float a[m * k], b[k * n], c[m * n];
    double want[m * n];
    for (int i = 0; i < m * k; i++)
        a[i] = (float)(i % 5 - 2);
    for (int i = 0; i < k * n; i++)
        b[i] = (float)(i % 3 - 1);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            want[i * n + j] = 0;
            for (int l = 0; l < k; l++)
                want[i * n + j] += (double)a[i * k + l] * b[l * n + j];
        }
    kp_buffer *ba = NULL, *bb = NULL, *bc = NULL;
    kp_prepared *p = NULL;
    kp_status st = upload(rt, a, m * k, &ba);
    if (st == KP_OK)
        st = upload(rt, b, k * n, &bb);
    if (st == KP_OK)
        st = kp_buffer_create(rt, sizeof c, &bc);
    if (st == KP_OK) {
        kp_arg args[] = {KP_ARG_TENSOR("A", kp_tensor_2d(ba, KP_F32, m, k)),
                         KP_ARG_TENSOR("B", kp_tensor_2d(bb, KP_F32, k, n)),
                         KP_ARG_TENSOR("C", kp_tensor_2d(bc, KP_F32, m, n))};
        st = kp_prepared_create(rt, find(rt, "blas.gemm"), args, 3, &p);
    }
    if (st == KP_OK)
        st = launch_timed_twice(rt, p);
    if (st == KP_OK)
        st = kp_buffer_read(rt, bc, 0, sizeof c, c);
    if (st == KP_OK)
        st = compare("blas.gemm", c, want, m * n, 1e-5);
    kp_prepared_destroy(p);
    kp_buffer_destroy(rt, ba);
    kp_buffer_destroy(rt, bb);
    kp_buffer_destroy(rt, bc);
    return st;
}

/* A graph of a fill, two example.axpy launches and a copy, replayed twice, the second timed:
 * 3 + 2 alpha x, exact on these integers. Kernel by kernel, the default on PoCL: the command
 * buffer's entry points come from clGetExtensionFunctionAddressForPlatform, which
 * tests/cl-faults.c does not interpose. */
static kp_status graph_axpy(kp_runtime *rt, const char *kernel)
{
    enum { n = 29 };
    float x[n], y[n];
    double want[n];
    for (int i = 0; i < n; i++) {
        x[i] = (float)(i % 7 - 3);
        want[i] = 3 + 2 * 1.5 * x[i];
    }
    kp_buffer *bx = NULL, *by = NULL, *bz = NULL;
    kp_graph *g = NULL;
    kp_status st = upload(rt, x, n, &bx);
    if (st == KP_OK)
        st = upload(rt, x, n, &by);
    if (st == KP_OK)
        st = upload(rt, x, n, &bz);
    if (st == KP_OK)
        st = kp_graph_begin(rt, KP_GRAPH_NO_COMMAND_BUFFER);
    if (st == KP_OK) {
        const float three = 3;
        kp_arg args[] = {KP_ARG_INT("n", n), KP_ARG_FLOAT("alpha", 1.5),
                         KP_ARG_TENSOR("x", kp_tensor_1d(bx, KP_F32, n)),
                         KP_ARG_TENSOR("y", kp_tensor_1d(by, KP_F32, n))};
        st = kp_buffer_fill(rt, by, 0, n * sizeof(float), &three, sizeof three);
        for (int i = 0; i < 2 && st == KP_OK; i++)
            st = kp_kernel_launch(rt, find(rt, kernel), args, 4, NULL);
        if (st == KP_OK)
            st = kp_buffer_copy(rt, by, 0, bz, 0, n * sizeof(float));
        kp_status end = kp_graph_end(rt, &g);
        st = st == KP_OK ? end : st;
    }
    for (int i = 0; i < 2 && st == KP_OK; i++) {
        kp_event *ev = NULL;
        double seconds;
        st = kp_graph_replay(g, i ? &ev : NULL);
        if (st == KP_OK && ev)
            st = kp_event_elapsed(rt, ev, &seconds);
        kp_event_destroy(rt, ev);
    }
    if (st == KP_OK)
        st = kp_buffer_read(rt, bz, 0, sizeof y, y);
    if (st == KP_OK)
        st = compare("graph", y, want, n, 0);
    kp_graph_destroy(g);
    kp_buffer_destroy(rt, bx);
    kp_buffer_destroy(rt, by);
    kp_buffer_destroy(rt, bz);
    return st;
}

static kp_status prepared(kp_runtime *rt, const char *kernel)
{
    return strcmp(kernel, "blas.gemm") == 0 ? prepared_gemm(rt) : prepared_axpy(rt);
}

/* ---- the sweep ------------------------------------------------------------------------------ */

/* Sweeps the failing call over `run` of `kernel`; returns how many failures were recovered from
 * (-1 when the kernel does not run here). */
static int sweep(scenario run, const char *what, const char *kernel, const char *binaries)
{
    /* A first run fills PoCL's cache (and with "always", Kernelport's), so that every later
     * run makes the same calls. */
    before = cl_faults_live(NULL, 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    test_log log;
    kp_runtime *rt = open_runtime(binaries, &log);
    kp_kernel *k = NULL;
    if (kp_kernel_find(rt, kernel, &k) == KP_ERR_NOT_FOUND) { /* a build without CLBlast */
        printf("%s: not in this build\n", kernel);
        destroy(rt, kernel, NULL, 0);
        return -1;
    }
    if (kp_kernel_supported(rt, k) == KP_ERR_UNSUPPORTED) {
        printf("%s: not supported here: %s\n", kernel, kp_last_error(rt));
        destroy(rt, kernel, NULL, 0);
        return -1;
    }
    if (run(rt, kernel) != KP_OK)
        fail_msg("%s %s: %s", kernel, what, kp_last_error(rt));
    destroy(rt, kernel, NULL, 0);

    tally t = {0};
    int errors = 0, recovered = 0;
    for (long n = 1;; n++) {
        rt = open_runtime(binaries, &log);
        cl_faults_arm(n);
        kp_status st = run(rt, kernel);
        const char *failed = cl_faults_failed();
        cl_faults_disarm();
        if (!failed) {
            /* The run made fewer than n calls: each has failed once. */
            if (st != KP_OK)
                fail_msg("%s %s without a failure: %s", kernel, what, kp_last_error(rt));
            destroy(rt, kernel, NULL, n);
            break;
        }
        tally_add(&t, failed);
        const char *msg = kp_last_error(rt);
        if (show_messages)
            printf("%s %ld %s -> %s: %s\n", kernel, n, failed, kp_status_name(st), msg);
        if (st == KP_OK) {
            /* Worked around (a cached binary rebuilt from source, a launch timed without its
             * marker): said in the log. */
            if (!logged(&log, failed))
                fail_msg("%s %s: %s failed (call %ld) without an error or a note in the log:\n%s",
                         kernel, what, failed, n, log.text);
            recovered++;
        } else {
            errors++;
            /* The failure itself, with its kind (tests/cl-faults.h: a build failure, or a lack
             * of memory or resources), not a wrong result it left behind. */
            kp_status want =
                strcmp(failed, "clBuildProgram") == 0 ? KP_ERR_BUILD : KP_ERR_OUT_OF_MEMORY;
            if (st != want || !*msg)
                fail_msg("%s %s: %s failed (call %ld): %s, expected %s, message \"%s\"", kernel,
                         what, failed, n, kp_status_name(st), kp_status_name(want), msg);
        }
        st = run(rt, kernel);
        if (st != KP_OK)
            fail_msg("%s %s: after %s failed (call %ld), the next run: %s: %s", kernel, what,
                     failed, n, kp_status_name(st), kp_last_error(rt));
        destroy(rt, kernel, failed, n);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf(
        "%s %s (binaries %s), %.1f s: %d failures injected, %d errors, %d worked around:", kernel,
        what, binaries, (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec),
        errors + recovered, errors, recovered);
    for (int i = 0; i < t.n; i++)
        printf(" %s %d", t.name[i], t.count[i]);
    printf("\n");
    /* Every run allocates, builds and enqueues (the host route: maps, runs a native kernel and
     * unmaps, building nothing): a sweep that failed none of them did not reach the calls
     * (tests/cl-faults.c no longer interposes them). */
    assert_true(tally_has(&t, "clCreateBuffer"));
    if (host_blas) {
        assert_true(tally_has(&t, "clEnqueueMapBuffer"));
        assert_true(tally_has(&t, "clEnqueueNativeKernel"));
        assert_true(tally_has(&t, "clEnqueueUnmapMemObject"));
    } else {
        assert_true(tally_has(&t, "clBuildProgram"));
        assert_true(tally_has(&t, "clEnqueueNDRangeKernel"));
    }
    return recovered;
}

/* ---- tests ---------------------------------------------------------------------------------- */

/* A kernel of each family, verified (tensor.cross_entropy and tensor.max_backward: three
 * launches and scratch); tc.gemm needs an NVIDIA GPU and is skipped elsewhere. */
static void test_verify_each_family(void **state)
{
    static const char *const kernels[] = {"example.axpy",         "blas.gemm",
                                          "conv.conv2d",          "gru.step",
                                          "logic.forward",        "tc.gemm",
                                          "tensor.mul",           "tensor.mul_backward",
                                          "tensor.cross_entropy", "tensor.max_backward",
                                          "optim.clip_grad_norm"};
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
        sweep(verify, "verify", kernels[i], "never");
}

/* Programs loaded from the disk cache: a binary that fails to load or build is a miss, and the
 * source build that replaces it gives right results. */
static void test_program_from_disk_cache(void **state)
{
    assert_true(sweep(verify, "verify", "example.axpy", "always") >= 2);
}

/* Prepared launches (recorded kernel copies, and a library call run again) and their events. */
static void test_prepared_timed_launches(void **state)
{
    sweep(prepared, "prepared", "example.axpy", "never");
    sweep(prepared, "prepared", "blas.gemm", "never");
}

/* A graph's recording (kernel copies), its replay and a replay's event. */
static void test_graph(void **state)
{
    sweep(graph_axpy, "graph", "example.axpy", "never");
}

/* CLBlast's warm-up calls (blas.gemm's: blas.gemm_batched's still end the process, see
 * plugins/blas/blas-clblast.c). */
static void test_warmup(void **state)
{
    sweep(warmup_then_verify, "warmup", "blas.gemm", "never");
}

/* The host-blas route (OpenBLAS as a native kernel between maps): a failing map, native kernel
 * or unmap is an error naming the call, and the runtime runs the next call right. Verification
 * of each routed kernel, and a prepared, timed GEMM (the native command's event). Skipped in a
 * build without OpenBLAS, or where the device runs no native kernels. */
static void test_host_blas_route(void **state)
{
    test_log log;
    host_blas = 1;
    kp_runtime *rt = open_runtime("never", &log);
    kp_kernel *k = NULL;
    kp_tuning_info info = {.struct_size = sizeof info};
    int routed = 0;
    if (kp_kernel_find(rt, "blas.gemm", &k) == KP_OK)
        for (size_t i = 0; kp_kernel_tuning(rt, k, i, &info) == KP_OK; i++)
            if (strcmp(info.name, "route") == 0)
                routed = info.value == 2; /* host-blas */
    kp_runtime_destroy(rt);
    if (!routed) {
        printf("blas: no host-blas route here (no OpenBLAS, or no native kernels)\n");
    } else {
        sweep(verify, "verify", "blas.gemm", "never");
        sweep(verify, "verify", "blas.gemm_batched", "never");
        sweep(verify, "verify", "blas.gemv", "never");
        sweep(prepared, "prepared", "blas.gemm", "never");
    }
    host_blas = 0;
}

static const char *const *named;

static void test_named_kernels(void **state)
{
    for (size_t i = 0; named[i]; i++)
        sweep(verify, "verify", named[i], "never");
}

int main(int argc, char **argv)
{
    show_messages = argc > 1 && strcmp(argv[1], "--messages") == 0;
    named = (const char *const *)argv + 1 + show_messages;
    if (*named) {
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_named_kernels)};
        return cmocka_run_group_tests(tests, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verify_each_family),
        cmocka_unit_test(test_program_from_disk_cache),
        cmocka_unit_test(test_prepared_timed_launches),
        cmocka_unit_test(test_graph),
        cmocka_unit_test(test_warmup),
        cmocka_unit_test(test_host_blas_route),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
