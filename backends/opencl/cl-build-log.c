/* SPDX-License-Identifier: Apache-2.0 */
/* kp__build_log_map: a build log's lines counted from the program's start, named by file. */
#include "cl-build-log.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* From program line `first` on, the text is line `line` of `name` (one #line directive); a span
 * with no name is a directive's own line, in no file. */
typedef struct span {
    unsigned long first, line;
    char *name;
    size_t name_len;
} span;

typedef struct line_map {
    span *spans;
    size_t n, cap;
    unsigned long lines; /* lines in the text */
} line_map;

/* Whether `s` (up to its end of line) is `#line N "name"`; fills *n, *name and *len. */
static int parse_line_directive(const char *s, unsigned long *n, const char **name, size_t *len)
{
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s++ != '#')
        return 0;
    while (*s == ' ' || *s == '\t')
        s++;
    if (strncmp(s, "line", 4) != 0 || (s[4] != ' ' && s[4] != '\t'))
        return 0;
    s += 4;
    char *end;
    *n = strtoul(s, &end, 10);
    if (end == s)
        return 0;
    s = end;
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s != '"')
        return 0;
    const char *close = strpbrk(s + 1, "\"\n");
    if (!close || *close != '"')
        return 0;
    *name = s + 1;
    *len = (size_t)(close - s - 1);
    return 1;
}

/* The spans of the concatenated text. A line may be split across two elements of `text`, so the
 * line being read is kept whole in `buf` until its newline. */
static int map_text(line_map *m, const char *const *text, uint32_t n_text)
{
    char buf[512];
    size_t used = 0;
    unsigned long line = 1;
    for (uint32_t t = 0; t <= n_text; t++) {
        const char *p = t < n_text ? text[t] : "\n";
        for (; *p; p++) {
            if (*p != '\n') {
                if (used + 1 < sizeof buf)
                    buf[used++] = *p;
                continue;
            }
            buf[used] = '\0';
            unsigned long n;
            const char *name;
            size_t len;
            if (parse_line_directive(buf, &n, &name, &len)) {
                if (m->n + 2 > m->cap) {
                    size_t cap = m->cap ? 2 * m->cap : 8;
                    span *grown = realloc(m->spans, cap * sizeof *grown);
                    if (!grown)
                        return 0;
                    m->spans = grown;
                    m->cap = cap;
                }
                char *copy = malloc(len + 1);
                if (!copy)
                    return 0;
                memcpy(copy, name, len);
                copy[len] = '\0';
                m->spans[m->n++] = (span){line, 0, NULL, 0};
                m->spans[m->n++] = (span){line + 1, n, copy, len};
            }
            used = 0;
            line++;
        }
    }
    m->lines = line - 1;
    return 1;
}

static const span *span_of(const line_map *m, unsigned long line)
{
    const span *found = NULL;
    for (size_t i = 0; i < m->n && m->spans[i].first <= line; i++)
        found = &m->spans[i];
    return found;
}

/* Whether `file` is one of the text's own names, or no name at all (a number). */
static int named_by_text(const line_map *m, const char *file, size_t len)
{
    if (strspn(file, "0123456789") >= len)
        return 1;
    for (size_t i = 0; i < m->n; i++)
        if (m->spans[i].name && m->spans[i].name_len == len &&
            strncmp(m->spans[i].name, file, len) == 0)
            return 1;
    return 0;
}

/* A character that can be part of a file name in a diagnostic's location. */
static int file_char(char c)
{
    return c && !isspace((unsigned char)c) && !strchr(":<>=\"'(),;", c);
}

char *kp__build_log_map(const char *log, const char *const *text, uint32_t n_text)
{
    line_map m = {0};
    size_t cap = strlen(log) + 1;
    char *out = NULL;
    if (!map_text(&m, text, n_text))
        goto done;
    /* Each mapped location grows by at most a name and a few digits. */
    size_t longest = 0;
    for (size_t i = 0; i < m.n; i++)
        longest = m.spans[i].name_len > longest ? m.spans[i].name_len : longest;
    size_t locations = 0;
    for (const char *p = log; (p = strchr(p, ':')); p++)
        locations++;
    cap += locations / 2 * (longest + 24);
    out = malloc(cap);
    if (!out)
        goto done;
    size_t o = 0;
    const char *p = log;
    while (*p) {
        /* A location is FILE:LINE:COL with FILE a maximal run of file characters, or NVIDIA's
         * name for the program text, "<kernel>" (its compiler ignores #line too). */
        const char *file = p;
        if (strncmp(p, "<kernel>:", 9) == 0)
            p += 8;
        else
            while (file_char(*p))
                p++;
        size_t len = (size_t)(p - file);
        unsigned long line = 0, col = 0;
        int digits_line = 0, digits_col = 0;
        const char *q = p;
        if (len && *q == ':' && isdigit((unsigned char)q[1])) {
            line = strtoul(q + 1, (char **)&q, 10);
            digits_line = 1;
            if (*q == ':' && isdigit((unsigned char)q[1])) {
                col = strtoul(q + 1, (char **)&q, 10);
                digits_col = 1;
            }
        }
        const span *s = digits_line && digits_col && line >= 1 && line <= m.lines &&
                                !named_by_text(&m, file, len)
                            ? span_of(&m, line)
                            : NULL;
        if (s && s->name) {
            o += (size_t)snprintf(out + o, cap - o, "%.*s:%lu:%lu", (int)s->name_len, s->name,
                                  s->line + (line - s->first), col);
            p = q;
            continue;
        }
        memcpy(out + o, file, len);
        o += len;
        if (*p)
            out[o++] = *p++;
    }
    out[o] = '\0';
done:
    for (size_t i = 0; i < m.n; i++)
        free(m.spans[i].name);
    free(m.spans);
    return out;
}
