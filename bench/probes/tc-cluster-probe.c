/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tc-cluster-probe: does NVIDIA's OpenCL launch thread-block clusters? Builds
 * bench/probes/tc-cluster-probe.cl, takes its PTX, declares a cluster of two work-groups on the
 * kernel (`.reqnctapercluster 2, 1, 1`, with `.explicitcluster` in a second build, which CUDA
 * refuses to launch without cluster dimensions), loads that PTX as the program's binary and
 * launches eight work-groups. Prints each work-group's rank, cluster size and cluster index, and
 * where clusters form, whether a multicast bulk copy and a distributed-shared-memory read returned
 * the right data. A diagnostic run by hand on the GPU machine (scripts/gpu/tc.sh with
 * KP_TC_CLUSTER_PROBE=1); not a test.
 *
 *   tc-cluster-probe [--src DIR]
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GROUPS 8

static void die(const char *what, cl_int err)
{
    fprintf(stderr, "tc-cluster-probe: %s failed (OpenCL error %d)\n", what, (int)err);
    exit(1);
}

static char *read_source(const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/bench/probes/tc-cluster-probe.cl", dir);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "tc-cluster-probe: cannot open %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    if (!s || fread(s, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "tc-cluster-probe: cannot read %s\n", path);
        exit(1);
    }
    s[n] = '\0';
    fclose(f);
    return s;
}

static cl_device_id nvidia_gpu(void)
{
    cl_platform_id ps[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, ps, &np) != CL_SUCCESS)
        return NULL;
    for (cl_uint i = 0; i < np; i++) {
        char name[256] = "";
        cl_device_id d;
        clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (strstr(name, "NVIDIA") && clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_GPU, 1, &d, NULL) == 0)
            return d;
    }
    return NULL;
}

static void build(cl_program p, cl_device_id dev, const char *what)
{
    if (clBuildProgram(p, 1, &dev, "", NULL, NULL) == CL_SUCCESS)
        return;
    static char log[65536];
    log[0] = '\0';
    clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
    fprintf(stderr, "tc-cluster-probe: building %s failed:\n%s\n", what, log);
    exit(1);
}

/* The program's PTX with `directives` inserted after the kernel's parameter list. */
static char *with_directives(cl_program p, const char *directives)
{
    size_t len = 0;
    cl_int e = clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL);
    char *ptx = malloc(len + 1), *out = malloc(len + strlen(directives) + 2);
    if (e != CL_SUCCESS || !ptx || !out ||
        clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof ptx, &ptx, NULL) != CL_SUCCESS)
        die("clGetProgramInfo(CL_PROGRAM_BINARIES)", e);
    ptx[len] = '\0';
    const char *entry = strstr(ptx, ".entry probe");
    const char *body = entry ? strstr(entry, "\n{") : NULL;
    if (!body) {
        fprintf(stderr, "tc-cluster-probe: no kernel entry in the compiled PTX\n");
        exit(1);
    }
    size_t head = (size_t)(body - ptx);
    memcpy(out, ptx, head);
    sprintf(out + head, "\n%s%s", directives, body);
    free(ptx);
    return out;
}

static void run(cl_context ctx, cl_command_queue q, cl_program p, const char *what)
{
    cl_int e;
    cl_kernel k = clCreateKernel(p, "probe", &e);
    if (e != CL_SUCCESS)
        die("clCreateKernel", e);
    cl_uint src[GROUPS / 2 * 256], res[GROUPS * 4];
    for (size_t i = 0; i < sizeof src / sizeof src[0]; i++)
        src[i] = (cl_uint)(i * 2654435761u);
    memset(res, 0, sizeof res);
    cl_mem ms = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof src, src, &e);
    cl_mem mr = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof res, res, &e);
    if (e != CL_SUCCESS)
        die("clCreateBuffer", e);
    size_t global = GROUPS * 64, local = 64;
    clSetKernelArg(k, 0, sizeof mr, &mr);
    clSetKernelArg(k, 1, sizeof ms, &ms);
    cl_int le = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL);
    cl_int fe = clFinish(q);
    printf("%s: launch %d, finish %d\n", what, (int)le, (int)fe);
    if (le == CL_SUCCESS && fe == CL_SUCCESS &&
        clEnqueueReadBuffer(q, mr, CL_TRUE, 0, sizeof res, res, 0, NULL, NULL) == CL_SUCCESS)
        for (int g = 0; g < GROUPS; g++)
            printf("  work-group %d: rank %u of %u in cluster %u%s\n", g, res[g * 4],
                   res[g * 4 + 1], res[g * 4 + 2],
                   res[g * 4 + 1] == 2 ? (res[g * 4 + 3] ? ", data WRONG" : ", data right") : "");
    clReleaseMemObject(ms);
    clReleaseMemObject(mr);
    clReleaseKernel(k);
}

int main(int argc, char **argv)
{
    const char *dir = argc == 3 && strcmp(argv[1], "--src") == 0 ? argv[2] : ".";
    cl_device_id dev = nvidia_gpu();
    if (!dev) {
        fprintf(stderr, "tc-cluster-probe: no NVIDIA GPU through OpenCL\n");
        return 1;
    }
    cl_int e;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
    if (e != CL_SUCCESS)
        die("clCreateContext", e);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &e);
    if (e != CL_SUCCESS)
        die("clCreateCommandQueue", e);
    const char *text = read_source(dir);
    cl_program p = clCreateProgramWithSource(ctx, 1, &text, NULL, &e);
    if (e != CL_SUCCESS)
        die("clCreateProgramWithSource", e);
    build(p, dev, "the probe from source");
    run(ctx, q, p, "as compiled (no cluster declared)");
    static const char *const variants[] = {".reqnctapercluster 2, 1, 1",
                                           ".explicitcluster\n.reqnctapercluster 2, 1, 1"};
    for (int v = 0; v < 2; v++) {
        char *ptx = with_directives(p, variants[v]);
        size_t len = strlen(ptx) + 1;
        const unsigned char *bin = (const unsigned char *)ptx;
        cl_int status;
        cl_program pb = clCreateProgramWithBinary(ctx, 1, &dev, &len, &bin, &status, &e);
        if (e != CL_SUCCESS)
            die("clCreateProgramWithBinary", e != CL_SUCCESS ? e : status);
        build(pb, dev, variants[v]);
        char what[128];
        snprintf(what, sizeof what, "PTX with %s",
                 v ? ".explicitcluster, .reqnctapercluster 2" : ".reqnctapercluster 2");
        run(ctx, q, pb, what);
        clReleaseProgram(pb);
        free(ptx);
    }
    return 0;
}
