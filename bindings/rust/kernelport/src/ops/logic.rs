// SPDX-License-Identifier: Apache-2.0
//! The logic family (docs/kernels/logic.md): differentiable logic-gate layers. G gates read two
//! of IN input rows (the wiring a_idx, b_idx) for N samples; C [G, 4] are the gates' coefficients
//! from their logits w [G, 16] (`coeffs`). The host helpers make wirings, the reverse index the
//! backward gathers with, and initial logits, as the library's `ops/logic.h` does.

use crate::error::Result;
use crate::runtime::Runtime;
use crate::tensor::Tensor;
use kernelport_sys as sys;

/// Gate coefficients C [G, 4] (soft: the softmax of w; hard: the argmax's) and/or the argmax op
/// ids [G] from logits w [G, 16]. At least one output.
pub fn coeffs(
    rt: &Runtime,
    w: &Tensor<'_, f32>,
    c: Option<&Tensor<'_, f32>>,
    op: Option<&Tensor<'_, i32>>,
    hard: bool,
) -> Result<()> {
    rt.kernel("logic.coeffs")?
        .launch()
        .tensor("w", w)
        .opt_tensor("C", c)
        .opt_tensor("op", op)
        .int("hard", hard as i64)
        .run()
}

/// A layer: y [G, N] from x [IN, N], the wiring a_idx, b_idx [G] (i32) and C [G, 4].
pub fn forward(
    rt: &Runtime,
    x: &Tensor<'_, f32>,
    a_idx: &Tensor<'_, i32>,
    b_idx: &Tensor<'_, i32>,
    c: &Tensor<'_, f32>,
    y: &Tensor<'_, f32>,
) -> Result<()> {
    rt.kernel("logic.forward")?
        .launch()
        .tensor("x", x)
        .tensor("a_idx", a_idx)
        .tensor("b_idx", b_idx)
        .tensor("C", c)
        .tensor("y", y)
        .run()
}

/// The arguments of `logic.backward`: dy → dw [G, 16] (through the softmax) and dx [IN, N]
/// (gathered over the reverse index `csr_build` makes). At least one output; both overwritten.
#[derive(Clone, Copy, Debug)]
pub struct Backward<'a> {
    pub x: Tensor<'a, f32>,
    pub a_idx: Tensor<'a, i32>,
    pub b_idx: Tensor<'a, i32>,
    /// The logits [G, 16] (for dw) and the forward's coefficients [G, 4] (for dx).
    pub w: Tensor<'a, f32>,
    pub c: Tensor<'a, f32>,
    pub dy: Tensor<'a, f32>,
    /// [IN + 1] and [2G], i32.
    pub csr_start: Tensor<'a, i32>,
    pub csr_entries: Tensor<'a, i32>,
    pub dx: Option<Tensor<'a, f32>>,
    pub dw: Option<Tensor<'a, f32>>,
}

pub fn backward(rt: &Runtime, b: &Backward<'_>) -> Result<()> {
    rt.kernel("logic.backward")?
        .launch()
        .tensor("x", &b.x)
        .tensor("a_idx", &b.a_idx)
        .tensor("b_idx", &b.b_idx)
        .tensor("w", &b.w)
        .tensor("C", &b.c)
        .tensor("dy", &b.dy)
        .tensor("csr_start", &b.csr_start)
        .tensor("csr_entries", &b.csr_entries)
        .opt_tensor("dx", b.dx.as_ref())
        .opt_tensor("dw", b.dw.as_ref())
        .run()
}

/// difflogic's `random` connections for `out_dim` gates over `in_dim` inputs, seeded (the same
/// wiring on every platform): (a_idx, b_idx), or None when 2 out_dim < in_dim or a size is bad.
pub fn wiring_random(in_dim: usize, out_dim: usize, seed: u64) -> Option<(Vec<i32>, Vec<i32>)> {
    let (mut a, mut b) = (vec![0i32; out_dim], vec![0i32; out_dim]);
    // SAFETY: a and b hold out_dim elements each, as the helper writes.
    let rc = unsafe {
        sys::kp_logic_wiring_random(
            in_dim as i64,
            out_dim as i64,
            seed,
            a.as_mut_ptr(),
            b.as_mut_ptr(),
        )
    };
    (rc == 0).then_some((a, b))
}

/// The reverse index of a wiring over `in_dim` inputs: (csr_start [in_dim + 1], csr_entries
/// [2 G]), or None when a wire is out of range (or a and b differ in length).
pub fn csr_build(a_idx: &[i32], b_idx: &[i32], in_dim: usize) -> Option<(Vec<i32>, Vec<i32>)> {
    if a_idx.len() != b_idx.len() || in_dim == 0 {
        return None;
    }
    let g = a_idx.len();
    let (mut start, mut entries) = (vec![0i32; in_dim + 1], vec![0i32; 2 * g]);
    // SAFETY: the arrays have the sizes the helper reads and writes.
    let rc = unsafe {
        sys::kp_logic_csr_build(
            a_idx.as_ptr(),
            b_idx.as_ptr(),
            g as i64,
            in_dim as i64,
            start.as_mut_ptr(),
            entries.as_mut_ptr(),
        )
    };
    (rc == 0).then_some((start, entries))
}

/// Logits w [n_gates, 16] drawn from N(0, std^2) (difflogic: std 1), seeded.
pub fn init_gaussian(n_gates: usize, std: f64, seed: u64) -> Vec<f32> {
    let mut w = vec![0f32; 16 * n_gates];
    // SAFETY: w holds 16 n_gates floats.
    unsafe { sys::kp_logic_init_gaussian(w.as_mut_ptr(), n_gates as i64, std, seed) };
    w
}
