// SPDX-License-Identifier: Apache-2.0
//! The one place where each C structure the binding hands to the library is first made. A
//! structure whose layout grows (a `struct_size` member, #28) is adapted here alone: the library's
//! own constructor where it has one (options, `kp_arg`, `kp_tensor`), otherwise zeroed memory
//! with `struct_size` set.

use std::ffi::CStr;
use std::mem;
use std::os::raw::c_char;

use kernelport_sys as sys;

/// Zeroed C structure: every binding struct is plain data (integers, floats, pointers, arrays).
fn zeroed<T: Copy>() -> T {
    // SAFETY: only instantiated below with bindgen's repr(C) structs, for which all-zero bytes
    // are a valid value (NULL pointers, None callbacks, 0 numbers).
    unsafe { mem::zeroed() }
}

/// The size a caller writes into a `struct_size` member (`as _`: the members are u32 or size_t).
fn size_of<T>() -> usize {
    mem::size_of::<T>()
}

pub(crate) fn runtime_options() -> sys::kp_runtime_options {
    // SAFETY: no arguments; returns a value.
    unsafe { sys::kp_runtime_options_default() }
}

pub(crate) fn device_info() -> sys::kp_device_info {
    let mut d: sys::kp_device_info = zeroed();
    d.struct_size = size_of::<sys::kp_device_info>() as _;
    d
}

pub(crate) fn kernel_info() -> sys::kp_kernel_info {
    let mut v: sys::kp_kernel_info = zeroed();
    v.struct_size = size_of::<sys::kp_kernel_info>() as _;
    v
}

pub(crate) fn param_info() -> sys::kp_param_info {
    let mut v: sys::kp_param_info = zeroed();
    v.struct_size = size_of::<sys::kp_param_info>() as _;
    v
}

pub(crate) fn tuning_info() -> sys::kp_tuning_info {
    let mut v: sys::kp_tuning_info = zeroed();
    v.struct_size = size_of::<sys::kp_tuning_info>() as _;
    v
}

pub(crate) fn plugin_record() -> sys::kp_plugin_record {
    let mut v: sys::kp_plugin_record = zeroed();
    v.struct_size = size_of::<sys::kp_plugin_record>() as _;
    v
}

pub(crate) fn manifest_layer() -> sys::kp_manifest_layer {
    let mut l: sys::kp_manifest_layer = zeroed();
    l.struct_size = size_of::<sys::kp_manifest_layer>() as _;
    l
}

pub(crate) fn graph_info() -> sys::kp_graph_info {
    let mut g: sys::kp_graph_info = zeroed();
    g.struct_size = size_of::<sys::kp_graph_info>() as _;
    g
}

pub(crate) fn peak() -> sys::kp_peak {
    let mut p: sys::kp_peak = zeroed();
    p.struct_size = size_of::<sys::kp_peak>() as _;
    p
}

pub(crate) fn bench_options() -> sys::kp_bench_options {
    // SAFETY: no arguments; returns a value.
    unsafe { sys::kp_bench_options_default() }
}

pub(crate) fn bench_result() -> sys::kp_bench_result {
    let mut r: sys::kp_bench_result = zeroed();
    r.struct_size = size_of::<sys::kp_bench_result>() as _;
    r
}

pub(crate) fn adamw_options() -> sys::kp_adam_options {
    // SAFETY: no arguments; returns a value.
    unsafe { sys::kp_adamw_defaults() }
}

pub(crate) fn lm_options() -> sys::kp_lm_options {
    // SAFETY: no arguments; returns a value.
    unsafe { sys::kp_lm_options_default() }
}

pub(crate) fn lm_sparse_options() -> sys::kp_lm_sparse_options {
    // SAFETY: no arguments; returns a value.
    unsafe { sys::kp_lm_sparse_options_default() }
}

pub(crate) fn expr_graph_info() -> sys::kp_expr_graph_info {
    let mut v: sys::kp_expr_graph_info = zeroed();
    v.struct_size = size_of::<sys::kp_expr_graph_info>() as _;
    v
}

/// An empty batch (no problems, NULL arrays): the caller points it at its slices.
pub(crate) fn lm_batch() -> sys::kp_lm_batch {
    let mut v: sys::kp_lm_batch = zeroed();
    v.struct_size = size_of::<sys::kp_lm_batch>() as _;
    v
}

pub(crate) fn lm_sparse_problem() -> sys::kp_lm_sparse_problem {
    let mut v: sys::kp_lm_sparse_problem = zeroed();
    v.struct_size = size_of::<sys::kp_lm_sparse_problem>() as _;
    v
}

pub(crate) fn lm_sparse_report() -> sys::kp_lm_sparse_report {
    let mut v: sys::kp_lm_sparse_report = zeroed();
    v.struct_size = size_of::<sys::kp_lm_sparse_report>() as _;
    v
}

/// Every tensor absent (NULL buffer), which kp_gru_rollout leaves out of the launch.
pub(crate) fn gru_rollout_args() -> sys::kp_gru_rollout_args {
    zeroed()
}

pub(crate) fn gru_rollout_metrics() -> sys::kp_gru_rollout_metrics {
    let mut v: sys::kp_gru_rollout_metrics = zeroed();
    v.struct_size = size_of::<sys::kp_gru_rollout_metrics>() as _;
    v
}

/// A view with no buffer: an absent optional tensor of the typed calls.
pub(crate) fn no_tensor() -> sys::kp_tensor {
    zeroed()
}

/// A contiguous view: the library's constructor, so fields it adds are set.
pub(crate) fn tensor_nd(
    buffer: *mut sys::kp_buffer,
    dtype: sys::kp_dtype,
    shape: &[i64],
) -> sys::kp_tensor {
    // SAFETY: shape has shape.len() elements; rank <= KP_MAX_RANK is checked by the caller (and
    // a larger one gives rank -1, which launches refuse).
    unsafe { sys::kp_tensor_nd(buffer, dtype, shape.len() as i32, shape.as_ptr()) }
}

/// The library's argument constructors (they set the members a later kp_arg grows, #28). The
/// name is borrowed: it must outlive the call that reads the argument.
pub(crate) fn arg_tensor(name: &CStr, t: sys::kp_tensor) -> sys::kp_arg {
    // SAFETY: plain value constructor; the name pointer is only stored.
    unsafe { sys::kp_arg_tensor(name.as_ptr(), t) }
}

pub(crate) fn arg_int(name: &CStr, v: i64) -> sys::kp_arg {
    // SAFETY: as arg_tensor.
    unsafe { sys::kp_arg_int(name.as_ptr(), v) }
}

pub(crate) fn arg_float(name: &CStr, v: f64) -> sys::kp_arg {
    // SAFETY: as arg_tensor.
    unsafe { sys::kp_arg_float(name.as_ptr(), v) }
}

/// An owned copy of a library string ("" for NULL).
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid during the call.
pub(crate) unsafe fn string(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    CStr::from_ptr(p).to_string_lossy().into_owned()
}

/// An owned copy of a fixed-size char array the library filled (kp_device_info's names).
pub(crate) fn array_string(a: &[c_char]) -> String {
    let bytes: Vec<u8> = a.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A string for the library; one holding a NUL byte is refused, naming `what` it was.
pub(crate) fn c_string(s: &str, what: &str) -> crate::Result<std::ffi::CString> {
    std::ffi::CString::new(s)
        .map_err(|_| crate::Error::invalid(format!("{}: {:?} contains a NUL byte", what, s)))
}
