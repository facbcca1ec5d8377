/* SPDX-License-Identifier: Apache-2.0 */
/* Device peaks: streaming bandwidth over vector widths, FP32 FMA rate, and launch latency. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cl-internal.h"
#include "cl-embedded.h"

#define REPEATS 5
#define LATENCY_LAUNCHES 50

typedef struct peak_ctx {
    kp__backend *b;
    size_t local;
    size_t global;
} peak_ctx;

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static kp_status build(peak_ctx *c, int vec, cl_program *out)
{
    const char *src = kp_kernel_peak_cl;
    /* -w: a compiler's warnings on these measuring kernels are nothing a user can act on, and
     * PoCL's print a bare "8 warnings generated." on stderr (#28). */
    char options[32];
    snprintf(options, sizeof options, "-w -D VEC=%d", vec);
    cl_int err;
    cl_program p = clCreateProgramWithSource(c->b->context, 1, &src, NULL, &err);
    if (err != CL_SUCCESS)
        return kp__cl_fail(&c->b->sink, err, "clCreateProgramWithSource", "peak.cl");
    err = clBuildProgram(p, 1, &c->b->device, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        clReleaseProgram(p);
        return kp__cl_fail(&c->b->sink, err, "clBuildProgram", "peak.cl with %s", options);
    }
    *out = p;
    return KP_OK;
}

/* Device seconds of one launch, from its event. */
static kp_status timed(peak_ctx *c, cl_kernel k, size_t global, double *seconds)
{
    cl_event ev;
    cl_int err = clEnqueueNDRangeKernel(c->b->queue, k, 1, NULL, &global, &c->local, 0, NULL, &ev);
    if (err != CL_SUCCESS)
        return kp__cl_fail(&c->b->sink, err, "clEnqueueNDRangeKernel", "peak measurement");
    cl_ulong t0 = 0, t1 = 0;
    err = clWaitForEvents(1, &ev);
    if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
    if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
    clReleaseEvent(ev);
    if (err != CL_SUCCESS)
        return kp__cl_fail(&c->b->sink, err, "clGetEventProfilingInfo", "peak measurement");
    *seconds = t1 > t0 ? (double)(t1 - t0) * 1e-9 : 1e-9;
    return KP_OK;
}

/* The median of REPEATS timed launches after one warm-up. */
static kp_status median_time(peak_ctx *c, cl_kernel k, size_t global, double *seconds)
{
    double t[REPEATS];
    kp_status st = timed(c, k, global, &t[0]);
    for (int i = 0; st == KP_OK && i < REPEATS; i++)
        st = timed(c, k, global, &t[i]);
    if (st == KP_OK)
        *seconds = median(t, REPEATS);
    return st;
}

static kp_status set_args(peak_ctx *c, cl_kernel k, int n, const void *const *values,
                          const size_t *sizes)
{
    for (int i = 0; i < n; i++) {
        cl_int err = clSetKernelArg(k, (cl_uint)i, sizes[i], values[i]);
        if (err != CL_SUCCESS)
            return kp__cl_fail(&c->b->sink, err, "clSetKernelArg", "peak argument %d", i);
    }
    return KP_OK;
}

/* Median seconds of `name` over `n` work-items with the given arguments. */
static kp_status stream(peak_ctx *c, cl_program p, const char *name, size_t n, int nargs,
                        const void *const *values, const size_t *sizes, double *seconds)
{
    cl_int err;
    cl_kernel k = clCreateKernel(p, name, &err);
    if (!k)
        return kp__cl_fail(&c->b->sink, err, "clCreateKernel", "%s", name);
    kp_status st = set_args(c, k, nargs, values, sizes);
    if (st == KP_OK)
        st = median_time(c, k, n, seconds);
    clReleaseKernel(k);
    return st;
}

static void keep_best(kp_peak *out, double gbs, int width)
{
    if (gbs > out->bandwidth_gbs) {
        out->bandwidth_gbs = gbs;
        out->vector_width = (uint32_t)width;
    }
}

static kp_status bandwidth(peak_ctx *c, cl_mem a, cl_mem b, cl_mem d, size_t bytes, kp_peak *out)
{
    static const int widths[] = {1, 2, 4, 8, 16};
    kp_status st = KP_OK;
    for (size_t w = 0; st == KP_OK && w < sizeof widths / sizeof widths[0]; w++) {
        cl_program p;
        if ((st = build(c, widths[w], &p)) != KP_OK)
            break;
        size_t n = bytes / (4u * (size_t)widths[w]);
        float s = 1.5f;
        double tr = 0, tc = 0, tt = 0;
        const void *v2[] = {&a, &b}, *v4[] = {&a, &b, &d, &s};
        const size_t s2[] = {sizeof a, sizeof b}, s4[] = {sizeof a, sizeof b, sizeof d, sizeof s};
        /* peak_read reads 16 vectors per work-item (PER in peak.cl). */
        st = stream(c, p, "peak_read", n / 16, 2, v2, s2, &tr);
        if (st == KP_OK)
            st = stream(c, p, "peak_copy", n, 2, v2, s2, &tc);
        if (st == KP_OK)
            st = stream(c, p, "peak_triad", n, 4, v4, s4, &tt);
        if (st == KP_OK) {
            double read = (double)bytes / tr * 1e-9, copy = 2.0 * (double)bytes / tc * 1e-9,
                   triad = 3.0 * (double)bytes / tt * 1e-9;
            out->read_gbs = read > out->read_gbs ? read : out->read_gbs;
            out->copy_gbs = copy > out->copy_gbs ? copy : out->copy_gbs;
            out->triad_gbs = triad > out->triad_gbs ? triad : out->triad_gbs;
            keep_best(out, read, widths[w]);
            keep_best(out, copy, widths[w]);
            keep_best(out, triad, widths[w]);
        }
        clReleaseProgram(p);
    }
    return st;
}

/* The FMA rate of `width`-float chains, in GFLOP/s. */
static kp_status fp32_at(peak_ctx *c, int width, cl_mem outbuf, size_t out_elems, double *gflops)
{
    cl_program p;
    kp_status st = build(c, width, &p);
    if (st != KP_OK)
        return st;
    cl_int err;
    cl_kernel k = clCreateKernel(p, "peak_fma", &err);
    if (!k) {
        clReleaseProgram(p);
        return kp__cl_fail(&c->b->sink, err, "clCreateKernel", "peak_fma");
    }
    float seed = 1.0f;
    int iterations = 64;
    size_t global = c->global < out_elems ? c->global : out_elems;
    double t = 0;
    const void *v[] = {&outbuf, &seed, &iterations};
    const size_t sz[] = {sizeof outbuf, sizeof seed, sizeof iterations};
    /* Grow the work until one launch takes long enough to time reliably. */
    for (int round = 0; round < 12; round++) {
        if ((st = set_args(c, k, 3, v, sz)) != KP_OK || (st = timed(c, k, global, &t)) != KP_OK)
            break;
        if (t > 0.02 || iterations >= (1 << 20))
            break;
        iterations *= t < 0.002 ? 8 : 2;
    }
    if (st == KP_OK)
        st = median_time(c, k, global, &t);
    if (st == KP_OK)
        *gflops = (double)global * iterations * 8.0 * width * 2.0 / t * 1e-9;
    clReleaseKernel(k);
    clReleaseProgram(p);
    return st;
}

/* The best of float4 and float16 chains: GPUs split either into scalar lanes, while a CPU
 * target's compiler keeps float4 chains in half of an AVX-512 register (PoCL on an EPYC:
 * 117 GFLOP/s with float4, 234 with float16, where OpenBLAS's SGEMM reaches about 190). */
static kp_status fp32(peak_ctx *c, cl_mem outbuf, size_t out_elems, kp_peak *out)
{
    static const int widths[] = {4, 16};
    kp_status st = KP_OK;
    out->fp32_gflops = 0;
    for (size_t w = 0; st == KP_OK && w < sizeof widths / sizeof widths[0]; w++) {
        double g = 0;
        st = fp32_at(c, widths[w], outbuf, out_elems, &g);
        if (st == KP_OK)
            kp__sink_log(&c->b->sink, KP_LOG_DEBUG, "peak: float%d FMA chains %.1f GFLOP/s",
                         widths[w], g);
        if (st == KP_OK && g > out->fp32_gflops)
            out->fp32_gflops = g;
    }
    return st;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static kp_status latency(peak_ctx *c, cl_mem outbuf, kp_peak *out)
{
    cl_program p;
    kp_status st = build(c, 1, &p);
    if (st != KP_OK)
        return st;
    cl_int err;
    cl_kernel k = clCreateKernel(p, "peak_empty", &err);
    if (!k) {
        clReleaseProgram(p);
        return kp__cl_fail(&c->b->sink, err, "clCreateKernel", "peak_empty");
    }
    clSetKernelArg(k, 0, sizeof outbuf, &outbuf);
    double queued[LATENCY_LAUNCHES], trip[LATENCY_LAUNCHES];
    size_t one = 1, local = 1;
    for (int i = -3; i < LATENCY_LAUNCHES && st == KP_OK; i++) {
        cl_event ev;
        double t0 = now();
        err = clEnqueueNDRangeKernel(c->b->queue, k, 1, NULL, &one, &local, 0, NULL, &ev);
        if (err == CL_SUCCESS)
            err = clWaitForEvents(1, &ev);
        double t1 = now();
        cl_ulong q = 0, s = 0;
        if (err == CL_SUCCESS)
            err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_QUEUED, sizeof q, &q, NULL);
        if (err == CL_SUCCESS)
            err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof s, &s, NULL);
        if (err != CL_SUCCESS) {
            st = kp__cl_fail(&c->b->sink, err, "latency measurement", NULL);
        } else if (i >= 0) {
            queued[i] = s > q ? (double)(s - q) * 1e-3 : 0.0;
            trip[i] = (t1 - t0) * 1e6;
        }
        clReleaseEvent(ev);
    }
    if (st == KP_OK) {
        out->launch_us = median(queued, LATENCY_LAUNCHES);
        out->roundtrip_us = median(trip, LATENCY_LAUNCHES);
    }
    clReleaseKernel(k);
    clReleaseProgram(p);
    return st;
}

kp_status kp__cl_peak(kp__backend *be, kp_peak *out)
{
    const kp_device_info *d = &be->info;
    /* GPUs stream best with wide workgroups; CPUs (PoCL) with narrow ones. */
    peak_ctx c = {.b = be, .local = d->type == KP_DEVICE_GPU ? 256 : 64};
    if (c.local > d->max_workgroup)
        c.local = d->max_workgroup;
    /* Buffers well past the last-level cache (a multiple of 16 vectors of 16 floats times the
     * workgroup, so every stream divides evenly); a GPU needs more to reach steady state. */
    size_t bytes = d->type == KP_DEVICE_GPU ? (size_t)1 << 30 : (size_t)128 << 20;
    while (bytes > d->max_alloc / 2 && bytes > ((size_t)1 << 20))
        bytes /= 2;
    /* Enough work-items to fill every compute unit many times over. */
    c.global = (size_t)d->compute_units * (d->type == KP_DEVICE_GPU ? 2048 : 64) * c.local;
    cl_int err;
    cl_mem a = clCreateBuffer(c.b->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    cl_mem b = a ? clCreateBuffer(c.b->context, CL_MEM_READ_WRITE, bytes, NULL, &err) : NULL;
    cl_mem dd = b ? clCreateBuffer(c.b->context, CL_MEM_READ_WRITE, bytes, NULL, &err) : NULL;
    kp_status st = KP_OK;
    if (!dd) {
        st = kp__cl_fail(&be->sink, err, "clCreateBuffer", "3 x %zu bytes for peak measurement",
                         bytes);
    } else {
        float zero = 0.25f;
        clEnqueueFillBuffer(c.b->queue, a, &zero, sizeof zero, 0, bytes, 0, NULL, NULL);
        clEnqueueFillBuffer(c.b->queue, b, &zero, sizeof zero, 0, bytes, 0, NULL, NULL);
        clEnqueueFillBuffer(c.b->queue, dd, &zero, sizeof zero, 0, bytes, 0, NULL, NULL);
        st = bandwidth(&c, a, b, dd, bytes, out);
        if (st == KP_OK)
            st = fp32(&c, a, bytes / 4, out);
        if (st == KP_OK)
            st = latency(&c, a, out);
    }
    if (dd)
        clReleaseMemObject(dd);
    if (b)
        clReleaseMemObject(b);
    if (a)
        clReleaseMemObject(a);
    return st;
}
