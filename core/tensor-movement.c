/* SPDX-License-Identifier: Apache-2.0 */
/* The movement calls of kernelport/ops/tensor.h that take more than one launch or check shapes
 * of their own: flip, pad and concatenation and their backward, each made of tensor.copy and
 * tensor.fill launches over views (docs/kernels/tensor.md, "Movement"). */
#include <stdio.h>
#include <string.h>

#include "kernelport/ops/tensor.h"
#include "runtime.h"
#include "view.h"

/* "[3, 4]" of t's shape. */
static const char *shape_str(const kp_tensor *t, char *buf, size_t size)
{
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int32_t d = 0; d < t->rank && d < KP_MAX_RANK && n < size; d++)
        n += (size_t)snprintf(buf + n, size - n, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
    if (n < size)
        snprintf(buf + n, size - n, "]");
    return buf;
}

/* Launches `kernel`, or (check_only) runs the core's checks of its arguments alone: buffers,
 * ranges, overlaps. */
static kp_status launch(kp_runtime *rt, const char *kernel, const kp_arg *args, size_t n,
                        int check_only)
{
    kp_kernel *k = NULL;
    kp_status st = kp_kernel_find(rt, kernel, &k);
    kp_value values[KP_MAX_PARAMS];
    if (st == KP_OK && check_only)
        return kp__args_bind(rt, k, args, n, values);
    return st == KP_OK ? kp_kernel_launch(rt, k, args, n, NULL) : st;
}

/* The core's checks of x and y as tensor.copy's arguments, whatever their shapes: so that a call
 * of several launches refuses x overlapping any of y, or y past its buffer, before the first. */
static kp_status check_copy(kp_runtime *rt, kp_tensor x, kp_tensor y)
{
    const kp_arg args[2] = {kp_arg_tensor("x", x), kp_arg_tensor("y", y)};
    return launch(rt, "tensor.copy", args, 2, 1);
}

static kp_status copy(kp_runtime *rt, kp_tensor x, kp_tensor y)
{
    if (kp_tensor_numel(&y) == 0)
        return KP_OK;
    const kp_arg args[2] = {kp_arg_tensor("x", x), kp_arg_tensor("y", y)};
    return launch(rt, "tensor.copy", args, 2, 0);
}

static kp_status fill(kp_runtime *rt, kp_tensor y, double value)
{
    if (kp_tensor_numel(&y) == 0)
        return KP_OK;
    const kp_arg args[2] = {kp_arg_tensor("y", y), kp_arg_float("value", value)};
    return launch(rt, "tensor.fill", args, 2, 0);
}

/* Fails unless a and b have one rank (a valid one). */
static kp_status same_rank(kp_runtime *rt, const char *fn, const char *an, const kp_tensor *a,
                           const char *bn, const kp_tensor *b)
{
    char sa[160], sb[160];
    if (a->rank < 0 || a->rank > KP_MAX_RANK || b->rank < 0 || b->rank > KP_MAX_RANK)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "%s: %s has rank %d and %s rank %d (0 .. %d)", fn,
                        an, a->rank, bn, b->rank, KP_MAX_RANK);
    if (a->rank != b->rank)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "%s: %s %s and %s %s differ in rank", fn, an,
                        shape_str(a, sa, sizeof sa), bn, shape_str(b, sb, sizeof sb));
    return KP_OK;
}

kp_status kp_flip(kp_runtime *rt, kp_tensor x, kp_tensor y, int64_t dims)
{
    char sx[160], sy[160];
    kp_status st = same_rank(rt, "kp_flip", "x", &x, "y", &y);
    if (st != KP_OK)
        return st;
    for (int32_t d = 0; d < x.rank; d++)
        if (x.shape[d] != y.shape[d])
            return kp__fail(rt, KP_ERR_INVALID_ARG,
                            "kp_flip: x %s and y %s differ at dimension %d (a flip keeps the "
                            "shape)",
                            shape_str(&x, sx, sizeof sx), shape_str(&y, sy, sizeof sy), d);
    if (dims != KP_ALL_AXES && (dims < 0 || dims >= ((int64_t)1 << x.rank)))
        return kp__fail(rt, KP_ERR_INVALID_ARG,
                        "kp_flip: dims 0x%llx names a dimension past x %s (bit d: dimension d; "
                        "-1: all)",
                        (unsigned long long)dims, shape_str(&x, sx, sizeof sx));
    for (int32_t d = 0; d < x.rank; d++)
        if ((dims >> d) & 1)
            x = kp_tensor_flip(x, d);
    return copy(rt, x, y);
}

/* Checks that inner fits in outer at `before` (pad: x in y; its backward: dx in dy). */
static kp_status check_pad(kp_runtime *rt, const char *fn, const char *in_name,
                           const kp_tensor *inner, const char *out_name, const kp_tensor *outer,
                           const int64_t *before)
{
    char si[160], so[160];
    kp_status st = same_rank(rt, fn, in_name, inner, out_name, outer);
    for (int32_t d = 0; st == KP_OK && d < inner->rank; d++) {
        const int64_t b = before ? before[d] : 0;
        if (b < 0)
            return kp__fail(rt, KP_ERR_INVALID_ARG, "%s: before[%d] is %lld (must be >= 0)", fn, d,
                            (long long)b);
        if (inner->shape[d] < 0 || outer->shape[d] < 0 || b > outer->shape[d] - inner->shape[d])
            return kp__fail(rt, KP_ERR_INVALID_ARG,
                            "%s: %s %s does not fit in %s %s after before[%d] = %lld (dimension "
                            "%d: %lld + %lld > %lld)",
                            fn, in_name, shape_str(inner, si, sizeof si), out_name,
                            shape_str(outer, so, sizeof so), d, (long long)b, d, (long long)b,
                            (long long)inner->shape[d], (long long)outer->shape[d]);
    }
    return st;
}

/* The part of outer where inner lies. */
static kp_tensor interior(kp_tensor outer, const kp_tensor *inner, const int64_t *before)
{
    for (int32_t d = 0; d < outer.rank; d++)
        outer = kp_tensor_narrow(outer, d, before ? before[d] : 0, inner->shape[d]);
    return outer;
}

kp_status kp_pad(kp_runtime *rt, kp_tensor x, kp_tensor y, const int64_t *before, double value)
{
    kp_status st = check_pad(rt, "kp_pad", "x", &x, "y", &y, before);
    if (st == KP_OK)
        st = check_copy(rt, x, y);
    if (st == KP_OK)
        st = copy(rt, x, interior(y, &x, before));
    /* Then the border alone, as slabs: along dimension d, the elements before and after x's
     * extent whose coordinates in the dimensions before d lie within x's. Each element of y is
     * written once (filling all of y, then copying x over it, writes x's part twice). */
    kp_tensor part = y;
    for (int32_t d = 0; st == KP_OK && d < y.rank; d++) {
        const int64_t b = before ? before[d] : 0, end = b + x.shape[d];
        st = fill(rt, kp_tensor_narrow(part, d, 0, b), value);
        if (st == KP_OK)
            st = fill(rt, kp_tensor_narrow(part, d, end, y.shape[d] - end), value);
        part = kp_tensor_narrow(part, d, b, x.shape[d]);
    }
    return st;
}

kp_status kp_pad_backward(kp_runtime *rt, kp_tensor dy, kp_tensor dx, const int64_t *before)
{
    kp_status st = check_pad(rt, "kp_pad_backward", "dx", &dx, "dy", &dy, before);
    return st == KP_OK ? copy(rt, interior(dy, &dx, before), dx) : st;
}

/* Whether two views (already checked against their buffers) share bytes. */
static int overlap(const kp_tensor *a, const kp_tensor *b)
{
    int64_t a0, a1, b0, b1;
    if (a->buffer != b->buffer || kp_tensor_numel(a) == 0 || kp_tensor_numel(b) == 0)
        return 0;
    kp__view_range(a, &a0, &a1);
    kp__view_range(b, &b0, &b1);
    const int64_t sa = (int64_t)kp_dtype_size((kp_dtype)a->dtype);
    const int64_t sb = (int64_t)kp_dtype_size((kp_dtype)b->dtype);
    return a0 * sa < (b1 + 1) * sb && b0 * sb < (a1 + 1) * sa;
}

/* Checks parts [n] against whole along axis (concatenation: parts into y; its backward: dy into
 * dparts); the axis as 0 .. rank - 1 in *at. */
static kp_status check_concat(kp_runtime *rt, const char *fn, const char *parts_name,
                              const kp_tensor *parts, size_t n, const char *whole_name,
                              const kp_tensor *whole, int32_t axis, int32_t *at)
{
    char sp[160], sw[160];
    if (n && !parts)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "%s: %zu %s but the array is NULL", fn, n,
                        parts_name);
    if (whole->rank < 1 || whole->rank > KP_MAX_RANK || axis < -whole->rank || axis >= whole->rank)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "%s: axis %d is outside %d .. %d for %s %s", fn,
                        axis, -whole->rank, whole->rank - 1, whole_name,
                        shape_str(whole, sw, sizeof sw));
    *at = axis < 0 ? axis + whole->rank : axis;
    int64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        const kp_tensor *p = &parts[i];
        char name[48];
        snprintf(name, sizeof name, "%s[%zu]", parts_name, i);
        kp_status st = same_rank(rt, fn, name, p, whole_name, whole);
        if (st != KP_OK)
            return st;
        for (int32_t d = 0; d < whole->rank; d++)
            if (p->shape[d] < 0 || (d != *at && p->shape[d] != whole->shape[d]))
                return kp__fail(rt, KP_ERR_INVALID_ARG,
                                "%s: %s %s and %s %s differ at dimension %d (only axis %d may)", fn,
                                name, shape_str(p, sp, sizeof sp), whole_name,
                                shape_str(whole, sw, sizeof sw), d, *at);
        if (__builtin_add_overflow(sum, p->shape[*at], &sum))
            sum = INT64_MAX;
    }
    if (sum != whole->shape[*at])
        return kp__fail(rt, KP_ERR_INVALID_ARG,
                        "%s: the %s' extents along axis %d sum to %lld, but %s %s has %lld", fn,
                        parts_name, *at, (long long)sum, whole_name,
                        shape_str(whole, sw, sizeof sw), (long long)whole->shape[*at]);
    return KP_OK;
}

kp_status kp_concat(kp_runtime *rt, const kp_tensor *parts, size_t n, kp_tensor y, int32_t axis)
{
    int32_t at;
    kp_status st = check_concat(rt, "kp_concat", "parts", parts, n, "y", &y, axis, &at);
    for (size_t i = 0; st == KP_OK && i < n; i++)
        st = check_copy(rt, parts[i], y);
    int64_t start = 0;
    for (size_t i = 0; st == KP_OK && i < n; i++) {
        st = copy(rt, parts[i], kp_tensor_narrow(y, at, start, parts[i].shape[at]));
        start += parts[i].shape[at];
    }
    return st;
}

kp_status kp_concat_backward(kp_runtime *rt, kp_tensor dy, const kp_tensor *dparts, size_t n,
                             int32_t axis)
{
    int32_t at;
    kp_status st =
        check_concat(rt, "kp_concat_backward", "dparts", dparts, n, "dy", &dy, axis, &at);
    for (size_t i = 0; st == KP_OK && i < n; i++)
        st = check_copy(rt, dy, dparts[i]);
    /* Each dparts[i] is written by its own launch, whose checks cannot see the others. */
    for (size_t i = 0; st == KP_OK && i < n; i++)
        for (size_t j = 0; st == KP_OK && j < i; j++)
            if (overlap(&dparts[i], &dparts[j]))
                st = kp__fail(rt, KP_ERR_INVALID_ARG,
                              "kp_concat_backward: dparts[%zu] and dparts[%zu] overlap in one "
                              "buffer",
                              j, i);
    int64_t start = 0;
    for (size_t i = 0; st == KP_OK && i < n; i++) {
        st = copy(rt, kp_tensor_narrow(dy, at, start, dparts[i].shape[at]), dparts[i]);
        start += dparts[i].shape[at];
    }
    return st;
}
