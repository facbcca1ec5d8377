// SPDX-License-Identifier: Apache-2.0
//! Runtimes created at once on several threads (the process's first OpenCL calls among them),
//! and one runtime shared by threads that each launch on buffers of their own.

use std::thread;

use kernelport::{Runtime, RuntimeOptions};

fn create() -> Runtime {
    RuntimeOptions::new().no_user_manifests().create().expect("runtime")
}

/// y = 2 x + y on a buffer of this thread, launched on the shared runtime.
fn axpy_on(rt: &Runtime, seed: usize) {
    let n = 101 + seed;
    let x: Vec<f32> = (0..n).map(|i| (i + seed) as f32).collect();
    let xb = rt.buffer_from(&x).unwrap();
    let yb = rt.buffer_from(&vec![1.0f32; n]).unwrap();
    rt.kernel("example.axpy")
        .unwrap()
        .launch()
        .int("n", n as i64)
        .float("alpha", 2.0)
        .tensor("x", &xb.tensor())
        .tensor("y", &yb.tensor())
        .run()
        .unwrap();
    let want: Vec<f32> = x.iter().map(|v| 2.0 * v + 1.0).collect();
    assert_eq!(yb.to_vec().unwrap(), want);
}

#[test]
fn runtimes_on_several_threads() {
    // Created at once: the first creation initialises the OpenCL driver while the others wait.
    let handles: Vec<_> = (0..4).map(|_| thread::spawn(create)).collect();
    let runtimes: Vec<Runtime> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let shared = &runtimes[0];
    thread::scope(|s| {
        for t in 0..4 {
            s.spawn(move || axpy_on(shared, t));
        }
    });
    // A runtime moves to another thread and is dropped there.
    let last = runtimes.into_iter().last().unwrap();
    thread::spawn(move || axpy_on(&last, 9)).join().unwrap();
}
