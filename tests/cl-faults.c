/* SPDX-License-Identifier: Apache-2.0 */
/* Fault injection at the OpenCL API: the entry points that allocate, build and enqueue, each
 * forwarded to the next definition (the ICD loader's) unless it is the armed call. */
#include "cl-faults.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CL/cl.h>

static atomic_int armed;
static atomic_long counted, fail_at;
static _Atomic(const char *) failed;

void cl_faults_arm(long n)
{
    atomic_store(&counted, 0);
    atomic_store(&fail_at, n);
    atomic_store(&failed, NULL);
    atomic_store(&armed, 1);
}

void cl_faults_disarm(void)
{
    atomic_store(&armed, 0);
}

long cl_faults_calls(void)
{
    return atomic_load(&counted);
}

const char *cl_faults_failed(void)
{
    return atomic_load(&failed);
}

/* Whether this call of `name` is the one to fail. */
static int inject(const char *name)
{
    if (!atomic_load(&armed))
        return 0;
    long n = atomic_fetch_add(&counted, 1) + 1;
    if (n != atomic_load(&fail_at))
        return 0;
    atomic_store(&failed, name);
    return 1;
}

/* The definition the library would have called without this file. */
static void *next(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        fprintf(stderr, "cl-faults: no %s after the test executable\n", name);
        abort();
    }
    return f;
}

#define NEXT(name) ((__typeof__(name) *)next(#name))

/* Calls that create an object fail with NULL and the error in *err; the others return it. */
#define FAIL_CREATE(name, code, err)                                                               \
    do {                                                                                           \
        if (inject(#name)) {                                                                       \
            if (err)                                                                               \
                *(err) = (code);                                                                   \
            return NULL;                                                                           \
        }                                                                                          \
    } while (0)

#define FAIL_CALL(name, code)                                                                      \
    do {                                                                                           \
        if (inject(#name))                                                                         \
            return (code);                                                                         \
    } while (0)

/* ---- live objects --------------------------------------------------------------------------- */

enum kind { MEM, PROGRAM, KERNEL, EVENT, KINDS };
static const char *const kind_names[KINDS] = {"cl_mem", "cl_program", "cl_kernel", "cl_event"};

typedef struct tracked {
    void *handle;
    enum kind kind;
    long refs;
    int cached; /* a program CLBlast keeps for the process */
} tracked;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static tracked *objects;
static size_t n_objects, cap_objects;

/* Whether the code at `caller` belongs to CLBlast. */
static int from_clblast(const void *caller)
{
    Dl_info info;
    return dladdr(caller, &info) && info.dli_fname && strstr(info.dli_fname, "libclblast");
}

static void track(void *handle, enum kind kind, int cached)
{
    if (!handle)
        return;
    pthread_mutex_lock(&lock);
    if (n_objects == cap_objects) {
        cap_objects = cap_objects ? 2 * cap_objects : 256;
        objects = realloc(objects, cap_objects * sizeof *objects);
        if (!objects)
            abort();
    }
    objects[n_objects++] = (tracked){handle, kind, 1, cached};
    pthread_mutex_unlock(&lock);
}

/* Adds `delta` to the count of `handle`; forgets it at zero. Objects made before the test or by
 * calls not wrapped here are not counted. */
static void count(void *handle, long delta)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_objects; i++)
        if (objects[i].handle == handle) {
            objects[i].refs += delta;
            if (objects[i].refs <= 0)
                objects[i] = objects[--n_objects];
            break;
        }
    pthread_mutex_unlock(&lock);
}

long cl_faults_live(char *out, size_t size)
{
    long n[KINDS] = {0}, total = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_objects; i++)
        if (!objects[i].cached) {
            n[objects[i].kind]++;
            total++;
        }
    pthread_mutex_unlock(&lock);
    size_t used = 0;
    if (size)
        out[0] = '\0';
    for (int k = 0; k < KINDS; k++)
        if (n[k] && used < size)
            used += (size_t)snprintf(out + used, size - used, "%s%ld %s", used ? ", " : "", n[k],
                                     kind_names[k]);
    return total;
}

#define RETAIN_RELEASE(type, retain, release)                                                      \
    cl_int retain(type object)                                                                     \
    {                                                                                              \
        cl_int err = NEXT(retain)(object);                                                         \
        if (err == CL_SUCCESS)                                                                     \
            count(object, 1);                                                                      \
        return err;                                                                                \
    }                                                                                              \
    cl_int release(type object)                                                                    \
    {                                                                                              \
        cl_int err = NEXT(release)(object);                                                        \
        if (err == CL_SUCCESS)                                                                     \
            count(object, -1);                                                                     \
        return err;                                                                                \
    }

RETAIN_RELEASE(cl_mem, clRetainMemObject, clReleaseMemObject)
RETAIN_RELEASE(cl_program, clRetainProgram, clReleaseProgram)
RETAIN_RELEASE(cl_kernel, clRetainKernel, clReleaseKernel)
RETAIN_RELEASE(cl_event, clRetainEvent, clReleaseEvent)

/* The status of an enqueue, having counted the event it made. */
static cl_int enqueued(cl_int err, cl_event *event)
{
    if (err == CL_SUCCESS && event)
        track(*event, EVENT, 0);
    return err;
}

/* ---- buffer allocation -------------------------------------------------------------------- */

cl_mem clCreateBuffer(cl_context context, cl_mem_flags flags, size_t size, void *host_ptr,
                      cl_int *err)
{
    FAIL_CREATE(clCreateBuffer, CL_MEM_OBJECT_ALLOCATION_FAILURE, err);
    cl_mem m = NEXT(clCreateBuffer)(context, flags, size, host_ptr, err);
    track(m, MEM, 0);
    return m;
}

/* ---- program builds ----------------------------------------------------------------------- */

cl_program clCreateProgramWithSource(cl_context context, cl_uint n, const char **strings,
                                     const size_t *lengths, cl_int *err)
{
    FAIL_CREATE(clCreateProgramWithSource, CL_OUT_OF_HOST_MEMORY, err);
    cl_program p = NEXT(clCreateProgramWithSource)(context, n, strings, lengths, err);
    track(p, PROGRAM, from_clblast(__builtin_return_address(0)));
    return p;
}

cl_program clCreateProgramWithBinary(cl_context context, cl_uint n, const cl_device_id *devices,
                                     const size_t *lengths, const unsigned char **binaries,
                                     cl_int *status, cl_int *err)
{
    FAIL_CREATE(clCreateProgramWithBinary, CL_OUT_OF_HOST_MEMORY, err);
    cl_program p =
        NEXT(clCreateProgramWithBinary)(context, n, devices, lengths, binaries, status, err);
    track(p, PROGRAM, from_clblast(__builtin_return_address(0)));
    return p;
}

cl_int clBuildProgram(cl_program program, cl_uint n, const cl_device_id *devices,
                      const char *options, void(CL_CALLBACK *notify)(cl_program, void *),
                      void *user)
{
    FAIL_CALL(clBuildProgram, CL_BUILD_PROGRAM_FAILURE);
    return NEXT(clBuildProgram)(program, n, devices, options, notify, user);
}

cl_kernel clCreateKernel(cl_program program, const char *name, cl_int *err)
{
    FAIL_CREATE(clCreateKernel, CL_OUT_OF_RESOURCES, err);
    cl_kernel k = NEXT(clCreateKernel)(program, name, err);
    track(k, KERNEL, 0);
    return k;
}

/* ---- launches and transfers --------------------------------------------------------------- */

cl_int clSetKernelArg(cl_kernel kernel, cl_uint index, size_t size, const void *value)
{
    FAIL_CALL(clSetKernelArg, CL_OUT_OF_RESOURCES);
    return NEXT(clSetKernelArg)(kernel, index, size, value);
}

cl_int clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel kernel, cl_uint dims,
                              const size_t *offset, const size_t *global, const size_t *local,
                              cl_uint n_wait, const cl_event *wait, cl_event *event)
{
    FAIL_CALL(clEnqueueNDRangeKernel, CL_OUT_OF_RESOURCES);
    return enqueued(
        NEXT(clEnqueueNDRangeKernel)(q, kernel, dims, offset, global, local, n_wait, wait, event),
        event);
}

cl_int clEnqueueReadBuffer(cl_command_queue q, cl_mem mem, cl_bool blocking, size_t offset,
                           size_t size, void *ptr, cl_uint n_wait, const cl_event *wait,
                           cl_event *event)
{
    FAIL_CALL(clEnqueueReadBuffer, CL_OUT_OF_RESOURCES);
    return enqueued(
        NEXT(clEnqueueReadBuffer)(q, mem, blocking, offset, size, ptr, n_wait, wait, event), event);
}

cl_int clEnqueueWriteBuffer(cl_command_queue q, cl_mem mem, cl_bool blocking, size_t offset,
                            size_t size, const void *ptr, cl_uint n_wait, const cl_event *wait,
                            cl_event *event)
{
    FAIL_CALL(clEnqueueWriteBuffer, CL_OUT_OF_RESOURCES);
    return enqueued(
        NEXT(clEnqueueWriteBuffer)(q, mem, blocking, offset, size, ptr, n_wait, wait, event),
        event);
}

cl_int clEnqueueCopyBuffer(cl_command_queue q, cl_mem src, cl_mem dst, size_t src_offset,
                           size_t dst_offset, size_t size, cl_uint n_wait, const cl_event *wait,
                           cl_event *event)
{
    FAIL_CALL(clEnqueueCopyBuffer, CL_OUT_OF_RESOURCES);
    return enqueued(
        NEXT(clEnqueueCopyBuffer)(q, src, dst, src_offset, dst_offset, size, n_wait, wait, event),
        event);
}

cl_int clEnqueueFillBuffer(cl_command_queue q, cl_mem mem, const void *pattern, size_t pattern_size,
                           size_t offset, size_t size, cl_uint n_wait, const cl_event *wait,
                           cl_event *event)
{
    FAIL_CALL(clEnqueueFillBuffer, CL_OUT_OF_RESOURCES);
    return enqueued(
        NEXT(clEnqueueFillBuffer)(q, mem, pattern, pattern_size, offset, size, n_wait, wait, event),
        event);
}

/* ---- host calls in the queue (blas' host-blas route) --------------------------------------- */

void *clEnqueueMapBuffer(cl_command_queue q, cl_mem mem, cl_bool blocking, cl_map_flags flags,
                         size_t offset, size_t size, cl_uint n_wait, const cl_event *wait,
                         cl_event *event, cl_int *err)
{
    FAIL_CREATE(clEnqueueMapBuffer, CL_OUT_OF_RESOURCES, err);
    cl_int rc = CL_SUCCESS;
    void *p =
        NEXT(clEnqueueMapBuffer)(q, mem, blocking, flags, offset, size, n_wait, wait, event, &rc);
    enqueued(rc, event);
    if (err)
        *err = rc;
    return p;
}

cl_int clEnqueueUnmapMemObject(cl_command_queue q, cl_mem mem, void *ptr, cl_uint n_wait,
                               const cl_event *wait, cl_event *event)
{
    FAIL_CALL(clEnqueueUnmapMemObject, CL_OUT_OF_RESOURCES);
    return enqueued(NEXT(clEnqueueUnmapMemObject)(q, mem, ptr, n_wait, wait, event), event);
}

cl_int clEnqueueNativeKernel(cl_command_queue q, void(CL_CALLBACK *fn)(void *), void *args,
                             size_t cb_args, cl_uint n_mems, const cl_mem *mems,
                             const void **mem_locs, cl_uint n_wait, const cl_event *wait,
                             cl_event *event)
{
    FAIL_CALL(clEnqueueNativeKernel, CL_OUT_OF_RESOURCES);
    return enqueued(NEXT(clEnqueueNativeKernel)(q, fn, args, cb_args, n_mems, mems, mem_locs,
                                                n_wait, wait, event),
                    event);
}

cl_int clEnqueueMarkerWithWaitList(cl_command_queue q, cl_uint n_wait, const cl_event *wait,
                                   cl_event *event)
{
    FAIL_CALL(clEnqueueMarkerWithWaitList, CL_OUT_OF_RESOURCES);
    return enqueued(NEXT(clEnqueueMarkerWithWaitList)(q, n_wait, wait, event), event);
}

cl_int clFinish(cl_command_queue q)
{
    FAIL_CALL(clFinish, CL_OUT_OF_RESOURCES);
    return NEXT(clFinish)(q);
}

cl_int clWaitForEvents(cl_uint n, const cl_event *events)
{
    FAIL_CALL(clWaitForEvents, CL_OUT_OF_RESOURCES);
    return NEXT(clWaitForEvents)(n, events);
}
