// SPDX-License-Identifier: Apache-2.0
//! Errors: every fallible call returns `Result<T, Error>`, the error carrying the library's
//! status and its message (`kp_last_error`: file:line, kernel and argument, OpenCL call, ...).

use std::ffi::CStr;
use std::fmt;

use kernelport_sys as sys;

/// The kind of failure, `kp_status` without `KP_OK`. A code this binding does not know (a newer
/// library) is kept as `Other`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    InvalidArg,
    NotFound,
    Build,
    Cl,
    OutOfMemory,
    Manifest,
    Plugin,
    Unsupported,
    Io,
    Verify,
    NoDevice,
    Internal,
    Other(i32),
}

impl Status {
    pub(crate) fn from_raw(code: sys::kp_status) -> Status {
        match code {
            sys::KP_ERR_INVALID_ARG => Status::InvalidArg,
            sys::KP_ERR_NOT_FOUND => Status::NotFound,
            sys::KP_ERR_BUILD => Status::Build,
            sys::KP_ERR_CL => Status::Cl,
            sys::KP_ERR_OUT_OF_MEMORY => Status::OutOfMemory,
            sys::KP_ERR_MANIFEST => Status::Manifest,
            sys::KP_ERR_PLUGIN => Status::Plugin,
            sys::KP_ERR_UNSUPPORTED => Status::Unsupported,
            sys::KP_ERR_IO => Status::Io,
            sys::KP_ERR_VERIFY => Status::Verify,
            sys::KP_ERR_NO_DEVICE => Status::NoDevice,
            sys::KP_ERR_INTERNAL => Status::Internal,
            other => Status::Other(other),
        }
    }

    /// The C value (`KP_ERR_*`).
    pub fn code(self) -> i32 {
        match self {
            Status::InvalidArg => sys::KP_ERR_INVALID_ARG,
            Status::NotFound => sys::KP_ERR_NOT_FOUND,
            Status::Build => sys::KP_ERR_BUILD,
            Status::Cl => sys::KP_ERR_CL,
            Status::OutOfMemory => sys::KP_ERR_OUT_OF_MEMORY,
            Status::Manifest => sys::KP_ERR_MANIFEST,
            Status::Plugin => sys::KP_ERR_PLUGIN,
            Status::Unsupported => sys::KP_ERR_UNSUPPORTED,
            Status::Io => sys::KP_ERR_IO,
            Status::Verify => sys::KP_ERR_VERIFY,
            Status::NoDevice => sys::KP_ERR_NO_DEVICE,
            Status::Internal => sys::KP_ERR_INTERNAL,
            Status::Other(code) => code,
        }
    }

    /// "KP_ERR_NOT_FOUND" (`kp_status_name`).
    pub fn name(self) -> &'static str {
        // SAFETY: kp_status_name returns a static string for every value.
        unsafe { static_str(sys::kp_status_name(self.code())) }
    }

    /// "not found" (`kp_status_str`).
    pub fn description(self) -> &'static str {
        // SAFETY: as name.
        unsafe { static_str(sys::kp_status_str(self.code())) }
    }
}

/// A failed call: its status and the library's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    status: Status,
    message: String,
}

impl Error {
    pub(crate) fn new(status: Status, message: impl Into<String>) -> Error {
        Error { status, message: message.into() }
    }

    /// An argument the binding refuses before calling the library (a name with a NUL byte, a
    /// rank above 8).
    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::new(Status::InvalidArg, message)
    }

    pub fn status(&self) -> Status {
        self.status
    }

    /// The message of `kp_last_error`, as the library wrote it.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status.name(), self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// Ok for KP_OK; otherwise the error with this thread's message for `rt` (null: the calls that
/// take no runtime). Must be called right after the failing call, on its thread: the library
/// keeps one message per thread and runtime.
pub(crate) fn check(rt: *const sys::kp_runtime, status: sys::kp_status) -> Result<()> {
    if status == sys::KP_OK {
        return Ok(());
    }
    // SAFETY: kp_last_error never returns NULL; the string is valid until the next failing call
    // on this thread, and is copied at once.
    let message = unsafe { CStr::from_ptr(sys::kp_last_error(rt)) }.to_string_lossy().into_owned();
    Err(Error::new(Status::from_raw(status), message))
}

/// A static C string of the library ("" for NULL).
///
/// # Safety
/// `p` is NULL or a NUL-terminated string that lives as long as the process.
pub(crate) unsafe fn static_str(p: *const std::os::raw::c_char) -> &'static str {
    if p.is_null() {
        return "";
    }
    CStr::from_ptr(p).to_str().unwrap_or("")
}
