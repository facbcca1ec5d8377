/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host-staging-probe: what host memory the comm layer (#29) should stage through. For three kinds
 * of host memory -- malloc'ed (page-aligned), an OpenCL buffer made with CL_MEM_ALLOC_HOST_PTR and
 * mapped (what comm/ uses as "pinned"), and one made with CL_MEM_USE_HOST_PTR over page-aligned
 * malloc'ed memory and mapped -- prints the CPU's read and write bandwidth on it (MPI's copies and
 * the all-reduce's sums are CPU reads and writes) and the device's read (clEnqueueReadBuffer into
 * it) and write bandwidth. A CPU read far below malloc'ed memory's means the driver maps that
 * memory uncached or write-combined. A diagnostic run by hand on the GPU machine; not a test.
 *
 *   host-staging-probe [--platform N] [--device N] [--mb 64]
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPS 5

static void die(const char *what, cl_int err)
{
    fprintf(stderr, "host-staging-probe: %s failed (OpenCL error %d)\n", what, (int)err);
    exit(1);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum { CPU_READ, CPU_WRITE, DEV_TO_HOST, HOST_TO_DEV };

/* Keeps the CPU read's sums alive. */
static volatile float sink;

/* The median of REPS timings of `what` on p, as GB/s of `bytes`. */
static double measure(int what, float *p, size_t bytes, cl_command_queue q, cl_mem dev)
{
    double t[REPS];
    const size_t n = bytes / sizeof(float);
    for (int r = 0; r < REPS; r++) {
        double t0 = now();
        cl_int err = CL_SUCCESS;
        if (what == CPU_READ) {
            float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            for (size_t i = 0; i + 3 < n; i += 4) {
                s0 += p[i];
                s1 += p[i + 1];
                s2 += p[i + 2];
                s3 += p[i + 3];
            }
            sink = s0 + s1 + s2 + s3;
        } else if (what == CPU_WRITE) {
            for (size_t i = 0; i < n; i++)
                p[i] = (float)(i & 1023);
        } else if (what == DEV_TO_HOST) {
            err = clEnqueueReadBuffer(q, dev, CL_TRUE, 0, bytes, p, 0, NULL, NULL);
        } else {
            err = clEnqueueWriteBuffer(q, dev, CL_TRUE, 0, bytes, p, 0, NULL, NULL);
        }
        if (err != CL_SUCCESS)
            die("a transfer", err);
        t[r] = now() - t0;
    }
    qsort(t, REPS, sizeof t[0], cmp);
    return (double)bytes / t[REPS / 2] / 1e9;
}

int main(int argc, char **argv)
{
    int platform_index = -1, device_index = 0;
    double mb = 64;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--platform"))
            platform_index = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--device"))
            device_index = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--mb"))
            mb = atof(argv[i + 1]);
    }
    const size_t bytes = (size_t)(mb * 1048576.0) & ~(size_t)4095;
    cl_platform_id platforms[8];
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(8, platforms, &np);
    if (err != CL_SUCCESS || np == 0)
        die("clGetPlatformIDs", err);
    cl_device_id device = NULL;
    /* Without --platform: the first platform with a GPU. */
    for (cl_uint i = 0; i < np && !device; i++) {
        if (platform_index >= 0 && (int)i != platform_index)
            continue;
        cl_device_id ds[8];
        cl_uint nd = 0;
        cl_device_type type = platform_index >= 0 ? CL_DEVICE_TYPE_ALL : CL_DEVICE_TYPE_GPU;
        if (clGetDeviceIDs(platforms[i], type, 8, ds, &nd) == CL_SUCCESS && device_index < (int)nd)
            device = ds[device_index];
    }
    if (!device)
        die("finding the device", CL_DEVICE_NOT_FOUND);
    char name[256] = "";
    clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name, name, NULL);
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    if (!ctx)
        die("clCreateContext", err);
    cl_command_queue q = clCreateCommandQueue(ctx, device, 0, &err);
    if (!q)
        die("clCreateCommandQueue", err);
    cl_mem dev = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (!dev)
        die("the device buffer", err);

    float *plain = aligned_alloc(4096, bytes), *backing = aligned_alloc(4096, bytes);
    if (!plain || !backing)
        die("host memory", CL_OUT_OF_HOST_MEMORY);
    memset(plain, 0, bytes);
    memset(backing, 0, bytes);
    cl_mem alloc = clCreateBuffer(ctx, CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &err);
    if (!alloc)
        die("CL_MEM_ALLOC_HOST_PTR", err);
    float *alloc_p = clEnqueueMapBuffer(q, alloc, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0,
                                        NULL, NULL, &err);
    if (!alloc_p)
        die("mapping CL_MEM_ALLOC_HOST_PTR", err);
    cl_mem use = clCreateBuffer(ctx, CL_MEM_USE_HOST_PTR, bytes, backing, &err);
    if (!use)
        die("CL_MEM_USE_HOST_PTR", err);
    float *use_p = clEnqueueMapBuffer(q, use, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0,
                                      NULL, NULL, &err);
    if (!use_p)
        die("mapping CL_MEM_USE_HOST_PTR", err);

    printf("host-staging-probe: %s, %.0f MB, median of %d\n", name, (double)bytes / 1048576.0,
           REPS);
    printf("%-34s %12s %12s %12s %12s\n", "host memory", "CPU read", "CPU write", "device->host",
           "host->device");
    const struct {
        const char *what;
        float *p;
    } kinds[] = {{"malloc (page-aligned)", plain},
                 {"ALLOC_HOST_PTR, mapped", alloc_p},
                 {"USE_HOST_PTR, mapped", use_p}};
    for (int k = 0; k < 3; k++) {
        double g[4];
        for (int w = 0; w < 4; w++)
            g[w] = measure(w, kinds[k].p, bytes, q, dev);
        printf("%-34s %8.2f GB/s %7.2f GB/s %7.2f GB/s %7.2f GB/s\n", kinds[k].what, g[0], g[1],
               g[2], g[3]);
    }
    printf("(use_p %s the backing pointer)\n", use_p == backing ? "is" : "is NOT");
    clEnqueueUnmapMemObject(q, alloc, alloc_p, 0, NULL, NULL);
    clEnqueueUnmapMemObject(q, use, use_p, 0, NULL, NULL);
    clFinish(q);
    clReleaseMemObject(alloc);
    clReleaseMemObject(use);
    clReleaseMemObject(dev);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    free(plain);
    free(backing);
    return 0;
}
