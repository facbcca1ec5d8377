/* SPDX-License-Identifier: Apache-2.0 */
/* Typed calls of the optim family (optimizers over a parameter arena) and the arena's layout.
 * docs/kernels/optim.md gives the formulas, the arena and segment rules, and the determinism. */
#ifndef KERNELPORT_OPS_OPTIM_H
#define KERNELPORT_OPS_OPTIM_H

#include "../kernelport.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The arena. A model's parameter tensors are views into one buffer, and their gradients and each
 * optimizer state into one buffer each at the same offsets, so that one launch steps the whole
 * list. kp_optim_arena_layout places n tensors of numel[i] elements one after the other, each at
 * a multiple of `align` elements (1: packed; 4 keeps every tensor on a 16-byte boundary), and
 * writes their (offset, length) pairs into segments[2 i], segments[2 i + 1]: the i32 [n, 2] table
 * the optimizers take to skip the padding and to give tensors their own multipliers. Returns the
 * arena's length in elements, or -1 when n is 0, an numel is negative, align is below 1 or the
 * arena would pass 2^31 - 1 elements (the kernels index with int).
 */
KP_INLINE int64_t kp_optim_arena_layout(size_t n, const int64_t *numel, int64_t align,
                                        int32_t *segments)
{
    int64_t at = 0;
    if (n == 0 || !numel || !segments || align < 1 || align > 65536)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (numel[i] < 0 || numel[i] > INT32_MAX - at)
            return -1;
        segments[2 * i] = (int32_t)at;
        segments[2 * i + 1] = (int32_t)numel[i];
        at += numel[i];
        if (i + 1 < n) {
            int64_t pad = (align - at % align) % align;
            if (pad > INT32_MAX - at)
                return -1;
            at += pad;
        }
    }
    return at;
}

/* Tensor i of an arena laid out by kp_optim_arena_layout, as a contiguous view of `shape` (whose
 * elements must number the segment's length; otherwise a rank -1 tensor that launches refuse). */
KP_INLINE kp_tensor kp_optim_arena_view(kp_buffer *arena, kp_dtype dtype, const int32_t *segments,
                                        size_t i, int32_t rank, const int64_t *shape)
{
    kp_tensor t = kp_tensor_nd(arena, dtype, rank, shape);
    if (t.rank < 0 || kp_tensor_numel(&t) != segments[2 * i + 1])
        t.rank = -1;
    t.offset = segments[2 * i];
    return t;
}

/* The options of Adam and AdamW beside the arrays: PyTorch's names and defaults. The pointers are
 * optional tensors (NULL: none). Built by kp_adam_defaults/kp_adamw_defaults, which set
 * struct_size (0 stands for the 0.2 layout); a member added later is read only when struct_size
 * covers it. */
typedef struct kp_adam_options {
    uint32_t struct_size;
    double lr, beta1, beta2, eps, weight_decay;
    int amsgrad;                     /* needs max_exp_avg_sq */
    int maximize;                    /* ascend the gradient */
    const kp_tensor *max_exp_avg_sq; /* [N] f32, AMSGrad's state */
    const kp_tensor *master;         /* [N] f32 master copy when param is bf16 */
    const kp_tensor *segments;       /* [n, 2] i32 (offset, length) per tensor */
    const kp_tensor *scales;         /* [n, 2] f32 lr and weight_decay multipliers per tensor */
    const kp_tensor *grad_mul;       /* f32 scalar the gradients are multiplied by (clip coef) */
    int check_segments; /* 1: read the table back and check it; 0: trust it (no host sync) */
} kp_adam_options;

/* torch.optim.Adam's defaults: lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 0. */
KP_INLINE kp_adam_options kp_adam_defaults(void)
{
    kp_adam_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.lr = 1e-3;
    o.beta1 = 0.9;
    o.beta2 = 0.999;
    o.eps = 1e-8;
    o.check_segments = 1;
    return o;
}

/* torch.optim.AdamW's defaults: Adam's with weight_decay 1e-2. */
KP_INLINE kp_adam_options kp_adamw_defaults(void)
{
    kp_adam_options o = kp_adam_defaults();
    o.weight_decay = 1e-2;
    return o;
}

/* Launches kernel `name` ("optim.adam" or "optim.adamw") with o (NULL: that kernel's defaults). */
KP_INLINE kp_status kp_optim_adam_launch(kp_runtime *rt, const char *name, kp_tensor param,
                                         kp_tensor grad, kp_tensor exp_avg, kp_tensor exp_avg_sq,
                                         int64_t step, const kp_adam_options *o)
{
    kp_kernel *k = NULL;
    kp_status st = kp_kernel_find(rt, name, &k);
    if (st != KP_OK)
        return st;
    kp_arg args[18];
    size_t n = 0;
    args[n++] = kp_arg_tensor("param", param);
    args[n++] = kp_arg_tensor("grad", grad);
    args[n++] = kp_arg_tensor("exp_avg", exp_avg);
    args[n++] = kp_arg_tensor("exp_avg_sq", exp_avg_sq);
    args[n++] = kp_arg_int("step", step);
    if (o) {
        args[n++] = kp_arg_float("lr", o->lr);
        args[n++] = kp_arg_float("beta1", o->beta1);
        args[n++] = kp_arg_float("beta2", o->beta2);
        args[n++] = kp_arg_float("eps", o->eps);
        args[n++] = kp_arg_float("weight_decay", o->weight_decay);
        args[n++] = kp_arg_int("amsgrad", o->amsgrad);
        args[n++] = kp_arg_int("maximize", o->maximize);
        args[n++] = kp_arg_int("check_segments", o->check_segments);
        if (o->max_exp_avg_sq)
            args[n++] = kp_arg_tensor("max_exp_avg_sq", *o->max_exp_avg_sq);
        if (o->master)
            args[n++] = kp_arg_tensor("master", *o->master);
        if (o->segments)
            args[n++] = kp_arg_tensor("segments", *o->segments);
        if (o->scales)
            args[n++] = kp_arg_tensor("scales", *o->scales);
        if (o->grad_mul)
            args[n++] = kp_arg_tensor("grad_mul", *o->grad_mul);
    }
    return kp_kernel_launch(rt, k, args, n, NULL);
}

/* One step of torch.optim.Adam (L2 weight decay) over the arena; `step` is 1 on the first. */
KP_INLINE kp_status kp_optim_adam(kp_runtime *rt, kp_tensor param, kp_tensor grad,
                                  kp_tensor exp_avg, kp_tensor exp_avg_sq, int64_t step,
                                  const kp_adam_options *o)
{
    return kp_optim_adam_launch(rt, "optim.adam", param, grad, exp_avg, exp_avg_sq, step, o);
}

/* One step of torch.optim.AdamW (decoupled weight decay) over the arena. */
KP_INLINE kp_status kp_optim_adamw(kp_runtime *rt, kp_tensor param, kp_tensor grad,
                                   kp_tensor exp_avg, kp_tensor exp_avg_sq, int64_t step,
                                   const kp_adam_options *o)
{
    return kp_optim_adam_launch(rt, "optim.adamw", param, grad, exp_avg, exp_avg_sq, step, o);
}

/* The options of SGD beside the arrays: PyTorch's names and defaults; struct_size as in
 * kp_adam_options (set by kp_sgd_defaults). */
typedef struct kp_sgd_options {
    uint32_t struct_size;
    double lr, momentum, dampening, weight_decay;
    int nesterov; /* needs momentum > 0 and dampening 0 */
    int maximize;
    const kp_tensor *master;   /* [N] f32 master copy when param is bf16 */
    const kp_tensor *segments; /* [n, 2] i32 (offset, length) per tensor */
    const kp_tensor *scales;   /* [n, 2] f32 lr and weight_decay multipliers per tensor */
    const kp_tensor *grad_mul; /* f32 scalar the gradients are multiplied by */
    int check_segments;
} kp_sgd_options;

/* torch.optim.SGD's defaults: lr 1e-3, no momentum, dampening, weight decay or Nesterov. */
KP_INLINE kp_sgd_options kp_sgd_defaults(void)
{
    kp_sgd_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.lr = 1e-3;
    o.check_segments = 1;
    return o;
}

/* One step of torch.optim.SGD over the arena. momentum_buffer (needed when o->momentum != 0) is
 * set from the gradients on step 1, as PyTorch's first step creates it. */
KP_INLINE kp_status kp_optim_sgd(kp_runtime *rt, kp_tensor param, kp_tensor grad,
                                 const kp_tensor *momentum_buffer, int64_t step,
                                 const kp_sgd_options *o)
{
    kp_kernel *k = NULL;
    kp_status st = kp_kernel_find(rt, "optim.sgd", &k);
    if (st != KP_OK)
        return st;
    kp_arg args[16];
    size_t n = 0;
    args[n++] = kp_arg_tensor("param", param);
    args[n++] = kp_arg_tensor("grad", grad);
    args[n++] = kp_arg_int("step", step);
    if (momentum_buffer)
        args[n++] = kp_arg_tensor("momentum_buffer", *momentum_buffer);
    if (o) {
        args[n++] = kp_arg_float("lr", o->lr);
        args[n++] = kp_arg_float("momentum", o->momentum);
        args[n++] = kp_arg_float("dampening", o->dampening);
        args[n++] = kp_arg_float("weight_decay", o->weight_decay);
        args[n++] = kp_arg_int("nesterov", o->nesterov);
        args[n++] = kp_arg_int("maximize", o->maximize);
        args[n++] = kp_arg_int("check_segments", o->check_segments);
        if (o->master)
            args[n++] = kp_arg_tensor("master", *o->master);
        if (o->segments)
            args[n++] = kp_arg_tensor("segments", *o->segments);
        if (o->scales)
            args[n++] = kp_arg_tensor("scales", *o->scales);
        if (o->grad_mul)
            args[n++] = kp_arg_tensor("grad_mul", *o->grad_mul);
    }
    return kp_kernel_launch(rt, k, args, n, NULL);
}

/*
 * torch.nn.utils.clip_grad_norm_ over a gradient arena: `norm` (an f32 scalar) receives the L2
 * norm of every gradient inside `segments` (NULL: the whole arena) and the gradients are
 * multiplied by min(1, max_norm / (norm + 1e-6)). The norm's summation order depends on the
 * arena's length alone: the same bits on every run.
 */
KP_INLINE kp_status kp_optim_clip_grad_norm(kp_runtime *rt, kp_tensor grad, kp_tensor norm,
                                            double max_norm, const kp_tensor *segments)
{
    kp_kernel *k = NULL;
    kp_status st = kp_kernel_find(rt, "optim.clip_grad_norm", &k);
    kp_arg args[4] = {kp_arg_tensor("grad", grad), kp_arg_tensor("norm", norm),
                      kp_arg_float("max_norm", max_norm)};
    if (segments)
        args[3] = kp_arg_tensor("segments", *segments);
    return st == KP_OK ? kp_kernel_launch(rt, k, args, segments ? 4 : 3, NULL) : st;
}

/* The same norm, and the clip coefficient into `coef` (an f32 scalar) with the gradients left as
 * they are: pass coef as the optimizer's grad_mul to clip inside the step, one pass over the
 * gradients fewer. */
KP_INLINE kp_status kp_optim_clip_coef(kp_runtime *rt, kp_tensor grad, kp_tensor norm,
                                       kp_tensor coef, double max_norm, const kp_tensor *segments)
{
    kp_kernel *k = NULL;
    kp_status st = kp_kernel_find(rt, "optim.clip_grad_norm", &k);
    kp_arg args[6] = {kp_arg_tensor("grad", grad), kp_arg_tensor("norm", norm),
                      kp_arg_tensor("coef", coef), kp_arg_float("max_norm", max_norm),
                      kp_arg_int("scale_grads", 0)};
    if (segments)
        args[5] = kp_arg_tensor("segments", *segments);
    return st == KP_OK ? kp_kernel_launch(rt, k, args, segments ? 6 : 5, NULL) : st;
}

/*
 * The exponential moving average of the parameters (torch.optim.swa_utils.AveragedModel with
 * get_ema_multi_avg_fn(decay)): update `step` 1 copies param into `averaged` (which it does not
 * read), each later one sets averaged += (1 - d) (param - averaged), d = decay, or with `warmup`
 * min(decay, (1 + step) / (10 + step)) (TensorFlow's ExponentialMovingAverage with num_updates:
 * the first updates weigh more). averaged is f32; param f32 or bf16. Evaluating a model with the
 * average instead of the trained weights smooths the last steps' noise, as a decaying learning
 * rate does. Errors (the runtime stays usable): KP_ERR_INVALID_ARG for arrays of other lengths,
 * strided or overlapping, an average that is not f32, step < 1, decay outside [0, 1], warmup
 * other than 0 or 1; KP_ERR_NOT_FOUND without the optim plugin. Thread-safe as every launch
 * (serialised on the runtime's queue).
 */
KP_INLINE kp_status kp_optim_ema(kp_runtime *rt, kp_tensor averaged, kp_tensor param, int64_t step,
                                 double decay, int warmup)
{
    kp_kernel *k = NULL;
    kp_status st = kp_kernel_find(rt, "optim.ema", &k);
    kp_arg args[5] = {kp_arg_tensor("averaged", averaged), kp_arg_tensor("param", param),
                      kp_arg_int("step", step), kp_arg_float("decay", decay),
                      kp_arg_int("warmup", warmup)};
    return st == KP_OK ? kp_kernel_launch(rt, k, args, 5, NULL) : st;
}

#ifdef __cplusplus
}
#endif

#endif
