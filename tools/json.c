/* SPDX-License-Identifier: Apache-2.0 */
/* A small streaming JSON writer: pretty or compact, escaping strings, never allocating. */
#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void kpj_init(kpj_writer *w, FILE *out, int indent)
{
    memset(w, 0, sizeof *w);
    w->out = out;
    w->indent = indent < 0 ? 0 : indent;
}

static void newline_indent(kpj_writer *w, int depth)
{
    if (w->indent == 0)
        return;
    fputc('\n', w->out);
    for (int i = 0; i < depth * w->indent; i++)
        fputc(' ', w->out);
}

/* Writes what must precede a value (separator, indentation); 0 when the value must not be written.
 */
static int before_value(kpj_writer *w)
{
    if (w->failed)
        return 0;
    if (w->done) {
        w->failed = 1;
        return 0;
    }
    if (w->depth == 0)
        return 1;
    int top = w->depth - 1;
    if (w->kind[top] == '{') {
        if (!w->has_key) {
            w->failed = 1;
            return 0;
        }
        w->has_key = 0;
        return 1;
    }
    if (w->count[top] > 0)
        fputc(',', w->out);
    newline_indent(w, w->depth);
    w->count[top]++;
    return 1;
}

static void after_value(kpj_writer *w)
{
    if (w->depth == 0)
        w->done = 1;
}

/* The length of the valid UTF-8 sequence at s, or 0 when the bytes there are not one. */
static size_t utf8_sequence(const unsigned char *s)
{
    unsigned char c = s[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF; /* the range of the second byte, narrowed for overlongs */
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F; /* UTF-16 surrogates are not characters */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else {
        return 0;
    }
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return n;
}

static void write_string(kpj_writer *w, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', w->out);
    while (*s) {
        unsigned char c = *s;
        if (c >= 0x80) {
            size_t n = utf8_sequence(s);
            if (n == 0) {
                fputs("\\ufffd", w->out);
                s++;
            } else {
                fwrite(s, 1, n, w->out);
                s += n;
            }
            continue;
        }
        switch (c) {
        case '"':
            fputs("\\\"", w->out);
            break;
        case '\\':
            fputs("\\\\", w->out);
            break;
        case '\b':
            fputs("\\b", w->out);
            break;
        case '\f':
            fputs("\\f", w->out);
            break;
        case '\n':
            fputs("\\n", w->out);
            break;
        case '\r':
            fputs("\\r", w->out);
            break;
        case '\t':
            fputs("\\t", w->out);
            break;
        default:
            if (c < 0x20)
                fprintf(w->out, "\\u%04x", c);
            else
                fputc(c, w->out);
        }
        s++;
    }
    fputc('"', w->out);
}

static void begin(kpj_writer *w, char kind)
{
    if (!before_value(w))
        return;
    if (w->depth == KPJ_MAX_DEPTH) {
        w->failed = 1;
        return;
    }
    fputc(kind, w->out);
    w->kind[w->depth] = kind;
    w->count[w->depth] = 0;
    w->depth++;
}

static void end(kpj_writer *w, char kind)
{
    if (w->failed)
        return;
    if (w->depth == 0 || w->kind[w->depth - 1] != kind || w->has_key) {
        w->failed = 1;
        return;
    }
    w->depth--;
    if (w->count[w->depth] > 0)
        newline_indent(w, w->depth);
    fputc(kind == '{' ? '}' : ']', w->out);
    after_value(w);
}

void kpj_begin_object(kpj_writer *w)
{
    begin(w, '{');
}

void kpj_end_object(kpj_writer *w)
{
    end(w, '{');
}

void kpj_begin_array(kpj_writer *w)
{
    begin(w, '[');
}

void kpj_end_array(kpj_writer *w)
{
    end(w, '[');
}

void kpj_key(kpj_writer *w, const char *key)
{
    if (w->failed)
        return;
    int top = w->depth - 1;
    if (w->depth == 0 || w->kind[top] != '{' || w->has_key || key == NULL) {
        w->failed = 1;
        return;
    }
    if (w->count[top] > 0)
        fputc(',', w->out);
    newline_indent(w, w->depth);
    write_string(w, key);
    fputs(w->indent ? ": " : ":", w->out);
    w->count[top]++;
    w->has_key = 1;
}

void kpj_string(kpj_writer *w, const char *s)
{
    if (s == NULL) {
        kpj_null(w);
        return;
    }
    if (!before_value(w))
        return;
    write_string(w, s);
    after_value(w);
}

void kpj_int(kpj_writer *w, int64_t v)
{
    if (!before_value(w))
        return;
    fprintf(w->out, "%" PRId64, v);
    after_value(w);
}

void kpj_uint(kpj_writer *w, uint64_t v)
{
    if (!before_value(w))
        return;
    fprintf(w->out, "%" PRIu64, v);
    after_value(w);
}

void kpj_double(kpj_writer *w, double v)
{
    if (!isfinite(v)) {
        kpj_null(w);
        return;
    }
    if (!before_value(w))
        return;
    /* The shortest spelling that reads back as the same double (17 digits always do). */
    char buf[40];
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    /* A program that called setlocale may print a decimal comma; JSON only knows the point. */
    int integral = 1;
    for (char *p = buf; *p; p++) {
        if (*p == ',')
            *p = '.';
        if (*p != '-' && (*p < '0' || *p > '9'))
            integral = 0;
    }
    fputs(buf, w->out);
    /* Keep the value a float for readers that type numbers by their spelling. */
    if (integral)
        fputs(".0", w->out);
    after_value(w);
}

void kpj_bool(kpj_writer *w, int v)
{
    if (!before_value(w))
        return;
    fputs(v ? "true" : "false", w->out);
    after_value(w);
}

void kpj_null(kpj_writer *w)
{
    if (!before_value(w))
        return;
    fputs("null", w->out);
    after_value(w);
}

void kpj_key_string(kpj_writer *w, const char *key, const char *s)
{
    kpj_key(w, key);
    kpj_string(w, s);
}

void kpj_key_int(kpj_writer *w, const char *key, int64_t v)
{
    kpj_key(w, key);
    kpj_int(w, v);
}

void kpj_key_uint(kpj_writer *w, const char *key, uint64_t v)
{
    kpj_key(w, key);
    kpj_uint(w, v);
}

void kpj_key_double(kpj_writer *w, const char *key, double v)
{
    kpj_key(w, key);
    kpj_double(w, v);
}

void kpj_key_bool(kpj_writer *w, const char *key, int v)
{
    kpj_key(w, key);
    kpj_bool(w, v);
}

void kpj_key_null(kpj_writer *w, const char *key)
{
    kpj_key(w, key);
    kpj_null(w);
}

int kpj_finish(kpj_writer *w)
{
    if (!w->failed && w->done)
        fputc('\n', w->out);
    if (fflush(w->out) != 0 || ferror(w->out))
        w->failed = 1;
    return w->failed || !w->done ? -1 : 0;
}
