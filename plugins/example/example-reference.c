/* SPDX-License-Identifier: Apache-2.0 */
/* Plain-C references of the example kernels, on host memory. */
#include <math.h>

#include "example.h"

kp_status example_axpy_reference(const kp_call *call, kp_launch *l)
{
    const kp_tensor *x = &call->args[AXPY_X].tensor, *y = &call->args[AXPY_Y].tensor;
    const float *xp = KP_HOST_PTR(call, AXPY_X, const float);
    float *yp = KP_HOST_PTR(call, AXPY_Y, float);
    float alpha = (float)call->args[AXPY_ALPHA].f;
    for (int64_t i = 0; i < call->args[AXPY_N].i; i++)
        yp[i * y->strides[0]] = fmaf(alpha, xp[i * x->strides[0]], yp[i * y->strides[0]]);
    return KP_OK;
}

kp_status example_scale_rows_reference(const kp_call *call, kp_launch *l)
{
    const kp_tensor *x = &call->args[SCALE_X].tensor, *s = &call->args[SCALE_S].tensor,
                    *y = &call->args[SCALE_Y].tensor;
    const float *xp = KP_HOST_PTR(call, SCALE_X, const float);
    const float *sp = KP_HOST_PTR(call, SCALE_S, const float);
    float *yp = KP_HOST_PTR(call, SCALE_Y, float);
    for (int64_t r = 0; r < x->shape[0]; r++)
        for (int64_t c = 0; c < x->shape[1]; c++)
            yp[r * y->strides[0] + c * y->strides[1]] =
                xp[r * x->strides[0] + c * x->strides[1]] * sp[r * s->strides[0]];
    return KP_OK;
}
