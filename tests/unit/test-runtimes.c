/* SPDX-License-Identifier: Apache-2.0 */
/* Several runtimes in one process (issue #29): two threads each create a runtime at the same
 * moment (every built plugin's init runs in both), launch, record and replay a graph and read the
 * results back while the other does the same, and fail calls on purpose to check that each
 * thread's kp_last_error holds its own message; one thread records graphs on two runtimes at once
 * and replays one runtime's graph while recording on the other; each runtime refuses the other's
 * buffers and kernels. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test-util.h"

enum { N = 257, LAUNCHES = 40, ERROR_ROUNDS = 200 };

/* Options for a runtime that loads every plugin of the build (built without touching the static
 * buffers of test-util.h, so that threads can call it). */
static kp_runtime_options options(const char *const *dirs, int second)
{
    /* KP_TEST_DEVICE_2 puts the second runtime on another device (scripts/gpu/mpi.sh: the second
     * GPU); by default both share the test device. */
    const char *other = getenv("KP_TEST_DEVICE_2");
    kp_runtime_options o = kp_runtime_options_default();
    o.flags = KP_RUNTIME_NO_ENV | KP_RUNTIME_NO_USER_MANIFESTS | KP_RUNTIME_NO_INSTALLED_PLUGINS |
              KP_RUNTIME_NO_BUILTIN_TUNING;
    o.plugin_dirs = dirs;
    o.n_plugin_dirs = 1;
    o.device = second && other && *other ? other : test_device();
    return o;
}

/* Small integers, so that every sum is exact and the device's and the host's agree bit for bit. */
static void integers(float *v, int seed)
{
    for (int i = 0; i < N; i++)
        v[i] = (float)((i * 7 + seed * 13) % 9 - 4);
}

static kp_status axpy(kp_runtime *rt, kp_kernel *k, float alpha, kp_buffer *x, kp_buffer *y)
{
    kp_arg args[] = {KP_ARG_INT("n", N), KP_ARG_FLOAT("alpha", alpha),
                     KP_ARG_TENSOR("x", kp_tensor_1d(x, KP_F32, N)),
                     KP_ARG_TENSOR("y", kp_tensor_1d(y, KP_F32, N))};
    return kp_kernel_launch(rt, k, args, 4, NULL);
}

/* Launch i of a chain: y += s x on even i, x -= s y on odd ones (each reads what the last wrote,
 * so a launch lost or run out of order shows). */
static kp_status chain_step(kp_runtime *rt, kp_kernel *k, int i, float s, kp_buffer *x,
                            kp_buffer *y)
{
    return i % 2 ? axpy(rt, k, -s, y, x) : axpy(rt, k, s, x, y);
}

static void host_chain(int launches, float s, float *x, float *y)
{
    for (int i = 0; i < launches; i++)
        for (int j = 0; j < N; j++) {
            if (i % 2)
                x[j] = -s * y[j] + x[j];
            else
                y[j] = s * x[j] + y[j];
        }
}

typedef struct worker {
    int id;
    const char *const *dirs;
    pthread_barrier_t *start;
    char failure[1024]; /* "" when every check passed */
} worker;

static void fail_with(worker *w, const char *fmt, ...) KP_PRINTF(2, 3);
static void fail_with(worker *w, const char *fmt, ...)
{
    if (w->failure[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->failure, sizeof w->failure, fmt, ap);
    va_end(ap);
}

/* The worker's own failing calls: each message names a value only this thread and round use. */
static void check_errors(worker *w, kp_runtime *rt, kp_buffer *x)
{
    float v;
    for (int r = 0; r < ERROR_ROUNDS && !w->failure[0]; r++) {
        const size_t offset = 1000000u + (size_t)w->id * 100000u + (size_t)r;
        if (kp_buffer_read(rt, x, offset, sizeof v, &v) != KP_ERR_INVALID_ARG) {
            fail_with(w, "worker %d: a read past the end did not fail", w->id);
            return;
        }
        char want[32];
        snprintf(want, sizeof want, "%zu", offset);
        if (!strstr(kp_last_error(rt), want))
            fail_with(w, "worker %d: kp_last_error(rt) is \"%s\", expected it to name %s", w->id,
                      kp_last_error(rt), want);
        char path[128];
        snprintf(path, sizeof path, "/nonexistent-kp-%d-%d/manifest.yaml", w->id, r);
        const kp_tuning_match match = {.vendor = "pocl"};
        const kp_tuned_value tv = {"example.axpy", "WG", "64"};
        if (kp_manifest_write_tuning(path, &match, &tv, 1, NULL, 0) == KP_OK)
            fail_with(w, "worker %d: writing %s succeeded", w->id, path);
        else if (!strstr(kp_last_error(NULL), path))
            fail_with(w, "worker %d: kp_last_error(NULL) is \"%s\", expected it to name %s", w->id,
                      kp_last_error(NULL), path);
    }
}

static void *work(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(w->start);
    kp_runtime_options o = options(w->dirs, w->id == 1);
    kp_runtime *rt = NULL;
    kp_status st = kp_runtime_create(&o, &rt);
    if (st != KP_OK) {
        fail_with(w, "worker %d: kp_runtime_create: %s", w->id, kp_last_error(NULL));
        return NULL;
    }
    kp_kernel *k = NULL;
    kp_buffer *gx = NULL, *gy = NULL, *dx = NULL, *dy = NULL;
    kp_graph *g = NULL;
    const float s = (float)(w->id + 1);
    float x[N], y[N], got[N];
    integers(x, w->id);
    integers(y, w->id + 5);
    kp_buffer **bufs[] = {&gx, &gy, &dx, &dy};
    st = kp_kernel_find(rt, "example.axpy", &k);
    for (int i = 0; st == KP_OK && i < 4; i++) {
        st = kp_buffer_create(rt, sizeof x, bufs[i]);
        if (st == KP_OK)
            st = kp_buffer_write(rt, *bufs[i], 0, sizeof x, i % 2 ? y : x);
    }
    /* The direct chain on (dx, dy) and the recorded one, replayed twice, on (gx, gy). */
    for (int i = 0; st == KP_OK && i < 2 * LAUNCHES; i++)
        st = chain_step(rt, k, i, s, dx, dy);
    if (st == KP_OK)
        st = kp_graph_begin(rt, 0);
    for (int i = 0; st == KP_OK && i < LAUNCHES; i++)
        st = chain_step(rt, k, i, s, gx, gy);
    if (st == KP_OK)
        st = kp_graph_end(rt, &g);
    for (int r = 0; st == KP_OK && r < 2; r++)
        st = kp_graph_replay(g, NULL);
    if (st != KP_OK) {
        fail_with(w, "worker %d: %s: %s", w->id, kp_status_name(st), kp_last_error(rt));
    } else {
        host_chain(2 * LAUNCHES, s, x, y);
        kp_buffer *check[] = {dx, dy, gx, gy};
        for (int i = 0; i < 4 && !w->failure[0]; i++) {
            const float *want = i % 2 ? y : x;
            st = kp_buffer_read(rt, check[i], 0, sizeof got, got);
            for (int j = 0; j < N && st == KP_OK && !w->failure[0]; j++)
                if (got[j] != want[j])
                    fail_with(w, "worker %d: %s %s[%d] is %g, expected %g", w->id,
                              i < 2 ? "direct" : "replayed", i % 2 ? "y" : "x", j, (double)got[j],
                              (double)want[j]);
            if (st != KP_OK)
                fail_with(w, "worker %d: read: %s", w->id, kp_last_error(rt));
        }
        check_errors(w, rt, gx);
    }
    kp_graph_destroy(g);
    kp_runtime_destroy(rt);
    return NULL;
}

static void test_two_threads(void **state)
{
    const char *dirs[] = {test_build_path("lib/kernelport/plugins")};
    pthread_barrier_t start;
    assert_int_equal(pthread_barrier_init(&start, NULL, 2), 0);
    worker w[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        w[i] = (worker){.id = i, .dirs = dirs, .start = &start};
        assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < 2; i++)
        if (w[i].failure[0])
            fail_msg("%s", w[i].failure);
}

/* One thread, two runtimes: a recording on each at once, and a replay on one while the other
 * records. */
static void test_one_thread_two_recordings(void **state)
{
    const char *dirs[] = {test_build_path(KP_TEST_EXAMPLE_PLUGIN_DIR)};
    kp_runtime *rt[2] = {NULL, NULL};
    kp_kernel *k[2];
    kp_buffer *x[2], *y[2];
    float hx[2][N], hy[2][N], got[N];
    for (int r = 0; r < 2; r++) {
        kp_runtime_options o = options(dirs, r);
        assert_int_equal(kp_runtime_create(&o, &rt[r]), KP_OK);
        assert_int_equal(kp_kernel_find(rt[r], "example.axpy", &k[r]), KP_OK);
        integers(hx[r], r);
        integers(hy[r], r + 3);
        assert_int_equal(kp_buffer_create(rt[r], sizeof got, &x[r]), KP_OK);
        assert_int_equal(kp_buffer_create(rt[r], sizeof got, &y[r]), KP_OK);
        assert_int_equal(kp_buffer_write(rt[r], x[r], 0, sizeof got, hx[r]), KP_OK);
        assert_int_equal(kp_buffer_write(rt[r], y[r], 0, sizeof got, hy[r]), KP_OK);
    }
    kp_graph *first = NULL, *g[2] = {NULL, NULL};
    assert_int_equal(kp_graph_begin(rt[1], 0), KP_OK);
    assert_int_equal(chain_step(rt[1], k[1], 0, 1.0f, x[1], y[1]), KP_OK);
    assert_int_equal(kp_graph_end(rt[1], &first), KP_OK);

    assert_int_equal(kp_graph_begin(rt[0], 0), KP_OK);
    assert_int_equal(kp_graph_begin(rt[1], 0), KP_OK);
    assert_int_equal(kp_graph_begin(rt[1], 0), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt[1]), "already recording"));
    for (int i = 0; i < 6; i++)
        for (int r = 0; r < 2; r++)
            assert_int_equal(chain_step(rt[r], k[r], i, 2.0f, x[r], y[r]), KP_OK);
    /* rt[1]'s earlier graph replays now (rt[0] records, rt[1] too: a replay on a runtime this
     * thread records on is refused). */
    assert_int_equal(kp_graph_replay(first, NULL), KP_ERR_INVALID_ARG);
    assert_int_equal(kp_graph_end(rt[1], &g[1]), KP_OK);
    assert_int_equal(kp_graph_replay(first, NULL), KP_OK);
    host_chain(1, 1.0f, hx[1], hy[1]);
    /* Recording on rt[0] captured nothing of rt[1], and rt[1]'s host transfers work. */
    assert_int_equal(kp_buffer_read(rt[1], y[1], 0, sizeof got, got), KP_OK);
    assert_memory_equal(got, hy[1], sizeof got);
    assert_int_equal(kp_buffer_read(rt[0], y[0], 0, sizeof got, got), KP_ERR_INVALID_ARG);
    assert_int_equal(kp_graph_end(rt[0], &g[0]), KP_OK);
    for (int r = 0; r < 2; r++) {
        kp_graph_info info = {.struct_size = sizeof info};
        assert_int_equal(kp_graph_get_info(g[r], &info), KP_OK);
        assert_int_equal(info.n_launches, 6);
        assert_int_equal(kp_graph_replay(g[r], NULL), KP_OK);
        host_chain(6, 2.0f, hx[r], hy[r]);
        assert_int_equal(kp_buffer_read(rt[r], x[r], 0, sizeof got, got), KP_OK);
        assert_memory_equal(got, hx[r], sizeof got);
        assert_int_equal(kp_buffer_read(rt[r], y[r], 0, sizeof got, got), KP_OK);
        assert_memory_equal(got, hy[r], sizeof got);
        kp_graph_destroy(g[r]);
    }
    kp_graph_destroy(first);
    /* A buffer or a kernel of one runtime is refused by the other. */
    assert_int_equal(chain_step(rt[0], k[0], 0, 1.0f, x[1], y[0]), KP_ERR_INVALID_ARG);
    assert_int_equal(chain_step(rt[0], k[1], 0, 1.0f, x[0], y[0]), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt[0]),
                        "kp_kernel_launch: kernel example.axpy belongs to another runtime (each "
                        "runtime finds its own with kp_kernel_find)");
    kp_prepared *p = NULL;
    assert_int_equal(kp_prepared_create(rt[1], k[0], NULL, 0, &p), KP_ERR_INVALID_ARG);
    assert_null(p);
    assert_int_equal(kp_kernel_tunable_set(rt[1], k[0], "WG", 64), KP_ERR_INVALID_ARG);
    assert_int_equal(kp_kernel_supported(rt[1], k[0]), KP_ERR_INVALID_ARG);
    /* A layered library's message lands in its runtime's slot only (comm.h's do). */
    assert_int_equal(kp_last_error_set(rt[1], KP_ERR_IO, "layer %d: %s", 3, "lost"), KP_ERR_IO);
    assert_string_equal(kp_last_error(rt[1]), "layer 3: lost");
    assert_non_null(strstr(kp_last_error(rt[0]), "belongs to another runtime"));
    assert_int_equal(kp_last_error_set(NULL, KP_ERR_IO, "no runtime"), KP_ERR_IO);
    assert_string_equal(kp_last_error(NULL), "no runtime");
    for (int r = 0; r < 2; r++)
        kp_runtime_destroy(rt[r]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_threads),
        cmocka_unit_test(test_one_thread_two_recordings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
