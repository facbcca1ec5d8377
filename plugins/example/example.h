/* SPDX-License-Identifier: Apache-2.0 */
/* The example plugin's shared declarations: parameter order and the host references. */
#ifndef KP_EXAMPLE_H
#define KP_EXAMPLE_H

#include "kernelport/plugin.h"

/* Parameter indices, in the order the descriptors list them. */
enum { AXPY_N, AXPY_ALPHA, AXPY_X, AXPY_Y, AXPY_NPARAMS };
enum { SCALE_X, SCALE_S, SCALE_Y, SCALE_NPARAMS };

kp_status example_axpy_reference(const kp_call *call, kp_launch *l);
kp_status example_scale_rows_reference(const kp_call *call, kp_launch *l);

#endif
