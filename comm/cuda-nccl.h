/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: the CUDA driver API and NCCL as Kernelport calls them, declared from cuda.h and nccl.h
 * so that no CUDA header is needed to build (libcuda.so.1 and libnccl.so.2 are opened with dlopen
 * at run time), with the symbol tables that load them and the search for libnccl.so.2. Shared by
 * the NCCL transport (comm/comm-nccl.c) and bench/probes/nccl-interop-probe.c. Built with
 * -DKP_CUDA_NCCL_CHECK_ABI and cuda.h and nccl.h on the include path, the declarations are checked
 * against those headers at compile time (scripts/gpu/nccl-interop.sh builds the probe so).
 */
#ifndef KP_CUDA_NCCL_H
#define KP_CUDA_NCCL_H

#include <CL/cl_ext.h>
#include <dlfcn.h>
#include <glob.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Renamed from CL_DEVICE_HANDLE_LIST_KHR (same value) in cl_khr_external_memory 0.9.2; Debian's
 * 2023.02 headers have only the old name. */
#ifndef CL_MEM_DEVICE_HANDLE_LIST_KHR
#define CL_MEM_DEVICE_HANDLE_LIST_KHR 0x2051
#define CL_MEM_DEVICE_HANDLE_LIST_END_KHR 0
#endif

/* ---- CUDA driver API, as cuda.h declares it (CUDA 12.x; 64-bit Linux) ---- */
typedef int cu_result; /* CUresult; CUDA_SUCCESS is 0 */
typedef int cu_device; /* CUdevice */
typedef struct cu_ctx_st *cu_context;
typedef struct cu_stream_st *cu_stream;   /* CUstream, which is also NCCL's cudaStream_t */
typedef unsigned long long cu_ptr;        /* CUdeviceptr */
typedef unsigned long long cu_mem_handle; /* CUmemGenericAllocationHandle */
struct cu_location {
    int type, id;
};                              /* CUmemLocation */
struct cu_alloc_prop {          /* CUmemAllocationProp */
    int type;                   /* CUmemAllocationType */
    int requested_handle_types; /* CUmemAllocationHandleType */
    struct cu_location location;
    void *win32_handle_meta_data;
    struct {
        unsigned char compression_type, gpu_direct_rdma_capable;
        unsigned short usage;
        unsigned char reserved[4];
    } alloc_flags;
};
struct cu_access_desc { /* CUmemAccessDesc */
    struct cu_location location;
    int flags; /* CUmemAccess_flags */
};
struct cu_uuid {
    char bytes[16];
};                                          /* CUuuid */
typedef struct cu_ext_sema_st *cu_ext_sema; /* CUexternalSemaphore */
struct cu_ext_sema_desc {                   /* CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC */
    int type;                               /* CUexternalSemaphoreHandleType */
    union {
        int fd;
        struct {
            void *handle;
            const void *name;
        } win32;
        const void *nv_sci_sync_obj;
    } handle;
    unsigned int flags;
    unsigned int reserved[16];
};
struct cu_ext_sema_signal { /* CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS */
    struct {
        struct {
            unsigned long long value;
        } fence;
        union {
            void *fence;
            unsigned long long reserved;
        } nv_sci_sync;
        struct {
            unsigned long long key;
        } keyed_mutex;
        unsigned int reserved[12];
    } params;
    unsigned int flags;
    unsigned int reserved[16];
};
struct cu_ext_sema_wait { /* CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS */
    struct {
        struct {
            unsigned long long value;
        } fence;
        union {
            void *fence;
            unsigned long long reserved;
        } nv_sci_sync;
        struct {
            unsigned long long key;
            unsigned int timeout_ms;
        } keyed_mutex;
        unsigned int reserved[10];
    } params;
    unsigned int flags;
    unsigned int reserved[16];
};

enum {
    K_CU_MEM_ALLOCATION_TYPE_PINNED = 0x1,
    K_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1,
    K_CU_MEM_LOCATION_TYPE_DEVICE = 0x1,
    K_CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3,
    K_CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 0x1,
    K_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 0x1,
    K_CU_STREAM_NON_BLOCKING = 0x1,
    K_CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
    K_CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
    K_CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50,
    K_CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
    K_CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103,
    K_CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 124,
    K_CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD = 1,
    K_CU_ERROR_NOT_READY = 600,
};

/* The exported symbol names are the ones cuda.h's macros map the API names to (cuMemsetD32 is
 * cuMemsetD32_v2, ...): the unversioned symbols are the old 32-bit-pointer entry points. */

typedef struct kp_cuda_api {
    cu_result (*Init)(unsigned int);
    cu_result (*DriverGetVersion)(int *);
    cu_result (*GetErrorName)(cu_result, const char **);
    cu_result (*DeviceGetCount)(int *);
    cu_result (*DeviceGet)(cu_device *, int);
    cu_result (*DeviceGetName)(char *, int, cu_device);
    cu_result (*DeviceGetUuid)(struct cu_uuid *, cu_device);
    cu_result (*DeviceGetAttribute)(int *, int, cu_device);
    cu_result (*DevicePrimaryCtxRetain)(cu_context *, cu_device);
    cu_result (*CtxSetCurrent)(cu_context);
    cu_result (*CtxSynchronize)(void);
    cu_result (*MemGetAllocationGranularity)(size_t *, const struct cu_alloc_prop *, int);
    cu_result (*MemCreate)(cu_mem_handle *, size_t, const struct cu_alloc_prop *,
                           unsigned long long);
    cu_result (*MemRelease)(cu_mem_handle);
    cu_result (*MemAddressReserve)(cu_ptr *, size_t, size_t, cu_ptr, unsigned long long);
    cu_result (*MemAddressFree)(cu_ptr, size_t);
    cu_result (*MemMap)(cu_ptr, size_t, size_t, cu_mem_handle, unsigned long long);
    cu_result (*MemUnmap)(cu_ptr, size_t);
    cu_result (*MemSetAccess)(cu_ptr, size_t, const struct cu_access_desc *, size_t);
    cu_result (*MemExportToShareableHandle)(void *, cu_mem_handle, int, unsigned long long);
    cu_result (*MemGetHandleForAddressRange)(void *, cu_ptr, size_t, int, unsigned long long);
    cu_result (*MemsetD32)(cu_ptr, unsigned int, size_t);
    cu_result (*MemcpyDtoH)(void *, cu_ptr, size_t);
    cu_result (*StreamCreate)(cu_stream *, unsigned int);
    cu_result (*StreamSynchronize)(cu_stream);
    cu_result (*ImportExternalSemaphore)(cu_ext_sema *, const struct cu_ext_sema_desc *);
    cu_result (*SignalExternalSemaphoresAsync)(const cu_ext_sema *,
                                               const struct cu_ext_sema_signal *, unsigned int,
                                               cu_stream);
    cu_result (*WaitExternalSemaphoresAsync)(const cu_ext_sema *, const struct cu_ext_sema_wait *,
                                             unsigned int, cu_stream);
    /* Used by libkernelport-comm (comm-nccl.c). */
    cu_result (*CtxPushCurrent)(cu_context);
    cu_result (*CtxPopCurrent)(cu_context *);
    cu_result (*StreamQuery)(cu_stream);
    cu_result (*StreamDestroy)(cu_stream);
    cu_result (*DevicePrimaryCtxRelease)(cu_device);
} kp_cuda_api;

/* ---- NCCL, as nccl.h declares it (2.x) ---- */
typedef int nccl_result; /* ncclResult_t; ncclSuccess is 0 */
typedef struct nccl_comm_st *nccl_comm;
enum { K_NCCL_FLOAT32 = 7, K_NCCL_SUM = 0, K_NCCL_IN_PROGRESS = 7 };
/* ncclUniqueId: NCCL_UNIQUE_ID_BYTES (128) opaque bytes. */
typedef struct nccl_unique_id {
    char internal[128];
} nccl_unique_id;
typedef struct kp_nccl_api {
    nccl_result (*GetVersion)(int *);
    const char *(*GetErrorString)(nccl_result);
    nccl_result (*CommInitAll)(nccl_comm *, int, const int *);
    nccl_result (*CommDestroy)(nccl_comm);
    nccl_result (*GroupStart)(void);
    nccl_result (*GroupEnd)(void);
    nccl_result (*AllReduce)(const void *, void *, size_t, int, int, nccl_comm, cu_stream);
    /* Used by libkernelport-comm (comm-nccl.c): one rank per process. */
    nccl_result (*GetUniqueId)(nccl_unique_id *);
    nccl_result (*CommInitRank)(nccl_comm *, int, nccl_unique_id, int);
    nccl_result (*CommGetAsyncError)(nccl_comm, nccl_result *);
    nccl_result (*CommAbort)(nccl_comm);
} kp_nccl_api;

#ifdef KP_CUDA_NCCL_CHECK_ABI
#include <cuda.h>
#include <nccl.h>
#define SAME_LAYOUT(ours, theirs, field_ours, field_theirs)                                        \
    _Static_assert(offsetof(ours, field_ours) == offsetof(theirs, field_theirs),                   \
                   #ours "." #field_ours " is not where cuda.h puts " #field_theirs)
_Static_assert(sizeof(struct cu_alloc_prop) == sizeof(CUmemAllocationProp), "CUmemAllocationProp");
SAME_LAYOUT(struct cu_alloc_prop, CUmemAllocationProp, requested_handle_types,
            requestedHandleTypes);
SAME_LAYOUT(struct cu_alloc_prop, CUmemAllocationProp, location, location);
SAME_LAYOUT(struct cu_alloc_prop, CUmemAllocationProp, location.id, location.id);
SAME_LAYOUT(struct cu_alloc_prop, CUmemAllocationProp, win32_handle_meta_data, win32HandleMetaData);
SAME_LAYOUT(struct cu_alloc_prop, CUmemAllocationProp, alloc_flags, allocFlags);
SAME_LAYOUT(struct cu_alloc_prop, CUmemAllocationProp, alloc_flags.usage, allocFlags.usage);
_Static_assert(sizeof(struct cu_access_desc) == sizeof(CUmemAccessDesc), "CUmemAccessDesc");
SAME_LAYOUT(struct cu_access_desc, CUmemAccessDesc, flags, flags);
_Static_assert(sizeof(struct cu_ext_sema_desc) == sizeof(CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC),
               "CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC");
SAME_LAYOUT(struct cu_ext_sema_desc, CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC, handle.fd, handle.fd);
SAME_LAYOUT(struct cu_ext_sema_desc, CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC, flags, flags);
_Static_assert(sizeof(struct cu_ext_sema_signal) == sizeof(CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS),
               "CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS");
SAME_LAYOUT(struct cu_ext_sema_signal, CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS, flags, flags);
_Static_assert(sizeof(struct cu_ext_sema_wait) == sizeof(CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS),
               "CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS");
SAME_LAYOUT(struct cu_ext_sema_wait, CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, flags, flags);
_Static_assert(sizeof(struct cu_uuid) == sizeof(CUuuid), "CUuuid");
_Static_assert(sizeof(cu_ptr) == sizeof(CUdeviceptr), "CUdeviceptr");
_Static_assert(sizeof(cu_mem_handle) == sizeof(CUmemGenericAllocationHandle), "handle");
_Static_assert(sizeof(cu_result) == sizeof(CUresult), "CUresult");
_Static_assert(sizeof(int) == sizeof(CUmemAllocationHandleType), "CUmemAllocationHandleType");
_Static_assert(sizeof(int) == sizeof(CUmemRangeHandleType), "CUmemRangeHandleType");
_Static_assert(sizeof(int) == sizeof(CUdevice_attribute), "CUdevice_attribute");
_Static_assert(sizeof(int) == sizeof(ncclDataType_t), "ncclDataType_t");
_Static_assert(sizeof(int) == sizeof(ncclRedOp_t), "ncclRedOp_t");
#define SAME_VALUE(ours, theirs) _Static_assert((int)(ours) == (int)(theirs), #theirs)
SAME_VALUE(K_CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_ALLOCATION_TYPE_PINNED);
SAME_VALUE(K_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
SAME_VALUE(K_CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_DEVICE);
SAME_VALUE(K_CU_MEM_ACCESS_FLAGS_PROT_READWRITE, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
SAME_VALUE(K_CU_MEM_ALLOC_GRANULARITY_RECOMMENDED, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
SAME_VALUE(K_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD);
SAME_VALUE(K_CU_STREAM_NON_BLOCKING, CU_STREAM_NON_BLOCKING);
SAME_VALUE(K_CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
SAME_VALUE(K_CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
SAME_VALUE(K_CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
SAME_VALUE(K_CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
           CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
SAME_VALUE(K_CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
           CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED);
SAME_VALUE(K_CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED);
SAME_VALUE(K_CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD,
           CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD);
SAME_VALUE(K_NCCL_FLOAT32, ncclFloat32);
SAME_VALUE(K_NCCL_SUM, ncclSum);
SAME_VALUE(0, CUDA_SUCCESS);
SAME_VALUE(0, ncclSuccess);
SAME_VALUE(K_CU_ERROR_NOT_READY, CUDA_ERROR_NOT_READY);
SAME_VALUE(K_NCCL_IN_PROGRESS, ncclInProgress);
_Static_assert(sizeof(nccl_unique_id) == sizeof(ncclUniqueId), "ncclUniqueId");
#endif

/* The symbols each table loads: field, exported name (the one cuda.h's macros map the API name
 * to: cuMemsetD32 is cuMemsetD32_v2, ...; the unversioned symbols are the old 32-bit-pointer entry
 * points), and whether it may be missing. cuDeviceGetUuid is loaded apart (kp_cuda_load). */
#define KP_CUDA_SYMBOLS(X)                                                                         \
    X(Init, "cuInit", 0)                                                                           \
    X(DriverGetVersion, "cuDriverGetVersion", 0)                                                   \
    X(GetErrorName, "cuGetErrorName", 0)                                                           \
    X(DeviceGetCount, "cuDeviceGetCount", 0)                                                       \
    X(DeviceGet, "cuDeviceGet", 0)                                                                 \
    X(DeviceGetName, "cuDeviceGetName", 0)                                                         \
    X(DeviceGetAttribute, "cuDeviceGetAttribute", 0)                                               \
    X(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 0)                                       \
    X(CtxSetCurrent, "cuCtxSetCurrent", 0)                                                         \
    X(CtxSynchronize, "cuCtxSynchronize", 0)                                                       \
    X(MemGetAllocationGranularity, "cuMemGetAllocationGranularity", 0)                             \
    X(MemCreate, "cuMemCreate", 0)                                                                 \
    X(MemRelease, "cuMemRelease", 0)                                                               \
    X(MemAddressReserve, "cuMemAddressReserve", 0)                                                 \
    X(MemAddressFree, "cuMemAddressFree", 0)                                                       \
    X(MemMap, "cuMemMap", 0)                                                                       \
    X(MemUnmap, "cuMemUnmap", 0)                                                                   \
    X(MemSetAccess, "cuMemSetAccess", 0)                                                           \
    X(MemExportToShareableHandle, "cuMemExportToShareableHandle", 0)                               \
    X(MemGetHandleForAddressRange, "cuMemGetHandleForAddressRange", 1)                             \
    X(MemsetD32, "cuMemsetD32_v2", 0)                                                              \
    X(MemcpyDtoH, "cuMemcpyDtoH_v2", 0)                                                            \
    X(StreamCreate, "cuStreamCreate", 0)                                                           \
    X(StreamSynchronize, "cuStreamSynchronize", 0)                                                 \
    X(ImportExternalSemaphore, "cuImportExternalSemaphore", 0)                                     \
    X(SignalExternalSemaphoresAsync, "cuSignalExternalSemaphoresAsync", 0)                         \
    X(WaitExternalSemaphoresAsync, "cuWaitExternalSemaphoresAsync", 0)                             \
    X(CtxPushCurrent, "cuCtxPushCurrent_v2", 0)                                                    \
    X(CtxPopCurrent, "cuCtxPopCurrent_v2", 0)                                                      \
    X(StreamQuery, "cuStreamQuery", 0)                                                             \
    X(StreamDestroy, "cuStreamDestroy_v2", 0)                                                      \
    X(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", 0)

#define KP_NCCL_SYMBOLS(X)                                                                         \
    X(GetVersion, "ncclGetVersion", 0)                                                             \
    X(GetErrorString, "ncclGetErrorString", 0)                                                     \
    X(CommInitAll, "ncclCommInitAll", 0)                                                           \
    X(CommDestroy, "ncclCommDestroy", 0)                                                           \
    X(GroupStart, "ncclGroupStart", 0)                                                             \
    X(GroupEnd, "ncclGroupEnd", 0)                                                                 \
    X(AllReduce, "ncclAllReduce", 0)                                                               \
    X(GetUniqueId, "ncclGetUniqueId", 0)                                                           \
    X(CommInitRank, "ncclCommInitRank", 0)                                                         \
    X(CommGetAsyncError, "ncclCommGetAsyncError", 0)                                               \
    X(CommAbort, "ncclCommAbort", 0)

/* dlsym's data pointer into a function pointer slot (POSIX guarantees the conversion). A missing
 * required symbol's name goes to *missing (the first one only); returns 0 or -1. */
static inline int kp__cuda_sym(void *lib, const char *name, void *slot, size_t size, int optional,
                               const char **missing)
{
    void *p = dlsym(lib, name);
    if (p) {
        memcpy(slot, &p, size);
        return 0;
    }
    if (!optional && !*missing)
        *missing = name;
    return optional ? 0 : -1;
}

#define KP__CUDA_LOAD_ONE(field, name, optional)                                                   \
    bad |= kp__cuda_sym(lib, name, (void *)&api->field, sizeof api->field, optional, missing);

/* Fills *api from libcuda.so.1 (lib): 0, or -1 with the first missing symbol in *missing.
 * cuDeviceGetUuid_v2 (CUDA 11.4+) gives NVML's UUID also under MIG; older drivers have the first
 * version only. */
static inline int kp_cuda_load(void *lib, kp_cuda_api *api, const char **missing)
{
    int bad = 0;
    *missing = NULL;
    memset(api, 0, sizeof *api);
    KP_CUDA_SYMBOLS(KP__CUDA_LOAD_ONE)
    kp__cuda_sym(lib, "cuDeviceGetUuid_v2", (void *)&api->DeviceGetUuid, sizeof api->DeviceGetUuid,
                 1, missing);
    if (!api->DeviceGetUuid)
        bad |= kp__cuda_sym(lib, "cuDeviceGetUuid", (void *)&api->DeviceGetUuid,
                            sizeof api->DeviceGetUuid, 0, missing);
    return bad ? -1 : 0;
}

/* Fills *api from libnccl.so.2 (lib), as kp_cuda_load. */
static inline int kp_nccl_load(void *lib, kp_nccl_api *api, const char **missing)
{
    int bad = 0;
    *missing = NULL;
    memset(api, 0, sizeof *api);
    KP_NCCL_SYMBOLS(KP__CUDA_LOAD_ONE)
    return bad ? -1 : 0;
}

/*
 * Opens libnccl.so.2: `given` (a path) alone when set; else the dynamic loader's search path
 * (LD_LIBRARY_PATH, ld.so.cache); else the NVIDIA pip wheel (nvidia/nccl/lib/libnccl.so.2) of
 * $VIRTUAL_ENV, /opt/torch/.venv (PyTorch's, on the GPU machines), /usr/local/lib/python3.* and
 * /usr/lib/python3. The path opened goes to `used`; where nothing opens, the last failure to
 * `why` (each of size `size`).
 */
static inline void *kp_nccl_open(const char *given, char *used, char *why, size_t size)
{
    void *lib = NULL;
    snprintf(why, size, "libnccl.so.2 is not on the loader's path or in a Python environment");
    if (given) {
        snprintf(used, size, "%s", given);
        if (!(lib = dlopen(given, RTLD_NOW | RTLD_LOCAL)))
            snprintf(why, size, "%s does not load: %s", given, dlerror());
        return lib;
    }
    if ((lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL))) {
        snprintf(used, size, "libnccl.so.2 (the dynamic loader's search path)");
        return lib;
    }
    const char *venv = getenv("VIRTUAL_ENV");
    char pattern[4][512];
    int np = 0;
    if (venv && *venv)
        snprintf(pattern[np++], sizeof pattern[0],
                 "%s/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2", venv);
    snprintf(pattern[np++], sizeof pattern[0],
             "/opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2");
    snprintf(pattern[np++], sizeof pattern[0],
             "/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2");
    snprintf(pattern[np++], sizeof pattern[0],
             "/usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2");
    for (int k = 0; k < np && !lib; k++) {
        glob_t gl;
        if (glob(pattern[k], 0, NULL, &gl) == 0) {
            for (size_t j = 0; j < gl.gl_pathc && !lib; j++) {
                if ((lib = dlopen(gl.gl_pathv[j], RTLD_NOW | RTLD_LOCAL)))
                    snprintf(used, size, "%s", gl.gl_pathv[j]);
                else
                    snprintf(why, size, "%s does not load: %s", gl.gl_pathv[j], dlerror());
            }
        }
        globfree(&gl);
    }
    return lib;
}

#endif
