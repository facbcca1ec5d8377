/* Example kernels: the plugin-authoring tutorial's axpy and scale_rows. */

/* WG is the workgroup size, compiled in so the compiler can size loops and the runtime can check
 * it against the device (reqd_work_group_size makes a mismatched launch an error). */
#ifndef WG
#define WG 64
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void example_axpy(const int n, const float alpha,
                  __global const float *x, const int x_off, const int x_stride,
                  __global float *y, const int y_off, const int y_stride)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    y[y_off + i * y_stride] = fma(alpha, x[x_off + i * x_stride], y[y_off + i * y_stride]);
}

/* y[r][c] = x[r][c] * scale[r]; x and y are strided views, one work-item per element. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void example_scale_rows(const int rows, const int cols,
                        __global const float *x, const int x_off, const int x_rs, const int x_cs,
                        __global const float *scale, const int s_off, const int s_stride,
                        __global float *y, const int y_off, const int y_rs, const int y_cs)
{
    const int i = get_global_id(0);
    if (i >= rows * cols)
        return;
    const int r = i / cols, c = i % cols;
    y[y_off + r * y_rs + c * y_cs] = x[x_off + r * x_rs + c * x_cs] * scale[s_off + r * s_stride];
}
