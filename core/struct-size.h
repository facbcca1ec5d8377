/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: the public structures that grow (docs/stability.md, "Structures that grow"): the size
 * of each one's first layout, and the one check and copy every call that takes or fills one
 * makes. */
#ifndef KP_STRUCT_SIZE_H
#define KP_STRUCT_SIZE_H

#include <stddef.h>

#include "kernelport/kernelport.h"
#include "kernelport/ops/gru.h"

/* The bytes of `type` up to the end of `member`: a layout's size without its tail padding. */
#define KP__SIZE_THROUGH(type, member) (offsetof(type, member) + sizeof(((type *)0)->member))

/* Each structure's first layout ends at the member named here; members added later come after
 * it, and a caller whose struct_size stops here still gets every member it knows. */
#define KP__FIRST_kp_runtime_options KP__SIZE_THROUGH(kp_runtime_options, log_level)
#define KP__FIRST_kp_device_info KP__SIZE_THROUGH(kp_device_info, fp64)
#define KP__FIRST_kp_param_info KP__SIZE_THROUGH(kp_param_info, float_default)
#define KP__FIRST_kp_kernel_info KP__SIZE_THROUGH(kp_kernel_info, n_tunables)
#define KP__FIRST_kp_tuning_info KP__SIZE_THROUGH(kp_tuning_info, notes)
#define KP__FIRST_kp_manifest_layer KP__SIZE_THROUGH(kp_manifest_layer, read)
#define KP__FIRST_kp_graph_info KP__SIZE_THROUGH(kp_graph_info, n_params)
#define KP__FIRST_kp_plugin_record KP__SIZE_THROUGH(kp_plugin_record, n_kernels)
#define KP__FIRST_kp_peak KP__SIZE_THROUGH(kp_peak, measured)
#define KP__FIRST_kp_bench_options KP__SIZE_THROUGH(kp_bench_options, seed)
#define KP__FIRST_kp_bench_result KP__SIZE_THROUGH(kp_bench_result, gbs)
#define KP__FIRST_kp_tune_options KP__SIZE_THROUGH(kp_tune_options, tunables)
#define KP__FIRST_kp_tune_result KP__SIZE_THROUGH(kp_tune_result, exhaustive)
#define KP__FIRST_kp_tuning_match KP__SIZE_THROUGH(kp_tuning_match, arch)

/*
 * Output structures. kp__out_check, before any work: KP_OK when `out` (a structure whose first
 * member is uint32_t struct_size) is not NULL and its struct_size covers at least the first
 * layout (`first` bytes), else KP_ERR_INVALID_ARG with a message naming `call` and `type`.
 * kp__out_write, after the work: copies the first min(struct_size, size) bytes of `full` (the
 * library's whole structure) into `out` and stores that count in out->struct_size; the caller's
 * bytes past it are left untouched.
 */
kp_status kp__out_check(const kp_runtime *rt, const char *call, const char *type, const void *out,
                        size_t first);
void kp__out_write(void *out, const void *full, size_t size);

#define KP__OUT_CHECK(rt, call, type, out)                                                         \
    kp__out_check((rt), (call), #type, (out), KP__FIRST_##type)
#define KP__OUT_WRITE(type, out, full) kp__out_write((out), (full), sizeof(type))

/*
 * Input structures: copies the caller's `in` (struct_size first) over `dst`, which holds the
 * library's defaults: struct_size 0 stands for the first layout; below `first` is refused; up to
 * `size` (the library's sizeof) those bytes are copied, and members past them keep their
 * defaults; a larger struct_size is accepted when the bytes past `size` are all zero (members of
 * a later version left at their defaults), refused otherwise. dst->struct_size becomes `size`.
 * Errors: KP_ERR_INVALID_ARG naming `call` and `type`.
 */
kp_status kp__in_copy(const kp_runtime *rt, const char *call, const char *type, void *dst,
                      const void *in, size_t first, size_t size);

#define KP__IN_COPY(rt, call, type, dst, in)                                                       \
    kp__in_copy((rt), (call), #type, (dst), (in), KP__FIRST_##type, sizeof(type))

#endif
