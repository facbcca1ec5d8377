/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the logic kernels: shape checks, the wiring check, argument lists, tunables resolved by
 * device type, sample helpers. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logic.h"

const int64_t logic_pow2_256[9] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
const int64_t logic_auto_256[10] = {0, 1, 2, 4, 8, 16, 32, 64, 128, 256};
const int64_t logic_auto_64[8] = {0, 1, 2, 4, 8, 16, 32, 64};
const int64_t logic_auto_16[6] = {0, 1, 2, 4, 8, 16};

/* ---- checks ---------------------------------------------------------------------------------- */

kp_status logic_expect(kp_launch *l, const char *name, const kp_tensor *t, int32_t rank,
                       const int64_t *shape, const char *pattern)
{
    kp_status st = logic_host->check_shape(l, name, t, rank, shape, pattern);
    if (st != KP_OK)
        return st;
    char got[160];
    /* The kernels read rows as contiguous runs (the batch, the words, the 16 logits). */
    if (rank == 2 && t->shape[1] > 1 && t->strides[1] != 1)
        return logic_host->fail(l, KP_ERR_UNSUPPORTED,
                                "%s: the last dimension must be contiguous (stride 1), got %s",
                                name, kp_tensor_describe(t, got, sizeof got));
    return KP_OK;
}

kp_status logic_fits_int(kp_launch *l, const kp_call *call)
{
    for (uint32_t i = 0; i < call->n_args; i++) {
        const kp_tensor *t = &call->args[i].tensor;
        if (call->desc->params[i].kind != KP_ARG_KIND_TENSOR || !call->args[i].present)
            continue;
        int big = kp_tensor_extent(t) > INT_MAX || kp_tensor_numel(t) > INT_MAX;
        for (int32_t d = 0; d < t->rank && d < KP_MAX_RANK; d++)
            big |= t->shape[d] > INT_MAX || (t->shape[d] > 1 && t->strides[d] > INT_MAX);
        if (big)
            return logic_host->fail(l, KP_ERR_UNSUPPORTED,
                                    "%s: views reaching beyond 2^31 elements are not supported",
                                    call->desc->params[i].name);
    }
    return KP_OK;
}

kp_status logic_check_flag(kp_launch *l, const kp_call *call, int index)
{
    int64_t v = call->args[index].i;
    if (v != 0 && v != 1)
        return logic_host->fail(l, KP_ERR_INVALID_ARG, "%s: %lld is not 0 or 1",
                                call->desc->params[index].name, (long long)v);
    return KP_OK;
}

kp_status logic_read_ints(kp_launch *l, const kp_call *call, int index, int32_t **out)
{
    const kp_value *v = &call->args[index];
    const kp_tensor *t = &v->tensor;
    int64_t n = t->shape[0], stride = t->strides[0];
    int32_t *vals = malloc((size_t)(n ? n : 1) * sizeof *vals);
    if (!vals)
        return logic_host->fail(l, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    *out = vals;
    if (n == 0)
        return KP_OK;
    if (v->host) {
        const int32_t *p = KP_HOST_PTR(call, index, const int32_t);
        for (int64_t i = 0; i < n; i++)
            vals[i] = p[i * stride];
        return KP_OK;
    }
    size_t span = (size_t)(kp_tensor_extent(t) - t->offset);
    int32_t *raw = stride == 1 ? vals : malloc(span * sizeof *raw);
    if (!raw)
        return logic_host->fail(l, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    kp_status st = logic_host->buffer_read(l, t->buffer, (size_t)t->offset * sizeof *raw,
                                           span * sizeof *raw, raw);
    if (st == KP_OK && raw != vals)
        for (int64_t i = 0; i < n; i++)
            vals[i] = raw[i * stride];
    if (raw != vals)
        free(raw);
    return st;
}

kp_status logic_check_wiring(kp_launch *l, const kp_call *call, int a, int b, int64_t in_dim,
                             const char *x_name)
{
    int32_t *idx = NULL;
    kp_status st = KP_OK;
    const int sides[2] = {a, b};
    int64_t bad_gate = -1, bad_value = 0;
    int bad_side = 0;
    for (int s = 0; s < 2 && st == KP_OK; s++) {
        st = logic_read_ints(l, call, sides[s], &idx);
        int64_t n = call->args[sides[s]].tensor.shape[0];
        /* The lowest gate wins, whichever side it is on, as kp_logic_wiring_bad_gate reports. */
        for (int64_t g = 0; st == KP_OK && g < n && (bad_gate < 0 || g < bad_gate); g++)
            if (idx[g] < 0 || idx[g] >= in_dim) {
                bad_gate = g, bad_value = idx[g], bad_side = s;
                break;
            }
        free(idx);
        idx = NULL;
    }
    if (st == KP_OK && bad_gate >= 0)
        st = logic_host->fail(l, KP_ERR_INVALID_ARG,
                              "%s: gate %lld reads input %lld, outside %s's rows 0..%lld",
                              call->desc->params[sides[bad_side]].name, (long long)bad_gate,
                              (long long)bad_value, x_name, (long long)(in_dim - 1));
    return st;
}

/* ---- launches -------------------------------------------------------------------------------- */

kp_clargs logic_clargs_vw(kp_launch *l, const char *entry, int64_t vw)
{
    char options[32];
    snprintf(options, sizeof options, "-D VW=%lld", (long long)vw);
    return kp_clargs_begin(logic_host, l, entry, options);
}

void logic_clargs_optional(kp_clargs *a, const kp_value *v, const kp_tensor *stand_in,
                           uint32_t rank)
{
    if (v->present) {
        kp_clargs_tensor(a, &v->tensor, rank);
        return;
    }
    kp_tensor none = kp_tensor_1d(stand_in->buffer, (kp_dtype)stand_in->dtype, 0);
    kp_clargs_tensor(a, &none, rank);
}

static size_t round_up(int64_t n, size_t m)
{
    return ((size_t)(n > 0 ? n : 0) + m - 1) / m * m;
}

kp_status logic_clargs_enqueue(kp_clargs *a, int64_t global0, int64_t global1, size_t local0,
                               size_t local1)
{
    size_t global[2] = {round_up(global0, local0), round_up(global1, local1)};
    size_t local[2] = {local0, local1};
    return kp_clargs_enqueue(a, 2, global, local);
}

kp_status logic_check_workgroup(kp_launch *l, int64_t local0, int64_t local1, const char *what)
{
    const kp_device_info *d = logic_host->device(l);
    if (d && d->max_workgroup && (uint64_t)(local0 * local1) > d->max_workgroup)
        return logic_host->fail(l, KP_ERR_UNSUPPORTED,
                                "%s: a work-group of %lld x %lld exceeds the device's %zu", what,
                                (long long)local0, (long long)local1, d->max_workgroup);
    for (int i = 0; d && i < 2; i++) {
        int64_t v = i ? local1 : local0;
        if (d->max_work_item[i] && (uint64_t)v > d->max_work_item[i])
            return logic_host->fail(l, KP_ERR_UNSUPPORTED,
                                    "%s: %lld work-items along dimension %d exceed the device's "
                                    "%zu",
                                    what, (long long)v, i, d->max_work_item[i]);
    }
    return KP_OK;
}

/* ---- tunables decided by device type -------------------------------------------------------- */

const char *logic_resolve(kp_launch *l, const logic_auto *by_type, uint32_t n, uint32_t index,
                          int64_t value, int64_t *resolved)
{
    if (value != 0 || index >= n)
        return NULL;
    const kp_device_info *d = logic_host->device(l);
    int cpu = d && d->type == KP_DEVICE_CPU;
    int64_t v = cpu ? by_type[index].cpu : by_type[index].other;
    if (v == 0)
        return NULL; /* no auto value, or the call decides */
    *resolved = v;
    if (by_type[index].cpu == by_type[index].other)
        return "the same on every device";
    return cpu ? "on a CPU" : "on a device other than a CPU";
}

const char *logic_resolve_vw(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved)
{
    static const logic_auto by_type[] = {{0, 0}, {LOGIC_VW_CPU, LOGIC_VW_OTHER}};
    return logic_resolve(l, by_type, 2, index, value, resolved);
}

/* ---- samples --------------------------------------------------------------------------------- */

int logic_sample_dims(const char *name, const char *const *names, const int64_t (*dims)[3],
                      int64_t out[3])
{
    for (size_t i = 0; names[i]; i++)
        if (strcmp(names[i], name) == 0) {
            memcpy(out, dims[i], 3 * sizeof *out);
            return 3;
        }
    long long v[3] = {1, 1, 1};
    int n = sscanf(name, "%lldx%lldx%lld", &v[0], &v[1], &v[2]);
    if (n < 2 || v[0] < 1 || v[1] < 1 || v[2] < 1)
        return 0;
    for (int i = 0; i < 3; i++)
        out[i] = v[i];
    return n;
}

double logic_sample_uniform(kp_sample *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)(logic_host->sample_random(s) >> 11) * 0x1.0p-53;
}

kp_status logic_sample_wiring(kp_sample *s, int64_t G, int64_t IN, int same, int32_t **a,
                              int32_t **b)
{
    int32_t *pa = NULL, *pb = NULL;
    kp_status st =
        logic_host->sample_tensor(s, "a_idx", KP_I32, 1, &G, 0, (double)IN, (void **)&pa);
    if (st == KP_OK)
        st = logic_host->sample_tensor(s, "b_idx", KP_I32, 1, &G, 0, (double)IN, (void **)&pb);
    for (int64_t g = 0; st == KP_OK && same && g < G; g += 3)
        pb[g] = pa[g];
    if (a)
        *a = pa;
    if (b)
        *b = pb;
    return st;
}
