/* SPDX-License-Identifier: Apache-2.0 */
/* The runtime: device choice, environment, manifest errors, tuning resolution, small helpers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "test-util.h"

/* PoCL reads this when it first enumerates its devices: a maximum workgroup of 128 lets the
 * tests try a workgroup (256) that the example kernels allow but the device does not. */
#define POCL_MAX_WG "128"

static const char *plugin_dir(void)
{
    return test_build_path(KP_TEST_EXAMPLE_PLUGIN_DIR);
}

static kp_runtime *create_ok(const kp_runtime_options *o)
{
    kp_runtime *rt = NULL;
    kp_status st = kp_runtime_create(o, &rt);
    if (st != KP_OK)
        fprintf(stderr, "kp_runtime_create: %s\n", kp_last_error(NULL));
    assert_int_equal(st, KP_OK);
    assert_non_null(rt);
    return rt;
}

/* The PoCL device's description, read from a plugin-less runtime. */
static kp_device_info pocl_device(void)
{
    kp_runtime_options o = test_options(NULL, "pocl", NULL);
    kp_runtime *rt = create_ok(&o);
    kp_device_info d = {.struct_size = sizeof d};
    assert_int_equal(kp_runtime_device(rt, &d, NULL), KP_OK);
    kp_runtime_destroy(rt);
    return d;
}

/* A substring of the PoCL device's name that is no vendor or type word and holds no ':'. */
static const char *pocl_name_part(void)
{
    static char part[16];
    kp_device_info d = pocl_device();
    size_t len = strlen(d.name);
    assert_true(len >= 6);
    size_t start = len > 12 ? 2 : 0, n = len - start < 8 ? len - start : 8;
    memcpy(part, d.name + start, n);
    part[n] = '\0';
    assert_null(strchr(part, ':'));
    return part;
}

/* The device list kp_runtime_create appends to a KP_ERR_NO_DEVICE message. */
static char *device_list(void)
{
    static char list[2048];
    kp_runtime_options o = test_options(NULL, "host", NULL);
    kp_runtime *rt = create_ok(&o);
    size_t used = 0;
    list[0] = '\0';
    for (size_t i = 0; i < kp_device_count(rt); i++) {
        kp_device_info d = {.struct_size = sizeof d};
        assert_int_equal(kp_device_get(rt, i, &d), KP_OK);
        assert_int_equal(d.index, i);
        used += (size_t)snprintf(list + used, sizeof list - used, "\n  %zu: %s %s \"%s\"", i,
                                 kp_vendor_name(d.vendor), kp_device_type_name(d.type), d.name);
    }
    kp_device_info d = {.struct_size = sizeof d};
    assert_int_equal(kp_device_get(rt, kp_device_count(rt), &d), KP_ERR_INVALID_ARG);
    kp_runtime_destroy(rt);
    return list;
}

/* ---- device choice -------------------------------------------------------------------- */

static void expect_device(const char *spec, kp_vendor vendor, kp_device_type type)
{
    kp_runtime_options o = test_options(NULL, spec, NULL);
    kp_runtime *rt = create_ok(&o);
    kp_device_info d = {.struct_size = sizeof d};
    const char *why = NULL;
    assert_int_equal(kp_runtime_device(rt, &d, &why), KP_OK);
    assert_int_equal(d.vendor, vendor);
    assert_int_equal(d.type, type);
    char want[128];
    snprintf(want, sizeof want, "device spec \"%s\"", spec);
    assert_non_null(why);
    assert_true(strncmp(why, want, strlen(want)) == 0);
    kp_runtime_destroy(rt);
}

static void test_device_specs(void **state)
{
    expect_device("host", KP_VENDOR_HOST, KP_DEVICE_HOST);
    expect_device("pocl", KP_VENDOR_POCL, KP_DEVICE_CPU);
    expect_device("cpu", KP_VENDOR_POCL, KP_DEVICE_CPU);
    expect_device("0", KP_VENDOR_POCL, KP_DEVICE_CPU);
    expect_device("cpu:0", KP_VENDOR_POCL, KP_DEVICE_CPU);
    expect_device("pocl:0", KP_VENDOR_POCL, KP_DEVICE_CPU);
    const char *part = pocl_name_part();
    expect_device(part, KP_VENDOR_POCL, KP_DEVICE_CPU);
    /* Name matches ignore case. */
    char upper[16];
    for (size_t i = 0; i <= strlen(part); i++)
        upper[i] = (char)((part[i] >= 'a' && part[i] <= 'z') ? part[i] - 32 : part[i]);
    expect_device(upper, KP_VENDOR_POCL, KP_DEVICE_CPU);
    /* The host device is the last one; its index works as a spec too. */
    char last[16];
    kp_runtime_options o = test_options(NULL, "host", NULL);
    kp_runtime *rt = create_ok(&o);
    snprintf(last, sizeof last, "%zu", kp_device_count(rt) - 1);
    kp_runtime_destroy(rt);
    expect_device(last, KP_VENDOR_HOST, KP_DEVICE_HOST);
}

static void expect_no_device(const char *spec, const char *what)
{
    kp_runtime_options o = test_options(NULL, spec, NULL);
    kp_runtime *rt = (kp_runtime *)&o;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_ERR_NO_DEVICE);
    assert_null(rt);
    char want[8192];
    snprintf(want, sizeof want, "%s; the devices are:%s", what, device_list());
    assert_string_equal(kp_last_error(NULL), want);
}

static void test_unknown_device_lists_devices(void **state)
{
    expect_no_device("nosuchdevice", "device spec \"nosuchdevice\" matches no device");
    expect_no_device("gpu", "device spec \"gpu\" matches no device");
    expect_no_device("cpu:1", "device spec \"cpu:1\" matches no device");
    expect_no_device("nvidia", "device spec \"nvidia\" matches no device");
    expect_no_device("00000000-0000-0000-0000-000000000000",
                     "device spec \"00000000-0000-0000-0000-000000000000\" matches no device");
    expect_no_device("99", "device index out of range");
    /* A malformed KIND:N is a mistake in the spec, not a missing device. */
    kp_runtime_options o = test_options(NULL, "cpu:x", NULL);
    kp_runtime *rt;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(NULL),
                        "device spec \"cpu:x\": expected KIND:N with N >= 0 (e.g. gpu:1)");
}

/* A spec from KP_DEVICE that matches nothing says it came from the environment. */
static void test_unknown_device_from_environment(void **state)
{
    kp_runtime_options o = test_options(NULL, NULL, NULL);
    o.flags &= ~(uint32_t)KP_RUNTIME_NO_ENV;
    setenv("KP_DEVICE", "nosuchdevice", 1);
    unsetenv("KP_MANIFEST");
    unsetenv("KP_PLUGIN_PATH");
    unsetenv("KP_KERNEL_DIR");
    kp_runtime *rt = NULL;
    kp_status st = kp_runtime_create(&o, &rt);
    unsetenv("KP_DEVICE");
    assert_int_equal(st, KP_ERR_NO_DEVICE);
    char want[8192];
    snprintf(want, sizeof want,
             "KP_DEVICE (from the environment): device spec \"nosuchdevice\" matches no device; "
             "the devices are:%s",
             device_list());
    assert_string_equal(kp_last_error(NULL), want);
}

static void test_manifest_rules_matching_nothing(void **state)
{
    const char *m = test_write_tmp("no-match.yaml", "kernelport: 1\n"
                                                    "device:\n"
                                                    "  - { vendor: nvidia, type: gpu }\n"
                                                    "  - { name: \"no such device\" }\n");
    kp_runtime_options o = test_options(NULL, NULL, NULL);
    o.manifest_path = m;
    kp_runtime *rt = (kp_runtime *)&o;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_ERR_NO_DEVICE);
    assert_null(rt);
    char want[8192];
    snprintf(want, sizeof want,
             "none of the manifest's device rules matches a device; the devices are:%s",
             device_list());
    assert_string_equal(kp_last_error(NULL), want);
}

static void test_device_why_names_rule_and_line(void **state)
{
    const char *m = test_write_tmp("rules.yaml", "kernelport: 1\n"
                                                 "device:\n"
                                                 "  - { vendor: nvidia, type: gpu }\n"
                                                 "  - { vendor: pocl, type: cpu }\n"
                                                 "  - { type: host }\n");
    kp_runtime_options o = test_options(NULL, NULL, NULL);
    o.manifest_path = m;
    kp_runtime *rt = create_ok(&o);
    kp_device_info d = {.struct_size = sizeof d};
    const char *why;
    assert_int_equal(kp_runtime_device(rt, &d, &why), KP_OK);
    assert_int_equal(d.vendor, KP_VENDOR_POCL);
    char want[8192];
    snprintf(want, sizeof want, "manifest device rule 2 {vendor: pocl, type: cpu} at %s:4", m);
    assert_string_equal(why, want);
    kp_runtime_destroy(rt);

    /* With no manifest of ours, the built-in rules choose, and say so. */
    o.manifest_path = NULL;
    rt = create_ok(&o);
    assert_int_equal(kp_runtime_device(rt, &d, &why), KP_OK);
    assert_int_equal(d.type, KP_DEVICE_CPU);
    assert_true(strncmp(why, "manifest device rule ", 21) == 0);
    assert_non_null(strstr(why, "{type: cpu} at <built-in>:"));
    assert_int_equal(kp_runtime_device(rt, &d, NULL), KP_OK);
    assert_int_equal(kp_runtime_device(rt, NULL, &why), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt), "kp_runtime_device: the kp_device_info pointer is NULL");
    kp_runtime_destroy(rt);

    /* An `index` picks the n-th match; the host device only matches a rule that names it. */
    const char *host = test_write_tmp("host-rule.yaml", "kernelport: 1\n"
                                                        "device:\n"
                                                        "  - { type: cpu, index: 1 }\n"
                                                        "  - {}\n"
                                                        "  - { vendor: host }\n");
    o.manifest_path = host;
    rt = create_ok(&o);
    assert_int_equal(kp_runtime_device(rt, &d, &why), KP_OK);
    assert_int_equal(d.type, KP_DEVICE_CPU);
    snprintf(want, sizeof want, "manifest device rule 2 {} at %s:4", host);
    assert_string_equal(why, want);
    kp_runtime_destroy(rt);
}

/* KP_DEVICE and KP_MANIFEST count unless the runtime is told to ignore the environment. */
static void test_environment_and_no_env_flag(void **state)
{
    const char *m = test_write_tmp("env-host.yaml", "kernelport: 1\n"
                                                    "device:\n"
                                                    "  - { type: host }\n");
    kp_runtime_options o = test_options(NULL, NULL, NULL);
    kp_device_info d = {.struct_size = sizeof d};
    const char *why;

    assert_int_equal(setenv("KP_DEVICE", "host", 1), 0);
    kp_runtime *rt = create_ok(&o);
    assert_int_equal(kp_runtime_device(rt, &d, NULL), KP_OK);
    assert_int_equal(d.type, KP_DEVICE_CPU);
    kp_runtime_destroy(rt);
    o.flags &= ~(uint32_t)KP_RUNTIME_NO_ENV;
    rt = create_ok(&o);
    assert_int_equal(kp_runtime_device(rt, &d, &why), KP_OK);
    assert_int_equal(d.type, KP_DEVICE_HOST);
    assert_string_equal(why, "device spec \"host\"");
    kp_runtime_destroy(rt);
    /* An explicit option beats the environment. */
    o.device = "pocl";
    rt = create_ok(&o);
    assert_int_equal(kp_runtime_device(rt, &d, NULL), KP_OK);
    assert_int_equal(d.vendor, KP_VENDOR_POCL);
    kp_runtime_destroy(rt);
    o.device = NULL;
    assert_int_equal(unsetenv("KP_DEVICE"), 0);

    assert_int_equal(setenv("KP_MANIFEST", m, 1), 0);
    rt = create_ok(&o);
    assert_int_equal(kp_runtime_device(rt, &d, &why), KP_OK);
    assert_int_equal(d.type, KP_DEVICE_HOST);
    char want[8192];
    snprintf(want, sizeof want, "manifest device rule 1 {type: host} at %s:3", m);
    assert_string_equal(why, want);
    kp_runtime_destroy(rt);
    o.flags |= KP_RUNTIME_NO_ENV;
    rt = create_ok(&o);
    assert_int_equal(kp_runtime_device(rt, &d, NULL), KP_OK);
    assert_int_equal(d.type, KP_DEVICE_CPU);
    kp_runtime_destroy(rt);
    /* A KP_MANIFEST that names no file fails like --manifest would, unless ignored. */
    assert_int_equal(setenv("KP_MANIFEST", "/nonexistent/kernelport.yaml", 1), 0);
    rt = create_ok(&o);
    kp_runtime_destroy(rt);
    o.flags &= ~(uint32_t)KP_RUNTIME_NO_ENV;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_ERR_MANIFEST);
    assert_int_equal(unsetenv("KP_MANIFEST"), 0);
}

/* ---- manifest errors ------------------------------------------------------------------ */

static void test_broken_manifest(void **state)
{
    const char *m = test_write_tmp("broken.yaml", "kernelport: 1\n"
                                                  "device:\n"
                                                  "  - { vendor: nvidia, typo: gpu }\n");
    kp_runtime_options o = test_options(plugin_dir(), "host", NULL);
    o.manifest_path = m;
    kp_runtime *rt = (kp_runtime *)&o;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_ERR_MANIFEST);
    assert_null(rt);
    char prefix[8192];
    snprintf(prefix, sizeof prefix, "%s:3:23: error:", m);
    const char *msg = kp_last_error(NULL);
    if (strncmp(msg, prefix, strlen(prefix)) != 0)
        fail_msg("expected a message starting with \"%s\", got \"%s\"", prefix, msg);
    assert_non_null(strstr(msg, "typo"));

    const char *syntax = test_write_tmp("syntax.yaml", "kernelport: 1\n"
                                                       "device:\n"
                                                       "  - { vendor: nvidia, type: gpu\n"
                                                       "  - { type: cpu }\n");
    o.manifest_path = syntax;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_ERR_MANIFEST);
    msg = kp_last_error(NULL);
    snprintf(prefix, sizeof prefix, "%s:", syntax);
    assert_true(strncmp(msg, prefix, strlen(prefix)) == 0);
    /* file:line:col: error: */
    unsigned line = 0, col = 0;
    char tail[16] = "";
    assert_int_equal(sscanf(msg + strlen(prefix), "%u:%u: %6s", &line, &col, tail), 3);
    assert_true(line >= 3);
    assert_true(col >= 1);
    assert_string_equal(tail, "error:");

    /* The same process still creates a good runtime afterwards. */
    o.manifest_path = NULL;
    rt = create_ok(&o);
    assert_int_equal(kp_kernel_count(rt), 2);
    kp_runtime_destroy(rt);
}

static void test_missing_manifest_file(void **state)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/does-not-exist.yaml", test_env("KP_TEST_TMP"));
    kp_runtime_options o = test_options(NULL, "host", NULL);
    o.manifest_path = path;
    kp_runtime *rt = (kp_runtime *)&o;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_ERR_MANIFEST);
    assert_null(rt);
    char want[8192];
    snprintf(want, sizeof want, "%s: error: cannot open manifest: %s", path, strerror(ENOENT));
    assert_string_equal(kp_last_error(NULL), want);
    o.manifest_path = NULL;
    rt = create_ok(&o);
    kp_runtime_destroy(rt);
}

static void test_bad_options(void **state)
{
    assert_int_equal(kp_runtime_create(NULL, NULL), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(NULL), "kp_runtime_create: out is NULL");
    kp_runtime_options o = test_options(NULL, "host", NULL);
    o.struct_size = 4;
    kp_runtime *rt = (kp_runtime *)&o;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_ERR_INVALID_ARG);
    assert_null(rt);
    assert_string_equal(kp_last_error(NULL),
                        "kp_runtime_create: kp_runtime_options.struct_size is 4, below 60 (its "
                        "first layout): build it with its _default() constructor, or leave "
                        "struct_size 0");
    kp_runtime_destroy(NULL);
    assert_int_equal(kp_device_count(NULL), 0);
    assert_int_equal(kp_kernel_count(NULL), 0);
}

/* ---- tuning resolution ---------------------------------------------------------------- */

static const char *const allowed = "1, 2, 4, 8, 16, 32, 64, 128, 256";

/* Creates a PoCL runtime with `manifest` (may be NULL) and reports example.axpy's WG. */
static kp_runtime *tuning_of(const char *manifest, uint32_t flags, test_log *log,
                             kp_tuning_info *out)
{
    kp_runtime_options o = test_options(plugin_dir(), "pocl", log);
    o.manifest_path = manifest;
    o.flags = flags ? flags : o.flags;
    kp_runtime *rt = create_ok(&o);
    kp_kernel *k;
    assert_int_equal(kp_kernel_find(rt, "example.axpy", &k), KP_OK);
    out->struct_size = sizeof *out;
    kp_status st = kp_kernel_tuning(rt, k, 0, out);
    if (st != KP_OK)
        fprintf(stderr, "kp_kernel_tuning: %s\n", kp_last_error(rt));
    assert_int_equal(st, KP_OK);
    assert_string_equal(out->name, "WG");
    assert_int_equal(out->default_value, 64);
    assert_string_equal(out->allowed, allowed);
    return rt;
}

static void test_tuning_default(void **state)
{
    test_log log;
    kp_tuning_info t = {.struct_size = sizeof t};
    kp_runtime *rt = tuning_of(NULL, 0, &log, &t);
    assert_int_equal(t.value, 64);
    assert_string_equal(t.origin, "default");
    assert_string_equal(t.value_text, "");
    assert_string_equal(t.notes, "");
    assert_string_equal(t.doc, "work-items per workgroup");
    kp_kernel *k;
    assert_int_equal(kp_kernel_find(rt, "example.axpy", &k), KP_OK);
    assert_int_equal(kp_kernel_tuning(rt, k, 1, &t), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt), "kp_kernel_tuning: bad kernel or index");
    assert_null(strstr(log.text, "warn"));
    kp_runtime_destroy(rt);
}

static void test_tuning_manifest_entry(void **state)
{
    const char *m = test_write_tmp("tune-vendor.yaml", "kernelport: 1\n"
                                                       "tuning:\n"
                                                       "  - match: { vendor: pocl }\n"
                                                       "    kernels:\n"
                                                       "      example.axpy: { WG: 32 }\n"
                                                       "    provenance: { device: \"d\", "
                                                       "speedup: \"1.5x\" }\n");
    test_log log;
    kp_tuning_info t = {.struct_size = sizeof t};
    kp_runtime *rt = tuning_of(m, 0, &log, &t);
    assert_int_equal(t.value, 32);
    assert_string_equal(t.value_text, "32");
    char want[8192];
    snprintf(want, sizeof want, "%s:3 match {vendor: pocl}", m);
    assert_string_equal(t.origin, want);
    assert_string_equal(t.notes, "");
    /* The entry's provenance, which manifest.md promised explain would show (#28). */
    assert_string_equal(t.provenance, "device: d, speedup: 1.5x");
    /* The other kernel has no entry: its default, with no provenance. */
    kp_kernel *k;
    assert_int_equal(kp_kernel_find(rt, "example.scale_rows", &k), KP_OK);
    assert_int_equal(kp_kernel_tuning(rt, k, 0, &t), KP_OK);
    assert_int_equal(t.value, 64);
    assert_string_equal(t.origin, "default");
    assert_string_equal(t.provenance, "");
    kp_runtime_destroy(rt);
}

static void test_tuning_name_beats_vendor(void **state)
{
    char text[1024];
    /* The name entry comes first, so order alone would pick the vendor entry. */
    snprintf(text, sizeof text,
             "kernelport: 1\n"
             "tuning:\n"
             "  - match: { name: \"%s\" }\n"
             "    kernels: { example.axpy: { WG: 16 } }\n"
             "  - match: { vendor: pocl, type: cpu }\n"
             "    kernels: { example.axpy: { WG: 32 } }\n",
             pocl_name_part());
    const char *m = test_write_tmp("tune-name.yaml", text);
    kp_tuning_info t;
    kp_runtime *rt = tuning_of(m, 0, NULL, &t);
    assert_int_equal(t.value, 16);
    char want[8192];
    snprintf(want, sizeof want, "%s:3 match {name: %s}", m, pocl_name_part());
    assert_string_equal(t.origin, want);
    kp_runtime_destroy(rt);
}

static char *user_manifest_path(void)
{
    static char path[4200];
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/kernelport", test_env("XDG_CONFIG_HOME"));
    mkdir(test_env("XDG_CONFIG_HOME"), 0700);
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/manifest.yaml", dir);
    return path;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

static void test_tuning_later_layer_wins_tie(void **state)
{
    static const char *const fmt = "kernelport: 1\n"
                                   "tuning:\n"
                                   "  - match: { vendor: pocl }\n"
                                   "    kernels: { example.axpy: { WG: %d } }\n";
    char text[256];
    const char *user = user_manifest_path();
    /* Layers read the user file only without KP_RUNTIME_NO_USER_MANIFESTS. */
    const uint32_t flags = KP_RUNTIME_NO_ENV | KP_RUNTIME_NO_INSTALLED_PLUGINS;
    for (int round = 0; round < 2; round++) {
        int user_wg = round ? 32 : 16, explicit_wg = round ? 16 : 32;
        snprintf(text, sizeof text, fmt, user_wg);
        write_file(user, text);
        snprintf(text, sizeof text, fmt, explicit_wg);
        const char *m = test_write_tmp("tune-layer.yaml", text);
        kp_tuning_info t;
        kp_runtime *rt = tuning_of(m, flags, NULL, &t);
        assert_int_equal(t.value, explicit_wg);
        char want[8192];
        snprintf(want, sizeof want, "%s:3 match {vendor: pocl}", m);
        assert_string_equal(t.origin, want);
        kp_runtime_destroy(rt);
        /* Without the explicit layer, the user's entry applies. */
        rt = tuning_of(NULL, flags, NULL, &t);
        assert_int_equal(t.value, user_wg);
        snprintf(want, sizeof want, "%s:3 match {vendor: pocl}", user);
        assert_string_equal(t.origin, want);
        kp_runtime_destroy(rt);
    }
    assert_int_equal(unlink(user), 0);

    /* Within one file, the later of two equal entries wins. */
    const char *m =
        test_write_tmp("tune-order.yaml", "kernelport: 1\n"
                                          "tuning:\n"
                                          "  - match: { vendor: pocl }\n"
                                          "    kernels: { example.axpy: { WG: 16 } }\n"
                                          "  - match: { vendor: pocl }\n"
                                          "    kernels: { example.axpy: { WG: 32 } }\n");
    kp_tuning_info t;
    kp_runtime *rt = tuning_of(m, 0, NULL, &t);
    assert_int_equal(t.value, 32);
    char want[8192];
    snprintf(want, sizeof want, "%s:5 match {vendor: pocl}", m);
    assert_string_equal(t.origin, want);
    kp_runtime_destroy(rt);
}

static void test_tuning_value_not_allowed(void **state)
{
    char text[1024];
    snprintf(text, sizeof text,
             "kernelport: 1\n"
             "tuning:\n"
             "  - match: { name: \"%s\" }\n"
             "    kernels:\n"
             "      example.axpy: { WG: 48 }\n"
             "  - match: { vendor: pocl }\n"
             "    kernels:\n"
             "      example.axpy: { WG: 32 }\n",
             pocl_name_part());
    const char *m = test_write_tmp("tune-48.yaml", text);
    test_log log;
    kp_tuning_info t;
    kp_runtime *rt = tuning_of(m, 0, &log, &t);
    assert_int_equal(t.value, 32);
    char want[8192];
    snprintf(want, sizeof want, "%s:6 match {vendor: pocl}", m);
    assert_string_equal(t.origin, want);
    snprintf(want, sizeof want, "%s:5: WG = 48 rejected: not an allowed value (allowed: %s)", m,
             allowed);
    assert_string_equal(t.notes, want);
    snprintf(want, sizeof want,
             "warn: %s:5:27: warning: example.axpy: WG = 48 rejected: not an allowed value "
             "(allowed: %s); using the next less specific entry\n",
             m, allowed);
    if (!strstr(log.text, want))
        fail_msg("log lacks \"%s\":\n%s", want, log.text);
    kp_runtime_destroy(rt);

    /* With no other entry, the default is used. */
    m = test_write_tmp("tune-48-only.yaml", "kernelport: 1\n"
                                            "tuning:\n"
                                            "  - match: { type: cpu }\n"
                                            "    kernels: { example.axpy: { WG: 48 } }\n");
    rt = tuning_of(m, 0, &log, &t);
    assert_int_equal(t.value, 64);
    assert_string_equal(t.origin, "default");
    snprintf(want, sizeof want, "%s:4: WG = 48 rejected: not an allowed value (allowed: %s)", m,
             allowed);
    assert_string_equal(t.notes, want);
    snprintf(want, sizeof want, "%s:4:", m);
    assert_non_null(strstr(log.text, want));
    kp_runtime_destroy(rt);
}

static void test_tuning_workgroup_above_device_max(void **state)
{
    const char *m = test_write_tmp("tune-256.yaml", "kernelport: 1\n"
                                                    "tuning:\n"
                                                    "  - match: { vendor: pocl }\n"
                                                    "    kernels: { example.axpy: { WG: 256 } }\n"
                                                    "  - match: {}\n"
                                                    "    kernels: { example.axpy: { WG: 16 } }\n");
    test_log log;
    kp_tuning_info t;
    kp_runtime *rt = tuning_of(m, 0, &log, &t);
    kp_device_info d = {.struct_size = sizeof d};
    assert_int_equal(kp_runtime_device(rt, &d, NULL), KP_OK);
    assert_int_equal(d.max_workgroup, 128); /* POCL_MAX_WORK_GROUP_SIZE took effect */
    assert_int_equal(t.value, 16);
    char want[8192];
    snprintf(want, sizeof want, "%s:5 match {}", m);
    assert_string_equal(t.origin, want);
    snprintf(want, sizeof want,
             "%s:4: WG = 256 rejected: exceeds the device's maximum workgroup size 128", m);
    assert_string_equal(t.notes, want);
    snprintf(want, sizeof want, "%s:4:", m);
    assert_non_null(strstr(log.text, want));
    assert_non_null(strstr(log.text, "exceeds the device's maximum workgroup size 128"));
    kp_runtime_destroy(rt);
}

static void test_tuning_string_value_rejected(void **state)
{
    const char *m =
        test_write_tmp("tune-abc.yaml", "kernelport: 1\n"
                                        "tuning:\n"
                                        "  - match: { vendor: pocl }\n"
                                        "    kernels: { example.axpy: { WG: abc } }\n"
                                        "  - match: { type: cpu }\n"
                                        "    kernels: { example.axpy: { WG: \"32\" } }\n");
    test_log log;
    kp_tuning_info t;
    kp_runtime *rt = tuning_of(m, 0, &log, &t);
    /* A quoted number is a string too: both are rejected and the default is used. */
    assert_int_equal(t.value, 64);
    assert_string_equal(t.origin, "default");
    char want[8192];
    snprintf(want, sizeof want,
             "%s:4: WG = abc rejected: \"abc\" is not a value of WG; "
             "%s:6: WG = 32 rejected: \"32\" is not a value of WG",
             m, m);
    assert_string_equal(t.notes, want);
    assert_non_null(strstr(log.text, "\"abc\" is not a value of WG"));
    kp_runtime_destroy(rt);
}

static void test_tuning_unknown_key_warns(void **state)
{
    const char *m =
        test_write_tmp("tune-unknown.yaml", "kernelport: 1\n"
                                            "tuning:\n"
                                            "  - match: { vendor: pocl }\n"
                                            "    kernels:\n"
                                            "      example.axpy: { WG: 32, VECTOR: 4 }\n");
    test_log log;
    kp_tuning_info t;
    kp_runtime *rt = tuning_of(m, 0, &log, &t);
    assert_int_equal(t.value, 32);
    char want[8192];
    snprintf(want, sizeof want,
             "warn: %s:5:39: warning: example.axpy has no tunable \"VECTOR\"; ignored\n", m);
    if (!strstr(log.text, want))
        fail_msg("log lacks \"%s\":\n%s", want, log.text);
    kp_runtime_destroy(rt);
}

/* Runs in a child (--small-device) whose PoCL device allows workgroups of at most 32: the
 * example kernels' default of 64 cannot run there, so the largest allowed value that fits is
 * used, and launches work. */
static void test_small_device_default(void **state)
{
    kp_tuning_info t;
    kp_runtime *rt = tuning_of(NULL, 0, NULL, &t);
    kp_device_info d = {.struct_size = sizeof d};
    assert_int_equal(kp_runtime_device(rt, &d, NULL), KP_OK);
    assert_int_equal(d.max_workgroup, 32);
    assert_int_equal(t.value, 32);
    assert_string_equal(t.origin, "default");
    assert_string_equal(t.notes,
                        "default 64 exceeds the device's maximum workgroup size 32: using 32");
    kp_kernel *k;
    assert_int_equal(kp_kernel_find(rt, "example.axpy", &k), KP_OK);
    float x[100], y[100];
    test_fill_nonzero(x, 100, 1);
    test_fill_nonzero(y, 100, 2);
    kp_buffer *bx, *by;
    assert_int_equal(kp_buffer_create(rt, sizeof x, &bx), KP_OK);
    assert_int_equal(kp_buffer_create(rt, sizeof y, &by), KP_OK);
    assert_int_equal(kp_buffer_write(rt, bx, 0, sizeof x, x), KP_OK);
    assert_int_equal(kp_buffer_write(rt, by, 0, sizeof y, y), KP_OK);
    kp_arg args[] = {KP_ARG_INT("n", 100), KP_ARG_TENSOR("x", kp_tensor_1d(bx, KP_F32, 100)),
                     KP_ARG_TENSOR("y", kp_tensor_1d(by, KP_F32, 100))};
    kp_status st = kp_kernel_launch(rt, k, args, 3, NULL);
    if (st != KP_OK)
        fail_msg("launch: %s", kp_last_error(rt));
    float got[100];
    assert_int_equal(kp_buffer_read(rt, by, 0, sizeof got, got), KP_OK);
    for (int i = 0; i < 100; i++)
        assert_true(got[i] == x[i] + y[i]);
    kp_runtime_destroy(rt);
}

static void test_tuning_default_above_device_max(void **state)
{
    /* PoCL reads its limit once per process: a child gets the smaller one. posix_spawn with an
     * environment built here, since this process's PoCL threads make fork-then-setenv unsafe. */
    extern char **environ;
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 2, sizeof *env);
    assert_non_null(env);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "POCL_MAX_WORK_GROUP_SIZE=", 25) != 0)
            env[m++] = environ[i];
    env[m++] = "POCL_MAX_WORK_GROUP_SIZE=32";
    char *argv[] = {"test-runtime", "--small-device", NULL};
    pid_t pid;
    assert_int_equal(posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, env), 0);
    free(env);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- names and helpers ---------------------------------------------------------------- */

static void test_status_names(void **state)
{
#define CHECK_STATUS(name, value, text)                                                            \
    assert_int_equal(KP_##name, value);                                                            \
    assert_string_equal(kp_status_name(KP_##name), "KP_" #name);                                   \
    assert_string_equal(kp_status_str(KP_##name), text);
    KP_STATUS_MAP(CHECK_STATUS)
#undef CHECK_STATUS
    assert_string_equal(kp_status_name(KP_ERR_BUILD), "KP_ERR_BUILD");
    assert_string_equal(kp_status_str(KP_ERR_BUILD), "OpenCL program build failed");
    assert_string_equal(kp_status_name((kp_status)-1000), "KP_STATUS_UNKNOWN");
    assert_string_equal(kp_status_name((kp_status)1), "KP_STATUS_UNKNOWN");
    assert_string_equal(kp_status_str((kp_status)-1000), "unknown status");
    /* Every status has a distinct name and text. */
    for (int a = -12; a <= 0; a++)
        for (int b = a + 1; b <= 0; b++) {
            assert_string_not_equal(kp_status_name((kp_status)a), kp_status_name((kp_status)b));
            assert_string_not_equal(kp_status_str((kp_status)a), kp_status_str((kp_status)b));
        }
}

static void test_tensor_helpers(void **state)
{
    kp_buffer *b = (kp_buffer *)&b; /* never dereferenced by the helpers */
    kp_tensor t = kp_tensor_2d(b, KP_F32, 3, 4);
    assert_ptr_equal(t.buffer, b);
    assert_int_equal(t.rank, 2);
    assert_int_equal(t.strides[0], 4);
    assert_int_equal(t.strides[1], 1);
    assert_int_equal(kp_tensor_numel(&t), 12);
    assert_int_equal(kp_tensor_extent(&t), 12);
    assert_true(kp_tensor_is_contiguous(&t));
    char buf[128];
    assert_string_equal(kp_tensor_describe(&t, buf, sizeof buf), "f32[3, 4]");

    kp_tensor tt = kp_tensor_transpose(t, 0, 1);
    assert_int_equal(tt.shape[0], 4);
    assert_int_equal(tt.shape[1], 3);
    assert_int_equal(tt.strides[0], 1);
    assert_int_equal(tt.strides[1], 4);
    assert_false(kp_tensor_is_contiguous(&tt));
    assert_int_equal(kp_tensor_numel(&tt), 12);
    assert_int_equal(kp_tensor_extent(&tt), 12);
    assert_string_equal(kp_tensor_describe(&tt, buf, sizeof buf), "f32[4, 3] strides [1, 4]");
    /* Out-of-range dimensions leave the view as it was. */
    kp_tensor same = kp_tensor_transpose(t, 0, 2);
    assert_memory_equal(&same, &t, sizeof t);
    same = kp_tensor_transpose(t, -1, 0);
    assert_memory_equal(&same, &t, sizeof t);

    kp_tensor v = kp_tensor_1d(b, KP_I32, 5);
    v.offset = 7;
    v.strides[0] = 3;
    assert_int_equal(kp_tensor_extent(&v), 7 + 4 * 3 + 1);
    assert_string_equal(kp_tensor_describe(&v, buf, sizeof buf), "i32[5] strides [3] offset 7");
    /* Size-1 dimensions do not break contiguity, whatever their stride. */
    kp_tensor row = kp_tensor_2d(b, KP_F16, 1, 8);
    row.strides[0] = 99;
    assert_true(kp_tensor_is_contiguous(&row));
    /* Broadcast (stride 0). */
    kp_tensor bc = kp_tensor_2d(b, KP_F32, 4, 3);
    bc.strides[0] = 0;
    assert_int_equal(kp_tensor_extent(&bc), 3);
    assert_false(kp_tensor_is_contiguous(&bc));

    kp_tensor empty = kp_tensor_3d(b, KP_U8, 2, 0, 5);
    empty.offset = 9;
    assert_int_equal(kp_tensor_numel(&empty), 0);
    assert_int_equal(kp_tensor_extent(&empty), 9);
    kp_tensor scalar = kp_tensor_nd(b, KP_U32, 0, NULL);
    scalar.offset = 2;
    assert_int_equal(kp_tensor_numel(&scalar), 1);
    assert_int_equal(kp_tensor_extent(&scalar), 3);
    assert_true(kp_tensor_is_contiguous(&scalar));
    assert_string_equal(kp_tensor_describe(&scalar, buf, sizeof buf), "u32[] offset 2");
    kp_tensor bad = kp_tensor_nd(b, KP_F32, KP_MAX_RANK + 1, (int64_t[9]){0});
    assert_int_equal(bad.rank, -1);

    /* A small buffer gets a truncated, terminated description. */
    char small[6];
    assert_string_equal(kp_tensor_describe(&tt, small, sizeof small), "f32[4");
    assert_ptr_equal(kp_tensor_describe(&tt, small, 0), small);

    assert_string_equal(kp_dtype_name(KP_F16), "f16");
    assert_string_equal(kp_dtype_name((kp_dtype)99), "none");
    assert_int_equal(kp_dtype_size(KP_F32), 4);
    assert_int_equal(kp_dtype_size(KP_F16), 2);
    assert_int_equal(kp_dtype_size(KP_U8), 1);
    assert_int_equal(kp_dtype_size(KP_DTYPE_NONE), 0);
    assert_string_equal(kp_dtype_name(KP_BF16), "bf16");
    assert_int_equal(kp_dtype_size(KP_BF16), 2);
    assert_string_equal(kp_dtype_name(KP_F64), "f64");
    assert_int_equal(kp_dtype_size(KP_F64), 8);

    /* bfloat16: nearest even at the 16th bit, exact widening, NaN stays NaN, overflow to Inf. */
    assert_int_equal(kp_bf16_from_float(1.0f), 0x3f80);
    assert_int_equal(kp_bf16_from_float(1.0f + 0x1p-8f), 0x3f80);            /* tie, even */
    assert_int_equal(kp_bf16_from_float(1.0f + 0x1p-7f + 0x1p-8f), 0x3f82);  /* tie, up */
    assert_int_equal(kp_bf16_from_float(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81); /* above */
    assert_int_equal(kp_bf16_from_float(-2.5f), 0xc020);
    assert_int_equal(kp_bf16_from_float(3.4e38f), 0x7f80);
    assert_true(isnan(kp_bf16_to_float(kp_bf16_from_float(NAN))));
    assert_float_equal(kp_bf16_to_float(0x3f81), 1.0f + 0x1p-7f, 0);
}

/* Counts past int64 stop at INT64_MAX, never a small number a limit would let through: the
 * [2^32, 2^32] broadcast's element count wrapped to 0. Invalid views (negative parts) too. */
static void test_tensor_helpers_past_int64(void **state)
{
    kp_buffer *b = (kp_buffer *)&b;
    const int64_t big = (int64_t)1 << 32;
    kp_tensor bc = kp_tensor_2d(b, KP_F32, big, big);
    bc.strides[0] = bc.strides[1] = 0;
    assert_true(kp_tensor_numel(&bc) == INT64_MAX);
    assert_int_equal(kp_tensor_extent(&bc), 1);
    assert_false(kp_tensor_is_contiguous(&bc));
    bc.shape[0] = 0;
    assert_int_equal(kp_tensor_numel(&bc), 0);
    kp_tensor edge = kp_tensor_2d(b, KP_U8, INT64_MAX, 1);
    edge.strides[0] = 0;
    assert_true(kp_tensor_numel(&edge) == INT64_MAX);
    /* Contiguous strides past int64 stop at INT64_MAX; the helpers stay defined on the result. */
    kp_tensor cube = kp_tensor_3d(b, KP_F32, big, big, big);
    assert_true(cube.strides[0] == INT64_MAX);
    assert_true(cube.strides[1] == big);
    assert_true(kp_tensor_numel(&cube) == INT64_MAX);
    assert_true(kp_tensor_extent(&cube) == INT64_MAX);
    assert_false(kp_tensor_is_contiguous(&cube));
    char buf[128];
    assert_string_equal(kp_tensor_describe(&cube, buf, sizeof buf),
                        "f32[4294967296, 4294967296, 4294967296] strides [9223372036854775807, "
                        "4294967296, 1]");
    /* 2^31 x 2^32 contiguous is 2^63 elements: its strides fit, its count does not. */
    kp_tensor wide = kp_tensor_2d(b, KP_U8, (int64_t)1 << 31, big);
    assert_true(kp_tensor_is_contiguous(&wide));
    assert_true(kp_tensor_numel(&wide) == INT64_MAX);
    assert_true(kp_tensor_extent(&wide) == INT64_MAX);
    kp_tensor last = kp_tensor_1d(b, KP_U8, 2);
    last.offset = INT64_MAX - 2;
    assert_true(kp_tensor_extent(&last) == INT64_MAX);
    last.offset = INT64_MAX - 1;
    assert_true(kp_tensor_extent(&last) == INT64_MAX);
    kp_tensor neg = kp_tensor_2d(b, KP_F32, 2, -3);
    assert_true(kp_tensor_numel(&neg) == INT64_MAX);
    assert_true(kp_tensor_extent(&neg) == INT64_MAX);
    assert_false(kp_tensor_is_contiguous(&neg));
    neg = kp_tensor_1d(b, KP_F32, 4);
    neg.strides[0] = -1;
    assert_true(kp_tensor_extent(&neg) == INT64_MAX);
    neg.strides[0] = 1;
    neg.offset = -1;
    assert_true(kp_tensor_extent(&neg) == INT64_MAX);
}

static void test_uuid_format(void **state)
{
    uint8_t u[16];
    for (int i = 0; i < 16; i++)
        u[i] = (uint8_t)i;
    char buf[40];
    memset(buf, 'x', sizeof buf);
    kp_uuid_format(u, buf);
    assert_string_equal(buf, "00010203-0405-0607-0809-0a0b0c0d0e0f");
    assert_int_equal(buf[37], 'x'); /* 37 bytes written, no more */
    memset(u, 0xab, sizeof u);
    u[15] = 0xf0;
    kp_uuid_format(u, buf);
    assert_string_equal(buf, "abababab-abab-abab-abab-abababababf0");
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--small-device") == 0) {
        const struct CMUnitTest child[] = {cmocka_unit_test(test_small_device_default)};
        return cmocka_run_group_tests(child, NULL, NULL);
    }
    /* Before the first OpenCL call of the process, so PoCL sees it. */
    setenv("POCL_MAX_WORK_GROUP_SIZE", POCL_MAX_WG, 1);
    unsetenv("KP_DEVICE");
    unsetenv("KP_MANIFEST");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_specs),
        cmocka_unit_test(test_unknown_device_from_environment),
        cmocka_unit_test(test_unknown_device_lists_devices),
        cmocka_unit_test(test_manifest_rules_matching_nothing),
        cmocka_unit_test(test_device_why_names_rule_and_line),
        cmocka_unit_test(test_environment_and_no_env_flag),
        cmocka_unit_test(test_broken_manifest),
        cmocka_unit_test(test_missing_manifest_file),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_tuning_default),
        cmocka_unit_test(test_tuning_manifest_entry),
        cmocka_unit_test(test_tuning_name_beats_vendor),
        cmocka_unit_test(test_tuning_later_layer_wins_tie),
        cmocka_unit_test(test_tuning_value_not_allowed),
        cmocka_unit_test(test_tuning_workgroup_above_device_max),
        cmocka_unit_test(test_tuning_default_above_device_max),
        cmocka_unit_test(test_tuning_string_value_rejected),
        cmocka_unit_test(test_tuning_unknown_key_warns),
        cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_tensor_helpers),
        cmocka_unit_test(test_tensor_helpers_past_int64),
        cmocka_unit_test(test_uuid_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
