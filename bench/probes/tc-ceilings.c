/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tc-ceilings: what bounds tc.gemm on an NVIDIA GPU. Builds kernels/tc.cl with its TC_PROBE
 * switch to time the copies into local memory alone and the products alone, next to the whole
 * kernel, times mma.sync from registers only (bench/probes/tc-mma-peak.cl) and, on sm_90,
 * Hopper's wgmma from local memory (bench/probes/tc-wgmma-peak.cl, its PTX re-targeted to
 * sm_90a). Prints each case's time, its rate in TFLOP/s of the full product, the global-to-local
 * traffic rate, and the registers NVIDIA's compiler allotted (-cl-nv-verbose). A diagnostic run
 * by hand on the GPU machine (scripts/gpu/tc.sh with KP_TC_CEILINGS=1); not a test, and not the
 * family's benchmark (bench-tc).
 *
 *   tc-ceilings [--src DIR] [--n N] [--tiles "-D BM=128 ..."]
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl-ptx.h"

#define DEFAULT_TILES "-D BM=128 -D BN=128 -D BK=16 -D WM=64 -D WN=64 -D LDSM=1 -D STAGES=2"
#define REPS 10

typedef struct gpu {
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
} gpu;

static void die(const char *what, cl_int err)
{
    fprintf(stderr, "tc-ceilings: %s failed (OpenCL error %d)\n", what, (int)err);
    exit(1);
}

static char *read_file(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "tc-ceilings: cannot open %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    if (!s || fread(s, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "tc-ceilings: cannot read %s\n", path);
        exit(1);
    }
    s[n] = 0;
    fclose(f);
    return s;
}

static int open_nvidia(gpu *g)
{
    cl_platform_id ps[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, ps, &np) != CL_SUCCESS)
        return 0;
    for (cl_uint i = 0; i < np; i++) {
        char name[256] = "";
        clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (strstr(name, "NVIDIA") &&
            clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_GPU, 1, &g->dev, NULL) == CL_SUCCESS) {
            cl_int e;
            g->ctx = clCreateContext(NULL, 1, &g->dev, NULL, NULL, &e);
            if (e != CL_SUCCESS)
                die("clCreateContext", e);
            g->q = clCreateCommandQueue(g->ctx, g->dev, CL_QUEUE_PROFILING_ENABLE, &e);
            if (e != CL_SUCCESS)
                die("clCreateCommandQueue", e);
            return 1;
        }
    }
    return 0;
}

/* The kernel `entry` of the `count` sources `src`, built as one program with `options`; the
 * compiler's register count for `entry` in *regs (-1 when it said nothing). */
static cl_kernel build(gpu *g, cl_uint count, const char **src, const char *options,
                       const char *entry, int *regs)
{
    cl_int e;
    cl_program p = clCreateProgramWithSource(g->ctx, count, src, NULL, &e);
    if (e != CL_SUCCESS)
        die("clCreateProgramWithSource", e);
    char full[1024];
    snprintf(full, sizeof full, "%s -cl-nv-verbose", options);
    cl_int built = clBuildProgram(p, 1, &g->dev, full, NULL, NULL);
    size_t n = 0;
    clGetProgramBuildInfo(p, g->dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
    char *log = calloc(1, n + 1);
    if (log)
        clGetProgramBuildInfo(p, g->dev, CL_PROGRAM_BUILD_LOG, n, log, NULL);
    *regs = -1;
    char function[160];
    snprintf(function, sizeof function, "entry function '%s'", entry);
    const char *at = log ? strstr(log, function) : NULL;
    const char *used = at ? strstr(at, "Used ") : NULL;
    if (used)
        *regs = atoi(used + 5);
    if (built != CL_SUCCESS) {
        fprintf(stderr, "tc-ceilings: build of %s with %s failed:\n%s\n", entry, options,
                log ? log : "");
        exit(1);
    }
    free(log);
    cl_kernel k = clCreateKernel(p, entry, &e);
    if (e != CL_SUCCESS)
        die("clCreateKernel", e);
    clReleaseProgram(p);
    return k;
}

/*
 * The kernel `entry` of `src` with its sm_90a instructions: NVIDIA's OpenCL compiler emits PTX for
 * sm_90, whose assembler refuses wgmma, so the source writes them behind "//KP:" comments; the
 * compiled PTX is re-targeted as the core does it (kp__ptx_sm90a) and built as a binary.
 * NULL (after a message) where the PTX is not for sm_90.
 */
static cl_kernel build_sm90a(gpu *g, const char *src, const char *options, const char *entry)
{
    int regs;
    cl_kernel k = build(g, 1, &src, options, entry, &regs);
    cl_program p;
    size_t size = 0;
    clGetKernelInfo(k, CL_KERNEL_PROGRAM, sizeof p, &p, NULL);
    clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL);
    char *ptx = calloc(1, size + 1);
    if (!ptx || clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof ptx, &ptx, NULL) != CL_SUCCESS)
        die("clGetProgramInfo", CL_OUT_OF_HOST_MEMORY);
    clReleaseKernel(k);
    char *patched = kp__ptx_sm90a(ptx);
    if (!patched) {
        printf("(wgmma: the PTX here is not for sm_90)\n");
        free(ptx);
        return NULL;
    }
    size_t len = strlen(patched) + 1;
    const unsigned char *bin = (const unsigned char *)patched;
    cl_int e, status;
    cl_program q = clCreateProgramWithBinary(g->ctx, 1, &g->dev, &len, &bin, &status, &e);
    if (e != CL_SUCCESS || status != CL_SUCCESS)
        die("clCreateProgramWithBinary", e != CL_SUCCESS ? e : status);
    if ((e = clBuildProgram(q, 1, &g->dev, options, NULL, NULL)) != CL_SUCCESS)
        die("clBuildProgram (PTX re-targeted to sm_90a)", e);
    k = clCreateKernel(q, entry, &e);
    if (e != CL_SUCCESS)
        die("clCreateKernel", e);
    clReleaseProgram(q);
    free(ptx);
    free(patched);
    return k;
}

/* The fastest of REPS launches (after two warm-up launches), in microseconds. */
static double time_launch(gpu *g, cl_kernel k, size_t global, size_t local)
{
    double best = 1e30;
    for (int r = 0; r < REPS + 2; r++) {
        cl_event ev;
        cl_int e = clEnqueueNDRangeKernel(g->q, k, 1, NULL, &global, &local, 0, NULL, &ev);
        if (e != CL_SUCCESS)
            die("clEnqueueNDRangeKernel", e);
        clWaitForEvents(1, &ev);
        cl_ulong t0 = 0, t1 = 0;
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
        clReleaseEvent(ev);
        double us = (double)(t1 - t0) / 1e3;
        if (r >= 2 && us < best)
            best = us;
    }
    return best;
}

/* The register count as printed: "-" when the compiler said nothing (a program it had cached). */
static const char *regs_text(int regs, char *buf, size_t size)
{
    if (regs < 0)
        return "-";
    snprintf(buf, size, "%d", regs);
    return buf;
}

static int define_of(const char *tiles, const char *name, int fallback)
{
    char key[32];
    snprintf(key, sizeof key, "-D %s=", name);
    const char *p = strstr(tiles, key);
    return p ? atoi(p + strlen(key)) : fallback;
}

static void release(gpu *g, cl_mem a, cl_mem b, cl_mem c)
{
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseMemObject(c);
    clReleaseCommandQueue(g->q);
    clReleaseContext(g->ctx);
}

/* tc.cl as the core builds it: the prelude (kernels/common/prelude.cl: the kp_view types of the
 * kernels' tensor arguments), a #line, then the file. */
static char *read_tc(const char *dir)
{
    char *prelude = read_file(dir, "kernels/common/prelude.cl"),
         *tc = read_file(dir, "kernels/tc.cl");
    const char *line = "\n#line 1 \"tc.cl\"\n";
    size_t n = strlen(prelude) + strlen(line) + strlen(tc) + 1;
    char *s = malloc(n);
    if (!s) {
        fprintf(stderr, "tc-ceilings: out of memory\n");
        exit(1);
    }
    snprintf(s, n, "%s%s%s", prelude, line, tc);
    free(prelude);
    free(tc);
    return s;
}

/* n^3 tf32 operands, row-major, for the kernel k of tc.cl (tc_gemm's arguments): each tensor a
 * buffer and its kp_view2 {offset, shape[2], strides[2]}. */
static void set_gemm_args(cl_kernel k, int n, cl_mem a, cl_mem b, cl_mem c)
{
    int v[] = {n, n, n};
    cl_int view[5] = {0, n, n, n, 1};
    float scale[] = {1.0f, 0.0f};
    for (cl_uint i = 0; i < 3; i++)
        clSetKernelArg(k, i, sizeof(int), &v[i]);
    clSetKernelArg(k, 3, sizeof(float), &scale[0]);
    clSetKernelArg(k, 4, sizeof(float), &scale[1]);
    cl_mem bufs[] = {a, b, c};
    for (cl_uint i = 0; i < 3; i++) {
        clSetKernelArg(k, 5 + 2 * i, sizeof(cl_mem), &bufs[i]);
        clSetKernelArg(k, 6 + 2 * i, sizeof view, view);
    }
}

/* tc_gemm_wg (tf32) with each TC_PROBE: whole, no copies, no products, no tf32 rounding of A, no
 * proxy fence. */
static int wgmma_ceilings(const char *dir, int n, const char *tiles)
{
    gpu g;
    if (!open_nvidia(&g)) {
        fprintf(stderr, "tc-ceilings: no NVIDIA OpenCL GPU here\n");
        return 1;
    }
    char *tc = read_tc(dir);
    int bm = define_of(tiles, "BM", 256), bn = define_of(tiles, "BN", 128);
    size_t wg = (size_t)bn / 64 * 128;
    size_t groups = (size_t)((n + bm - 1) / bm) * (size_t)((n + bn - 1) / bn);
    size_t bytes = (size_t)n * n * 4;
    double flop = 2.0 * n * n * (double)n, traffic = (double)groups * n * (bm + bn) * 4.0;
    cl_int e;
    cl_mem a = clCreateBuffer(g.ctx, 0, bytes, NULL, &e);
    cl_mem b = e == CL_SUCCESS ? clCreateBuffer(g.ctx, 0, bytes, NULL, &e) : 0;
    cl_mem c = e == CL_SUCCESS ? clCreateBuffer(g.ctx, 0, bytes, NULL, &e) : 0;
    const float half = 0.5f;
    for (int i = 0; e == CL_SUCCESS && i < 2; i++)
        e = clEnqueueFillBuffer(g.q, i ? b : a, &half, sizeof half, 0, bytes, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        die("clCreateBuffer", e);
    printf("tc_gemm_wg ceilings at %d^3 with %s\n", n, tiles);
    printf("%-28s %10s %10s %12s\n", "case", "us", "TFLOP/s", "copies TB/s");
    const char *cases[] = {"whole kernel", "no copies", "no products", "no rounding of A",
                           "no proxy fence"};
    for (int probe = 0; probe < 5; probe++) {
        char options[512];
        snprintf(options, sizeof options,
                 "-D TC_PTX=1 -D WGMMA=1 -D TA=0 -D TB=0 -D VEC=1 -D PREC=0 -D TC_PROBE=%d %s",
                 probe, tiles);
        cl_kernel k = build_sm90a(&g, tc, options, "tc_gemm_wg");
        if (!k)
            return 1;
        set_gemm_args(k, n, a, b, c);
        double us = time_launch(&g, k, groups * wg, wg);
        printf("%-28s %10.1f %10.1f %12.2f\n", cases[probe], us, flop / us / 1e6,
               probe == 1 ? 0.0 : traffic / us / 1e6);
        clReleaseKernel(k);
    }
    release(&g, a, b, c);
    free(tc);
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir = ".", *tiles = DEFAULT_TILES, *wg_tiles = NULL;
    int n = 4096;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--src"))
            dir = argv[i + 1];
        else if (!strcmp(argv[i], "--n"))
            n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--tiles"))
            tiles = argv[i + 1];
        else if (!strcmp(argv[i], "--wgmma"))
            wg_tiles = argv[i + 1];
        else {
            fprintf(stderr, "usage: tc-ceilings [--src DIR] [--n N] [--tiles DEFINES] "
                            "[--wgmma DEFINES]\n");
            return 2;
        }
    }
    if (wg_tiles)
        return wgmma_ceilings(dir, n, wg_tiles);
    /* TC_PROBE acts on the cp.async path; the register-staged one (STAGES 0) would leave the
     * compiler free to drop stores that nothing reads. */
    if (define_of(tiles, "STAGES", 0) < 2) {
        fprintf(stderr, "tc-ceilings: the tiles need -D STAGES=2 (or 3, 4)\n");
        return 2;
    }
    gpu g;
    if (!open_nvidia(&g)) {
        fprintf(stderr, "tc-ceilings: no NVIDIA OpenCL GPU here\n");
        return 1;
    }
    char *tc = read_tc(dir), *peak = read_file(dir, "bench/probes/tc-mma-peak.cl");
    char *wgmma = read_file(dir, "bench/probes/tc-wgmma-peak.cl");
    int bm = define_of(tiles, "BM", 128), bn = define_of(tiles, "BN", 128);
    int wm = define_of(tiles, "WM", 64), wn = define_of(tiles, "WN", 32);
    size_t wg = (size_t)(bm / wm) * (size_t)(bn / wn) * 32;
    size_t groups = (size_t)((n + bm - 1) / bm) * (size_t)((n + bn - 1) / bn);
    size_t bytes = (size_t)n * n * 4;
    double flop = 2.0 * n * n * (double)n;
    /* What the copies move: every work-group reads K x (BM + BN) floats. */
    double traffic = (double)groups * n * (bm + bn) * 4.0;

    cl_int e;
    float *host = malloc(bytes);
    for (size_t i = 0; i < bytes / 4; i++)
        host[i] = (float)((i * 2654435761u) % 1000u) / 1000.0f - 0.5f;
    cl_mem a = clCreateBuffer(g.ctx, CL_MEM_COPY_HOST_PTR, bytes, host, &e);
    cl_mem b = e == CL_SUCCESS ? clCreateBuffer(g.ctx, CL_MEM_COPY_HOST_PTR, bytes, host, &e) : 0;
    cl_mem c = e == CL_SUCCESS ? clCreateBuffer(g.ctx, 0, bytes, NULL, &e) : 0;
    if (e != CL_SUCCESS)
        die("clCreateBuffer", e);
    free(host);

    printf("tc.gemm ceilings at %d^3 with %s\n", n, tiles);
    printf("%-8s %-26s %10s %10s %12s %5s\n", "prec", "case", "us", "TFLOP/s", "copies TB/s",
           "regs");
    const char *cases[] = {"whole kernel", "products only (no copies)", "copies only"};
    const int precs[] = {0, 2};
    const char *prec_names[] = {"tf32", "f16"};
    for (int pi = 0; pi < 2; pi++) {
        if (precs[pi] == 2 && define_of(tiles, "BK", 16) % 16 != 0) {
            printf("(f16 needs BK 16 or 32: its mma is 16 deep)\n");
            continue;
        }
        for (int probe = 0; probe < 3; probe++) {
            char options[512];
            snprintf(options, sizeof options,
                     "-D TC_PTX=1 -D TA=0 -D TB=0 -D VEC=1 -D PREC=%d -D TC_PROBE=%d %s", precs[pi],
                     probe, tiles);
            int regs;
            cl_kernel k = build(&g, 1, (const char **)&tc, options, "tc_gemm", &regs);
            set_gemm_args(k, n, a, b, c);
            double us = time_launch(&g, k, groups * wg, wg);
            char rate[32] = "-";
            if (probe != 1)
                snprintf(rate, sizeof rate, "%.2f", traffic / us / 1e6);
            char rb[16];
            printf("%-8s %-26s %10.1f %10.1f %12s %5s\n", prec_names[pi], cases[probe], us,
                   flop / us / 1e6, rate, regs_text(regs, rb, sizeof rb));
            clReleaseKernel(k);
        }
        /* The same number of products from registers: (n/128)^2 work-groups of four warps,
         * each warp 4 x 8 tiles of 16 x 8 for n / (mma depth) rounds. */
        char options[64];
        snprintf(options, sizeof options, "-D TC_PTX=1 -D PREC=%d", precs[pi]);
        int regs, iters = n / (precs[pi] ? 16 : 8);
        const char *sources[] = {tc, peak}; /* tc.cl's mma() */
        cl_kernel k = build(&g, 2, sources, options, "mma_peak", &regs);
        clSetKernelArg(k, 0, sizeof(cl_mem), &a);
        clSetKernelArg(k, 1, sizeof(cl_mem), &c);
        clSetKernelArg(k, 2, sizeof(int), &iters);
        size_t peak_groups = (size_t)(n / 128) * (size_t)(n / 128);
        double us = time_launch(&g, k, peak_groups * 128, 128);
        char rb[16];
        printf("%-8s %-26s %10.1f %10.1f %12s %5s\n", prec_names[pi], "mma.sync from registers", us,
               flop / us / 1e6, "-", regs_text(regs, rb, sizeof rb));
        clReleaseKernel(k);
    }
    /* wgmma: eight work-groups of two warpgroups per compute unit, each warpgroup a 64 x 128 tile
     * of m64n128k8 products, two a round. */
    cl_kernel k = build_sm90a(&g, wgmma, "", "wgmma_peak");
    if (k) {
        cl_uint units = 0;
        clGetDeviceInfo(g.dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
        int iters = 4096;
        size_t wgs = (size_t)units * 8;
        clSetKernelArg(k, 0, sizeof(cl_mem), &a);
        clSetKernelArg(k, 1, sizeof(cl_mem), &c);
        clSetKernelArg(k, 2, sizeof(int), &iters);
        double us = time_launch(&g, k, wgs * 256, 256);
        double wflop = (double)wgs * 2 * iters * 2 * (2.0 * 64 * 128 * 8);
        printf("%-8s %-26s %10.1f %10.1f %12s %5s\n", "tf32", "wgmma from local memory", us,
               wflop / us / 1e6, "-", "-");
        clReleaseKernel(k);
    }
    release(&g, a, b, c);
    free(tc);
    free(peak);
    free(wgmma);
    return 0;
}
