/* SPDX-License-Identifier: Apache-2.0 */
/* Vendor, device-type and architecture normalisation against strings real drivers report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "vendor.h"

static void test_pocl_on_amd_cpu_is_pocl(void **state)
{
    /* PoCL 3.1 on an AMD EPYC: vendor string AuthenticAMD, vendor id Intel's 0x8086. */
    assert_int_equal(kp__vendor_detect("Portable Computing Language", "The pocl project",
                                       "AuthenticAMD", "pthread-skylake-avx512-AMD EPYC", 0x8086),
                     KP_VENDOR_POCL);
    assert_int_equal(kp__vendor_detect(NULL, "The pocl project", "GenuineIntel", NULL, 0x8086),
                     KP_VENDOR_POCL);
}

static void test_gpu_vendors(void **state)
{
    assert_int_equal(kp__vendor_detect("NVIDIA CUDA", "NVIDIA Corporation", "NVIDIA Corporation",
                                       "NVIDIA H200", 0x10de),
                     KP_VENDOR_NVIDIA);
    assert_int_equal(kp__vendor_detect("AMD Accelerated Parallel Processing",
                                       "Advanced Micro Devices, Inc.",
                                       "Advanced Micro Devices, Inc.", "gfx1030", 0x1002),
                     KP_VENDOR_AMD);
    assert_int_equal(
        kp__vendor_detect("rusticl", "Mesa/X.org", "AMD", "AMD Radeon RX 6800", 0x1002),
        KP_VENDOR_AMD);
    assert_int_equal(kp__vendor_detect("Intel(R) OpenCL Graphics", "Intel(R) Corporation",
                                       "Intel(R) Corporation", "Intel(R) Arc(TM) A770", 0x8086),
                     KP_VENDOR_INTEL);
    assert_int_equal(kp__vendor_detect("Apple", "Apple", "Apple", "Apple M2", 0x1027f00),
                     KP_VENDOR_APPLE);
    assert_int_equal(kp__vendor_detect("ARM Platform", "ARM", "ARM", "Mali-G78", 0x13b5),
                     KP_VENDOR_ARM);
    assert_int_equal(kp__vendor_detect("QUALCOMM Snapdragon(TM)", "QUALCOMM", "QUALCOMM",
                                       "QUALCOMM Adreno(TM)", 0x5143),
                     KP_VENDOR_QUALCOMM);
}

static void test_vendor_id_is_the_last_resort(void **state)
{
    assert_int_equal(kp__vendor_detect("Some Platform", "Someone", "Someone", "Thing", 0x10de),
                     KP_VENDOR_NVIDIA);
    assert_int_equal(kp__vendor_detect("Some Platform", "Someone", "Someone", "Thing", 0x1234),
                     KP_VENDOR_UNKNOWN);
    assert_int_equal(kp__vendor_detect(NULL, NULL, NULL, NULL, 0), KP_VENDOR_UNKNOWN);
}

static void test_manifest_names_and_aliases(void **state)
{
    kp_vendor v;
    assert_int_equal(kp__vendor_parse("nvidia", &v), 0);
    assert_int_equal(v, KP_VENDOR_NVIDIA);
    assert_int_equal(kp__vendor_parse("AMD", &v), 0);
    assert_int_equal(v, KP_VENDOR_AMD);
    assert_int_equal(kp__vendor_parse("mali", &v), 0);
    assert_int_equal(v, KP_VENDOR_ARM);
    assert_int_equal(kp__vendor_parse("adreno", &v), 0);
    assert_int_equal(v, KP_VENDOR_QUALCOMM);
    assert_int_equal(kp__vendor_parse("nvidea", &v), -1);
    assert_int_equal(kp__vendor_parse(NULL, &v), -1);
    kp_device_type t;
    assert_int_equal(kp__device_type_parse("GPU", &t), 0);
    assert_int_equal(t, KP_DEVICE_GPU);
    assert_int_equal(kp__device_type_parse("fpga", &t), -1);
    assert_string_equal(kp_vendor_name(KP_VENDOR_POCL), "pocl");
    assert_string_equal(kp_vendor_name((kp_vendor)99), "unknown");
}

static void test_arch(void **state)
{
    char a[64];
    kp__arch_detect(KP_VENDOR_NVIDIA, "NVIDIA H200", "OpenCL 3.0 CUDA", 9, 0, a, sizeof a);
    assert_string_equal(a, "sm_90");
    kp__arch_detect(KP_VENDOR_NVIDIA, "NVIDIA A100", "OpenCL 3.0 CUDA", 8, 6, a, sizeof a);
    assert_string_equal(a, "sm_86");
    kp__arch_detect(KP_VENDOR_AMD, "gfx1030", "OpenCL 2.0 AMD-APP", 0, 0, a, sizeof a);
    assert_string_equal(a, "gfx1030");
    kp__arch_detect(KP_VENDOR_AMD, "gfx90a:sramecc+:xnack-", "OpenCL 2.0", 0, 0, a, sizeof a);
    assert_string_equal(a, "gfx90a");
    kp__arch_detect(KP_VENDOR_POCL, "pthread-skylake-avx512-AMD EPYC",
                    "OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-skylake-avx512", 0, 0, a,
                    sizeof a);
    assert_string_equal(a, "skylake-avx512");
    kp__arch_detect(KP_VENDOR_POCL, "cpu", "OpenCL 3.0 PoCL", 0, 0, a, sizeof a);
    assert_string_equal(a, "");
    kp__arch_detect(KP_VENDOR_INTEL, "Intel(R) Arc(TM)", "OpenCL 3.0 NEO", 0, 0, a, sizeof a);
    assert_string_equal(a, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pocl_on_amd_cpu_is_pocl),
        cmocka_unit_test(test_gpu_vendors),
        cmocka_unit_test(test_vendor_id_is_the_last_resort),
        cmocka_unit_test(test_manifest_names_and_aliases),
        cmocka_unit_test(test_arch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
