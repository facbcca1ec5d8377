// SPDX-License-Identifier: Apache-2.0
//! Residuals and their Jacobians compiled to a kernel (`kp_residual`): n instances in one
//! dispatch.

use std::ptr::{self, NonNull};

use kernelport_sys as sys;

use super::{ExprGraph, Precision};
use crate::buffer::Element;
use crate::error::{Error, Result, Status};
use crate::kernel::Kernel;
use crate::ops::opt_raw;
use crate::raw;
use crate::runtime::Runtime;
use crate::tensor::Tensor;

/// A graph's residuals and their derivatives generated as OpenCL C and registered as kernel
/// "solve.r<key>_f64" (or _f32), so verify, bench and the program cache treat it as any kernel.
/// Released by Drop (the kernel stays with the runtime).
pub struct Residual<'rt> {
    rt: &'rt Runtime,
    raw: NonNull<sys::kp_residual>,
}

// The header: "a residual ... is used by one thread at a time (it owns the buffer its status flags
// come back in)". Send, not Sync; evaluate takes &mut.
unsafe impl<'rt> Send for Residual<'rt> {}

impl<'rt> Residual<'rt> {
    /// Compiles `g` (copied) for the runtime's device. `Precision::F64` on a device without
    /// cl_khr_fp64 is `Status::Unsupported`.
    pub fn new(rt: &'rt Runtime, g: &ExprGraph, precision: Precision) -> Result<Residual<'rt>> {
        g.checked_info()?;
        let mut res = ptr::null_mut();
        // SAFETY: a live runtime and graph; res receives a caller-owned handle.
        rt.check(unsafe {
            sys::kp_residual_create(rt.as_ptr(), g.as_ptr(), precision.raw(), &mut res)
        })?;
        let raw = NonNull::new(res)
            .ok_or_else(|| Error::new(Status::Internal, "kp_residual_create gave NULL"))?;
        Ok(Residual { rt, raw })
    }

    /// f64 or f32, never auto: the element type of evaluate's real tensors.
    pub fn precision(&self) -> Precision {
        // SAFETY: a live handle.
        Precision::from_raw(unsafe { sys::kp_residual_precision(self.raw.as_ptr()) })
    }

    /// The generated OpenCL C.
    pub fn source(&self) -> String {
        // SAFETY: a residual-owned string, copied at once.
        unsafe { raw::string(sys::kp_residual_source(self.raw.as_ptr())) }
    }

    /// The registered kernel.
    pub fn kernel(&self) -> Kernel<'rt> {
        // SAFETY: a live handle; the kernel belongs to the runtime.
        let k = unsafe { sys::kp_residual_kernel(self.raw.as_ptr()) };
        Kernel::from_raw(self.rt, NonNull::new(k).expect("kp_residual_kernel of a live residual"))
    }

    /// Evaluates n instances (blocking): instance i reads data row i ([n, n_data]; None when the
    /// graph has no data slot) and parameter slot s from params[index[i, s]] (index [n, S],
    /// params [P]), and writes r [n, n_outputs] and the Jacobian in block form jac [n,
    /// n_outputs, S]. T is f64 or f32, as `precision`. An index outside [0, P) is
    /// `Status::InvalidArg` naming the instance, slot and index; a NaN or infinite result
    /// `Status::Verify` naming the instance.
    pub fn evaluate<T: Element>(
        &mut self,
        n: usize,
        data: Option<&Tensor<'_, T>>,
        index: &Tensor<'_, i32>,
        params: &Tensor<'_, T>,
        r: &Tensor<'_, T>,
        jac: &Tensor<'_, T>,
    ) -> Result<()> {
        // SAFETY: views of live buffers (the library checks their shapes, dtypes and extents).
        self.rt.check(unsafe {
            sys::kp_residual_evaluate(
                self.raw.as_ptr(),
                n as i64,
                opt_raw(data),
                index.raw(),
                params.raw(),
                r.raw(),
                jac.raw(),
            )
        })
    }
}

impl<'rt> Drop for Residual<'rt> {
    fn drop(&mut self) {
        // SAFETY: owned; the runtime outlives it (its status buffer is released on it).
        unsafe { sys::kp_residual_destroy(self.raw.as_ptr()) }
    }
}
