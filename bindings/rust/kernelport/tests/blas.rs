// SPDX-License-Identifier: Apache-2.0
//! blas.gemm against a triple loop in f64, plain and with a transposed view of A.

mod common;

use common::{assert_close, runtime, Rng};
use kernelport::ops::blas::{self, Gemm};
use kernelport::Status;

const M: usize = 13;
const K: usize = 7;
const N: usize = 11;

/// C = alpha A B + beta C0 in f64, A [M, K] and B [K, N] row-major.
fn reference(a: &[f32], b: &[f32], c0: &[f32], alpha: f64, beta: f64) -> Vec<f32> {
    let mut c = vec![0f32; M * N];
    for i in 0..M {
        for j in 0..N {
            let dot: f64 = (0..K).map(|p| a[i * K + p] as f64 * b[p * N + j] as f64).sum();
            c[i * N + j] = (alpha * dot + beta * c0[i * N + j] as f64) as f32;
        }
    }
    c
}

/// gemm's error bound: K terms of |a b| <= 1 each, alpha and beta terms (Higham 3.1), doubled.
fn tolerance() -> f64 {
    2.0 * (K + 2) as f64 * 2f64.powi(-24) * (1.5 * K as f64 + 0.5)
}

#[test]
fn gemm_matches_triple_loop() {
    let rt = &runtime();
    if let Err(e) = rt.kernel("blas.gemm") {
        assert_eq!(e.status(), Status::NotFound, "{}", e);
        eprintln!("skipped: this build has no blas plugin (CLBlast not found)");
        return;
    }
    let mut r = Rng(3);
    let (a, b, c0) = (r.vec(M * K, -1.0, 1.0), r.vec(K * N, -1.0, 1.0), r.vec(M * N, -1.0, 1.0));
    let (ab, bb) = (rt.buffer_from(&a).unwrap(), rt.buffer_from(&b).unwrap());
    let cb = rt.buffer_from(&c0).unwrap();
    let g = Gemm { alpha: 1.5, beta: 0.5, ..Gemm::default() };
    let (m, k, n) = (M as i64, K as i64, N as i64);
    blas::gemm(
        rt,
        &ab.view(&[m, k]).unwrap(),
        &bb.view(&[k, n]).unwrap(),
        &cb.view(&[m, n]).unwrap(),
        &g,
    )
    .unwrap();
    let want = reference(&a, &b, &c0, 1.5, 0.5);
    assert_close("C", &cb.to_vec().unwrap(), &want, tolerance(), 0.0);

    // A stored transposed, [K, M]: its transposed view is A again, with no copy.
    let at: Vec<f32> = (0..K * M).map(|i| a[(i % M) * K + i / M]).collect();
    let atb = rt.buffer_from(&at).unwrap();
    let c2 = rt.buffer::<f32>(M * N).unwrap();
    let a_view = atb.view(&[k, m]).unwrap().transpose(0, 1);
    assert_eq!(a_view.shape(), &[m, k]);
    blas::gemm(
        rt,
        &a_view,
        &bb.view(&[k, n]).unwrap(),
        &c2.view(&[m, n]).unwrap(),
        &Gemm::default(),
    )
    .unwrap();
    let want = reference(&a, &b, &c0, 1.0, 0.0);
    assert_close("C (A transposed)", &c2.to_vec().unwrap(), &want, tolerance(), 0.0);
}
