// SPDX-License-Identifier: Apache-2.0
//! Kernels (`kp_kernel`, owned by the runtime), their description, and launches with named
//! arguments: one-off (`Kernel::launch`) or bound once and launched many times (`Prepared`).

use std::ffi::{CStr, CString};
use std::marker::PhantomData;
use std::ptr::{self, NonNull};

use kernelport_sys as sys;

use crate::buffer::Element;
use crate::error::{static_str, Error, Result, Status};
use crate::event::Event;
use crate::raw;
use crate::runtime::Runtime;
use crate::tensor::Tensor;

/// A registered kernel. A handle into its runtime (which owns it, so there is nothing to
/// release); cheap to copy.
#[derive(Clone, Copy)]
pub struct Kernel<'rt> {
    rt: &'rt Runtime,
    raw: NonNull<sys::kp_kernel>,
}

// A kernel's description is immutable once registered, and the calls that take one (launch,
// tunable overrides, describe, supported, warm-up) are documented thread-safe: as Runtime.
unsafe impl<'rt> Send for Kernel<'rt> {}
unsafe impl<'rt> Sync for Kernel<'rt> {}

impl<'rt> Kernel<'rt> {
    pub(crate) fn from_raw(rt: &'rt Runtime, raw: NonNull<sys::kp_kernel>) -> Kernel<'rt> {
        Kernel { rt, raw }
    }

    pub(crate) fn as_ptr(&self) -> *mut sys::kp_kernel {
        self.raw.as_ptr()
    }

    pub fn runtime(&self) -> &'rt Runtime {
        self.rt
    }

    /// The kernel's description (name, summary, plugin, source, counts).
    pub fn info(&self) -> Result<KernelInfo> {
        let mut i = raw::kernel_info();
        // SAFETY: a kernel of a live runtime; the strings are runtime-owned, copied at once.
        self.rt.check(unsafe { sys::kp_kernel_info_get(self.as_ptr(), &mut i) })?;
        Ok(unsafe {
            KernelInfo {
                name: raw::string(i.name),
                summary: raw::string(i.summary),
                plugin: raw::string(i.plugin),
                plugin_path: raw::string(i.plugin_path),
                source_name: if i.source_name.is_null() {
                    None
                } else {
                    Some(raw::string(i.source_name))
                },
                params: i.n_params,
                tunables: i.n_tunables,
            }
        })
    }

    /// "family.op".
    pub fn name(&self) -> String {
        self.info().map(|i| i.name).unwrap_or_default()
    }

    /// The kernel's parameters, in declaration order.
    pub fn params(&self) -> Result<Vec<ParamInfo>> {
        (0..self.info()?.params)
            .map(|index| {
                let mut p = raw::param_info();
                // SAFETY: index < n_params; strings runtime-owned, copied at once.
                self.rt.check(unsafe { sys::kp_kernel_param(self.as_ptr(), index, &mut p) })?;
                Ok(ParamInfo::from_raw(&p))
            })
            .collect()
    }

    /// Each tunable's resolved value for this device and where it came from. May build the
    /// kernel's program to read its limits.
    pub fn tuning(&self) -> Result<Vec<TuningInfo>> {
        (0..self.info()?.tunables)
            .map(|index| {
                let mut t = raw::tuning_info();
                // SAFETY: index < n_tunables; strings runtime-owned, copied at once.
                self.rt.check(unsafe {
                    sys::kp_kernel_tuning(self.rt.as_ptr(), self.as_ptr(), index, &mut t)
                })?;
                Ok(unsafe {
                    TuningInfo {
                        name: raw::string(t.name),
                        doc: raw::string(t.doc),
                        value: t.value,
                        default_value: t.default_value,
                        value_text: raw::string(t.value_text),
                        origin: raw::string(t.origin),
                        allowed: raw::string(t.allowed),
                        notes: raw::string(t.notes),
                        provenance: raw::string(t.provenance),
                    }
                })
            })
            .collect()
    }

    /// Overrides one tunable for this runtime, until `reset_tuning`.
    pub fn set_tunable(&self, name: &str, value: i64) -> Result<()> {
        let c = raw::c_string(name, "tunable")?;
        // SAFETY: live kernel and runtime; c outlives the call.
        self.rt.check(unsafe {
            sys::kp_kernel_tunable_set(self.rt.as_ptr(), self.as_ptr(), c.as_ptr(), value)
        })
    }

    /// Forgets the overrides: the manifest decides again.
    pub fn reset_tuning(&self) -> Result<()> {
        // SAFETY: live kernel and runtime.
        self.rt.check(unsafe { sys::kp_kernel_tuning_reset(self.rt.as_ptr(), self.as_ptr()) })
    }

    /// Ok when the device can run the kernel at all; Err(Unsupported) naming the device if not.
    pub fn supported(&self) -> Result<()> {
        // SAFETY: live kernel and runtime.
        self.rt.check(unsafe { sys::kp_kernel_supported(self.rt.as_ptr(), self.as_ptr()) })
    }

    /// The kernel's sentence on which implementation it takes on this device, and why.
    pub fn describe(&self) -> Result<String> {
        let mut buf = vec![0 as std::os::raw::c_char; 1024];
        // SAFETY: buf's size is passed; the result is NUL-terminated within it.
        self.rt.check(unsafe {
            sys::kp_kernel_describe(self.rt.as_ptr(), self.as_ptr(), buf.as_mut_ptr(), buf.len())
        })?;
        Ok(raw::array_string(&buf))
    }

    /// The sample size names the kernel offers for verification (or for benchmarks).
    pub fn sample_sizes(&self, bench: bool) -> Vec<String> {
        // SAFETY: a NULL-terminated list owned by the plugin, never NULL.
        unsafe {
            let mut list = sys::kp_kernel_sample_sizes(self.as_ptr(), bench as i32);
            let mut out = Vec::new();
            while !(*list).is_null() {
                out.push(raw::string(*list));
                list = list.add(1);
            }
            out
        }
    }

    /// A launch with named arguments: `k.launch().int("n", n).tensor("x", &x).run()?`.
    pub fn launch<'a>(&self) -> Launch<'a, 'rt> {
        Launch { kernel: *self, args: Args::new() }
    }

    /// Binds `args` once for many launches (validated now, as a launch validates them). The
    /// library tracks the bound buffers: launching after one was dropped is an error naming it.
    pub fn prepare(&self, args: &Args<'_>) -> Result<Prepared<'rt>> {
        args.with_raw(|a| {
            let mut p = ptr::null_mut();
            // SAFETY: the argument array and the names it points to live during the call, which
            // copies them.
            self.rt.check(unsafe {
                sys::kp_prepared_create(
                    self.rt.as_ptr(),
                    self.as_ptr(),
                    a.as_ptr(),
                    a.len(),
                    &mut p,
                )
            })?;
            NonNull::new(p)
                .map(|raw| Prepared { rt: self.rt, raw })
                .ok_or_else(|| Error::new(Status::Internal, "NULL prepared launch"))
        })
    }

    fn launch_raw(&self, args: &Args<'_>, event: bool) -> Result<Option<Event<'rt>>> {
        args.with_raw(|a| {
            let mut ev = ptr::null_mut();
            let evp = if event { &mut ev as *mut _ } else { ptr::null_mut() };
            // SAFETY: names and tensors live during the call; the buffers the tensors view are
            // borrowed by `args`, and a buffer's Drop waits for the work queued on it.
            self.rt.check(unsafe {
                sys::kp_kernel_launch(self.rt.as_ptr(), self.as_ptr(), a.as_ptr(), a.len(), evp)
            })?;
            Ok(NonNull::new(ev).map(|e| Event::from_raw(self.rt, e)))
        })
    }
}

impl<'rt> std::fmt::Debug for Kernel<'rt> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kernel({})", self.name())
    }
}

/// Whether kernel `name` matches the glob `pattern` ("*", "?", "[...]"; a pattern without a
/// wildcard matches the name itself or its family: "gru" matches "gru.step").
pub fn name_matches(pattern: &str, name: &str) -> bool {
    match (raw::c_string(pattern, "pattern"), raw::c_string(name, "name")) {
        // SAFETY: two strings living during the call.
        (Ok(p), Ok(n)) => unsafe { sys::kp_kernel_name_matches(p.as_ptr(), n.as_ptr()) != 0 },
        _ => false,
    }
}

/// A kernel's description (`kp_kernel_info`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelInfo {
    pub name: String,
    pub summary: String,
    pub plugin: String,
    pub plugin_path: String,
    /// The OpenCL C file, None for library-backed kernels.
    pub source_name: Option<String>,
    pub params: usize,
    pub tunables: usize,
}

/// What kind of value a parameter takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgKind {
    Tensor,
    Int,
    Float,
    Other(u32),
}

/// A parameter (`kp_param_info`).
#[derive(Clone, Debug, PartialEq)]
pub struct ParamInfo {
    pub name: String,
    pub doc: String,
    pub kind: ArgKind,
    /// "in", "out" or "inout".
    pub access: String,
    /// Bit (1 << kp_dtype) for each accepted dtype (tensors).
    pub dtypes: u32,
    pub optional: bool,
    pub int_default: i64,
    pub float_default: f64,
}

impl ParamInfo {
    fn from_raw(p: &sys::kp_param_info) -> ParamInfo {
        let kind = match p.kind {
            sys::KP_ARG_KIND_TENSOR => ArgKind::Tensor,
            sys::KP_ARG_KIND_INT => ArgKind::Int,
            sys::KP_ARG_KIND_FLOAT => ArgKind::Float,
            other => ArgKind::Other(other),
        };
        // SAFETY: strings runtime-owned (copied at once); kp_access_name is static for any value.
        unsafe {
            ParamInfo {
                name: raw::string(p.name),
                doc: raw::string(p.doc),
                kind,
                access: static_str(sys::kp_access_name(p.access)).to_string(),
                dtypes: p.dtypes,
                optional: p.optional != 0,
                int_default: p.int_default,
                float_default: p.float_default,
            }
        }
    }
}

/// A tunable's resolution (`kp_tuning_info`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TuningInfo {
    pub name: String,
    pub doc: String,
    pub value: i64,
    pub default_value: i64,
    /// The value as written (a choice name, "true"), or "".
    pub value_text: String,
    /// "default", or the manifest entry "file:line" and its match.
    pub origin: String,
    pub allowed: String,
    /// Rejected candidates with reasons, "" when none.
    pub notes: String,
    /// The `provenance:` of the manifest entry the value came from, "" when none.
    pub provenance: String,
}

#[derive(Clone, Copy)]
enum Value {
    Tensor(sys::kp_tensor),
    Int(i64),
    Float(f64),
}

/// Named launch arguments, in any order; optional parameters may be left out. Tensors are
/// borrowed views: the buffers they view outlive the arguments.
#[derive(Clone, Default)]
pub struct Args<'a> {
    values: Vec<(CString, Value)>,
    /// The first name the binding refused (a NUL byte), reported when the arguments are used.
    error: Option<Error>,
    _views: PhantomData<&'a ()>,
}

impl<'a> Args<'a> {
    pub fn new() -> Args<'a> {
        Args { values: Vec::new(), error: None, _views: PhantomData }
    }

    fn push(mut self, name: &str, v: Value) -> Args<'a> {
        match raw::c_string(name, "argument name") {
            Ok(c) => self.values.push((c, v)),
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
        self
    }

    pub fn tensor<T: Element>(self, name: &str, t: &Tensor<'a, T>) -> Args<'a> {
        self.push(name, Value::Tensor(t.raw()))
    }

    /// A tensor argument given only when `t` is Some (an optional parameter).
    pub fn opt_tensor<T: Element>(self, name: &str, t: Option<&Tensor<'a, T>>) -> Args<'a> {
        match t {
            Some(t) => self.tensor(name, t),
            None => self,
        }
    }

    pub fn int(self, name: &str, v: i64) -> Args<'a> {
        self.push(name, Value::Int(v))
    }

    pub fn float(self, name: &str, v: f64) -> Args<'a> {
        self.push(name, Value::Float(v))
    }

    /// Runs `f` on the C argument array, whose names point into `self`.
    fn with_raw<R>(&self, f: impl FnOnce(&[sys::kp_arg]) -> Result<R>) -> Result<R> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let a: Vec<sys::kp_arg> = self.values.iter().map(|(n, v)| to_arg(n, *v)).collect();
        f(&a)
    }
}

fn to_arg(name: &CStr, v: Value) -> sys::kp_arg {
    match v {
        Value::Tensor(t) => raw::arg_tensor(name, t),
        Value::Int(i) => raw::arg_int(name, i),
        Value::Float(x) => raw::arg_float(name, x),
    }
}

/// A launch being built: `kernel.launch().tensor("x", &x).float("alpha", 2.0).run()`.
pub struct Launch<'a, 'rt> {
    kernel: Kernel<'rt>,
    args: Args<'a>,
}

impl<'a, 'rt> Launch<'a, 'rt> {
    pub fn tensor<T: Element>(mut self, name: &str, t: &Tensor<'a, T>) -> Launch<'a, 'rt> {
        self.args = self.args.tensor(name, t);
        self
    }

    pub fn opt_tensor<T: Element>(
        mut self,
        name: &str,
        t: Option<&Tensor<'a, T>>,
    ) -> Launch<'a, 'rt> {
        self.args = self.args.opt_tensor(name, t);
        self
    }

    pub fn int(mut self, name: &str, v: i64) -> Launch<'a, 'rt> {
        self.args = self.args.int(name, v);
        self
    }

    pub fn float(mut self, name: &str, v: f64) -> Launch<'a, 'rt> {
        self.args = self.args.float(name, v);
        self
    }

    /// Validates and enqueues the launch (asynchronous on OpenCL devices). Errors name the
    /// kernel and the argument; nothing is enqueued then.
    pub fn run(self) -> Result<()> {
        self.kernel.launch_raw(&self.args, false).map(|_| ())
    }

    /// As `run`, with an event spanning the launch's commands, for timing.
    pub fn run_timed(self) -> Result<Event<'rt>> {
        self.kernel
            .launch_raw(&self.args, true)?
            .ok_or_else(|| Error::new(Status::Internal, "kp_kernel_launch gave no event"))
    }

    /// The arguments gathered so far (for `Kernel::prepare`).
    pub fn into_args(self) -> Args<'a> {
        self.args
    }
}

/// A launch bound once and launched many times without matching or validation
/// (`kp_prepared`). Released by Drop (its recorded kernels after the work queued with them).
pub struct Prepared<'rt> {
    rt: &'rt Runtime,
    raw: NonNull<sys::kp_prepared>,
}

// The header: "a prepared launch is used by one thread at a time; its launches are ordered with
// the runtime's others". Send (it may move to another thread), not Sync; its calls take &mut.
unsafe impl<'rt> Send for Prepared<'rt> {}

impl<'rt> Prepared<'rt> {
    pub fn launch(&mut self) -> Result<()> {
        // SAFETY: owned and live; no event asked.
        self.rt.check(unsafe { sys::kp_prepared_launch(self.raw.as_ptr(), ptr::null_mut()) })
    }

    pub fn launch_timed(&mut self) -> Result<Event<'rt>> {
        let mut ev = ptr::null_mut();
        // SAFETY: owned and live; ev receives a caller-owned event.
        self.rt.check(unsafe { sys::kp_prepared_launch(self.raw.as_ptr(), &mut ev) })?;
        NonNull::new(ev)
            .map(|e| Event::from_raw(self.rt, e))
            .ok_or_else(|| Error::new(Status::Internal, "kp_prepared_launch gave no event"))
    }

    /// Rebinds one argument (checked as at creation; on error the previous one stays). A bound
    /// buffer that is dropped makes the next launch fail with KP_ERR_INVALID_ARG naming it.
    pub fn set_tensor<T: Element>(&mut self, name: &str, t: &Tensor<'_, T>) -> Result<()> {
        let c = raw::c_string(name, "argument name")?;
        // SAFETY: owned and live; c outlives the call.
        self.rt
            .check(unsafe { sys::kp_prepared_set_tensor(self.raw.as_ptr(), c.as_ptr(), t.raw()) })
    }

    pub fn set_int(&mut self, name: &str, v: i64) -> Result<()> {
        let c = raw::c_string(name, "argument name")?;
        // SAFETY: as set_tensor.
        self.rt.check(unsafe { sys::kp_prepared_set_int(self.raw.as_ptr(), c.as_ptr(), v) })
    }

    pub fn set_float(&mut self, name: &str, v: f64) -> Result<()> {
        let c = raw::c_string(name, "argument name")?;
        // SAFETY: as set_tensor.
        self.rt.check(unsafe { sys::kp_prepared_set_float(self.raw.as_ptr(), c.as_ptr(), v) })
    }
}

impl<'rt> Drop for Prepared<'rt> {
    fn drop(&mut self) {
        // SAFETY: owned; the runtime outlives it.
        unsafe { sys::kp_prepared_destroy(self.raw.as_ptr()) }
    }
}
