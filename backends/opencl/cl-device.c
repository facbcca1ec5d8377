/* SPDX-License-Identifier: Apache-2.0 */
/* Enumerates OpenCL platforms and devices and describes each as a kp_device_info. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CL/cl_ext.h>

#include "cl-internal.h"
#include "vendor.h"

#ifndef CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV
#define CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV 0x4000
#define CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV 0x4001
#endif
#ifndef CL_DEVICE_PCI_BUS_ID_NV
#define CL_DEVICE_PCI_BUS_ID_NV 0x4008
#define CL_DEVICE_PCI_SLOT_ID_NV 0x4009
#endif
#ifndef CL_DEVICE_UUID_KHR
#define CL_DEVICE_UUID_KHR 0x106A
#endif
#ifndef CL_DEVICE_PCI_BUS_INFO_KHR
#define CL_DEVICE_PCI_BUS_INFO_KHR 0x410F
#endif

static void str_info(cl_device_id d, cl_device_info what, char *out, size_t size)
{
    out[0] = '\0';
    if (clGetDeviceInfo(d, what, size, out, NULL) != CL_SUCCESS)
        out[0] = '\0';
    out[size - 1] = '\0';
}

static int has_extension(const char *extensions, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = extensions; p && (p = strstr(p, name)); p += n)
        if ((p == extensions || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return 1;
    return 0;
}

static void describe(cl_platform_id p, cl_device_id d, kp_device_info *info)
{
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
    char platform_vendor[128] = "", pversion[64] = "";
    clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof info->platform, info->platform, NULL);
    clGetPlatformInfo(p, CL_PLATFORM_VENDOR, sizeof platform_vendor, platform_vendor, NULL);
    clGetPlatformInfo(p, CL_PLATFORM_VERSION, sizeof pversion, pversion, NULL);
    str_info(d, CL_DEVICE_NAME, info->name, sizeof info->name);
    str_info(d, CL_DEVICE_VENDOR, info->vendor_string, sizeof info->vendor_string);
    str_info(d, CL_DRIVER_VERSION, info->driver, sizeof info->driver);
    str_info(d, CL_DEVICE_VERSION, info->version, sizeof info->version);
    str_info(d, CL_DEVICE_OPENCL_C_VERSION, info->c_version, sizeof info->c_version);

    cl_device_type type = 0;
    clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    info->type = (type & CL_DEVICE_TYPE_GPU)           ? KP_DEVICE_GPU
                 : (type & CL_DEVICE_TYPE_CPU)         ? KP_DEVICE_CPU
                 : (type & CL_DEVICE_TYPE_ACCELERATOR) ? KP_DEVICE_ACCELERATOR
                                                       : KP_DEVICE_OTHER;
    cl_uint u = 0;
    cl_ulong ul = 0;
    clGetDeviceInfo(d, CL_DEVICE_VENDOR_ID, sizeof u, &u, NULL);
    info->vendor_id = u;
    clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof u, &u, NULL);
    info->compute_units = u;
    clGetDeviceInfo(d, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof u, &u, NULL);
    info->clock_mhz = u;
    clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof ul, &ul, NULL);
    info->global_mem = ul;
    clGetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof ul, &ul, NULL);
    info->local_mem = ul;
    clGetDeviceInfo(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof ul, &ul, NULL);
    info->max_alloc = ul;
    clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof info->max_workgroup,
                    &info->max_workgroup, NULL);
    clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof info->max_work_item,
                    info->max_work_item, NULL);

    size_t ext_size = 0;
    char *ext = NULL;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, NULL, &ext_size) == CL_SUCCESS &&
        (ext = calloc(1, ext_size + 1)))
        clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, ext_size, ext, NULL);
    info->fp16 = has_extension(ext, "cl_khr_fp16");
    info->fp64 = has_extension(ext, "cl_khr_fp64");

    info->vendor = kp__vendor_detect(info->platform, platform_vendor, info->vendor_string,
                                     info->name, info->vendor_id);
    cl_uint cc_major = 0, cc_minor = 0;
    if (has_extension(ext, "cl_nv_device_attribute_query")) {
        clGetDeviceInfo(d, CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, sizeof cc_major, &cc_major, NULL);
        clGetDeviceInfo(d, CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV, sizeof cc_minor, &cc_minor, NULL);
        cl_uint bus = 0, slot = 0;
        if (clGetDeviceInfo(d, CL_DEVICE_PCI_BUS_ID_NV, sizeof bus, &bus, NULL) == CL_SUCCESS &&
            clGetDeviceInfo(d, CL_DEVICE_PCI_SLOT_ID_NV, sizeof slot, &slot, NULL) == CL_SUCCESS)
            snprintf(info->pci_bus, sizeof info->pci_bus, "0000:%02x:%02x.%x", bus, slot >> 3,
                     slot & 7);
    }
    kp__arch_detect(info->vendor, info->name, info->version, cc_major, cc_minor, info->arch,
                    sizeof info->arch);
    if (has_extension(ext, "cl_khr_device_uuid") &&
        clGetDeviceInfo(d, CL_DEVICE_UUID_KHR, 16, info->uuid, NULL) == CL_SUCCESS)
        info->has_uuid = 1;
    if (has_extension(ext, "cl_khr_pci_bus_info")) {
        cl_uint pci[4] = {0}; /* domain, bus, device, function */
        if (clGetDeviceInfo(d, CL_DEVICE_PCI_BUS_INFO_KHR, sizeof pci, pci, NULL) == CL_SUCCESS)
            snprintf(info->pci_bus, sizeof info->pci_bus, "%04x:%02x:%02x.%x", pci[0], pci[1],
                     pci[2], pci[3]);
    }
    free(ext);
}

static kp_status enumerate(const kp__sink *sink, kp__device_entry **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR: the ICD loader found no driver */ || np == 0)
        return KP_OK;
    if (err != CL_SUCCESS)
        return kp__cl_fail(sink, err, "clGetPlatformIDs", NULL);
    cl_platform_id *platforms = calloc(np, sizeof *platforms);
    if (!platforms)
        return kp__sink_fail(sink, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    clGetPlatformIDs(np, platforms, NULL);
    kp__device_entry *entries = NULL;
    size_t n = 0;
    kp_status st = KP_OK;
    for (cl_uint p = 0; p < np && st == KP_OK; p++) {
        cl_uint nd = 0;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || !nd)
            continue;
        cl_device_id *ids = calloc(nd, sizeof *ids);
        kp__device_entry *grown = realloc(entries, (n + nd) * sizeof *entries);
        if (!ids || !grown) {
            free(ids);
            if (grown)
                entries = grown;
            st = kp__sink_fail(sink, KP_ERR_OUT_OF_MEMORY, "out of host memory");
            break;
        }
        entries = grown;
        clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, nd, ids, NULL);
        for (cl_uint d = 0; d < nd; d++) {
            kp__device_entry *e = &entries[n++];
            memset(e, 0, sizeof *e);
            describe(platforms[p], ids[d], &e->info);
            e->platform = platforms[p];
            e->device = ids[d];
        }
        free(ids);
    }
    free(platforms);
    if (st != KP_OK) {
        free(entries);
        return st;
    }
    *out = entries;
    *n_out = n;
    return KP_OK;
}

/* PoCL 3.1 (Debian 12) initialises its devices in the process's first clGetDeviceIDs, and another
 * thread's clGetDeviceIDs during that initialisation returns devices whose clGetDeviceInfo
 * crashes: runtimes created at once on several threads (the Rust binding's parallel tests)
 * enumerate one after the other. */
static pthread_mutex_t enumerate_lock = PTHREAD_MUTEX_INITIALIZER;

kp_status kp__cl_enumerate(const kp__sink *sink, kp__device_entry **out, size_t *n_out)
{
    pthread_mutex_lock(&enumerate_lock);
    kp_status st = enumerate(sink, out, n_out);
    pthread_mutex_unlock(&enumerate_lock);
    return st;
}
