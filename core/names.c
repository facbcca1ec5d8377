/* SPDX-License-Identifier: Apache-2.0 */
/* Valid names for kernels, tunables and parameters, shared by the registry and the manifest. */
#include "names.h"

#include <stddef.h>

static int lower_or_digit(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

static int ident_char(char c, int first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (!first && c >= '0' && c <= '9');
}

int kp__name_is_kernel(const char *s)
{
    int dots = 0;
    size_t seg = 0;
    for (; s && *s; s++) {
        if (*s == '.') {
            if (seg == 0)
                return 0;
            dots++;
            seg = 0;
        } else if (lower_or_digit(*s)) {
            seg++;
        } else {
            return 0;
        }
    }
    return dots > 0 && seg > 0;
}

int kp__name_is_tunable(const char *s)
{
    int at_start = 1;
    if (!s || !*s)
        return 0;
    for (; *s; s++) {
        if (*s == '.') {
            if (at_start)
                return 0;
            at_start = 1;
        } else if (ident_char(*s, at_start)) {
            at_start = 0;
        } else {
            return 0;
        }
    }
    return !at_start;
}

int kp__name_is_identifier(const char *s)
{
    if (!s || !*s)
        return 0;
    for (const char *p = s; *p; p++)
        if (!ident_char(*p, p == s))
            return 0;
    return 1;
}
