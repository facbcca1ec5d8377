// SPDX-License-Identifier: Apache-2.0
//! examples/axpy.c in Rust: y = alpha x + y with example.axpy on a prime length, timed with an
//! event, checked against f32::mul_add; then the same launch prepared once and run twice.

mod common;

use common::runtime;

/// A prime: never a multiple of the work-group size, so the kernel's bounds check is exercised.
const N: usize = 1_000_003;

fn inputs() -> (Vec<f32>, Vec<f32>) {
    let x = (0..N).map(|i| (i % 1000) as f32 * 0.001 - 0.5).collect();
    let y = (0..N).map(|i| (i % 7) as f32 - 3.0).collect();
    (x, y)
}

/// The kernel computes fma(alpha, x, y), correctly rounded; an ulp or so for devices that do not
/// fuse.
fn check(out: &[f32], x: &[f32], y: &[f32], alpha: f32) {
    let bad = (0..N)
        .filter(|&i| {
            let want = alpha.mul_add(x[i], y[i]);
            (out[i] as f64 - want as f64).abs() > 1e-6 * (1.0 + (want as f64).abs())
        })
        .count();
    assert_eq!(bad, 0, "{} of {} elements differ from fma(alpha, x, y)", bad, N);
}

#[test]
fn axpy_matches_fma() {
    let rt = &runtime();
    let (x, y) = inputs();
    let alpha = 0.5f32;
    let k = rt.kernel("example.axpy").unwrap();
    let info = k.info().unwrap();
    assert_eq!(info.name, "example.axpy");
    assert_eq!(info.plugin, "example");
    let xb = rt.buffer_from(&x).unwrap();
    let yb = rt.buffer_from(&y).unwrap();
    let ev = k
        .launch()
        .int("n", N as i64)
        .float("alpha", alpha as f64)
        .tensor("x", &xb.tensor())
        .tensor("y", &yb.tensor())
        .run_timed()
        .unwrap();
    let seconds = ev.elapsed_seconds().unwrap();
    assert!(seconds >= 0.0, "elapsed {} s", seconds);
    check(&yb.to_vec().unwrap(), &x, &y, alpha);
}

#[test]
fn prepared_axpy_runs_twice() {
    let rt = &runtime();
    let (x, y) = inputs();
    let k = rt.kernel("example.axpy").unwrap();
    let xb = rt.buffer_from(&x).unwrap();
    let yb = rt.buffer_from(&y).unwrap();
    let args = k
        .launch()
        .int("n", N as i64)
        .float("alpha", 0.25)
        .tensor("x", &xb.tensor())
        .tensor("y", &yb.tensor())
        .into_args();
    let mut p = k.prepare(&args).unwrap();
    p.launch().unwrap();
    p.set_float("alpha", 0.5).unwrap();
    p.launch_timed().unwrap().wait().unwrap();
    // y + 0.25 x, then + 0.5 x: the first result is the second's y.
    let first: Vec<f32> = (0..N).map(|i| 0.25f32.mul_add(x[i], y[i])).collect();
    check(&yb.to_vec().unwrap(), &x, &first, 0.5);
}

#[test]
fn graph_replays_axpy() {
    let rt = &runtime();
    let (x, y) = inputs();
    let k = rt.kernel("example.axpy").unwrap();
    let xb = rt.buffer_from(&x).unwrap();
    let yb = rt.buffer_from(&y).unwrap();
    let rec = rt.record(0).unwrap();
    k.launch()
        .int("n", N as i64)
        .float("alpha", 0.25)
        .tensor("x", &xb.tensor())
        .tensor("y", &yb.tensor())
        .run()
        .unwrap();
    rec.param("alpha", "alpha").unwrap();
    // Host transfers are not part of a graph: refused while recording.
    assert!(yb.to_vec().is_err());
    let mut g = rec.end().unwrap();
    let info = g.info().unwrap();
    assert_eq!((info.launches, info.params), (1, 1));
    // Nothing ran while recording: y is y0 + 0.25 x after one replay, then + 0.5 x.
    g.replay().unwrap();
    g.set_float("alpha", 0.5).unwrap();
    g.replay_timed().unwrap().wait().unwrap();
    let first: Vec<f32> = (0..N).map(|i| 0.25f32.mul_add(x[i], y[i])).collect();
    check(&yb.to_vec().unwrap(), &x, &first, 0.5);
    assert!(g.describe().unwrap().contains("example.axpy"));
}
