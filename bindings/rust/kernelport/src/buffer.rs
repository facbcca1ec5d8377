// SPDX-License-Identifier: Apache-2.0
//! Device memory typed by its element (`kp_buffer`), and the element types.

use std::marker::PhantomData;
use std::mem;
use std::os::raw::c_void;
use std::ptr::{self, NonNull};

use kernelport_sys as sys;

use crate::error::{Error, Result, Status};
use crate::runtime::Runtime;
use crate::tensor::{DType, Tensor};

mod sealed {
    pub trait Sealed {}
}

/// An element type of buffers and tensors. Sealed: each maps to one `kp_dtype` whose size is
/// the Rust type's.
pub trait Element: Copy + Default + Send + 'static + sealed::Sealed {
    const DTYPE: DType;
}

/// IEEE half precision, stored as its bits (f16 tensors).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct F16(pub u16);

/// bfloat16, the upper half of an IEEE single, stored as its bits.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Bf16(pub u16);

impl F16 {
    /// To nearest even, as the kernels convert (`kp_half_from_float`).
    pub fn from_f32(v: f32) -> F16 {
        // SAFETY: a pure function.
        F16(unsafe { sys::kp_half_from_float(v) })
    }
    pub fn to_f32(self) -> f32 {
        // SAFETY: a pure function.
        unsafe { sys::kp_half_to_float(self.0) }
    }
}

impl Bf16 {
    /// To nearest even, NaN kept a NaN (`kp_bf16_from_float`).
    pub fn from_f32(v: f32) -> Bf16 {
        // SAFETY: a pure function.
        Bf16(unsafe { sys::kp_bf16_from_float(v) })
    }
    pub fn to_f32(self) -> f32 {
        // SAFETY: a pure function.
        unsafe { sys::kp_bf16_to_float(self.0) }
    }
}

macro_rules! element {
    ($t:ty, $d:expr) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = $d;
        }
    };
}
element!(f32, DType::F32);
element!(F16, DType::F16);
element!(Bf16, DType::Bf16);
element!(i32, DType::I32);
element!(u32, DType::U32);
element!(u8, DType::U8);
element!(f64, DType::F64);

/// `len` elements of T in device memory (host memory on the host device). Released by Drop,
/// after the work queued on it.
pub struct Buffer<'rt, T: Element> {
    rt: &'rt Runtime,
    raw: NonNull<sys::kp_buffer>,
    len: usize,
    _t: PhantomData<T>,
}

// Send: a buffer's calls all go through its runtime, which may be used from any thread. Not Sync:
// the header documents no thread-safety for kp_buffer_write/read/copy/fill (on the host device they
// are plain memcpy), so a buffer and the views borrowed from it stay on one thread at a time.
unsafe impl<'rt, T: Element> Send for Buffer<'rt, T> {}

impl<'rt, T: Element> Buffer<'rt, T> {
    pub(crate) fn new(rt: &'rt Runtime, len: usize) -> Result<Buffer<'rt, T>> {
        let bytes = len.checked_mul(mem::size_of::<T>()).ok_or_else(|| {
            Error::new(Status::OutOfMemory, format!("{} elements overflow a size", len))
        })?;
        let mut b = ptr::null_mut();
        // SAFETY: a live runtime; the library refuses 0 bytes with a message.
        rt.check(unsafe { sys::kp_buffer_create(rt.as_ptr(), bytes, &mut b) })?;
        let raw = NonNull::new(b).ok_or_else(|| Error::new(Status::Internal, "NULL buffer"))?;
        Ok(Buffer { rt, raw, len, _t: PhantomData })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn bytes(&self) -> usize {
        self.len * mem::size_of::<T>()
    }

    pub fn runtime(&self) -> &'rt Runtime {
        self.rt
    }

    pub(crate) fn as_ptr(&self) -> *mut sys::kp_buffer {
        self.raw.as_ptr()
    }

    /// Copies `data` into elements `offset ..`. Blocking, ordered after earlier launches.
    pub fn write(&mut self, offset: usize, data: &[T]) -> Result<()> {
        let size = mem::size_of::<T>();
        // SAFETY: data is valid for its bytes; the library checks the range against the buffer.
        self.rt.check(unsafe {
            sys::kp_buffer_write(
                self.rt.as_ptr(),
                self.as_ptr(),
                offset.saturating_mul(size),
                mem::size_of_val(data),
                data.as_ptr() as *const c_void,
            )
        })
    }

    /// Copies elements `offset .. offset + out.len()` into `out`, after all queued work.
    pub fn read(&self, offset: usize, out: &mut [T]) -> Result<()> {
        let size = mem::size_of::<T>();
        // SAFETY: out is valid for its bytes, and any bit pattern is a valid T (plain numbers).
        self.rt.check(unsafe {
            sys::kp_buffer_read(
                self.rt.as_ptr(),
                self.as_ptr(),
                offset.saturating_mul(size),
                mem::size_of_val(out),
                out.as_mut_ptr() as *mut c_void,
            )
        })
    }

    /// The whole buffer, read back.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut v = vec![T::default(); self.len];
        self.read(0, &mut v)?;
        Ok(v)
    }

    /// Every element set to `value` (asynchronous, in the queue).
    pub fn fill(&mut self, value: T) -> Result<()> {
        // SAFETY: the pattern is one T, whose size is 1, 2 or 4 bytes.
        self.rt.check(unsafe {
            sys::kp_buffer_fill(
                self.rt.as_ptr(),
                self.as_ptr(),
                0,
                self.bytes(),
                &value as *const T as *const c_void,
                mem::size_of::<T>(),
            )
        })
    }

    /// Copies all of `src` into elements `offset ..` of this buffer (device side, asynchronous).
    pub fn copy_from(&mut self, offset: usize, src: &Buffer<'_, T>) -> Result<()> {
        // SAFETY: both buffers live; the library checks ranges and runtimes.
        self.rt.check(unsafe {
            sys::kp_buffer_copy(
                self.rt.as_ptr(),
                src.as_ptr(),
                0,
                self.as_ptr(),
                offset.saturating_mul(mem::size_of::<T>()),
                src.bytes(),
            )
        })
    }

    /// The whole buffer as a 1-D tensor [len].
    pub fn tensor(&self) -> Tensor<'_, T> {
        Tensor::contiguous(self, &[self.len as i64]).expect("rank 1")
    }

    /// A contiguous row-major view of `shape` from element 0 (rank at most 8). The library checks
    /// at launch that the view lies within the buffer.
    pub fn view(&self, shape: &[i64]) -> Result<Tensor<'_, T>> {
        Tensor::contiguous(self, shape)
    }

    /// Any view: shape, strides and offset in elements (strides may be 0 to broadcast).
    pub fn strided(&self, shape: &[i64], strides: &[i64], offset: i64) -> Result<Tensor<'_, T>> {
        Tensor::strided(self, shape, strides, offset)
    }

    /// A rank-0 view of element `index`: a scalar operand or output.
    pub fn scalar(&self, index: i64) -> Tensor<'_, T> {
        Tensor::strided(self, &[], &[], index).expect("rank 0")
    }
}

impl<'rt, T: Element> Drop for Buffer<'rt, T> {
    fn drop(&mut self) {
        // SAFETY: owned by this value, of this runtime; the library waits for queued work on it.
        unsafe { sys::kp_buffer_destroy(self.rt.as_ptr(), self.as_ptr()) }
    }
}

impl<'rt, T: Element> std::fmt::Debug for Buffer<'rt, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Buffer<{}>[{}]", T::DTYPE.name(), self.len)
    }
}
