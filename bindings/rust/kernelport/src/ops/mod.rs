// SPDX-License-Identifier: Apache-2.0
//! Typed calls of the kernel families. Each looks its kernel up by name and launches it on the
//! runtime's queue, asynchronously like `Launch::run`, returning its errors (`NotFound` when the
//! family's plugin is not loaded). Where the C headers have the call (`ops/*.h`, exported by the
//! library), the binding calls it; the others are launches with named arguments. The kernels'
//! semantics are in docs/kernels/*.md.

pub mod blas;
pub mod gru;
pub mod logic;
pub mod optim;
pub mod tensor;

use kernelport_sys as sys;

use crate::buffer::Element;
use crate::raw;
use crate::tensor::Tensor;

/// The C view of an optional tensor: no buffer when absent, which the C calls leave out.
pub(crate) fn opt_raw<T: Element>(t: Option<&Tensor<'_, T>>) -> sys::kp_tensor {
    t.map_or_else(raw::no_tensor, |t| t.raw())
}

/// A pointer to an optional view for the C calls that take `const kp_tensor *` (NULL: absent);
/// `slot` holds the view during the call.
pub(crate) fn opt_ptr<T: Element>(
    t: Option<&Tensor<'_, T>>,
    slot: &mut sys::kp_tensor,
) -> *const sys::kp_tensor {
    match t {
        Some(t) => {
            *slot = t.raw();
            slot
        }
        None => std::ptr::null(),
    }
}
