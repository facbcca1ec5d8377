/* SPDX-License-Identifier: Apache-2.0 */
/* Kernel arguments, NDRange enqueues and the events that time a launch. */
#include <stdio.h>
#include <string.h>

#include "cl-internal.h"

kp_status kp__cl_kernel_arg(kp__backend *b, kp_clkernel *ck, uint32_t index, size_t size,
                            const void *value)
{
    cl_int err = clSetKernelArg(ck->kernel, index, size, value);
    if (err != CL_SUCCESS)
        return kp__cl_fail(&b->sink, err, "clSetKernelArg", "kernel %s, entry %s, argument %u",
                           ck->name, ck->entry, index);
    return KP_OK;
}

/* Keeps the first and the latest event of a launch; the ones between are not needed. */
static void record(kp__event_record *e, cl_event ev)
{
    if (!e->first) {
        e->first = ev;
        return;
    }
    if (e->last)
        clReleaseEvent(e->last);
    e->last = ev;
}

static void format_sizes(char *buf, size_t size, uint32_t dims, const size_t *v)
{
    size_t n = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; v && i < dims && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%zu", i ? ", " : "", v[i]);
    if (!v)
        snprintf(buf, size, "auto");
}

kp_status kp__cl_enqueue(kp__backend *b, kp_clkernel *ck, uint32_t dims, const size_t *global,
                         const size_t *local, kp__event_record *record_to)
{
    cl_event ev = NULL;
    cl_int err = clEnqueueNDRangeKernel(b->queue, ck->kernel, dims, NULL, global, local, 0, NULL,
                                        record_to ? &ev : NULL);
    if (err != CL_SUCCESS) {
        char g[96], lo[96];
        format_sizes(g, sizeof g, dims, global);
        format_sizes(lo, sizeof lo, dims, local);
        return kp__cl_fail(&b->sink, err, "clEnqueueNDRangeKernel",
                           "kernel %s, entry %s, global [%s], local [%s]", ck->name, ck->entry, g,
                           lo);
    }
    if (ev)
        record(record_to, ev);
    return KP_OK;
}

kp_status kp__cl_clone_create(kp__backend *b, kp_clkernel *ck, void **out, uint32_t *n_args)
{
    cl_int err;
    cl_kernel k = clCreateKernel(ck->program, ck->entry, &err);
    if (err == CL_SUCCESS)
        err = clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof *n_args, n_args, NULL);
    if (err != CL_SUCCESS) {
        if (k)
            clReleaseKernel(k);
        return kp__cl_fail(&b->sink, err, "clCreateKernel", "entry %s (a prepared launch's copy)",
                           ck->entry);
    }
    *out = k;
    return KP_OK;
}

kp_status kp__cl_clone_arg(kp__backend *b, void *clone, uint32_t index, size_t size,
                           const void *value)
{
    cl_int err = clSetKernelArg(clone, index, size, value);
    return err ? kp__cl_fail(&b->sink, err, "clSetKernelArg", "argument %u of a prepared launch",
                             index)
               : KP_OK;
}

void kp__cl_clone_release(kp__backend *b, void *clone)
{
    if (clone)
        clReleaseKernel(clone);
}

kp_status kp__cl_replay(kp__backend *b, const kp__command *cmds, size_t n, kp__event_record *event)
{
    cl_command_queue q = b->queue;
    for (size_t i = 0; i < n; i++) {
        const kp__command *c = &cmds[i];
        cl_event ev = NULL;
        cl_int err =
            clEnqueueNDRangeKernel(q, c->clone, c->dims, NULL, c->global,
                                   c->has_local ? c->local : NULL, 0, NULL, event ? &ev : NULL);
        if (err != CL_SUCCESS)
            return kp__cl_fail(&b->sink, err, "clEnqueueNDRangeKernel",
                               "command %zu of a prepared launch", i);
        if (ev)
            record(event, ev);
    }
    return KP_OK;
}

void kp__cl_event_mark(kp__backend *b, kp__event_record *e)
{
    if (!e || e->first)
        return;
    cl_event ev = NULL;
    cl_int err = clEnqueueMarkerWithWaitList(b->queue, 0, NULL, &ev);
    if (err == CL_SUCCESS)
        record(e, ev);
    else /* the launch goes on: only its time would be short, so say so */
        kp__sink_log(&b->sink, KP_LOG_WARN,
                     "clEnqueueMarkerWithWaitList failed: %s (%d): the launch's time covers only "
                     "its last library call",
                     kp__cl_error_name(err), (int)err);
}

void kp__cl_event_adopt(kp__backend *b, kp__event_record *e, void *event)
{
    if (!event)
        return;
    if (e)
        record(e, event);
    else
        clReleaseEvent(event);
}

kp_status kp__cl_event_wait(kp__backend *b, kp__event_record *ev)
{
    cl_event last = ev->last ? ev->last : ev->first;
    if (!last)
        return KP_OK;
    cl_int err = clWaitForEvents(1, (cl_event *)&last);
    return err ? kp__cl_fail(&b->sink, err, "clWaitForEvents", NULL) : KP_OK;
}

kp_status kp__cl_event_elapsed(kp__backend *b, kp__event_record *ev, double *seconds)
{
    *seconds = 0;
    kp_status st = kp__cl_event_wait(b, ev);
    if (st != KP_OK || !ev->first)
        return st;
    cl_ulong start = 0, end = 0;
    cl_event last = ev->last ? ev->last : ev->first;
    cl_int err =
        clGetEventProfilingInfo(ev->first, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL);
    if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo(last, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL);
    if (err != CL_SUCCESS)
        return kp__cl_fail(&b->sink, err, "clGetEventProfilingInfo", NULL);
    *seconds = end > start ? (double)(end - start) * 1e-9 : 0.0;
    return KP_OK;
}

void kp__cl_event_release(kp__backend *b, kp__event_record *ev)
{
    if (ev->first)
        clReleaseEvent(ev->first);
    if (ev->last)
        clReleaseEvent(ev->last);
    ev->first = ev->last = NULL;
}
