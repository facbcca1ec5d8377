// SPDX-License-Identifier: Apache-2.0
//! Levenberg-Marquardt on many independent small problems (`kp_lm_solve_host`, `kp_lm`): one
//! work-group per problem on a device.

use std::os::raw::c_char;
use std::ptr::{self, NonNull};

use kernelport_sys as sys;

use super::{ExprGraph, LmOptions, LmStatus, Precision};
use crate::error::{check, Error, Result, Status};
use crate::kernel::Kernel;
use crate::raw;
use crate::runtime::Runtime;

/// What a batch's solve reports per problem, and in all.
#[derive(Clone, Debug, PartialEq)]
pub struct FitReport {
    /// 0.5 sum rho(r^2) at the estimate.
    pub cost: Vec<f64>,
    /// Jacobian evaluations (one per trial point).
    pub iterations: Vec<i32>,
    pub status: Vec<LmStatus>,
    /// Device: upload, solve, download; host: the solve alone.
    pub seconds: [f64; 3],
    summary: String,
}

impl FitReport {
    /// Problems that converged (gradient, step or function tolerance).
    pub fn converged(&self) -> usize {
        self.status.iter().filter(|s| s.converged()).count()
    }

    /// The library's paragraph on the statuses (`kp_lm_summary`): "13 of 14 converged; 1
    /// singular (first: problem 3): ...".
    pub fn summary(&self) -> &str {
        &self.summary
    }
}

/// The batch over the caller's slices, after checking their lengths against the graph's slots:
/// problem b owns data rows rows[b] .. rows[b + 1] - 1 and parameters x[b * n_params ..].
fn batch(
    n_data: usize,
    n_params: usize,
    rows: &[i32],
    data: &[f64],
    x: &mut [f64],
    out: &mut FitReport,
) -> Result<sys::kp_lm_batch> {
    let b = rows
        .len()
        .checked_sub(1)
        .ok_or_else(|| Error::invalid("fit: rows needs B + 1 offsets, B >= 0 (it is empty)"))?;
    let n = *rows.last().unwrap_or(&0);
    if n < 0 || data.len() != n as usize * n_data {
        return Err(Error::invalid(format!(
            "fit: data has {} values, expected rows[{}] = {} rows x {} data columns",
            data.len(),
            b,
            n,
            n_data
        )));
    }
    if x.len() != b * n_params {
        return Err(Error::invalid(format!(
            "fit: x has {} values, expected {} problems x {} parameters",
            x.len(),
            b,
            n_params
        )));
    }
    out.cost = vec![0.0; b];
    out.iterations = vec![0; b];
    let mut c = raw::lm_batch();
    c.n_problems = b;
    c.rows = rows.as_ptr();
    c.data = if n_data == 0 { ptr::null() } else { data.as_ptr() };
    c.x = x.as_mut_ptr();
    c.cost = out.cost.as_mut_ptr();
    c.iterations = out.iterations.as_mut_ptr();
    Ok(c)
}

/// Runs `solve` on the batch and fills the report (statuses, seconds, summary).
fn run(
    n_data: usize,
    n_params: usize,
    rows: &[i32],
    data: &[f64],
    x: &mut [f64],
    solve: impl FnOnce(&mut sys::kp_lm_batch) -> Result<()>,
) -> Result<FitReport> {
    let mut report = FitReport {
        cost: Vec::new(),
        iterations: Vec::new(),
        status: Vec::new(),
        seconds: [0.0; 3],
        summary: String::new(),
    };
    let mut status = vec![0i32; rows.len().saturating_sub(1)];
    let mut c = batch(n_data, n_params, rows, data, x, &mut report)?;
    c.status = status.as_mut_ptr();
    solve(&mut c)?;
    if !status.is_empty() {
        let mut text = vec![0 as c_char; 1024];
        // SAFETY: c points at live arrays of its n_problems; text's size is passed.
        check(ptr::null(), unsafe { sys::kp_lm_summary(&c, text.as_mut_ptr(), text.len()) })?;
        report.summary = raw::array_string(&text);
    }
    report.seconds = c.seconds;
    report.status = status.into_iter().map(LmStatus::from_raw).collect();
    Ok(report)
}

/// The host reference (`kp_lm_solve_host`), in double, on `rows.len() - 1` problems: problem b
/// owns the data rows rows[b] .. rows[b + 1] - 1 of `data` ([rows[B], n_data], row-major) and
/// the parameters x[b * n_params .. (b + 1) * n_params], read as its start and written with its
/// estimate. A problem that does not converge is a status, not an error.
pub fn fit_host(
    g: &ExprGraph,
    opt: &LmOptions,
    rows: &[i32],
    data: &[f64],
    x: &mut [f64],
) -> Result<FitReport> {
    let info = g.checked_info()?;
    let o = opt.raw();
    run(info.n_data, info.n_params, rows, data, x, |c| {
        // SAFETY: the batch's arrays were checked against the graph's slots.
        check(ptr::null(), unsafe { sys::kp_lm_solve_host(g.as_ptr(), &o, c) })
    })
}

/// A graph's batched solver compiled for a runtime's device (`kp_lm`, kernel
/// "solve.lm<key>_f64" or _f32). Released by Drop.
pub struct Lm<'rt> {
    rt: &'rt Runtime,
    raw: NonNull<sys::kp_lm>,
    n_data: usize,
    n_params: usize,
}

// The header: "a residual, like a kp_lm or kp_lm_sparse, is used by one thread at a time". Send,
// not Sync; fit takes &mut.
unsafe impl<'rt> Send for Lm<'rt> {}

impl<'rt> Lm<'rt> {
    /// Generates and registers the solver's kernel for `g` (copied; at most 32 parameters).
    /// `Precision::F64` on a device without cl_khr_fp64 is `Status::Unsupported`.
    pub fn new(rt: &'rt Runtime, g: &ExprGraph, precision: Precision) -> Result<Lm<'rt>> {
        let info = g.checked_info()?;
        let mut lm = ptr::null_mut();
        // SAFETY: a live runtime and graph; lm receives a caller-owned handle.
        rt.check(unsafe { sys::kp_lm_create(rt.as_ptr(), g.as_ptr(), precision.raw(), &mut lm) })?;
        let raw = NonNull::new(lm)
            .ok_or_else(|| Error::new(Status::Internal, "kp_lm_create gave NULL"))?;
        Ok(Lm { rt, raw, n_data: info.n_data, n_params: info.n_params })
    }

    /// f64 or f32, never auto.
    pub fn precision(&self) -> Precision {
        // SAFETY: a live handle.
        Precision::from_raw(unsafe { sys::kp_lm_precision(self.raw.as_ptr()) })
    }

    /// The registered kernel (verify, bench, describe, or launched directly).
    pub fn kernel(&self) -> Kernel<'rt> {
        // SAFETY: a live handle; the kernel belongs to the runtime.
        let k = unsafe { sys::kp_lm_kernel(self.raw.as_ptr()) };
        Kernel::from_raw(self.rt, NonNull::new(k).expect("kp_lm_kernel of a live solver"))
    }

    /// `fit_host` on the device: the batch is copied in (to f32 for an f32 solver), solved in one
    /// launch and copied back; `seconds` holds the three phases.
    pub fn fit(
        &mut self,
        opt: &LmOptions,
        rows: &[i32],
        data: &[f64],
        x: &mut [f64],
    ) -> Result<FitReport> {
        let o = opt.raw();
        let (lm, rt) = (self.raw.as_ptr(), self.rt);
        run(self.n_data, self.n_params, rows, data, x, |c| {
            // SAFETY: the batch's arrays were checked against the graph's slots.
            rt.check(unsafe { sys::kp_lm_solve(lm, &o, c) })
        })
    }
}

impl<'rt> Drop for Lm<'rt> {
    fn drop(&mut self) {
        // SAFETY: owned; the runtime outlives it.
        unsafe { sys::kp_lm_destroy(self.raw.as_ptr()) }
    }
}
