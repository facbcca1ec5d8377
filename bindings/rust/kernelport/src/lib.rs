// SPDX-License-Identifier: Apache-2.0
//! Safe Rust API of Kernelport, a vendor-neutral OpenCL compute backend whose kernels come as
//! plugins, each checked against a plain-C host reference.
//!
//! ```no_run
//! use kernelport::{Runtime, Result};
//!
//! fn axpy() -> Result<Vec<f32>> {
//!     let rt = Runtime::new()?;
//!     let x = rt.buffer_from(&[1.0f32, 2.0, 3.0])?;
//!     let y = rt.buffer_from(&[10.0f32, 20.0, 30.0])?;
//!     rt.kernel("example.axpy")?
//!         .launch()
//!         .int("n", 3)
//!         .float("alpha", 2.0)
//!         .tensor("x", &x.tensor())
//!         .tensor("y", &y.tensor())
//!         .run()?;
//!     y.to_vec()
//! }
//! ```
//!
//! Ownership follows the C API: a `Runtime` owns everything made from it, so `Buffer`, `Kernel`,
//! `Event`, `Prepared` and `Graph` borrow it, and each handle is released by Drop. Errors are
//! `Result<_, Error>` carrying the library's status and message (`kp_last_error`). Thread-safety
//! is what the header documents: a runtime and its kernels are shared between threads (launches
//! are serialised on the queue), a buffer moves between threads but is used by one at a time, and
//! events stay on the thread that launched them. The comments on each `unsafe impl` say why.
//!
//! Typed calls of the kernel families are in [`ops`]: `blas.gemm`, `gru.step`, `gru.rollout`,
//! `logic.forward`/`backward`, tensor ops and AdamW. Residuals written as expressions, their
//! Jacobians as kernels and Levenberg-Marquardt are in [`solve`].

mod buffer;
mod error;
mod event;
mod graph;
mod kernel;
pub mod ops;
mod raw;
mod runtime;
pub mod solve;
mod tensor;
mod verify;

pub use buffer::{Bf16, Buffer, Element, F16};
pub use error::{Error, Result, Status};
pub use event::Event;
pub use graph::{Graph, GraphInfo, Recording};
pub use kernel::{
    name_matches, ArgKind, Args, Kernel, KernelInfo, Launch, ParamInfo, Prepared, TuningInfo,
};
pub use runtime::{version, DeviceInfo, ManifestLayer, PluginRecord, Runtime, RuntimeOptions};
pub use tensor::{DType, Tensor, MAX_RANK};
pub use verify::{BenchOptions, BenchResult, Peak, Verification, VerifyResult};

/// The raw C declarations, for what the safe API does not cover.
pub use kernelport_sys as sys;
