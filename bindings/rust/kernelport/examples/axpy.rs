// SPDX-License-Identifier: Apache-2.0
//! examples/axpy.c in Rust: y = alpha x + y with the example.axpy kernel, timed with an event,
//! checked against a plain loop.
//!   cargo run --example axpy

use std::process::ExitCode;

use kernelport::{Result, Runtime};

/// A prime: never a multiple of the work-group size, so the kernel's bounds check is exercised.
const N: usize = 1_000_003;

fn run() -> Result<bool> {
    let x: Vec<f32> = (0..N).map(|i| (i % 1000) as f32 * 0.001 - 0.5).collect();
    let y: Vec<f32> = (0..N).map(|i| (i % 7) as f32 - 3.0).collect();
    let alpha = 0.5f32;

    // Defaults: the manifest layers, KP_DEVICE / KP_PLUGIN_PATH, the installed plugins.
    let rt = Runtime::new()?;
    let dev = rt.device()?;
    println!("device: {} ({} {}, {})", dev.name, dev.vendor, dev.device_type, dev.driver);
    println!("        {}", rt.device_reason()?);
    let k = rt.kernel("example.axpy")?;
    let info = k.info()?;
    println!("kernel: {} from plugin {} ({})", info.name, info.plugin, info.plugin_path);
    // Programs are built on first use: build it now, so that the event times the kernel alone.
    rt.warmup(Some("example.axpy"))?;

    let xb = rt.buffer_from(&x)?;
    let yb = rt.buffer_from(&y)?;
    // Arguments are matched by name, in any order; tensors are views that borrow their buffers.
    let ev = k
        .launch()
        .int("n", N as i64)
        .float("alpha", alpha as f64)
        .tensor("x", &xb.tensor())
        .tensor("y", &yb.tensor())
        .run_timed()?;
    let seconds = ev.elapsed_seconds()?;
    let out = yb.to_vec()?;

    // The kernel computes fma(alpha, x, y), correctly rounded; an ulp or so for devices that do
    // not fuse.
    let (mut bad, mut worst) = (0usize, 0f64);
    for i in 0..N {
        let want = alpha.mul_add(x[i], y[i]);
        let err = (out[i] as f64 - want as f64).abs();
        worst = worst.max(err);
        bad += (err > 1e-6 * (1.0 + (want as f64).abs())) as usize;
    }
    let gbs = if seconds > 0.0 { 12.0 * N as f64 / seconds / 1e9 } else { 0.0 };
    println!(
        "n = {}: {:.3} ms on the device, {:.2} GB/s, max abs error {}, {} mismatches",
        N,
        seconds * 1e3,
        gbs,
        worst,
        bad
    );
    Ok(bad == 0)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("axpy: {}", e);
            ExitCode::FAILURE
        }
    }
}
