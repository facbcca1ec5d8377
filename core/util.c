/* SPDX-License-Identifier: Apache-2.0 */
/* Small string, file and environment helpers used across the core. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime.h"

char *kp__strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

char *kp__vasprintf(const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (s)
        vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

char *kp__asprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = kp__vasprintf(fmt, ap);
    va_end(ap);
    return s;
}

void kp__append(char **s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *add = kp__vasprintf(fmt, ap);
    va_end(ap);
    if (!add)
        return;
    size_t old = *s ? strlen(*s) : 0, n = strlen(add);
    char *grown = realloc(*s, old + n + 1);
    if (grown) {
        memcpy(grown + old, add, n + 1);
        *s = grown;
    }
    free(add);
}

char *kp__read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t size = 0, cap = 0;
    for (;;) {
        if (size + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            char *grown = realloc(buf, cap);
            if (!grown) {
                free(buf);
                fclose(f);
                errno = ENOMEM;
                return NULL;
            }
            buf = grown;
        }
        size_t got = fread(buf + size, 1, cap - size - 1, f);
        size += got;
        if (got == 0)
            break;
    }
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    buf[size] = '\0';
    if (len)
        *len = size;
    return buf;
}

/* Whether `path` now is a directory, after a mkdir that failed with `err`. An existing ancestor
 * may answer EACCES (or EROFS) rather than EEXIST, so the answer is stat's, not errno's. */
static int is_dir_after(const char *path, int err, int *why)
{
    struct stat st;
    if (stat(path, &st) == 0) {
        *why = S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
        return S_ISDIR(st.st_mode);
    }
    *why = err;
    return 0;
}

int kp__make_dirs(const char *dir)
{
    char *path = kp__strdup(dir);
    if (!path)
        return ENOMEM;
    int why = 0, ok = 1;
    for (char *p = path + 1; ok && *p; p++) {
        if (*p != '/' || p[-1] == '/')
            continue;
        *p = '\0';
        ok = mkdir(path, 0700) == 0 || is_dir_after(path, errno, &why);
        *p = '/';
    }
    if (ok && (mkdir(path, 0700) == 0 || is_dir_after(path, errno, &why)))
        why = 0;
    free(path);
    return why;
}

const char *kp__env(const kp_runtime *rt, const char *name)
{
    if (rt && (rt->flags & KP_RUNTIME_NO_ENV))
        return NULL;
    /* Variables that name files to load are ignored in setuid programs. */
    const char *v = secure_getenv(name);
    return v && *v ? v : NULL;
}
