/* SPDX-License-Identifier: Apache-2.0 */
/* The out-of-tree test plugin's kernel: y = -x on strided f32 vectors. */

/* WG is compiled in (-D WG=...) from the plugin's tunable; reqd_work_group_size makes a launch
 * with another local size an error instead of a silent recompile under PoCL. */
#ifndef WG
#define WG 64
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void oot_negate(const int n,
                __global const float *x, const int x_off, const int x_stride,
                __global float *y, const int y_off, const int y_stride)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    y[y_off + i * y_stride] = -x[x_off + i * x_stride];
}
