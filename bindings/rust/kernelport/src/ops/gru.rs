// SPDX-License-Identifier: Apache-2.0
//! The gru family (docs/kernels/gru.md): `gru.step`, the ensemble world-model `gru.rollout`
//! (through the library's `kp_gru_rollout`), its random draws and its metrics. Weights use
//! PyTorch's layout (gates r, z, n); every tensor is f32.

use std::ptr::{self, NonNull};

use kernelport_sys as sys;

use super::opt_raw;
use crate::error::{Error, Result, Status};
use crate::event::Event;
use crate::raw;
use crate::runtime::Runtime;
use crate::tensor::Tensor;

/// The arguments of `gru.step`: h_out = GRU(x, h).
#[derive(Clone, Copy, Debug)]
pub struct Step<'a> {
    /// [B, I]
    pub x: Tensor<'a, f32>,
    /// [B, H]
    pub h: Tensor<'a, f32>,
    /// [3H, I], [3H, H]
    pub w_ih: Tensor<'a, f32>,
    pub w_hh: Tensor<'a, f32>,
    /// [3H] each; None is a zero bias.
    pub b_ih: Option<Tensor<'a, f32>>,
    pub b_hh: Option<Tensor<'a, f32>>,
    /// [B, H], out; may not overlap h.
    pub h_out: Tensor<'a, f32>,
    /// true: PyTorch's and cuDNN's cell (the default); false: ONNX's default.
    pub linear_before_reset: bool,
}

/// One GRU cell application for a batch (`gru.step`).
pub fn step(rt: &Runtime, s: &Step<'_>) -> Result<()> {
    rt.kernel("gru.step")?
        .launch()
        .tensor("x", &s.x)
        .tensor("h", &s.h)
        .tensor("w_ih", &s.w_ih)
        .tensor("w_hh", &s.w_hh)
        .opt_tensor("b_ih", s.b_ih.as_ref())
        .opt_tensor("b_hh", s.b_hh.as_ref())
        .tensor("h_out", &s.h_out)
        .int("linear_before_reset", s.linear_before_reset as i64)
        .run()
}

/// How the rollout turns the prior's softmax into the stochastic state z_t.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RolloutMode {
    /// A one-hot draw of softmax(logits) (Philox, see `rollout_uniform`).
    Sample,
    /// The probabilities themselves.
    Mean,
    /// One-hot at the most likely category (ties: the lowest index).
    Argmax,
}

impl RolloutMode {
    fn raw(self) -> i64 {
        (match self {
            RolloutMode::Sample => sys::KP_GRU_ROLLOUT_SAMPLE,
            RolloutMode::Mean => sys::KP_GRU_ROLLOUT_MEAN,
            RolloutMode::Argmax => sys::KP_GRU_ROLLOUT_ARGMAX,
        }) as i64
    }
}

/// The arguments of `gru.rollout`: E members, B trajectories, T steps, hidden size H, S
/// categories (S = 0: deterministic), F features, I = F + 1 + S.
#[derive(Clone, Copy, Debug)]
pub struct Rollout<'a> {
    /// [E, 3H, I], [E, 3H, H]
    pub w_ih: Tensor<'a, f32>,
    pub w_hh: Tensor<'a, f32>,
    /// [E, 3H] each; None is zero.
    pub b_ih: Option<Tensor<'a, f32>>,
    pub b_hh: Option<Tensor<'a, f32>>,
    /// The prior head [E, S, H], [E, S]; required when S > 0.
    pub w_p: Option<Tensor<'a, f32>>,
    pub b_p: Option<Tensor<'a, f32>>,
    /// The loss head [E, H + S], [E]: its width defines S.
    pub w_y: Tensor<'a, f32>,
    pub b_y: Tensor<'a, f32>,
    /// Static features [E or 1, B, F].
    pub f: Tensor<'a, f32>,
    /// The last observed loss of each trajectory [B].
    pub y0: Tensor<'a, f32>,
    /// The initial stochastic state [E, B, S]; required when S > 0.
    pub z0: Option<Tensor<'a, f32>>,
    /// [E, B, H]
    pub h0: Tensor<'a, f32>,
    /// Outputs: the predicted losses [E, B, T] and the last state [E, B, H] (C's `h_T`).
    pub y: Tensor<'a, f32>,
    pub h_last: Tensor<'a, f32>,
    /// Optional outputs [E, B, T]: the prior's entropy and |h_t|.
    pub entropy: Option<Tensor<'a, f32>>,
    pub hnorm: Option<Tensor<'a, f32>>,
    /// T >= 1.
    pub steps: i64,
    pub mode: RolloutMode,
    /// The key of mode Sample's random stream.
    pub seed: u64,
    pub linear_before_reset: bool,
}

impl<'a> Rollout<'a> {
    /// The required tensors; no biases, prior head, z0 or optional outputs (set the fields), mode
    /// Sample with seed 0, PyTorch's cell.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        w_ih: Tensor<'a, f32>,
        w_hh: Tensor<'a, f32>,
        w_y: Tensor<'a, f32>,
        b_y: Tensor<'a, f32>,
        f: Tensor<'a, f32>,
        y0: Tensor<'a, f32>,
        h0: Tensor<'a, f32>,
        y: Tensor<'a, f32>,
        h_last: Tensor<'a, f32>,
        steps: i64,
    ) -> Rollout<'a> {
        Rollout {
            w_ih,
            w_hh,
            b_ih: None,
            b_hh: None,
            w_p: None,
            b_p: None,
            w_y,
            b_y,
            f,
            y0,
            z0: None,
            h0,
            y,
            h_last,
            entropy: None,
            hnorm: None,
            steps,
            mode: RolloutMode::Sample,
            seed: 0,
            linear_before_reset: true,
        }
    }

    fn raw(&self) -> sys::kp_gru_rollout_args {
        let mut a = raw::gru_rollout_args();
        a.w_ih = self.w_ih.raw();
        a.w_hh = self.w_hh.raw();
        a.b_ih = opt_raw(self.b_ih.as_ref());
        a.b_hh = opt_raw(self.b_hh.as_ref());
        a.w_p = opt_raw(self.w_p.as_ref());
        a.b_p = opt_raw(self.b_p.as_ref());
        a.w_y = self.w_y.raw();
        a.b_y = self.b_y.raw();
        a.f = self.f.raw();
        a.y0 = self.y0.raw();
        a.z0 = opt_raw(self.z0.as_ref());
        a.h0 = self.h0.raw();
        a.y = self.y.raw();
        a.h_T = self.h_last.raw();
        a.entropy = opt_raw(self.entropy.as_ref());
        a.hnorm = opt_raw(self.hnorm.as_ref());
        a.T = self.steps;
        a.mode = self.mode.raw();
        // The C argument is the 64-bit key's bits.
        a.seed = self.seed as i64;
        a.linear_before_reset = self.linear_before_reset as i64;
        a
    }
}

fn rollout_raw<'rt>(rt: &'rt Runtime, r: &Rollout<'_>, event: bool) -> Result<Option<Event<'rt>>> {
    let a = r.raw();
    let mut ev = ptr::null_mut();
    let evp = if event { &mut ev as *mut _ } else { ptr::null_mut() };
    // SAFETY: `a` and the buffers its views borrow live during the call.
    rt.check(unsafe { sys::kp_gru_rollout(rt.as_ptr(), &a, evp) })?;
    Ok(NonNull::new(ev).map(|e| Event::from_raw(rt, e)))
}

/// The ensemble rollout in one launch (`gru.rollout`).
pub fn rollout(rt: &Runtime, r: &Rollout<'_>) -> Result<()> {
    rollout_raw(rt, r, false).map(|_| ())
}

/// As `rollout`, with an event for timing.
pub fn rollout_timed<'rt>(rt: &'rt Runtime, r: &Rollout<'_>) -> Result<Event<'rt>> {
    rollout_raw(rt, r, true)?
        .ok_or_else(|| Error::new(Status::Internal, "kp_gru_rollout gave no event"))
}

/// The uniform number in [0, 1) that mode Sample draws for member e, trajectory b, step t.
pub fn rollout_uniform(seed: u64, e: i64, b: i64, t: i64) -> f32 {
    // SAFETY: a pure function.
    unsafe { sys::kp_gru_rollout_uniform(seed, e, b, t) }
}

/// Summary figures of predicted loss trajectories y [E, B, T] (`kp_gru_rollout_metrics`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RolloutMetrics {
    pub mean_abs_delta: f64,
    pub smoothness: f64,
    pub trajectory_variance: f64,
    pub ensemble_variance: f64,
    pub ensemble_spread: f64,
    pub final_spread: f64,
}

/// The metrics of y [E, B, T] (row-major host data); None when a dimension is below 1 or y's
/// length is not E B T.
pub fn rollout_metrics(y: &[f32], e: usize, b: usize, t: usize) -> Option<RolloutMetrics> {
    if e.checked_mul(b).and_then(|n| n.checked_mul(t)) != Some(y.len()) {
        return None;
    }
    let mut m = raw::gru_rollout_metrics();
    let null = ptr::null_mut();
    // SAFETY: y holds E B T floats; the optional per-element outputs are NULL.
    let rc = unsafe {
        sys::kp_gru_rollout_metrics_compute(
            y.as_ptr(),
            e as i64,
            b as i64,
            t as i64,
            null,
            null,
            null,
            &mut m,
        )
    };
    (rc == 0).then_some(RolloutMetrics {
        mean_abs_delta: m.mean_abs_delta,
        smoothness: m.smoothness,
        trajectory_variance: m.trajectory_variance,
        ensemble_variance: m.ensemble_variance,
        ensemble_spread: m.ensemble_spread,
        final_spread: m.final_spread,
    })
}
