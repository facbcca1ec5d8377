/* SPDX-License-Identifier: Apache-2.0 */
/* Graphs (kp_graph_*): a chain of 1000 launches recorded and replayed, with and without command
 * buffers, against the same launches run directly; parameters (a scalar, the buffer a tensor
 * reads) changed between replays; copies and fills; a launch that cannot be recorded; a destroyed
 * buffer, a tuning change; the host device; bad calls. */
#include <pthread.h>
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
    if (log)
        o.log_level = KP_LOG_DEBUG;
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

enum { N = 257 };

static kp_buffer *upload(kp_runtime *rt, const float *v)
{
    kp_buffer *b = NULL;
    assert_int_equal(kp_buffer_create(rt, N * sizeof *v, &b), KP_OK);
    assert_int_equal(kp_buffer_write(rt, b, 0, N * sizeof *v, v), KP_OK);
    return b;
}

static void read_all(kp_runtime *rt, kp_buffer *b, float *v)
{
    assert_int_equal(kp_buffer_read(rt, b, 0, N * sizeof *v, v), KP_OK);
}

/* Small integers, so the sums stay exact. */
static void integers(float *v, int seed)
{
    for (int i = 0; i < N; i++)
        v[i] = (float)((i * 7 + seed * 13) % 9 - 4);
}

static kp_status axpy(kp_runtime *rt, float alpha, kp_buffer *x, kp_buffer *y)
{
    kp_arg args[] = {KP_ARG_INT("n", N), KP_ARG_FLOAT("alpha", alpha),
                     KP_ARG_TENSOR("x", kp_tensor_1d(x, KP_F32, N)),
                     KP_ARG_TENSOR("y", kp_tensor_1d(y, KP_F32, N))};
    return kp_kernel_launch(rt, find(rt, "example.axpy"), args, 4, NULL);
}

static void expect_equal(const float *got, const float *want, const char *what)
{
    for (int i = 0; i < N; i++)
        if (got[i] != want[i])
            fail_msg("%s: element %d is %g, expected %g", what, i, (double)got[i], (double)want[i]);
}

/*
 * 1000 launches alternating y += a x and x += b y (each reads what the last wrote, so any
 * reordering shows), recorded once and replayed three times; the same launches run directly on a
 * second pair of buffers give the expected values. Every replay path: a command buffer wherever
 * the device has one (PoCL's is checked here), kernel by kernel, and the default.
 */
static void test_chain(void **state)
{
    const uint32_t modes[] = {KP_GRAPH_COMMAND_BUFFER, KP_GRAPH_NO_COMMAND_BUFFER, 0};
    for (int mode = 0; mode < 3; mode++) {
        kp_runtime *rt = open_runtime(test_device(), NULL);
        float x0[N], y0[N];
        integers(x0, 1);
        integers(y0, 2);
        kp_buffer *gx = upload(rt, x0), *gy = upload(rt, y0);
        kp_buffer *dx = upload(rt, x0), *dy = upload(rt, y0);
        assert_int_equal(kp_graph_begin(rt, modes[mode]), KP_OK);
        for (int i = 0; i < 1000; i++)
            assert_int_equal(i % 2 ? axpy(rt, -1.0f, gy, gx) : axpy(rt, 1.0f, gx, gy), KP_OK);
        kp_graph *g = NULL;
        assert_int_equal(kp_graph_end(rt, &g), KP_OK);
        /* Recording ran nothing. */
        float got[N], want[N];
        read_all(rt, gy, got);
        expect_equal(got, y0, "y after recording");
        for (int r = 0; r < 3; r++) {
            assert_int_equal(kp_graph_replay(g, NULL), KP_OK);
            for (int i = 0; i < 1000; i++)
                assert_int_equal(i % 2 ? axpy(rt, -1.0f, dy, dx) : axpy(rt, 1.0f, dx, dy), KP_OK);
        }
        read_all(rt, gy, got);
        read_all(rt, dy, want);
        expect_equal(got, want, "y after three replays");
        read_all(rt, gx, got);
        read_all(rt, dx, want);
        expect_equal(got, want, "x after three replays");
        kp_graph_info info = {.struct_size = sizeof info};
        assert_int_equal(kp_graph_get_info(g, &info), KP_OK);
        assert_int_equal(info.n_launches, 1000);
        assert_int_equal(info.n_direct, 0);
        assert_true(info.n_commands >= 1000);
        assert_true(info.n_command_buffers <= 1);
        if (modes[mode] == KP_GRAPH_NO_COMMAND_BUFFER)
            assert_int_equal(info.n_command_buffers, 0);
        print_message("chain, flags %u: %zu command buffer(s)\n", (unsigned)modes[mode],
                      info.n_command_buffers);
        /* A replay is timed as one launch. */
        kp_event *ev = NULL;
        assert_int_equal(kp_graph_replay(g, &ev), KP_OK);
        double s = -1;
        assert_int_equal(kp_event_elapsed(rt, ev, &s), KP_OK);
        assert_true(s >= 0);
        kp_event_destroy(rt, ev);
        kp_graph_destroy(g);
        kp_runtime_destroy(rt);
    }
}

/* alpha of two launches and the x of one declared as parameters and changed between replays;
 * each replay gives what the same launches with those values give run directly. A value the
 * launch refuses changes nothing. */
static void test_parameters(void **state)
{
    kp_runtime *rt = open_runtime(test_device(), NULL);
    float x0[N], x1[N], y0[N];
    integers(x0, 3);
    integers(x1, 4);
    integers(y0, 5);
    kp_buffer *bx0 = upload(rt, x0), *bx1 = upload(rt, x1), *by = upload(rt, y0);
    kp_buffer *dy = upload(rt, y0);
    assert_int_equal(kp_graph_begin(rt, 0), KP_OK);
    assert_int_equal(axpy(rt, 1.0f, bx0, by), KP_OK);
    assert_int_equal(kp_graph_param(rt, "lr", "alpha"), KP_OK);
    assert_int_equal(kp_graph_param(rt, "batch", "x"), KP_OK);
    assert_int_equal(axpy(rt, 3.0f, bx1, by), KP_OK); /* not a parameter: stays 3 */
    assert_int_equal(axpy(rt, 1.0f, bx1, by), KP_OK);
    assert_int_equal(kp_graph_param(rt, "lr", "alpha"), KP_OK);
    kp_graph *g = NULL;
    assert_int_equal(kp_graph_end(rt, &g), KP_OK);
    const float lrs[] = {1.0f, 2.0f, -1.0f, 0.5f};
    for (int r = 0; r < 4; r++) {
        kp_buffer *batch = r % 2 ? bx1 : bx0;
        assert_int_equal(kp_graph_set_float(g, "lr", lrs[r]), KP_OK);
        assert_int_equal(kp_graph_set_tensor(g, "batch", kp_tensor_1d(batch, KP_F32, N)), KP_OK);
        assert_int_equal(kp_graph_replay(g, NULL), KP_OK);
        assert_int_equal(axpy(rt, lrs[r], batch, dy), KP_OK);
        assert_int_equal(axpy(rt, 3.0f, bx1, dy), KP_OK);
        assert_int_equal(axpy(rt, lrs[r], bx1, dy), KP_OK);
    }
    float got[N], want[N];
    read_all(rt, by, got);
    read_all(rt, dy, want);
    expect_equal(got, want, "y after replays with parameters");
    /* Wrong kind, unknown name, a value the kernel refuses: nothing changes. */
    assert_int_equal(kp_graph_set_int(g, "lr", 2), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt), "kp_graph_set \"lr\": expected float, got int");
    assert_int_equal(kp_graph_set_float(g, "momentum", 2), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt), "kp_graph_set: the graph has no parameter \"momentum\"");
    kp_tensor short_x = kp_tensor_1d(bx0, KP_F32, N + 1);
    assert_int_equal(kp_graph_set_tensor(g, "batch", short_x), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "kp_graph_set \"batch\" (launch 0)"));
    assert_int_equal(kp_graph_replay(g, NULL), KP_OK);
    assert_int_equal(axpy(rt, lrs[3], bx1, dy), KP_OK);
    assert_int_equal(axpy(rt, 3.0f, bx1, dy), KP_OK);
    assert_int_equal(axpy(rt, lrs[3], bx1, dy), KP_OK);
    read_all(rt, by, got);
    read_all(rt, dy, want);
    expect_equal(got, want, "y after a refused value");
    char text[1024];
    assert_int_equal(kp_graph_describe(g, text, sizeof text), KP_OK);
    assert_non_null(strstr(text, "parameter lr (float): 0.alpha 2.alpha\n"));
    assert_non_null(strstr(text, "parameter batch (tensor): 0.x\n"));
    kp_graph_destroy(g);
    kp_runtime_destroy(rt);
}

/* Fills and copies are recorded in order with the launches. */
static void test_transfers(void **state)
{
    kp_runtime *rt = open_runtime(test_device(), NULL);
    float x0[N], y0[N];
    integers(x0, 6);
    integers(y0, 7);
    kp_buffer *bx = upload(rt, x0), *by = upload(rt, y0), *bz = upload(rt, y0);
    const float two = 2.0f;
    assert_int_equal(kp_graph_begin(rt, 0), KP_OK);
    assert_int_equal(kp_buffer_fill(rt, by, 0, N * sizeof(float), &two, sizeof two), KP_OK);
    assert_int_equal(axpy(rt, 1.0f, bx, by), KP_OK);
    assert_int_equal(kp_buffer_copy(rt, by, 0, bz, 0, N * sizeof(float)), KP_OK);
    assert_int_equal(axpy(rt, 1.0f, bx, by), KP_OK);
    kp_graph *g = NULL;
    assert_int_equal(kp_graph_end(rt, &g), KP_OK);
    for (int r = 0; r < 2; r++)
        assert_int_equal(kp_graph_replay(g, NULL), KP_OK);
    float y[N], z[N];
    read_all(rt, by, y);
    read_all(rt, bz, z);
    for (int i = 0; i < N; i++) {
        assert_true(z[i] == 2.0f + x0[i]);
        assert_true(y[i] == 2.0f + 2.0f * x0[i]);
    }
    kp_graph_info info = {.struct_size = sizeof info};
    assert_int_equal(kp_graph_get_info(g, &info), KP_OK);
    assert_int_equal(info.n_transfers, 2);
    assert_int_equal(info.n_launches, 2);
    /* The copy's destination destroyed: the replay says which step cannot run. */
    assert_int_equal(kp_finish(rt), KP_OK);
    kp_buffer_destroy(rt, bz);
    assert_int_equal(kp_graph_replay(g, NULL), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt), "graph copy 2: a buffer it uses was destroyed");
    kp_graph_destroy(g);
    kp_runtime_destroy(rt);
}

/* nested.axpy2 launches example.axpy from its enqueue: recorded as a direct launch, listed as
 * such, and still run in order. On the host device every launch runs its reference. */
static void test_direct_and_host(void **state)
{
    const char *const devices[] = {test_device(), "host"};
    for (int d = 0; d < 2; d++) {
        kp_runtime *rt = open_runtime(devices[d], NULL);
        float x0[N], y0[N];
        integers(x0, 8);
        integers(y0, 9);
        kp_buffer *bx = upload(rt, x0), *by = upload(rt, y0);
        kp_arg args[] = {KP_ARG_INT("n", N), KP_ARG_TENSOR("x", kp_tensor_1d(bx, KP_F32, N)),
                         KP_ARG_TENSOR("y", kp_tensor_1d(by, KP_F32, N))};
        assert_int_equal(kp_graph_begin(rt, 0), KP_OK);
        assert_int_equal(axpy(rt, 1.0f, bx, by), KP_OK);
        assert_int_equal(kp_kernel_launch(rt, find(rt, "nested.axpy2"), args, 3, NULL), KP_OK);
        assert_int_equal(axpy(rt, -3.0f, by, bx), KP_OK);
        kp_graph *g = NULL;
        assert_int_equal(kp_graph_end(rt, &g), KP_OK);
        float x[N] = {0}, y[N] = {0};
        for (int r = 0; r < 2; r++)
            assert_int_equal(kp_graph_replay(g, NULL), KP_OK);
        read_all(rt, bx, x);
        read_all(rt, by, y);
        float wx[N], wy[N];
        memcpy(wx, x0, sizeof wx);
        memcpy(wy, y0, sizeof wy);
        for (int r = 0; r < 2; r++)
            for (int i = 0; i < N; i++) {
                wy[i] += 3.0f * wx[i];
                wx[i] -= 3.0f * wy[i];
            }
        expect_equal(x, wx, "x");
        expect_equal(y, wy, "y");
        char text[1024];
        assert_int_equal(kp_graph_describe(g, text, sizeof text), KP_OK);
        assert_non_null(strstr(text, d == 0 ? "1 nested.axpy2: direct (host->launch)\n"
                                            : "1 nested.axpy2: direct (the host device runs "
                                              "references)\n"));
        kp_graph_destroy(g);
        kp_runtime_destroy(rt);
    }
}

/* A destroyed buffer is reported with the launch, kernel and argument; a tuning change records
 * that launch again (logged) and the results stay right. */
static void test_invalidation(void **state)
{
    test_log log;
    kp_runtime *rt = open_runtime(test_device(), &log);
    float x0[N], y0[N];
    integers(x0, 10);
    integers(y0, 11);
    kp_buffer *bx = upload(rt, x0), *by = upload(rt, y0), *bw = upload(rt, x0);
    assert_int_equal(kp_graph_begin(rt, 0), KP_OK);
    assert_int_equal(axpy(rt, 1.0f, bx, by), KP_OK);
    assert_int_equal(axpy(rt, 1.0f, bw, by), KP_OK);
    kp_graph *g = NULL;
    assert_int_equal(kp_graph_end(rt, &g), KP_OK);
    assert_int_equal(kp_graph_replay(g, NULL), KP_OK);
    assert_int_equal(kp_kernel_tunable_set(rt, find(rt, "example.axpy"), "WG", 16), KP_OK);
    assert_int_equal(kp_graph_replay(g, NULL), KP_OK);
    assert_non_null(strstr(log.text, "graph launch 0 (example.axpy): recorded again, its "
                                     "kernel's tuning changed"));
    float y[N];
    read_all(rt, by, y);
    for (int i = 0; i < N; i++)
        assert_true(y[i] == y0[i] + 4.0f * x0[i]);
    assert_int_equal(kp_finish(rt), KP_OK);
    kp_buffer_destroy(rt, bw);
    assert_int_equal(kp_graph_replay(g, NULL), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt),
                        "graph launch 1: kernel example.axpy: argument \"x\": its buffer was "
                        "destroyed (bind another with kp_prepared_set)");
    kp_graph_destroy(g);
    kp_runtime_destroy(rt);
}

/* Calls that cannot be recorded or are out of place fail with a message and leave the recording
 * as it was. */
static void test_bad_calls(void **state)
{
    kp_runtime *rt = open_runtime(test_device(), NULL);
    float x0[N];
    integers(x0, 12);
    kp_buffer *bx = upload(rt, x0), *by = upload(rt, x0);
    kp_graph *g = NULL;
    assert_int_equal(kp_graph_end(rt, &g), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt),
                        "kp_graph_end: this thread is not recording a graph on this runtime");
    assert_int_equal(kp_graph_param(rt, "lr", "alpha"), KP_ERR_INVALID_ARG);
    assert_int_equal(kp_graph_begin(rt, 0x10), KP_ERR_INVALID_ARG);
    assert_int_equal(kp_graph_begin(rt, KP_GRAPH_COMMAND_BUFFER | KP_GRAPH_NO_COMMAND_BUFFER),
                     KP_ERR_INVALID_ARG);
    assert_int_equal(kp_graph_begin(rt, 0), KP_OK);
    assert_int_equal(kp_graph_begin(rt, 0), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt), "kp_graph_begin: this thread is already recording a "
                                           "graph on this runtime (end it with kp_graph_end "
                                           "first)");
    assert_int_equal(kp_graph_param(rt, "lr", "alpha"), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt),
                        "kp_graph_param \"lr\": the last thing recorded is not a kernel launch");
    float host[N];
    assert_int_equal(kp_buffer_write(rt, bx, 0, sizeof host, x0), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "kp_buffer_write: this thread is recording"));
    assert_int_equal(kp_buffer_read(rt, bx, 0, sizeof host, host), KP_ERR_INVALID_ARG);
    /* A launch its kernel's check refuses is not recorded. */
    kp_arg bad[] = {KP_ARG_INT("n", N - 1), KP_ARG_TENSOR("x", kp_tensor_1d(bx, KP_F32, N)),
                    KP_ARG_TENSOR("y", kp_tensor_1d(by, KP_F32, N))};
    assert_int_equal(kp_kernel_launch(rt, find(rt, "example.axpy"), bad, 3, NULL),
                     KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "expected shape [n]"));
    kp_event *ev = NULL;
    assert_int_equal(kp_kernel_launch(rt, find(rt, "example.axpy"), bad + 1, 2, &ev),
                     KP_ERR_INVALID_ARG);
    assert_null(ev);
    assert_non_null(strstr(kp_last_error(rt), "cannot return an event"));
    assert_int_equal(axpy(rt, 1.0f, bx, by), KP_OK);
    assert_int_equal(kp_graph_param(rt, "lr", "beta"), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt),
                        "kp_graph_param \"lr\": kernel example.axpy has no argument \"beta\"");
    assert_int_equal(kp_graph_param(rt, "lr", "alpha"), KP_OK);
    assert_int_equal(kp_graph_param(rt, "lr", "n"), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt), "kp_graph_param \"lr\": kernel example.axpy's argument "
                                           "\"n\" is int, but the parameter is float");
    /* Another runtime's calls run as usual on this thread. */
    kp_runtime *other = open_runtime("host", NULL);
    kp_buffer *ob = upload(other, x0);
    kp_buffer_destroy(other, ob);
    kp_runtime_destroy(other);
    assert_int_equal(kp_graph_end(rt, &g), KP_OK);
    assert_int_equal(kp_graph_replay(g, NULL), KP_OK);
    kp_graph_info info = {.struct_size = sizeof info};
    assert_int_equal(kp_graph_get_info(g, &info), KP_OK);
    assert_int_equal(info.n_launches, 1);
    assert_int_equal(info.n_params, 1);
    info.struct_size = 8;
    assert_int_equal(kp_graph_get_info(g, &info), KP_ERR_INVALID_ARG);
    float y[N];
    read_all(rt, by, y);
    for (int i = 0; i < N; i++)
        assert_true(y[i] == 2.0f * x0[i]);
    /* Replaying while this thread records another graph. */
    assert_int_equal(kp_graph_begin(rt, 0), KP_OK);
    assert_int_equal(kp_graph_replay(g, NULL), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt),
                        "kp_graph_replay: this thread is recording a graph on the graph's runtime");
    kp_graph *empty = NULL;
    assert_int_equal(kp_graph_end(rt, &empty), KP_OK);
    assert_int_equal(kp_graph_replay(empty, NULL), KP_OK);
    kp_graph_destroy(empty);
    /* Left for kp_runtime_destroy to release. */
    (void)g;
    kp_runtime_destroy(rt);
}

typedef struct other_thread {
    kp_runtime *rt;
    kp_buffer *x, *y;
    kp_status st;
} other_thread;

static void *launch_from_other_thread(void *arg)
{
    other_thread *o = arg;
    o->st = axpy(o->rt, 1.0f, o->x, o->y);
    if (o->st == KP_OK)
        o->st = kp_finish(o->rt);
    return NULL;
}

/* While one thread records, another thread's launch on the same runtime runs at once and stays
 * out of the graph. */
static void test_other_thread(void **state)
{
    kp_runtime *rt = open_runtime(test_device(), NULL);
    float x0[N], y0[N];
    integers(x0, 13);
    integers(y0, 14);
    kp_buffer *bx = upload(rt, x0), *by = upload(rt, y0), *bz = upload(rt, y0);
    assert_int_equal(kp_graph_begin(rt, 0), KP_OK);
    assert_int_equal(axpy(rt, 1.0f, bx, bz), KP_OK);
    other_thread o = {.rt = rt, .x = bx, .y = by};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, launch_from_other_thread, &o), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(o.st, KP_OK);
    kp_graph *g = NULL;
    assert_int_equal(kp_graph_end(rt, &g), KP_OK);
    kp_graph_info info = {.struct_size = sizeof info};
    assert_int_equal(kp_graph_get_info(g, &info), KP_OK);
    assert_int_equal(info.n_launches, 1);
    float y[N], z[N];
    read_all(rt, by, y);
    read_all(rt, bz, z);
    for (int i = 0; i < N; i++) {
        assert_true(y[i] == y0[i] + x0[i]);
        assert_true(z[i] == y0[i]);
    }
    kp_graph_destroy(g);
    kp_runtime_destroy(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain),        cmocka_unit_test(test_parameters),
        cmocka_unit_test(test_transfers),    cmocka_unit_test(test_direct_and_host),
        cmocka_unit_test(test_invalidation), cmocka_unit_test(test_bad_calls),
        cmocka_unit_test(test_other_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
