/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: the on-disk program binary cache (content-addressed files, bounded, multi-process). */
#ifndef KP_CL_CACHE_H
#define KP_CL_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "kernelport/kernelport.h"

/*
 * One file per key, named by the key's hex digest, holding:
 *   magic "KPBC", format version (u32 LE), payload size (u64 LE), the key, payload, and the
 *   SHA-256 of all that precedes it.
 * Writes go to a unique temporary name in the same directory and are renamed into place, so a
 * reader sees a whole file or none. Any failure to read, a bad magic/version/size/checksum, or a
 * key other than the file's name (an entry renamed or copied there), is a miss and the bad file
 * is deleted. After a write, when the directory holds more than max_bytes,
 * the least recently used files (by mtime; a hit touches the file) are deleted. Several processes
 * may use one directory at once.
 */
typedef struct kp__disk_cache {
    char *dir;          /* NULL when the cache is disabled */
    uint64_t max_bytes; /* 0: unbounded */
} kp__disk_cache;

/* Opens (creating it, mode 0700, with parents) the cache directory. When the directory cannot be
 * created the cache is disabled (dir NULL), *err (if not NULL) gets a malloc'd reason and the
 * result is KP_ERR_IO; the caller logs it and carries on without a cache. */
kp_status kp__disk_cache_open(kp__disk_cache *c, const char *dir, uint64_t max_bytes, char **err);
void kp__disk_cache_close(kp__disk_cache *c);

/* Why a get missed: every reason but ABSENT deleted the file. */
typedef enum kp__cache_miss {
    KP__CACHE_ABSENT,       /* no file, one that is not ours to judge (not regular), or no memory */
    KP__CACHE_DAMAGED,      /* unreadable, truncated, or a bad magic, size or checksum */
    KP__CACHE_OTHER_FORMAT, /* written in another format version (another Kernelport) */
    KP__CACHE_OTHER_KEY,    /* a whole entry, but for another key */
} kp__cache_miss;

/* On a hit returns 1 and *data (malloc'd, caller frees) and *size; on a miss returns 0 and, when
 * `why` is not NULL, the reason in *why. */
int kp__disk_cache_get(const kp__disk_cache *c, const uint8_t key[32], void **data, size_t *size,
                       kp__cache_miss *why);

/* The path of key's file, for messages (malloc'd; NULL when out of memory). */
char *kp__disk_cache_file(const kp__disk_cache *c, const uint8_t key[32]);

/* Best effort: returns 0 when stored, -1 when not (disabled cache, I/O error). */
int kp__disk_cache_put(const kp__disk_cache *c, const uint8_t key[32], const void *data,
                       size_t size);

/* Total bytes of cache files now in the directory (for tests and `kernelport cache`). */
uint64_t kp__disk_cache_usage(const kp__disk_cache *c);

#endif
