// SPDX-License-Identifier: Apache-2.0
//! `blas.gemm`: C = alpha op(A) op(B) + beta C (docs/kernels/blas.md). The layout of each matrix
//! comes from its strides, so `a.transpose(0, 1)` is a transposed operand with no copy.

use crate::buffer::Element;
use crate::error::Result;
use crate::runtime::Runtime;
use crate::tensor::Tensor;

/// The scalars of a product; `Default` is BLAS's plain product (alpha 1, beta 0, no transposes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gemm {
    pub alpha: f64,
    /// 0 ignores C's old contents, NaN included.
    pub beta: f64,
    pub trans_a: bool,
    pub trans_b: bool,
}

impl Default for Gemm {
    fn default() -> Gemm {
        Gemm { alpha: 1.0, beta: 0.0, trans_a: false, trans_b: false }
    }
}

/// C [M, N] = alpha op(A) op(B) + beta C, A [M, K] (or [K, M] with trans_a), B [K, N] (or
/// [N, K]); f32 or f16, one dtype for the three.
pub fn gemm<T: Element>(
    rt: &Runtime,
    a: &Tensor<'_, T>,
    b: &Tensor<'_, T>,
    c: &Tensor<'_, T>,
    g: &Gemm,
) -> Result<()> {
    rt.kernel("blas.gemm")?
        .launch()
        .tensor("A", a)
        .tensor("B", b)
        .tensor("C", c)
        .float("alpha", g.alpha)
        .float("beta", g.beta)
        .int("trans_a", g.trans_a as i64)
        .int("trans_b", g.trans_b as i64)
        .run()
}
