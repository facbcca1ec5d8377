/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: the plugin verdicts file, what the out-of-process probe found for each plugin file. */
#ifndef KP_PLUGIN_VERDICTS_H
#define KP_PLUGIN_VERDICTS_H

#include "runtime.h"

typedef struct kp__verdict {
    char *path;       /* the plugin's resolved path */
    kp__file_id file; /* the file as probed (or as last found with the same contents) */
    char sha256[65];  /* of its contents, in hex */
    char *crash;      /* NULL: it survived the probe; else the rejection reason */
} kp__verdict;

typedef struct kp__verdicts {
    kp__verdict *v;
    size_t n;
    int changed; /* since it was read: worth writing back */
} kp__verdicts;

/* Reads `file` into `vs` (zeroed by the caller); a missing, unreadable or older file, or one of
 * another Kernelport version, reads as empty. */
void kp__verdicts_read(kp__verdicts *vs, const char *file);
/* The verdict for `path`, or NULL. */
kp__verdict *kp__verdicts_find(kp__verdicts *vs, const char *path);
/* The verdict for `path`, added empty if there was none; NULL when memory runs out. */
kp__verdict *kp__verdicts_put(kp__verdicts *vs, const char *path);
/* Writes `vs` to `file` in `dir` (created as needed) through a temporary file and a rename,
 * leaving out plugins that no longer exist. Returns 0 or an errno value. */
int kp__verdicts_write(const kp__verdicts *vs, const char *dir, const char *file);
void kp__verdicts_fini(kp__verdicts *vs);

/* The SHA-256 of a file's contents in hex; 0, or an errno value. */
int kp__file_sha256(const char *path, char hex[65]);

#endif
