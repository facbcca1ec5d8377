// SPDX-License-Identifier: Apache-2.0
//! The tensor family (docs/kernels/tensor.md), through the library's typed calls
//! (`ops/tensor.h`): elementwise ops with NumPy broadcasting to the output's shape, reductions,
//! softmax, cross-entropy. Views may be f32, f16 or bf16 (computed in f32) with any strides; an
//! output may be one of the inputs' very views (in place).

use kernelport_sys as sys;

use super::opt_ptr;
use crate::buffer::Element;
use crate::error::Result;
use crate::raw;
use crate::runtime::Runtime;
use crate::tensor::{Tensor, MAX_RANK};

/// The dimensions a reduction runs over: a bit mask, bit d for dimension d (`KP_AXIS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Axes(pub i64);

impl Axes {
    /// Every dimension (`KP_ALL_AXES`).
    pub const ALL: Axes = Axes(sys::KP_ALL_AXES as i64);

    /// The dimensions listed (each below 8; others are left out of the mask).
    pub fn of(dims: &[usize]) -> Axes {
        Axes(dims.iter().filter(|&&d| d < MAX_RANK).fold(0, |m, &d| m | 1 << d))
    }
}

/// y = op(x) for a unary op by name: "neg", "abs", "exp", "log", "sqrt", "tanh", "sigmoid",
/// "relu", "gelu", "silu", "square", ... (the header lists them all).
pub fn unary<X: Element, Y: Element>(
    rt: &Runtime,
    op: &str,
    x: &Tensor<'_, X>,
    y: &Tensor<'_, Y>,
) -> Result<()> {
    let op = raw::c_string(op, "op")?;
    // SAFETY: views of live buffers; op outlives the call.
    rt.check(unsafe { sys::kp_tensor_unary(rt.as_ptr(), op.as_ptr(), x.raw(), y.raw()) })
}

/// y = a op b for a binary op by name: "add", "sub", "mul", "div", "maximum", "minimum", "pow",
/// "mod", "cmplt", "cmpeq". A rank-0 view is a scalar operand.
pub fn binary<A: Element, B: Element, Y: Element>(
    rt: &Runtime,
    op: &str,
    a: &Tensor<'_, A>,
    b: &Tensor<'_, B>,
    y: &Tensor<'_, Y>,
) -> Result<()> {
    let op = raw::c_string(op, "op")?;
    // SAFETY: as unary.
    rt.check(unsafe { sys::kp_tensor_binary(rt.as_ptr(), op.as_ptr(), a.raw(), b.raw(), y.raw()) })
}

/// y = a + b.
pub fn add<A: Element, B: Element, Y: Element>(
    rt: &Runtime,
    a: &Tensor<'_, A>,
    b: &Tensor<'_, B>,
    y: &Tensor<'_, Y>,
) -> Result<()> {
    // SAFETY: views of live buffers.
    rt.check(unsafe { sys::kp_add(rt.as_ptr(), a.raw(), b.raw(), y.raw()) })
}

/// y = a * b.
pub fn mul<A: Element, B: Element, Y: Element>(
    rt: &Runtime,
    a: &Tensor<'_, A>,
    b: &Tensor<'_, B>,
    y: &Tensor<'_, Y>,
) -> Result<()> {
    // SAFETY: views of live buffers.
    rt.check(unsafe { sys::kp_mul(rt.as_ptr(), a.raw(), b.raw(), y.raw()) })
}

/// y = a reduction of x over `axes`: "sum", "mean", "prod", "max", "min" (y f32), "argmax",
/// "argmin" (y i32). y has x's shape with the reduced axes of extent 1 (keepdim) or left out.
pub fn reduce<X: Element, Y: Element>(
    rt: &Runtime,
    op: &str,
    x: &Tensor<'_, X>,
    y: &Tensor<'_, Y>,
    axes: Axes,
) -> Result<()> {
    let op = raw::c_string(op, "op")?;
    // SAFETY: as unary.
    rt.check(unsafe { sys::kp_tensor_reduce(rt.as_ptr(), op.as_ptr(), x.raw(), y.raw(), axes.0) })
}

/// y = the sum of x over `axes`.
pub fn sum<X: Element, Y: Element>(
    rt: &Runtime,
    x: &Tensor<'_, X>,
    y: &Tensor<'_, Y>,
    axes: Axes,
) -> Result<()> {
    // SAFETY: views of live buffers.
    rt.check(unsafe { sys::kp_sum(rt.as_ptr(), x.raw(), y.raw(), axes.0) })
}

/// y = the mean of x over `axes`.
pub fn mean<X: Element, Y: Element>(
    rt: &Runtime,
    x: &Tensor<'_, X>,
    y: &Tensor<'_, Y>,
    axes: Axes,
) -> Result<()> {
    // SAFETY: views of live buffers.
    rt.check(unsafe { sys::kp_mean(rt.as_ptr(), x.raw(), y.raw(), axes.0) })
}

/// y [M, N] = a [M, K] b [K, N], any strides, in one launch (small products; large ones
/// belong to `blas::gemm`).
pub fn matmul<T: Element>(
    rt: &Runtime,
    a: &Tensor<'_, T>,
    b: &Tensor<'_, T>,
    y: &Tensor<'_, T>,
) -> Result<()> {
    // SAFETY: views of live buffers.
    rt.check(unsafe { sys::kp_matmul(rt.as_ptr(), a.raw(), b.raw(), y.raw()) })
}

/// y = softmax of x over its last axis (the row's max subtracted); y may be x's very view.
pub fn softmax<X: Element, Y: Element>(
    rt: &Runtime,
    x: &Tensor<'_, X>,
    y: &Tensor<'_, Y>,
) -> Result<()> {
    // SAFETY: views of live buffers.
    rt.check(unsafe { sys::kp_softmax(rt.as_ptr(), x.raw(), y.raw()) })
}

/// y = log_softmax of x over its last axis.
pub fn log_softmax<X: Element, Y: Element>(
    rt: &Runtime,
    x: &Tensor<'_, X>,
    y: &Tensor<'_, Y>,
) -> Result<()> {
    // SAFETY: views of live buffers.
    rt.check(unsafe { sys::kp_log_softmax(rt.as_ptr(), x.raw(), y.raw()) })
}

/// PyTorch's `cross_entropy` options beside the tensors.
#[derive(Clone, Copy, Debug)]
pub struct CrossEntropy<'a, L: Element, Y: Element> {
    /// Rows whose label is this are left out of the mean (PyTorch's default -100).
    pub ignore_index: i64,
    /// 0 .. 1.
    pub label_smoothing: f64,
    /// The gradient of the loss (logits' shape), when wanted.
    pub dlogits: Option<Tensor<'a, L>>,
    /// Each row's loss (labels' shape, 0 where ignored), when wanted.
    pub losses: Option<Tensor<'a, Y>>,
}

impl<'a, L: Element, Y: Element> Default for CrossEntropy<'a, L, Y> {
    fn default() -> Self {
        CrossEntropy {
            ignore_index: sys::KP_IGNORE_INDEX as i64,
            label_smoothing: 0.0,
            dlogits: None,
            losses: None,
        }
    }
}

/// loss (rank 0) = the mean softmax cross-entropy of logits [..., C] against i32 labels [...],
/// with its gradient and per-row losses in the same pass when `o` asks for them.
pub fn cross_entropy<L: Element, Y: Element>(
    rt: &Runtime,
    logits: &Tensor<'_, L>,
    labels: &Tensor<'_, i32>,
    loss: &Tensor<'_, Y>,
    o: &CrossEntropy<'_, L, Y>,
) -> Result<()> {
    let (mut d, mut l) = (raw::no_tensor(), raw::no_tensor());
    let dp = opt_ptr(o.dlogits.as_ref(), &mut d);
    let lp = opt_ptr(o.losses.as_ref(), &mut l);
    // SAFETY: views of live buffers; dp and lp point to d and l (or are NULL) during the call.
    rt.check(unsafe {
        sys::kp_cross_entropy(
            rt.as_ptr(),
            logits.raw(),
            labels.raw(),
            loss.raw(),
            dp,
            lp,
            o.ignore_index,
            o.label_smoothing,
        )
    })
}
