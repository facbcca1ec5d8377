/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: string and file helpers with no runtime state, shared by the core and the backends. */
#ifndef KP_UTIL_H
#define KP_UTIL_H

#include <stdarg.h>
#include <stddef.h>

#include "kernelport/kernelport.h"

/* Each returns malloc'd memory the caller frees, or NULL when memory runs out. */
char *kp__strdup(const char *s);
char *kp__asprintf(const char *fmt, ...) KP_PRINTF(1, 2);
char *kp__vasprintf(const char *fmt, va_list ap);
/* Appends formatted text to a malloc'd string (*s may be NULL). */
void kp__append(char **s, const char *fmt, ...) KP_PRINTF(2, 3);
/* Reads a whole file; NULL with errno set on failure. */
char *kp__read_file(const char *path, size_t *len);
/* mkdir -p with mode 0700; returns 0 or an errno value. Racing creators are fine: a directory
 * that exists by the time we look is success. */
int kp__make_dirs(const char *path);

#endif
