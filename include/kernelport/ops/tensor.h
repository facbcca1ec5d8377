/* SPDX-License-Identifier: Apache-2.0 */
/* Typed calls of the tensor family: kp_add(rt, a, b, y) rather than an argument array.
 * docs/kernels/tensor.md gives each op's semantics, broadcasting and determinism. */
#ifndef KERNELPORT_OPS_TENSOR_H
#define KERNELPORT_OPS_TENSOR_H

#include <stdio.h>
#include <string.h>

#include "../kernelport.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Every call below looks its kernel up by name ("tensor.<op>") and launches it on `rt`'s queue,
 * asynchronously like kp_kernel_launch, whose errors it returns (KP_ERR_NOT_FOUND when the tensor
 * plugin is not loaded). Tensors are views with any strides, stored f32, f16 or bf16 (computed
 * in f32; docs/kernels/tensor.md, "Dtypes", says which kernel takes which); inputs broadcast
 * NumPy's way to the output's shape, which is never broadcast itself; an output may be one of the
 * inputs' very views (in place). The caller keeps ownership of every tensor's buffer.
 * Thread-safety: that of kp_kernel_launch.
 */

/* y = op(x) for a unary op by name: "neg", "abs", "exp", "exp2", "log", "log2", "sqrt",
 * "rsqrt", "recip", "sin", "cos", "tanh", "sigmoid", "relu", "gelu" (tanh form), "gelu_erf",
 * "silu", "square". */
KP_INLINE kp_status kp_tensor_unary(kp_runtime *rt, const char *op, kp_tensor x, kp_tensor y)
{
    char name[64];
    kp_kernel *k = NULL;
    snprintf(name, sizeof name, "tensor.%s", op ? op : "");
    kp_status st = kp_kernel_find(rt, name, &k);
    kp_arg args[2] = {kp_arg_tensor("x", x), kp_arg_tensor("y", y)};
    return st == KP_OK ? kp_kernel_launch(rt, k, args, 2, NULL) : st;
}

/* y = a op b for a binary op by name: "add", "sub", "mul", "div", "maximum", "minimum", "pow",
 * "mod" (the sign of b, as Python's %), "cmplt" and "cmpeq" (1 or 0). A rank-0 tensor is a
 * scalar operand. */
KP_INLINE kp_status kp_tensor_binary(kp_runtime *rt, const char *op, kp_tensor a, kp_tensor b,
                                     kp_tensor y)
{
    char name[64];
    kp_kernel *k = NULL;
    snprintf(name, sizeof name, "tensor.%s", op ? op : "");
    kp_status st = kp_kernel_find(rt, name, &k);
    kp_arg args[3] = {kp_arg_tensor("a", a), kp_arg_tensor("b", b), kp_arg_tensor("y", y)};
    return st == KP_OK ? kp_kernel_launch(rt, k, args, 3, NULL) : st;
}

/* dx = dy op'(x), summed over the axes x was broadcast along (a fixed order: the same bits on
 * every run). */
KP_INLINE kp_status kp_tensor_unary_backward(kp_runtime *rt, const char *op, kp_tensor dy,
                                             kp_tensor x, kp_tensor dx)
{
    char name[64];
    kp_kernel *k = NULL;
    snprintf(name, sizeof name, "tensor.%s_backward", op ? op : "");
    kp_status st = kp_kernel_find(rt, name, &k);
    kp_arg args[3] = {kp_arg_tensor("dy", dy), kp_arg_tensor("x", x), kp_arg_tensor("dx", dx)};
    return st == KP_OK ? kp_kernel_launch(rt, k, args, 3, NULL) : st;
}

/* The gradients of y = a op b: da and db (either may be NULL, not both), each summed over the
 * axes its operand was broadcast along. */
KP_INLINE kp_status kp_tensor_binary_backward(kp_runtime *rt, const char *op, kp_tensor dy,
                                              kp_tensor a, kp_tensor b, const kp_tensor *da,
                                              const kp_tensor *db)
{
    char name[64];
    kp_kernel *k = NULL;
    snprintf(name, sizeof name, "tensor.%s_backward", op ? op : "");
    kp_status st = kp_kernel_find(rt, name, &k);
    kp_arg args[5] = {kp_arg_tensor("dy", dy), kp_arg_tensor("a", a), kp_arg_tensor("b", b)};
    size_t n = 3;
    if (da)
        args[n++] = kp_arg_tensor("da", *da);
    if (db)
        args[n++] = kp_arg_tensor("db", *db);
    return st == KP_OK ? kp_kernel_launch(rt, k, args, n, NULL) : st;
}

/* Bit d of an `axes` mask: reduce dimension d. */
#define KP_AXIS(d) (1LL << (d))
/* Every dimension. */
#define KP_ALL_AXES (-1LL)

/* y = a reduction of x over `axes` (KP_AXIS(d) | ...): "sum", "mean", "prod", "max", "min"
 * (f32 y), "argmax", "argmin" (i32 y: the row-major index over the reduced axes of the first
 * extreme; a NaN counts as the extreme, as in PyTorch). y is x's shape with the reduced axes of
 * extent 1 (keepdim) or left out. */
KP_INLINE kp_status kp_tensor_reduce(kp_runtime *rt, const char *op, kp_tensor x, kp_tensor y,
                                     int64_t axes)
{
    char name[64];
    kp_kernel *k = NULL;
    snprintf(name, sizeof name, "tensor.%s", op ? op : "");
    kp_status st = kp_kernel_find(rt, name, &k);
    kp_arg args[3] = {kp_arg_tensor("x", x), kp_arg_tensor("y", y), kp_arg_int("axes", axes)};
    return st == KP_OK ? kp_kernel_launch(rt, k, args, 3, NULL) : st;
}

/* y = the sum of a * b over the axes y is broadcast along, the three broadcast together (NumPy's
 * rule): a contraction in one launch. */
KP_INLINE kp_status kp_mul_sum(kp_runtime *rt, kp_tensor a, kp_tensor b, kp_tensor y)
{
    kp_kernel *k = NULL;
    kp_status st = kp_kernel_find(rt, "tensor.mul_sum", &k);
    kp_arg args[3] = {kp_arg_tensor("a", a), kp_arg_tensor("b", b), kp_arg_tensor("y", y)};
    return st == KP_OK ? kp_kernel_launch(rt, k, args, 3, NULL) : st;
}

/*
 * y [M, N] = a [M, K] b [K, N], any strides (a transposed view is a transpose), through
 * kp_mul_sum on the views a [M, K, 1], b [1, K, N], y [M, 1, N]: one launch that a graph records,
 * for the small products of a training step (one work-item per output, K terms each, in order).
 * Large products belong to blas.gemm. Tensors of another rank go to tensor.mul_sum unchanged,
 * which names their shapes.
 */
KP_INLINE kp_status kp_matmul(kp_runtime *rt, kp_tensor a, kp_tensor b, kp_tensor y)
{
    if (a.rank == 2 && b.rank == 2 && y.rank == 2) {
        a.rank = b.rank = y.rank = 3;
        a.shape[2] = 1, a.strides[2] = 0;
        b.shape[2] = b.shape[1], b.strides[2] = b.strides[1];
        b.shape[1] = b.shape[0], b.strides[1] = b.strides[0];
        b.shape[0] = 1, b.strides[0] = 0;
        y.shape[2] = y.shape[1], y.strides[2] = y.strides[1];
        y.shape[1] = 1, y.strides[1] = 0;
    }
    return kp_mul_sum(rt, a, b, y);
}

/* y = x converted to y's dtype (tensor.copy): any of f32, f16, bf16 and i32 to any, x broadcast
 * to y's shape, any strides on both. Floats round to nearest even (a NaN stays a NaN); to i32
 * they truncate toward zero as PyTorch's .to(torch.int32), saturating past i32's range, NaN
 * giving 0; i32 to f32 rounds to nearest even past 2^24. The same dtype copies the bits. */
KP_INLINE kp_status kp_cast(kp_runtime *rt, kp_tensor x, kp_tensor y)
{
    kp_kernel *k = NULL;
    kp_status st = kp_kernel_find(rt, "tensor.copy", &k);
    kp_arg args[2] = {kp_arg_tensor("x", x), kp_arg_tensor("y", y)};
    return st == KP_OK ? kp_kernel_launch(rt, k, args, 2, NULL) : st;
}

/* y = cond ? a : b elementwise (cond nonzero; cond may be i32 too), the three broadcast to y's
 * shape. */
KP_INLINE kp_status kp_where(kp_runtime *rt, kp_tensor cond, kp_tensor a, kp_tensor b, kp_tensor y)
{
    kp_kernel *k = NULL;
    kp_status st = kp_kernel_find(rt, "tensor.where", &k);
    kp_arg args[4] = {kp_arg_tensor("cond", cond), kp_arg_tensor("a", a), kp_arg_tensor("b", b),
                      kp_arg_tensor("y", y)};
    return st == KP_OK ? kp_kernel_launch(rt, k, args, 4, NULL) : st;
}

/* The most used ops by name. */
KP_INLINE kp_status kp_add(kp_runtime *rt, kp_tensor a, kp_tensor b, kp_tensor y)
{
    return kp_tensor_binary(rt, "add", a, b, y);
}

KP_INLINE kp_status kp_sub(kp_runtime *rt, kp_tensor a, kp_tensor b, kp_tensor y)
{
    return kp_tensor_binary(rt, "sub", a, b, y);
}

KP_INLINE kp_status kp_mul(kp_runtime *rt, kp_tensor a, kp_tensor b, kp_tensor y)
{
    return kp_tensor_binary(rt, "mul", a, b, y);
}

KP_INLINE kp_status kp_div(kp_runtime *rt, kp_tensor a, kp_tensor b, kp_tensor y)
{
    return kp_tensor_binary(rt, "div", a, b, y);
}

KP_INLINE kp_status kp_exp(kp_runtime *rt, kp_tensor x, kp_tensor y)
{
    return kp_tensor_unary(rt, "exp", x, y);
}

KP_INLINE kp_status kp_relu(kp_runtime *rt, kp_tensor x, kp_tensor y)
{
    return kp_tensor_unary(rt, "relu", x, y);
}

KP_INLINE kp_status kp_sum(kp_runtime *rt, kp_tensor x, kp_tensor y, int64_t axes)
{
    return kp_tensor_reduce(rt, "sum", x, y, axes);
}

KP_INLINE kp_status kp_mean(kp_runtime *rt, kp_tensor x, kp_tensor y, int64_t axes)
{
    return kp_tensor_reduce(rt, "mean", x, y, axes);
}

/* y = the variance of x over `axes`: the squared deviations from the mean / max(0, N -
 * correction), N the terms of each output (correction 1: unbiased, PyTorch's default; 0: the
 * population's). A divisor of 0 gives inf, or NaN where every term is equal, as PyTorch's. */
KP_INLINE kp_status kp_var(kp_runtime *rt, kp_tensor x, kp_tensor y, int64_t axes,
                           double correction)
{
    kp_kernel *k = NULL;
    kp_status st = kp_kernel_find(rt, "tensor.var", &k);
    kp_arg args[4] = {kp_arg_tensor("x", x), kp_arg_tensor("y", y), kp_arg_int("axes", axes),
                      kp_arg_float("correction", correction)};
    return st == KP_OK ? kp_kernel_launch(rt, k, args, 4, NULL) : st;
}

/* y = sqrt(var) over `axes`, as kp_var. */
KP_INLINE kp_status kp_std(kp_runtime *rt, kp_tensor x, kp_tensor y, int64_t axes,
                           double correction)
{
    kp_kernel *k = NULL;
    kp_status st = kp_kernel_find(rt, "tensor.std", &k);
    kp_arg args[4] = {kp_arg_tensor("x", x), kp_arg_tensor("y", y), kp_arg_int("axes", axes),
                      kp_arg_float("correction", correction)};
    return st == KP_OK ? kp_kernel_launch(rt, k, args, 4, NULL) : st;
}

/* y = log(sum(exp(x))) over `axes`, the max taken out: every term -inf gives -inf, a +inf gives
 * +inf, a NaN NaN. */
KP_INLINE kp_status kp_logsumexp(kp_runtime *rt, kp_tensor x, kp_tensor y, int64_t axes)
{
    return kp_tensor_reduce(rt, "logsumexp", x, y, axes);
}

/* dx = dy 2 (x - mean) / (N - correction) over the forward's `axes` (dy keepdim or not, as y
 * was; a divisor of 0 gives inf, NaN where x is the mean). */
KP_INLINE kp_status kp_var_backward(kp_runtime *rt, kp_tensor dy, kp_tensor x, kp_tensor dx,
                                    int64_t axes, double correction)
{
    kp_kernel *k = NULL;
    kp_status st = kp_kernel_find(rt, "tensor.var_backward", &k);
    kp_arg args[5] = {kp_arg_tensor("dy", dy), kp_arg_tensor("x", x), kp_arg_tensor("dx", dx),
                      kp_arg_int("axes", axes), kp_arg_float("correction", correction)};
    return st == KP_OK ? kp_kernel_launch(rt, k, args, 5, NULL) : st;
}

/* The backward of a forward that took y from x over `axes`: "std" (dx = dy (x - mean) / ((N -
 * correction) y), 0 where y is 0, as PyTorch's), "logsumexp" (dx = dy exp(x - y)), "max" and
 * "min" (dx = dy / ties where x equals y, else 0: tied extremes share the gradient evenly, as
 * PyTorch's amax and amin; a NaN y goes to x's NaNs). correction is read by std alone. */
KP_INLINE kp_status kp_tensor_reduce_backward(kp_runtime *rt, const char *op, kp_tensor dy,
                                              kp_tensor x, kp_tensor y, kp_tensor dx, int64_t axes,
                                              double correction)
{
    char name[64];
    kp_kernel *k = NULL;
    snprintf(name, sizeof name, "tensor.%s_backward", op ? op : "");
    kp_status st = kp_kernel_find(rt, name, &k);
    kp_arg args[6] = {kp_arg_tensor("dy", dy), kp_arg_tensor("x", x),
                      kp_arg_tensor("dx", dx), kp_arg_int("axes", axes),
                      kp_arg_tensor("y", y),   kp_arg_float("correction", correction)};
    const size_t n = op && strcmp(op, "std") == 0 ? 6 : 5;
    return st == KP_OK ? kp_kernel_launch(rt, k, args, n, NULL) : st;
}

KP_INLINE kp_status kp_std_backward(kp_runtime *rt, kp_tensor dy, kp_tensor x, kp_tensor y,
                                    kp_tensor dx, int64_t axes, double correction)
{
    return kp_tensor_reduce_backward(rt, "std", dy, x, y, dx, axes, correction);
}

KP_INLINE kp_status kp_logsumexp_backward(kp_runtime *rt, kp_tensor dy, kp_tensor x, kp_tensor y,
                                          kp_tensor dx, int64_t axes)
{
    return kp_tensor_reduce_backward(rt, "logsumexp", dy, x, y, dx, axes, 0.0);
}

KP_INLINE kp_status kp_max_backward(kp_runtime *rt, kp_tensor dy, kp_tensor x, kp_tensor y,
                                    kp_tensor dx, int64_t axes)
{
    return kp_tensor_reduce_backward(rt, "max", dy, x, y, dx, axes, 0.0);
}

KP_INLINE kp_status kp_min_backward(kp_runtime *rt, kp_tensor dy, kp_tensor x, kp_tensor y,
                                    kp_tensor dx, int64_t axes)
{
    return kp_tensor_reduce_backward(rt, "min", dy, x, y, dx, axes, 0.0);
}

/* ---- rows: softmax over the last axis, and losses ---- */

/* Runs the row kernel `name` (a helper of the calls below). */
KP_INLINE kp_status kp_tensor_rows_launch(kp_runtime *rt, const char *name, const kp_arg *args,
                                          size_t n)
{
    kp_kernel *k = NULL;
    kp_status st = kp_kernel_find(rt, name, &k);
    return st == KP_OK ? kp_kernel_launch(rt, k, args, n, NULL) : st;
}

/* y = softmax over the last axis of x [..., C]: exp(x - max) / sum(exp(x - max)) per row, the
 * row's max subtracted (a rank-0 x is one row of one element). y has x's shape and may be x's
 * very view. */
KP_INLINE kp_status kp_softmax(kp_runtime *rt, kp_tensor x, kp_tensor y)
{
    kp_arg args[2] = {kp_arg_tensor("x", x), kp_arg_tensor("y", y)};
    return kp_tensor_rows_launch(rt, "tensor.softmax", args, 2);
}

/* y = x - max - log(sum(exp(x - max))) over the last axis. */
KP_INLINE kp_status kp_log_softmax(kp_runtime *rt, kp_tensor x, kp_tensor y)
{
    kp_arg args[2] = {kp_arg_tensor("x", x), kp_arg_tensor("y", y)};
    return kp_tensor_rows_launch(rt, "tensor.log_softmax", args, 2);
}

/* dx = y (dy - sum(dy y)) over the last axis, y the softmax's output; dx may be dy's or y's very
 * view. */
KP_INLINE kp_status kp_softmax_backward(kp_runtime *rt, kp_tensor dy, kp_tensor y, kp_tensor dx)
{
    kp_arg args[3] = {kp_arg_tensor("dy", dy), kp_arg_tensor("y", y), kp_arg_tensor("dx", dx)};
    return kp_tensor_rows_launch(rt, "tensor.softmax_backward", args, 3);
}

/* dx = dy - exp(y) sum(dy) over the last axis, y the log_softmax's output. */
KP_INLINE kp_status kp_log_softmax_backward(kp_runtime *rt, kp_tensor dy, kp_tensor y, kp_tensor dx)
{
    kp_arg args[3] = {kp_arg_tensor("dy", dy), kp_arg_tensor("y", y), kp_arg_tensor("dx", dx)};
    return kp_tensor_rows_launch(rt, "tensor.log_softmax_backward", args, 3);
}

/* PyTorch's default ignore_index. */
#define KP_IGNORE_INDEX (-100)

/*
 * Softmax cross-entropy of logits [..., C] against i32 labels [...], PyTorch's
 * cross_entropy(reduction='mean'): loss (rank 0) = the mean over the rows whose label is not
 * ignore_index of lse(x) - (1 - e) x[label] - (e / C) sum(x), e the label smoothing (0 .. 1).
 * dlogits (logits' shape, the gradient of loss) and losses (labels' shape, each row's loss, 0
 * where ignored) may be NULL. One pass over the logits; the mean is a fixed-order sum. A label
 * outside 0 .. C - 1 (and not ignore_index) makes its row's loss and gradient NaN, hence the
 * loss NaN; so does a batch with every row ignored (0 / 0).
 */
KP_INLINE kp_status kp_cross_entropy(kp_runtime *rt, kp_tensor logits, kp_tensor labels,
                                     kp_tensor loss, const kp_tensor *dlogits,
                                     const kp_tensor *losses, int64_t ignore_index,
                                     double label_smoothing)
{
    kp_arg args[7] = {kp_arg_tensor("logits", logits), kp_arg_tensor("labels", labels),
                      kp_arg_tensor("loss", loss), kp_arg_int("ignore_index", ignore_index),
                      kp_arg_float("label_smoothing", label_smoothing)};
    size_t n = 5;
    if (dlogits)
        args[n++] = kp_arg_tensor("dlogits", *dlogits);
    if (losses)
        args[n++] = kp_arg_tensor("losses", *losses);
    return kp_tensor_rows_launch(rt, "tensor.cross_entropy", args, n);
}

/* loss (rank 0) = mean((a - b)^2) over a and b broadcast together; da (a's shape, which must be
 * the broadcast shape; NULL for none) = 2 (a - b) / n. */
KP_INLINE kp_status kp_mse(kp_runtime *rt, kp_tensor a, kp_tensor b, kp_tensor loss,
                           const kp_tensor *da)
{
    kp_arg args[4] = {kp_arg_tensor("a", a), kp_arg_tensor("b", b), kp_arg_tensor("loss", loss)};
    if (da)
        args[3] = kp_arg_tensor("da", *da);
    return kp_tensor_rows_launch(rt, "tensor.mse", args, da ? 4 : 3);
}

/* loss (rank 0) = mean(max(x, 0) - x t + log(1 + exp(-|x|))) of logits x against targets t of
 * the same shape; dlogits (NULL for none) = (sigmoid(x) - t) / n. */
KP_INLINE kp_status kp_bce_with_logits(kp_runtime *rt, kp_tensor logits, kp_tensor targets,
                                       kp_tensor loss, const kp_tensor *dlogits)
{
    kp_arg args[4] = {kp_arg_tensor("logits", logits), kp_arg_tensor("targets", targets),
                      kp_arg_tensor("loss", loss)};
    if (dlogits)
        args[3] = kp_arg_tensor("dlogits", *dlogits);
    return kp_tensor_rows_launch(rt, "tensor.bce_with_logits", args, dlogits ? 4 : 3);
}

/* ---- movement: flip, pad and concatenation (the library's, core/tensor-movement.c) ---- */

/*
 * Permute, expand, slice and stride are views (kp_tensor_transpose, kp_tensor_narrow, strides of
 * your own, a stride 0) copied by tensor.copy; the calls below are tensor.copy and tensor.fill
 * launches over views of their operands, queued like kp_kernel_launch (no event). Each checks
 * its shapes first and fails with KP_ERR_INVALID_ARG naming both, launching nothing; so do the
 * core's checks of the operands (buffers, ranges, overlaps), which a call of several launches
 * runs on the whole operands before the first. A launch's error is returned as
 * kp_kernel_launch's (KP_ERR_NOT_FOUND without the tensor plugin).
 */

/* y = x reversed along the dimensions in `dims` (KP_AXIS(d) | ...; KP_ALL_AXES: every one): one
 * tensor.copy of x's flipped view (kp_tensor_flip). y has x's shape. Its backward is the same
 * flip of dy. */
KP_API kp_status kp_flip(kp_runtime *rt, kp_tensor x, kp_tensor y, int64_t dims);

/* y = x padded with the constant `value`: y has x's rank, and x lies in y from before[d]
 * (>= 0; NULL: all 0) along each dimension d, y's extents holding the padding after it too
 * (before[d] + x's extent <= y's). x's part is copied, then the border filled, each element of y
 * written once. */
KP_API kp_status kp_pad(kp_runtime *rt, kp_tensor x, kp_tensor y, const int64_t *before,
                        double value);

/* dx = the part of dy where kp_pad put x (one copy): pad's backward, and a slice's forward. */
KP_API kp_status kp_pad_backward(kp_runtime *rt, kp_tensor dy, kp_tensor dx, const int64_t *before);

/* y = parts[0], ..., parts[n - 1] concatenated along `axis` (negative: from the last): each part
 * has y's rank and extents but along axis, where theirs sum to y's; one copy per part that is
 * not empty. */
KP_API kp_status kp_concat(kp_runtime *rt, const kp_tensor *parts, size_t n, kp_tensor y,
                           int32_t axis);

/* dparts[i] = the slice of dy that parts[i] filled (one copy each): concatenation's backward.
 * The dparts may not overlap each other. */
KP_API kp_status kp_concat_backward(kp_runtime *rt, kp_tensor dy, const kp_tensor *dparts, size_t n,
                                    int32_t axis);

#ifdef __cplusplus
}
#endif

#endif
