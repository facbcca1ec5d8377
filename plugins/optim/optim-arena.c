/* SPDX-License-Identifier: Apache-2.0 */
/* What the optim kernels share: the checks of an arena and its segment table, the arguments every
 * launch sets, the references' view of the table, and the sample arenas. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "optim.h"

const int64_t optim_workgroups[6] = {32, 64, 128, 256, 512, 1024};
const int64_t optim_runs[8] = {0, 1, 2, 4, 8, 16, 32, 64};
const kp_tunable_desc optim_tunables[OPTIM_N_TUNABLES] = {OPTIM_TUNABLES};

const char *optim_resolve(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved)
{
    if (index != OPTIM_TUNE_RUN || value != 0)
        return NULL;
    const kp_device_info *d = optim_host->device(l);
    const int cpu = d && d->type == KP_DEVICE_CPU;
    *resolved = cpu ? 16 : 1;
    return cpu ? "runs of 16 on CPUs" : "one group per work-item on GPUs and other devices";
}

/* ---- checks ------------------------------------------------------------------------------- */

kp_status optim_check_arrays(kp_launch *l, const kp_call *call, const int *idx, int n_idx,
                             int64_t *n)
{
    const char *first = NULL;
    char got[160];
    for (int i = 0; i < n_idx; i++) {
        const kp_value *v = &call->args[idx[i]];
        const char *name = call->desc->params[idx[i]].name;
        if (!v->present)
            continue;
        const kp_tensor *t = &v->tensor;
        if (!first) {
            if (t->rank != 1)
                return optim_host->fail(l, KP_ERR_INVALID_ARG,
                                        "%s: expected a 1-D arena [N], got %s", name,
                                        kp_tensor_describe(t, got, sizeof got));
            *n = t->shape[0];
            first = name;
        } else if (t->rank != 1 || t->shape[0] != *n) {
            return optim_host->fail(l, KP_ERR_INVALID_ARG,
                                    "%s: expected [N] = [%lld] like %s, got %s", name,
                                    (long long)*n, first, kp_tensor_describe(t, got, sizeof got));
        }
        if (t->shape[0] > 1 && t->strides[0] != 1)
            return optim_host->fail(l, KP_ERR_INVALID_ARG,
                                    "%s: %s is not contiguous (an arena has stride 1)", name,
                                    kp_tensor_describe(t, got, sizeof got));
        if (kp_tensor_extent(t) > INT_MAX)
            return optim_host->fail(l, KP_ERR_UNSUPPORTED,
                                    "%s: %s reaches past element 2^31 - 1 (kernels index with int)",
                                    name, kp_tensor_describe(t, got, sizeof got));
    }
    return KP_OK;
}

/* Reads the [rows, 2] i32 table argument `index` into a malloc'ed row-major array: its host
 * memory in a reference run, else a blocking host->buffer_read of the span it covers. */
static kp_status read_table(kp_launch *l, const kp_call *call, int index, int32_t **out)
{
    const kp_value *v = &call->args[index];
    const kp_tensor *t = &v->tensor;
    const int64_t rows = t->shape[0], s0 = t->strides[0], s1 = t->strides[1];
    int32_t *vals = malloc((size_t)(rows ? rows : 1) * 2 * sizeof *vals);
    if (!vals)
        return optim_host->fail(l, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    *out = vals;
    if (rows == 0)
        return KP_OK;
    const int32_t *src;
    int32_t *raw = NULL;
    if (v->host) {
        src = KP_HOST_PTR(call, index, const int32_t);
    } else {
        size_t span = (size_t)(kp_tensor_extent(t) - t->offset);
        raw = malloc(span * sizeof *raw);
        if (!raw)
            return optim_host->fail(l, KP_ERR_OUT_OF_MEMORY, "out of host memory");
        kp_status st = optim_host->buffer_read(l, t->buffer, (size_t)t->offset * sizeof *raw,
                                               span * sizeof *raw, raw);
        if (st != KP_OK) {
            free(raw);
            return st;
        }
        src = raw;
    }
    for (int64_t r = 0; r < rows; r++) {
        vals[2 * r] = src[r * s0];
        vals[2 * r + 1] = src[r * s0 + s1];
    }
    free(raw);
    return KP_OK;
}

kp_status optim_check_segments(kp_launch *l, const kp_call *call, int seg, int scl, int check,
                               int64_t n)
{
    const kp_value *sv = &call->args[seg], *cv = scl >= 0 ? &call->args[scl] : NULL;
    char got[160];
    if (!sv->present) {
        if (cv && cv->present)
            return optim_host->fail(l, KP_ERR_INVALID_ARG,
                                    "scales: per-segment multipliers need a segment table "
                                    "(segments)");
        return KP_OK;
    }
    const kp_tensor *t = &sv->tensor;
    const int64_t shape[2] = {-1, 2};
    kp_status st = optim_host->check_shape(l, "segments", t, 2, shape, "[n, 2]");
    if (st != KP_OK)
        return st;
    /* A segment holds a tensor of at least one element (a table of empty ones is no use): this
     * bounds the rows the check reads back. */
    if (t->shape[0] > (n > 1 ? n : 1))
        return optim_host->fail(l, KP_ERR_INVALID_ARG,
                                "segments: %s has more rows than the arena's %lld elements",
                                kp_tensor_describe(t, got, sizeof got), (long long)n);
    if (cv && cv->present) {
        const int64_t want[2] = {t->shape[0], 2};
        st = optim_host->check_shape(l, "scales", &cv->tensor, 2, want, "[n, 2] like segments");
        if (st != KP_OK)
            return st;
    }
    if (!call->args[check].i)
        return KP_OK;
    int32_t *table = NULL;
    st = read_table(l, call, seg, &table);
    for (int64_t r = 0; st == KP_OK && r < t->shape[0]; r++) {
        const int64_t off = table[2 * r], len = table[2 * r + 1];
        if (off < 0 || len < 0)
            st = optim_host->fail(l, KP_ERR_INVALID_ARG,
                                  "segments: segment %lld has offset %lld and length %lld (both "
                                  "must be at least 0)",
                                  (long long)r, (long long)off, (long long)len);
        else if (off + len > n)
            st = optim_host->fail(l, KP_ERR_INVALID_ARG,
                                  "segments: segment %lld (offset %lld, length %lld) reaches past "
                                  "the arena's %lld elements",
                                  (long long)r, (long long)off, (long long)len, (long long)n);
        else if (r > 0 && off < (int64_t)table[2 * r - 2] + table[2 * r - 1])
            st = optim_host->fail(
                l, KP_ERR_INVALID_ARG,
                "segments: segment %lld starts at %lld, before the end of segment %lld "
                "[%lld, %lld) (segments must be sorted by offset and disjoint)",
                (long long)r, (long long)off, (long long)(r - 1), (long long)table[2 * r - 2],
                (long long)table[2 * r - 2] + table[2 * r - 1]);
    }
    free(table);
    return st;
}

kp_status optim_check_scalar(kp_launch *l, const kp_call *call, int index)
{
    const kp_value *v = &call->args[index];
    if (!v->present || kp_tensor_numel(&v->tensor) == 1)
        return KP_OK;
    char got[160];
    return optim_host->fail(l, KP_ERR_INVALID_ARG, "%s: expected a scalar (rank 0 or [1]), got %s",
                            call->desc->params[index].name,
                            kp_tensor_describe(&v->tensor, got, sizeof got));
}

kp_status optim_check_range(kp_launch *l, const kp_call *call, int index, double lo, double hi,
                            int hi_open)
{
    const double x = call->args[index].f;
    if (x >= lo && (hi_open ? x < hi : x <= hi))
        return KP_OK;
    return optim_host->fail(l, KP_ERR_INVALID_ARG, "%s: %g is outside [%g, %g%s",
                            call->desc->params[index].name, x, lo, hi, hi_open ? ")" : "]");
}

/* ---- launches ------------------------------------------------------------------------------- */

int optim_aligned(const kp_call *call, const int *idx, int n_idx)
{
    for (int i = 0; i < n_idx; i++)
        if (call->args[idx[i]].present && call->args[idx[i]].tensor.offset % 4)
            return 0;
    return 1;
}

const char *optim_build_options(const kp_call *call, int p, int g, char *buf, size_t size)
{
    snprintf(buf, size, "-D PARAM_BF16=%d -D GRAD_BF16=%d",
             p >= 0 && call->args[p].tensor.dtype == KP_BF16,
             call->args[g].tensor.dtype == KP_BF16);
    return buf;
}

void optim_clargs_optional(kp_clargs *a, const kp_call *call, int index, const kp_tensor *stand_in,
                           uint32_t rank)
{
    if (index >= 0 && call->args[index].present) {
        const kp_value *v = &call->args[index];
        kp_clargs_tensor(a, &v->tensor, rank);
        return;
    }
    kp_tensor none = kp_tensor_1d(stand_in->buffer, (kp_dtype)stand_in->dtype, 0);
    kp_clargs_tensor(a, &none, rank);
}

void optim_clargs_segments(kp_clargs *a, const kp_call *call, int seg, int scl,
                           const kp_tensor *stand_in)
{
    const kp_value *sv = &call->args[seg];
    kp_clargs_int(a, sv->present ? (int32_t)sv->tensor.shape[0] : 0);
    optim_clargs_optional(a, call, seg, stand_in, 2);
    optim_clargs_optional(a, call, scl, stand_in, 2);
}

size_t optim_global_size(kp_launch *l, int64_t n, size_t *wg)
{
    const size_t run = (size_t)optim_host->tunable_index(l, OPTIM_TUNE_RUN);
    const size_t items = ((size_t)(n + 3) / 4 + run - 1) / run;
    *wg = (size_t)optim_host->tunable_index(l, OPTIM_TUNE_WG);
    return (items + *wg - 1) / *wg * *wg;
}

/* ---- references ----------------------------------------------------------------------------- */

optim_segments optim_segments_of(const kp_call *call, int seg, int scl)
{
    optim_segments s = {0};
    const kp_value *sv = &call->args[seg], *cv = scl >= 0 ? &call->args[scl] : NULL;
    if (!sv->present)
        return s;
    s.n = sv->tensor.shape[0];
    s.seg = KP_HOST_PTR(call, seg, const int32_t);
    s.seg_s0 = sv->tensor.strides[0];
    s.seg_s1 = sv->tensor.strides[1];
    if (cv && cv->present) {
        s.scl = KP_HOST_PTR(call, scl, const float);
        s.scl_s0 = cv->tensor.strides[0];
        s.scl_s1 = cv->tensor.strides[1];
    }
    return s;
}

int64_t optim_segment_of(const optim_segments *s, int64_t e, double *lr_mul, double *wd_mul)
{
    *lr_mul = 1.0;
    *wd_mul = 1.0;
    if (!s->seg)
        return 0;
    int64_t lo = 0, hi = s->n;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (s->seg[mid * s->seg_s0] <= e)
            lo = mid + 1;
        else
            hi = mid;
    }
    const int64_t r = lo - 1;
    if (r < 0 || e - s->seg[r * s->seg_s0] >= s->seg[r * s->seg_s0 + s->seg_s1])
        return -1;
    if (s->scl) {
        *lr_mul = s->scl[r * s->scl_s0];
        *wd_mul = s->scl[r * s->scl_s0 + s->scl_s1];
    }
    return r;
}

double optim_load(const kp_call *call, int index, int64_t i)
{
    if (call->args[index].tensor.dtype == KP_BF16)
        return kp_bf16_to_float(KP_HOST_PTR(call, index, const uint16_t)[i]);
    return KP_HOST_PTR(call, index, const float)[i];
}

void optim_store(const kp_call *call, int index, int64_t i, double v)
{
    if (call->args[index].tensor.dtype == KP_BF16)
        KP_HOST_PTR(call, index, uint16_t)[i] = kp_bf16_from_float((float)v);
    else
        KP_HOST_PTR(call, index, float)[i] = (float)v;
}

/* ---- samples -------------------------------------------------------------------------------- */

kp_status optim_sample_array(kp_sample *s, const optim_layout *lay, const char *name, int32_t dtype,
                             double lo, double hi)
{
    const int64_t storage = lay->n + lay->offset + (lay->offset ? 3 : 0), one = 1;
    kp_status st =
        optim_host->sample_tensor(s, name, dtype ? dtype : KP_F32, 1, &storage, lo, hi, NULL);
    return st == KP_OK && lay->offset
               ? optim_host->sample_view(s, name, 1, &lay->n, lay->offset, &one)
               : st;
}

int optim_size_number(const char *size, int64_t *n)
{
    char *end = NULL;
    long long v = strtoll(size, &end, 10);
    if (end == size || *end || v < 0 || v > INT_MAX)
        return 0;
    *n = v;
    return 1;
}

kp_status optim_sample_segments(kp_sample *s, const optim_layout *lay)
{
    if (!lay->segments)
        return KP_OK;
    const int64_t shape[2] = {lay->segments, 2};
    int32_t *table = NULL;
    kp_status st =
        optim_host->sample_tensor(s, "segments", KP_I32, 2, shape, 0, 1, (void **)&table);
    /* Odd lengths (1 among them) separated by gaps of 0 to 2 elements, the last one ending at
     * the arena's end or short of it, so groups of four straddle every kind of boundary. */
    int64_t at = 0;
    for (int r = 0; st == KP_OK && r < lay->segments; r++) {
        const int64_t left = lay->n - at, rows_left = lay->segments - r;
        int64_t len = r % 3 == 1 ? 1 : 2 * (int64_t)(optim_host->sample_random(s) % 9) + 3;
        if (r == lay->segments - 1)
            len = left - (r % 2);
        if (len > left - 3 * (rows_left - 1))
            len = left - 3 * (rows_left - 1);
        table[2 * r] = (int32_t)at;
        table[2 * r + 1] = (int32_t)(len > 0 ? len : 0);
        at += (len > 0 ? len : 0) + (int64_t)(r % 3);
        if (at > lay->n)
            at = lay->n;
    }
    if (st == KP_OK && lay->scales) {
        float *scl = NULL;
        st = optim_host->sample_tensor(s, "scales", KP_F32, 2, shape, 0.5, 2.0, (void **)&scl);
        /* Some segments without weight decay, as a no-decay param group. */
        for (int r = 0; st == KP_OK && r < lay->segments; r += 3)
            scl[2 * r + 1] = 0.0f;
    }
    return st;
}
