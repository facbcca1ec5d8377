// SPDX-License-Identifier: Apache-2.0
//! The solve layer (`include/kernelport/solve.h`, docs/solve.md): residuals written as
//! expressions over parameters and data, their Jacobians compiled to kernels, and
//! Levenberg-Marquardt in two modes: many independent small problems ([`fit_host`], [`Lm`]) and
//! one large problem whose instances share parameters ([`fit_sparse_host`], [`LmSparse`]).
//!
//! ```no_run
//! use kernelport::solve::{self, ExprGraph, Lm, LmOptions, Precision};
//! use kernelport::{Result, Runtime};
//!
//! fn misra1a(rows: &[i32], data: &[f64], x: &mut [f64]) -> Result<()> {
//!     // Parameters b1, b2; data columns y, x in the order of each data row.
//!     let g = ExprGraph::from_text("b1 b2", "y x", "b1*(1-exp(-b2*x)) - y")?;
//!     let host = solve::fit_host(&g, &LmOptions::default(), rows, data, x)?; // double
//!     let rt = Runtime::new()?;
//!     let mut lm = Lm::new(&rt, &g, Precision::Auto)?;                     // one kernel
//!     let report = lm.fit(&LmOptions::default(), rows, data, x)?;
//!     println!("{} ({})", report.summary(), lm.precision().name());
//!     Ok(())
//! }
//! ```
//!
//! Handles made on a runtime (`Residual`, `Lm`, `LmSparse`) borrow it and are released by Drop;
//! each is used by one thread at a time (Send, not Sync; its calls take `&mut`). An `ExprGraph`
//! is host memory of its own (Send); the handles copy it, so it may be dropped after.

mod expr;
mod lm;
mod residual;
mod sparse;

pub use expr::{Expr, ExprGraph, ExprInfo, ExprOp};
pub use lm::{fit_host, FitReport, Lm};
pub use residual::Residual;
pub use sparse::{fit_sparse_host, LmSparse, SparseOptions, SparseProgress, SparseReport};

use kernelport_sys as sys;

use crate::error::static_str;
use crate::raw;

/// The precision a graph is compiled in (`kp_precision`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Precision {
    /// f64 where the device has cl_khr_fp64, else f32.
    Auto,
    F64,
    F32,
}

impl Precision {
    fn raw(self) -> sys::kp_precision {
        match self {
            Precision::Auto => sys::KP_PRECISION_AUTO,
            Precision::F64 => sys::KP_PRECISION_F64,
            Precision::F32 => sys::KP_PRECISION_F32,
        }
    }

    fn from_raw(p: sys::kp_precision) -> Precision {
        match p {
            sys::KP_PRECISION_F64 => Precision::F64,
            sys::KP_PRECISION_F32 => Precision::F32,
            _ => Precision::Auto,
        }
    }

    /// "auto", "f64", "f32" (`kp_precision_name`).
    pub fn name(self) -> &'static str {
        // SAFETY: a static string for every value.
        unsafe { static_str(sys::kp_precision_name(self.raw())) }
    }
}

/// The loss each squared residual goes through (`kp_loss`); `a` is `LmOptions::loss_scale`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Loss {
    /// rho(s) = s, s = r^2.
    Squared,
    /// rho(s) = s for s <= a^2, else 2 a sqrt(s) - a^2.
    Huber,
    /// rho(s) = a^2 log(1 + s / a^2).
    Cauchy,
}

/// Levenberg-Marquardt's iterations, tolerances, damping and loss (`kp_lm_options`). `Default` is
/// the library's (`kp_lm_options_default`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LmOptions {
    /// Jacobian evaluations, at most (one per trial point).
    pub max_iterations: u32,
    /// Stop when max |g_j| <= this (g = J^T r).
    pub gradient_tolerance: f64,
    /// Stop when |h| <= this * (|x| + this).
    pub step_tolerance: f64,
    /// Stop when an accepted step lowers the cost by <= this * cost.
    pub function_tolerance: f64,
    /// mu0: the damping is mu * diag(J^T J).
    pub initial_damping: f64,
    /// The scaling diag(J^T J) is clamped to [this, 1e32].
    pub min_diagonal: f64,
    pub loss: Loss,
    /// `a` of the robust losses.
    pub loss_scale: f64,
}

impl Default for LmOptions {
    fn default() -> LmOptions {
        let o = raw::lm_options();
        LmOptions {
            max_iterations: o.max_iterations,
            gradient_tolerance: o.gradient_tolerance,
            step_tolerance: o.step_tolerance,
            function_tolerance: o.function_tolerance,
            initial_damping: o.initial_damping,
            min_diagonal: o.min_diagonal,
            loss: match o.loss {
                sys::KP_LOSS_HUBER => Loss::Huber,
                sys::KP_LOSS_CAUCHY => Loss::Cauchy,
                _ => Loss::Squared,
            },
            loss_scale: o.loss_scale,
        }
    }
}

impl LmOptions {
    pub(crate) fn raw(&self) -> sys::kp_lm_options {
        let mut o = raw::lm_options();
        o.max_iterations = self.max_iterations;
        o.gradient_tolerance = self.gradient_tolerance;
        o.step_tolerance = self.step_tolerance;
        o.function_tolerance = self.function_tolerance;
        o.initial_damping = self.initial_damping;
        o.min_diagonal = self.min_diagonal;
        o.loss = match self.loss {
            Loss::Squared => sys::KP_LOSS_SQUARED,
            Loss::Huber => sys::KP_LOSS_HUBER,
            Loss::Cauchy => sys::KP_LOSS_CAUCHY,
        };
        o.loss_scale = self.loss_scale;
        o
    }
}

/// Why a problem stopped (`kp_lm_status`). A code this binding does not know is `Other`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LmStatus {
    /// Converged: gradient tolerance.
    Gradient,
    /// Converged: step tolerance.
    Step,
    /// Converged: function tolerance.
    Function,
    MaxIterations,
    /// The damped system stayed singular up to mu = 1e32.
    Singular,
    /// A residual or derivative was NaN or infinite at the starting point.
    NonFinite,
    Other(i32),
}

impl LmStatus {
    pub(crate) fn from_raw(s: i32) -> LmStatus {
        match s as sys::kp_lm_status {
            _ if s < 0 => LmStatus::Other(s),
            sys::KP_LM_GRADIENT => LmStatus::Gradient,
            sys::KP_LM_STEP => LmStatus::Step,
            sys::KP_LM_FUNCTION => LmStatus::Function,
            sys::KP_LM_MAX_ITERATIONS => LmStatus::MaxIterations,
            sys::KP_LM_SINGULAR => LmStatus::Singular,
            sys::KP_LM_NONFINITE => LmStatus::NonFinite,
            _ => LmStatus::Other(s),
        }
    }

    fn code(self) -> i32 {
        match self {
            LmStatus::Gradient => sys::KP_LM_GRADIENT as i32,
            LmStatus::Step => sys::KP_LM_STEP as i32,
            LmStatus::Function => sys::KP_LM_FUNCTION as i32,
            LmStatus::MaxIterations => sys::KP_LM_MAX_ITERATIONS as i32,
            LmStatus::Singular => sys::KP_LM_SINGULAR as i32,
            LmStatus::NonFinite => sys::KP_LM_NONFINITE as i32,
            LmStatus::Other(s) => s,
        }
    }

    /// Gradient, step or function tolerance (`KP_LM_CONVERGED`).
    pub fn converged(self) -> bool {
        matches!(self, LmStatus::Gradient | LmStatus::Step | LmStatus::Function)
    }

    /// "gradient", "step", "function", "max-iterations", "singular", "non-finite"
    /// (`kp_lm_status_name`).
    pub fn name(self) -> &'static str {
        // SAFETY: a static string for every value.
        unsafe { static_str(sys::kp_lm_status_name(self.code() as sys::kp_lm_status)) }
    }
}
