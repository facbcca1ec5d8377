/* SPDX-License-Identifier: Apache-2.0 */
/* The plugin ABI's layouts, pinned: a field that moves or a struct that changes size breaks every
 * plugin built before (include/kernelport/plugin.h's rules: structs only grow at the end). The
 * numbers are those of LP64 targets (x86-64, AArch64), where they are checked at compile time.
 * kp_tensor and kp_arg, which the ABI also passes, are pinned with the rest of the public API in
 * test-layouts.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kernelport/plugin.h"

#if defined(__LP64__)
#define PIN(type, field, offset)                                                                   \
    _Static_assert(offsetof(type, field) == (offset), #type "." #field " moved")

/* kp_param_desc */
_Static_assert(sizeof(kp_param_desc) == 48, "kp_param_desc size");
PIN(kp_param_desc, name, 0);
PIN(kp_param_desc, kind, 8);
PIN(kp_param_desc, access, 12);
PIN(kp_param_desc, dtypes, 16);
PIN(kp_param_desc, flags, 20);
PIN(kp_param_desc, int_default, 24);
PIN(kp_param_desc, float_default, 32);
PIN(kp_param_desc, doc, 40);
/* kp_tunable_desc */
_Static_assert(sizeof(kp_tunable_desc) == 64, "kp_tunable_desc size");
PIN(kp_tunable_desc, name, 0);
PIN(kp_tunable_desc, default_value, 8);
PIN(kp_tunable_desc, allowed, 16);
PIN(kp_tunable_desc, n_allowed, 24);
PIN(kp_tunable_desc, flags, 28);
PIN(kp_tunable_desc, min, 32);
PIN(kp_tunable_desc, max, 40);
PIN(kp_tunable_desc, choices, 48);
PIN(kp_tunable_desc, doc, 56);
/* kp_value */
_Static_assert(sizeof(kp_value) == 184, "kp_value size");
PIN(kp_value, tensor, 0);
PIN(kp_value, i, 152);
PIN(kp_value, f, 160);
PIN(kp_value, host, 168);
PIN(kp_value, present, 176);
PIN(kp_value, reserved, 180);
/* kp_call */
_Static_assert(sizeof(kp_call) == 24, "kp_call size");
PIN(kp_call, struct_size, 0);
PIN(kp_call, n_args, 4);
PIN(kp_call, args, 8);
PIN(kp_call, desc, 16);
/* kp_cost */
_Static_assert(sizeof(kp_cost) == 24, "kp_cost size");
PIN(kp_cost, struct_size, 0);
PIN(kp_cost, flops, 8);
PIN(kp_cost, bytes, 16);
/* kp_kernel_desc */
_Static_assert(sizeof(kp_kernel_desc) == 200, "kp_kernel_desc size");
PIN(kp_kernel_desc, struct_size, 0);
PIN(kp_kernel_desc, name, 8);
PIN(kp_kernel_desc, summary, 16);
PIN(kp_kernel_desc, params, 24);
PIN(kp_kernel_desc, n_params, 32);
PIN(kp_kernel_desc, n_tunables, 36);
PIN(kp_kernel_desc, tunables, 40);
PIN(kp_kernel_desc, source, 48);
PIN(kp_kernel_desc, source_name, 56);
PIN(kp_kernel_desc, entry, 64);
PIN(kp_kernel_desc, build_options, 72);
PIN(kp_kernel_desc, check, 80);
PIN(kp_kernel_desc, enqueue, 88);
PIN(kp_kernel_desc, reference, 96);
PIN(kp_kernel_desc, sample, 104);
PIN(kp_kernel_desc, cost, 112);
PIN(kp_kernel_desc, verify_sizes, 120);
PIN(kp_kernel_desc, bench_sizes, 128);
PIN(kp_kernel_desc, atol, 136);
PIN(kp_kernel_desc, rtol, 144);
PIN(kp_kernel_desc, tolerance, 152);
PIN(kp_kernel_desc, warmup, 160);
PIN(kp_kernel_desc, user, 168);
PIN(kp_kernel_desc, describe, 176);
PIN(kp_kernel_desc, supported, 184);
PIN(kp_kernel_desc, resolve, 192);
/* kp_host_api */
_Static_assert(sizeof(kp_host_api) == 248, "kp_host_api size");
PIN(kp_host_api, struct_size, 0);
PIN(kp_host_api, abi_major, 4);
PIN(kp_host_api, abi_minor, 8);
PIN(kp_host_api, register_kernel, 16);
PIN(kp_host_api, fail, 24);
PIN(kp_host_api, log, 32);
PIN(kp_host_api, tunable, 40);
PIN(kp_host_api, device, 48);
PIN(kp_host_api, cl_kernel, 56);
PIN(kp_host_api, arg_buffer, 64);
PIN(kp_host_api, arg_value, 72);
PIN(kp_host_api, arg_local, 80);
PIN(kp_host_api, enqueue_ndrange, 88);
PIN(kp_host_api, scratch, 96);
PIN(kp_host_api, launch, 104);
PIN(kp_host_api, cl_context, 112);
PIN(kp_host_api, cl_queue, 120);
PIN(kp_host_api, cl_device, 128);
PIN(kp_host_api, cl_mem, 136);
PIN(kp_host_api, cl_event_slot, 144);
PIN(kp_host_api, kernel_user, 152);
PIN(kp_host_api, sample_tensor, 160);
PIN(kp_host_api, sample_int, 168);
PIN(kp_host_api, sample_float, 176);
PIN(kp_host_api, sample_random, 184);
PIN(kp_host_api, sample_view, 192);
PIN(kp_host_api, tunable_index, 200);
PIN(kp_host_api, arg_tensor, 208);
PIN(kp_host_api, cl_kernel_build, 216);
PIN(kp_host_api, buffer_read, 224);
PIN(kp_host_api, check_shape, 232);
/* kp_plugin_info */
_Static_assert(sizeof(kp_plugin_info) == 80, "kp_plugin_info size");
PIN(kp_plugin_info, struct_size, 0);
PIN(kp_plugin_info, abi_major, 4);
PIN(kp_plugin_info, abi_minor, 8);
PIN(kp_plugin_info, reserved0, 12);
PIN(kp_plugin_info, name, 16);
PIN(kp_plugin_info, version, 24);
PIN(kp_plugin_info, description, 32);
PIN(kp_plugin_info, init, 40);
PIN(kp_plugin_info, reserved, 48);
#endif

/* Members added after ABI 1.0 come after every 1.0 member, in the order of their minor version. */
static void test_later_members_come_last(void **state)
{
    assert_true(offsetof(kp_kernel_desc, describe) > offsetof(kp_kernel_desc, user));
    assert_true(offsetof(kp_kernel_desc, supported) > offsetof(kp_kernel_desc, describe));
    assert_true(offsetof(kp_kernel_desc, resolve) > offsetof(kp_kernel_desc, supported));
    assert_true(offsetof(kp_host_api, arg_tensor) > offsetof(kp_host_api, tunable_index));
    assert_true(offsetof(kp_host_api, buffer_read) > offsetof(kp_host_api, cl_kernel_build));
    assert_true(offsetof(kp_host_api, check_shape) > offsetof(kp_host_api, buffer_read));
    assert_true(offsetof(kp_host_api, sample_kernel_user) > offsetof(kp_host_api, check_shape));
    assert_int_equal(sizeof(kp_host_api),
                     offsetof(kp_host_api, sample_kernel_user) + sizeof(void *));
    assert_int_equal(sizeof(kp_kernel_desc), offsetof(kp_kernel_desc, resolve) + sizeof(void *));
    assert_int_equal(KP_ABI_MAJOR, 1);
    assert_int_equal(KP_ABI_MINOR, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_later_members_come_last),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
