/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nccl-interop-probe (#29): can NVIDIA's OpenCL and CUDA share device memory, so that NCCL
 * all-reduces an OpenCL buffer in place, GPU to GPU, without a host copy? cl_khr_external_memory
 * only imports into OpenCL memory another API exported (the specification has no memory export),
 * so CUDA allocates and OpenCL imports:
 *
 *   1. OpenCL: the NVIDIA platform's GPUs, the interop extensions each reports, and each GPU's
 *      CUDA ordinal, matched by UUID (cl_khr_device_uuid against cuDeviceGetUuid), else by PCI
 *      address (cl_khr_pci_bus_info), else by order.
 *   2. On each of two GPUs: CUDA allocates memory exportable as a file descriptor (cuMemCreate,
 *      cuMemAddressReserve, cuMemMap, cuMemSetAccess), exports it (cuMemExportToShareableHandle)
 *      and OpenCL imports it (clCreateBufferWithProperties with
 *      CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR); then CUDA writes, OpenCL acquires and reads, and
 *      OpenCL writes, releases and CUDA reads. Each way of importing that the specification and
 *      the driver offer is tried and reported: the opaque descriptor with and without
 *      CL_MEM_DEVICE_HANDLE_LIST_KHR, and a dma-buf of the same memory
 *      (cuMemGetHandleForAddressRange) where both sides support one.
 *   3. NCCL over both GPUs in one process (ncclCommInitAll): OpenCL writes, releases; NCCL
 *      all-reduces each GPU's CUDA pointer in place; OpenCL acquires and checks the sums. Then
 *      times 1-256 MB (median of --reps): NCCL alone, and the hand-off a real use pays (release,
 *      all-reduce, stream synchronisation, acquire, each side finished before the other starts),
 *      the release and acquire alone (a cost that grows with the size would mean a copy), all
 *      against the host-staging limit measured in the same run (both GPUs' pinned reads, then
 *      writes, of the same size through OpenCL into mapped CL_MEM_ALLOC_HOST_PTR memory). Bus
 *      bandwidth as NCCL's tests define it: size / time x 2 (P - 1) / P.
 *   4. The same hand-off ordered on the devices instead of by the host: per GPU, two binary
 *      OpenCL semaphores exported as opaque fds (cl_khr_external_semaphore_opaque_fd; CUDA can
 *      only import semaphores) and imported by CUDA (cuImportExternalSemaphore): OpenCL releases
 *      and signals, the CUDA stream waits, NCCL reduces, the stream signals, OpenCL waits and
 *      acquires; the host waits once per round. Checked and timed like step 3; its failure is
 *      reported apart and does not change steps 1-3's verdict.
 *
 * No CUDA or NCCL headers are needed: libcuda.so.1 and libnccl.so.2 are opened with dlopen and
 * the few types they need are declared from cuda.h and nccl.h in comm/cuda-nccl.h. Built with
 * -DKP_CUDA_NCCL_CHECK_ABI and those headers on the include path, the program first checks those
 * declarations against them (scripts/gpu/nccl-interop.sh does so where PyTorch's wheels ship the
 * headers).
 *
 * libnccl.so.2 is looked for in this order: --nccl PATH; the dynamic loader's search path
 * (LD_LIBRARY_PATH, ld.so.cache); the NVIDIA pip wheel inside $VIRTUAL_ENV, /opt/torch/.venv,
 * /usr/local/lib/python3.* and /usr/lib/python3 (nvidia/nccl/lib/libnccl.so.2).
 *
 *   nccl-interop-probe [--nccl PATH] [--check-mb 16] [--max-mb 256] [--reps 10] [--json FILE]
 *
 * Exit status: 0 steps 1-3 ran and every check passed (step 4 is reported apart); 2 not
 * applicable here (no NVIDIA OpenCL platform, fewer than two of its GPUs, no libcuda.so.1 or no
 * libnccl.so.2); 3 an interop step failed or a check found wrong data (the verdict line says
 * which step and why); 1 bad arguments.
 * A diagnostic run by hand on the GPU machine (scripts/gpu/nccl-interop.sh); not a test.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <dlfcn.h>
#include <glob.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda-nccl.h"

static kp_cuda_api cu;
static kp_nccl_api nccl;

#ifdef KP_CUDA_NCCL_CHECK_ABI
#define STR_(x) #x
#define STR(x) STR_(x)
/* The symbols the probe loads against those cuda.h's macros make of the API names. */
static int abi_check(void)
{
    static const char *const pairs[][2] = {
        {"cuMemsetD32_v2", STR(cuMemsetD32)},
        {"cuMemcpyDtoH_v2", STR(cuMemcpyDtoH)},
        {"cuMemCreate", STR(cuMemCreate)},
        {"cuMemMap", STR(cuMemMap)},
        {"cuMemSetAccess", STR(cuMemSetAccess)},
        {"cuMemExportToShareableHandle", STR(cuMemExportToShareableHandle)},
        {"cuMemGetHandleForAddressRange", STR(cuMemGetHandleForAddressRange)},
        {"cuMemAddressReserve", STR(cuMemAddressReserve)},
        {"cuMemAddressFree", STR(cuMemAddressFree)},
        {"cuMemUnmap", STR(cuMemUnmap)},
        {"cuMemRelease", STR(cuMemRelease)},
        {"cuDevicePrimaryCtxRetain", STR(cuDevicePrimaryCtxRetain)},
        {"cuCtxSetCurrent", STR(cuCtxSetCurrent)},
        {"cuCtxSynchronize", STR(cuCtxSynchronize)},
        {"cuStreamCreate", STR(cuStreamCreate)},
        {"cuStreamSynchronize", STR(cuStreamSynchronize)},
        {"cuImportExternalSemaphore", STR(cuImportExternalSemaphore)},
        {"cuSignalExternalSemaphoresAsync", STR(cuSignalExternalSemaphoresAsync)},
        {"cuWaitExternalSemaphoresAsync", STR(cuWaitExternalSemaphoresAsync)},
        /* The NCCL transport's (comm/comm-nccl.c). */
        {"cuCtxPushCurrent_v2", STR(cuCtxPushCurrent)},
        {"cuCtxPopCurrent_v2", STR(cuCtxPopCurrent)},
        {"cuStreamQuery", STR(cuStreamQuery)},
        {"cuStreamDestroy_v2", STR(cuStreamDestroy)},
        {"cuDevicePrimaryCtxRelease_v2", STR(cuDevicePrimaryCtxRelease)},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        if (strcmp(pairs[i][0], pairs[i][1])) {
            printf("ABI check: the probe loads %s, cuda.h maps the call to %s\n", pairs[i][0],
                   pairs[i][1]);
            bad = 1;
        }
    printf("ABI check against cuda.h (CUDA_VERSION %d) and nccl.h (NCCL_VERSION_CODE %d): layouts "
           "and enum values match (checked at compile time), symbol names %s\n",
           CUDA_VERSION, NCCL_VERSION_CODE, bad ? "DIFFER" : "match");
    return bad;
}
#endif

#define MAX_GPUS 8
#define MAX_SIZES 8
#define N_VARIANTS 3

enum { EXIT_FEASIBLE = 0, EXIT_USAGE = 1, EXIT_NOT_HERE = 2, EXIT_FAILED = 3 };

struct gpu {
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    char name[256];
    unsigned char uuid[CL_UUID_SIZE_KHR];
    int has_uuid, has_pci;
    cl_device_pci_bus_info_khr pci;
    int ext_mem, ext_mem_fd, ext_mem_dmabuf, sema, ext_sema, ext_sema_fd;
    int cu_ordinal; /* -1: no CUDA device matched */
    const char *matched_by;
    cu_device cu_dev;
    cu_context cu_ctx;
    cu_stream stream;
    /* Step 4: OpenCL semaphores CUDA imported, one for each direction. */
    cl_semaphore_khr to_cuda, to_cl;
    cu_ext_sema ext_to_cuda, ext_to_cl;
};

/* Memory CUDA allocated and exported, as OpenCL imported it. */
struct shared {
    cu_mem_handle handle;
    cu_ptr ptr;
    size_t bytes;
    int created, reserved, mapped;
    cl_mem mem;
    int cl_owns; /* acquired by OpenCL and not yet released */
};

static const char *const variant_name[N_VARIANTS] = {
    "opaque fd + CL_MEM_DEVICE_HANDLE_LIST_KHR",
    "opaque fd, no device list",
    "dma-buf fd + CL_MEM_DEVICE_HANDLE_LIST_KHR",
};

struct variant_result {
    int tried, imported, cuda_to_cl, cl_to_cuda;
    char note[256];
};

struct size_result {
    size_t bytes;
    int sums_ok, sema_ok;
    double nccl_s, handoff_s, own_s, read_s, write_s, sema_s;
};

static cl_platform_id platform;
static clEnqueueAcquireExternalMemObjectsKHR_fn acquire_fn;
static clEnqueueReleaseExternalMemObjectsKHR_fn release_fn;
static int stop_step;
static char stop_why[512];
static int stop_code = EXIT_FEASIBLE;

/* Records the first reason the probe cannot go on; returns -1 for the caller to pass up. */
static int stop(int step, int code, const char *fmt, ...)
{
    if (!stop_step) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(stop_why, sizeof stop_why, fmt, ap);
        va_end(ap);
        stop_step = step;
        stop_code = code;
    }
    return -1;
}

static const char *cu_err(cu_result r)
{
    const char *s = NULL;
    if (cu.GetErrorName && cu.GetErrorName(r, &s) == 0 && s)
        return s;
    return "unknown CUresult";
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

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof t[0], cmp);
    return t[n / 2];
}

static int has_ext(const char *exts, const char *name)
{
    const size_t n = strlen(name);
    for (const char *p = exts; (p = strstr(p, name)); p += n)
        if ((p == exts || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return 1;
    return 0;
}

static void print_handle_types(cl_device_id dev, cl_device_info what, const char *label)
{
    cl_uint types[16];
    size_t got = 0;
    if (clGetDeviceInfo(dev, what, sizeof types, types, &got) != CL_SUCCESS) {
        printf("      %-38s (query failed)\n", label);
        return;
    }
    printf("      %-38s", label);
    if (!got)
        printf(" none");
    for (size_t i = 0; i < got / sizeof types[0]; i++)
        printf(" 0x%x%s", types[i],
               types[i] == CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR ? "(memory opaque fd)"
               : types[i] == CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR ? "(memory dma-buf)"
               : types[i] == CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR     ? "(semaphore opaque fd)"
               : types[i] == CL_SEMAPHORE_HANDLE_SYNC_FD_KHR       ? "(semaphore sync fd)"
                                                                   : "");
    printf("\n");
}

static int device_lists(cl_device_id dev, cl_device_info what, cl_uint type)
{
    cl_uint types[16];
    size_t got = 0;
    if (clGetDeviceInfo(dev, what, sizeof types, types, &got) != CL_SUCCESS)
        return 0;
    for (size_t i = 0; i < got / sizeof types[0]; i++)
        if (types[i] == type)
            return 1;
    return 0;
}

static void uuid_text(const unsigned char *u, char *out)
{
    for (int i = 0; i < 16; i++)
        out += sprintf(out, "%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", u[i]);
}

/* Step 1: the NVIDIA platform's GPUs and what each reports. */
static int find_gpus(struct gpu *g, int *n)
{
    cl_platform_id ps[16];
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(16, ps, &np);
    if (err != CL_SUCCESS || !np)
        return stop(1, EXIT_NOT_HERE, "no OpenCL platform (clGetPlatformIDs: %d)", (int)err);
    for (cl_uint i = 0; i < np && !platform; i++) {
        char name[256] = "", version[256] = "";
        clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        clGetPlatformInfo(ps[i], CL_PLATFORM_VERSION, sizeof version, version, NULL);
        printf("[1] OpenCL platform %u: %s (%s)\n", i, name, version);
        if (strstr(name, "NVIDIA"))
            platform = ps[i];
    }
    if (!platform)
        return stop(1, EXIT_NOT_HERE, "no NVIDIA OpenCL platform here (nothing to probe)");
    cl_device_id ds[MAX_GPUS];
    cl_uint nd = 0;
    err = clGetDeviceIDs(platform, CL_DEVICE_TYPE_GPU, MAX_GPUS, ds, &nd);
    if (err != CL_SUCCESS || !nd)
        return stop(1, EXIT_NOT_HERE, "the NVIDIA platform has no GPU (clGetDeviceIDs: %d)",
                    (int)err);
    *n = (int)nd;
    for (int i = 0; i < *n; i++) {
        struct gpu *d = &g[i];
        d->dev = ds[i];
        d->cu_ordinal = -1;
        clGetDeviceInfo(d->dev, CL_DEVICE_NAME, sizeof d->name, d->name, NULL);
        size_t len = 0;
        clGetDeviceInfo(d->dev, CL_DEVICE_EXTENSIONS, 0, NULL, &len);
        char *exts = calloc(len + 1, 1);
        if (!exts)
            return stop(1, EXIT_FAILED, "out of host memory");
        clGetDeviceInfo(d->dev, CL_DEVICE_EXTENSIONS, len, exts, NULL);
        d->ext_mem = has_ext(exts, "cl_khr_external_memory");
        d->ext_mem_fd = has_ext(exts, "cl_khr_external_memory_opaque_fd");
        d->ext_mem_dmabuf = has_ext(exts, "cl_khr_external_memory_dma_buf");
        d->sema = has_ext(exts, "cl_khr_semaphore");
        d->ext_sema = has_ext(exts, "cl_khr_external_semaphore");
        d->ext_sema_fd = has_ext(exts, "cl_khr_external_semaphore_opaque_fd");
        d->has_uuid = has_ext(exts, "cl_khr_device_uuid") &&
                      clGetDeviceInfo(d->dev, CL_DEVICE_UUID_KHR, sizeof d->uuid, d->uuid, NULL) ==
                          CL_SUCCESS;
        d->has_pci = has_ext(exts, "cl_khr_pci_bus_info") &&
                     clGetDeviceInfo(d->dev, CL_DEVICE_PCI_BUS_INFO_KHR, sizeof d->pci, &d->pci,
                                     NULL) == CL_SUCCESS;
        const int bda = has_ext(exts, "cl_ext_buffer_device_address");
        free(exts);
        char u[40] = "(no cl_khr_device_uuid)";
        if (d->has_uuid)
            uuid_text(d->uuid, u);
        printf("[1] GPU %d: %s, UUID %s\n", i, d->name, u);
        printf("      cl_khr_external_memory %s, _opaque_fd %s, _dma_buf %s\n",
               d->ext_mem ? "yes" : "NO", d->ext_mem_fd ? "yes" : "NO",
               d->ext_mem_dmabuf ? "yes" : "no");
        printf("      cl_khr_semaphore %s, cl_khr_external_semaphore %s, _opaque_fd %s; "
               "cl_ext_buffer_device_address %s\n",
               d->sema ? "yes" : "no", d->ext_sema ? "yes" : "no", d->ext_sema_fd ? "yes" : "no",
               bda ? "yes" : "no");
        if (d->ext_mem)
            print_handle_types(d->dev, CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR,
                               "memory import handle types:");
        if (d->ext_sema) {
            print_handle_types(d->dev, CL_DEVICE_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR,
                               "semaphore import handle types:");
            print_handle_types(d->dev, CL_DEVICE_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR,
                               "semaphore export handle types:");
        }
    }
    printf("[1] OpenCL memory export: none in the specification (cl_khr_external_memory imports "
           "only), so CUDA allocates and OpenCL imports\n");
    return 0;
}

/* Step 1, CUDA side: the driver, and each OpenCL GPU's CUDA ordinal. */
static int match_cuda(struct gpu *g, int n)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return stop(1, EXIT_NOT_HERE, "libcuda.so.1 does not load: %s", dlerror());
    const char *missing = NULL;
    if (kp_cuda_load(lib, &cu, &missing))
        return stop(1, EXIT_NOT_HERE, "libcuda.so.1 lacks %s, which the probe needs", missing);
    cu_result r = cu.Init(0);
    if (r)
        return stop(1, EXIT_NOT_HERE, "cuInit failed: %s (%d)", cu_err(r), r);
    int version = 0, count = 0;
    cu.DriverGetVersion(&version);
    if ((r = cu.DeviceGetCount(&count)))
        return stop(1, EXIT_NOT_HERE, "cuDeviceGetCount failed: %s", cu_err(r));
    printf("[1] CUDA driver API %d.%d, %d device(s)\n", version / 1000, version % 1000 / 10, count);
    struct {
        cu_device dev;
        struct cu_uuid uuid;
        int domain, bus, slot, used;
    } cd[MAX_GPUS];
    if (count > MAX_GPUS)
        count = MAX_GPUS;
    for (int c = 0; c < count; c++) {
        char name[256] = "", u[40];
        int vmm = 0, fd = 0, dmabuf = 0;
        cd[c].used = 0;
        if ((r = cu.DeviceGet(&cd[c].dev, c)) || (r = cu.DeviceGetUuid(&cd[c].uuid, cd[c].dev)))
            return stop(1, EXIT_FAILED, "CUDA device %d: %s", c, cu_err(r));
        cu.DeviceGetName(name, sizeof name, cd[c].dev);
        cu.DeviceGetAttribute(&cd[c].domain, K_CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, cd[c].dev);
        cu.DeviceGetAttribute(&cd[c].bus, K_CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, cd[c].dev);
        cu.DeviceGetAttribute(&cd[c].slot, K_CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, cd[c].dev);
        cu.DeviceGetAttribute(&vmm, K_CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                              cd[c].dev);
        cu.DeviceGetAttribute(
            &fd, K_CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, cd[c].dev);
        cu.DeviceGetAttribute(&dmabuf, K_CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, cd[c].dev);
        uuid_text((const unsigned char *)cd[c].uuid.bytes, u);
        printf("[1] CUDA device %d: %s, UUID %s, PCI %04x:%02x:%02x, virtual memory management "
               "%s, POSIX fd export %s, dma-buf %s\n",
               c, name, u, cd[c].domain, cd[c].bus, cd[c].slot, vmm ? "yes" : "NO",
               fd ? "yes" : "NO", dmabuf ? "yes" : "no");
    }
    /* By UUID; where OpenCL gives none or it matches nothing, by PCI address; else by order (both
     * enumerate identical GPUs in PCI order unless CUDA_DEVICE_ORDER or CUDA_VISIBLE_DEVICES say
     * otherwise), with a warning. */
    static const char *const by[] = {"UUID", "PCI address",
                                     "ORDER ONLY (no UUID or PCI address matched: check it)"};
    for (int i = 0; i < n; i++) {
        for (int pass = 0; pass < 3 && g[i].cu_ordinal < 0; pass++) {
            for (int c = 0; c < count && g[i].cu_ordinal < 0; c++) {
                const int match =
                    pass == 0   ? g[i].has_uuid && !memcmp(g[i].uuid, cd[c].uuid.bytes, 16)
                    : pass == 1 ? g[i].has_pci && (int)g[i].pci.pci_domain == cd[c].domain &&
                                      (int)g[i].pci.pci_bus == cd[c].bus &&
                                      (int)g[i].pci.pci_device == cd[c].slot
                                : c == i;
                if (!match || cd[c].used)
                    continue;
                g[i].cu_ordinal = c;
                g[i].cu_dev = cd[c].dev;
                g[i].matched_by = by[pass];
                cd[c].used = 1;
            }
        }
        if (g[i].cu_ordinal < 0)
            printf("[1] OpenCL GPU %d: no CUDA device matches it\n", i);
        else
            printf("[1] OpenCL GPU %d is CUDA device %d (matched by %s)\n", i, g[i].cu_ordinal,
                   g[i].matched_by);
    }
    return 0;
}

/* A context and queue per GPU (as Kernelport has one runtime per device), CUDA's primary context
 * (the one NCCL's runtime uses) and a stream. */
static int open_gpu(struct gpu *d, int i)
{
    cl_int err;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
    d->ctx = clCreateContext(props, 1, &d->dev, NULL, NULL, &err);
    if (!d->ctx)
        return stop(2, EXIT_FAILED, "GPU %d: clCreateContext: %d", i, (int)err);
    d->q = clCreateCommandQueueWithProperties(d->ctx, d->dev, NULL, &err);
    if (!d->q)
        return stop(2, EXIT_FAILED, "GPU %d: clCreateCommandQueueWithProperties: %d", i, (int)err);
    cu_result r;
    if ((r = cu.DevicePrimaryCtxRetain(&d->cu_ctx, d->cu_dev)) ||
        (r = cu.CtxSetCurrent(d->cu_ctx)) ||
        (r = cu.StreamCreate(&d->stream, K_CU_STREAM_NON_BLOCKING)))
        return stop(2, EXIT_FAILED, "GPU %d: CUDA context or stream: %s", i, cu_err(r));
    return 0;
}

static void shared_free(struct gpu *d, struct shared *s)
{
    if (s->mem) {
        if (s->cl_owns && release_fn(d->q, 1, &s->mem, 0, NULL, NULL) == CL_SUCCESS)
            clFinish(d->q);
        clReleaseMemObject(s->mem);
    }
    cu.CtxSetCurrent(d->cu_ctx);
    if (s->mapped)
        cu.MemUnmap(s->ptr, s->bytes);
    if (s->reserved)
        cu.MemAddressFree(s->ptr, s->bytes);
    if (s->created)
        cu.MemRelease(s->handle);
    memset(s, 0, sizeof *s);
}

/* CUDA allocates at least `bytes` on d, exportable as a POSIX file descriptor, and OpenCL imports
 * it the way `variant` says. On failure writes why into `why` and returns -1. */
static int shared_alloc(struct gpu *d, size_t bytes, int variant, struct shared *s, char *why,
                        size_t why_size)
{
    memset(s, 0, sizeof *s);
    struct cu_alloc_prop prop;
    memset(&prop, 0, sizeof prop);
    prop.type = K_CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requested_handle_types = K_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.location.type = K_CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = d->cu_ordinal;
    struct cu_access_desc access = {{K_CU_MEM_LOCATION_TYPE_DEVICE, d->cu_ordinal},
                                    K_CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    size_t gran = 0;
    int fd = -1;
    cl_mem_properties handle_type = CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR;
    cl_int err = CL_SUCCESS;
    cu_result r;
    const char *call = "cuCtxSetCurrent";
    if ((r = cu.CtxSetCurrent(d->cu_ctx)))
        goto cuda_failed;
    call = "cuMemGetAllocationGranularity";
    if ((r = cu.MemGetAllocationGranularity(&gran, &prop, K_CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)))
        goto cuda_failed;
    if (!gran)
        gran = 2u << 20;
    s->bytes = (bytes + gran - 1) / gran * gran;
    call = "cuMemCreate";
    if ((r = cu.MemCreate(&s->handle, s->bytes, &prop, 0)))
        goto cuda_failed;
    s->created = 1;
    call = "cuMemAddressReserve";
    if ((r = cu.MemAddressReserve(&s->ptr, s->bytes, gran, 0, 0)))
        goto cuda_failed;
    s->reserved = 1;
    call = "cuMemMap";
    if ((r = cu.MemMap(s->ptr, s->bytes, 0, s->handle, 0)))
        goto cuda_failed;
    s->mapped = 1;
    call = "cuMemSetAccess";
    if ((r = cu.MemSetAccess(s->ptr, s->bytes, &access, 1)))
        goto cuda_failed;
    if (variant == 2) {
        call = "cuMemGetHandleForAddressRange (dma-buf)";
        if (!cu.MemGetHandleForAddressRange) {
            snprintf(why, why_size, "libcuda.so.1 has no cuMemGetHandleForAddressRange");
            shared_free(d, s);
            return -1;
        }
        if ((r = cu.MemGetHandleForAddressRange(&fd, s->ptr, s->bytes,
                                                K_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0)))
            goto cuda_failed;
        handle_type = CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR;
    } else {
        call = "cuMemExportToShareableHandle";
        if ((r = cu.MemExportToShareableHandle(&fd, s->handle,
                                               K_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)))
            goto cuda_failed;
    }
    cl_mem_properties props[6] = {handle_type, (cl_mem_properties)fd, 0};
    if (variant != 1) {
        props[2] = CL_MEM_DEVICE_HANDLE_LIST_KHR;
        props[3] = (cl_mem_properties)(uintptr_t)d->dev;
        props[4] = CL_MEM_DEVICE_HANDLE_LIST_END_KHR;
        props[5] = 0;
    }
    s->mem = clCreateBufferWithProperties(d->ctx, props, CL_MEM_READ_WRITE, s->bytes, NULL, &err);
    if (!s->mem) {
        /* A successful import owns the descriptor; a failed one leaves it to us. */
        close(fd);
        snprintf(why, why_size, "clCreateBufferWithProperties (%zu bytes) failed: OpenCL error %d",
                 s->bytes, (int)err);
        shared_free(d, s);
        return -1;
    }
    return 0;
cuda_failed:
    snprintf(why, why_size, "%s failed: %s (%d)", call, cu_err(r), r);
    shared_free(d, s);
    return -1;
}

static int cl_acquire(struct gpu *d, struct shared *s)
{
    cl_int err = acquire_fn(d->q, 1, &s->mem, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        s->cl_owns = 1;
    return err;
}

static int cl_release(struct gpu *d, struct shared *s)
{
    cl_int err = release_fn(d->q, 1, &s->mem, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        s->cl_owns = 0;
    return err;
}

/* Counts the words of p[0..n) that differ from the pattern and notes the first. */
static size_t count_wrong(const unsigned *p, size_t n, unsigned want, size_t *first)
{
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] != want && !wrong++)
            *first = i;
    return wrong;
}

/* Step 2's two directions on one shared buffer. */
static void coherence(struct gpu *d, int i, struct shared *s, unsigned *host,
                      struct variant_result *v)
{
    const size_t n = s->bytes / 4;
    const unsigned from_cuda = 0xC0DA0000u + (unsigned)i, from_cl = 0x0C1A0000u + (unsigned)i;
    size_t first = 0, wrong;
    cu_result r;
    cl_int err;
    cu.CtxSetCurrent(d->cu_ctx);
    if ((r = cu.MemsetD32(s->ptr, from_cuda, n)) || (r = cu.CtxSynchronize())) {
        snprintf(v->note, sizeof v->note, "cuMemsetD32: %s", cu_err(r));
        return;
    }
    memset(host, 0, s->bytes);
    if ((err = cl_acquire(d, s)) ||
        (err = clEnqueueReadBuffer(d->q, s->mem, CL_TRUE, 0, s->bytes, host, 0, NULL, NULL))) {
        snprintf(v->note, sizeof v->note, "acquire + clEnqueueReadBuffer: OpenCL error %d",
                 (int)err);
        return;
    }
    if ((wrong = count_wrong(host, n, from_cuda, &first))) {
        snprintf(v->note, sizeof v->note,
                 "CUDA -> OpenCL: %zu of %zu words wrong (first at %zu: 0x%08x, want 0x%08x)",
                 wrong, n, first, host[first], from_cuda);
        return;
    }
    v->cuda_to_cl = 1;
    if ((err = clEnqueueFillBuffer(d->q, s->mem, &from_cl, sizeof from_cl, 0, s->bytes, 0, NULL,
                                   NULL)) ||
        (err = cl_release(d, s)) || (err = clFinish(d->q))) {
        snprintf(v->note, sizeof v->note, "clEnqueueFillBuffer + release: OpenCL error %d",
                 (int)err);
        return;
    }
    memset(host, 0, s->bytes);
    if ((r = cu.MemcpyDtoH(host, s->ptr, s->bytes))) {
        snprintf(v->note, sizeof v->note, "cuMemcpyDtoH: %s", cu_err(r));
        return;
    }
    if ((wrong = count_wrong(host, n, from_cl, &first))) {
        snprintf(v->note, sizeof v->note,
                 "OpenCL -> CUDA: %zu of %zu words wrong (first at %zu: 0x%08x, want 0x%08x)",
                 wrong, n, first, host[first], from_cl);
        return;
    }
    v->cl_to_cuda = 1;
}

/* Step 2: every import variant on every GPU; returns the first variant that worked on both. */
static int step_import(struct gpu *g, int n, size_t bytes, struct variant_result v[][N_VARIANTS])
{
    void *fp =
        clGetExtensionFunctionAddressForPlatform(platform, "clEnqueueAcquireExternalMemObjectsKHR");
    memcpy(&acquire_fn, &fp, sizeof fp);
    fp =
        clGetExtensionFunctionAddressForPlatform(platform, "clEnqueueReleaseExternalMemObjectsKHR");
    memcpy(&release_fn, &fp, sizeof fp);
    if (!acquire_fn || !release_fn)
        return stop(2, EXIT_FAILED,
                    "clGetExtensionFunctionAddressForPlatform has no "
                    "clEnqueueAcquire/ReleaseExternalMemObjectsKHR");
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < N_VARIANTS; k++) {
            struct variant_result *r = &v[i][k];
            if (k == 2 && !device_lists(g[i].dev, CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR,
                                        CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR)) {
                printf("[2] GPU %d, %s: not tried (the device lists no dma-buf import)\n", i,
                       variant_name[k]);
                continue;
            }
            r->tried = 1;
            struct shared s;
            if (shared_alloc(&g[i], bytes, k, &s, r->note, sizeof r->note) == 0) {
                r->imported = 1;
                unsigned *host = malloc(s.bytes);
                if (host)
                    coherence(&g[i], i, &s, host, r);
                else
                    snprintf(r->note, sizeof r->note, "out of host memory");
                free(host);
                shared_free(&g[i], &s);
            }
            printf("[2] GPU %d, %s: import %s, CUDA->OpenCL %s, OpenCL->CUDA %s%s%s\n", i,
                   variant_name[k], r->imported ? "ok" : "FAILED", r->cuda_to_cl ? "ok" : "no",
                   r->cl_to_cuda ? "ok" : "no", r->note[0] ? ": " : "", r->note);
        }
    }
    for (int k = 0; k < N_VARIANTS; k++) {
        int all = 1;
        for (int i = 0; i < n; i++)
            all &= v[i][k].cuda_to_cl && v[i][k].cl_to_cuda;
        if (all) {
            printf("[2] using %s\n", variant_name[k]);
            return k;
        }
    }
    return stop(2, EXIT_FAILED, "no import variant was coherent both ways on both GPUs: %s",
                v[0][0].note[0] ? v[0][0].note : v[1][0].note);
}

/* Both GPUs' OpenCL queues finished. */
static cl_int finish_all(struct gpu *g)
{
    cl_int err = clFinish(g[0].q);
    return err ? err : clFinish(g[1].q);
}

static int nccl_enqueue(struct gpu *g, nccl_comm *comms, struct shared *s, size_t count)
{
    nccl_result r = nccl.GroupStart();
    for (int i = 0; i < 2 && !r; i++)
        r = nccl.AllReduce((const void *)(uintptr_t)s[i].ptr, (void *)(uintptr_t)s[i].ptr, count,
                           K_NCCL_FLOAT32, K_NCCL_SUM, comms[i], g[i].stream);
    nccl_result end = nccl.GroupEnd();
    if (r || end)
        return stop(3, EXIT_FAILED, "ncclAllReduce: %s", nccl.GetErrorString(r ? r : end));
    return 0;
}

static int nccl_round(struct gpu *g, nccl_comm *comms, struct shared *s, size_t count)
{
    if (nccl_enqueue(g, comms, s, count))
        return -1;
    for (int i = 0; i < 2; i++) {
        cu_result c = cu.StreamSynchronize(g[i].stream);
        if (c)
            return stop(3, EXIT_FAILED, "cuStreamSynchronize after ncclAllReduce: %s", cu_err(c));
    }
    return 0;
}

/* One use as Kernelport would make it: OpenCL gives the memory up, NCCL reduces it, OpenCL takes
 * it back; each side finished before the other starts. */
static int handoff_round(struct gpu *g, nccl_comm *comms, struct shared *s, size_t count)
{
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < 2 && !err; i++)
        err = cl_release(&g[i], &s[i]);
    if (err || (err = finish_all(g)))
        return stop(3, EXIT_FAILED, "clEnqueueReleaseExternalMemObjectsKHR: OpenCL error %d",
                    (int)err);
    if (count && nccl_round(g, comms, s, count))
        return -1;
    for (int i = 0; i < 2 && !err; i++)
        err = cl_acquire(&g[i], &s[i]);
    if (err || (err = finish_all(g)))
        return stop(3, EXIT_FAILED, "clEnqueueAcquireExternalMemObjectsKHR: OpenCL error %d",
                    (int)err);
    return 0;
}

/* The hand-off without the all-reduce: its cost growing with the size would mean the driver
 * copies on release or acquire instead of sharing the memory. */
static int ownership_round(struct gpu *g, nccl_comm *comms, struct shared *s, size_t count)
{
    return handoff_round(g, comms, s, 0);
}

/* The host-staging limit's two copies on both GPUs at once (as two ranks of a staged all-reduce
 * make them): device-to-host reads, then host-to-device writes, of `bytes` into pinned memory. */
static int staging_times(struct gpu *g, size_t bytes, int reps, double *read_s, double *write_s)
{
    cl_mem dev[2] = {NULL, NULL}, pin[2] = {NULL, NULL};
    void *host[2] = {NULL, NULL};
    double *t = malloc((size_t)reps * sizeof *t);
    int rc = -1;
    cl_int err = CL_SUCCESS;
    if (!t)
        return stop(3, EXIT_FAILED, "out of host memory");
    for (int i = 0; i < 2; i++) {
        if (!(dev[i] = clCreateBuffer(g[i].ctx, CL_MEM_READ_WRITE, bytes, NULL, &err)) ||
            !(pin[i] = clCreateBuffer(g[i].ctx, CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &err)) ||
            !(host[i] = clEnqueueMapBuffer(g[i].q, pin[i], CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                           bytes, 0, NULL, NULL, &err))) {
            stop(3, EXIT_FAILED, "host-staging buffers of %zu bytes: OpenCL error %d", bytes,
                 (int)err);
            goto out;
        }
        memset(host[i], 0, bytes);
    }
    for (int which = 0; which < 2; which++) {
        for (int r = -1; r < reps; r++) {
            const double t0 = now();
            for (int i = 0; i < 2 && !err; i++)
                err = which ? clEnqueueWriteBuffer(g[i].q, dev[i], CL_FALSE, 0, bytes, host[i], 0,
                                                   NULL, NULL)
                            : clEnqueueReadBuffer(g[i].q, dev[i], CL_FALSE, 0, bytes, host[i], 0,
                                                  NULL, NULL);
            if (err || (err = finish_all(g))) {
                stop(3, EXIT_FAILED, "host-staging copy: OpenCL error %d", (int)err);
                goto out;
            }
            if (r >= 0)
                t[r] = now() - t0;
        }
        *(which ? write_s : read_s) = median(t, reps);
    }
    rc = 0;
out:
    for (int i = 0; i < 2; i++) {
        if (host[i])
            clEnqueueUnmapMemObject(g[i].q, pin[i], host[i], 0, NULL, NULL);
        if (g[i].q)
            clFinish(g[i].q);
        if (pin[i])
            clReleaseMemObject(pin[i]);
        if (dev[i])
            clReleaseMemObject(dev[i]);
    }
    free(t);
    return rc;
}

typedef int (*round_fn)(struct gpu *, nccl_comm *, struct shared *, size_t);

/* The median of reps rounds after one untimed. */
static int time_rounds(round_fn round, struct gpu *g, nccl_comm *comms, struct shared *s,
                       size_t count, int reps, double *t, double *median_s)
{
    for (int r = -1; r < reps; r++) {
        const double t0 = now();
        if (round(g, comms, s, count))
            return -1;
        if (r >= 0)
            t[r] = now() - t0;
    }
    *median_s = median(t, reps);
    return 0;
}

/* Shared memory of `bytes` on both GPUs, acquired by OpenCL and written by it: GPU i holds
 * (i + 1) * (k % 1021) at float k, so that the sums are exact and every offset distinct mod 1021.
 */
static int pair_open(struct gpu *g, int variant, size_t bytes, struct shared *s, float *host,
                     int step)
{
    char why[256];
    for (int i = 0; i < 2; i++) {
        if (shared_alloc(&g[i], bytes, variant, &s[i], why, sizeof why))
            return stop(step, EXIT_FAILED, "GPU %d, %zu bytes: %s", i, bytes, why);
        for (size_t k = 0; k < bytes / 4; k++)
            host[k] = (float)((i + 1) * (int)(k % 1021));
        cl_int err = cl_acquire(&g[i], &s[i]);
        if (err ||
            (err = clEnqueueWriteBuffer(g[i].q, s[i].mem, CL_TRUE, 0, bytes, host, 0, NULL, NULL)))
            return stop(step, EXIT_FAILED,
                        "GPU %d: acquire + clEnqueueWriteBuffer: OpenCL error %d", i, (int)err);
    }
    return 0;
}

/* After one all-reduce of pair_open's data: what OpenCL reads on each GPU is the sum. */
static int check_sums(struct gpu *g, struct shared *s, float *host, size_t bytes, int step)
{
    const size_t count = bytes / 4;
    for (int i = 0; i < 2; i++) {
        cl_int err = clEnqueueReadBuffer(g[i].q, s[i].mem, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
        if (err)
            return stop(step, EXIT_FAILED, "GPU %d: clEnqueueReadBuffer after the all-reduce: %d",
                        i, (int)err);
        size_t wrong = 0, first = 0;
        for (size_t k = 0; k < count; k++)
            if (host[k] != (float)(3 * (int)(k % 1021)) && !wrong++)
                first = k;
        if (wrong)
            return stop(step, EXIT_FAILED,
                        "GPU %d, %zu bytes: OpenCL reads %zu of %zu wrong sums after NCCL (first "
                        "at %zu: %g, want %d)",
                        i, bytes, wrong, count, first, (double)host[first],
                        3 * (int)(first % 1021));
    }
    return 0;
}

/* Step 3 at one size: the sums after one hand-off round, then the hand-off timed, NCCL alone
 * timed (the buffers' values double each round: only the timings matter now), and the
 * host-staging limit. */
static int step_allreduce_size(struct gpu *g, nccl_comm *comms, int variant, size_t bytes, int reps,
                               struct size_result *out)
{
    struct shared s[2];
    memset(s, 0, sizeof s);
    const size_t count = bytes / 4;
    float *host = malloc(bytes);
    double *t = malloc((size_t)reps * sizeof *t);
    int rc = -1;
    out->bytes = bytes;
    if (!host || !t) {
        stop(3, EXIT_FAILED, "out of host memory");
        goto out;
    }
    if (pair_open(g, variant, bytes, s, host, 3) || handoff_round(g, comms, s, count) ||
        check_sums(g, s, host, bytes, 3))
        goto out;
    out->sums_ok = 1;
    if (time_rounds(handoff_round, g, comms, s, count, reps, t, &out->handoff_s) ||
        time_rounds(ownership_round, g, comms, s, count, reps, t, &out->own_s))
        goto out;
    for (int i = 0; i < 2; i++) {
        cl_int err = cl_release(&g[i], &s[i]);
        if (err || (err = clFinish(g[i].q))) {
            stop(3, EXIT_FAILED, "clEnqueueReleaseExternalMemObjectsKHR: OpenCL error %d",
                 (int)err);
            goto out;
        }
    }
    if (time_rounds(nccl_round, g, comms, s, count, reps, t, &out->nccl_s))
        goto out;
    rc = staging_times(g, bytes, reps, &out->read_s, &out->write_s);
out:
    for (int i = 0; i < 2; i++)
        shared_free(&g[i], &s[i]);
    free(host);
    free(t);
    return rc;
}

/* ---- Step 4: the hand-off ordered on the devices by semaphores, no host wait inside ---- */
static clCreateSemaphoreWithPropertiesKHR_fn create_sema_fn;
static clGetSemaphoreHandleForTypeKHR_fn sema_handle_fn;
static clEnqueueSignalSemaphoresKHR_fn signal_sema_fn;
static clEnqueueWaitSemaphoresKHR_fn wait_sema_fn;

/* A binary OpenCL semaphore exported as an opaque fd, imported by CUDA. CL semaphores are the
 * exportable side: CUDA only imports external semaphores. */
static int sema_make(struct gpu *d, cl_semaphore_khr *cl_sema, cu_ext_sema *cu_sema, char *why,
                     size_t why_size)
{
    cl_semaphore_properties_khr props[] = {CL_SEMAPHORE_TYPE_KHR,
                                           CL_SEMAPHORE_TYPE_BINARY_KHR,
                                           CL_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR,
                                           CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR,
                                           CL_SEMAPHORE_EXPORT_HANDLE_TYPES_LIST_END_KHR,
                                           0};
    cl_int err = CL_SUCCESS;
    *cl_sema = create_sema_fn(d->ctx, props, &err);
    if (!*cl_sema) {
        snprintf(why, why_size,
                 "clCreateSemaphoreWithPropertiesKHR (exportable as opaque fd): "
                 "OpenCL error %d",
                 (int)err);
        return -1;
    }
    int fd = -1;
    if ((err = sema_handle_fn(*cl_sema, d->dev, CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR, sizeof fd, &fd,
                              NULL))) {
        snprintf(why, why_size, "clGetSemaphoreHandleForTypeKHR: OpenCL error %d", (int)err);
        return -1;
    }
    struct cu_ext_sema_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.type = K_CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD;
    desc.handle.fd = fd;
    cu.CtxSetCurrent(d->cu_ctx);
    cu_result r = cu.ImportExternalSemaphore(cu_sema, &desc);
    if (r) {
        /* A successful import owns the descriptor; a failed one leaves it to us. */
        close(fd);
        snprintf(why, why_size, "cuImportExternalSemaphore (opaque fd): %s (%d)", cu_err(r), r);
        return -1;
    }
    return 0;
}

static int sema_setup(struct gpu *g, char *why, size_t why_size)
{
    static const char *const names[] = {
        "clCreateSemaphoreWithPropertiesKHR", "clGetSemaphoreHandleForTypeKHR",
        "clEnqueueSignalSemaphoresKHR", "clEnqueueWaitSemaphoresKHR"};
    void *slots[] = {&create_sema_fn, &sema_handle_fn, &signal_sema_fn, &wait_sema_fn};
    for (int k = 0; k < 4; k++) {
        void *fp = clGetExtensionFunctionAddressForPlatform(platform, names[k]);
        if (!fp) {
            snprintf(why, why_size, "clGetExtensionFunctionAddressForPlatform has no %s", names[k]);
            return -1;
        }
        memcpy(slots[k], &fp, sizeof fp);
    }
    for (int i = 0; i < 2; i++) {
        struct gpu *d = &g[i];
        if (!d->sema || !d->ext_sema || !d->ext_sema_fd ||
            !device_lists(d->dev, CL_DEVICE_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR,
                          CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR)) {
            snprintf(why, why_size,
                     "GPU %d does not export semaphores as opaque fds (cl_khr_semaphore, "
                     "cl_khr_external_semaphore_opaque_fd, CL_DEVICE_SEMAPHORE_EXPORT_HANDLE_"
                     "TYPES_KHR)",
                     i);
            return -1;
        }
        if (sema_make(d, &d->to_cuda, &d->ext_to_cuda, why, why_size) ||
            sema_make(d, &d->to_cl, &d->ext_to_cl, why, why_size))
            return -1;
    }
    return 0;
}

/* OpenCL releases and signals; CUDA's streams wait, NCCL reduces, the streams signal; OpenCL
 * waits and acquires. The host waits once, at the end, to time the round. */
static int sema_round(struct gpu *g, nccl_comm *comms, struct shared *s, size_t count)
{
    struct cu_ext_sema_wait wait;
    struct cu_ext_sema_signal signal;
    memset(&wait, 0, sizeof wait);
    memset(&signal, 0, sizeof signal);
    cl_int err = CL_SUCCESS;
    cu_result r = 0;
    for (int i = 0; i < 2 && !err; i++)
        if (!(err = cl_release(&g[i], &s[i])) &&
            !(err = signal_sema_fn(g[i].q, 1, &g[i].to_cuda, NULL, 0, NULL, NULL)))
            err = clFlush(g[i].q);
    if (err)
        return stop(4, EXIT_FAILED, "release + clEnqueueSignalSemaphoresKHR: OpenCL error %d",
                    (int)err);
    for (int i = 0; i < 2 && !r; i++)
        if (!(r = cu.CtxSetCurrent(g[i].cu_ctx)))
            r = cu.WaitExternalSemaphoresAsync(&g[i].ext_to_cuda, &wait, 1, g[i].stream);
    if (r)
        return stop(4, EXIT_FAILED, "cuWaitExternalSemaphoresAsync: %s", cu_err(r));
    if (nccl_enqueue(g, comms, s, count))
        return -1;
    for (int i = 0; i < 2 && !r; i++)
        if (!(r = cu.CtxSetCurrent(g[i].cu_ctx)))
            r = cu.SignalExternalSemaphoresAsync(&g[i].ext_to_cl, &signal, 1, g[i].stream);
    if (r)
        return stop(4, EXIT_FAILED, "cuSignalExternalSemaphoresAsync: %s", cu_err(r));
    for (int i = 0; i < 2 && !err; i++)
        if (!(err = wait_sema_fn(g[i].q, 1, &g[i].to_cl, NULL, 0, NULL, NULL)))
            err = cl_acquire(&g[i], &s[i]);
    if (err || (err = finish_all(g)))
        return stop(4, EXIT_FAILED, "clEnqueueWaitSemaphoresKHR + acquire: OpenCL error %d",
                    (int)err);
    return 0;
}

/* Step 4 at one size: the sums after one semaphore round, then the rounds timed. */
static int step_sema_size(struct gpu *g, nccl_comm *comms, int variant, size_t bytes, int reps,
                          struct size_result *out)
{
    struct shared s[2];
    memset(s, 0, sizeof s);
    float *host = malloc(bytes);
    double *t = malloc((size_t)reps * sizeof *t);
    int rc = -1;
    if (!host || !t) {
        stop(4, EXIT_FAILED, "out of host memory");
        goto out;
    }
    if (pair_open(g, variant, bytes, s, host, 4) || sema_round(g, comms, s, bytes / 4) ||
        check_sums(g, s, host, bytes, 4))
        goto out;
    out->sema_ok = 1;
    rc = time_rounds(sema_round, g, comms, s, bytes / 4, reps, t, &out->sema_s);
out:
    for (int i = 0; i < 2; i++)
        shared_free(&g[i], &s[i]);
    free(host);
    free(t);
    return rc;
}

static double gbs(size_t bytes, double s)
{
    return s > 0 ? (double)bytes / s / 1e9 : 0;
}

/* Everything a run found, for the table, the verdict and --json. */
struct probe {
    struct gpu g[MAX_GPUS];
    int n, variant, nccl_version, nsz;
    struct variant_result v[2][N_VARIANTS];
    struct size_result sz[MAX_SIZES];
    char nccl_path[600];
    nccl_comm comms[2];
    int sema_tried;
    char sema_why[512]; /* why step 4 stopped; empty where it ran through */
};

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++)
        fprintf(f, *s == '"' || *s == '\\' ? "\\%c" : "%c", *s);
    fputc('"', f);
}

static void write_json(FILE *f, const struct probe *p)
{
    fprintf(f, "{\"probe\": \"nccl-interop-probe\", \"gpus\": [");
    for (int i = 0; i < p->n; i++) {
        const struct gpu *d = &p->g[i];
        char u[40] = "";
        if (d->has_uuid)
            uuid_text(d->uuid, u);
        fprintf(f, "%s\n  {\"name\": ", i ? "," : "");
        json_string(f, d->name);
        fprintf(f,
                ", \"uuid\": \"%s\", \"cuda_ordinal\": %d, \"cl_khr_external_memory\": %d, "
                "\"cl_khr_external_memory_opaque_fd\": %d, \"cl_khr_external_memory_dma_buf\": "
                "%d, \"cl_khr_semaphore\": %d, \"cl_khr_external_semaphore\": %d, "
                "\"cl_khr_external_semaphore_opaque_fd\": %d, \"imports\": [",
                u, d->cu_ordinal, d->ext_mem, d->ext_mem_fd, d->ext_mem_dmabuf, d->sema,
                d->ext_sema, d->ext_sema_fd);
        int first = 1;
        for (int k = 0; k < N_VARIANTS && i < 2; k++) {
            const struct variant_result *r = &p->v[i][k];
            if (!r->tried)
                continue;
            fprintf(f,
                    "%s{\"variant\": \"%s\", \"imported\": %d, \"cuda_to_opencl\": %d, "
                    "\"opencl_to_cuda\": %d, \"note\": ",
                    first ? "" : ", ", variant_name[k], r->imported, r->cuda_to_cl, r->cl_to_cuda);
            json_string(f, r->note);
            fprintf(f, "}");
            first = 0;
        }
        fprintf(f, "]}");
    }
    fprintf(f, "],\n \"variant\": ");
    json_string(f, p->variant >= 0 ? variant_name[p->variant] : "");
    fprintf(f, ", \"nccl\": ");
    json_string(f, p->nccl_path);
    fprintf(f, ", \"nccl_version\": %d, \"sizes\": [", p->nccl_version);
    for (int k = 0; k < p->nsz; k++) {
        const struct size_result *z = &p->sz[k];
        fprintf(f,
                "%s\n  {\"bytes\": %zu, \"sums_ok\": %d, \"nccl_s\": %.9g, \"nccl_bus_gbs\": %.6g, "
                "\"handoff_s\": %.9g, \"handoff_bus_gbs\": %.6g, \"acquire_release_s\": %.9g, "
                "\"read_s\": %.9g, "
                "\"write_s\": %.9g, \"staging_limit_bus_gbs\": %.6g, \"semaphore_sums_ok\": %d, "
                "\"semaphore_handoff_s\": %.9g, \"semaphore_handoff_bus_gbs\": %.6g}",
                k ? "," : "", z->bytes, z->sums_ok, z->nccl_s, gbs(z->bytes, z->nccl_s),
                z->handoff_s, gbs(z->bytes, z->handoff_s), z->own_s, z->read_s, z->write_s,
                gbs(z->bytes, z->read_s + z->write_s), z->sema_ok, z->sema_s,
                gbs(z->bytes, z->sema_s));
    }
    fprintf(f, "\n ],\n \"feasible\": %s, \"stopped_at_step\": %d, \"why\": ",
            stop_step ? "false" : "true", stop_step);
    json_string(f, stop_why);
    fprintf(f, ",\n \"semaphores_tried\": %d, \"semaphores_ok\": %d, \"semaphores_why\": ",
            p->sema_tried, p->sema_tried && !p->sema_why[0]);
    json_string(f, p->sema_why);
    fprintf(f, "}\n");
}

/* Step 3: NCCL over the first two GPUs, every size up to max_mb. */
static void step_allreduce(struct probe *p, const char *nccl_arg, double max_mb, int reps)
{
    char why[600];
    void *lib = kp_nccl_open(nccl_arg, p->nccl_path, why, sizeof why);
    if (!lib) {
        stop(3, EXIT_NOT_HERE, "%s (give --nccl PATH)", why);
        return;
    }
    const char *missing = NULL;
    if (kp_nccl_load(lib, &nccl, &missing)) {
        stop(3, EXIT_NOT_HERE, "%s lacks %s", p->nccl_path, missing);
        return;
    }
    nccl.GetVersion(&p->nccl_version);
    printf("[3] NCCL %d from %s\n", p->nccl_version, p->nccl_path);
    struct gpu *g = p->g;
    const int devlist[2] = {g[0].cu_ordinal, g[1].cu_ordinal};
    nccl_result r = nccl.CommInitAll(p->comms, 2, devlist);
    if (r) {
        stop(3, EXIT_FAILED, "ncclCommInitAll over CUDA devices %d and %d: %s", devlist[0],
             devlist[1], nccl.GetErrorString(r));
        return;
    }
    printf("[3] all-reduce (float sum, in place) over GPUs 0 and 1 with %s; median of %d; "
           "bus bandwidth in GB/s\n",
           variant_name[p->variant], reps);
    printf("%8s %10s %10s %11s %10s %10s %10s %10s %10s %9s %5s\n", "MB", "nccl ms", "nccl bus",
           "handoff ms", "hand bus", "acq+rel ms", "read GB/s", "write GB/s", "limit bus",
           "vs limit", "sums");
    static const int sizes_mb[] = {1, 4, 16, 64, 256, 1024, 4096};
    for (size_t k = 0; k < sizeof sizes_mb / sizeof sizes_mb[0] && sizes_mb[k] <= max_mb; k++) {
        struct size_result *z = &p->sz[p->nsz++];
        if (step_allreduce_size(g, p->comms, p->variant, (size_t)sizes_mb[k] << 20, reps, z))
            return;
        const double limit = gbs(z->bytes, z->read_s + z->write_s);
        /* Two ranks: NCCL's bus factor 2(P - 1)/P is 1. */
        printf("%8d %10.3f %10.2f %11.3f %10.2f %10.3f %10.2f %10.2f %10.2f %8.1fx %5s\n",
               sizes_mb[k], 1e3 * z->nccl_s, gbs(z->bytes, z->nccl_s), 1e3 * z->handoff_s,
               gbs(z->bytes, z->handoff_s), 1e3 * z->own_s, gbs(z->bytes, z->read_s),
               gbs(z->bytes, z->write_s), limit,
               limit > 0 ? gbs(z->bytes, z->handoff_s) / limit : 0, z->sums_ok ? "ok" : "WRONG");
    }
}

/* Step 4 over the sizes step 3 measured. Its failure leaves steps 1-3's verdict as it was. */
static void step_semaphores(struct probe *p, int reps)
{
    p->sema_tried = 1;
    if (sema_setup(p->g, p->sema_why, sizeof p->sema_why)) {
        printf("[4] semaphores: not usable: %s\n", p->sema_why);
        return;
    }
    printf("[4] hand-off ordered by OpenCL semaphores CUDA imported (one host wait per round)\n");
    printf("%8s %12s %10s %10s %9s %6s\n", "MB", "sema ms", "sema bus", "limit bus", "vs limit",
           "sums");
    for (int k = 0; k < p->nsz; k++) {
        struct size_result *z = &p->sz[k];
        if (step_sema_size(p->g, p->comms, p->variant, z->bytes, reps, z)) {
            snprintf(p->sema_why, sizeof p->sema_why, "%s", stop_why);
            printf("[4] semaphores: stopped at %zu MB: %s\n", z->bytes >> 20, stop_why);
            stop_step = 0;
            stop_code = EXIT_FEASIBLE;
            stop_why[0] = '\0';
            return;
        }
        const double limit = gbs(z->bytes, z->read_s + z->write_s);
        printf("%8zu %12.3f %10.2f %10.2f %8.1fx %6s\n", z->bytes >> 20, 1e3 * z->sema_s,
               gbs(z->bytes, z->sema_s), limit, limit > 0 ? gbs(z->bytes, z->sema_s) / limit : 0,
               "ok");
    }
}

static void run(struct probe *p, const char *nccl_arg, size_t check_bytes, double max_mb, int reps)
{
    if (find_gpus(p->g, &p->n) || match_cuda(p->g, p->n))
        return;
    const int used = p->n < 2 ? p->n : 2;
    for (int i = 0; i < used; i++)
        if (p->g[i].cu_ordinal < 0) {
            stop(1, EXIT_FAILED, "OpenCL GPU %d matches no CUDA device (see above)", i);
            return;
        }
    for (int i = 0; i < used; i++)
        if (open_gpu(&p->g[i], i))
            return;
    if (!p->g[0].ext_mem || !p->g[0].ext_mem_fd)
        printf("[2] the GPU does not report cl_khr_external_memory(_opaque_fd): trying anyway\n");
    if ((p->variant = step_import(p->g, used, check_bytes, p->v)) < 0)
        return;
    if (used < 2) {
        stop(3, EXIT_NOT_HERE, "one NVIDIA GPU only: the all-reduce needs two");
        return;
    }
    step_allreduce(p, nccl_arg, max_mb, reps);
}

static void save_json(const struct probe *p, const char *path)
{
    if (!path)
        return;
    FILE *f = fopen(path, "w");
    if (!f) {
        printf("cannot write %s\n", path);
        return;
    }
    write_json(f, p);
    fclose(f);
}

int main(int argc, char **argv)
{
    const char *nccl_arg = NULL, *json_path = NULL;
    double check_mb = 16, max_mb = 256;
    int reps = 10;
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("usage: nccl-interop-probe [--nccl PATH] [--check-mb 16] [--max-mb 256] "
                   "[--reps 10] [--json FILE]\n");
            return 0;
        }
        if (!val) {
            fprintf(stderr, "nccl-interop-probe: %s needs a value (see --help)\n", a);
            return EXIT_USAGE;
        }
        if (!strcmp(a, "--nccl"))
            nccl_arg = val;
        else if (!strcmp(a, "--json"))
            json_path = val;
        else if (!strcmp(a, "--check-mb"))
            check_mb = atof(val);
        else if (!strcmp(a, "--max-mb"))
            max_mb = atof(val);
        else if (!strcmp(a, "--reps"))
            reps = atoi(val);
        else {
            fprintf(stderr, "nccl-interop-probe: unknown option %s (see --help)\n", a);
            return EXIT_USAGE;
        }
    }
    if (!(check_mb >= 0.004 && check_mb <= 4096) || !(max_mb >= 1 && max_mb <= 4096) || reps < 1 ||
        reps > 1000) {
        fprintf(stderr, "nccl-interop-probe: --check-mb in [0.004, 4096], --max-mb in [1, 4096], "
                        "--reps in [1, 1000]\n");
        return EXIT_USAGE;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
#ifdef KP_CUDA_NCCL_CHECK_ABI
    if (abi_check())
        return EXIT_FAILED;
#endif
    static struct probe p;
    p.variant = -1;
    run(&p, nccl_arg, (size_t)(check_mb * 1048576.0) / 4 * 4, max_mb, reps);
    /* Saved before step 4 too: a semaphore that is never signalled hangs the run until the
     * script's timeout, and steps 1-3's results must survive that. */
    save_json(&p, json_path);
    if (!stop_step) {
        step_semaphores(&p, reps);
        save_json(&p, json_path);
    }
    for (int i = 0; i < 2; i++)
        if (p.comms[i])
            nccl.CommDestroy(p.comms[i]);
    if (!stop_step) {
        const struct size_result *z = &p.sz[p.nsz - 1];
        printf("verdict: FEASIBLE: memory CUDA allocated is imported by NVIDIA's OpenCL (%s), "
               "coherent both ways on both GPUs, and NCCL all-reduces it in place with the right "
               "sums; at %zu MB the hand-off round reaches %.2f GB/s bus bandwidth against a "
               "host-staging limit of %.2f GB/s\n",
               variant_name[p.variant], z->bytes >> 20, gbs(z->bytes, z->handoff_s),
               gbs(z->bytes, z->read_s + z->write_s));
        if (p.sema_why[0])
            printf("semaphores (step 4): not usable: %s\n", p.sema_why);
        else
            printf("semaphores (step 4): the hand-off ordered on the devices works; at %zu MB "
                   "%.2f GB/s bus bandwidth\n",
                   z->bytes >> 20, gbs(z->bytes, z->sema_s));
    } else {
        printf("verdict: %s: stopped at step %d because %s\n",
               stop_code == EXIT_NOT_HERE ? "NOT APPLICABLE HERE" : "NOT FEASIBLE AS TRIED",
               stop_step, stop_why);
    }
    return stop_code;
}
