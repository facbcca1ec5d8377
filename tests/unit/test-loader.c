/* SPDX-License-Identifier: Apache-2.0 */
/* Plugin loading: every way a plugin can be refused, duplicates, and the runtime staying usable. */
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "kernelport/plugin.h"
#include "test-util.h"

static char *real(const char *path)
{
    static char buf[4][PATH_MAX];
    static int next;
    char *out = buf[next++ % 4];
    assert_non_null(realpath(path, out));
    return out;
}

static const char *plugin_dir(void)
{
    return test_build_path(KP_TEST_EXAMPLE_PLUGIN_DIR);
}

static char *fixture_plugin(const char *name)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/test-plugins/%s", test_env("KP_TEST_BUILD"), name);
    return buf;
}

/* The directories tmp_dir made, removed when the tests are done. */
static char made[64][4096];
static int n_made;

/* A new empty directory under KP_TEST_TMP (mode 0700). */
static char *tmp_dir(const char *prefix)
{
    assert_true(n_made < 64);
    char *out = made[n_made++];
    snprintf(out, sizeof made[0], "%s/%s-XXXXXX", test_env("KP_TEST_TMP"), prefix);
    assert_non_null(mkdtemp(out));
    return out;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    remove(path);
    return 0;
}

static int remove_tmp_dirs(void **state)
{
    for (int i = 0; i < n_made; i++)
        nftw(made[i], remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

/* A runtime that loaded only the fixture `name`, with its single rejection's reason. Each has a
 * cache directory of its own, so that no verdict of an earlier run answers for the probe. */
static void expect_rejected(const char *name, const char *file, const char *reason)
{
    test_log log;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", fixture_plugin(name));
    kp_runtime_options o = test_options(dir, "host", &log);
    o.cache_dir = tmp_dir("cache");
    kp_runtime *rt;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    assert_int_equal(kp_plugin_count(rt), 0);
    assert_int_equal(kp_plugin_rejected_count(rt), 1);
    kp_plugin_record rec = {.struct_size = sizeof rec};
    assert_int_equal(kp_plugin_rejected(rt, 0, &rec), KP_OK);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", real(dir), file);
    assert_string_equal(rec.path, path);
    assert_string_equal(rec.reason, reason);
    assert_non_null(strstr(log.text, "rejected"));
    assert_int_equal(kp_kernel_count(rt), 0);
    kp_runtime_destroy(rt);
}

static void test_no_entry_symbol(void **state)
{
    expect_rejected("no-entry", "no-entry.so",
                    "no kp_plugin_entry symbol: not a Kernelport plugin (define the entry with "
                    "KP_PLUGIN_DEFINE)");
}

static void test_abi_major_too_new(void **state)
{
    char want[256];
    snprintf(want, sizeof want,
             "plugin ABI %d.0 is not supported by this Kernelport (ABI %d.%d); rebuild the plugin "
             "against Kernelport %s",
             KP_ABI_MAJOR + 1, KP_ABI_MAJOR, KP_ABI_MINOR, KP_VERSION_STRING);
    expect_rejected("abi-too-new", "abi-too-new.so", want);
}

static void test_init_fails_and_leaves_nothing(void **state)
{
    expect_rejected("init-fails", "init-fails.so",
                    "init failed with KP_ERR_UNSUPPORTED: this device is not for me");
}

static void test_example_plugin_loads(void **state)
{
    kp_runtime_options o = test_options(plugin_dir(), "host", NULL);
    kp_runtime *rt;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    assert_int_equal(kp_plugin_count(rt), 1);
    kp_plugin_record rec = {.struct_size = sizeof rec};
    assert_int_equal(kp_plugin_get(rt, 0, &rec), KP_OK);
    assert_string_equal(rec.name, "example");
    assert_int_equal(rec.n_kernels, 2);
    assert_int_equal(kp_kernel_count(rt), 2);
    kp_kernel_info info = {.struct_size = sizeof info};
    assert_int_equal(kp_kernel_info_get(kp_kernel_at(rt, 0), &info), KP_OK);
    assert_string_equal(info.name, "example.axpy");
    assert_int_equal(kp_kernel_info_get(kp_kernel_at(rt, 1), &info), KP_OK);
    assert_string_equal(info.name, "example.scale_rows");
    kp_runtime_destroy(rt);
}

/* A plugin built for ABI 1.1 (a shorter descriptor, arguments set one by one) loads and runs on
 * PoCL and on the host device. */
static void test_abi_1_1_plugin_runs(void **state)
{
    const char *const devices[] = {test_device(), "host"};
    for (int d = 0; d < 2; d++) {
        kp_runtime_options o = test_options(fixture_plugin("abi-1-1"), devices[d], NULL);
        kp_runtime *rt;
        assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
        assert_int_equal(kp_plugin_count(rt), 1);
        kp_kernel *k;
        assert_int_equal(kp_kernel_find(rt, "old.twice", &k), KP_OK);
        float x[5] = {1, 2, 3, 4, 5}, got[5];
        kp_buffer *b;
        assert_int_equal(kp_buffer_create(rt, sizeof x, &b), KP_OK);
        assert_int_equal(kp_buffer_write(rt, b, 0, sizeof x, x), KP_OK);
        kp_tensor t = kp_tensor_1d(b, KP_F32, 3);
        t.offset = 1;
        kp_arg args[] = {KP_ARG_TENSOR("x", t)};
        assert_int_equal(kp_kernel_launch(rt, k, args, 1, NULL), KP_OK);
        assert_int_equal(kp_buffer_read(rt, b, 0, sizeof got, got), KP_OK);
        const float want[5] = {1, 4, 6, 8, 5};
        assert_memory_equal(got, want, sizeof want);
        kp_runtime_destroy(rt);
    }
}

static kp_runtime *two_dirs(const char *manifest, test_log *log)
{
    const char *dirs[] = {plugin_dir(), fixture_plugin("dup-example")};
    char d1[4096], d2[4096];
    snprintf(d1, sizeof d1, "%s", dirs[0]);
    snprintf(d2, sizeof d2, "%s", dirs[1]);
    const char *both[] = {d1, d2};
    kp_runtime_options o = test_options(NULL, "host", log);
    o.plugin_dirs = both;
    o.n_plugin_dirs = 2;
    o.manifest_path = manifest;
    kp_runtime *rt = NULL;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    return rt;
}

static const char *plugin_of(kp_runtime *rt, const char *kernel)
{
    kp_kernel *k;
    kp_kernel_info info = {.struct_size = sizeof info};
    assert_int_equal(kp_kernel_find(rt, kernel, &k), KP_OK);
    assert_int_equal(kp_kernel_info_get(k, &info), KP_OK);
    return info.plugin;
}

static void test_duplicate_first_wins_with_warning(void **state)
{
    test_log log;
    kp_runtime *rt = two_dirs(NULL, &log);
    assert_string_equal(plugin_of(rt, "example.axpy"), "example");
    char want[8192];
    snprintf(want, sizeof want,
             "warn: kernel example.axpy is registered by both %s/example.so and %s/dup-example.so; "
             "using %s/example.so (set plugins.prefer in the manifest to choose)",
             real(plugin_dir()), real(fixture_plugin("dup-example")), real(plugin_dir()));
    assert_non_null(strstr(log.text, want));
    kp_runtime_destroy(rt);
}

static char *write_tmp(const char *name, const char *text)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", test_env("KP_TEST_TMP"), name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_duplicate_prefer_chooses(void **state)
{
    char *m = write_tmp("prefer.yaml", "kernelport: 1\nplugins:\n  prefer: { example.axpy: "
                                       "dupexample }\n");
    test_log log;
    kp_runtime *rt = two_dirs(m, &log);
    assert_string_equal(plugin_of(rt, "example.axpy"), "dupexample");
    assert_string_equal(plugin_of(rt, "example.scale_rows"), "example");
    assert_null(strstr(log.text, "warn: kernel example.axpy is registered by both"));
    kp_runtime_destroy(rt);
}

static void test_disabled_plugin(void **state)
{
    char *m = write_tmp("disable.yaml", "kernelport: 1\nplugins:\n  disable: [example]\n");
    kp_runtime_options o = test_options(plugin_dir(), "host", NULL);
    o.manifest_path = m;
    kp_runtime *rt;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    assert_int_equal(kp_kernel_count(rt), 0);
    kp_plugin_record rec = {.struct_size = sizeof rec};
    assert_int_equal(kp_plugin_rejected(rt, 0, &rec), KP_OK);
    assert_string_equal(rec.reason, "plugin example is disabled by the manifest (plugins.disable)");
    kp_runtime_destroy(rt);
}

static void copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    fclose(out);
}

/* A copy of the example plugin in `dir`, readable and executable by all, written by no one else. */
static char *copy_example(const char *dir, const char *name)
{
    static char so[4][8192];
    static int next;
    char *out = so[next++ % 4], src[8192];
    snprintf(out, sizeof so[0], "%s/%s", dir, name);
    snprintf(src, sizeof src, "%s/example.so", plugin_dir());
    copy_file(src, out);
    assert_int_equal(chmod(out, 0755), 0);
    return out;
}

/* The reason the one plugin (or directory) `dir` gives was refused for, in a fresh runtime with
 * the manifest `manifest` (may be NULL); NULL when it loaded (its 2 kernels, then). */
static const char *refusal(const char *dir, const char *manifest)
{
    static char reason[1024];
    kp_runtime_options o = test_options(dir, "host", NULL);
    o.manifest_path = manifest;
    kp_runtime *rt;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    kp_plugin_record rec = {.struct_size = sizeof rec};
    const char *out = NULL;
    if (kp_plugin_rejected_count(rt)) {
        assert_int_equal(kp_plugin_rejected(rt, 0, &rec), KP_OK);
        snprintf(reason, sizeof reason, "%s", rec.reason);
        out = reason;
        assert_int_equal(kp_kernel_count(rt), 0);
    } else {
        assert_int_equal(kp_kernel_count(rt), 2);
    }
    kp_runtime_destroy(rt);
    return out;
}

static void test_insecure_directory_refused(void **state)
{
    char *dir = tmp_dir("open-dir");
    char *so = copy_example(dir, "example.so");
    assert_int_equal(chmod(dir, 0777), 0);
    char want[8192];
    snprintf(want, sizeof want,
             "refused directory: the directory is writable by other users (mode 777; chmod "
             "g-w,o-w %s fixes that); set plugins.allow_insecure: true in the manifest to load "
             "from it anyway",
             real(dir));
    assert_string_equal(refusal(dir, NULL), want);
    char *allow = write_tmp("insecure.yaml", "kernelport: 1\nplugins: { allow_insecure: true }\n");
    assert_null(refusal(dir, allow));

    /* A writable plugin file in a safe directory is refused too. */
    assert_int_equal(chmod(dir, 0755), 0);
    assert_int_equal(chmod(so, 0666), 0);
    snprintf(want, sizeof want,
             "refused: the file is writable by other users (mode 666; chmod g-w,o-w %s/example.so "
             "fixes that); set plugins.allow_insecure: true in the manifest to load it anyway",
             real(dir));
    assert_string_equal(refusal(dir, NULL), want);
}

/* The sticky bit does not make a directory that anyone may add a plugin to safe to scan, and the
 * message shows the mode whole. */
static void test_sticky_directory_refused_with_full_mode(void **state)
{
    char *dir = tmp_dir("sticky-dir");
    copy_example(dir, "example.so");
    assert_int_equal(chmod(dir, 01777), 0);
    char want[8192];
    snprintf(want, sizeof want,
             "refused directory: the directory is writable by other users (mode 1777; chmod "
             "g-w,o-w %s fixes that); set plugins.allow_insecure: true in the manifest to load "
             "from it anyway",
             real(dir));
    assert_string_equal(refusal(dir, NULL), want);
}

/* A safe directory inside one that anyone may write to: they could rename it away and put their
 * own in its place. Sticky (/tmp), the parent lets only an entry's owner do that. */
static void test_directory_in_open_parent_refused(void **state)
{
    char *parent = tmp_dir("open-parent");
    char dir[8192];
    snprintf(dir, sizeof dir, "%s/plugins", parent);
    assert_int_equal(mkdir(dir, 0755), 0);
    copy_example(dir, "example.so");
    assert_int_equal(chmod(parent, 0777), 0);
    char want[8192];
    snprintf(want, sizeof want,
             "refused directory: directory %s above it is writable by other users (mode 777; "
             "chmod g-w,o-w %s fixes that); set plugins.allow_insecure: true in the manifest to "
             "load from it anyway",
             real(parent), real(parent));
    assert_string_equal(refusal(dir, NULL), want);
    assert_int_equal(chmod(parent, 01777), 0);
    assert_null(refusal(dir, NULL));
}

/* A symlink in a safe directory to a plugin in a directory anyone may write to: the file it
 * resolves to is what gets checked, with every directory above it. */
static void test_symlink_into_open_directory_refused(void **state)
{
    char *open_dir = tmp_dir("open-target"), *dir = tmp_dir("links");
    char *so = copy_example(open_dir, "example.so");
    assert_int_equal(chmod(open_dir, 0777), 0);
    assert_int_equal(chmod(dir, 0755), 0);
    char link[8192];
    snprintf(link, sizeof link, "%s/linked.so", dir);
    assert_int_equal(symlink(so, link), 0);
    char want[8192];
    snprintf(want, sizeof want,
             "refused: directory %s above it is writable by other users (mode 777; chmod "
             "g-w,o-w %s fixes that); set plugins.allow_insecure: true in the manifest to load "
             "it anyway",
             real(open_dir), real(open_dir));
    assert_string_equal(refusal(dir, NULL), want);
    assert_int_equal(chmod(open_dir, 01777), 0);
    assert_null(refusal(dir, NULL));
}

/* What a file or directory of another user is refused as: its owner, not its mode. Needs root to
 * give a file away; a test run as another user skips it. */
static void test_other_owner_named(void **state)
{
    if (geteuid() != 0)
        skip();
    const uid_t other = 65534;
    const struct passwd *pw = getpwuid(other);
    char owner[256];
    snprintf(owner, sizeof owner, "uid %u%s%s%s", (unsigned)other, pw ? " (" : "",
             pw ? pw->pw_name : "", pw ? ")" : "");
    char *parent = tmp_dir("owned"), dir[8192], want[16384];
    snprintf(dir, sizeof dir, "%s/plugins", parent);
    assert_int_equal(mkdir(dir, 0755), 0);
    char *so = copy_example(dir, "example.so");
    assert_int_equal(chmod(so, 0644), 0);
    assert_int_equal(chown(so, other, other), 0);
    snprintf(want, sizeof want,
             "refused: the file belongs to %s, not to you or root; set plugins.allow_insecure: "
             "true in the manifest to load it anyway",
             owner);
    assert_string_equal(refusal(dir, NULL), want);
    assert_int_equal(chown(so, 0, 0), 0);
    assert_int_equal(chmod(parent, 0755), 0);
    assert_int_equal(chown(parent, other, other), 0);
    snprintf(want, sizeof want,
             "refused directory: directory %s above it belongs to %s, not to you or root; set "
             "plugins.allow_insecure: true in the manifest to load from it anyway",
             real(parent), owner);
    assert_string_equal(refusal(dir, NULL), want);
}

static void test_crash_in_init_rejected(void **state)
{
    expect_rejected("init-crashes", "init-crashes.so",
                    "crashed in init with SIGSEGV during the out-of-process probe");
}

static void test_crash_in_constructor_rejected(void **state)
{
    expect_rejected("ctor-crashes", "ctor-crashes.so",
                    "crashed in dlopen (its constructors or a library it needs) with SIGSEGV "
                    "during the out-of-process probe");
}

static void test_abort_in_init_rejected(void **state)
{
    expect_rejected("init-aborts", "init-aborts.so",
                    "crashed in init with SIGABRT during the out-of-process probe");
}

static void test_entry_exported_as_data_rejected(void **state)
{
    expect_rejected("entry-is-data", "entry-is-data.so",
                    "kp_plugin_entry is not a function: the library exports it as data (define "
                    "the entry with KP_PLUGIN_DEFINE)");
}

static void test_plugin_registering_nothing_warns(void **state)
{
    test_log log;
    kp_runtime_options o = test_options(fixture_plugin("registers-nothing"), "host", &log);
    kp_runtime *rt;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    assert_int_equal(kp_plugin_count(rt), 1);
    assert_int_equal(kp_kernel_count(rt), 0);
    char want[8192];
    snprintf(want, sizeof want,
             "warn: plugin nothing (%s/registers-nothing.so) registered no kernels: its init "
             "returned KP_OK without registering any",
             real(fixture_plugin("registers-nothing")));
    assert_non_null(strstr(log.text, want));
    kp_runtime_destroy(rt);
}

/* The probe result of the one plugin `dir` holds, or its rejection reason. */
static const char *probed(const char *dir, const char *cache, uint32_t flags, const char *manifest)
{
    static char out[1024];
    kp_runtime_options o = test_options(dir, "host", NULL);
    o.cache_dir = cache;
    o.flags |= flags;
    o.manifest_path = manifest;
    kp_runtime *rt;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    kp_plugin_record rec = {.struct_size = sizeof rec};
    if (kp_plugin_count(rt) == 1) {
        assert_non_null(kp_plugin_probe_result(rt, 0));
        snprintf(out, sizeof out, "%s", kp_plugin_probe_result(rt, 0));
    } else {
        assert_int_equal(kp_plugin_rejected(rt, 0, &rec), KP_OK);
        snprintf(out, sizeof out, "%s", rec.reason);
    }
    assert_null(kp_plugin_probe_result(rt, 1));
    kp_runtime_destroy(rt);
    return out;
}

/* A verdict is kept until the file's contents change: a copy with a new time is not probed again,
 * a changed one is. */
static void test_verdicts_kept_until_the_file_changes(void **state)
{
    char *cache = tmp_dir("cache"), *dir = tmp_dir("probed");
    assert_int_equal(chmod(dir, 0755), 0);
    char *so = copy_example(dir, "example.so");
    assert_string_equal(probed(dir, cache, 0, NULL), "probed");
    assert_string_equal(probed(dir, cache, 0, NULL), "cached");
    struct timespec ts[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
    assert_int_equal(utimensat(AT_FDCWD, so, ts, 0), 0);
    assert_string_equal(probed(dir, cache, 0, NULL), "cached");
    FILE *f = fopen(so, "ab");
    assert_non_null(f);
    fputc(0, f);
    fclose(f);
    assert_string_equal(probed(dir, cache, 0, NULL), "probed");
    assert_string_equal(probed(dir, cache, 0, NULL), "cached");

    /* No disk cache: probed every time, nothing written. */
    char *none = tmp_dir("no-cache");
    assert_string_equal(probed(dir, none, KP_RUNTIME_NO_DISK_CACHE, NULL), "probed");
    assert_string_equal(probed(dir, none, KP_RUNTIME_NO_DISK_CACHE, NULL), "probed");
    assert_int_equal(rmdir(none), 0);

    char *off = write_tmp("probe-off.yaml", "kernelport: 1\nplugins: { probe: false }\n");
    assert_string_equal(probed(dir, cache, 0, off), "off");

    char want[8192];
    snprintf(want, sizeof want,
             "crashed in init with SIGSEGV during the out-of-process probe (remembered in "
             "%s/plugin-verdicts.txt from an earlier start; probed again when the file changes "
             "or is touched)",
             cache);
    const char *fresh = "crashed in init with SIGSEGV during the out-of-process probe";
    char *crashes = tmp_dir("crashes"), crash_so[8192], src[8192];
    assert_int_equal(chmod(crashes, 0755), 0);
    snprintf(src, sizeof src, "%s/init-crashes.so", fixture_plugin("init-crashes"));
    snprintf(crash_so, sizeof crash_so, "%s/init-crashes.so", crashes);
    copy_file(src, crash_so);
    assert_int_equal(chmod(crash_so, 0755), 0);
    assert_string_equal(probed(crashes, cache, 0, NULL), fresh);
    assert_string_equal(probed(crashes, cache, 0, NULL), want);
    /* Touched, the same contents: a crash is retried (a pass is not, above). */
    assert_int_equal(utimensat(AT_FDCWD, crash_so, ts, 0), 0);
    assert_string_equal(probed(crashes, cache, 0, NULL), fresh);
    assert_string_equal(probed(crashes, cache, 0, NULL), want);
}

static void test_build_failure_leaves_runtime_usable(void **state)
{
    const char *dirs[] = {plugin_dir(), fixture_plugin("bad-source")};
    char d1[4096], d2[4096];
    snprintf(d1, sizeof d1, "%s", dirs[0]);
    snprintf(d2, sizeof d2, "%s", dirs[1]);
    const char *both[] = {d1, d2};
    kp_runtime_options o = test_options(NULL, test_device(), NULL);
    o.plugin_dirs = both;
    o.n_plugin_dirs = 2;
    o.flags |= KP_RUNTIME_NO_DISK_CACHE;
    kp_runtime *rt;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    kp_kernel *broken, *axpy;
    assert_int_equal(kp_kernel_find(rt, "broken.compile", &broken), KP_OK);
    kp_buffer *b;
    assert_int_equal(kp_buffer_create(rt, 64 * sizeof(float), &b), KP_OK);
    kp_arg args[] = {KP_ARG_TENSOR("x", kp_tensor_1d(b, KP_F32, 64))};
    kp_device_info dev = {.struct_size = sizeof dev};
    assert_int_equal(kp_runtime_device(rt, &dev, NULL), KP_OK);
    for (int attempt = 0; attempt < 2; attempt++) {
        assert_int_equal(kp_kernel_launch(rt, broken, args, 1, NULL), KP_ERR_BUILD);
        const char *m = kp_last_error(rt);
        assert_non_null(strstr(m, "kernel broken.compile: building broken.cl failed "
                                  "(CL_BUILD_PROGRAM_FAILURE) on "));
        assert_non_null(strstr(m, "\noptions: (none)\nbuild log:\n"));
        assert_non_null(strstr(m, "undeclared_variable"));
        /* The prelude comes first, yet the log counts the file's own lines: the compiler honours
         * #line with a file name as clang does (PoCL, NVIDIA), or the backend maps the lines a
         * compiler counted from the start of the program's text (Oclgrind). */
        if (dev.vendor == KP_VENDOR_POCL) {
            assert_non_null(strstr(m, "broken.cl:3:"));
            /* A macro of the prelude is named by its own file and line, not by the driver's
             * temporary file (PoCL's tempfile_XXXXXX.cl, #28). */
            assert_non_null(strstr(m, "broken.cl:4:"));
            assert_non_null(strstr(m, "kernels/common/prelude.cl:"));
        }
        assert_null(strstr(m, "tempfile"));
    }
    /* sm_90a PTX asked for on a device whose compiler emits none, by the build flag and by the
     * option ABI 1.1 plugins pass: unsupported, and the option never reaches PoCL's compiler
     * (which would refuse it as a build error). */
    static const char *const sm90a_kernels[] = {"broken.sm90a", "broken.sm90a_option"};
    for (int i = 0; i < 2; i++) {
        kp_kernel *sm90a;
        assert_int_equal(kp_kernel_find(rt, sm90a_kernels[i], &sm90a), KP_OK);
        for (int attempt = 0; attempt < 2; attempt++) {
            assert_int_equal(kp_kernel_launch(rt, sm90a, args, 1, NULL), KP_ERR_UNSUPPORTED);
            char want[160];
            snprintf(want, sizeof want,
                     "kernel %s: fine.cl asks for sm_90a instructions (KP_BUILD_PTX_SM90A), "
                     "which need a compiler that emits PTX for sm_90; ",
                     sm90a_kernels[i]);
            assert_non_null(strstr(kp_last_error(rt), want));
        }
    }
    /* The runtime still runs the other plugin's kernels. */
    assert_int_equal(kp_kernel_find(rt, "example.axpy", &axpy), KP_OK);
    float x[64], y[64], y0[64];
    test_fill(x, 64, 1);
    test_fill(y0, 64, 2);
    kp_buffer *bx;
    assert_int_equal(kp_buffer_create(rt, sizeof x, &bx), KP_OK);
    assert_int_equal(kp_buffer_write(rt, bx, 0, sizeof x, x), KP_OK);
    assert_int_equal(kp_buffer_write(rt, b, 0, sizeof y0, y0), KP_OK);
    kp_arg a2[] = {KP_ARG_INT("n", 64), KP_ARG_FLOAT("alpha", 2.0),
                   KP_ARG_TENSOR("x", kp_tensor_1d(bx, KP_F32, 64)),
                   KP_ARG_TENSOR("y", kp_tensor_1d(b, KP_F32, 64))};
    assert_int_equal(kp_kernel_launch(rt, axpy, a2, 4, NULL), KP_OK);
    assert_int_equal(kp_buffer_read(rt, b, 0, sizeof y, y), KP_OK);
    for (int i = 0; i < 64; i++)
        assert_float_equal(y[i], 2.0f * x[i] + y0[i], 1e-6);
    kp_runtime_destroy(rt);
}

/* A compiler's warnings reach the log with the kernel and its file: PoCL's own stderr line
 * ("1 warning generated.") says no more (#28). */
static void test_build_warnings_logged(void **state)
{
    const char *dirs[] = {fixture_plugin("bad-source")};
    test_log log;
    kp_runtime_options o = test_options(NULL, test_device(), &log);
    o.plugin_dirs = dirs;
    o.n_plugin_dirs = 1;
    o.flags |= KP_RUNTIME_NO_DISK_CACHE;
    kp_runtime *rt;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    kp_kernel *warns;
    assert_int_equal(kp_kernel_find(rt, "broken.warns", &warns), KP_OK);
    kp_buffer *b;
    assert_int_equal(kp_buffer_create(rt, 64 * sizeof(float), &b), KP_OK);
    kp_arg args[] = {KP_ARG_TENSOR("x", kp_tensor_1d(b, KP_F32, 64))};
    assert_int_equal(kp_kernel_launch(rt, warns, args, 1, NULL), KP_OK);
    assert_int_equal(kp_finish(rt), KP_OK);
    kp_device_info dev = {.struct_size = sizeof dev};
    assert_int_equal(kp_runtime_device(rt, &dev, NULL), KP_OK);
    if (dev.vendor == KP_VENDOR_POCL) {
        assert_non_null(strstr(log.text, "kernel broken.warns: warns.cl built with compiler "
                                         "messages:\n"));
        assert_non_null(strstr(log.text, "warns.cl:1:2: this kernel warns on purpose"));
    }
    kp_buffer_destroy(rt, b);
    kp_runtime_destroy(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_entry_symbol),
        cmocka_unit_test(test_build_warnings_logged),
        cmocka_unit_test(test_abi_major_too_new),
        cmocka_unit_test(test_init_fails_and_leaves_nothing),
        cmocka_unit_test(test_example_plugin_loads),
        cmocka_unit_test(test_abi_1_1_plugin_runs),
        cmocka_unit_test(test_duplicate_first_wins_with_warning),
        cmocka_unit_test(test_duplicate_prefer_chooses),
        cmocka_unit_test(test_disabled_plugin),
        cmocka_unit_test(test_insecure_directory_refused),
        cmocka_unit_test(test_sticky_directory_refused_with_full_mode),
        cmocka_unit_test(test_directory_in_open_parent_refused),
        cmocka_unit_test(test_symlink_into_open_directory_refused),
        cmocka_unit_test(test_other_owner_named),
        cmocka_unit_test(test_crash_in_init_rejected),
        cmocka_unit_test(test_crash_in_constructor_rejected),
        cmocka_unit_test(test_abort_in_init_rejected),
        cmocka_unit_test(test_entry_exported_as_data_rejected),
        cmocka_unit_test(test_plugin_registering_nothing_warns),
        cmocka_unit_test(test_verdicts_kept_until_the_file_changes),
        cmocka_unit_test(test_build_failure_leaves_runtime_usable),
    };
    return cmocka_run_group_tests(tests, NULL, remove_tmp_dirs);
}
