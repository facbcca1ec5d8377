/* SPDX-License-Identifier: Apache-2.0 */
/* The on-disk program binary cache: checksummed files, atomic renames, LRU eviction by mtime. */
#include "opencl/cl-cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sha256.h"
#include "util.h"

#define MAGIC "KPBC"
/* Version 1 had no key: its files are misses (KP__CACHE_OTHER_FORMAT), deleted and rewritten. */
#define FORMAT_VERSION 2u
#define PREFIX_SIZE 8u /* magic, version u32: the same in every version */
#define SIZE_OFFSET 8u /* payload size u64 */
#define KEY_OFFSET 16u /* the key, 32 bytes */
#define HEADER_SIZE 48u
#define TRAILER_SIZE 32u /* SHA-256 of the header and the payload */
#define OVERHEAD (HEADER_SIZE + TRAILER_SIZE)

#define KEY_NAME_LEN 68 /* 64 hex digits + ".bin" */
#define TEMP_PREFIX ".tmp-"
/* A temp file this old belongs to a process that died between write and rename. */
#define STALE_TEMP_SECONDS (10 * 60)
#define TEMP_ATTEMPTS 16

/* ------------------------------------------------------------------------------------------ */
/* Small helpers                                                                              */
/* ------------------------------------------------------------------------------------------ */

static char *format_message(const char *fmt, ...) KP_PRINTF(1, 2);

static char *format_message(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void key_name(const uint8_t key[32], char name[KEY_NAME_LEN + 1])
{
    kp__sha256_hex(key, name);
    memcpy(name + 64, ".bin", 5);
}

/* Only names we could have written count as cache files, so a cache directory pointed at a
 * shared folder by mistake never loses someone else's "*.bin". */
static int is_key_name(const char *name)
{
    if (strlen(name) != KEY_NAME_LEN || strcmp(name + 64, ".bin") != 0)
        return 0;
    for (int i = 0; i < 64; i++) {
        char ch = name[i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
            return 0;
    }
    return 1;
}

static int read_all(int fd, void *buf, size_t len)
{
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int open_dir(const kp__disk_cache *c)
{
    if (!c || !c->dir)
        return -1;
    return open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* Deletes a bad file only if `name` still is the file we read: a writer may have renamed a good
 * file over it since, and deleting that would throw away its work. */
static void drop_bad_file(int dfd, const char *name, const struct stat *read_st)
{
    struct stat now;
    if (fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) != 0)
        return;
    if (now.st_dev == read_st->st_dev && now.st_ino == read_st->st_ino)
        unlinkat(dfd, name, 0); /* ENOENT: another process got there first */
}

/* ------------------------------------------------------------------------------------------ */
/* Open and close                                                                             */
/* ------------------------------------------------------------------------------------------ */

kp_status kp__disk_cache_open(kp__disk_cache *c, const char *dir, uint64_t max_bytes, char **err)
{
    if (err)
        *err = NULL;
    if (!c)
        return KP_ERR_INVALID_ARG;
    c->dir = NULL;
    c->max_bytes = max_bytes;
    if (!dir || !*dir) {
        if (err)
            *err = format_message("no cache directory given");
        return KP_ERR_INVALID_ARG;
    }

    int e = kp__make_dirs(dir);
    if (e == ENOMEM)
        return KP_ERR_OUT_OF_MEMORY;
    if (e) {
        if (err)
            *err = format_message("cannot create cache directory %s: %s", dir, strerror(e));
        return KP_ERR_IO;
    }
    c->dir = strdup(dir);
    return c->dir ? KP_OK : KP_ERR_OUT_OF_MEMORY;
}

void kp__disk_cache_close(kp__disk_cache *c)
{
    if (!c)
        return;
    free(c->dir);
    c->dir = NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Get                                                                                        */
/* ------------------------------------------------------------------------------------------ */

char *kp__disk_cache_file(const kp__disk_cache *c, const uint8_t key[32])
{
    char name[KEY_NAME_LEN + 1];
    key_name(key, name);
    return format_message("%s/%s", c && c->dir ? c->dir : "(no cache)", name);
}

int kp__disk_cache_get(const kp__disk_cache *c, const uint8_t key[32], void **data, size_t *size,
                       kp__cache_miss *why)
{
    kp__cache_miss miss = KP__CACHE_ABSENT;
    if (why)
        *why = miss;
    if (data)
        *data = NULL;
    if (size)
        *size = 0;
    if (!key || !data || !size)
        return 0;
    int dfd = open_dir(c);
    if (dfd < 0)
        return 0;

    char name[KEY_NAME_LEN + 1];
    key_name(key, name);
    /* O_NONBLOCK: a FIFO planted under a cache name must not hang us; O_NOFOLLOW: nor may a link
     * send us elsewhere. Neither changes how a regular file reads. */
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        close(dfd);
        return 0;
    }

    uint8_t *payload = NULL;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        goto miss_keep; /* not a file we wrote: leave it alone */

    /* Writers never change a file in place (they rename a new one over it), so the open file is
     * exactly what some writer completed, or a damaged file: never a half-written one. */
    uint8_t header[HEADER_SIZE];
    miss = KP__CACHE_DAMAGED;
    if ((uint64_t)st.st_size < PREFIX_SIZE || read_all(fd, header, PREFIX_SIZE) != 0 ||
        memcmp(header, MAGIC, 4) != 0)
        goto miss_drop;
    if (get_le32(header + 4) != FORMAT_VERSION) {
        miss = KP__CACHE_OTHER_FORMAT;
        goto miss_drop;
    }
    if ((uint64_t)st.st_size < OVERHEAD ||
        read_all(fd, header + PREFIX_SIZE, HEADER_SIZE - PREFIX_SIZE) != 0)
        goto miss_drop;
    uint64_t payload_size = get_le64(header + SIZE_OFFSET);
    if (payload_size != (uint64_t)st.st_size - OVERHEAD || payload_size > SIZE_MAX - 1)
        goto miss_drop;

    payload = malloc(payload_size ? (size_t)payload_size : 1);
    if (!payload) {
        miss = KP__CACHE_ABSENT;
        goto miss_keep; /* our problem, not the file's */
    }
    uint8_t stored[32], actual[32];
    if (read_all(fd, payload, (size_t)payload_size) != 0 || read_all(fd, stored, 32) != 0)
        goto miss_drop;
    kp__sha256_ctx h;
    kp__sha256_init(&h);
    kp__sha256_update(&h, header, HEADER_SIZE);
    kp__sha256_update(&h, payload, (size_t)payload_size);
    kp__sha256_final(&h, actual);
    if (memcmp(stored, actual, 32) != 0)
        goto miss_drop;
    /* A whole entry, for another key: renamed or copied under this name. Loading it would run
     * another program in place of the one asked for. */
    if (memcmp(header + KEY_OFFSET, key, 32) != 0) {
        miss = KP__CACHE_OTHER_KEY;
        goto miss_drop;
    }

    /* The mtime is the LRU clock eviction sorts by. Failure (a read-only cache) costs nothing. */
    futimens(fd, NULL);
    close(fd);
    close(dfd);
    *data = payload;
    *size = (size_t)payload_size;
    return 1;

miss_drop:
    drop_bad_file(dfd, name, &st);
miss_keep:
    free(payload);
    close(fd);
    close(dfd);
    if (why)
        *why = miss;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Directory scans: usage and eviction                                                        */
/* ------------------------------------------------------------------------------------------ */

typedef struct entry {
    char name[KEY_NAME_LEN + 1];
    struct timespec mtime;
    uint64_t size;
} entry;

typedef struct scan {
    entry *entries; /* NULL unless collecting */
    size_t n, cap;
    uint64_t total;
    int oom;
} scan;

/* Sums the cache files of the directory; with `collect`, lists them too; with `clean`, deletes
 * temp files left by dead writers. Files vanishing mid-scan are other processes' evictions. */
static int scan_dir(int dfd, int collect, int clean, scan *s)
{
    memset(s, 0, sizeof *s);
    /* A separate descriptor: closedir closes it, and the caller's dfd must outlive the scan. */
    int sfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sfd < 0)
        return -1;
    DIR *d = fdopendir(sfd);
    if (!d) {
        close(sfd);
        return -1;
    }
    time_t now = time(NULL);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *name = de->d_name;
        int temp = strncmp(name, TEMP_PREFIX, strlen(TEMP_PREFIX)) == 0;
        if (!temp && !is_key_name(name))
            continue;
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (temp) {
            if (clean && now - st.st_mtim.tv_sec > STALE_TEMP_SECONDS)
                unlinkat(dfd, name, 0);
            continue;
        }
        s->total += (uint64_t)st.st_size;
        if (!collect || s->oom)
            continue;
        if (s->n == s->cap) {
            size_t cap = s->cap ? 2 * s->cap : 64;
            entry *grown = realloc(s->entries, cap * sizeof *grown);
            if (!grown) {
                s->oom = 1;
                continue;
            }
            s->entries = grown;
            s->cap = cap;
        }
        entry *e = &s->entries[s->n++];
        memcpy(e->name, name, KEY_NAME_LEN + 1);
        e->mtime = st.st_mtim;
        e->size = (uint64_t)st.st_size;
    }
    closedir(d);
    return 0;
}

static int older_first(const void *pa, const void *pb)
{
    const entry *a = pa, *b = pb;
    if (a->mtime.tv_sec != b->mtime.tv_sec)
        return a->mtime.tv_sec < b->mtime.tv_sec ? -1 : 1;
    if (a->mtime.tv_nsec != b->mtime.tv_nsec)
        return a->mtime.tv_nsec < b->mtime.tv_nsec ? -1 : 1;
    /* Equal times: any fixed order, so that racing evictors pick the same victims. */
    return strcmp(a->name, b->name);
}

static void evict(int dfd, uint64_t max_bytes)
{
    scan s;
    if (scan_dir(dfd, 1, 1, &s) != 0)
        return;
    if (s.total > max_bytes && !s.oom) {
        qsort(s.entries, s.n, sizeof *s.entries, older_first);
        for (size_t i = 0; i < s.n && s.total > max_bytes; i++) {
            /* ENOENT: another process evicted it already, and it no longer counts either way. */
            if (unlinkat(dfd, s.entries[i].name, 0) == 0 || errno == ENOENT)
                s.total -= s.entries[i].size;
        }
    }
    free(s.entries);
}

uint64_t kp__disk_cache_usage(const kp__disk_cache *c)
{
    int dfd = open_dir(c);
    if (dfd < 0)
        return 0;
    scan s;
    uint64_t total = scan_dir(dfd, 0, 0, &s) == 0 ? s.total : 0;
    close(dfd);
    return total;
}

/* ------------------------------------------------------------------------------------------ */
/* Put                                                                                        */
/* ------------------------------------------------------------------------------------------ */

static uint64_t mix64(uint64_t x)
{
    /* splitmix64's finaliser: spreads the few changing bits of the inputs over the suffix. */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9u;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebu;
    x ^= x >> 31;
    return x;
}

/* Creates a temp file ".tmp-<pid>-<16 hex>" in the directory. The suffix mixes the clock, a stack
 * address (distinct per thread) and the attempt number; uniqueness is only a hint, since O_EXCL
 * settles any collision and we retry. */
static int create_temp(int dfd, char *name, size_t cap)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t seed = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    seed ^= (uint64_t)(uintptr_t)&ts;
    for (unsigned attempt = 0; attempt < TEMP_ATTEMPTS; attempt++) {
        uint64_t suffix = mix64(seed + attempt * 0x9e3779b97f4a7c15u);
        snprintf(name, cap, TEMP_PREFIX "%ld-%016llx", (long)getpid(), (unsigned long long)suffix);
        int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

int kp__disk_cache_put(const kp__disk_cache *c, const uint8_t key[32], const void *data,
                       size_t size)
{
    if (!key || (!data && size > 0))
        return -1;
    /* A file bigger than the whole bound would only evict everything, itself included. */
    if (c && c->max_bytes > 0 && (c->max_bytes < OVERHEAD || size > c->max_bytes - OVERHEAD))
        return -1;
    int dfd = open_dir(c);
    if (dfd < 0)
        return -1;

    uint8_t header[HEADER_SIZE], digest[32];
    memcpy(header, MAGIC, 4);
    put_le32(header + 4, FORMAT_VERSION);
    put_le64(header + SIZE_OFFSET, (uint64_t)size);
    memcpy(header + KEY_OFFSET, key, 32);
    kp__sha256_ctx h;
    kp__sha256_init(&h);
    kp__sha256_update(&h, header, HEADER_SIZE);
    kp__sha256_update(&h, data, size);
    kp__sha256_final(&h, digest);

    char temp[64], name[KEY_NAME_LEN + 1];
    key_name(key, name);
    int fd = create_temp(dfd, temp, sizeof temp);
    if (fd < 0) {
        close(dfd);
        return -1;
    }
    int ok = write_all(fd, header, sizeof header) == 0 && write_all(fd, data, size) == 0 &&
             write_all(fd, digest, sizeof digest) == 0;
    /* close() reports delayed write errors on some file systems (NFS), so it is checked too. */
    ok = (close(fd) == 0) && ok;
    /* rename() replaces any file of that name in one step: readers see the old file or ours. */
    if (!ok || renameat(dfd, temp, dfd, name) != 0) {
        unlinkat(dfd, temp, 0);
        close(dfd);
        return -1;
    }

    if (c->max_bytes > 0)
        evict(dfd, c->max_bytes);
    close(dfd);
    return 0;
}
