/* SPDX-License-Identifier: Apache-2.0 */
/* Re-targeting NVIDIA's compiled OpenCL PTX from sm_90 to sm_90a (cl-ptx.h). */
#include <stdlib.h>
#include <string.h>

#include "cl-ptx.h"

char *kp__ptx_sm90a(const char *ptx)
{
    /* ".target sm_90" ends there or goes on with ", texmode_independent". */
    const char *target = strstr(ptx, ".target sm_90");
    if (!target || target[13] == 'a' || (target[13] >= '0' && target[13] <= '9'))
        return NULL;
    char *out = malloc(strlen(ptx) + 2), *o = out;
    if (!out)
        return NULL;
    size_t mark = strlen(KP_PTX_SM90A_MARK);
    for (const char *p = ptx;;) {
        if (p == target + 13)
            *o++ = 'a';
        if (!*p)
            break;
        if (strncmp(p, KP_PTX_SM90A_MARK, mark) == 0) {
            p += mark;
            continue;
        }
        *o++ = *p++;
    }
    *o = '\0';
    return out;
}
