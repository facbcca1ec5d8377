/* SPDX-License-Identifier: Apache-2.0 */
/* The one rule of the public structures that grow: checks and copies by struct_size. */
#include <stdint.h>
#include <string.h>

#include "runtime.h"
#include "struct-size.h"

static uint32_t struct_size_of(const void *s)
{
    uint32_t size;
    memcpy(&size, s, sizeof size);
    return size;
}

kp_status kp__out_check(const kp_runtime *rt, const char *call, const char *type, const void *out,
                        size_t first)
{
    if (!out)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "%s: the %s pointer is NULL", call, type);
    const uint32_t given = struct_size_of(out);
    if (given < first)
        return kp__fail(rt, KP_ERR_INVALID_ARG,
                        "%s: %s.struct_size is %u, below %zu (its first layout): set it to "
                        "sizeof(%s) before the call",
                        call, type, given, first, type);
    return KP_OK;
}

void kp__out_write(void *out, const void *full, size_t size)
{
    const uint32_t given = struct_size_of(out);
    const uint32_t n = given < size ? given : (uint32_t)size;
    memcpy(out, full, n);
    memcpy(out, &n, sizeof n);
}

kp_status kp__in_copy(const kp_runtime *rt, const char *call, const char *type, void *dst,
                      const void *in, size_t first, size_t size)
{
    uint32_t given = struct_size_of(in);
    if (given == 0)
        given = (uint32_t)first;
    if (given < first)
        return kp__fail(rt, KP_ERR_INVALID_ARG,
                        "%s: %s.struct_size is %u, below %zu (its first layout): build it with "
                        "its _default() constructor, or leave struct_size 0",
                        call, type, given, first);
    for (size_t i = size; i < given; i++)
        if (((const unsigned char *)in)[i])
            return kp__fail(rt, KP_ERR_INVALID_ARG,
                            "%s: %s.struct_size is %u, larger than this library's %zu "
                            "(version %s), and byte %zu past its layout is set: a member this "
                            "version does not know was given a value",
                            call, type, given, size, kp_version(), i);
    memcpy(dst, in, given < size ? given : size);
    const uint32_t own = (uint32_t)size;
    memcpy(dst, &own, sizeof own);
    return KP_OK;
}
