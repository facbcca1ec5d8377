/* SPDX-License-Identifier: Apache-2.0 */
/* Vendor and device-type normalisation: one table of the strings real drivers report. */
#include "vendor.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

int kp__contains_nocase(const char *haystack, const char *needle)
{
    if (!haystack || !needle)
        return 0;
    size_t n = strlen(needle);
    if (n == 0)
        return 1;
    for (const char *p = haystack; *p; p++)
        if (strncasecmp(p, needle, n) == 0)
            return 1;
    return 0;
}

/* Where a pattern is looked for, in the order drivers make reliable. */
enum field { PLATFORM_NAME, PLATFORM_VENDOR, DEVICE_VENDOR, DEVICE_NAME };

static const struct {
    enum field field;
    const char *pattern; /* case-insensitive substring */
    kp_vendor vendor;
} vendor_rules[] = {
    /* PoCL first: its device vendor is the CPU's maker and its vendor id is Intel's. */
    {PLATFORM_NAME, "Portable Computing Language", KP_VENDOR_POCL},
    {PLATFORM_VENDOR, "The pocl project", KP_VENDOR_POCL},
    {PLATFORM_NAME, "NVIDIA CUDA", KP_VENDOR_NVIDIA},
    {PLATFORM_NAME, "AMD Accelerated Parallel Processing", KP_VENDOR_AMD},
    {PLATFORM_NAME, "Intel(R) OpenCL", KP_VENDOR_INTEL},
    {PLATFORM_NAME, "Intel(R) CPU Runtime", KP_VENDOR_INTEL},
    {PLATFORM_NAME, "Apple", KP_VENDOR_APPLE},
    {PLATFORM_NAME, "ARM Platform", KP_VENDOR_ARM},
    {PLATFORM_NAME, "QUALCOMM Snapdragon", KP_VENDOR_QUALCOMM},
    {DEVICE_VENDOR, "NVIDIA", KP_VENDOR_NVIDIA},
    {DEVICE_VENDOR, "Advanced Micro Devices", KP_VENDOR_AMD},
    {DEVICE_VENDOR, "AuthenticAMD", KP_VENDOR_AMD},
    {DEVICE_VENDOR, "AMD", KP_VENDOR_AMD},
    {DEVICE_VENDOR, "Intel", KP_VENDOR_INTEL},
    {DEVICE_VENDOR, "GenuineIntel", KP_VENDOR_INTEL},
    {DEVICE_VENDOR, "Apple", KP_VENDOR_APPLE},
    {DEVICE_VENDOR, "ARM", KP_VENDOR_ARM},
    {DEVICE_NAME, "Mali", KP_VENDOR_ARM},
    {DEVICE_VENDOR, "QUALCOMM", KP_VENDOR_QUALCOMM},
    {DEVICE_NAME, "Adreno", KP_VENDOR_QUALCOMM},
};

static const struct {
    uint32_t id;
    kp_vendor vendor;
} vendor_ids[] = {
    {0x10de, KP_VENDOR_NVIDIA}, {0x1002, KP_VENDOR_AMD},      {0x1022, KP_VENDOR_AMD},
    {0x8086, KP_VENDOR_INTEL},  {0x13b5, KP_VENDOR_ARM},      {0x5143, KP_VENDOR_QUALCOMM},
    {0x106b, KP_VENDOR_APPLE},  {0x1027f00, KP_VENDOR_APPLE},
};

kp_vendor kp__vendor_detect(const char *platform_name, const char *platform_vendor,
                            const char *device_vendor, const char *device_name, uint32_t vendor_id)
{
    const char *fields[] = {platform_name, platform_vendor, device_vendor, device_name};
    for (size_t i = 0; i < sizeof vendor_rules / sizeof vendor_rules[0]; i++)
        if (kp__contains_nocase(fields[vendor_rules[i].field], vendor_rules[i].pattern))
            return vendor_rules[i].vendor;
    for (size_t i = 0; i < sizeof vendor_ids / sizeof vendor_ids[0]; i++)
        if (vendor_ids[i].id == vendor_id)
            return vendor_ids[i].vendor;
    return KP_VENDOR_UNKNOWN;
}

static const struct {
    const char *name;
    kp_vendor vendor;
} vendor_names[] = {
    {"pocl", KP_VENDOR_POCL},
    {"nvidia", KP_VENDOR_NVIDIA},
    {"amd", KP_VENDOR_AMD},
    {"intel", KP_VENDOR_INTEL},
    {"apple", KP_VENDOR_APPLE},
    {"arm", KP_VENDOR_ARM},
    {"qualcomm", KP_VENDOR_QUALCOMM},
    {"host", KP_VENDOR_HOST},
    /* aliases people write */
    {"mali", KP_VENDOR_ARM},
    {"adreno", KP_VENDOR_QUALCOMM},
    {"ati", KP_VENDOR_AMD},
};

int kp__vendor_parse(const char *name, kp_vendor *out)
{
    for (size_t i = 0; name && i < sizeof vendor_names / sizeof vendor_names[0]; i++)
        if (strcasecmp(name, vendor_names[i].name) == 0) {
            *out = vendor_names[i].vendor;
            return 0;
        }
    return -1;
}

const char *kp__vendor_known_names(void)
{
    return "pocl, nvidia, amd, intel, apple, arm, qualcomm, host";
}

int kp__device_type_parse(const char *name, kp_device_type *out)
{
    static const struct {
        const char *name;
        kp_device_type type;
    } types[] = {{"cpu", KP_DEVICE_CPU},
                 {"gpu", KP_DEVICE_GPU},
                 {"accelerator", KP_DEVICE_ACCELERATOR},
                 {"host", KP_DEVICE_HOST}};
    for (size_t i = 0; name && i < sizeof types / sizeof types[0]; i++)
        if (strcasecmp(name, types[i].name) == 0) {
            *out = types[i].type;
            return 0;
        }
    return -1;
}

const char *kp__device_type_known_names(void)
{
    return "cpu, gpu, accelerator, host";
}

void kp__arch_detect(kp_vendor vendor, const char *device_name, const char *device_version,
                     uint32_t cc_major, uint32_t cc_minor, char *out, size_t size)
{
    out[0] = '\0';
    if (vendor == KP_VENDOR_NVIDIA && cc_major > 0) {
        snprintf(out, size, "sm_%u%u", cc_major, cc_minor);
    } else if (vendor == KP_VENDOR_AMD && device_name && strncmp(device_name, "gfx", 3) == 0) {
        size_t n = 0;
        while (device_name[n] && (isalnum((unsigned char)device_name[n])) && n + 1 < size)
            n++;
        memcpy(out, device_name, n);
        out[n] = '\0';
    } else if (vendor == KP_VENDOR_POCL && device_version) {
        /* "OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-skylake-avx512": the CPU is what
         * follows the target triple's fourth component. */
        const char *h = strstr(device_version, "HSTR:");
        if (!h)
            return;
        h += 5;
        while (*h == ' ')
            h++;
        int dashes = 0;
        const char *p = h;
        for (; *p && *p != ' '; p++)
            if (*p == '-' && ++dashes == 5)
                break;
        if (dashes == 5) {
            p++;
            size_t n = strcspn(p, " ");
            if (n >= size)
                n = size - 1;
            memcpy(out, p, n);
            out[n] = '\0';
        }
    }
}
