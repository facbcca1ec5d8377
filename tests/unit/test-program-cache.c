/* SPDX-License-Identifier: Apache-2.0 */
/* The on-disk program cache seen through the runtime: hits, damaged files, racing processes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sha256.h"
#include "test-util.h"

#define LOADED "kernel example.axpy: program loaded from the disk cache"

/* An empty directory KP_TEST_TMP/<name> (emptied if an earlier run left files). */
static char *fresh_dir(const char *name)
{
    static char bufs[4][4096];
    static int next;
    char *path = bufs[next++ % 4];
    snprintf(path, sizeof bufs[0], "%s/%s", test_env("KP_TEST_TMP"), name);
    DIR *d = opendir(path);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL)
            if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                assert_int_equal(unlinkat(dirfd(d), de->d_name, 0), 0);
        closedir(d);
        assert_int_equal(rmdir(path), 0);
    }
    return path;
}

/* Names in `dir`: cache files (64 hex digits + ".bin", path of the last in `last`), temp files
 * and anything else but the plugin probe's verdicts, which share the directory (test-loader). */
typedef struct listing {
    int bins, temps, others;
    char last[4096];
} listing;

static listing list_dir(const char *dir)
{
    listing l = {0};
    DIR *d = opendir(dir);
    if (!d)
        return l;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *n = de->d_name;
        size_t len = strlen(n);
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
            continue;
        if (len == 68 && strcmp(n + 64, ".bin") == 0 && strspn(n, "0123456789abcdef") == 64) {
            l.bins++;
            snprintf(l.last, sizeof l.last, "%s/%s", dir, n);
        } else if (strncmp(n, ".tmp-", 5) == 0) {
            l.temps++;
        } else if (strcmp(n, "plugin-verdicts.txt") != 0) {
            l.others++;
        }
    }
    closedir(d);
    return l;
}

static unsigned char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    unsigned char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

/* A whole cache file: "KPBC", version 2, payload size, the key its name spells, payload, and the
 * SHA-256 of all that precedes it. */
static int file_is_valid(const char *path)
{
    size_t size;
    unsigned char *b = slurp(path, &size);
    int ok = size >= 80 && memcmp(b, "KPBC", 4) == 0;
    uint32_t version = 0;
    uint64_t payload = 0;
    for (int i = 3; ok && i >= 0; i--)
        version = version << 8 | b[4 + i];
    for (int i = 7; ok && i >= 0; i--)
        payload = payload << 8 | b[8 + i];
    ok = ok && version == 2 && payload == size - 80 && payload > 0;
    if (ok) {
        char hex[65];
        kp__sha256_hex(b + 16, hex);
        const char *name = strrchr(path, '/');
        ok = strncmp(name ? name + 1 : path, hex, 64) == 0;
    }
    if (ok) {
        uint8_t digest[32];
        kp__sha256(b, 48 + (size_t)payload, digest);
        ok = memcmp(digest, b + 48 + payload, 32) == 0;
    }
    free(b);
    return ok;
}

/* A PoCL runtime with the example plugin and `cache_dir`, with the manifest's cache.binaries set
 * to `binaries` (PoCL's default, auto, writes none) and example.axpy's WG to `wg` (0: the
 * default). */
static kp_runtime *open_runtime_wg(const char *cache_dir, uint32_t extra_flags, test_log *log,
                                   const char *binaries, int wg)
{
    char text[256], name[64];
    int n = snprintf(text, sizeof text, "kernelport: 1\ncache: { binaries: %s }\n", binaries);
    if (wg)
        snprintf(text + n, sizeof text - (size_t)n,
                 "tuning:\n  - kernels: { example.axpy: { WG: %d } }\n", wg);
    /* One file per process: test_two_processes_at_once runs several at once. */
    snprintf(name, sizeof name, "binaries-%ld.yaml", (long)getpid());
    kp_runtime_options o = test_options(test_build_path(KP_TEST_EXAMPLE_PLUGIN_DIR), "pocl", log);
    o.manifest_path = test_write_tmp(name, text);
    o.cache_dir = cache_dir;
    o.flags |= extra_flags;
    kp_runtime *rt = NULL;
    kp_status st = kp_runtime_create(&o, &rt);
    if (st != KP_OK)
        fprintf(stderr, "kp_runtime_create: %s\n", kp_last_error(NULL));
    return st == KP_OK ? rt : NULL;
}

static kp_runtime *open_runtime_with(const char *cache_dir, uint32_t extra_flags, test_log *log,
                                     const char *binaries)
{
    return open_runtime_wg(cache_dir, extra_flags, log, binaries, 0);
}

static kp_runtime *open_runtime(const char *cache_dir, uint32_t extra_flags, test_log *log)
{
    return open_runtime_with(cache_dir, extra_flags, log, "always");
}

/* Launches example.axpy on 1009 elements and checks the result; 0 when right. */
static int axpy_is_right(kp_runtime *rt)
{
    enum { n = 1009 };
    float x[n], y[n], got[n];
    test_fill_nonzero(x, n, 21);
    test_fill_nonzero(y, n, 22);
    kp_kernel *k;
    kp_buffer *bx = NULL, *by = NULL;
    kp_status st = kp_kernel_find(rt, "example.axpy", &k);
    if (st == KP_OK)
        st = kp_buffer_create(rt, sizeof x, &bx);
    if (st == KP_OK)
        st = kp_buffer_create(rt, sizeof y, &by);
    if (st == KP_OK)
        st = kp_buffer_write(rt, bx, 0, sizeof x, x);
    if (st == KP_OK)
        st = kp_buffer_write(rt, by, 0, sizeof y, y);
    if (st == KP_OK) {
        kp_arg args[] = {KP_ARG_INT("n", n), KP_ARG_FLOAT("alpha", 1.5),
                         KP_ARG_TENSOR("x", kp_tensor_1d(bx, KP_F32, n)),
                         KP_ARG_TENSOR("y", kp_tensor_1d(by, KP_F32, n))};
        st = kp_kernel_launch(rt, k, args, 4, NULL);
    }
    if (st == KP_OK)
        st = kp_buffer_read(rt, by, 0, sizeof got, got);
    if (st != KP_OK) {
        fprintf(stderr, "axpy: %s\n", kp_last_error(rt));
        return -1;
    }
    kp_buffer_destroy(rt, bx);
    kp_buffer_destroy(rt, by);
    for (int i = 0; i < n; i++) {
        float want = fmaf(1.5f, x[i], y[i]);
        if (memcmp(&got[i], &want, sizeof want) != 0) {
            fprintf(stderr, "axpy: element %d is %g, expected %g\n", i, (double)got[i],
                    (double)want);
            return -1;
        }
    }
    return 0;
}

/* One runtime's whole life on `dir`, example.axpy's WG `wg` (0: the default), its log in `log`:
 * returns whether it loaded the program from the cache. */
static int run_wg(const char *dir, int wg, test_log *log)
{
    kp_runtime *rt = open_runtime_wg(dir, 0, log, "always", wg);
    assert_non_null(rt);
    assert_int_equal(axpy_is_right(rt), 0);
    kp_runtime_destroy(rt);
    return strstr(log->text, LOADED) != NULL;
}

static int run_once(const char *dir)
{
    test_log log;
    int loaded = run_wg(dir, 0, &log);
    assert_null(strstr(log.text, "warn"));
    return loaded;
}

static void expect_one_valid_file(const char *dir, listing *out)
{
    listing l = list_dir(dir);
    assert_int_equal(l.bins, 1);
    assert_int_equal(l.temps, 0);
    assert_int_equal(l.others, 0);
    assert_true(file_is_valid(l.last));
    if (out)
        *out = l;
}

static void test_store_then_load(void **state)
{
    const char *dir = fresh_dir("cache-basic");
    assert_false(run_once(dir)); /* nothing to load yet */
    listing l;
    expect_one_valid_file(dir, &l);
    struct stat before, after;
    assert_int_equal(stat(l.last, &before), 0);
    assert_true(run_once(dir));
    expect_one_valid_file(dir, NULL);
    assert_int_equal(stat(l.last, &after), 0);
    assert_int_equal(after.st_ino, before.st_ino); /* a hit reads, it does not rewrite */
}

/* Damages the cache file with `damage`, then expects a miss, a right result, and a valid file
 * written in its place that the next runtime loads. */
static void expect_recovery(const char *name, void (*damage)(const char *path))
{
    const char *dir = fresh_dir(name);
    run_once(dir);
    listing l;
    expect_one_valid_file(dir, &l);
    damage(l.last);
    assert_false(file_is_valid(l.last));
    assert_false(run_once(dir));
    expect_one_valid_file(dir, NULL);
    assert_true(run_once(dir));
}

static void flip_middle(const char *path)
{
    size_t size;
    unsigned char *b = slurp(path, &size);
    assert_true(size > 64);
    for (size_t i = size / 2; i < size / 2 + 16; i++)
        b[i] ^= 0xff;
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, size, f), size);
    assert_int_equal(fclose(f), 0);
    free(b);
}

static void truncate_10(const char *path)
{
    assert_int_equal(truncate(path, 10), 0);
}

static void truncate_0(const char *path)
{
    assert_int_equal(truncate(path, 0), 0);
}

static void wrong_magic(const char *path)
{
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, "XXXX", 4, 0), 4);
    assert_int_equal(close(fd), 0);
}

/* The file of the first format, before entries held their key: magic, version 1, payload size,
 * payload, SHA-256 of the payload. Another Kernelport's file: a miss, never an error. */
static void version_1(const char *path)
{
    size_t size;
    unsigned char *b = slurp(path, &size);
    size_t payload = size - 80;
    unsigned char *old = malloc(16 + payload + 32);
    assert_non_null(old);
    memcpy(old, b, 16);
    old[4] = 1;
    memcpy(old + 16, b + 48, payload);
    kp__sha256(old + 16, payload, old + 16 + payload);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(old, 1, 16 + payload + 32, f), 16 + payload + 32);
    assert_int_equal(fclose(f), 0);
    free(old);
    free(b);
}

/* A well-formed cache file whose payload is no program binary: only building it can tell. */
static void garbage_payload(const char *path)
{
    size_t size;
    unsigned char *b = slurp(path, &size);
    unsigned char file[48 + 256 + 32] = "KPBC\x02\0\0\0";
    file[8] = 0; /* payload size 256, little-endian */
    file[9] = 1;
    memcpy(file + 16, b + 16, 32); /* the key, which stays right */
    free(b);
    for (int i = 0; i < 256; i++)
        file[48 + i] = (unsigned char)(i * 37 + 11);
    kp__sha256(file, 48 + 256, file + 48 + 256);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(file, 1, sizeof file, f), sizeof file);
    assert_int_equal(fclose(f), 0);
    assert_true(file_is_valid(path));
}

static void test_flipped_bytes(void **state)
{
    expect_recovery("cache-flipped", flip_middle);
}

static void test_truncated_to_10_bytes(void **state)
{
    expect_recovery("cache-trunc10", truncate_10);
}

static void test_truncated_to_0_bytes(void **state)
{
    expect_recovery("cache-trunc0", truncate_0);
}

static void test_wrong_magic(void **state)
{
    expect_recovery("cache-magic", wrong_magic);
}

static void test_version_1_file(void **state)
{
    expect_recovery("cache-v1", version_1);
}

/* The path of the cache file `dir` gained since `before` was listed (its only one when `before` is
 * empty), in `out`. */
static void new_file(const char *dir, const char *before, char *out, size_t cap)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *de;
    out[0] = '\0';
    while ((de = readdir(d)) != NULL) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (strlen(de->d_name) == 68 && strcmp(path, before) != 0)
            snprintf(out, cap, "%s", path);
    }
    closedir(d);
    assert_true(out[0] != '\0');
}

/* The log of a run that found `path` holding another program's entry. */
static void expect_other_key_warning(const test_log *log, const char *path)
{
    char want[8192];
    snprintf(want, sizeof want,
             "warn: kernel example.axpy: the program cache file %s held another program's entry "
             "(renamed or copied there) and is deleted; the program is rebuilt",
             path);
    if (!strstr(log->text, want))
        fail_msg("log lacks \"%s\":\n%s", want, log->text);
}

/* The entries of two programs (example.axpy built for WG 64 and for WG 32), each whole and
 * checksummed, swapped under each other's names: each run finds the other program under its
 * key, warns naming the file, rebuilds and stores its own, and the next run loads it. Loading
 * the other program instead ran a kernel compiled for another work-group size. */
static void test_swapped_entries_rebuild(void **state)
{
    const char *dir = fresh_dir("cache-swapped");
    test_log log;
    char a[4096], b[4096], swap[4200];
    assert_false(run_wg(dir, 64, &log));
    new_file(dir, "", a, sizeof a);
    assert_false(run_wg(dir, 32, &log));
    new_file(dir, a, b, sizeof b);
    snprintf(swap, sizeof swap, "%s/swap", dir);
    assert_int_equal(rename(a, swap), 0);
    assert_int_equal(rename(b, a), 0);
    assert_int_equal(rename(swap, b), 0);

    assert_false(run_wg(dir, 64, &log));
    expect_other_key_warning(&log, a);
    assert_false(run_wg(dir, 32, &log));
    expect_other_key_warning(&log, b);
    assert_true(file_is_valid(a));
    assert_true(file_is_valid(b));
    assert_true(run_wg(dir, 64, &log));
    assert_null(strstr(log.text, "warn"));
    assert_true(run_wg(dir, 32, &log));
    assert_null(strstr(log.text, "warn"));
}

static void test_well_formed_garbage_binary(void **state)
{
    const char *dir = fresh_dir("cache-garbage");
    run_once(dir);
    listing l;
    expect_one_valid_file(dir, &l);
    size_t good_size, size;
    free(slurp(l.last, &good_size));
    garbage_payload(l.last);
    /* The binary does not build: a miss, the right result, and the real binary stored again. */
    assert_false(run_once(dir));
    expect_one_valid_file(dir, NULL);
    free(slurp(l.last, &size));
    assert_int_equal(size, good_size);
    assert_true(run_once(dir));
}

static void test_no_disk_cache_flag_writes_nothing(void **state)
{
    const char *dir = fresh_dir("cache-disabled");
    test_log log;
    kp_runtime *rt = open_runtime(dir, KP_RUNTIME_NO_DISK_CACHE, &log);
    assert_non_null(rt);
    assert_int_equal(axpy_is_right(rt), 0);
    kp_runtime_destroy(rt);
    listing l = list_dir(dir); /* the directory may not even exist */
    assert_int_equal(l.bins + l.temps + l.others, 0);
    assert_null(strstr(log.text, LOADED));
}

/* On PoCL, `auto` writes no binaries (each would cost a compile of every kernel in the program);
 * `never` writes none anywhere. */
static void test_binaries_auto_and_never_write_nothing_on_pocl(void **state)
{
    const char *const modes[] = {"auto", "never"};
    for (int i = 0; i < 2; i++) {
        const char *dir = fresh_dir(i ? "cache-never" : "cache-auto");
        test_log log;
        kp_runtime *rt = open_runtime_with(dir, 0, &log, modes[i]);
        assert_non_null(rt);
        assert_int_equal(axpy_is_right(rt), 0);
        kp_runtime_destroy(rt);
        listing l = list_dir(dir);
        assert_int_equal(l.bins + l.temps, 0);
        assert_null(strstr(log.text, LOADED));
    }
}

static void test_unusable_cache_dir_warns_and_runs(void **state)
{
    /* A directory under a regular file cannot be created. */
    const char *file = test_write_tmp("not-a-dir", "x");
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/cache", file);
    test_log log;
    kp_runtime *rt = open_runtime(dir, 0, &log);
    assert_non_null(rt);
    assert_int_equal(axpy_is_right(rt), 0);
    kp_runtime_destroy(rt);
    char want[8192];
    snprintf(want, sizeof want,
             "warn: program cache disabled: cannot create cache directory %s: %s", dir,
             strerror(ENOTDIR));
    if (!strstr(log.text, want))
        fail_msg("log lacks \"%s\":\n%s", want, log.text);
}

/* ---- two processes at once -------------------------------------------------------------- */

/* The child: a runtime on `dir`, ready on `ready_fd`, then one launch when `go_fd` says so. */
static int child_main(const char *dir, int ready_fd, int go_fd)
{
    kp_runtime *rt = open_runtime(dir, 0, NULL);
    if (!rt)
        return 3;
    char c = 'r';
    if (write(ready_fd, &c, 1) != 1 || read(go_fd, &c, 1) != 1)
        return 4;
    int bad = axpy_is_right(rt);
    kp_runtime_destroy(rt);
    return bad ? 5 : 0;
}

static void test_two_processes_at_once(void **state)
{
    const char *dir = fresh_dir("cache-race");
    /* Close-on-exec everywhere; each child clears it on the two ends it uses, so no child holds
     * the parent's ends and a child that dies early cannot hang the parent. */
    int ready[2], go[2];
    assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
    assert_int_equal(pipe2(go, O_CLOEXEC), 0);
    char fds[2][16];
    snprintf(fds[0], sizeof fds[0], "%d", ready[1]);
    snprintf(fds[1], sizeof fds[1], "%d", go[0]);
    pid_t pids[2];
    for (int i = 0; i < 2; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            /* A fresh image: OpenCL state must not be inherited across fork. */
            if (fcntl(ready[1], F_SETFD, 0) == 0 && fcntl(go[0], F_SETFD, 0) == 0)
                execl("/proc/self/exe", "test-program-cache", "--child", dir, fds[0], fds[1],
                      (char *)NULL);
            _exit(127);
        }
    }
    close(ready[1]);
    /* Both runtimes exist before either builds: they race for the empty cache. A child that
     * failed shows in its exit status below. */
    struct pollfd p = {.fd = ready[0], .events = POLLIN};
    char c;
    for (int i = 0; i < 2; i++)
        if (poll(&p, 1, 120000) != 1 || read(ready[0], &c, 1) != 1)
            break;
    assert_int_equal(write(go[1], "gg", 2), 2);
    for (int i = 0; i < 2; i++) {
        int status = 0;
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    close(ready[0]);
    close(go[0]);
    close(go[1]);
    expect_one_valid_file(dir, NULL);
    assert_true(run_once(dir));
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "--child") == 0)
        return child_main(argv[2], atoi(argv[3]), atoi(argv[4]));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store_then_load),
        cmocka_unit_test(test_flipped_bytes),
        cmocka_unit_test(test_truncated_to_10_bytes),
        cmocka_unit_test(test_truncated_to_0_bytes),
        cmocka_unit_test(test_wrong_magic),
        cmocka_unit_test(test_version_1_file),
        cmocka_unit_test(test_swapped_entries_rebuild),
        cmocka_unit_test(test_well_formed_garbage_binary),
        cmocka_unit_test(test_no_disk_cache_flag_writes_nothing),
        cmocka_unit_test(test_binaries_auto_and_never_write_nothing_on_pocl),
        cmocka_unit_test(test_unusable_cache_dir_warns_and_runs),
        cmocka_unit_test(test_two_processes_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
