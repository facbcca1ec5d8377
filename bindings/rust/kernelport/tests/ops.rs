// SPDX-License-Identifier: Apache-2.0
//! The typed calls: tensor ops and AdamW against loops in Rust, logic.forward/backward against
//! the host device (the kernels' C references).

mod common;

use common::{assert_close, reference_runtime, runtime, Rng};
use kernelport::ops::logic::{self, Backward};
use kernelport::ops::optim::{self, AdamW};
use kernelport::ops::tensor::{self as t, Axes, CrossEntropy};
use kernelport::Runtime;

/// Rows and columns: primes, neither a multiple of a work-group.
const R: usize = 5;
const C: usize = 7;

#[test]
fn elementwise_and_reductions() {
    let rt = &runtime();
    let mut r = Rng(5);
    let (a, b) = (r.vec(R * C, -2.0, 2.0), r.vec(C, -2.0, 2.0));
    let (ab, bb) = (rt.buffer_from(&a).unwrap(), rt.buffer_from(&b).unwrap());
    let y = rt.buffer::<f32>(R * C).unwrap();
    let (rows, cols) = (R as i64, C as i64);
    let av = ab.view(&[rows, cols]).unwrap();
    // b [C] broadcast over the rows.
    let bv = bb.view(&[cols]).unwrap();
    let yv = y.view(&[rows, cols]).unwrap();
    t::add(rt, &av, &bv, &yv).unwrap();
    let want: Vec<f32> = (0..R * C).map(|i| a[i] + b[i % C]).collect();
    assert_close("add", &y.to_vec().unwrap(), &want, 0.0, 0.0);
    t::mul(rt, &av, &bv, &yv).unwrap();
    let want: Vec<f32> = (0..R * C).map(|i| a[i] * b[i % C]).collect();
    assert_close("mul", &y.to_vec().unwrap(), &want, 0.0, 0.0);
    t::binary(rt, "sub", &av, &bv, &yv).unwrap();
    let want: Vec<f32> = (0..R * C).map(|i| a[i] - b[i % C]).collect();
    assert_close("sub", &y.to_vec().unwrap(), &want, 0.0, 0.0);

    let s = rt.buffer::<f32>(C).unwrap();
    t::sum(rt, &av, &s.view(&[cols]).unwrap(), Axes::of(&[0])).unwrap();
    let col = |j: usize| (0..R).map(|i| a[i * C + j] as f64).sum::<f64>();
    let want: Vec<f32> = (0..C).map(|j| col(j) as f32).collect();
    assert_close("sum", &s.to_vec().unwrap(), &want, 1e-5, 1e-5);
    let m = rt.buffer::<f32>(1).unwrap();
    t::mean(rt, &av, &m.scalar(0), Axes::ALL).unwrap();
    let want = a.iter().map(|&v| v as f64).sum::<f64>() / (R * C) as f64;
    assert_close("mean", &m.to_vec().unwrap(), &[want as f32], 1e-6, 1e-5);
}

/// Softmax of each row in f64.
fn softmax_rows(x: &[f32]) -> Vec<f64> {
    x.chunks(C)
        .flat_map(|row| {
            let max = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
            let e: Vec<f64> = row.iter().map(|&v| (v as f64 - max).exp()).collect();
            let s: f64 = e.iter().sum();
            e.into_iter().map(move |v| v / s)
        })
        .collect()
}

#[test]
fn softmax_and_cross_entropy() {
    let rt = &runtime();
    let mut r = Rng(9);
    let x = r.vec(R * C, -3.0, 3.0);
    let labels: Vec<i32> = vec![0, 6, 3, -100, 2];
    let xb = rt.buffer_from(&x).unwrap();
    let lb = rt.buffer_from(&labels).unwrap();
    let y = rt.buffer::<f32>(R * C).unwrap();
    let xv = xb.view(&[R as i64, C as i64]).unwrap();
    t::softmax(rt, &xv, &y.view(&[R as i64, C as i64]).unwrap()).unwrap();
    let p = softmax_rows(&x);
    let want: Vec<f32> = p.iter().map(|&v| v as f32).collect();
    assert_close("softmax", &y.to_vec().unwrap(), &want, 1e-6, 1e-5);

    let loss = rt.buffer::<f32>(1).unwrap();
    let dlogits = rt.buffer::<f32>(R * C).unwrap();
    let o = CrossEntropy {
        dlogits: Some(dlogits.view(&[R as i64, C as i64]).unwrap()),
        ..CrossEntropy::default()
    };
    t::cross_entropy(rt, &xv, &lb.view(&[R as i64]).unwrap(), &loss.scalar(0), &o).unwrap();
    // The mean of -log p[label] over the 4 rows not ignored; the gradient (p - onehot) / 4.
    let kept: Vec<usize> = (0..R).filter(|&i| labels[i] != -100).collect();
    let want = kept.iter().map(|&i| -p[i * C + labels[i] as usize].ln()).sum::<f64>() / 4.0;
    assert_close("loss", &loss.to_vec().unwrap(), &[want as f32], 1e-6, 1e-5);
    let grad: Vec<f32> = (0..R * C)
        .map(|k| {
            let (i, j) = (k / C, k % C);
            if labels[i] == -100 {
                0.0
            } else {
                ((p[k] - (j as i32 == labels[i]) as i32 as f64) / 4.0) as f32
            }
        })
        .collect();
    assert_close("dlogits", &dlogits.to_vec().unwrap(), &grad, 1e-6, 1e-5);
}

#[test]
fn adamw_step_matches_pytorch_formula() {
    let rt = &runtime();
    let n = 13;
    let mut r = Rng(13);
    let (p, g) = (r.vec(n, -1.0, 1.0), r.vec(n, -1.0, 1.0));
    let (m0, v0) = (r.vec(n, -0.1, 0.1), r.vec(n, 0.0, 0.1));
    let pb = rt.buffer_from(&p).unwrap();
    let gb = rt.buffer_from(&g).unwrap();
    let mb = rt.buffer_from(&m0).unwrap();
    let vb = rt.buffer_from(&v0).unwrap();
    let o = AdamW { lr: 0.01, ..AdamW::default() };
    assert_eq!((o.beta1, o.beta2, o.eps, o.weight_decay), (0.9, 0.999, 1e-8, 1e-2));
    let step = 3;
    optim::adamw(rt, &pb.tensor(), &gb.tensor(), &mb.tensor(), &vb.tensor(), step, &o).unwrap();
    let (bc1, bc2) = (1.0 - 0.9f64.powi(step as i32), 1.0 - 0.999f64.powi(step as i32));
    let want: Vec<f32> = (0..n)
        .map(|i| {
            let (g, mut p) = (g[i] as f64, p[i] as f64);
            p -= 0.01 * 1e-2 * p;
            let m = 0.9 * m0[i] as f64 + 0.1 * g;
            let v = 0.999 * v0[i] as f64 + 0.001 * g * g;
            (p - (0.01 / bc1) * m / (v.sqrt() / bc2.sqrt() + 1e-8)) as f32
        })
        .collect();
    assert_close("param", &pb.to_vec().unwrap(), &want, 2e-6, 2e-6);
}

#[test]
fn ema_follows_averaged_model_rule() {
    let rt = &runtime();
    let n = 11;
    let mut r = Rng(17);
    let ab = rt.buffer_from(&r.vec(n, -1.0, 1.0)).unwrap();
    let mut want = vec![0.0f64; n];
    for step in 1..=4i64 {
        let p = r.vec(n, -1.0, 1.0);
        let pb = rt.buffer_from(&p).unwrap();
        optim::ema(rt, &ab.tensor(), &pb.tensor(), step, 0.9, true).unwrap();
        let d = 0.9f64.min((1.0 + step as f64) / (10.0 + step as f64));
        for i in 0..n {
            want[i] =
                if step == 1 { p[i] as f64 } else { want[i] + (1.0 - d) * (p[i] as f64 - want[i]) };
        }
    }
    let want: Vec<f32> = want.iter().map(|&v| v as f32).collect();
    assert_close("averaged", &ab.to_vec().unwrap(), &want, 2e-6, 2e-6);
    let pb = rt.buffer_from(&r.vec(n, -1.0, 1.0)).unwrap();
    let err = optim::ema(rt, &ab.tensor(), &pb.tensor(), 2, 1.5, false).unwrap_err();
    assert!(err.to_string().contains("decay: 1.5 is outside [0, 1]"), "{err}");
}

/// One layer of G gates over IN inputs and N samples: (y, dx, dw).
fn logic_layer(rt: &Runtime, x: &[f32], w: &[f32], dy: &[f32]) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    const IN: usize = 11;
    const G: usize = 13;
    const N: usize = 37;
    let (a, b) = logic::wiring_random(IN, G, 1).unwrap();
    let (start, entries) = logic::csr_build(&a, &b, IN).unwrap();
    let d = |v: &[f32]| rt.buffer_from(v).unwrap();
    let i = |v: &[i32]| rt.buffer_from(v).unwrap();
    let (xb, wb, dyb) = (d(x), d(w), d(dy));
    let (ab, bb, sb, eb) = (i(&a), i(&b), i(&start), i(&entries));
    let c = rt.buffer::<f32>(G * 4).unwrap();
    let y = rt.buffer::<f32>(G * N).unwrap();
    let dx = rt.buffer::<f32>(IN * N).unwrap();
    let dw = rt.buffer::<f32>(G * 16).unwrap();
    let (g, n, inn) = (G as i64, N as i64, IN as i64);
    let cv = c.view(&[g, 4]).unwrap();
    logic::coeffs(rt, &wb.view(&[g, 16]).unwrap(), Some(&cv), None, false).unwrap();
    let xv = xb.view(&[inn, n]).unwrap();
    logic::forward(rt, &xv, &ab.tensor(), &bb.tensor(), &cv, &y.view(&[g, n]).unwrap()).unwrap();
    logic::backward(
        rt,
        &Backward {
            x: xv,
            a_idx: ab.tensor(),
            b_idx: bb.tensor(),
            w: wb.view(&[g, 16]).unwrap(),
            c: cv,
            dy: dyb.view(&[g, n]).unwrap(),
            csr_start: sb.tensor(),
            csr_entries: eb.tensor(),
            dx: Some(dx.view(&[inn, n]).unwrap()),
            dw: Some(dw.view(&[g, 16]).unwrap()),
        },
    )
    .unwrap();
    (y.to_vec().unwrap(), dx.to_vec().unwrap(), dw.to_vec().unwrap())
}

#[test]
fn logic_layer_matches_host_reference() {
    let mut r = Rng(17);
    let x = r.vec(11 * 37, 0.0, 1.0);
    let w = logic::init_gaussian(13, 1.0, 2);
    let dy = r.vec(13 * 37, -1.0, 1.0);
    let (y, dx, dw) = logic_layer(&runtime(), &x, &w, &dy);
    let (y_ref, dx_ref, dw_ref) = logic_layer(&reference_runtime(), &x, &w, &dy);
    // Soft gates are affine in a few terms of magnitude <= 4; dw sums N = 37 products.
    assert_close("y", &y, &y_ref, 1e-5, 1e-5);
    assert_close("dx", &dx, &dx_ref, 1e-5, 1e-5);
    assert_close("dw", &dw, &dw_ref, 1e-4, 1e-5);
}
