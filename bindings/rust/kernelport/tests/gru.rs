// SPDX-License-Identifier: Apache-2.0
//! gru.rollout and gru.step on the default device against the same calls on the host device,
//! where every kernel runs its plain-C host reference; gru.rollout's own verify.

mod common;

use common::{assert_close, reference_runtime, runtime, Rng};
use kernelport::ops::gru::{self, Rollout, RolloutMode, Step};
use kernelport::Runtime;

/// Awkward sizes: an ensemble of 2, 3 trajectories, H 7, S 5 categories, F 3, T 4 steps.
const E: usize = 2;
const B: usize = 3;
const H: usize = 7;
const S: usize = 5;
const F: usize = 3;
const T: usize = 4;
const I: usize = F + 1 + S;

struct Inputs {
    w_ih: Vec<f32>,
    w_hh: Vec<f32>,
    b_ih: Vec<f32>,
    b_hh: Vec<f32>,
    w_p: Vec<f32>,
    b_p: Vec<f32>,
    w_y: Vec<f32>,
    b_y: Vec<f32>,
    f: Vec<f32>,
    y0: Vec<f32>,
    z0: Vec<f32>,
    h0: Vec<f32>,
}

/// PyTorch's initialisation, U(-1/sqrt(H), 1/sqrt(H)).
fn inputs() -> Inputs {
    let mut r = Rng(7);
    let k = 1.0 / (H as f32).sqrt();
    Inputs {
        w_ih: r.vec(E * 3 * H * I, -k, k),
        w_hh: r.vec(E * 3 * H * H, -k, k),
        b_ih: r.vec(E * 3 * H, -k, k),
        b_hh: r.vec(E * 3 * H, -k, k),
        w_p: r.vec(E * S * H, -k, k),
        b_p: r.vec(E * S, -k, k),
        w_y: r.vec(E * (H + S), -k, k),
        b_y: r.vec(E, -k, k),
        f: r.vec(E * B * F, -1.0, 1.0),
        y0: r.vec(B, 0.0, 2.0),
        z0: r.vec(E * B * S, 0.0, 1.0),
        h0: r.vec(E * B * H, -0.5, 0.5),
    }
}

/// Runs the rollout on `rt` in mode Mean (deterministic) and returns (y, h_T, entropy).
fn rollout_on(rt: &Runtime, a: &Inputs) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let d = |v: &Vec<f32>| rt.buffer_from(v).unwrap();
    let (w_ih, w_hh, b_ih, b_hh) = (d(&a.w_ih), d(&a.w_hh), d(&a.b_ih), d(&a.b_hh));
    let (w_p, b_p, w_y, b_y) = (d(&a.w_p), d(&a.b_p), d(&a.w_y), d(&a.b_y));
    let (f, y0, z0, h0) = (d(&a.f), d(&a.y0), d(&a.z0), d(&a.h0));
    let y = rt.buffer::<f32>(E * B * T).unwrap();
    let h_t = rt.buffer::<f32>(E * B * H).unwrap();
    let entropy = rt.buffer::<f32>(E * B * T).unwrap();
    let (e, b, h, s, i, t) = (E as i64, B as i64, H as i64, S as i64, I as i64, T as i64);
    let mut r = Rollout::new(
        w_ih.view(&[e, 3 * h, i]).unwrap(),
        w_hh.view(&[e, 3 * h, h]).unwrap(),
        w_y.view(&[e, h + s]).unwrap(),
        b_y.view(&[e]).unwrap(),
        f.view(&[e, b, F as i64]).unwrap(),
        y0.view(&[b]).unwrap(),
        h0.view(&[e, b, h]).unwrap(),
        y.view(&[e, b, t]).unwrap(),
        h_t.view(&[e, b, h]).unwrap(),
        t,
    );
    r.b_ih = Some(b_ih.view(&[e, 3 * h]).unwrap());
    r.b_hh = Some(b_hh.view(&[e, 3 * h]).unwrap());
    r.w_p = Some(w_p.view(&[e, s, h]).unwrap());
    r.b_p = Some(b_p.view(&[e, s]).unwrap());
    r.z0 = Some(z0.view(&[e, b, s]).unwrap());
    r.entropy = Some(entropy.view(&[e, b, t]).unwrap());
    r.mode = RolloutMode::Mean;
    gru::rollout(rt, &r).unwrap();
    (y.to_vec().unwrap(), h_t.to_vec().unwrap(), entropy.to_vec().unwrap())
}

#[test]
fn rollout_matches_host_reference() {
    let a = inputs();
    let (y, h_t, entropy) = rollout_on(&runtime(), &a);
    let (y_ref, h_ref, entropy_ref) = rollout_on(&reference_runtime(), &a);
    // docs/kernels/gru.md's tolerance: tau = 2 (I + H) sqrt(T) u, u = 2^-24.
    let tau = 2.0 * (I + H) as f64 * (T as f64).sqrt() * 2f64.powi(-24);
    assert_close("y", &y, &y_ref, tau, tau);
    assert_close("h_T", &h_t, &h_ref, tau, tau);
    assert_close("entropy", &entropy, &entropy_ref, tau, tau);
    let m = gru::rollout_metrics(&y, E, B, T).unwrap();
    assert!(m.ensemble_spread >= 0.0 && m.trajectory_variance >= 0.0);
    assert!(gru::rollout_metrics(&y, E, B, T + 1).is_none());
}

/// h' = GRU(x, h) for B 3, I 5, H 7, no biases.
fn step_on(rt: &Runtime, x: &[f32], h: &[f32], w_ih: &[f32], w_hh: &[f32]) -> Vec<f32> {
    let (xb, hb) = (rt.buffer_from(x).unwrap(), rt.buffer_from(h).unwrap());
    let (wi, wh) = (rt.buffer_from(w_ih).unwrap(), rt.buffer_from(w_hh).unwrap());
    let out = rt.buffer::<f32>(3 * 7).unwrap();
    gru::step(
        rt,
        &Step {
            x: xb.view(&[3, 5]).unwrap(),
            h: hb.view(&[3, 7]).unwrap(),
            w_ih: wi.view(&[21, 5]).unwrap(),
            w_hh: wh.view(&[21, 7]).unwrap(),
            b_ih: None,
            b_hh: None,
            h_out: out.view(&[3, 7]).unwrap(),
            linear_before_reset: false,
        },
    )
    .unwrap();
    out.to_vec().unwrap()
}

#[test]
fn step_matches_host_reference() {
    let mut r = Rng(11);
    let (x, h) = (r.vec(15, -1.0, 1.0), r.vec(21, -1.0, 1.0));
    let (w_ih, w_hh) = (r.vec(105, -0.4, 0.4), r.vec(147, -0.4, 0.4));
    let got = step_on(&runtime(), &x, &h, &w_ih, &w_hh);
    let want = step_on(&reference_runtime(), &x, &h, &w_ih, &w_hh);
    assert_close("h_out", &got, &want, 1e-5, 1e-5);
}

#[test]
fn rollout_verify_reports_every_output() {
    let rt = runtime();
    let k = rt.kernel("gru.rollout").unwrap();
    let sizes = k.sample_sizes(false);
    assert!(sizes.iter().any(|s| s == "h7-mean-lbr0"), "verify sizes {:?}", sizes);
    let v = k.verify(Some("h7-mean-lbr0"), 1).unwrap();
    assert!(v.passed, "{:?}", v.results);
    assert!(!v.results.is_empty());
    for r in &v.results {
        assert_eq!(r.kernel, "gru.rollout");
        assert_eq!(r.size, "h7-mean-lbr0");
        assert!(r.passed && r.failures == 0 && r.elements > 0, "{:?}", r);
    }
}
