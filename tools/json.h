/* SPDX-License-Identifier: Apache-2.0 */
/* A small streaming JSON writer to a FILE*, shared by the CLI and the benchmark programs. */
#ifndef KP_TOOLS_JSON_H
#define KP_TOOLS_JSON_H

#include <stdint.h>
#include <stdio.h>

/* Containers nested deeper than this make the writer fail (kpj_finish returns -1). */
#define KPJ_MAX_DEPTH 32

/*
 * Writer state. Fill it with kpj_init; treat the fields as private. The writer never allocates.
 * Misuse (a value in an object without a key, a key outside an object, unbalanced ends, more
 * than one top-level value) does not crash: it sets `failed`, and the output stops there.
 */
typedef struct kpj_writer {
    FILE *out;
    int indent;                    /* spaces per level; 0 writes everything on one line */
    int depth;                     /* open containers */
    int failed;                    /* misuse or an I/O error was seen */
    int has_key;                   /* a key was written and awaits its value */
    int done;                      /* the top-level value is complete */
    char kind[KPJ_MAX_DEPTH];      /* '{' or '[' for each open container */
    uint32_t count[KPJ_MAX_DEPTH]; /* members written so far in each open container */
} kpj_writer;

/* Starts a document on `out` (borrowed; must outlive the writer's use). */
void kpj_init(kpj_writer *w, FILE *out, int indent);

void kpj_begin_object(kpj_writer *w);
void kpj_end_object(kpj_writer *w);
void kpj_begin_array(kpj_writer *w);
void kpj_end_array(kpj_writer *w);

/* The key of the next member; only inside an object, before each value. */
void kpj_key(kpj_writer *w, const char *key);

/*
 * Values. Strings are UTF-8: quotes, backslashes and control characters are escaped, valid
 * multi-byte sequences pass through, invalid bytes become U+FFFD. A NULL string writes null.
 * Doubles that are NaN or infinite write null (JSON has no spelling for them).
 */
void kpj_string(kpj_writer *w, const char *s);
void kpj_int(kpj_writer *w, int64_t v);
void kpj_uint(kpj_writer *w, uint64_t v);
void kpj_double(kpj_writer *w, double v);
void kpj_bool(kpj_writer *w, int v);
void kpj_null(kpj_writer *w);

/* A key and its value in one call, for the common case of an object's scalar member. */
void kpj_key_string(kpj_writer *w, const char *key, const char *s);
void kpj_key_int(kpj_writer *w, const char *key, int64_t v);
void kpj_key_uint(kpj_writer *w, const char *key, uint64_t v);
void kpj_key_double(kpj_writer *w, const char *key, double v);
void kpj_key_bool(kpj_writer *w, const char *key, int v);
void kpj_key_null(kpj_writer *w, const char *key);

/*
 * Ends the document with a newline and flushes. Returns 0 when exactly one complete value was
 * written and every write succeeded, -1 otherwise.
 */
int kpj_finish(kpj_writer *w);

#endif
