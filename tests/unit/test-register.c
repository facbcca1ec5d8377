/* SPDX-License-Identifier: Apache-2.0 */
/* Kernels registered at run time (kp_kernel_register): a kernel whose OpenCL C the test generates,
 * its descriptor freed right after registering, launched, then verified, benchmarked, tuned and
 * explained through the kernelport tool's own code paths (cli_main on the test's runtime). */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli.h"
#include "kernelport/plugin.h"
#include "test-util.h"

static const kp_host_api *host;

/* y = x * scale + shift, scale and shift baked into the generated source. */
static const double scale = 1.5, shift = -0.25;

static kp_status enqueue(const kp_call *call, kp_launch *l)
{
    const kp_tensor *x = &call->args[0].tensor;
    size_t wg = (size_t)host->tunable(l, "WG"), n = (size_t)kp_tensor_numel(x);
    size_t global = (n + wg - 1) / wg * wg;
    kp_clargs a = kp_clargs_begin(host, l, "gen_affine", NULL);
    kp_clargs_int(&a, (int32_t)n);
    kp_clargs_tensor(&a, x, 1);
    kp_clargs_tensor(&a, &call->args[1].tensor, 1);
    return kp_clargs_enqueue(&a, 1, &global, &wg);
}

static kp_status reference(const kp_call *call, kp_launch *l)
{
    const kp_tensor *x = &call->args[0].tensor, *y = &call->args[1].tensor;
    const float *xs = call->args[0].host;
    float *ys = call->args[1].host;
    for (int64_t i = 0; i < x->shape[0]; i++)
        ys[y->offset + i * y->strides[0]] =
            (float)((double)xs[x->offset + i * x->strides[0]] * scale + shift);
    return KP_OK;
}

static kp_status sample(kp_sample *s, const char *size)
{
    /* "prime" reads x at a stride of 2 (every other element of a longer storage). */
    int64_t n = size[0] == 'p' ? 1009 : 1, stride = size[0] == 'p' ? 2 : 1, stored = n * stride;
    kp_status st = host->sample_tensor(s, "x", KP_F32, 1, &stored, -2.0, 2.0, NULL);
    if (st == KP_OK)
        st = host->sample_tensor(s, "y", KP_F32, 1, &n, 0.0, 0.0, NULL);
    if (st == KP_OK && stride > 1)
        st = host->sample_view(s, "x", 1, &n, 0, &stride);
    return st;
}

static void cost(const kp_call *call, kp_cost *out)
{
    double n = (double)kp_tensor_numel(&call->args[0].tensor);
    out->flops = 2 * n;
    out->bytes = 8 * n;
}

/* A descriptor in heap memory the test frees after registering, source generated with snprintf. */
typedef struct generated {
    kp_kernel_desc desc;
    kp_param_desc params[2];
    kp_tunable_desc tunable;
    int64_t allowed[3];
    char source[512], name[32], summary[64], entry[16], p0[4], p1[4], t0[4];
    const char *sizes[4];
} generated;

static generated *generate(void)
{
    generated *g = calloc(1, sizeof *g);
    assert_non_null(g);
    snprintf(g->source, sizeof g->source,
             "__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))\n"
             "void gen_affine(const int n, __global const float *x, const kp_view1 xv,\n"
             "                __global float *y, const kp_view1 yv)\n"
             "{\n"
             "    const int i = get_global_id(0);\n"
             "    if (i < n)\n"
             "        y[kp_at1(yv, i)] = x[kp_at1(xv, i)] * %.17gf + %.17gf;\n"
             "}\n",
             scale, shift);
    strcpy(g->name, "gen.affine");
    strcpy(g->summary, "y = x * 1.5 - 0.25, generated at run time");
    strcpy(g->entry, "gen_affine");
    strcpy(g->p0, "x");
    strcpy(g->p1, "y");
    strcpy(g->t0, "WG");
    g->params[0] = (kp_param_desc){
        .name = g->p0, .kind = KP_ARG_KIND_TENSOR, .access = KP_ACCESS_IN, .dtypes = KP_DT(KP_F32)};
    g->params[1] = (kp_param_desc){.name = g->p1,
                                   .kind = KP_ARG_KIND_TENSOR,
                                   .access = KP_ACCESS_OUT,
                                   .dtypes = KP_DT(KP_F32)};
    g->allowed[0] = 16;
    g->allowed[1] = 32;
    g->allowed[2] = 64;
    g->tunable = (kp_tunable_desc){.name = g->t0,
                                   .default_value = 32,
                                   .allowed = g->allowed,
                                   .n_allowed = 3,
                                   .flags = KP_TUNABLE_WORKGROUP};
    g->sizes[0] = "one";
    g->sizes[1] = "prime";
    g->sizes[2] = NULL;
    g->desc = (kp_kernel_desc){.struct_size = sizeof(kp_kernel_desc),
                               .name = g->name,
                               .summary = g->summary,
                               .params = g->params,
                               .n_params = 2,
                               .tunables = &g->tunable,
                               .n_tunables = 1,
                               .source = g->source,
                               .source_name = "gen-affine.cl",
                               .entry = g->entry,
                               .enqueue = enqueue,
                               .reference = reference,
                               .sample = sample,
                               .cost = cost,
                               .verify_sizes = g->sizes,
                               .bench_sizes = g->sizes + 1,
                               .atol = 1e-6,
                               .rtol = 1e-6};
    return g;
}

static kp_runtime *open_pocl(void)
{
    kp_runtime_options o = test_options(NULL, test_device(), NULL);
    kp_runtime *rt = NULL;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    return rt;
}

/* Points file descriptor `fd` at a scratch file named `name`; returns the saved descriptor. */
static int capture(int fd, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", test_env("KP_TEST_TMP"), name);
    int saved = dup(fd), f = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    assert_true(saved >= 0 && f >= 0);
    dup2(f, fd);
    close(f);
    return saved;
}

static void captured(int fd, int saved, const char *name, char *out, size_t size)
{
    dup2(saved, fd);
    close(saved);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", test_env("KP_TEST_TMP"), name);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(out, 1, size - 1, f);
    out[n] = '\0';
    fclose(f);
}

/* Runs `kernelport ARGS...` on rt with stdout (and stderr, when err is not NULL) in files; its
 * exit code, the output in out and err. */
static int run_cli_err(kp_runtime *rt, char *out, size_t size, char *err, size_t err_size, int argc,
                       char **argv)
{
    fflush(stdout);
    fflush(stderr);
    int saved = capture(1, "cli-out.txt"), saved_err = err ? capture(2, "cli-err.txt") : -1;
    int rc = cli_main(argc, argv, rt);
    fflush(stdout);
    fflush(stderr);
    captured(1, saved, "cli-out.txt", out, size);
    if (err)
        captured(2, saved_err, "cli-err.txt", err, err_size);
    return rc;
}

static int run_cli(kp_runtime *rt, char *out, size_t size, int argc, char **argv)
{
    return run_cli_err(rt, out, size, NULL, 0, argc, argv);
}

static char *read_text(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t len = fread(buf, 1, size - 1, f);
    buf[len] = '\0';
    fclose(f);
    return buf;
}

static void test_generated_kernel_runs(void **state)
{
    kp_runtime *rt = open_pocl();
    host = kp_host_api_get();
    generated *g = generate();
    kp_kernel *k = NULL;
    assert_int_equal(kp_kernel_register(rt, &g->desc, &k), KP_OK);
    memset(g, 0xab, sizeof *g); /* the runtime holds copies, not these */
    free(g);
    kp_kernel *found;
    assert_int_equal(kp_kernel_find(rt, "gen.affine", &found), KP_OK);
    assert_ptr_equal(found, k);
    kp_kernel_info info = {.struct_size = sizeof info};
    assert_int_equal(kp_kernel_info_get(k, &info), KP_OK);
    assert_string_equal(info.plugin, "runtime");
    assert_string_equal(info.plugin_path, "(registered at run time)");
    enum { n = 77 };
    float x[n], y[n];
    test_fill(x, n, 3);
    kp_buffer *bx, *by;
    assert_int_equal(kp_buffer_create(rt, sizeof x, &bx), KP_OK);
    assert_int_equal(kp_buffer_create(rt, sizeof y, &by), KP_OK);
    assert_int_equal(kp_buffer_write(rt, bx, 0, sizeof x, x), KP_OK);
    kp_arg args[] = {KP_ARG_TENSOR("x", kp_tensor_1d(bx, KP_F32, n)),
                     KP_ARG_TENSOR("y", kp_tensor_1d(by, KP_F32, n))};
    assert_int_equal(kp_kernel_launch(rt, k, args, 2, NULL), KP_OK);
    assert_int_equal(kp_buffer_read(rt, by, 0, sizeof y, y), KP_OK);
    for (int i = 0; i < n; i++)
        assert_float_equal(y[i], x[i] * 1.5f - 0.25f, 1e-6);
    kp_runtime_destroy(rt);
}

static void test_cli_verifies_benches_tunes_and_explains_it(void **state)
{
    kp_runtime *rt = open_pocl();
    host = kp_host_api_get();
    generated *g = generate();
    kp_kernel *k = NULL;
    assert_int_equal(kp_kernel_register(rt, &g->desc, &k), KP_OK);
    free(g);
    static char out[1 << 16];

    char *verify[] = {"kernelport", "verify", "gen.affine"};
    assert_int_equal(run_cli(rt, out, sizeof out, 3, verify), CLI_EXIT_OK);
    assert_non_null(strstr(out, "gen.affine"));
    assert_non_null(strstr(out, "2 checks, 0 failed"));

    char *bench[] = {"kernelport", "--json", "bench",     "gen.affine",
                     "--runs",     "3",      "--seconds", "0.01"};
    assert_int_equal(run_cli(rt, out, sizeof out, 8, bench), CLI_EXIT_OK);
    assert_non_null(strstr(out, "\"gen.affine\""));
    assert_non_null(strstr(out, "\"prime\""));

    char path[4096];
    snprintf(path, sizeof path, "%s/tuned.yaml", test_env("KP_TEST_TMP"));
    unlink(path);
    char *tune[] = {"kernelport", "--json", "tune",    "gen.affine",
                    "--budget",   "30",     "--write", path};
    assert_int_equal(run_cli(rt, out, sizeof out, 8, tune), CLI_EXIT_OK);
    /* Whether another WG beats the default 32 beyond noise is the device's to say; either way
     * the file holds no WG: 32 that is not the restoring of a saved candidate. */
    char written[4096];
    if (strstr(out, "\"improved\": true")) {
        assert_non_null(read_text(path, written, sizeof written));
        assert_non_null(strstr(written, "gen.affine: { WG: "));
        assert_null(strstr(written, "WG: 32"));
    } else if (read_text(path, written, sizeof written)) {
        assert_non_null(strstr(written, "gen.affine: { WG: 32 }"));
        assert_non_null(strstr(written, "none: the previous values restored"));
    }

    char *explain[] = {"kernelport", "explain", "gen.affine"};
    assert_int_equal(run_cli(rt, out, sizeof out, 3, explain), CLI_EXIT_OK);
    assert_non_null(strstr(out, "runtime"));
    assert_non_null(strstr(out, "WG = 32"));
    kp_runtime_destroy(rt);
}

/* explain on a kernel whose source does not build names each tunable it could not resolve (it
 * printed "(tunable 0) = ?"), text and JSON. */
static void test_explain_names_unresolved_tunables(void **state)
{
    kp_runtime *rt = open_pocl();
    host = kp_host_api_get();
    generated *g = generate();
    snprintf(g->source, sizeof g->source, "__kernel void gen_affine( { not C\n");
    strcpy(g->name, "gen.broken");
    kp_kernel *k = NULL;
    assert_int_equal(kp_kernel_register(rt, &g->desc, &k), KP_OK);
    free(g);
    static char out[1 << 16];
    char *explain[] = {"kernelport", "explain", "gen.broken"};
    assert_int_equal(run_cli(rt, out, sizeof out, 3, explain), CLI_EXIT_FAILED);
    assert_non_null(strstr(out, "WG = ? (not resolved)"));
    char *json[] = {"kernelport", "--json", "explain", "gen.broken"};
    assert_int_equal(run_cli(rt, out, sizeof out, 4, json), CLI_EXIT_FAILED);
    assert_non_null(strstr(out, "\"name\": \"WG\""));
    assert_non_null(strstr(out, "\"status\": \"KP_ERR_BUILD\""));
    kp_runtime_destroy(rt);
}

/* tune --write to a directory that is not there is refused before the search (it searched, then
 * failed to write, once per improvement). */
static void test_tune_write_checked_first(void **state)
{
    kp_runtime *rt = open_pocl();
    static char out[1 << 16];
    char path[4096];
    snprintf(path, sizeof path, "%s/no-such-dir/tuned.yaml", test_env("KP_TEST_TMP"));
    char *tune[] = {"kernelport", "tune", "example.axpy", "--budget", "30", "--write", path};
    assert_int_equal(run_cli(rt, out, sizeof out, 7, tune), CLI_EXIT_USAGE);
    assert_null(strstr(out, "best so far"));
    kp_runtime_destroy(rt);
}

/* tune never writes the starting values back (the first "best so far", the starting WG 32, was
 * written as found), gives numbers as JSON numbers (they were strings), and with --json shows
 * its progress on stderr (#28). A search of one point: only the starting values. */
static void test_tune_keeps_the_starting_values(void **state)
{
    kp_runtime *rt = open_pocl();
    host = kp_host_api_get();
    generated *g = generate();
    kp_kernel *k = NULL;
    assert_int_equal(kp_kernel_register(rt, &g->desc, &k), KP_OK);
    free(g);
    static char out[1 << 16], err[1 << 16];
    char path[4096];
    snprintf(path, sizeof path, "%s/kept.yaml", test_env("KP_TEST_TMP"));
    unlink(path);
    char *tune[] = {"kernelport", "--json",  "tune", "gen.affine", "--only",
                    "none",       "--write", path,   "--budget",   "30"};
    assert_int_equal(run_cli_err(rt, out, sizeof out, err, sizeof err, 10, tune), CLI_EXIT_OK);
    assert_int_not_equal(access(path, F_OK), 0);
    assert_non_null(strstr(out, "\"best\": {\n        \"WG\": 32\n      }"));
    assert_non_null(strstr(out, "\"changes\": {}"));
    assert_non_null(strstr(out, "\"improved\": false"));
    assert_null(strstr(out, "best so far"));
    assert_non_null(strstr(err, "  gen.affine [32]  best so far  "));
    kp_runtime_destroy(rt);
}

static void test_bad_descriptors_are_refused(void **state)
{
    kp_runtime *rt = open_pocl();
    host = kp_host_api_get();
    generated *g = generate();
    kp_kernel *k = NULL;
    assert_int_equal(kp_kernel_register(rt, &g->desc, &k), KP_OK);
    /* The same name again. */
    assert_int_equal(kp_kernel_register(rt, &g->desc, &k), KP_ERR_INVALID_ARG);
    assert_null(k);
    assert_string_equal(kp_last_error(rt),
                        "kp_kernel_register: a kernel named \"gen.affine\" is already registered");
    /* A name that is not family.op. */
    strcpy(g->name, "Gen");
    assert_int_equal(kp_kernel_register(rt, &g->desc, &k), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "invalid kernel name \"Gen\""));
    /* More parameters than a kernel may have, and NULL arguments. */
    g->desc.n_params = KP_MAX_PARAMS + 1;
    assert_int_equal(kp_kernel_register(rt, &g->desc, &k), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "parameters (at most 64)"));
    g->desc.n_params = 2;
    assert_int_equal(kp_kernel_register(rt, NULL, &k), KP_ERR_INVALID_ARG);
    assert_int_equal(kp_kernel_register(rt, &g->desc, NULL), KP_ERR_INVALID_ARG);
    /* A default the tunable does not allow. */
    strcpy(g->name, "gen.other");
    g->tunable.default_value = 48;
    assert_int_equal(kp_kernel_register(rt, &g->desc, &k), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "default 48 is not an allowed value"));
    /* Source that does not compile: registered, then the launch says why, naming the file. */
    g->tunable.default_value = 16;
    strcpy(g->source, "__kernel void gen_affine(__global float *x) { x[0] = nope; }\n");
    assert_int_equal(kp_kernel_register(rt, &g->desc, &k), KP_OK);
    kp_buffer *b;
    assert_int_equal(kp_buffer_create(rt, 64, &b), KP_OK);
    kp_arg args[] = {KP_ARG_TENSOR("x", kp_tensor_1d(b, KP_F32, 4)),
                     KP_ARG_TENSOR("y", kp_tensor_1d(b, KP_F32, 4))};
    args[1].tensor.offset = 8;
    assert_int_equal(kp_kernel_launch(rt, k, args, 2, NULL), KP_ERR_BUILD);
    assert_non_null(strstr(kp_last_error(rt), "gen-affine.cl:1:"));
    assert_int_equal(kp_kernel_count(rt), 2);
    free(g);
    kp_runtime_destroy(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generated_kernel_runs),
        cmocka_unit_test(test_cli_verifies_benches_tunes_and_explains_it),
        cmocka_unit_test(test_explain_names_unresolved_tunables),
        cmocka_unit_test(test_tune_write_checked_first),
        cmocka_unit_test(test_tune_keeps_the_starting_values),
        cmocka_unit_test(test_bad_descriptors_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
