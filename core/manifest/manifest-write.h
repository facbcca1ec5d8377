/* SPDX-License-Identifier: Apache-2.0 */
/* Private to kp_manifest_write_tuning: the text it writes (manifest-write-text.c). */
#ifndef KP_MANIFEST_WRITE_H
#define KP_MANIFEST_WRITE_H

#include <stddef.h>

#include "manifest.h"

/* A growing string; after a failed allocation every later put is a no-op and `oom` is set. */
typedef struct kp__strbuf {
    char *s;
    size_t len, cap;
    int oom;
} kp__strbuf;

void kp__strbuf_put(kp__strbuf *b, const char *s, size_t n);
void kp__strbuf_puts(kp__strbuf *b, const char *s);
void kp__strbuf_pad(kp__strbuf *b, size_t n); /* n spaces */

/* Whether `s` is well-formed UTF-8 (no overlong forms, surrogates or values past U+10FFFF). */
int kp__utf8_valid(const char *s);
/* The loader's rules: "family.op" in [a-z0-9_]; dot-separated C identifiers. */

/* What the caller asked for, checked, with vendor and type in their canonical spelling.
 * Everything is borrowed from the caller. */
typedef struct kp__tuning_request {
    const char *match[4]; /* vendor, type, name, arch; NULL: left out */
    const kp_tuned_value *values;
    size_t n_values;
    const char *const *prov; /* key, value, key, value, ... */
    size_t n_prov;
    const char *nl; /* "\r\n" when the file uses it, so added lines look like the others */
} kp__tuning_request;

/*
 * Appends one tuning entry's mapping to `b`: kernels sorted by name, a kernel's values in their
 * order. Block style (flow == 0) starts at the first key (the caller has written "- " or kept
 * the text before the entry), puts later keys at column `indent`, and ends without a line break,
 * so what followed replaced text (a comment, the line break) stays after it. Flow style is one
 * `{ ... }`. Returns 0, or -1 when out of memory.
 *
 * _new writes the request's match and provenance, and its values merged over `base`'s (NULL:
 * none): a new value replaces the one of the same kernel and name in its place, others follow.
 * _copy writes a loaded entry as it is (an empty `kernels` comes out as `kernels: {}`).
 */
int kp__tuning_emit_new(kp__strbuf *b, const kp__tuning_request *r, const kp__tuning_entry *base,
                        size_t indent, int flow);
int kp__tuning_emit_copy(kp__strbuf *b, const kp__tuning_entry *e, size_t indent, int flow,
                         const char *nl);

#endif
