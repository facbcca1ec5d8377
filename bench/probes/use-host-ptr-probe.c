/* SPDX-License-Identifier: Apache-2.0 */
/*
 * use-host-ptr-probe: whether mapping a CL_MEM_USE_HOST_PTR buffer writes over host memory that
 * changed after the buffer was made. comm/'s node-shared segment is one such buffer over memory
 * every rank of a node shares, each rank making and mapping its own over the whole of it: if a
 * driver's map copies its own (stale) copy of the memory back to the host, a rank that maps late
 * erases what the others already wrote into their parts (#29's pipelined buckets gave wrong sums
 * now and then on two H200s). Three checks on one buffer of --mb MB:
 *   (1) made over zeros; then the host writes ones into the second half (another rank's part);
 *       then a blocking map of the whole: are the ones still there?
 *   (2) mapped: the host writes twos into the second half, the device a non-blocking read of
 *       threes into the first: is the second half untouched?
 *   (3) unmapped: is the memory as the host left it?
 * A diagnostic run by hand on the GPU machine; not a test.
 *
 *   use-host-ptr-probe [--platform N] [--device N] [--mb 16]
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, cl_int err)
{
    fprintf(stderr, "use-host-ptr-probe: %s failed (OpenCL error %d)\n", what, (int)err);
    exit(1);
}

/* How many of p[0..n) differ from v. */
static size_t differ(const float *p, size_t n, float v)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += p[i] != v;
    return k;
}

static void fill(float *p, size_t n, float v)
{
    for (size_t i = 0; i < n; i++)
        p[i] = v;
}

int main(int argc, char **argv)
{
    int platform = -1, device = 0, mb = 16;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--platform"))
            platform = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--device"))
            device = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--mb"))
            mb = atoi(argv[i + 1]);
    }
    cl_platform_id platforms[8];
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(8, platforms, &np);
    if (err || np == 0)
        die("clGetPlatformIDs", err);
    cl_device_id dev = NULL;
    for (cl_uint p = 0; p < np && !dev; p++) {
        cl_device_id ds[8];
        cl_uint nd = 0;
        const cl_device_type type = platform < 0 ? CL_DEVICE_TYPE_GPU : CL_DEVICE_TYPE_ALL;
        if ((platform < 0 || (cl_uint)platform == p) &&
            clGetDeviceIDs(platforms[p], type, 8, ds, &nd) == CL_SUCCESS && (cl_uint)device < nd)
            dev = ds[device];
    }
    if (!dev)
        die("finding the device", CL_DEVICE_NOT_FOUND);
    char name[256] = "";
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    if (!ctx)
        die("clCreateContext", err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    if (!q)
        die("clCreateCommandQueue", err);

    const size_t bytes = (size_t)mb << 20, n = bytes / sizeof(float), half = n / 2;
    float *host = aligned_alloc(4096, bytes);
    if (!host)
        die("aligned_alloc", CL_OUT_OF_HOST_MEMORY);
    fill(host, n, 0);
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes, host, &err);
    if (!buf)
        die("clCreateBuffer(CL_MEM_USE_HOST_PTR)", err);
    printf("device: %s, %d MB over malloc'ed memory\n", name, mb);

    fill(host + half, n - half, 1);
    float *mapped = clEnqueueMapBuffer(q, buf, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0,
                                       NULL, NULL, &err);
    if (!mapped)
        die("clEnqueueMapBuffer", err);
    printf("(1) map at the host pointer: %s; floats written after clCreateBuffer and lost by "
           "the map: %zu of %zu\n",
           mapped == host ? "yes" : "no", differ(host + half, n - half, 1), n - half);

    cl_mem threes = clCreateBuffer(ctx, CL_MEM_READ_WRITE, half * sizeof(float), NULL, &err);
    if (!threes)
        die("clCreateBuffer", err);
    const float three = 3;
    if ((err = clEnqueueFillBuffer(q, threes, &three, sizeof three, 0, half * sizeof(float), 0,
                                   NULL, NULL)) ||
        (err = clFinish(q)))
        die("clEnqueueFillBuffer", err);
    fill(host + half, n - half, 2);
    cl_event read;
    if ((err = clEnqueueReadBuffer(q, threes, CL_FALSE, 0, half * sizeof(float), host, 0, NULL,
                                   &read)) ||
        (err = clWaitForEvents(1, &read)))
        die("clEnqueueReadBuffer", err);
    printf("(2) a device read into the first half: %zu of %zu floats wrong there, %zu of %zu "
           "changed in the second half\n",
           differ(host, half, 3), half, differ(host + half, n - half, 2), n - half);

    fill(host + half, n - half, 4);
    if ((err = clEnqueueUnmapMemObject(q, buf, mapped, 0, NULL, NULL)) || (err = clFinish(q)))
        die("clEnqueueUnmapMemObject", err);
    printf("(3) unmap: %zu of %zu floats of the first half and %zu of %zu of the second changed\n",
           differ(host, half, 3), half, differ(host + half, n - half, 4), n - half);

    clReleaseEvent(read);
    clReleaseMemObject(threes);
    clReleaseMemObject(buf);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    free(host);
    return 0;
}
