/* SPDX-License-Identifier: Apache-2.0 */
/* The communicator: creation over a duplicate of the application's MPI communicator, failures
 * (messages, breaking, notices to the other ranks), host staging. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm-internal.h"

kp_comm_options kp_comm_options_default(void)
{
    return (kp_comm_options){.struct_size = sizeof(kp_comm_options)};
}

void comm_text(char *dst, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, size, fmt, ap);
    va_end(ap);
}

kp_status comm_fail(kp_comm *c, kp_status status, const char *fn, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return kp_last_error_set(c ? c->rt : NULL, status, "%s: %s", fn, text);
}

kp_status comm_mpi_fail(kp_comm *c, const char *fn, const char *call, int rc)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "MPI error %d", rc);
    return comm_fail(c, KP_ERR_IO, fn, "%s failed: %s", call, text);
}

/* Sends `text` to every other rank as a failure notice, waiting at most a second for the sends:
 * a peer that is gone must not hold this rank up. */
static void notify(kp_comm *c, const char *text)
{
    char *sent = c->failure_sent;
    snprintf(sent, FAILURE_BYTES, "%s", text);
    MPI_Request *reqs = calloc((size_t)c->size, sizeof *reqs);
    if (!reqs)
        return;
    int n = 0;
    for (int r = 0; r < c->size; r++)
        if (r != c->rank && MPI_Isend(sent, FAILURE_BYTES, MPI_CHAR, r, TAG_FAILURE, c->comm,
                                      &reqs[n]) == MPI_SUCCESS)
            n++;
    const struct timespec pause = {0, 1000000};
    int done = 0;
    for (int tries = 0; tries < 1000 && !done; tries++) {
        if (MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
            break;
        if (!done)
            nanosleep(&pause, NULL);
    }
    for (int i = 0; !done && i < n; i++)
        if (reqs[i] != MPI_REQUEST_NULL)
            MPI_Request_free(&reqs[i]);
    free(reqs);
}

kp_status comm_break(kp_comm *c, kp_status status)
{
    if (!c->broken) {
        const char *why = kp_last_error(c->rt);
        c->broken = strdup(why);
        char text[FAILURE_BYTES];
        snprintf(text, sizeof text, "%s", why);
        notify(c, text);
    }
    return status;
}

kp_status comm_usable(kp_comm *c, const char *fn)
{
    if (!c)
        return kp_last_error_set(NULL, KP_ERR_INVALID_ARG, "%s: NULL communicator", fn);
    if (c->broken)
        return comm_fail(c, KP_ERR_IO, fn,
                         "the communicator is unusable after an earlier failure: %s", c->broken);
    return KP_OK;
}

kp_status comm_host_reserve(kp_comm *c, comm_host *h, size_t bytes)
{
    if (bytes <= h->bytes)
        return KP_OK;
    comm_host_release(c, h);
    if (c->context) {
        cl_int err = CL_SUCCESS;
        cl_mem m = clCreateBuffer(c->context, CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &err);
        void *p = m ? clEnqueueMapBuffer(c->queue, m, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes,
                                         0, NULL, NULL, &err)
                    : NULL;
        if (p) {
            *h = (comm_host){.ptr = p, .bytes = bytes, .pinned = m};
            return KP_OK;
        }
        if (m)
            clReleaseMemObject(m);
        /* Pinned memory is an optimisation: fall back to plain memory. */
    }
    h->ptr = malloc(bytes);
    if (!h->ptr)
        return comm_fail(c, KP_ERR_OUT_OF_MEMORY, "kp_comm", "%zu bytes of host staging", bytes);
    h->bytes = bytes;
    return KP_OK;
}

void comm_host_release(kp_comm *c, comm_host *h)
{
    if (h->pinned) {
        clEnqueueUnmapMemObject(c->queue, h->pinned, h->ptr, 0, NULL, NULL);
        clFinish(c->queue);
        clReleaseMemObject(h->pinned);
    } else {
        free(h->ptr);
    }
    *h = (comm_host){0};
}

kp_status comm_check_range(kp_comm *c, const char *fn, const kp_buffer *buf, size_t offset,
                           size_t bytes)
{
    if (!buf)
        return comm_fail(c, KP_ERR_INVALID_ARG, fn, "buffer is NULL");
    const size_t size = kp_buffer_size(buf);
    if (offset > size || bytes > size - offset)
        return comm_fail(c, KP_ERR_INVALID_ARG, fn,
                         "range [%zu, %zu) bytes is outside the buffer of %zu bytes", offset,
                         offset + bytes, size);
    return comm_transfers_allowed(c, fn, buf);
}

kp_status comm_transfers_allowed(kp_comm *c, const char *fn, const kp_buffer *buf)
{
    /* An empty read checks what a read would (the buffer is the runtime's, this thread is not
     * recording a graph on it) and moves nothing. */
    char none;
    if (kp_buffer_read(c->rt, buf, 0, 0, &none) != KP_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", kp_last_error(c->rt));
        return comm_fail(c, KP_ERR_INVALID_ARG, fn, "%s", why);
    }
    return KP_OK;
}

static double env_timeout(void)
{
    const char *v = getenv("KP_COMM_TIMEOUT");
    char *end = NULL;
    double t = v ? strtod(v, &end) : 0;
    return v && end != v && *end == '\0' && t > 0 ? t : 300;
}

int comm_env_choice(const char *name, const char *const *values)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    for (int i = 0; values[i]; i++)
        if (!strcmp(v, values[i]))
            return i;
    return -1;
}

kp_status kp_comm_create(kp_runtime *rt, MPI_Comm comm, const kp_comm_options *options,
                         kp_comm **out)
{
    static const char fn[] = "kp_comm_create";
    if (out)
        *out = NULL;
    if (!rt || !out)
        return kp_last_error_set(rt, KP_ERR_INVALID_ARG, "%s: NULL runtime or out", fn);
    kp_comm_options o = kp_comm_options_default();
    if (options) {
        if (options->struct_size != 0 && options->struct_size != sizeof o)
            return kp_last_error_set(rt, KP_ERR_INVALID_ARG,
                                     "%s: kp_comm_options.struct_size is %u, expected %zu or 0", fn,
                                     options->struct_size, sizeof o);
        o = *options;
    }
    const uint32_t transports = KP_COMM_STAGED | KP_COMM_SHARED | KP_COMM_NCCL;
    if ((o.flags & ~transports) || (o.flags & (o.flags - 1)) || !(o.timeout_s >= 0))
        return kp_last_error_set(rt, KP_ERR_INVALID_ARG,
                                 "%s: unknown flags 0x%x (or several transports) or a negative "
                                 "timeout",
                                 fn, (unsigned)o.flags);
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (!inited || finalized)
        return kp_last_error_set(rt, KP_ERR_INVALID_ARG,
                                 "%s: MPI is not initialised (call MPI_Init first) or already "
                                 "finalised",
                                 fn);
    static const char *const bucket_modes[] = {"pipelined", "blocking", "single-queue", NULL},
                             *const allreduce_modes[] = {"auto", "one-shot", "two-shot", NULL};
    const int mode = comm_env_choice("KP_COMM_BUCKETS", bucket_modes),
              allreduce = comm_env_choice("KP_COMM_ALLREDUCE", allreduce_modes);
    if (mode < 0 || allreduce < 0)
        return kp_last_error_set(rt, KP_ERR_INVALID_ARG, "%s: %s is \"%s\", not %s", fn,
                                 mode < 0 ? "KP_COMM_BUCKETS" : "KP_COMM_ALLREDUCE",
                                 getenv(mode < 0 ? "KP_COMM_BUCKETS" : "KP_COMM_ALLREDUCE"),
                                 mode < 0 ? "pipelined, blocking or single-queue"
                                          : "auto, one-shot or two-shot");
    kp_comm *c = calloc(1, sizeof *c);
    if (!c)
        return kp_last_error_set(rt, KP_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    c->buckets = mode;
    c->allreduce = allreduce;
    c->rt = rt;
    c->timeout_s = o.timeout_s > 0 ? o.timeout_s : env_timeout();
    c->comm = MPI_COMM_NULL;
    c->failure_req = MPI_REQUEST_NULL;
    c->shm.node = MPI_COMM_NULL;
    c->shm.seg.win = MPI_WIN_NULL;
    c->shm.buckets.win = MPI_WIN_NULL;
    int rc = MPI_Comm_dup(comm, &c->comm);
    kp_status st = rc == MPI_SUCCESS ? KP_OK : comm_mpi_fail(c, fn, "MPI_Comm_dup", rc);
    if (st == KP_OK && (rc = MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN)) != MPI_SUCCESS)
        st = comm_mpi_fail(c, fn, "MPI_Comm_set_errhandler", rc);
    if (st == KP_OK) {
        MPI_Comm_rank(c->comm, &c->rank);
        MPI_Comm_size(c->comm, &c->size);
        rc = MPI_Irecv(c->failure_text, FAILURE_BYTES, MPI_CHAR, MPI_ANY_SOURCE, TAG_FAILURE,
                       c->comm, &c->failure_req);
        if (rc != MPI_SUCCESS)
            st = comm_mpi_fail(c, fn, "MPI_Irecv", rc);
    }
    /* Host devices have no OpenCL: staging is plain memory and transfers are blocking. */
    if (st == KP_OK &&
        kp_runtime_opencl(rt, (void **)&c->context, (void **)&c->queue, NULL) != KP_OK)
        c->context = NULL, c->queue = NULL;
    if (st == KP_OK)
        st = comm_shared_open(c, o.flags);
    if (st != KP_OK) {
        kp_comm_destroy(c);
        return st;
    }
    *out = c;
    return KP_OK;
}

void kp_comm_destroy(kp_comm *c)
{
    if (!c)
        return;
    kp_finish(c->rt);
    /* Before the failure channel closes: freeing the segment waits for the other ranks. */
    comm_shared_close(c);
    comm_nccl_close(c);
    if (c->failure_req != MPI_REQUEST_NULL) {
        MPI_Cancel(&c->failure_req);
        MPI_Wait(&c->failure_req, MPI_STATUS_IGNORE);
    }
    comm_host_release(c, &c->staging);
    comm_host_release(c, &c->slices);
    if (c->comm != MPI_COMM_NULL)
        MPI_Comm_free(&c->comm);
    free(c->broken);
    free(c);
}

int kp_comm_rank(const kp_comm *c)
{
    return c ? c->rank : -1;
}

int kp_comm_size(const kp_comm *c)
{
    return c ? c->size : -1;
}

const char *kp_comm_transport(const kp_comm *c, const char **why)
{
    if (why)
        *why = c ? c->why : NULL;
    return !c ? NULL : c->nccl ? "nccl" : c->shared ? "shared" : "staged";
}

kp_status kp_comm_fail(kp_comm *c, const char *reason)
{
    if (!c)
        return kp_last_error_set(NULL, KP_ERR_INVALID_ARG, "kp_comm_fail: NULL communicator");
    if (!c->broken) {
        char text[FAILURE_BYTES];
        snprintf(text, sizeof text, "%s", reason ? reason : "(no reason given)");
        c->broken = strdup(text);
        notify(c, text);
    }
    return KP_OK;
}
