// SPDX-License-Identifier: Apache-2.0
//! What the test binaries share: the runtime, a seeded generator and a tolerance check.
#![allow(dead_code)]

use kernelport::{Runtime, RuntimeOptions};

/// The default device (the manifest's rules; KP_DEVICE when set), without the user's manifest
/// files. One per test, dropped at its end: a runtime still running work when the process exits
/// (a leaked one shared by the tests) can abort it inside PoCL's compiler, which builds a kernel's
/// work-group function at its first run. Programs are built once all the same, through the
/// program cache on disk.
pub fn runtime() -> Runtime {
    let rt = RuntimeOptions::new().no_user_manifests().create().expect("runtime");
    let dev = rt.device().expect("device");
    eprintln!("device: {} ({} {})", dev.name, dev.vendor, dev.device_type);
    rt
}

/// A runtime on the host device, where every kernel runs its plain-C host reference.
pub fn reference_runtime() -> Runtime {
    RuntimeOptions::new().device("host").no_user_manifests().create().expect("host runtime")
}

/// splitmix64: reproducible inputs without a crate.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        let u = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * u
    }

    pub fn vec(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.uniform(lo, hi)).collect()
    }
}

/// Every |got - want| <= atol + rtol |want|; panics naming the first element that is not.
pub fn assert_close(what: &str, got: &[f32], want: &[f32], atol: f64, rtol: f64) {
    assert_eq!(got.len(), want.len(), "{}: lengths", what);
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let err = (g as f64 - w as f64).abs();
        assert!(
            err <= atol + rtol * (w as f64).abs(),
            "{}[{}]: got {}, want {} (error {:e}, tolerance {:e} + {:e} |want|)",
            what,
            i,
            g,
            w,
            err,
            atol,
            rtol
        );
    }
}
