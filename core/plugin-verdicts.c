/* SPDX-License-Identifier: Apache-2.0 */
/* The plugin verdicts file: one line per plugin file the out-of-process probe ran, so that a warm
 * start reads one small file and compares stat() results instead of probing again. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin-verdicts.h"
#include "sha256.h"

/* A new Kernelport may run init differently: its verdicts start afresh. */
#define HEADER "kernelport-plugin-verdicts 1 " KP_VERSION_STRING "\n"

kp__verdict *kp__verdicts_find(kp__verdicts *vs, const char *path)
{
    for (size_t i = 0; i < vs->n; i++)
        if (strcmp(vs->v[i].path, path) == 0)
            return &vs->v[i];
    return NULL;
}

kp__verdict *kp__verdicts_put(kp__verdicts *vs, const char *path)
{
    kp__verdict *v = kp__verdicts_find(vs, path);
    if (v)
        return v;
    char *copy = kp__strdup(path);
    kp__verdict *grown = copy ? realloc(vs->v, (vs->n + 1) * sizeof *grown) : NULL;
    if (!grown) {
        free(copy);
        return NULL;
    }
    vs->v = grown;
    v = &vs->v[vs->n++];
    memset(v, 0, sizeof *v);
    v->path = copy;
    return v;
}

/* One line: "dev ino size mtime_ns ctime_ns sha256 ok|crashed\tpath\treason"; 0 if malformed. */
static int parse_line(kp__verdicts *vs, char *line)
{
    char *path = strchr(line, '\t');
    char *reason = path ? strchr(path + 1, '\t') : NULL;
    if (!reason)
        return 0;
    *path++ = '\0';
    *reason++ = '\0';
    kp__file_id id;
    char sha[65], verdict[8];
    if (sscanf(line, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNd64 " %" SCNd64 " %64s %7s",
               &id.dev, &id.ino, &id.size, &id.mtime_ns, &id.ctime_ns, sha, verdict) != 7 ||
        strlen(sha) != 64 || !*path)
        return 0;
    int crashed = strcmp(verdict, "crashed") == 0;
    if (!crashed && (strcmp(verdict, "ok") != 0 || *reason))
        return 0;
    if (crashed && !*reason)
        return 0;
    kp__verdict *v = kp__verdicts_put(vs, path);
    if (!v)
        return 0;
    v->file = id;
    memcpy(v->sha256, sha, sizeof sha);
    free(v->crash);
    v->crash = crashed ? kp__strdup(reason) : NULL;
    return 1;
}

void kp__verdicts_read(kp__verdicts *vs, const char *file)
{
    char *text = kp__read_file(file, NULL);
    if (!text)
        return;
    if (strncmp(text, HEADER, strlen(HEADER)) != 0) {
        vs->changed = 1;
        free(text);
        return;
    }
    char *save = NULL;
    for (char *line = strtok_r(text + strlen(HEADER), "\n", &save); line;
         line = strtok_r(NULL, "\n", &save))
        if (!parse_line(vs, line))
            vs->changed = 1; /* written back without it */
    free(text);
}

int kp__verdicts_write(const kp__verdicts *vs, const char *dir, const char *file)
{
    int e = kp__make_dirs(dir);
    if (e)
        return e;
    /* Named as the program cache names its temporary files, whose stale ones it deletes. */
    char *tmp = kp__asprintf("%s/.tmp-plugin-verdicts-XXXXXX", dir);
    int fd = tmp ? mkstemp(tmp) : -1;
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        e = tmp ? errno : ENOMEM;
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        free(tmp);
        return e;
    }
    fputs(HEADER, f);
    for (size_t i = 0; i < vs->n; i++) {
        const kp__verdict *v = &vs->v[i];
        struct stat st;
        /* A line holds one verdict; a plugin gone needs none. */
        if (strpbrk(v->path, "\t\n") || (v->crash && strpbrk(v->crash, "\t\n")) ||
            (stat(v->path, &st) != 0 && errno == ENOENT))
            continue;
        fprintf(f, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRId64 " %" PRId64 " %s %s\t%s\t%s\n",
                v->file.dev, v->file.ino, v->file.size, v->file.mtime_ns, v->file.ctime_ns,
                v->sha256, v->crash ? "crashed" : "ok", v->path, v->crash ? v->crash : "");
    }
    e = ferror(f) ? EIO : 0;
    if (fclose(f) != 0 && !e)
        e = errno;
    if (!e && rename(tmp, file) != 0)
        e = errno;
    if (e)
        unlink(tmp);
    free(tmp);
    return e;
}

void kp__verdicts_fini(kp__verdicts *vs)
{
    for (size_t i = 0; i < vs->n; i++) {
        free(vs->v[i].path);
        free(vs->v[i].crash);
    }
    free(vs->v);
    memset(vs, 0, sizeof *vs);
}

int kp__file_sha256(const char *path, char hex[65])
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return errno;
    kp__sha256_ctx h;
    kp__sha256_init(&h);
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        kp__sha256_update(&h, buf, n);
    int e = ferror(f) ? EIO : 0;
    fclose(f);
    uint8_t digest[32];
    kp__sha256_final(&h, digest);
    kp__sha256_hex(digest, hex);
    return e;
}
