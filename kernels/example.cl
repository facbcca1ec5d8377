/* SPDX-License-Identifier: Apache-2.0 */
/* Example kernels: the plugin-authoring tutorial's axpy and scale_rows. */

/* WG is the workgroup size, compiled in so the compiler can size loops and the runtime can check
 * it against the device (reqd_work_group_size makes a mismatched launch an error). */
#ifndef WG
#define WG 64
#endif

/* Each tensor is its buffer and its view (kp_view1, kp_view2: the prelude's offset and strides in
 * elements), so any strided view works. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void example_axpy(const int n, const float alpha, __global const float *x, const kp_view1 xv,
                  __global float *y, const kp_view1 yv)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    y[kp_at1(yv, i)] = fma(alpha, x[kp_at1(xv, i)], y[kp_at1(yv, i)]);
}

/* y[r][c] = x[r][c] * scale[r], one work-item per element. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void example_scale_rows(const int rows, const int cols, __global const float *x, const kp_view2 xv,
                        __global const float *scale, const kp_view1 sv,
                        __global float *y, const kp_view2 yv)
{
    const int i = get_global_id(0);
    if (i >= rows * cols)
        return;
    const int r = i / cols, c = i % cols;
    y[kp_at2(yv, r, c)] = x[kp_at2(xv, r, c)] * scale[kp_at1(sv, r)];
}
