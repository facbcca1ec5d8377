/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for backends/opencl/cl-cache.c: hits, damaged files, LRU eviction, many processes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "opencl/cl-cache.h"
#include "sha256.h"

#define HEADER 48u   /* magic, version, payload size, key */
#define OVERHEAD 80u /* header + checksum 32 */

typedef struct fixture {
    char root[1024];  /* fresh per test, removed afterwards */
    char cache[1100]; /* root/cache/dir: open must create the parents too */
} fixture;

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                    */
/* ------------------------------------------------------------------------------------------ */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    const char *base = getenv("KP_TEST_TMP");
    if (!base || !*base)
        base = "/tmp";
    int n = snprintf(f->root, sizeof f->root, "%s/disk-cache-XXXXXX", base);
    if (n < 0 || (size_t)n >= sizeof f->root || !mkdtemp(f->root)) {
        free(f);
        return -1;
    }
    snprintf(f->cache, sizeof f->cache, "%s/cache/dir", f->root);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    nftw(f->root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

static void make_key(int i, uint8_t key[32])
{
    char text[32];
    int n = snprintf(text, sizeof text, "key-%d", i);
    kp__sha256(text, (size_t)n, key);
}

/* Contents any process can recompute from the key alone, so a reader can check what it got. */
static size_t payload_size_for(const uint8_t key[32], size_t base)
{
    return base + key[0] * 3u;
}

static uint8_t *payload_for(const uint8_t key[32], size_t size)
{
    uint8_t *p = malloc(size ? size : 1);
    if (!p)
        return NULL;
    for (size_t i = 0; i < size; i++)
        p[i] = (uint8_t)(key[i % 32] ^ (uint8_t)(i * 131u) ^ (uint8_t)(i >> 8));
    return p;
}

static void entry_path(const char *dir, const uint8_t key[32], char *out, size_t cap)
{
    char hex[65];
    kp__sha256_hex(key, hex);
    snprintf(out, cap, "%s/%s.bin", dir, hex);
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void set_mtime_ago(const char *path, time_t seconds)
{
    struct timespec ts[2];
    ts[0].tv_sec = ts[1].tv_sec = time(NULL) - seconds;
    ts[0].tv_nsec = ts[1].tv_nsec = 0;
    assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static time_t mtime_of(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_mtim.tv_sec;
}

static void put_key(const kp__disk_cache *c, int i, size_t base)
{
    uint8_t key[32];
    make_key(i, key);
    size_t size = payload_size_for(key, base);
    uint8_t *p = payload_for(key, size);
    assert_non_null(p);
    assert_int_equal(kp__disk_cache_put(c, key, p, size), 0);
    free(p);
}

/* Asserts a hit with the key's own payload (base as passed to put_key), or a miss. */
static void expect_key(const kp__disk_cache *c, int i, size_t base, int hit)
{
    uint8_t key[32];
    make_key(i, key);
    void *data = (void *)1;
    size_t size = 1;
    assert_int_equal(kp__disk_cache_get(c, key, &data, &size, NULL), hit);
    if (!hit) {
        assert_null(data);
        assert_int_equal(size, 0);
        return;
    }
    size_t want = payload_size_for(key, base);
    uint8_t *p = payload_for(key, want);
    assert_non_null(p);
    assert_int_equal(size, want);
    assert_memory_equal(data, p, want);
    free(p);
    free(data);
}

/* Asserts a miss for key i, for the reason `want`. */
static void expect_miss(const kp__disk_cache *c, int i, kp__cache_miss want)
{
    uint8_t key[32];
    make_key(i, key);
    void *data = (void *)1;
    size_t size = 1;
    kp__cache_miss why = (kp__cache_miss)-1;
    assert_int_equal(kp__disk_cache_get(c, key, &data, &size, &why), 0);
    assert_null(data);
    assert_int_equal(why, want);
}

static void write_file(const char *path, const uint8_t *header, size_t header_size,
                       const uint8_t *payload, size_t size, const uint8_t digest[32])
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(header, 1, header_size, fp), header_size);
    assert_int_equal(fwrite(payload, 1, size, fp), size);
    assert_int_equal(fwrite(digest, 1, 32, fp), 32);
    assert_int_equal(fclose(fp), 0);
}

/* Writes a cache file by hand, with a valid checksum, so header fields can be wrong on purpose. */
static void write_raw(const char *path, const char *magic, uint32_t version, uint64_t stated,
                      const uint8_t key[32], const uint8_t *payload, size_t size)
{
    uint8_t header[HEADER], digest[32];
    memcpy(header, magic, 4);
    for (int i = 0; i < 4; i++)
        header[4 + i] = (uint8_t)(version >> (8 * i));
    for (int i = 0; i < 8; i++)
        header[8 + i] = (uint8_t)(stated >> (8 * i));
    memcpy(header + 16, key, 32);
    kp__sha256_ctx h;
    kp__sha256_init(&h);
    kp__sha256_update(&h, header, HEADER);
    kp__sha256_update(&h, payload, size);
    kp__sha256_final(&h, digest);
    write_file(path, header, HEADER, payload, size, digest);
}

/* A whole file of format version 1 (before entries held their key): magic, version, payload
 * size, payload, SHA-256 of the payload. */
static void write_v1(const char *path, const uint8_t *payload, size_t size)
{
    uint8_t header[16] = "KPBC\x01", digest[32];
    for (int i = 0; i < 8; i++)
        header[8 + i] = (uint8_t)((uint64_t)size >> (8 * i));
    kp__sha256(payload, size, digest);
    write_file(path, header, sizeof header, payload, size, digest);
}

static int count_temp_files(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        n += strncmp(de->d_name, ".tmp-", 5) == 0;
    closedir(d);
    return n;
}

static void open_cache(kp__disk_cache *c, const fixture *f, uint64_t max_bytes)
{
    char *err = NULL;
    assert_int_equal(kp__disk_cache_open(c, f->cache, max_bytes, &err), KP_OK);
    assert_null(err);
    assert_non_null(c->dir);
}

/* ------------------------------------------------------------------------------------------ */
/* Tests                                                                                      */
/* ------------------------------------------------------------------------------------------ */

static void test_miss_put_hit(void **state)
{
    fixture *f = *state;
    kp__disk_cache c;
    open_cache(&c, f, 0);

    struct stat st;
    assert_int_equal(stat(f->cache, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0700);

    expect_key(&c, 1, 1000, 0);
    put_key(&c, 1, 1000);
    expect_key(&c, 1, 1000, 1);
    expect_key(&c, 1, 1000, 1); /* a hit leaves the entry in place */

    /* A second put of the key replaces the entry whole. */
    put_key(&c, 1, 5000);
    expect_key(&c, 1, 5000, 1);

    /* An empty payload is a valid entry, distinct from a miss. */
    uint8_t key[32];
    make_key(2, key);
    assert_int_equal(kp__disk_cache_put(&c, key, NULL, 0), 0);
    void *data = NULL;
    size_t size = 99;
    assert_int_equal(kp__disk_cache_get(&c, key, &data, &size, NULL), 1);
    assert_int_equal(size, 0);
    free(data);

    /* Reopening finds the entries: they are on disk, not in the struct. */
    kp__disk_cache_close(&c);
    assert_null(c.dir);
    open_cache(&c, f, 0);
    expect_key(&c, 1, 5000, 1);
    kp__disk_cache_close(&c);
    kp__disk_cache_close(&c); /* closing twice is harmless */
}

static void test_corrupt_payload_is_deleted(void **state)
{
    fixture *f = *state;
    kp__disk_cache c;
    open_cache(&c, f, 0);
    uint8_t key[32];
    make_key(7, key);
    char path[4200];
    entry_path(f->cache, key, path, sizeof path);

    /* Flip one byte of the payload, then one of the checksum, then one of the key: each fails the
     * checksum. */
    static const off_t offsets[] = {HEADER + 10, -1, 16 + 5};
    for (size_t i = 0; i < sizeof offsets / sizeof offsets[0]; i++) {
        put_key(&c, 7, 300);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        off_t at = offsets[i] >= 0 ? offsets[i] : st.st_size - 5;
        int fd = open(path, O_RDWR);
        assert_true(fd >= 0);
        uint8_t b;
        assert_int_equal(pread(fd, &b, 1, at), 1);
        b ^= 0x40;
        assert_int_equal(pwrite(fd, &b, 1, at), 1);
        close(fd);

        expect_miss(&c, 7, KP__CACHE_DAMAGED);
        assert_false(exists(path));
        put_key(&c, 7, 300);
        expect_key(&c, 7, 300, 1);
    }
    kp__disk_cache_close(&c);
}

static void test_truncated_file_is_deleted(void **state)
{
    fixture *f = *state;
    kp__disk_cache c;
    open_cache(&c, f, 0);
    uint8_t key[32];
    make_key(3, key);
    char path[4200];
    entry_path(f->cache, key, path, sizeof path);
    size_t size = payload_size_for(key, 400);
    off_t full = (off_t)(size + OVERHEAD);

    /* Empty, inside the magic, inside the size field, inside the key, header only,
     * mid-payload, no checksum, one byte short. */
    const off_t cuts[] = {
        0, 3, 11, 30, HEADER, HEADER + (off_t)size / 2, HEADER + (off_t)size, full - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        put_key(&c, 3, 400);
        assert_int_equal(truncate(path, cuts[i]), 0);
        expect_miss(&c, 3, KP__CACHE_DAMAGED);
        assert_false(exists(path));
    }

    /* Bytes after the checksum: the stated size no longer matches the file. */
    put_key(&c, 3, 400);
    FILE *fp = fopen(path, "ab");
    assert_non_null(fp);
    fputs("junk", fp);
    fclose(fp);
    expect_key(&c, 3, 400, 0);
    assert_false(exists(path));

    put_key(&c, 3, 400);
    expect_key(&c, 3, 400, 1);
    kp__disk_cache_close(&c);
}

static void test_bad_header_is_deleted(void **state)
{
    fixture *f = *state;
    kp__disk_cache c;
    open_cache(&c, f, 0);
    uint8_t key[32];
    make_key(4, key);
    char path[4200];
    entry_path(f->cache, key, path, sizeof path);
    size_t size = payload_size_for(key, 64);
    uint8_t *p = payload_for(key, size);
    assert_non_null(p);

    /* The control: a hand-written file in the right format is a hit. */
    write_raw(path, "KPBC", 2, size, key, p, size);
    expect_key(&c, 4, 64, 1);

    write_raw(path, "KPBD", 2, size, key, p, size);
    expect_miss(&c, 4, KP__CACHE_DAMAGED);
    assert_false(exists(path));

    /* Another version: a miss, whatever follows the version field. */
    write_raw(path, "KPBC", 3, size, key, p, size);
    expect_miss(&c, 4, KP__CACHE_OTHER_FORMAT);
    assert_false(exists(path));
    write_raw(path, "KPBC", 1, size, key, p, size);
    expect_miss(&c, 4, KP__CACHE_OTHER_FORMAT);
    assert_false(exists(path));

    /* A stated size that disagrees with the file, small or absurd. */
    write_raw(path, "KPBC", 2, size - 1, key, p, size);
    expect_miss(&c, 4, KP__CACHE_DAMAGED);
    assert_false(exists(path));
    write_raw(path, "KPBC", 2, UINT64_MAX, key, p, size);
    expect_miss(&c, 4, KP__CACHE_DAMAGED);
    assert_false(exists(path));

    free(p);
    kp__disk_cache_close(&c);
}

/* A file of the first format, which entries of this Kernelport replace: a miss, never an error, and
 * the key is stored again in the current format. Old files of every size are read only as far as
 * the version field. */
static void test_version_1_file_is_a_miss(void **state)
{
    fixture *f = *state;
    kp__disk_cache c;
    open_cache(&c, f, 0);
    uint8_t key[32];
    make_key(8, key);
    char path[4200];
    entry_path(f->cache, key, path, sizeof path);
    static const size_t sizes[] = {0, 1, 47, 5000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint8_t *p = payload_for(key, sizes[i]);
        assert_non_null(p);
        write_v1(path, p, sizes[i]);
        free(p);
        expect_miss(&c, 8, KP__CACHE_OTHER_FORMAT);
        assert_false(exists(path));
    }
    put_key(&c, 8, 100);
    expect_key(&c, 8, 100, 1);
    kp__disk_cache_close(&c);
}

/* Two whole, checksummed entries swapped under each other's names, and one copied under a third
 * name: each is the entry of another key, so a miss that deletes it, never another key's data. */
static void test_entry_of_another_key_is_a_miss(void **state)
{
    fixture *f = *state;
    kp__disk_cache c;
    open_cache(&c, f, 0);
    char paths[3][4200], swap[4300];
    for (int i = 0; i < 3; i++) {
        uint8_t key[32];
        make_key(20 + i, key);
        entry_path(f->cache, key, paths[i], sizeof paths[i]);
    }
    put_key(&c, 20, 300);
    put_key(&c, 21, 500);
    snprintf(swap, sizeof swap, "%s/swap", f->cache);
    assert_int_equal(rename(paths[0], swap), 0);
    assert_int_equal(rename(paths[1], paths[0]), 0);
    assert_int_equal(rename(swap, paths[1]), 0);
    expect_miss(&c, 20, KP__CACHE_OTHER_KEY);
    assert_false(exists(paths[0]));
    expect_miss(&c, 21, KP__CACHE_OTHER_KEY);
    assert_false(exists(paths[1]));

    put_key(&c, 20, 300);
    expect_key(&c, 20, 300, 1);
    assert_int_equal(link(paths[0], paths[2]), 0);
    expect_miss(&c, 22, KP__CACHE_OTHER_KEY);
    assert_false(exists(paths[2]));
    expect_key(&c, 20, 300, 1); /* the original, under its own name, is untouched */
    kp__disk_cache_close(&c);
}

static void test_foreign_files_are_left_alone(void **state)
{
    fixture *f = *state;
    kp__disk_cache c;
    open_cache(&c, f, 0);
    uint8_t key[32];
    make_key(5, key);
    char path[4200];
    entry_path(f->cache, key, path, sizeof path);

    /* A directory, or a FIFO (which must not block the reader), under a cache file's name. */
    assert_int_equal(mkdir(path, 0700), 0);
    expect_miss(&c, 5, KP__CACHE_ABSENT);
    assert_true(exists(path));
    assert_int_equal(rmdir(path), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
    expect_miss(&c, 5, KP__CACHE_ABSENT);
    assert_true(exists(path));
    assert_int_equal(unlink(path), 0);

    /* Files with other names neither count towards usage nor get evicted. */
    char other[4200];
    snprintf(other, sizeof other, "%s/notes.bin", f->cache);
    FILE *fp = fopen(other, "w");
    assert_non_null(fp);
    fputs("not a cache entry", fp);
    fclose(fp);
    assert_int_equal(kp__disk_cache_usage(&c), 0);
    kp__disk_cache_close(&c);

    open_cache(&c, f, 3000);
    for (int i = 0; i < 10; i++)
        put_key(&c, 100 + i, 200);
    assert_true(exists(other));
    kp__disk_cache_close(&c);
}

static void test_eviction_drops_least_recently_used(void **state)
{
    /* Large against the spread of payload_size_for, so any three entries fit and four do not. */
    enum { EVICT_BASE = 10000 };
    fixture *f = *state;
    uint8_t keys[6][32];
    char paths[6][4200];
    uint64_t sizes[6];
    uint64_t largest = 0;
    for (int i = 0; i < 6; i++) {
        make_key(i, keys[i]);
        entry_path(f->cache, keys[i], paths[i], sizeof paths[i]);
        sizes[i] = payload_size_for(keys[i], EVICT_BASE) + OVERHEAD;
        if (sizes[i] > largest)
            largest = sizes[i];
    }
    /* Room for any three entries, never four. */
    uint64_t max = 3 * largest + 1;
    uint64_t smallest4 = UINT64_MAX;
    for (int a = 0; a < 6; a++)
        for (int b = a + 1; b < 6; b++)
            for (int d = b + 1; d < 6; d++)
                for (int e = d + 1; e < 6; e++) {
                    uint64_t s = sizes[a] + sizes[b] + sizes[d] + sizes[e];
                    smallest4 = s < smallest4 ? s : smallest4;
                }
    assert_true(smallest4 > max);

    kp__disk_cache c;
    open_cache(&c, f, max);
    for (int i = 0; i < 3; i++)
        put_key(&c, i, EVICT_BASE);
    set_mtime_ago(paths[0], 300);
    set_mtime_ago(paths[1], 200);
    set_mtime_ago(paths[2], 100);

    /* The oldest entry is read, so it becomes the most recently used and survives. */
    expect_key(&c, 0, EVICT_BASE, 1);
    assert_true(mtime_of(paths[0]) >= time(NULL) - 5);

    put_key(&c, 3, EVICT_BASE);
    assert_true(exists(paths[0]));
    assert_false(exists(paths[1]));
    assert_true(exists(paths[2]));
    assert_true(exists(paths[3]));

    /* Explicit times again, so the next victim does not depend on the clock's resolution. */
    set_mtime_ago(paths[0], 50);
    set_mtime_ago(paths[2], 100);
    set_mtime_ago(paths[3], 10);
    put_key(&c, 4, EVICT_BASE);
    assert_true(exists(paths[0]));
    assert_false(exists(paths[2]));
    assert_true(exists(paths[3]));
    assert_true(exists(paths[4]));
    assert_true(kp__disk_cache_usage(&c) <= max);
    expect_key(&c, 4, EVICT_BASE, 1);

    /* An entry larger than the whole bound is refused rather than evicting everything. */
    uint8_t *big = calloc(1, (size_t)max);
    assert_non_null(big);
    assert_int_equal(kp__disk_cache_put(&c, keys[5], big, (size_t)max), -1);
    free(big);
    assert_false(exists(paths[5]));
    assert_true(exists(paths[0]) && exists(paths[3]) && exists(paths[4]));
    kp__disk_cache_close(&c);
}

static void test_stale_temp_files_are_removed(void **state)
{
    fixture *f = *state;
    kp__disk_cache c;
    open_cache(&c, f, 1u << 20);
    char stale[4200], fresh[4200];
    snprintf(stale, sizeof stale, "%s/.tmp-1-dead", f->cache);
    snprintf(fresh, sizeof fresh, "%s/.tmp-2-busy", f->cache);
    for (int i = 0; i < 2; i++) {
        FILE *fp = fopen(i ? fresh : stale, "w");
        assert_non_null(fp);
        fclose(fp);
    }
    set_mtime_ago(stale, 3600);
    put_key(&c, 1, 10);
    assert_false(exists(stale));
    assert_true(exists(fresh)); /* may belong to a writer that is still running */
    kp__disk_cache_close(&c);
}

static void test_usage_sums_entries(void **state)
{
    fixture *f = *state;
    kp__disk_cache c;
    open_cache(&c, f, 0);
    assert_int_equal(kp__disk_cache_usage(&c), 0);
    uint64_t want = 0;
    for (int i = 0; i < 5; i++) {
        uint8_t key[32];
        make_key(i, key);
        put_key(&c, i, 1000 * (size_t)i);
        want += payload_size_for(key, 1000 * (size_t)i) + OVERHEAD;
        assert_int_equal(kp__disk_cache_usage(&c), want);
    }
    kp__disk_cache_close(&c);
    assert_int_equal(kp__disk_cache_usage(&c), 0);
}

static void test_uncreatable_directory_disables(void **state)
{
    fixture *f = *state;
    char file[4200], dir[4300];
    snprintf(file, sizeof file, "%s/plain-file", f->root);
    FILE *fp = fopen(file, "w");
    assert_non_null(fp);
    fclose(fp);
    snprintf(dir, sizeof dir, "%s/sub/cache", file);

    kp__disk_cache c;
    char *err = NULL;
    assert_int_equal(kp__disk_cache_open(&c, dir, 0, &err), KP_ERR_IO);
    assert_null(c.dir);
    assert_non_null(err);
    char want[4600];
    snprintf(want, sizeof want, "cannot create cache directory %s: %s", dir, strerror(ENOTDIR));
    assert_string_equal(err, want);
    free(err);

    /* The path itself being a regular file fails the same way. */
    assert_int_equal(kp__disk_cache_open(&c, file, 0, NULL), KP_ERR_IO);
    assert_null(c.dir);

    uint8_t key[32];
    make_key(1, key);
    void *data = (void *)1;
    size_t size = 1;
    assert_int_equal(kp__disk_cache_get(&c, key, &data, &size, NULL), 0);
    assert_null(data);
    assert_int_equal(size, 0);
    assert_int_equal(kp__disk_cache_put(&c, key, "x", 1), -1);
    assert_int_equal(kp__disk_cache_usage(&c), 0);
    kp__disk_cache_close(&c);

    /* NULL everywhere is a miss or a failure, never a crash. */
    assert_int_equal(kp__disk_cache_open(NULL, dir, 0, NULL), KP_ERR_INVALID_ARG);
    assert_int_equal(kp__disk_cache_open(&c, NULL, 0, &err), KP_ERR_INVALID_ARG);
    free(err);
    assert_int_equal(kp__disk_cache_get(NULL, key, &data, &size, NULL), 0);
    assert_int_equal(kp__disk_cache_put(NULL, key, "x", 1), -1);
    assert_int_equal(kp__disk_cache_usage(NULL), 0);
    kp__disk_cache_close(NULL);
}

/* ------------------------------------------------------------------------------------------ */
/* Many processes                                                                             */
/* ------------------------------------------------------------------------------------------ */

enum { N_CHILDREN = 4, N_ROUNDS = 200, N_KEYS = 6 };

/* The payload base of key i: one large entry so a write spans many write() calls and a torn
 * file would be caught. */
static size_t shared_base(int i)
{
    return i == 0 ? 256 * 1024 : 2000 + 1500 * (size_t)i;
}

/* Exit codes say what went wrong: 0 fine, 2 a hit with wrong bytes, 3 a failed put, 4 setup,
 * 5 a miss on a key this child stored in an unbounded cache. Content checks alone cannot catch
 * a torn write (the checksum turns it into a miss), but with nothing evicting, an entry once
 * renamed into place must stay readable while other processes replace it. */
static int child_main(const char *dir, uint64_t max_bytes, unsigned seed, int report_fd)
{
    kp__disk_cache c;
    if (kp__disk_cache_open(&c, dir, max_bytes, NULL) != KP_OK)
        return 4;
    uint8_t *expected[N_KEYS];
    size_t sizes[N_KEYS];
    uint8_t keys[N_KEYS][32];
    for (int i = 0; i < N_KEYS; i++) {
        make_key(1000 + i, keys[i]);
        sizes[i] = payload_size_for(keys[i], shared_base(i));
        expected[i] = payload_for(keys[i], sizes[i]);
        if (!expected[i])
            return 4;
    }
    int rc = 0;
    uint32_t hits = 0;
    int stored[N_KEYS] = {0};
    for (int round = 0; round < N_ROUNDS && rc == 0; round++) {
        int k = (int)(rand_r(&seed) % N_KEYS);
        if (rand_r(&seed) % 3 == 0) {
            if (kp__disk_cache_put(&c, keys[k], expected[k], sizes[k]) != 0)
                rc = 3;
            stored[k] = 1;
            continue;
        }
        void *data = NULL;
        size_t size = 0;
        if (kp__disk_cache_get(&c, keys[k], &data, &size, NULL)) {
            hits++;
            if (size != sizes[k] || memcmp(data, expected[k], size) != 0)
                rc = 2;
            free(data);
        } else if (stored[k] && max_bytes == 0) {
            rc = 5;
        }
    }
    for (int i = 0; i < N_KEYS; i++)
        free(expected[i]);
    kp__disk_cache_close(&c);
    if (write(report_fd, &hits, sizeof hits) != (ssize_t)sizeof hits && rc == 0)
        rc = 4;
    return rc;
}

static void run_processes(const fixture *f, uint64_t max_bytes)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pids[N_CHILDREN];
    for (int i = 0; i < N_CHILDREN; i++) {
        fflush(NULL); /* or the children would flush the parent's buffered output again */
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            close(fds[0]);
            _exit(child_main(f->cache, max_bytes, (unsigned)getpid() * 2654435761u, fds[1]));
        }
    }
    close(fds[1]);
    int failures = 0;
    for (int i = 0; i < N_CHILDREN; i++) {
        int status = 0;
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            print_error("child %d: %s %d\n", i, WIFEXITED(status) ? "exit" : "signal",
                        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
            failures++;
        }
    }
    uint32_t hits = 0, total_hits = 0;
    while (read(fds[0], &hits, sizeof hits) == (ssize_t)sizeof hits)
        total_hits += hits;
    close(fds[0]);
    assert_int_equal(failures, 0);
    assert_true(total_hits > 0); /* otherwise nothing was checked */

    /* Afterwards: every entry is whole, no temp file is left behind, and the bound holds. */
    kp__disk_cache c;
    open_cache(&c, f, 0);
    for (int i = 0; i < N_KEYS; i++) {
        uint8_t key[32];
        make_key(1000 + i, key);
        void *data = NULL;
        size_t size = 0;
        if (kp__disk_cache_get(&c, key, &data, &size, NULL)) {
            size_t want = payload_size_for(key, shared_base(i));
            uint8_t *p = payload_for(key, want);
            assert_non_null(p);
            assert_int_equal(size, want);
            assert_memory_equal(data, p, want);
            free(p);
            free(data);
        }
    }
    if (max_bytes > 0)
        assert_true(kp__disk_cache_usage(&c) <= max_bytes);
    kp__disk_cache_close(&c);
    assert_int_equal(count_temp_files(f->cache), 0);
}

static void test_processes_share_directory(void **state)
{
    run_processes(*state, 0);
}

static void test_processes_share_bounded_directory(void **state)
{
    /* Room for the large entry and a few small ones: most puts evict, so evictions race with
     * reads and writes. */
    uint8_t key[32];
    make_key(1000, key);
    run_processes(*state, payload_size_for(key, shared_base(0)) + OVERHEAD + 15000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_miss_put_hit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_payload_is_deleted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_file_is_deleted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_header_is_deleted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_version_1_file_is_a_miss, setup, teardown),
        cmocka_unit_test_setup_teardown(test_entry_of_another_key_is_a_miss, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_files_are_left_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_eviction_drops_least_recently_used, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_temp_files_are_removed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_usage_sums_entries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uncreatable_directory_disables, setup, teardown),
        cmocka_unit_test_setup_teardown(test_processes_share_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_processes_share_bounded_directory, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
