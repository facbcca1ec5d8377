/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the manifest loader: a good manifest, layers, paths (errors: test-manifest-errors.c). */
#include "test-manifest.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- helpers ----------------------------------------------------------------------------- */

char *kp__test_fixture(const char *name)
{
    const char *dir = getenv("KP_TEST_FIXTURES");
    char *path = NULL;
    assert_non_null(dir);
    assert_true(asprintf(&path, "%s/manifests/%s", dir, name) > 0);
    return path;
}

char *kp__test_fmt(const char *f, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, f);
    assert_true(vasprintf(&s, f, ap) >= 0);
    va_end(ap);
    return s;
}

void kp__test_load_ok(kp__manifest *m, const char *name, uint32_t layer)
{
    char *path = kp__test_fixture(name), *err = NULL;
    kp_status st = kp__manifest_load_file(m, path, layer, 1, &err);
    if (err)
        print_error("%s\n", err);
    assert_int_equal(st, KP_OK);
    assert_null(err);
    free(path);
}

void kp__test_text_ok(kp__manifest *m, const char *text, uint32_t layer)
{
    char *err = NULL;
    kp_status st = kp__manifest_load_text(m, text, strlen(text), "inline.yaml", layer, &err);
    if (err)
        print_error("%s\n", err);
    assert_int_equal(st, KP_OK);
    assert_null(err);
}

/* Loads good.yaml, then `load`s the broken input and checks its message and that nothing
 * changed; then loads good.yaml again, so the manifest is shown to stay usable. */
static void check_failure(kp_status (*load)(kp__manifest *m, const void *arg, char **err),
                          const void *arg, kp_status want, const char *expected)
{
    kp__manifest m;
    kp__manifest_init(&m);
    kp__test_load_ok(&m, "good.yaml", 0);
    size_t rules = m.n_rules, dirs = m.n_plugin_dirs, tuning = m.n_tuning, files = m.n_files;
    int64_t max_mb = m.cache_max_mb;

    char *err = NULL;
    assert_int_equal(load(&m, arg, &err), want);
    assert_non_null(err);
    assert_string_equal(err, expected);
    free(err);

    assert_int_equal(m.n_rules, rules);
    assert_int_equal(m.n_plugin_dirs, dirs);
    assert_int_equal(m.n_tuning, tuning);
    assert_int_equal(m.n_files, files);
    assert_int_equal(m.cache_max_mb, max_mb);
    assert_string_equal(m.rules[0].vendor, "nvidia");

    kp__test_load_ok(&m, "good.yaml", 1);
    assert_int_equal(m.n_tuning, 2 * tuning);
    assert_int_equal(m.n_plugin_dirs, 2 * dirs);
    assert_int_equal(m.n_files, files + 1);
    kp__manifest_fini(&m);
}

static kp_status load_fixture_arg(kp__manifest *m, const void *arg, char **err)
{
    char *path = kp__test_fixture(arg);
    kp_status st = kp__manifest_load_file(m, path, 5, 1, err);
    free(path);
    return st;
}

static kp_status load_text_arg(kp__manifest *m, const void *arg, char **err)
{
    return kp__manifest_load_text(m, arg, strlen(arg), "inline.yaml", 5, err);
}

/* `suffix` is everything after the fixture's real path. */
void kp__test_expect_fixture_error(const char *name, const char *suffix)
{
    char *path = kp__test_fixture(name), *expected = kp__test_fmt("%s%s", path, suffix);
    check_failure(load_fixture_arg, name, KP_ERR_MANIFEST, expected);
    free(expected);
    free(path);
}

void kp__test_expect_text_error(const char *text, const char *expected)
{
    check_failure(load_text_arg, text, KP_ERR_MANIFEST, expected);
}

static const kp__tuning_value *find_value(const kp__tuning_entry *e, const char *kernel,
                                          const char *key)
{
    for (size_t i = 0; i < e->n_values; i++)
        if (!strcmp(e->values[i].kernel, kernel) && !strcmp(e->values[i].key, key))
            return &e->values[i];
    fail_msg("no tuned value %s %s", kernel, key);
    return NULL;
}

static char *expand_ok(const char *in)
{
    char *out = NULL, *err = NULL;
    kp_status st = kp__path_expand(in, &out, &err);
    if (err)
        print_error("%s\n", err);
    assert_int_equal(st, KP_OK);
    assert_null(err);
    assert_non_null(out);
    return out;
}

static void expect_expand_error(const char *in, const char *expected)
{
    char *out = (char *)"sentinel", *err = NULL;
    assert_int_equal(kp__path_expand(in, &out, &err), KP_ERR_MANIFEST);
    assert_null(out);
    assert_non_null(err);
    assert_string_equal(err, expected);
    free(err);
}

/* ---- a good manifest --------------------------------------------------------------------- */

static void test_init_defaults(void **state)
{
    kp__manifest m;
    kp__manifest_init(&m);
    assert_int_equal(m.cache_max_mb, 512);
    assert_null(m.cache_dir);
    assert_int_equal(m.n_rules + m.n_tuning + m.n_files + m.n_plugin_dirs, 0);
    assert_int_equal(m.require_opencl, 0);
    kp__manifest_fini(&m);
    kp__manifest_fini(&m); /* fini leaves it empty, so twice is harmless */
    kp__manifest_fini(NULL);
}

static void test_good_manifest_loads_every_key(void **state)
{
    kp__manifest m;
    kp__manifest_init(&m);
    kp__test_load_ok(&m, "good.yaml", 0);
    char *path = kp__test_fixture("good.yaml"), *dir = kp__test_fixture("plugins");

    assert_int_equal(m.require_opencl, 1);
    assert_int_equal(m.n_rules, 4);
    assert_string_equal(m.rules[0].vendor, "nvidia"); /* written NVIDIA: stored canonical */
    assert_string_equal(m.rules[0].type, "gpu");
    assert_null(m.rules[0].name);
    assert_int_equal(m.rules[0].index, -1);
    assert_string_equal(m.rules[1].type, "gpu");
    assert_string_equal(m.rules[1].name, "Radeon");
    assert_string_equal(m.rules[1].arch, "gfx1030");
    assert_string_equal(m.rules[2].uuid, "GPU-8f3c");
    assert_int_equal(m.rules[2].index, 1);
    assert_null(m.rules[2].vendor);
    assert_string_equal(m.rules[3].type, "cpu");
    assert_string_equal(m.rules[1].loc.file, path);
    assert_int_equal(m.rules[1].loc.line, 7);
    assert_int_equal(m.rules[1].loc.col, 5);

    assert_int_equal(m.n_plugin_dirs, 3);
    assert_string_equal(m.plugin_dirs[0], "/opt/kernelport/plugins");
    assert_string_equal(m.plugin_dirs[1], dir);
    assert_string_equal(m.plugin_dirs[2], "/usr/lib/kernelport");
    assert_int_equal(m.n_disable, 2);
    assert_string_equal(m.disable[1], "gru.rollout");
    assert_int_equal(m.n_prefer, 2);
    assert_string_equal(m.prefer_kernel[1], "blas.gemm");
    assert_string_equal(m.prefer_plugin[1], "clblast");
    assert_int_equal(m.allow_insecure, 1);
    assert_int_equal(m.plugin_probe, 0);
    assert_string_equal(m.cache_dir, "/var/cache/kernelport");
    assert_int_equal(m.cache_max_mb, 256);

    assert_int_equal(m.n_tuning, 3);
    const kp__tuning_entry *e = &m.tuning[0];
    assert_string_equal(e->vendor, "nvidia");
    assert_string_equal(e->name, "H100");
    assert_string_equal(e->arch, "sm_90");
    assert_int_equal(e->loc.line, 23);
    assert_int_equal(e->loc.col, 5);
    assert_int_equal(e->n_values, 9);
    assert_null(m.tuning[1].vendor); /* match: {} matches everything */
    assert_int_equal(m.tuning[1].n_values, 1);
    assert_int_equal(m.tuning[2].n_values, 0);
    assert_int_equal(m.n_files, 1);
    assert_string_equal(m.files[0], path);
    free(dir);
    free(path);
    kp__manifest_fini(&m);
}

static void test_scalar_values_booleans_hex_and_text(void **state)
{
    kp__manifest m;
    kp__manifest_init(&m);
    kp__test_load_ok(&m, "good.yaml", 0);
    const kp__tuning_entry *e = &m.tuning[0];
    const kp__tuning_value *v = find_value(e, "example.axpy", "WG");
    assert_true(v->is_int);
    assert_int_equal(v->value, 64);
    assert_string_equal(v->text, "64");
    assert_int_equal(v->loc.line, 25);
    assert_int_equal(v->loc.col, 27);
    v = find_value(e, "example.axpy", "VECTOR");
    assert_true(v->is_int);
    assert_int_equal(v->value, 1);
    assert_string_equal(v->text, "true");
    v = find_value(e, "example.axpy", "UNROLL"); /* "Off": any case */
    assert_true(v->is_int);
    assert_int_equal(v->value, 0);
    v = find_value(e, "example.axpy", "MODE");
    assert_false(v->is_int);
    assert_string_equal(v->text, "tf32x3");
    v = find_value(e, "example.axpy", "QUOTED"); /* "128" is a string in YAML */
    assert_false(v->is_int);
    assert_string_equal(v->text, "128");
    v = find_value(e, "example.axpy", "BIAS");
    assert_true(v->is_int);
    assert_int_equal(v->value, -3);
    kp__manifest_fini(&m);

    kp__manifest_init(&m);
    kp__test_text_ok(
        &m,
        "kernelport: 0x1\n"
        "tuning:\n"
        "  - kernels:\n"
        "      a.b: { H: 0x40, N: -0X10, MAX: 9223372036854775807, MIN: -9223372036854775808,\n"
        "             Y: YES, F: no, O: on, P: +7, FLOAT: 1.5, NAN: 0x, BIG: "
        "99999999999999999999x }\n",
        0);
    e = &m.tuning[0];
    assert_int_equal(find_value(e, "a.b", "H")->value, 64);
    assert_int_equal(find_value(e, "a.b", "N")->value, -16);
    assert_int_equal(find_value(e, "a.b", "MAX")->value, INT64_MAX);
    assert_int_equal(find_value(e, "a.b", "MIN")->value, INT64_MIN);
    assert_int_equal(find_value(e, "a.b", "Y")->value, 1);
    assert_int_equal(find_value(e, "a.b", "F")->value, 0);
    assert_int_equal(find_value(e, "a.b", "O")->value, 1);
    assert_int_equal(find_value(e, "a.b", "P")->value, 7);
    assert_false(find_value(e, "a.b", "FLOAT")->is_int);
    assert_false(find_value(e, "a.b", "NAN")->is_int);
    assert_false(find_value(e, "a.b", "BIG")->is_int);
    kp__manifest_fini(&m);
}

/* 0 (no limit) and the largest bound whose bytes fit 64 bits are both accepted as written. */
static void test_cache_max_mb_bounds(void **state)
{
    kp__manifest m;
    kp__manifest_init(&m);
    kp__test_text_ok(&m, "kernelport: 1\ncache: { max_mb: 0 }\n", 0);
    assert_int_equal(m.cache_max_mb, 0);
    kp__manifest_fini(&m);
    kp__manifest_init(&m);
    kp__test_text_ok(&m, "kernelport: 1\ncache: { max_mb: 17592186044415 }\n", 0);
    assert_int_equal(m.cache_max_mb, 17592186044415);
    kp__manifest_fini(&m);
}

static void test_nested_maps_flatten_with_dots(void **state)
{
    kp__manifest m;
    kp__manifest_init(&m);
    kp__test_load_ok(&m, "good.yaml", 0);
    const kp__tuning_entry *e = &m.tuning[0];
    assert_int_equal(find_value(e, "blas.gemm", "clblast.Xgemm.MWG")->value, 64);
    assert_int_equal(find_value(e, "blas.gemm", "clblast.Xgemm.NWG")->value, 64);
    assert_int_equal(find_value(e, "blas.gemm", "clblast.Xgemv.WGS")->value, 128);
    kp__manifest_fini(&m);

    kp__test_expect_text_error(
        "kernelport: 1\n"
        "tuning:\n"
        "  - kernels:\n"
        "      blas.gemm: { clblast.Xgemm: { MWG: 64 }, clblast.Xgemm.MWG: 32 }\n",
        "inline.yaml:4:67: error: tuning[0].kernels[\"blas.gemm\"][\"clblast.Xgemm.MWG\"]: "
        "duplicate tunable \"clblast.Xgemm.MWG\" (first set at 4:42)\n"
        "        blas.gemm: { clblast.Xgemm: { MWG: 64 }, clblast.Xgemm.MWG: 32 }\n"
        "                                                                    ^");
}

static void test_provenance_kept_verbatim(void **state)
{
    kp__manifest m;
    kp__manifest_init(&m);
    kp__test_load_ok(&m, "good.yaml", 0);
    const kp__tuning_entry *e = &m.tuning[0];
    static const char *const keys[] = {"device", "driver", "date", "kernelport", "speedup"};
    static const char *const values[] = {"NVIDIA H100 80GB HBM3", "550.54.15", "2026-11-21",
                                         "0.1.0", "1.7"};
    assert_int_equal(e->n_prov, 5);
    for (size_t i = 0; i < 5; i++) {
        assert_string_equal(e->prov_keys[i], keys[i]);
        assert_string_equal(e->prov_values[i], values[i]);
    }
    assert_int_equal(m.tuning[1].n_prov, 0);
    kp__manifest_fini(&m);
}

static void test_bad_workgroup_parses(void **state)
{
    kp__manifest m;
    kp__manifest_init(&m);
    kp__test_load_ok(&m, "bad-workgroup.yaml", 0);
    assert_int_equal(m.n_tuning, 2);
    const kp__tuning_value *v = find_value(&m.tuning[0], "example.axpy", "WG");
    assert_true(v->is_int);
    assert_int_equal(v->value, 48);
    v = find_value(&m.tuning[1], "example.axpy", "WG");
    assert_false(v->is_int);
    assert_string_equal(v->text, "abc");
    kp__manifest_fini(&m);
}

static void test_builtin_manifest_parses(void **state)
{
    char *path = NULL, *text = NULL;
    assert_true(asprintf(&path, "%s/../../core/default-manifest.yaml", getenv("KP_TEST_FIXTURES")) >
                0);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t cap = 1 << 16;
    text = malloc(cap);
    size_t len = fread(text, 1, cap, f);
    fclose(f);
    assert_true(len > 0 && len < cap);

    kp__manifest m;
    kp__manifest_init(&m);
    char *err = NULL;
    assert_int_equal(kp__manifest_load_text(&m, text, len, "<built-in>", 0, &err), KP_OK);
    assert_null(err);
    assert_true(m.n_rules >= 2);
    assert_string_equal(m.rules[0].loc.file, "<built-in>");
    assert_non_null(m.cache_dir);
    assert_int_equal(m.cache_max_mb, 512);
    kp__manifest_fini(&m);
    free(text);
    free(path);
}

/* ---- layers ------------------------------------------------------------------------------ */

static void test_layers_merge(void **state)
{
    kp__manifest m;
    kp__manifest_init(&m);
    kp__test_load_ok(&m, "layer-system.yaml", 1);
    kp__test_load_ok(&m, "layer-user.yaml", 2);

    /* The user's file has no device: the system's rules stay. */
    assert_int_equal(m.n_rules, 2);
    assert_string_equal(m.rules[0].vendor, "amd");
    assert_int_equal(m.require_opencl, 1);
    assert_int_equal(m.n_plugin_dirs, 2);
    assert_string_equal(m.plugin_dirs[0], "/usr/lib/kernelport/plugins");
    assert_string_equal(m.plugin_dirs[1], "/home/user/kp-plugins");
    assert_int_equal(m.n_disable, 2);
    assert_string_equal(m.disable[0], "clblast");
    assert_string_equal(m.disable[1], "gru.rollout");
    assert_int_equal(m.n_prefer, 2);
    assert_string_equal(m.prefer_kernel[0], "gru.step");
    assert_string_equal(m.prefer_plugin[0], "gru");
    assert_string_equal(m.prefer_kernel[1], "blas.gemm");
    assert_string_equal(m.prefer_plugin[1], "myblas");
    assert_int_equal(m.allow_insecure, 1);
    assert_string_equal(m.cache_dir, "");   /* "" disables the disk cache */
    assert_int_equal(m.cache_max_mb, 1024); /* not set by the user: the system's */

    /* A layer with device: replaces every earlier rule. */
    kp__test_text_ok(&m, "kernelport: 1\ndevice:\n  - { type: cpu }\nrequire: any\n", 3);
    assert_int_equal(m.n_rules, 1);
    assert_null(m.rules[0].vendor);
    assert_string_equal(m.rules[0].type, "cpu");
    assert_int_equal(m.require_opencl, 0);
    /* device: [] replaces them with none. */
    kp__test_text_ok(&m, "kernelport: 1\ndevice: []\n", 4);
    assert_int_equal(m.n_rules, 0);
    assert_int_equal(m.n_plugin_dirs, 2);
    kp__manifest_fini(&m);
}

static void test_tuning_order_and_layer(void **state)
{
    kp__manifest m;
    kp__manifest_init(&m);
    kp__test_load_ok(&m, "layer-system.yaml", 1);
    kp__test_load_ok(&m, "layer-user.yaml", 2);
    kp__test_load_ok(&m, "bad-workgroup.yaml", 7);
    assert_int_equal(m.n_tuning, 5);
    static const uint32_t layers[] = {1, 1, 2, 7, 7};
    for (uint32_t i = 0; i < 5; i++) {
        assert_int_equal(m.tuning[i].order, i);
        assert_int_equal(m.tuning[i].layer, layers[i]);
    }
    assert_string_equal(m.tuning[2].name, "RX 7900");
    assert_int_equal(m.n_files, 3);
    kp__manifest_fini(&m);
}

static void test_locations_survive_merge(void **state)
{
    kp__manifest m;
    kp__manifest_init(&m);
    char *name = strdup("scratch.yaml");
    const char *text = "kernelport: 1\ntuning:\n  - kernels: { a.b: { X: 1 } }\n";
    char *err = NULL;
    assert_int_equal(kp__manifest_load_text(&m, text, strlen(text), name, 0, &err), KP_OK);
    memset(name, 'x', strlen(name)); /* the caller's buffer may go away */
    free(name);
    kp__test_load_ok(&m, "good.yaml", 1); /* more merges move arrays around */
    kp__test_load_ok(&m, "layer-system.yaml", 2);
    assert_int_equal(m.n_files, 3);
    assert_string_equal(m.tuning[0].loc.file, "scratch.yaml");
    assert_ptr_equal(m.tuning[0].loc.file, m.files[0]);
    assert_ptr_equal(m.tuning[0].values[0].loc.file, m.files[0]);
    assert_ptr_equal(m.tuning[1].loc.file, m.files[1]);
    assert_int_equal(m.tuning[0].values[0].loc.line, 3);
    assert_int_equal(m.tuning[0].values[0].loc.col, 26);
    assert_ptr_equal(m.rules[0].loc.file, m.files[2]);
    kp__manifest_fini(&m);
}

/* ---- paths ------------------------------------------------------------------------------- */

static void test_path_expand(void **state)
{
    setenv("HOME", "/home/kp", 1);
    setenv("KP_T_DIR", "/data", 1);
    setenv("KP_T_EMPTY", "", 1);
    unsetenv("KP_T_UNSET");
    static const char *const cases[][2] = {
        {"~", "/home/kp"},
        {"~/.cache", "/home/kp/.cache"},
        {"~user/x", "~user/x"},
        {"a/~/b", "a/~/b"},
        {"${KP_T_DIR}/kp", "/data/kp"},
        {"${KP_T_UNSET:-/fallback}", "/fallback"},
        {"${KP_T_EMPTY:-/fallback}", "/fallback"},
        {"${KP_T_DIR:-/fallback}", "/data"},
        {"${KP_T_UNSET:-~/.cache}/kernelport", "/home/kp/.cache/kernelport"},
        {"${KP_T_UNSET:-${KP_T_DIR}/x}/y", "/data/x/y"},
        {"${KP_T_UNSET:-${KP_T_EMPTY:-${KP_T_DIR}}}", "/data"},
        {"${KP_T_UNSET:-}", ""},
        {"${KP_T_EMPTY}", ""},
        {"cost$5 and $HOME", "cost$5 and $HOME"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *out = expand_ok(cases[i][0]);
        assert_string_equal(out, cases[i][1]);
        free(out);
    }
    /* The default is not expanded when it is not used. */
    char *out = expand_ok("${KP_T_DIR:-${KP_T_UNSET}}");
    assert_string_equal(out, "/data");
    free(out);
}

static void test_path_expand_errors(void **state)
{
    unsetenv("KP_T_UNSET");
    expect_expand_error("${KP_T_UNSET}/x", "environment variable KP_T_UNSET is not set");
    expect_expand_error("${KP_T_UNSET:-${KP_T_UNSET}}",
                        "environment variable KP_T_UNSET is not set");
    expect_expand_error("${KP_T_DIR", "unterminated ${ in \"${KP_T_DIR\"");
    expect_expand_error("/a/${KP_T_UNSET:-${X}", "unterminated ${ in \"/a/${KP_T_UNSET:-${X}\"");
    expect_expand_error("${}", "invalid variable name after ${ in \"${}\"");
    expect_expand_error("${A-b}", "expected } or :- after ${A in \"${A-b}\"");
    char deep[256] = "";
    for (int i = 0; i < 20; i++)
        strcat(deep, "${KP_U:-");
    strcat(deep, "x");
    for (int i = 0; i < 20; i++)
        strcat(deep, "}");
    char *expected = kp__test_fmt("defaults nest more than 16 deep in \"%s\"", deep);
    unsetenv("KP_U");
    expect_expand_error(deep, expected);
    free(expected);
    char *saved = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    unsetenv("HOME");
    expect_expand_error("~/x", "environment variable HOME is not set (needed to expand ~ in "
                               "\"~/x\")");
    if (saved)
        setenv("HOME", saved, 1);
    free(saved);
}

static void test_relative_plugin_dir(void **state)
{
    kp__manifest m;
    kp__manifest_init(&m);
    kp__test_load_ok(&m, "relative-dir.yaml", 0);
    char *base = kp__test_fixture("");
    base[strlen(base) - 1] = '\0'; /* ".../manifests" */
    char *plugins = kp__test_fmt("%s/plugins", base), *more = kp__test_fmt("%s/more/plugins", base);
    assert_int_equal(m.n_plugin_dirs, 4);
    assert_string_equal(m.plugin_dirs[0], plugins);
    assert_string_equal(m.plugin_dirs[1], more);
    assert_string_equal(m.plugin_dirs[2], base);
    assert_string_equal(m.plugin_dirs[3], "/abs/plugins");
    free(plugins);
    free(more);
    free(base);
    kp__manifest_fini(&m);

    /* The built-in manifest has no directory to be relative to. */
    static const char text[] = "kernelport: 1\nplugins:\n  dirs: [\"plugins\"]\n";
    kp__manifest_init(&m);
    char *err = NULL;
    assert_int_equal(kp__manifest_load_text(&m, text, strlen(text), "<built-in>", 0, &err),
                     KP_ERR_MANIFEST);
    assert_string_equal(err, "<built-in>:3:10: error: plugins.dirs[0]: relative path \"plugins\" "
                             "is not allowed in the built-in manifest\n"
                             "    dirs: [\"plugins\"]\n"
                             "           ^");
    free(err);
    assert_int_equal(m.n_files, 0);

    /* A relative file name: its directory is taken against the working directory, now. */
    char *cwd = getcwd(NULL, 0);
    static const char rel[] = "kernelport: 1\nplugins: { dirs: [p, ../q] }\ncache: { dir: c }\n";
    assert_int_equal(kp__manifest_load_text(&m, rel, strlen(rel), "x.yaml", 0, &err), KP_OK);
    assert_int_equal(kp__manifest_load_text(&m, rel, strlen(rel), "sub/x.yaml", 1, &err), KP_OK);
    char *p = kp__test_fmt("%s/p", cwd), *q = kp__test_fmt("%s/../q", cwd);
    char *sub_p = kp__test_fmt("%s/sub/p", cwd), *sub_c = kp__test_fmt("%s/sub/c", cwd);
    assert_string_equal(m.plugin_dirs[0], p);
    assert_string_equal(m.plugin_dirs[1], q);
    assert_string_equal(m.plugin_dirs[2], sub_p);
    assert_string_equal(m.cache_dir, sub_c); /* cache.dir is anchored the same way */
    free(p);
    free(q);
    free(sub_p);
    free(sub_c);
    free(cwd);
    kp__manifest_fini(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_defaults),
        cmocka_unit_test(test_good_manifest_loads_every_key),
        cmocka_unit_test(test_scalar_values_booleans_hex_and_text),
        cmocka_unit_test(test_cache_max_mb_bounds),
        cmocka_unit_test(test_nested_maps_flatten_with_dots),
        cmocka_unit_test(test_provenance_kept_verbatim),
        cmocka_unit_test(test_bad_workgroup_parses),
        cmocka_unit_test(test_builtin_manifest_parses),
        cmocka_unit_test(test_layers_merge),
        cmocka_unit_test(test_tuning_order_and_layer),
        cmocka_unit_test(test_locations_survive_merge),
        cmocka_unit_test(test_path_expand),
        cmocka_unit_test(test_path_expand_errors),
        cmocka_unit_test(test_relative_plugin_dir),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    return failed + kp__test_manifest_errors();
}
