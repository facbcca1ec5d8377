// SPDX-License-Identifier: Apache-2.0
//! The optim family (docs/kernels/optim.md): one step of torch.optim.AdamW over a parameter
//! arena in one launch, through the library's `kp_optim_adamw`, and the parameters' moving
//! average through `kp_optim_ema`.

use kernelport_sys as sys;

use super::opt_ptr;
use crate::buffer::Element;
use crate::error::Result;
use crate::raw;
use crate::runtime::Runtime;
use crate::tensor::Tensor;

/// AdamW's options, PyTorch's names; `Default` is torch.optim.AdamW's (lr 1e-3, betas (0.9,
/// 0.999), eps 1e-8, weight_decay 1e-2), read from the library.
#[derive(Clone, Copy, Debug)]
pub struct AdamW<'a> {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
    /// Needs `max_exp_avg_sq`.
    pub amsgrad: bool,
    pub maximize: bool,
    /// AMSGrad's state [N].
    pub max_exp_avg_sq: Option<Tensor<'a, f32>>,
    /// The f32 master copy [N] when the parameters are bf16.
    pub master: Option<Tensor<'a, f32>>,
    /// [n, 2] (offset, length) per tensor of the arena.
    pub segments: Option<Tensor<'a, i32>>,
    /// [n, 2] lr and weight_decay multipliers per tensor.
    pub scales: Option<Tensor<'a, f32>>,
    /// A scalar the gradients are multiplied by (a clip coefficient).
    pub grad_mul: Option<Tensor<'a, f32>>,
    /// Read the segment table back and check it (a host sync); false trusts it.
    pub check_segments: bool,
}

impl<'a> Default for AdamW<'a> {
    fn default() -> AdamW<'a> {
        let o = raw::adamw_options();
        AdamW {
            lr: o.lr,
            beta1: o.beta1,
            beta2: o.beta2,
            eps: o.eps,
            weight_decay: o.weight_decay,
            amsgrad: o.amsgrad != 0,
            maximize: o.maximize != 0,
            max_exp_avg_sq: None,
            master: None,
            segments: None,
            scales: None,
            grad_mul: None,
            check_segments: o.check_segments != 0,
        }
    }
}

/// One AdamW step (`step` is 1 on the first) of param [N] (f32, or bf16 with a master) with
/// grad [N] and the f32 states exp_avg, exp_avg_sq [N].
pub fn adamw<P: Element, G: Element>(
    rt: &Runtime,
    param: &Tensor<'_, P>,
    grad: &Tensor<'_, G>,
    exp_avg: &Tensor<'_, f32>,
    exp_avg_sq: &Tensor<'_, f32>,
    step: i64,
    o: &AdamW<'_>,
) -> Result<()> {
    let mut slots = [raw::no_tensor(); 5];
    let [s0, s1, s2, s3, s4] = &mut slots;
    let mut c = raw::adamw_options();
    c.lr = o.lr;
    c.beta1 = o.beta1;
    c.beta2 = o.beta2;
    c.eps = o.eps;
    c.weight_decay = o.weight_decay;
    c.amsgrad = o.amsgrad as i32;
    c.maximize = o.maximize as i32;
    c.check_segments = o.check_segments as i32;
    c.max_exp_avg_sq = opt_ptr(o.max_exp_avg_sq.as_ref(), s0);
    c.master = opt_ptr(o.master.as_ref(), s1);
    c.segments = opt_ptr(o.segments.as_ref(), s2);
    c.scales = opt_ptr(o.scales.as_ref(), s3);
    c.grad_mul = opt_ptr(o.grad_mul.as_ref(), s4);
    // SAFETY: views of live buffers; the option pointers point into `slots` during the call.
    rt.check(unsafe {
        sys::kp_optim_adamw(
            rt.as_ptr(),
            param.raw(),
            grad.raw(),
            exp_avg.raw(),
            exp_avg_sq.raw(),
            step,
            &c,
        )
    })
}

/// One update of the parameters' exponential moving average (torch.optim.swa_utils.AveragedModel
/// with get_ema_multi_avg_fn(decay)): `step` 1 copies param into `averaged`, each later one moves
/// it by 1 - decay (with `warmup`, 1 - min(decay, (1 + step) / (10 + step))) towards param.
pub fn ema<P: Element>(
    rt: &Runtime,
    averaged: &Tensor<'_, f32>,
    param: &Tensor<'_, P>,
    step: i64,
    decay: f64,
    warmup: bool,
) -> Result<()> {
    // SAFETY: views of live buffers.
    rt.check(unsafe {
        sys::kp_optim_ema(rt.as_ptr(), averaged.raw(), param.raw(), step, decay, warmup as i32)
    })
}
