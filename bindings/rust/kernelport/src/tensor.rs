// SPDX-License-Identifier: Apache-2.0
//! Typed views of buffers (`kp_tensor`): shape, strides and offset in elements. The view
//! operations are the library's own helpers, so a view means here what it means in C.

use std::fmt;
use std::marker::PhantomData;
use std::os::raw::c_char;

use kernelport_sys as sys;

use crate::buffer::{Buffer, Element};
use crate::error::{Error, Result};
use crate::raw;

/// The most dimensions a view has (`KP_MAX_RANK`).
pub const MAX_RANK: usize = sys::KP_MAX_RANK as usize;

/// A tensor's element type (`kp_dtype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F16,
    I32,
    U32,
    U8,
    Bf16,
    /// IEEE double: only the kernels that say so take it (cl_khr_fp64 devices), such as the
    /// solve layer's in f64.
    F64,
}

impl DType {
    pub(crate) fn raw(self) -> sys::kp_dtype {
        match self {
            DType::F32 => sys::KP_F32,
            DType::F16 => sys::KP_F16,
            DType::I32 => sys::KP_I32,
            DType::U32 => sys::KP_U32,
            DType::U8 => sys::KP_U8,
            DType::Bf16 => sys::KP_BF16,
            DType::F64 => sys::KP_F64,
        }
    }

    /// "f32", "f16", ... (`kp_dtype_name`).
    pub fn name(self) -> &'static str {
        // SAFETY: a static string for every value.
        unsafe { crate::error::static_str(sys::kp_dtype_name(self.raw())) }
    }
}

/// A view of a `Buffer<T>`: it borrows the buffer, so the buffer outlives every launch argument
/// made from it. Cheap to copy; the buffer is not owned.
#[derive(Clone, Copy)]
pub struct Tensor<'a, T: Element> {
    raw: sys::kp_tensor,
    _buffer: PhantomData<&'a Buffer<'a, T>>,
}

impl<'a, T: Element> Tensor<'a, T> {
    pub(crate) fn contiguous(buf: &'a Buffer<'_, T>, shape: &[i64]) -> Result<Tensor<'a, T>> {
        check_rank(shape.len())?;
        Ok(Tensor {
            raw: raw::tensor_nd(buf.as_ptr(), T::DTYPE.raw(), shape),
            _buffer: PhantomData,
        })
    }

    pub(crate) fn strided(
        buf: &'a Buffer<'_, T>,
        shape: &[i64],
        strides: &[i64],
        offset: i64,
    ) -> Result<Tensor<'a, T>> {
        if shape.len() != strides.len() {
            return Err(Error::invalid(format!(
                "view: {} extents but {} strides",
                shape.len(),
                strides.len()
            )));
        }
        let mut t = Tensor::contiguous(buf, shape)?;
        t.raw.strides[..strides.len()].copy_from_slice(strides);
        t.raw.offset = offset;
        Ok(t)
    }

    pub(crate) fn raw(&self) -> sys::kp_tensor {
        self.raw
    }

    pub fn rank(&self) -> usize {
        self.raw.rank.max(0) as usize
    }

    pub fn shape(&self) -> &[i64] {
        &self.raw.shape[..self.rank()]
    }

    pub fn strides(&self) -> &[i64] {
        &self.raw.strides[..self.rank()]
    }

    pub fn offset(&self) -> i64 {
        self.raw.offset
    }

    /// The product of the shape (1 for rank 0; i64::MAX past it).
    pub fn numel(&self) -> i64 {
        // SAFETY: reads the value only.
        unsafe { sys::kp_tensor_numel(&self.raw) }
    }

    pub fn is_contiguous(&self) -> bool {
        // SAFETY: reads the value only.
        unsafe { sys::kp_tensor_is_contiguous(&self.raw) != 0 }
    }

    /// Dimensions d0 and d1 swapped; no data moves (a transposed matrix for blas.gemm).
    pub fn transpose(self, d0: usize, d1: usize) -> Tensor<'a, T> {
        // SAFETY: a pure function of the value; out-of-range dimensions leave it as it is.
        self.with(unsafe { sys::kp_tensor_transpose(self.raw, dim(d0), dim(d1)) })
    }

    /// `length` elements of dimension d from `start` (PyTorch's narrow). Out of range gives a
    /// view that launches refuse, naming it.
    pub fn narrow(self, d: usize, start: i64, length: i64) -> Tensor<'a, T> {
        // SAFETY: a pure function of the value.
        self.with(unsafe { sys::kp_tensor_narrow(self.raw, dim(d), start, length) })
    }

    /// Dimension d reversed (a negative stride: only kernels that accept them take it).
    pub fn flip(self, d: usize) -> Tensor<'a, T> {
        // SAFETY: a pure function of the value.
        self.with(unsafe { sys::kp_tensor_flip(self.raw, dim(d)) })
    }

    fn with(self, raw: sys::kp_tensor) -> Tensor<'a, T> {
        Tensor { raw, _buffer: PhantomData }
    }
}

fn check_rank(rank: usize) -> Result<()> {
    if rank > MAX_RANK {
        return Err(Error::invalid(format!("view: rank {} is above {}", rank, MAX_RANK)));
    }
    Ok(())
}

/// The helpers take an int32 dimension; one past it is out of range for every view.
fn dim(d: usize) -> i32 {
    d.min(i32::MAX as usize) as i32
}

/// "f32[3, 4]" plus strides and offset when they matter (`kp_tensor_describe`).
impl<'a, T: Element> fmt::Display for Tensor<'a, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0 as c_char; 256];
        // SAFETY: buf's size is passed; the result is NUL-terminated within it.
        unsafe { sys::kp_tensor_describe(&self.raw, buf.as_mut_ptr(), buf.len()) };
        f.write_str(&raw::array_string(&buf))
    }
}

impl<'a, T: Element> fmt::Debug for Tensor<'a, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tensor({})", self)
    }
}
