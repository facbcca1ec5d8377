// SPDX-License-Identifier: Apache-2.0
//! Levenberg-Marquardt on one large problem whose instances share parameters through an index
//! array (`kp_lm_sparse_solve_host`, `kp_lm_sparse`): a mesh, one instance per edge.

use std::any::Any;
use std::os::raw::c_void;
use std::panic::{self, AssertUnwindSafe};
use std::ptr::{self, NonNull};

use kernelport_sys as sys;

use super::{ExprGraph, ExprInfo, LmOptions, LmStatus, Precision};
use crate::error::{check, Error, Result, Status};
use crate::raw;
use crate::runtime::Runtime;

/// How each step's linear system is solved (`kp_lm_sparse_options`), with the LM options.
/// `Default` is the library's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SparseOptions {
    pub lm: LmOptions,
    /// CG iterations per step; 0: 4 sqrt(P), at least 100.
    pub max_cg_iterations: u32,
    /// Each step's CG stops when |residual| <= this * |J^T r|.
    pub cg_tolerance: f64,
    /// The preconditioner's blocks: 1 (Jacobi) or up to 8 consecutive parameters (3 for a mesh's
    /// x, y, z).
    pub block_size: u32,
    /// Problems of at most this many parameters solve each step by dense Cholesky instead of CG
    /// (0: always CG; at most 4096).
    pub dense_max_parameters: u32,
}

impl Default for SparseOptions {
    fn default() -> SparseOptions {
        let o = raw::lm_sparse_options();
        SparseOptions {
            lm: LmOptions::default(),
            max_cg_iterations: o.max_cg_iterations,
            cg_tolerance: o.cg_tolerance,
            block_size: o.block_size,
            dense_max_parameters: o.dense_max_parameters,
        }
    }
}

/// One step, passed to the progress callback (`kp_lm_sparse_progress`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SparseProgress {
    /// Jacobian evaluations so far.
    pub iteration: i32,
    /// This step's CG iterations (0 for a dense step).
    pub cg_iterations: i32,
    /// At the current point (after the step when it was accepted).
    pub cost: f64,
    pub damping: f64,
    pub accepted: bool,
    /// max |J^T r| where the step was taken from.
    pub gradient_max: f64,
    /// |(J^T J + mu D) h + J^T r| / |J^T r| where this step's linear solve stopped.
    pub cg_residual: f64,
    pub dense: bool,
}

/// The solve's outcome (`kp_lm_sparse_report`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SparseReport {
    pub status: LmStatus,
    /// Jacobian evaluations.
    pub iterations: i32,
    /// In all (0 when every step was dense).
    pub cg_iterations: i64,
    pub initial_cost: f64,
    pub cost: f64,
    /// Evaluation, normal equations, the linear solves, the rest.
    pub seconds: [f64; 4],
    /// Every step was solved by dense Cholesky.
    pub dense: bool,
}

/// The callback and the first panic it raised (resumed once the library has returned: a panic
/// must not unwind through C).
struct Callback<'a> {
    f: &'a mut dyn FnMut(&SparseProgress),
    panic: Option<Box<dyn Any + Send>>,
}

unsafe extern "C" fn progress_call(user: *mut c_void, p: *const sys::kp_lm_sparse_progress) {
    // SAFETY: user is the Callback that solve() passed, alive for the call; p is valid during it.
    let cb = &mut *(user as *mut Callback<'_>);
    if cb.panic.is_some() {
        return;
    }
    let p = &*p;
    let step = SparseProgress {
        iteration: p.iteration,
        cg_iterations: p.cg_iterations,
        cost: p.cost,
        damping: p.damping,
        accepted: p.accepted != 0,
        gradient_max: p.gradient_max,
        cg_residual: p.cg_residual,
        dense: p.dense != 0,
    };
    let f = &mut cb.f;
    if let Err(e) = panic::catch_unwind(AssertUnwindSafe(|| f(&step))) {
        cb.panic = Some(e);
    }
}

/// Checks the slices against the graph's slots, builds the C structures and runs `solve`.
fn solve(
    info: &ExprInfo,
    opt: &SparseOptions,
    index: &[i32],
    data: &[f64],
    x: &mut [f64],
    progress: Option<&mut dyn FnMut(&SparseProgress)>,
    run: impl FnOnce(
        &sys::kp_lm_sparse_options,
        &sys::kp_lm_sparse_problem,
        &mut sys::kp_lm_sparse_report,
    ) -> Result<()>,
) -> Result<SparseReport> {
    let (n_data, n_params) = (info.n_data, info.n_params);
    if n_params == 0 || index.len() % n_params != 0 {
        return Err(Error::invalid(format!(
            "fit_sparse: index has {} values, not a multiple of the graph's {} parameter slots",
            index.len(),
            n_params
        )));
    }
    let n = index.len() / n_params;
    if data.len() != n * n_data {
        return Err(Error::invalid(format!(
            "fit_sparse: data has {} values, expected {} instances x {} data columns",
            data.len(),
            n,
            n_data
        )));
    }
    let lo = opt.lm.raw();
    let mut o = raw::lm_sparse_options();
    o.lm = &lo;
    o.max_cg_iterations = opt.max_cg_iterations;
    o.cg_tolerance = opt.cg_tolerance;
    o.block_size = opt.block_size;
    o.dense_max_parameters = opt.dense_max_parameters;
    let mut cb = progress.map(|f| Callback { f, panic: None });
    if let Some(cb) = cb.as_mut() {
        o.progress = Some(progress_call);
        o.user = cb as *mut Callback<'_> as *mut c_void;
    }
    let mut p = raw::lm_sparse_problem();
    p.n_instances = n;
    p.data = if n_data == 0 { ptr::null() } else { data.as_ptr() };
    p.index = index.as_ptr();
    p.n_x = x.len();
    p.x = x.as_mut_ptr();
    let mut r = raw::lm_sparse_report();
    let result = run(&o, &p, &mut r);
    if let Some(e) = cb.and_then(|cb| cb.panic) {
        panic::resume_unwind(e);
    }
    result?;
    Ok(SparseReport {
        status: LmStatus::from_raw(r.status as i32),
        iterations: r.iterations,
        cg_iterations: r.cg_iterations,
        initial_cost: r.initial_cost,
        cost: r.cost,
        seconds: r.seconds,
        dense: r.dense != 0,
    })
}

/// The host reference (`kp_lm_sparse_solve_host`), in double: one problem of n instances, n =
/// index.len() / n_params, instance i's slot s being x[index[i * n_params + s]]; data [n, n_data]
/// row-major; x [P] read as the start and written with the estimate. `progress` is called after
/// each step (a panic in it is resumed once the solve has returned). An index outside [0, P) is
/// `Status::InvalidArg` naming the instance and slot.
pub fn fit_sparse_host(
    g: &ExprGraph,
    opt: &SparseOptions,
    index: &[i32],
    data: &[f64],
    x: &mut [f64],
    progress: Option<&mut dyn FnMut(&SparseProgress)>,
) -> Result<SparseReport> {
    let info = g.checked_info()?;
    solve(&info, opt, index, data, x, progress, |o, p, r| {
        // SAFETY: the problem's arrays were checked against the graph's slots.
        check(ptr::null(), unsafe { sys::kp_lm_sparse_solve_host(g.as_ptr(), o, p, r) })
    })
}

/// A graph's large-problem solver compiled for a runtime's device (`kp_lm_sparse`): its residual
/// kernel and the generic CG kernels. Released by Drop.
pub struct LmSparse<'rt> {
    rt: &'rt Runtime,
    raw: NonNull<sys::kp_lm_sparse>,
    info: ExprInfo,
}

// The header: used by one thread at a time. Send, not Sync; fit takes &mut.
unsafe impl<'rt> Send for LmSparse<'rt> {}

impl<'rt> LmSparse<'rt> {
    pub fn new(rt: &'rt Runtime, g: &ExprGraph, precision: Precision) -> Result<LmSparse<'rt>> {
        let info = g.checked_info()?;
        let mut lm = ptr::null_mut();
        // SAFETY: a live runtime and graph; lm receives a caller-owned handle.
        rt.check(unsafe {
            sys::kp_lm_sparse_create(rt.as_ptr(), g.as_ptr(), precision.raw(), &mut lm)
        })?;
        let raw = NonNull::new(lm)
            .ok_or_else(|| Error::new(Status::Internal, "kp_lm_sparse_create gave NULL"))?;
        Ok(LmSparse { rt, raw, info })
    }

    /// f64 or f32, never auto.
    pub fn precision(&self) -> Precision {
        // SAFETY: a live handle.
        Precision::from_raw(unsafe { sys::kp_lm_sparse_precision(self.raw.as_ptr()) })
    }

    /// `fit_sparse_host` on the device: every vector stays there; the same bits on every run on
    /// a device, close to (not equal to) the host reference's.
    pub fn fit(
        &mut self,
        opt: &SparseOptions,
        index: &[i32],
        data: &[f64],
        x: &mut [f64],
        progress: Option<&mut dyn FnMut(&SparseProgress)>,
    ) -> Result<SparseReport> {
        let (lm, rt) = (self.raw.as_ptr(), self.rt);
        solve(&self.info, opt, index, data, x, progress, |o, p, r| {
            // SAFETY: the problem's arrays were checked against the graph's slots.
            rt.check(unsafe { sys::kp_lm_sparse_solve(lm, o, p, r) })
        })
    }
}

impl<'rt> Drop for LmSparse<'rt> {
    fn drop(&mut self) {
        // SAFETY: owned; the runtime outlives it.
        unsafe { sys::kp_lm_sparse_destroy(self.raw.as_ptr()) }
    }
}
