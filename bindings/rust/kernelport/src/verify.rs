// SPDX-License-Identifier: Apache-2.0
//! Verification against the host reference, benchmarks and device peaks, as Rust structs.

use std::os::raw::c_void;
use std::ptr;

use kernelport_sys as sys;

use crate::error::{Result, Status};
use crate::kernel::Kernel;
use crate::raw;

/// One output compared between the device and the host reference (`kp_verify_result`).
#[derive(Clone, Debug, PartialEq)]
pub struct VerifyResult {
    pub kernel: String,
    /// The sample size name ("tiny", "prime", ...).
    pub size: String,
    /// The output parameter compared.
    pub output: String,
    pub elements: i64,
    pub max_abs_err: f64,
    pub max_rel_err: f64,
    /// The tolerance: |dev - ref| <= atol + rtol |ref|.
    pub atol: f64,
    pub rtol: f64,
    /// Row-major index of the worst element.
    pub worst_index: i64,
    /// Elements outside the tolerance.
    pub failures: i64,
    pub passed: bool,
}

/// Every comparison of one `Kernel::verify` call.
#[derive(Clone, Debug, PartialEq)]
pub struct Verification {
    pub results: Vec<VerifyResult>,
    /// All outputs within their tolerance.
    pub passed: bool,
}

/// `kp_verify_fn`: appends the result to the Vec behind `user`.
unsafe extern "C" fn collect(user: *mut c_void, r: *const sys::kp_verify_result) {
    // SAFETY: user is the &mut Vec passed by verify, alive during kp_kernel_verify; r and its
    // strings are valid during this call and copied.
    let out = &mut *(user as *mut Vec<VerifyResult>);
    let r = &*r;
    out.push(VerifyResult {
        kernel: raw::string(r.kernel),
        size: raw::string(r.size),
        output: raw::string(r.output),
        elements: r.elements,
        max_abs_err: r.max_abs_err,
        max_rel_err: r.max_rel_err,
        atol: r.atol,
        rtol: r.rtol,
        worst_index: r.worst_index,
        failures: r.failures,
        passed: r.passed != 0,
    });
}

impl<'rt> Kernel<'rt> {
    /// Runs the kernel on the device and its host reference on the same random inputs (seeded by
    /// `seed`), for sample `size` (None: every verify size), and compares every output. A result
    /// outside its tolerance is `Ok` with `passed` false; launch and build failures are `Err`.
    pub fn verify(&self, size: Option<&str>, seed: u64) -> Result<Verification> {
        let size = size.map(|s| raw::c_string(s, "size")).transpose()?;
        let mut results: Vec<VerifyResult> = Vec::new();
        // SAFETY: the callback only runs during the call, with `results` alive and borrowed by
        // nothing else.
        let st = unsafe {
            sys::kp_kernel_verify(
                self.runtime().as_ptr(),
                self.as_ptr(),
                size.as_ref().map_or(ptr::null(), |s| s.as_ptr()),
                seed,
                Some(collect),
                &mut results as *mut Vec<VerifyResult> as *mut c_void,
            )
        };
        match self.runtime().check(st) {
            Ok(()) => Ok(Verification { results, passed: true }),
            Err(e) if e.status() == Status::Verify => Ok(Verification { results, passed: false }),
            Err(e) => Err(e),
        }
    }

    /// Times the kernel on its sample arguments of `size` (`sample_sizes(true)` lists them).
    pub fn bench(&self, size: &str, opt: &BenchOptions) -> Result<BenchResult> {
        let size = raw::c_string(size, "size")?;
        let mut o = raw::bench_options();
        o.warmup = opt.warmup;
        o.min_runs = opt.min_runs;
        o.max_runs = opt.max_runs;
        o.min_seconds = opt.min_seconds;
        o.seed = opt.seed;
        let mut r = raw::bench_result();
        // SAFETY: options and result carry struct_size; the size string outlives the call.
        self.runtime().check(unsafe {
            sys::kp_kernel_bench(self.runtime().as_ptr(), self.as_ptr(), size.as_ptr(), &o, &mut r)
        })?;
        Ok(BenchResult {
            runs: r.runs,
            median_s: r.median_s,
            min_s: r.min_s,
            max_s: r.max_s,
            p10_s: r.p10_s,
            p90_s: r.p90_s,
            flops: r.flops,
            bytes: r.bytes,
            gflops: r.gflops,
            gbs: r.gbs,
        })
    }
}

/// How to benchmark (`kp_bench_options`); `Default` is the library's (warm-up 3, 10 to 1000
/// runs, at least 0.25 s, seed 1).
#[derive(Clone, Debug, PartialEq)]
pub struct BenchOptions {
    pub warmup: u32,
    pub min_runs: u32,
    pub max_runs: u32,
    pub min_seconds: f64,
    pub seed: u64,
}

impl Default for BenchOptions {
    fn default() -> BenchOptions {
        let o = raw::bench_options();
        BenchOptions {
            warmup: o.warmup,
            min_runs: o.min_runs,
            max_runs: o.max_runs,
            min_seconds: o.min_seconds,
            seed: o.seed,
        }
    }
}

/// A benchmark's timings (`kp_bench_result`), in seconds per launch.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchResult {
    pub runs: u32,
    pub median_s: f64,
    pub min_s: f64,
    pub max_s: f64,
    pub p10_s: f64,
    pub p90_s: f64,
    /// Per launch, from the kernel's cost model (0 when it has none).
    pub flops: f64,
    pub bytes: f64,
    /// At the median time.
    pub gflops: f64,
    pub gbs: f64,
}

/// The device's measured limits (`kp_peak`).
#[derive(Clone, Debug, PartialEq)]
pub struct Peak {
    pub bandwidth_gbs: f64,
    pub read_gbs: f64,
    pub copy_gbs: f64,
    pub triad_gbs: f64,
    pub vector_width: u32,
    pub fp32_gflops: f64,
    pub launch_us: f64,
    pub roundtrip_us: f64,
    pub from_cache: bool,
    /// UTC date and time of the measurement, ISO 8601.
    pub measured: String,
}

impl Peak {
    pub(crate) fn from_raw(p: &sys::kp_peak) -> Peak {
        Peak {
            bandwidth_gbs: p.bandwidth_gbs,
            read_gbs: p.read_gbs,
            copy_gbs: p.copy_gbs,
            triad_gbs: p.triad_gbs,
            vector_width: p.vector_width,
            fp32_gflops: p.fp32_gflops,
            launch_us: p.launch_us,
            roundtrip_us: p.roundtrip_us,
            from_cache: p.from_cache != 0,
            measured: raw::array_string(&p.measured),
        }
    }
}
