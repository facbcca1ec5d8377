/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The NCCL transport (issue #29): where every rank drives its own NVIDIA GPU, whose OpenCL imports
 * CUDA memory (cl_khr_external_memory_opaque_fd), and libcuda.so.1 and libnccl.so.2 load, the
 * buffers of kp_comm_buffer_create are CUDA allocations imported into OpenCL, and NCCL all-reduces
 * them in place, GPU to GPU: no host copy. bench/probes/nccl-interop-probe.c showed the import
 * coherent both ways and the hand-off (release to CUDA, acquire back) at 0.01 ms on two H200s.
 * Nothing here is called where the device lacks the extension: a machine without CUDA never
 * loads it.
 */
/* clCreateBufferWithProperties is OpenCL 3.0's; the target's default hides it. */
#undef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "comm-internal.h"
#include "cuda-nccl.h"

/* The scale kernel's work-group size, fixed. */
#define GROUP ((size_t)256)

/* MEAN: the sum divided by the number of ranks, correctly rounded, as the other transports'
 * last step. */
static const char scale_source[] =
    "__kernel void kp_comm_scale(__global float *x, ulong at, ulong n, float ranks)\n"
    "{\n"
    "    const ulong i = get_global_id(0);\n"
    "    if (i < n)\n"
    "        x[at + i] = x[at + i] / ranks;\n"
    "}\n";

/* A buffer of kp_comm_buffer_create on this transport: CUDA's allocation and OpenCL's import. */
typedef struct nccl_mem {
    struct nccl_mem *next;
    struct comm_nccl *owner; /* NULL once its communicator is gone */
    cl_mem mem;
    cu_device dev; /* its primary context is retained for the allocation's life */
    cu_context ctx;
    cu_mem_handle handle;
    cu_ptr ptr;
    size_t bytes;
    int created, reserved, mapped;
    clEnqueueReleaseExternalMemObjectsKHR_fn release; /* hands it back to CUDA before deletion */
} nccl_mem;

struct comm_nccl {
    nccl_comm comm;
    cu_device dev;
    cu_context ctx; /* the device's primary context, NCCL's */
    cu_stream stream;
    int ordinal;
    cl_program program;
    cl_kernel scale;
    clEnqueueAcquireExternalMemObjectsKHR_fn acquire;
    clEnqueueReleaseExternalMemObjectsKHR_fn release;
    nccl_mem *mems; /* under mems_lock */
};

/* The libraries load once per process and stay: a buffer's CUDA memory may outlive every
 * communicator, and NCCL keeps threads of its own. */
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static kp_cuda_api cu;
static kp_nccl_api nccl;
static int loaded;
static char load_why[FAILURE_BYTES];
static char nccl_path[FAILURE_BYTES];
/* Guards every communicator's list of buffers: a buffer's destructor may run on any thread. */
static pthread_mutex_t mems_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *cu_err(cu_result r)
{
    const char *s = NULL;
    return cu.GetErrorName && cu.GetErrorName(r, &s) == 0 && s ? s : "unknown CUresult";
}

static void load(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    const char *missing = NULL;
    if (!lib) {
        snprintf(load_why, sizeof load_why, "libcuda.so.1 does not load: %s", dlerror());
        return;
    }
    if (kp_cuda_load(lib, &cu, &missing)) {
        snprintf(load_why, sizeof load_why, "libcuda.so.1 lacks %s", missing);
        return;
    }
    const char *given = getenv("KP_NCCL");
    char why[FAILURE_BYTES];
    void *nl = kp_nccl_open(given && *given ? given : NULL, nccl_path, why, sizeof why);
    if (!nl) {
        comm_text(load_why, sizeof load_why, "%s (KP_NCCL names it)", why);
        return;
    }
    if (kp_nccl_load(nl, &nccl, &missing)) {
        comm_text(load_why, sizeof load_why, "%s lacks %s", nccl_path, missing);
        return;
    }
    cu_result r = cu.Init(0);
    if (r) {
        snprintf(load_why, sizeof load_why, "cuInit failed: %s (%d)", cu_err(r), r);
        return;
    }
    loaded = 1;
}

static int has_ext(const char *exts, const char *name)
{
    const size_t n = strlen(name);
    for (const char *p = exts; (p = strstr(p, name)); p += n)
        if ((p == exts || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return 1;
    return 0;
}

/* The CUDA device whose UUID is the OpenCL device's (cl_khr_device_uuid): 0, or -1 with why. */
static int find_device(const unsigned char *uuid, struct comm_nccl *n, char *no)
{
    int count = 0;
    cu_result r = cu.DeviceGetCount(&count);
    for (int i = 0; !r && i < count; i++) {
        cu_device d = 0;
        struct cu_uuid u;
        if ((r = cu.DeviceGet(&d, i)) || (r = cu.DeviceGetUuid(&u, d)))
            break;
        if (!memcmp(u.bytes, uuid, 16)) {
            n->dev = d;
            n->ordinal = i;
            return 0;
        }
    }
    if (r)
        snprintf(no, FAILURE_BYTES, "listing the CUDA devices failed: %s", cu_err(r));
    else
        snprintf(no, FAILURE_BYTES,
                 "no CUDA device has the OpenCL device's UUID (of %d; CUDA_VISIBLE_DEVICES?)",
                 count);
    return -1;
}

/* What rules NCCL out on this rank, into `no`; else sets up everything but the NCCL
 * communicator. */
static void check_local(kp_comm *c, struct comm_nccl *n, char *no)
{
    cl_device_id dev = NULL;
    cl_platform_id platform = NULL;
    char exts[8192] = "";
    if (!c->context) {
        snprintf(no, FAILURE_BYTES, "the runtime has no OpenCL device (the host device)");
        return;
    }
    kp_runtime_opencl(c->rt, NULL, NULL, (void **)&dev);
    if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, sizeof exts - 1, exts, NULL) != CL_SUCCESS ||
        clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof platform, &platform, NULL) != CL_SUCCESS) {
        snprintf(no, FAILURE_BYTES, "the device's extensions could not be read");
        return;
    }
    static const char *const needed[] = {"cl_khr_external_memory_opaque_fd", "cl_khr_device_uuid"};
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++)
        if (!has_ext(exts, needed[i])) {
            snprintf(no, FAILURE_BYTES,
                     "the device's OpenCL lacks %s (it cannot import CUDA memory: NVIDIA's GPUs "
                     "have it)",
                     needed[i]);
            return;
        }
    n->acquire = (clEnqueueAcquireExternalMemObjectsKHR_fn)clGetExtensionFunctionAddressForPlatform(
        platform, "clEnqueueAcquireExternalMemObjectsKHR");
    n->release = (clEnqueueReleaseExternalMemObjectsKHR_fn)clGetExtensionFunctionAddressForPlatform(
        platform, "clEnqueueReleaseExternalMemObjectsKHR");
    if (!n->acquire || !n->release) {
        snprintf(no, FAILURE_BYTES,
                 "the platform has no clEnqueueAcquire/ReleaseExternalMemObjectsKHR");
        return;
    }
    pthread_once(&load_once, load);
    if (!loaded) {
        snprintf(no, FAILURE_BYTES, "%s", load_why);
        return;
    }
    unsigned char uuid[16];
    if (clGetDeviceInfo(dev, CL_DEVICE_UUID_KHR, sizeof uuid, uuid, NULL) != CL_SUCCESS) {
        snprintf(no, FAILURE_BYTES, "the device's UUID could not be read");
        return;
    }
    if (find_device(uuid, n, no))
        return;
    int vmm = 0, fd = 0;
    cu.DeviceGetAttribute(&vmm, K_CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, n->dev);
    cu.DeviceGetAttribute(&fd, K_CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                          n->dev);
    if (!vmm || !fd) {
        snprintf(no, FAILURE_BYTES,
                 "CUDA device %d cannot export its memory as a file descriptor (virtual memory "
                 "management %s, POSIX fd handles %s)",
                 n->ordinal, vmm ? "yes" : "no", fd ? "yes" : "no");
        return;
    }
    cu_result r = cu.DevicePrimaryCtxRetain(&n->ctx, n->dev);
    if (r) {
        snprintf(no, FAILURE_BYTES, "cuDevicePrimaryCtxRetain failed: %s", cu_err(r));
        return;
    }
    cu_context was = NULL;
    if (!(r = cu.CtxPushCurrent(n->ctx))) {
        r = cu.StreamCreate(&n->stream, K_CU_STREAM_NON_BLOCKING);
        cu.CtxPopCurrent(&was);
    }
    if (r) {
        snprintf(no, FAILURE_BYTES, "creating a CUDA stream failed: %s", cu_err(r));
        return;
    }
    const char *src = scale_source;
    cl_int err = CL_SUCCESS;
    n->program = clCreateProgramWithSource(c->context, 1, &src, NULL, &err);
    if (n->program)
        err = clBuildProgram(n->program, 1, &dev, "-cl-fp32-correctly-rounded-divide-sqrt", NULL,
                             NULL);
    if (err == CL_SUCCESS)
        n->scale = clCreateKernel(n->program, "kp_comm_scale", &err);
    if (err != CL_SUCCESS)
        snprintf(no, FAILURE_BYTES, "building the scale kernel failed: OpenCL error %d", (int)err);
}

static void free_state(struct comm_nccl *n)
{
    cu_context was = NULL;
    if (n->ctx && !cu.CtxPushCurrent(n->ctx)) {
        if (n->stream) {
            cu.StreamSynchronize(n->stream);
            cu.StreamDestroy(n->stream);
        }
        if (n->comm)
            nccl.CommDestroy(n->comm);
        cu.CtxPopCurrent(&was);
    }
    if (n->ctx)
        cu.DevicePrimaryCtxRelease(n->dev);
    if (n->scale)
        clReleaseKernel(n->scale);
    if (n->program)
        clReleaseProgram(n->program);
    free(n);
}

kp_status comm_nccl_open(kp_comm *c, char *no)
{
    static const char fn[] = "kp_comm_create";
    struct comm_nccl *n = calloc(1, sizeof *n);
    if (!n)
        snprintf(no, FAILURE_BYTES, "out of host memory");
    else
        check_local(c, n, no);
    int ok = 0;
    kp_status st = comm_agree_ok(c, fn, no, &ok);
    nccl_unique_id id;
    memset(&id, 0, sizeof id);
    nccl_result r = 0;
    if (st == KP_OK && ok && c->rank == 0 && (r = nccl.GetUniqueId(&id)))
        snprintf(no, FAILURE_BYTES, "ncclGetUniqueId failed: %s", nccl.GetErrorString(r));
    if (st == KP_OK && ok)
        st = comm_agree_ok(c, fn, no, &ok);
    if (st == KP_OK && ok) {
        int rc = MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, c->comm);
        if (rc != MPI_SUCCESS)
            st = comm_mpi_fail(c, fn, "MPI_Bcast", rc);
    }
    if (st == KP_OK && ok) {
        /* Collective over the ranks: each waits here for the others to join. */
        cu_context was = NULL;
        cu.CtxPushCurrent(n->ctx);
        if ((r = nccl.CommInitRank(&n->comm, c->size, id, c->rank))) {
            n->comm = NULL;
            snprintf(no, FAILURE_BYTES, "ncclCommInitRank failed: %s", nccl.GetErrorString(r));
        }
        cu.CtxPopCurrent(&was);
        st = comm_agree_ok(c, fn, no, &ok);
    }
    if (st != KP_OK || !ok) {
        if (n)
            free_state(n);
        return st;
    }
    c->nccl = n;
    return KP_OK;
}

void comm_nccl_close(kp_comm *c)
{
    struct comm_nccl *n = c->nccl;
    if (!n)
        return;
    /* Buffers still alive keep their memory: they no longer name a communicator. */
    pthread_mutex_lock(&mems_lock);
    for (nccl_mem *m = n->mems; m; m = m->next)
        m->owner = NULL;
    pthread_mutex_unlock(&mems_lock);
    free_state(n);
    c->nccl = NULL;
}

static void mem_free(nccl_mem *m)
{
    cu_context was = NULL;
    if (m->ctx && !cu.CtxPushCurrent(m->ctx)) {
        if (m->mapped)
            cu.MemUnmap(m->ptr, m->bytes);
        if (m->reserved)
            cu.MemAddressFree(m->ptr, m->bytes);
        if (m->created)
            cu.MemRelease(m->handle);
        cu.CtxPopCurrent(&was);
        cu.DevicePrimaryCtxRelease(m->dev);
    }
    free(m);
}

/* OpenCL deleted the import: CUDA's memory goes after it, from whatever thread dropped the last
 * reference (kp_buffer_destroy, kp_runtime_destroy). */
static void CL_CALLBACK mem_gone(cl_mem mem, void *user)
{
    nccl_mem *m = user;
    pthread_mutex_lock(&mems_lock);
    if (m->owner)
        for (nccl_mem **at = &m->owner->mems; *at; at = &(*at)->next)
            if (*at == m) {
                *at = m->next;
                break;
            }
    pthread_mutex_unlock(&mems_lock);
    mem_free(m);
}

/* OpenCL gives the import back to CUDA before deleting it: NVIDIA's driver never finished
 * deleting an import still acquired, and clReleaseContext then waited for it forever (every NCCL
 * program hung at its end on two H200s). */
static void hand_back_on(const nccl_mem *m, cl_mem mem, cl_command_queue queue)
{
    if (queue && m->release(queue, 1, &mem, 0, NULL, NULL) == CL_SUCCESS)
        clFinish(queue);
}

static void hand_back(kp_runtime *rt, void *mem, void *user)
{
    cl_command_queue queue = NULL;
    if (kp_runtime_opencl(rt, NULL, (void **)&queue, NULL) == KP_OK)
        hand_back_on(user, mem, queue);
}

/* CUDA allocates `bytes` on this rank's GPU, exportable as a file descriptor, and OpenCL imports
 * it (the probe's first variant, coherent both ways on H200s) and acquires it. */
static kp_status nccl_buffer(kp_comm *c, size_t bytes, kp_buffer **out)
{
    static const char fn[] = "kp_comm_buffer_create";
    struct comm_nccl *n = c->nccl;
    nccl_mem *m = calloc(1, sizeof *m);
    if (!m)
        return comm_fail(c, KP_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    struct cu_alloc_prop prop;
    memset(&prop, 0, sizeof prop);
    prop.type = K_CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requested_handle_types = K_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.location.type = K_CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = n->ordinal;
    struct cu_access_desc access = {{K_CU_MEM_LOCATION_TYPE_DEVICE, n->ordinal},
                                    K_CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    size_t gran = 0;
    int fd = -1;
    const char *call = "cuDevicePrimaryCtxRetain";
    cu_result r = cu.DevicePrimaryCtxRetain(&m->ctx, n->dev);
    cu_context was = NULL;
    if (r) {
        m->ctx = NULL;
        goto cuda_failed;
    }
    m->dev = n->dev;
    call = "cuCtxPushCurrent";
    if ((r = cu.CtxPushCurrent(m->ctx)))
        goto cuda_failed;
    call = "cuMemGetAllocationGranularity";
    if (!(r = cu.MemGetAllocationGranularity(&gran, &prop,
                                             K_CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))) {
        if (!gran)
            gran = (size_t)2 << 20;
        m->bytes = (bytes + gran - 1) / gran * gran;
        call = "cuMemCreate";
        m->created = !(r = cu.MemCreate(&m->handle, m->bytes, &prop, 0));
    }
    if (!r) {
        call = "cuMemAddressReserve";
        m->reserved = !(r = cu.MemAddressReserve(&m->ptr, m->bytes, gran, 0, 0));
    }
    if (!r) {
        call = "cuMemMap";
        m->mapped = !(r = cu.MemMap(m->ptr, m->bytes, 0, m->handle, 0));
    }
    if (!r) {
        call = "cuMemSetAccess";
        r = cu.MemSetAccess(m->ptr, m->bytes, &access, 1);
    }
    if (!r) {
        call = "cuMemExportToShareableHandle";
        r = cu.MemExportToShareableHandle(&fd, m->handle,
                                          K_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    }
    cu.CtxPopCurrent(&was);
    if (r)
        goto cuda_failed;
    cl_device_id dev = NULL;
    kp_runtime_opencl(c->rt, NULL, NULL, (void **)&dev);
    cl_mem_properties props[] = {
        CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR, (cl_mem_properties)fd,
        CL_MEM_DEVICE_HANDLE_LIST_KHR,           (cl_mem_properties)(uintptr_t)dev,
        CL_MEM_DEVICE_HANDLE_LIST_END_KHR,       0};
    cl_int err = CL_SUCCESS;
    m->mem =
        clCreateBufferWithProperties(c->context, props, CL_MEM_READ_WRITE, m->bytes, NULL, &err);
    if (!m->mem) {
        /* A successful import owns the descriptor; a failed one leaves it to us. */
        close(fd);
        mem_free(m);
        return comm_fail(c, KP_ERR_CL, fn,
                         "importing %zu bytes of CUDA memory into OpenCL failed: OpenCL error %d",
                         bytes, (int)err);
    }
    /* From here the import owns m: CUDA's memory goes when OpenCL deletes the import. */
    if ((err = clSetMemObjectDestructorCallback(m->mem, mem_gone, m)) != CL_SUCCESS) {
        clReleaseMemObject(m->mem);
        mem_free(m);
        return comm_fail(c, KP_ERR_CL, fn, "clSetMemObjectDestructorCallback: OpenCL error %d",
                         (int)err);
    }
    cl_mem mem = m->mem;
    pthread_mutex_lock(&mems_lock);
    m->owner = n;
    m->next = n->mems;
    n->mems = m;
    pthread_mutex_unlock(&mems_lock);
    err = n->acquire(c->queue, 1, &mem, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clFinish(c->queue);
    m->release = n->release;
    kp_status st = err == CL_SUCCESS ? kp_buffer_wrap_external(c->rt, mem, bytes, hand_back, m, out)
                                     : comm_fail(c, KP_ERR_CL, fn,
                                                 "clEnqueueAcquireExternalMemObjectsKHR: OpenCL "
                                                 "error %d",
                                                 (int)err);
    /* The buffer holds its own reference, or nothing does and the import goes now. */
    if (st != KP_OK)
        hand_back_on(m, mem, c->queue);
    clReleaseMemObject(mem);
    return st;
cuda_failed:
    mem_free(m);
    return comm_fail(c, KP_ERR_CL, fn, "%s failed for %zu bytes on CUDA device %d: %s (%d)", call,
                     bytes, n->ordinal, cu_err(r), r);
}

kp_status kp_comm_buffer_create(kp_comm *c, size_t bytes, kp_buffer **out)
{
    static const char fn[] = "kp_comm_buffer_create";
    if (out)
        *out = NULL;
    kp_status st = comm_usable(c, fn);
    if (st != KP_OK)
        return st;
    if (!out || bytes == 0)
        return comm_fail(c, KP_ERR_INVALID_ARG, fn, "out is NULL or size is 0");
    return c->nccl ? nccl_buffer(c, bytes, out) : kp_buffer_create(c->rt, bytes, out);
}

/* buf's CUDA address where it is this communicator's NCCL memory, else 0. */
static cu_ptr cuda_address(kp_comm *c, const kp_buffer *buf)
{
    cu_ptr ptr = 0;
    cl_mem mem = kp_buffer_cl_mem(buf);
    if (!c->nccl || !mem)
        return 0;
    pthread_mutex_lock(&mems_lock);
    for (nccl_mem *m = c->nccl->mems; m && !ptr; m = m->next)
        if (m->mem == mem)
            ptr = m->ptr;
    pthread_mutex_unlock(&mems_lock);
    return ptr;
}

int comm_nccl_owns(kp_comm *c, const kp_buffer *buf)
{
    return cuda_address(c, buf) != 0;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Waits for the stream (NCCL's all-reduce) until the deadline, watching NCCL's own errors and the
 * other ranks' failure notices; NCCL's communicator is aborted where it will not finish, so that
 * no rank hangs in a peer that is gone. */
static kp_status wait_stream(kp_comm *c, const char *fn)
{
    struct comm_nccl *n = c->nccl;
    const double start = now(), deadline = start + c->timeout_s;
    const struct timespec pause = {0, 200000};
    for (;;) {
        cu_result r = cu.StreamQuery(n->stream);
        if (r == 0)
            return KP_OK;
        nccl_result async = 0;
        kp_status st = KP_OK;
        if (r != K_CU_ERROR_NOT_READY)
            st = comm_fail(c, KP_ERR_IO, fn, "rank %d: the NCCL all-reduce failed: %s", c->rank,
                           cu_err(r));
        else if (nccl.CommGetAsyncError(n->comm, &async) == 0 && async &&
                 async != K_NCCL_IN_PROGRESS)
            st = comm_fail(c, KP_ERR_IO, fn, "rank %d: NCCL failed: %s", c->rank,
                           nccl.GetErrorString(async));
        else if (comm_peer_failed(c, fn))
            st = KP_ERR_IO;
        else if (now() > deadline)
            st = comm_fail(c, KP_ERR_IO, fn,
                           "rank %d timed out after %g s in NCCL's all-reduce (collective %llu; "
                           "KP_COMM_TIMEOUT or kp_comm_options.timeout_s sets the limit)",
                           c->rank, c->timeout_s, (unsigned long long)c->calls);
        if (st != KP_OK) {
            nccl.CommAbort(n->comm);
            n->comm = NULL;
            return c->broken ? st : comm_break(c, st);
        }
        if (now() - start > 2.0)
            nanosleep(&pause, NULL);
        else
            sched_yield();
    }
}

/* An OpenCL failure on this rank's side: the others are told. */
static kp_status cl_failure(kp_comm *c, const char *fn, const char *what, cl_int err)
{
    comm_fail(c, KP_ERR_CL, fn, "rank %d: %s failed: OpenCL error %d", c->rank, what, (int)err);
    return comm_break(c, KP_ERR_CL);
}

kp_status comm_allreduce_nccl(kp_comm *c, const char *fn, kp_buffer *buf, size_t offset,
                              size_t count, kp_comm_op op)
{
    kp_status st = comm_agree(c, fn, op == KP_COMM_MEAN ? CALL_NCCL_MEAN : CALL_NCCL_SUM, count, 0);
    if (st != KP_OK || count == 0)
        return st;
    struct comm_nccl *n = c->nccl;
    cl_mem mem = kp_buffer_cl_mem(buf);
    const cu_ptr at = cuda_address(c, buf) + offset * sizeof(float);
    /* The queue is in order: the release follows the work queued on the buffer, and finishing it
     * hands CUDA the memory with that work done. */
    cl_int err = n->release(c->queue, 1, &mem, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clFinish(c->queue);
    if (err != CL_SUCCESS)
        return cl_failure(
            c, fn, "handing the buffer to CUDA (clEnqueueReleaseExternalMemObjectsKHR)", err);
    cu_context was = NULL;
    cu_result r = cu.CtxPushCurrent(n->ctx);
    nccl_result nr = 0;
    if (r)
        st = comm_break(c, comm_fail(c, KP_ERR_IO, fn, "rank %d: cuCtxPushCurrent failed: %s",
                                     c->rank, cu_err(r)));
    else if ((nr = nccl.AllReduce((const void *)(uintptr_t)at, (void *)(uintptr_t)at, count,
                                  K_NCCL_FLOAT32, K_NCCL_SUM, n->comm, n->stream)))
        st = comm_break(c, comm_fail(c, KP_ERR_IO, fn, "rank %d: ncclAllReduce failed: %s", c->rank,
                                     nccl.GetErrorString(nr)));
    else
        st = wait_stream(c, fn);
    if (!r)
        cu.CtxPopCurrent(&was);
    /* Taken back whatever happened: the buffer stays usable by OpenCL. */
    err = n->acquire(c->queue, 1, &mem, 0, NULL, NULL);
    if (err == CL_SUCCESS && st == KP_OK && op == KP_COMM_MEAN) {
        const cl_ulong first = offset, len = count;
        const cl_float ranks = (cl_float)c->size;
        const size_t global = (count + GROUP - 1) / GROUP * GROUP, local = GROUP;
        err = clSetKernelArg(n->scale, 0, sizeof mem, &mem);
        if (err == CL_SUCCESS)
            err = clSetKernelArg(n->scale, 1, sizeof first, &first);
        if (err == CL_SUCCESS)
            err = clSetKernelArg(n->scale, 2, sizeof len, &len);
        if (err == CL_SUCCESS)
            err = clSetKernelArg(n->scale, 3, sizeof ranks, &ranks);
        if (err == CL_SUCCESS)
            err =
                clEnqueueNDRangeKernel(c->queue, n->scale, 1, NULL, &global, &local, 0, NULL, NULL);
    }
    if (err == CL_SUCCESS)
        err = clFinish(c->queue);
    if (st == KP_OK && err != CL_SUCCESS)
        return cl_failure(c, fn, "taking the buffer back from CUDA or dividing for the mean", err);
    return st;
}
