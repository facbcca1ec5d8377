/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: vendor and device-type normalisation from the strings drivers report. */
#ifndef KP_VENDOR_H
#define KP_VENDOR_H

#include <stddef.h>
#include <stdint.h>

#include "kernelport/kernelport.h"

/*
 * The vendor of an OpenCL device, from its platform name and vendor, device vendor and name, and
 * vendor id. The platform decides first (PoCL reports the CPU maker's vendor string and Intel's
 * id 0x8086 even on AMD CPUs, so "Portable Computing Language" must win), then the device vendor
 * string, then the vendor id. Any argument may be NULL.
 */
kp_vendor kp__vendor_detect(const char *platform_name, const char *platform_vendor,
                            const char *device_vendor, const char *device_name, uint32_t vendor_id);

/* Parses a vendor name as a manifest or device spec writes it ("nvidia", "AMD", "mali"...),
 * case-insensitively. Returns 0 and sets *out, or -1 when unknown. */
int kp__vendor_parse(const char *name, kp_vendor *out);
/* "pocl, nvidia, amd, intel, apple, arm, qualcomm, host" for error messages. */
const char *kp__vendor_known_names(void);

/* Parses "cpu", "gpu", "accelerator", "host" (case-insensitive); 0 or -1. */
int kp__device_type_parse(const char *name, kp_device_type *out);
const char *kp__device_type_known_names(void);

/*
 * The architecture name used by manifest `match: { arch: ... }`: "sm_90" for NVIDIA compute
 * capability 9.0, the device name for AMD ("gfx1030"), the LLVM CPU from PoCL's device version
 * ("... HSTR: pthread-x86_64-pc-linux-gnu-skylake-avx512" gives "skylake-avx512"), else "".
 */
void kp__arch_detect(kp_vendor vendor, const char *device_name, const char *device_version,
                     uint32_t cc_major, uint32_t cc_minor, char *out, size_t size);

/* Case-insensitive substring test; an empty needle matches. */
int kp__contains_nocase(const char *haystack, const char *needle);

#endif
