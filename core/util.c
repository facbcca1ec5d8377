/* Small string, file and environment helpers used across the core. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

const char *kp__env(const kp_runtime *rt, const char *name)
{
    if (rt && (rt->flags & KP_RUNTIME_NO_ENV))
        return NULL;
    /* Variables that name files to load are ignored in setuid programs. */
    const char *v = secure_getenv(name);
    return v && *v ? v : NULL;
}
