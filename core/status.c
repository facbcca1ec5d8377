/* SPDX-License-Identifier: Apache-2.0 */
/* Names and descriptions of the public enums, generated from their tables. */
#include "kernelport/kernelport.h"

const char *kp_version(void)
{
    return KP_VERSION_STRING;
}

const char *kp_status_name(kp_status status)
{
    switch (status) {
#define KP__STATUS_NAME(name, value, text)                                                         \
    case KP_##name:                                                                                \
        return "KP_" #name;
        KP_STATUS_MAP(KP__STATUS_NAME)
#undef KP__STATUS_NAME
    }
    return "KP_STATUS_UNKNOWN";
}

const char *kp_status_str(kp_status status)
{
    switch (status) {
#define KP__STATUS_STR(name, value, text)                                                          \
    case KP_##name:                                                                                \
        return text;
        KP_STATUS_MAP(KP__STATUS_STR)
#undef KP__STATUS_STR
    }
    return "unknown status";
}

const char *kp_log_level_name(kp_log_level level)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    return (unsigned)level < 4 ? names[level] : "?";
}

const char *kp_vendor_name(kp_vendor vendor)
{
    static const char *const names[KP_VENDOR_COUNT] = {
        "unknown", "pocl", "nvidia", "amd", "intel", "apple", "arm", "qualcomm", "host"};
    return (unsigned)vendor < KP_VENDOR_COUNT ? names[vendor] : "unknown";
}

const char *kp_device_type_name(kp_device_type type)
{
    switch (type) {
    case KP_DEVICE_CPU:
        return "cpu";
    case KP_DEVICE_GPU:
        return "gpu";
    case KP_DEVICE_ACCELERATOR:
        return "accelerator";
    case KP_DEVICE_HOST:
        return "host";
    case KP_DEVICE_OTHER:
        break;
    }
    return "other";
}

const char *kp_arg_kind_name(kp_arg_kind kind)
{
    switch (kind) {
    case KP_ARG_KIND_TENSOR:
        return "tensor";
    case KP_ARG_KIND_INT:
        return "int";
    case KP_ARG_KIND_FLOAT:
        return "float";
    case KP_ARG_NONE:
        break;
    }
    return "none";
}

const char *kp_access_name(kp_access access)
{
    switch (access) {
    case KP_ACCESS_IN:
        return "in";
    case KP_ACCESS_OUT:
        return "out";
    case KP_ACCESS_INOUT:
        return "inout";
    }
    return "?";
}
