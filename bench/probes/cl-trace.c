/* SPDX-License-Identifier: Apache-2.0 */
/* cl-trace: an LD_PRELOAD library that counts the OpenCL calls a program makes and the host time
 * spent in each, printed to stderr at exit (most time first). It answers "where does the host's
 * time go between kernels" without a profiler on the machine:
 *     LD_PRELOAD=build/bin/libcl-trace.so build/bin/bench-cnn-layers --device nvidia
 * Only the calls a launch path makes are wrapped; the rest pass through untouched. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { MAX_FNS = 64 };
typedef struct fn_stat {
    const char *name;
    unsigned long calls;
    double seconds;
} fn_stat;
static fn_stat fns[MAX_FNS];
static int n_fns;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int slot(const char *name)
{
    for (int i = 0; i < n_fns; i++)
        if (fns[i].name == name)
            return i;
    if (n_fns == MAX_FNS)
        return MAX_FNS - 1;
    fns[n_fns].name = name;
    return n_fns++;
}

static int by_time(const void *a, const void *b)
{
    double x = ((const fn_stat *)a)->seconds, y = ((const fn_stat *)b)->seconds;
    return x < y ? 1 : x > y ? -1 : 0;
}

__attribute__((destructor)) static void report(void)
{
    qsort(fns, (size_t)n_fns, sizeof fns[0], by_time);
    fprintf(stderr, "cl-trace: %-34s %10s %12s %10s\n", "call", "calls", "host ms", "mean us");
    for (int i = 0; i < n_fns; i++)
        fprintf(stderr, "cl-trace: %-34s %10lu %12.3f %10.2f\n", fns[i].name, fns[i].calls,
                1e3 * fns[i].seconds, fns[i].calls ? 1e6 * fns[i].seconds / fns[i].calls : 0.0);
}

#define WRAP(ret, fn, params, args)                                                                \
    ret fn params                                                                                  \
    {                                                                                              \
        static ret(*real) params;                                                                  \
        if (!real)                                                                                 \
            *(void **)&real = dlsym(RTLD_NEXT, #fn);                                               \
        double trace_t0_ = now();                                                                  \
        ret trace_r_ = real args;                                                                  \
        double trace_dt_ = now() - trace_t0_;                                                      \
        pthread_mutex_lock(&lock);                                                                 \
        int trace_s_ = slot(#fn);                                                                  \
        fns[trace_s_].calls++;                                                                     \
        fns[trace_s_].seconds += trace_dt_;                                                        \
        pthread_mutex_unlock(&lock);                                                               \
        return trace_r_;                                                                           \
    }

WRAP(cl_mem, clCreateBuffer, (cl_context c, cl_mem_flags f, size_t n, void *h, cl_int *e),
     (c, f, n, h, e))
WRAP(cl_int, clReleaseMemObject, (cl_mem m), (m))
WRAP(cl_kernel, clCreateKernel, (cl_program p, const char *n, cl_int *e), (p, n, e))
WRAP(cl_int, clReleaseKernel, (cl_kernel k), (k))
WRAP(cl_int, clSetKernelArg, (cl_kernel k, cl_uint i, size_t n, const void *v), (k, i, n, v))
WRAP(cl_int, clEnqueueNDRangeKernel,
     (cl_command_queue q, cl_kernel k, cl_uint d, const size_t *o, const size_t *g, const size_t *l,
      cl_uint n, const cl_event *w, cl_event *e),
     (q, k, d, o, g, l, n, w, e))
WRAP(cl_int, clFinish, (cl_command_queue q), (q))
WRAP(cl_int, clFlush, (cl_command_queue q), (q))
WRAP(cl_int, clWaitForEvents, (cl_uint n, const cl_event *e), (n, e))
WRAP(cl_int, clReleaseEvent, (cl_event e), (e))
WRAP(cl_int, clGetEventProfilingInfo,
     (cl_event e, cl_profiling_info p, size_t n, void *v, size_t *r), (e, p, n, v, r))
WRAP(cl_int, clEnqueueWriteBuffer,
     (cl_command_queue q, cl_mem m, cl_bool b, size_t o, size_t n, const void *p, cl_uint nw,
      const cl_event *w, cl_event *e),
     (q, m, b, o, n, p, nw, w, e))
WRAP(cl_int, clEnqueueReadBuffer,
     (cl_command_queue q, cl_mem m, cl_bool b, size_t o, size_t n, void *p, cl_uint nw,
      const cl_event *w, cl_event *e),
     (q, m, b, o, n, p, nw, w, e))
WRAP(cl_int, clEnqueueCopyBuffer,
     (cl_command_queue q, cl_mem s, cl_mem d, size_t so, size_t dof, size_t n, cl_uint nw,
      const cl_event *w, cl_event *e),
     (q, s, d, so, dof, n, nw, w, e))
WRAP(cl_int, clEnqueueFillBuffer,
     (cl_command_queue q, cl_mem m, const void *p, size_t ps, size_t o, size_t n, cl_uint nw,
      const cl_event *w, cl_event *e),
     (q, m, p, ps, o, n, nw, w, e))
WRAP(cl_int, clEnqueueMarkerWithWaitList,
     (cl_command_queue q, cl_uint n, const cl_event *w, cl_event *e), (q, n, w, e))
WRAP(cl_int, clEnqueueBarrierWithWaitList,
     (cl_command_queue q, cl_uint n, const cl_event *w, cl_event *e), (q, n, w, e))
WRAP(cl_int, clBuildProgram,
     (cl_program p, cl_uint n, const cl_device_id *d, const char *o,
      void(CL_CALLBACK *cb)(cl_program, void *), void *u),
     (p, n, d, o, cb, u))
WRAP(cl_program, clCreateProgramWithSource,
     (cl_context c, cl_uint n, const char **s, const size_t *l, cl_int *e), (c, n, s, l, e))
WRAP(cl_program, clCreateProgramWithBinary,
     (cl_context c, cl_uint n, const cl_device_id *d, const size_t *l, const unsigned char **b,
      cl_int *st, cl_int *e),
     (c, n, d, l, b, st, e))
WRAP(cl_int, clGetDeviceInfo, (cl_device_id d, cl_device_info p, size_t n, void *v, size_t *r),
     (d, p, n, v, r))
WRAP(cl_int, clGetKernelWorkGroupInfo,
     (cl_kernel k, cl_device_id d, cl_kernel_work_group_info p, size_t n, void *v, size_t *r),
     (k, d, p, n, v, r))
WRAP(cl_int, clGetProgramInfo, (cl_program g, cl_program_info p, size_t n, void *v, size_t *r),
     (g, p, n, v, r))
WRAP(cl_int, clGetContextInfo, (cl_context c, cl_context_info p, size_t n, void *v, size_t *r),
     (c, p, n, v, r))
WRAP(cl_int, clGetCommandQueueInfo,
     (cl_command_queue q, cl_command_queue_info p, size_t n, void *v, size_t *r), (q, p, n, v, r))
WRAP(cl_int, clGetMemObjectInfo, (cl_mem m, cl_mem_info p, size_t n, void *v, size_t *r),
     (m, p, n, v, r))
WRAP(cl_int, clGetPlatformInfo,
     (cl_platform_id m, cl_platform_info p, size_t n, void *v, size_t *r), (m, p, n, v, r))
WRAP(cl_int, clGetKernelInfo, (cl_kernel k, cl_kernel_info p, size_t n, void *v, size_t *r),
     (k, p, n, v, r))
WRAP(cl_int, clGetProgramBuildInfo,
     (cl_program g, cl_device_id d, cl_program_build_info p, size_t n, void *v, size_t *r),
     (g, d, p, n, v, r))
WRAP(cl_int, clRetainMemObject, (cl_mem m), (m))
WRAP(cl_int, clRetainKernel, (cl_kernel k), (k))
WRAP(cl_int, clRetainProgram, (cl_program p), (p))
WRAP(cl_int, clReleaseProgram, (cl_program p), (p))
WRAP(cl_int, clGetEventInfo, (cl_event e, cl_event_info p, size_t n, void *v, size_t *r),
     (e, p, n, v, r))
