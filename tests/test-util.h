/* SPDX-License-Identifier: Apache-2.0 */
/* Shared helpers for the tests: isolated runtimes, captured logs, paths of build products. */
#ifndef KP_TEST_UTIL_H
#define KP_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernelport/kernelport.h"

/* A plugin directory holding only the example plugin (tests count what gets loaded). */
#define KP_TEST_EXAMPLE_PLUGIN_DIR "test-plugins/example"

/* Captured log lines, so tests can assert on warnings. */
typedef struct test_log {
    char text[16384];
    size_t used;
} test_log;

static inline void test_log_sink(void *user, kp_log_level level, const char *message)
{
    test_log *log = user;
    int n = snprintf(log->text + log->used, sizeof log->text - log->used, "%s: %s\n",
                     kp_log_level_name(level), message);
    if (n > 0 && log->used + (size_t)n < sizeof log->text)
        log->used += (size_t)n;
}

static inline const char *test_env(const char *name)
{
    const char *v = getenv(name);
    if (!v) {
        fprintf(stderr, "test: %s is not set (run the tests through ctest)\n", name);
        exit(2);
    }
    return v;
}

/* A path under the build tree, e.g. test_build_path(KP_TEST_EXAMPLE_PLUGIN_DIR). */
static inline char *test_build_path(const char *rel)
{
    static char buf[8][4096];
    static int next;
    char *out = buf[next++ % 8];
    snprintf(out, sizeof buf[0], "%s/%s", test_env("KP_TEST_BUILD"), rel);
    return out;
}

static inline char *test_fixture_path(const char *rel)
{
    static char buf[8][4096];
    static int next;
    char *out = buf[next++ % 8];
    snprintf(out, sizeof buf[0], "%s/%s", test_env("KP_TEST_FIXTURES"), rel);
    return out;
}

/*
 * The OpenCL device the kernel tests run on: KP_TEST_DEVICE (a device spec, e.g. "oclgrind" for
 * Oclgrind's simulator with its 32 KiB of local memory), else PoCL. Tests of PoCL itself (its
 * vendor rules, its cache) name "pocl" instead. scripts/test-device.sh runs the suite this way.
 */
static inline const char *test_device(void)
{
    const char *d = getenv("KP_TEST_DEVICE");
    return d && *d ? d : "pocl";
}

/* Options that ignore the environment, user manifests and the installed plugins, and load only
 * `dir` (may be NULL), logging into `log` (may be NULL). */
static inline kp_runtime_options test_options(const char *dir, const char *device, test_log *log)
{
    static const char *dirs[1];
    kp_runtime_options o = kp_runtime_options_default();
    o.flags = KP_RUNTIME_NO_ENV | KP_RUNTIME_NO_USER_MANIFESTS | KP_RUNTIME_NO_INSTALLED_PLUGINS |
              KP_RUNTIME_NO_BUILTIN_TUNING;
    dirs[0] = dir;
    o.plugin_dirs = dirs;
    o.n_plugin_dirs = dir ? 1 : 0;
    o.device = device;
    if (log) {
        log->used = 0;
        log->text[0] = '\0';
        o.log = test_log_sink;
        o.log_user = log;
        o.log_level = KP_LOG_DEBUG;
    }
    return o;
}

/* A runtime on test_device() loading only `dir`'s plugins (NULL: none) into *rt, for a test
 * group's setup: 0, or -1 after printing why. */
static inline int test_runtime(const char *dir, kp_runtime **rt)
{
    kp_runtime_options o = test_options(dir, test_device(), NULL);
    if (kp_runtime_create(&o, rt) == KP_OK)
        return 0;
    fprintf(stderr, "kp_runtime_create: %s\n", kp_last_error(NULL));
    return -1;
}

/* Uniform floats in [-1, 1) from a fixed-seed xorshift, never all zeros. */
static inline void test_fill(float *x, size_t n, unsigned seed)
{
    unsigned s = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        x[i] = (float)((double)s / 4294967296.0 * 2.0 - 1.0);
    }
}

/* Like test_fill, but every value lies in [-1.1, -0.1] or [0.1, 1.1): a kernel that skips an
 * element, or writes zero, cannot go unnoticed. */
static inline void test_fill_nonzero(float *x, size_t n, unsigned seed)
{
    test_fill(x, n, seed);
    for (size_t i = 0; i < n; i++)
        x[i] += x[i] < 0 ? -0.1f : 0.1f;
}

/* Whether the runtime's device has cl_khr_fp64 (0 when it cannot say). */
static inline int test_device_fp64(const kp_runtime *rt)
{
    kp_device_info info = {.struct_size = sizeof info};
    return kp_runtime_device(rt, &info, NULL) == KP_OK && info.fp64;
}

/* Writes `text` to KP_TEST_TMP/<name> and returns the path (one of 8 rotating static buffers). */
static inline char *test_write_tmp(const char *name, const char *text)
{
    static char buf[8][4096];
    static int next;
    char *path = buf[next++ % 8];
    snprintf(path, sizeof buf[0], "%s/%s", test_env("KP_TEST_TMP"), name);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "test: cannot write %s\n", path);
        exit(2);
    }
    return path;
}

#endif
