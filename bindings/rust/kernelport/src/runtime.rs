// SPDX-License-Identifier: Apache-2.0
//! The runtime: a device, its plugins and kernels, caches and queue (`kp_runtime`).

use std::ffi::CString;
use std::os::raw::c_char;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr::{self, NonNull};

use kernelport_sys as sys;

use crate::buffer::{Buffer, Element};
use crate::error::{check, static_str, Error, Result, Status};
use crate::kernel::Kernel;
use crate::raw;
use crate::verify::Peak;

/// How to create a runtime (`kp_runtime_options`). `RuntimeOptions::new()` is the library's
/// defaults: the manifest layers, `KP_DEVICE`, `KP_MANIFEST`, `KP_PLUGIN_PATH`, the installed
/// plugins.
#[derive(Clone, Debug, Default)]
pub struct RuntimeOptions {
    device: Option<String>,
    manifest: Option<PathBuf>,
    plugin_dirs: Vec<PathBuf>,
    cache_dir: Option<PathBuf>,
    flags: u32,
}

impl RuntimeOptions {
    pub fn new() -> RuntimeOptions {
        RuntimeOptions::default()
    }

    /// A device spec that overrides the manifest's rules: "pocl", "nvidia", "gpu:1", "cpu",
    /// "host" (the kernels' host references), a name substring or a UUID.
    pub fn device(mut self, spec: &str) -> RuntimeOptions {
        self.device = Some(spec.to_string());
        self
    }

    /// A manifest file layered over the built-in, system and user ones.
    pub fn manifest(mut self, path: impl AsRef<Path>) -> RuntimeOptions {
        self.manifest = Some(path.as_ref().to_path_buf());
        self
    }

    /// A plugin directory scanned before every other one (may be given several times).
    pub fn plugin_dir(mut self, dir: impl AsRef<Path>) -> RuntimeOptions {
        self.plugin_dirs.push(dir.as_ref().to_path_buf());
        self
    }

    /// The program binary cache's directory (default: the manifest's cache.dir).
    pub fn cache_dir(mut self, dir: impl AsRef<Path>) -> RuntimeOptions {
        self.cache_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Ignore KP_MANIFEST, KP_DEVICE, KP_PLUGIN_PATH and KP_KERNEL_DIR.
    pub fn no_env(self) -> RuntimeOptions {
        self.flag(sys::KP_RUNTIME_NO_ENV)
    }

    /// Skip the system and user manifest files.
    pub fn no_user_manifests(self) -> RuntimeOptions {
        self.flag(sys::KP_RUNTIME_NO_USER_MANIFESTS)
    }

    /// Do not scan the installed plugin directory.
    pub fn no_installed_plugins(self) -> RuntimeOptions {
        self.flag(sys::KP_RUNTIME_NO_INSTALLED_PLUGINS)
    }

    /// Neither read nor write the on-disk program cache.
    pub fn no_disk_cache(self) -> RuntimeOptions {
        self.flag(sys::KP_RUNTIME_NO_DISK_CACHE)
    }

    /// Ignore the built-in manifest's tuning entries.
    pub fn no_builtin_tuning(self) -> RuntimeOptions {
        self.flag(sys::KP_RUNTIME_NO_BUILTIN_TUNING)
    }

    fn flag(mut self, f: u32) -> RuntimeOptions {
        self.flags |= f;
        self
    }

    pub fn create(&self) -> Result<Runtime> {
        Runtime::with_options(self)
    }
}

fn c_path(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| Error::invalid(format!("path {} contains a NUL byte", p.display())))
}

/// A device with its plugins, kernels, caches and queue. Buffers, kernels and events borrow it,
/// so it outlives them; dropping it waits for queued work and releases everything.
pub struct Runtime {
    raw: NonNull<sys::kp_runtime>,
}

// The header documents kp_runtime_create as callable from any thread with runtimes independent,
// and the calls a shared runtime takes as thread-safe: buffer allocation, kernel lookup and
// registration, launches (serialised on its queue), device queries, warm-up, tuning overrides,
// peaks; kp_last_error keeps one message per thread, so each thread reads its own failure.
// kp_runtime_destroy needs no other thread using the runtime: Drop has it by value, and every
// borrower (Buffer, Kernel, Event, Prepared) holds a reference that ends before.
unsafe impl Send for Runtime {}
unsafe impl Sync for Runtime {}

impl Runtime {
    /// A runtime with the library's defaults (manifest layers, environment, installed plugins).
    pub fn new() -> Result<Runtime> {
        Runtime::with_options(&RuntimeOptions::new())
    }

    pub fn with_options(o: &RuntimeOptions) -> Result<Runtime> {
        check_library_version()?;
        let device = o.device.as_deref().map(|d| raw::c_string(d, "device")).transpose()?;
        let manifest = o.manifest.as_deref().map(c_path).transpose()?;
        let cache_dir = o.cache_dir.as_deref().map(c_path).transpose()?;
        let dirs = o.plugin_dirs.iter().map(|d| c_path(d)).collect::<Result<Vec<_>>>()?;
        let dir_ptrs: Vec<*const c_char> = dirs.iter().map(|d| d.as_ptr()).collect();
        let mut opt = raw::runtime_options();
        opt.flags |= o.flags;
        opt.device = device.as_ref().map_or(ptr::null(), |d| d.as_ptr());
        opt.manifest_path = manifest.as_ref().map_or(ptr::null(), |m| m.as_ptr());
        opt.cache_dir = cache_dir.as_ref().map_or(ptr::null(), |c| c.as_ptr());
        opt.plugin_dirs = if dir_ptrs.is_empty() { ptr::null() } else { dir_ptrs.as_ptr() };
        opt.n_plugin_dirs = dir_ptrs.len();
        let mut rt = ptr::null_mut();
        // SAFETY: every string the options point to lives until the call returns, which is as
        // long as the library reads them.
        check(ptr::null(), unsafe { sys::kp_runtime_create(&opt, &mut rt) })?;
        let raw = NonNull::new(rt).ok_or_else(|| Error::new(Status::Internal, "NULL runtime"))?;
        Ok(Runtime { raw })
    }

    pub(crate) fn as_ptr(&self) -> *mut sys::kp_runtime {
        self.raw.as_ptr()
    }

    /// Ok, or this thread's message for the failed call on this runtime.
    pub(crate) fn check(&self, status: sys::kp_status) -> Result<()> {
        check(self.as_ptr(), status)
    }

    /// The device the runtime runs on.
    pub fn device(&self) -> Result<DeviceInfo> {
        let mut d = raw::device_info();
        // SAFETY: d is a kp_device_info with struct_size set; `why` may be NULL.
        self.check(unsafe { sys::kp_runtime_device(self.as_ptr(), &mut d, ptr::null_mut()) })?;
        Ok(DeviceInfo::from_raw(&d))
    }

    /// The sentence saying which rule chose the device.
    pub fn device_reason(&self) -> Result<String> {
        let mut d = raw::device_info();
        let mut why = ptr::null();
        // SAFETY: as device; `why` points into the runtime, copied at once.
        self.check(unsafe { sys::kp_runtime_device(self.as_ptr(), &mut d, &mut why) })?;
        // SAFETY: a runtime-owned string, valid while the runtime lives.
        Ok(unsafe { raw::string(why) })
    }

    /// Every device the runtime enumerated (the OpenCL devices, then the host device).
    pub fn devices(&self) -> Result<Vec<DeviceInfo>> {
        // SAFETY: a live runtime.
        let n = unsafe { sys::kp_device_count(self.as_ptr()) };
        (0..n)
            .map(|i| {
                let mut d = raw::device_info();
                // SAFETY: i < n; d has struct_size set.
                self.check(unsafe { sys::kp_device_get(self.as_ptr(), i, &mut d) })?;
                Ok(DeviceInfo::from_raw(&d))
            })
            .collect()
    }

    /// Builds the programs of the kernels matching `pattern` ("gru.*"; None: all) ahead of use,
    /// so that a first launch's event does not time a compile.
    pub fn warmup(&self, pattern: Option<&str>) -> Result<()> {
        let p = pattern.map(|p| raw::c_string(p, "pattern")).transpose()?;
        let pp = p.as_ref().map_or(ptr::null(), |p| p.as_ptr());
        // SAFETY: a live runtime; pattern NULL or a string.
        self.check(unsafe { sys::kp_runtime_warmup(self.as_ptr(), pp) })
    }

    /// Waits until every queued command has finished.
    pub fn finish(&self) -> Result<()> {
        // SAFETY: a live runtime.
        self.check(unsafe { sys::kp_finish(self.as_ptr()) })
    }

    /// The kernel registered under `name` ("blas.gemm"); KP_ERR_NOT_FOUND suggests near names.
    pub fn kernel(&self, name: &str) -> Result<Kernel<'_>> {
        let c = raw::c_string(name, "kernel name")?;
        let mut k = ptr::null_mut();
        // SAFETY: a live runtime; c outlives the call.
        self.check(unsafe { sys::kp_kernel_find(self.as_ptr(), c.as_ptr(), &mut k) })?;
        NonNull::new(k)
            .map(|k| Kernel::from_raw(self, k))
            .ok_or_else(|| Error::new(Status::Internal, "kp_kernel_find gave NULL"))
    }

    /// Every registered kernel, sorted by name.
    pub fn kernels(&self) -> Vec<Kernel<'_>> {
        // SAFETY: a live runtime; kp_kernel_at returns NULL past the end.
        let n = unsafe { sys::kp_kernel_count(self.as_ptr()) };
        (0..n)
            .filter_map(|i| NonNull::new(unsafe { sys::kp_kernel_at(self.as_ptr(), i) }))
            .map(|k| Kernel::from_raw(self, k))
            .collect()
    }

    /// `len` elements of device memory, uninitialised.
    pub fn buffer<T: Element>(&self, len: usize) -> Result<Buffer<'_, T>> {
        Buffer::new(self, len)
    }

    /// A buffer holding a copy of `data`.
    pub fn buffer_from<T: Element>(&self, data: &[T]) -> Result<Buffer<'_, T>> {
        let mut b = Buffer::new(self, data.len())?;
        b.write(0, data)?;
        Ok(b)
    }

    /// Loaded plugins, in load order.
    pub fn plugins(&self) -> Result<Vec<PluginRecord>> {
        // SAFETY: a live runtime.
        let n = unsafe { sys::kp_plugin_count(self.as_ptr()) };
        (0..n).map(|i| self.plugin(i, sys::kp_plugin_get)).collect()
    }

    /// Plugins found but refused, with the reason.
    pub fn rejected_plugins(&self) -> Result<Vec<PluginRecord>> {
        // SAFETY: a live runtime.
        let n = unsafe { sys::kp_plugin_rejected_count(self.as_ptr()) };
        (0..n).map(|i| self.plugin(i, sys::kp_plugin_rejected)).collect()
    }

    fn plugin(
        &self,
        i: usize,
        get: unsafe extern "C" fn(
            *const sys::kp_runtime,
            usize,
            *mut sys::kp_plugin_record,
        ) -> sys::kp_status,
    ) -> Result<PluginRecord> {
        let mut r = raw::plugin_record();
        // SAFETY: i below the count; the strings are runtime-owned and copied at once.
        self.check(unsafe { get(self.as_ptr(), i, &mut r) })?;
        Ok(unsafe {
            PluginRecord {
                path: raw::string(r.path),
                name: raw::string(r.name),
                version: raw::string(r.version),
                reason: raw::string(r.reason),
                kernels: r.n_kernels,
            }
        })
    }

    /// The manifest layers the runtime read or looked for, in the order they apply.
    pub fn manifest_layers(&self) -> Result<Vec<ManifestLayer>> {
        // SAFETY: a live runtime.
        let n = unsafe { sys::kp_runtime_manifest_count(self.as_ptr()) };
        (0..n)
            .map(|i| {
                let mut l = raw::manifest_layer();
                // SAFETY: i < n; strings runtime-owned, copied at once.
                self.check(unsafe { sys::kp_runtime_manifest_layer(self.as_ptr(), i, &mut l) })?;
                Ok(unsafe {
                    ManifestLayer {
                        name: raw::string(l.name),
                        path: raw::string(l.path),
                        read: l.read != 0,
                    }
                })
            })
            .collect()
    }

    /// The device's measured peaks (cached per device and driver; `remeasure` measures again).
    pub fn peak(&self, remeasure: bool) -> Result<Peak> {
        let mut p = raw::peak();
        // SAFETY: p has struct_size set.
        self.check(unsafe { sys::kp_device_peak(self.as_ptr(), remeasure as i32, &mut p) })?;
        Ok(Peak::from_raw(&p))
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // SAFETY: owned; every borrower is gone (they hold &Runtime).
        unsafe { sys::kp_runtime_destroy(self.as_ptr()) }
    }
}

/// The version of the library loaded ("0.1.0"), which may differ from the bindings'.
pub fn version() -> &'static str {
    // SAFETY: a static string.
    unsafe { static_str(sys::kp_version()) }
}

/// The structures of the bindings are those of one minor version: another one's could differ.
fn check_library_version() -> Result<()> {
    let loaded = version();
    let mut parts = loaded.split('.').map(|p| p.parse::<u32>().ok());
    let (major, minor) = (parts.next().flatten(), parts.next().flatten());
    if major == Some(sys::KP_VERSION_MAJOR) && minor == Some(sys::KP_VERSION_MINOR) {
        return Ok(());
    }
    Err(Error::new(
        Status::Unsupported,
        format!(
            "libkernelport {} is loaded, but these bindings were generated for {}.{}: rebuild \
             against the matching library or regenerate kernelport-sys",
            loaded,
            sys::KP_VERSION_MAJOR,
            sys::KP_VERSION_MINOR
        ),
    ))
}

/// A device's description (`kp_device_info`).
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceInfo {
    pub index: u32,
    pub name: String,
    /// "pocl", "nvidia", "amd", "intel", ..., "host".
    pub vendor: String,
    /// "cpu", "gpu", "accelerator", "host", "other".
    pub device_type: String,
    pub vendor_string: String,
    pub platform: String,
    pub driver: String,
    pub version: String,
    pub arch: String,
    pub uuid: Option<String>,
    pub compute_units: u32,
    pub clock_mhz: u32,
    pub global_mem: u64,
    pub local_mem: u64,
    pub max_alloc: u64,
    pub fp16: bool,
    pub fp64: bool,
}

impl DeviceInfo {
    fn from_raw(d: &sys::kp_device_info) -> DeviceInfo {
        let uuid = if d.has_uuid != 0 {
            let mut buf = [0 as c_char; 37];
            // SAFETY: buf holds 37 bytes, as kp_uuid_format needs.
            unsafe { sys::kp_uuid_format(d.uuid.as_ptr(), buf.as_mut_ptr()) };
            Some(raw::array_string(&buf))
        } else {
            None
        };
        // SAFETY: both return static strings for any value.
        let (vendor, device_type) = unsafe {
            (
                static_str(sys::kp_vendor_name(d.vendor)),
                static_str(sys::kp_device_type_name(d.type_)),
            )
        };
        DeviceInfo {
            index: d.index,
            name: raw::array_string(&d.name),
            vendor: vendor.to_string(),
            device_type: device_type.to_string(),
            vendor_string: raw::array_string(&d.vendor_string),
            platform: raw::array_string(&d.platform),
            driver: raw::array_string(&d.driver),
            version: raw::array_string(&d.version),
            arch: raw::array_string(&d.arch),
            uuid,
            compute_units: d.compute_units,
            clock_mhz: d.clock_mhz,
            global_mem: d.global_mem,
            local_mem: d.local_mem,
            max_alloc: d.max_alloc,
            fp16: d.fp16 != 0,
            fp64: d.fp64 != 0,
        }
    }
}

/// A plugin, loaded or rejected (`kp_plugin_record`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginRecord {
    pub path: String,
    pub name: String,
    pub version: String,
    /// Why it was rejected ("" for loaded plugins).
    pub reason: String,
    pub kernels: usize,
}

/// A manifest layer (`kp_manifest_layer`): "built-in", "system", "user" or "explicit".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestLayer {
    pub name: String,
    pub path: String,
    /// False for an optional file that is not there.
    pub read: bool,
}
