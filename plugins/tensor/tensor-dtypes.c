/* SPDX-License-Identifier: Apache-2.0 */
/* Storage dtypes of the tensor family's operands: their build options, the tolerance of 16-bit
 * results and the bytes a call moves. kernels/tensor.cl's DT0..DTY and kernels/tensor-rows.cl's
 * DT0..DTM read and write them. */
#include <stdio.h>
#include <string.h>

#include "tensor.h"

void tensor_dtype_define(char *buf, size_t size, const char *name, int32_t dtype)
{
    const size_t n = strlen(buf);
    if (dtype != KP_F32 && n < size)
        snprintf(buf + n, size - n, " -D %s=%d", name, dtype);
}

void tensor_dtype_options(const tensor_space *s, int comb, int raw, char *buf, size_t size)
{
    buf[0] = '\0';
    static const char *const names[TS_MAX_IN] = {"DT0", "DT1", "DT2"};
    for (int i = 0; i < s->n_in; i++)
        tensor_dtype_define(buf, size, names[i], s->in_dtype[i]);
    if (comb != TC_ARGMAX && comb != TC_ARGMIN)
        tensor_dtype_define(buf, size, "DTY", s->out_dtype);
    const size_t n = strlen(buf);
    if (raw && n < size)
        snprintf(buf + n, size - n, " -D RAW");
}

void tensor_dtype_tolerance(const kp_call *call, double *atol, double *rtol)
{
    double eps = 0, tiny = 0;
    for (uint32_t i = 0; i < call->n_args; i++) {
        if (!call->args[i].present || call->desc->params[i].kind != KP_ARG_KIND_TENSOR ||
            call->desc->params[i].access == KP_ACCESS_IN)
            continue;
        const int32_t dt = call->args[i].tensor.dtype;
        const double e = dt == KP_BF16 ? 0x1p-7 : dt == KP_F16 ? 0x1p-10 : 0;
        eps = e > eps ? e : eps;
        /* f16's subnormals step by 2^-24, which no relative tolerance covers near 0. */
        tiny = dt == KP_F16 ? 0x1p-24 : tiny;
    }
    *rtol += eps;
    *atol += tiny;
}

double tensor_dtype_bytes(const kp_call *call)
{
    double bytes = 0;
    for (uint32_t i = 0; i < call->n_args; i++)
        if (call->args[i].present && call->desc->params[i].kind == KP_ARG_KIND_TENSOR)
            bytes += (double)kp_tensor_numel(&call->args[i].tensor) *
                     (double)kp_dtype_size((kp_dtype)call->args[i].tensor.dtype);
    return bytes;
}

static int32_t dtype_named(const char *name, size_t len)
{
    static const int32_t dtypes[] = {KP_F32, KP_F16, KP_BF16, KP_I32};
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
        const char *n = kp_dtype_name((kp_dtype)dtypes[i]);
        if (strlen(n) == len && strncmp(n, name, len) == 0)
            return dtypes[i];
    }
    return KP_DTYPE_NONE;
}

void tensor_size_dtypes(const char *size, char *base, size_t base_size, int32_t *dt, int n)
{
    int32_t found[KP_MAX_PARAMS];
    int count = 0;
    size_t end = strlen(size);
    for (;;) {
        const char *dash = NULL;
        for (size_t i = end; i-- > 0;)
            if (size[i] == '-') {
                dash = size + i;
                break;
            }
        const int32_t d = dash ? dtype_named(dash + 1, (size_t)(size + end - dash - 1)) : 0;
        if (d == KP_DTYPE_NONE || count == KP_MAX_PARAMS)
            break;
        found[count++] = d;
        end = (size_t)(dash - size);
    }
    snprintf(base, base_size, "%.*s", (int)end, size);
    /* found holds them last first. */
    for (int i = 0; i < n; i++)
        dt[i] = count == 0 ? KP_F32 : found[i < count ? count - 1 - i : 0];
}
