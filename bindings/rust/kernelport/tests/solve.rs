// SPDX-License-Identifier: Apache-2.0
//! The solve layer: NIST StRD fits against the certified values on the host reference and the
//! device, the compiled residual and its Jacobian against the host interpreter and hand-derived
//! derivatives, a graph built with the builders against the same graph parsed, a sparse ring on
//! both, and bad input as Err (the runtime still usable after).

mod common;

use std::path::PathBuf;

use common::{runtime, Rng};
use kernelport::solve::{
    self, ExprGraph, ExprOp, Lm, LmOptions, LmSparse, LmStatus, Precision, Residual, SparseOptions,
    SparseProgress,
};
use kernelport::{Runtime, Status};

/// NIST's Misra1a (tests/fixtures/nist; KP_TEST_FIXTURES names the folder where the test program
/// runs away from its source tree): the two starts, the certified values and the data rows (y, x),
/// row-major.
fn misra1a() -> ([[f64; 2]; 2], [f64; 2], Vec<f64>) {
    let fixtures = std::env::var_os("KP_TEST_FIXTURES").map(PathBuf::from).unwrap_or_else(|| {
        [env!("CARGO_MANIFEST_DIR"), "..", "..", "..", "tests", "fixtures"].iter().collect()
    });
    let path = fixtures.join("nist").join("Misra1a.dat");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{:?}: {}", path, e));
    let (mut starts, mut certified, mut rows, mut in_data) =
        ([[0.0; 2]; 2], [0.0; 2], vec![], false);
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if in_data && w.len() == 2 {
            rows.extend(w.iter().map(|v| v.parse::<f64>().unwrap()));
        } else if w.len() >= 5 && (w[0] == "b1" || w[0] == "b2") && w[1] == "=" {
            let p = (w[0] == "b2") as usize;
            starts[0][p] = w[2].parse().unwrap();
            starts[1][p] = w[3].parse().unwrap();
            certified[p] = w[4].parse().unwrap();
        } else if line.starts_with("Data:") && w[1..] == ["y", "x"] {
            in_data = true;
        }
    }
    assert_eq!(rows.len(), 28, "Misra1a has 14 observations");
    (starts, certified, rows)
}

fn misra1a_graph() -> ExprGraph {
    ExprGraph::from_text("b1 b2", "y x", "b1*(1-exp(-b2*x)) - y").expect("Misra1a's model")
}

/// The fewest matching significant digits of got against want.
fn digits(got: &[f64], want: &[f64]) -> f64 {
    got.iter()
        .zip(want)
        .map(|(g, w)| -(((g - w) / w).abs().max(1e-17)).log10())
        .fold(f64::INFINITY, f64::min)
}

/// NIST's tolerances (as tests/solve-nist.h).
fn nist_options() -> LmOptions {
    LmOptions {
        max_iterations: 1000,
        gradient_tolerance: 0.0,
        step_tolerance: 1e-15,
        function_tolerance: 1e-15,
        ..LmOptions::default()
    }
}

/// Both starts as two problems over the same 14 rows.
fn misra1a_batch() -> (Vec<i32>, Vec<f64>, Vec<f64>, [f64; 2]) {
    let (starts, certified, rows) = misra1a();
    let data = [rows.clone(), rows].concat();
    (vec![0, 14, 28], data, starts.concat(), certified)
}

#[test]
fn nist_misra1a_on_the_host_reference() {
    let g = misra1a_graph();
    let (rows, data, mut x, certified) = misra1a_batch();
    let report = solve::fit_host(&g, &nist_options(), &rows, &data, &mut x).unwrap();
    assert_eq!(report.converged(), 2, "{}", report.summary());
    assert!(report.summary().starts_with("2 of 2 converged"), "{}", report.summary());
    for b in 0..2 {
        let d = digits(&x[2 * b..2 * b + 2], &certified);
        assert!(d >= 7.0, "start {}: {:?} vs {:?} ({} digits)", b + 1, &x[2 * b..], certified, d);
    }
    // The cost is half the sum of squares of the graph's own residuals.
    let sum: f64 =
        data[..28].chunks(2).map(|row| g.eval(row, &x[..2]).unwrap().0[0].powi(2)).sum::<f64>();
    assert!((report.cost[0] - 0.5 * sum).abs() <= 1e-9 * sum, "{} vs {}", report.cost[0], sum);
    // Too few iterations: a status, not an error, with the library's name for it.
    let (_, _, mut x, _) = misra1a_batch();
    let opt = LmOptions { max_iterations: 2, ..nist_options() };
    let report = solve::fit_host(&g, &opt, &rows, &data, &mut x).unwrap();
    assert_eq!(report.status, [LmStatus::MaxIterations; 2]);
    assert_eq!(report.iterations, [2, 2]);
    assert_eq!(report.status[0].name(), "max-iterations");
    assert!(
        report.summary().starts_with("0 of 2 converged; 2 max-iterations"),
        "{}",
        report.summary()
    );
}

#[test]
fn nist_misra1a_on_the_device() {
    let rt = runtime();
    let g = misra1a_graph();
    let mut lm = Lm::new(&rt, &g, Precision::Auto).unwrap();
    drop(g); // the solver keeps its own copy
    assert!(lm.kernel().info().unwrap().name.starts_with("solve.lm"));
    let (rows, data, mut x, certified) = misra1a_batch();
    let report = lm.fit(&nist_options(), &rows, &data, &mut x).unwrap();
    assert!(report.status.iter().all(|s| s.converged()), "{}", report.summary());
    // f64 where the device has it; an f32 solver gets f32's share of the digits.
    let want = if lm.precision() == Precision::F64 { 7.0 } else { 3.0 };
    for b in 0..2 {
        let d = digits(&x[2 * b..2 * b + 2], &certified);
        assert!(d >= want, "start {}: {:?} ({} digits, {})", b + 1, x, d, lm.precision().name());
    }
}

/// a exp(-(t - mu)^2 / (2 s^2)) + c - y and its derivatives in a, mu, s, c, by hand.
fn gaussian(p: &[f64], t: f64, y: f64) -> (f64, [f64; 4]) {
    let (a, mu, s, c) = (p[0], p[1], p[2], p[3]);
    let e = (-(t - mu).powi(2) / (2.0 * s * s)).exp();
    (a * e + c - y, [e, a * e * (t - mu) / (s * s), a * e * (t - mu).powi(2) / s.powi(3), 1.0])
}

const GAUSS: &str = "a*exp(-(t-mu)^2/(2*s^2)) + c - y";

#[test]
fn compiled_residual_matches_the_interpreter_and_hand_derivatives() {
    let rt = runtime();
    let g = ExprGraph::from_text("a mu s c", "t y", GAUSS).unwrap();
    let mut res = Residual::new(&rt, &g, Precision::Auto).unwrap();
    assert!(res.source().contains("__kernel"), "{}", res.source());
    let n = 37; // a prime
    let mut rng = Rng(27);
    let lo = [0.5f32, -1.0, 0.5, -0.5];
    let hi = [2.0f32, 1.0, 2.0, 0.5];
    let params: Vec<f64> = (0..n * 4).map(|i| rng.uniform(lo[i % 4], hi[i % 4]) as f64).collect();
    let data: Vec<f64> = (0..n * 2).map(|_| rng.uniform(-3.0, 3.0) as f64).collect();
    let index: Vec<i32> = (0..(n * 4) as i32).collect();
    let (r, jac) = match res.precision() {
        Precision::F64 => evaluate::<f64>(&rt, &mut res, n, &data, &index, &params, |v| v),
        _ => evaluate::<f32>(&rt, &mut res, n, &data, &index, &params, |v| v as f32),
    };
    let tol = if res.precision() == Precision::F64 { 1e-12 } else { 1e-4 };
    for i in 0..n {
        let p = &params[4 * i..4 * i + 4];
        let (want_r, want_j) = gaussian(p, data[2 * i], data[2 * i + 1]);
        let (host_r, host_j) = g.eval(&data[2 * i..2 * i + 2], p).unwrap();
        assert!((host_r[0] - want_r).abs() <= 1e-12 * (1.0 + want_r.abs()));
        assert!((r[i] - want_r).abs() <= tol * (1.0 + want_r.abs()), "r[{}]", i);
        for s in 0..4 {
            assert!((host_j[s] - want_j[s]).abs() <= 1e-12 * (1.0 + want_j[s].abs()));
            let got = jac[4 * i + s];
            assert!((got - want_j[s]).abs() <= tol * (1.0 + want_j[s].abs()), "J[{}, {}]", i, s);
        }
    }
}

/// Copies the inputs into buffers of T, evaluates and reads r and J back as f64.
fn evaluate<T: kernelport::Element + Into<f64>>(
    rt: &Runtime,
    res: &mut Residual<'_>,
    n: usize,
    data: &[f64],
    index: &[i32],
    params: &[f64],
    conv: impl Fn(f64) -> T,
) -> (Vec<f64>, Vec<f64>) {
    let d = rt.buffer_from(&data.iter().map(|&v| conv(v)).collect::<Vec<T>>()).unwrap();
    let p = rt.buffer_from(&params.iter().map(|&v| conv(v)).collect::<Vec<T>>()).unwrap();
    let i = rt.buffer_from(index).unwrap();
    let r = rt.buffer::<T>(n).unwrap();
    let j = rt.buffer::<T>(n * 4).unwrap();
    let n64 = n as i64;
    res.evaluate(
        n,
        Some(&d.view(&[n64, 2]).unwrap()),
        &i.view(&[n64, 4]).unwrap(),
        &p.tensor(),
        &r.view(&[n64, 1]).unwrap(),
        &j.view(&[n64, 1, 4]).unwrap(),
    )
    .unwrap();
    let back = |b: &kernelport::Buffer<'_, T>| b.to_vec().unwrap().into_iter().map(Into::into);
    (back(&r).collect(), back(&j).collect())
}

#[test]
fn builders_make_the_parsed_graph() {
    let mut g = ExprGraph::new().unwrap();
    let (b1, b2) = (g.param("b1"), g.param("b2"));
    let (y, x) = (g.data("y"), g.data("x"));
    // b1*(1-exp(-b2*x)) - y
    let bx = g.binary(ExprOp::Mul, b2, x);
    let e = g.unary(ExprOp::Neg, bx);
    let e = g.unary(ExprOp::Exp, e);
    let one = g.constant(1.0);
    let e = g.binary(ExprOp::Sub, one, e);
    let e = g.binary(ExprOp::Mul, b1, e);
    let e = g.binary(ExprOp::Sub, e, y);
    g.output(e).unwrap();
    assert_eq!(g.param_names(), ["b1", "b2"]);
    assert_eq!(g.data_names(), ["y", "x"]);
    let parsed = misra1a_graph();
    assert_eq!(g.info().unwrap(), parsed.info().unwrap(), "hash-consed and normalized alike");
    let (r, j) = g.eval(&[10.0, 77.6], &[240.0, 5.5e-4]).unwrap();
    // The vector helpers: (a x b) . normalize(c) for 3-vectors of parameters.
    let mut v = ExprGraph::new().unwrap();
    v.declare_params("a0 a1 a2 b0 b1 b2 c0 c1 c2").unwrap();
    let p: Vec<_> =
        ["a0", "a1", "a2", "b0", "b1", "b2", "c0", "c1", "c2"].iter().map(|n| v.param(n)).collect();
    let axb = v.cross([p[0], p[1], p[2]], [p[3], p[4], p[5]]);
    let c = v.normalize(&p[6..9]);
    let e = v.dot(&axb, &c);
    v.output(e).unwrap();
    let x = [1.0, 2.0, 3.0, -1.0, 0.5, 2.0, 0.0, 3.0, 4.0];
    // a x b = (2.5, -5, 2.5); c / |c| = (0, 0.6, 0.8).
    let (dot, _) = v.eval(&[], &x).unwrap();
    assert!((dot[0] - (-5.0 * 0.6 + 2.5 * 0.8)).abs() < 1e-14, "{}", dot[0]);
    let e = (-5.5e-4f64 * 77.6).exp();
    assert!((r[0] - (240.0 * (1.0 - e) - 10.0)).abs() < 1e-12);
    assert!((j[0] - (1.0 - e)).abs() < 1e-15 && (j[1] - 240.0 * 77.6 * e).abs() < 1e-9);
}

/// A regular 13-gon of edge length 1 disturbed: x = [x0, y0, x1, y1, ...], one instance per
/// edge (its slots: both vertices' coordinates), data: the target length.
fn ring() -> (Vec<i32>, Vec<f64>, Vec<f64>) {
    let n = 13;
    let radius = 0.5 / (std::f64::consts::PI / n as f64).sin();
    let mut rng = Rng(13);
    let mut x = Vec::new();
    for v in 0..n {
        let a = 2.0 * std::f64::consts::PI * v as f64 / n as f64;
        x.push(radius * a.cos() + rng.uniform(-0.05, 0.05) as f64);
        x.push(radius * a.sin() + rng.uniform(-0.05, 0.05) as f64);
    }
    let index = (0..n as i32).flat_map(|v| {
        let w = (v + 1) % n as i32;
        [2 * v, 2 * v + 1, 2 * w, 2 * w + 1]
    });
    (index.collect(), vec![1.0; n], x)
}

fn edge_lengths(x: &[f64], index: &[i32]) -> Vec<f64> {
    index
        .chunks(4)
        .map(|s| {
            let c = |k: usize| x[s[k] as usize];
            ((c(2) - c(0)).powi(2) + (c(3) - c(1)).powi(2)).sqrt()
        })
        .collect()
}

#[test]
fn sparse_ring_reaches_its_edge_lengths() {
    let rt = runtime();
    let g = ExprGraph::from_text("xa ya xb yb", "L", "norm2(xb - xa, yb - ya) - L").unwrap();
    let mut device = LmSparse::new(&rt, &g, Precision::Auto).unwrap();
    for dense in [256, 0] {
        let opt =
            SparseOptions { dense_max_parameters: dense, block_size: 2, ..Default::default() };
        for on_device in [false, true] {
            let (index, data, mut x) = ring();
            let mut steps: Vec<SparseProgress> = Vec::new();
            let mut record = |p: &SparseProgress| steps.push(*p);
            let report = if on_device {
                device.fit(&opt, &index, &data, &mut x, Some(&mut record)).unwrap()
            } else {
                solve::fit_sparse_host(&g, &opt, &index, &data, &mut x, Some(&mut record)).unwrap()
            };
            let what =
                format!("dense_max_parameters {}, device {}: {:?}", dense, on_device, report);
            assert!(report.status.converged(), "{}", what);
            assert_eq!(report.dense, dense > 0, "{}", what);
            assert!(report.cost < 1e-10 && report.initial_cost > 1e-10, "{}", what);
            let tol = if on_device && device.precision() == Precision::F32 { 1e-4 } else { 1e-6 };
            for (e, l) in edge_lengths(&x, &index).iter().enumerate() {
                assert!((l - 1.0).abs() < tol, "edge {}: {} ({})", e, l, what);
            }
            assert_eq!(steps.last().map(|p| p.iteration), Some(report.iterations), "{}", what);
        }
    }
}

#[test]
fn bad_input_is_an_error_and_the_runtime_stays_usable() {
    let rt = runtime();
    // A malformed text: line, column, what was expected, the line and a caret.
    let e = ExprGraph::from_text("b1 b2", "x", "b1*(1-exp(-b2*x)").unwrap_err();
    assert_eq!(e.status(), Status::InvalidArg);
    assert!(e.message().starts_with("1:17: error: expected ')', found end of input"), "{}", e);
    assert!(e.message().trim_end().ends_with('^'), "{}", e);
    let e = ExprGraph::from_text("b1", "x", "b1*q").unwrap_err();
    assert!(e.message().contains("unknown name 'q'"), "{}", e);
    // A builder's error is kept and reported once; a NUL byte in a name too.
    let mut g = ExprGraph::new().unwrap();
    let a = g.param("a");
    let bad = g.constant(f64::NAN);
    let e = g.binary(ExprOp::Add, a, bad);
    assert!(!e.is_valid());
    assert_eq!(g.output(e).unwrap_err().status(), Status::InvalidArg);
    let mut g = ExprGraph::new().unwrap();
    let p = g.param("a\0b");
    assert!(g.output(p).unwrap_err().message().contains("NUL"));
    // Slices of the wrong length name the argument; the library's checks give its message.
    let g = misra1a_graph();
    let mut lm = Lm::new(&rt, &g, Precision::Auto).unwrap();
    let (rows, data, mut x, _) = misra1a_batch();
    let e = lm.fit(&LmOptions::default(), &rows, &data, &mut x[..3]).unwrap_err();
    assert!(e.message().contains("x has 3 values, expected 2 problems x 2"), "{}", e);
    let e = lm.fit(&LmOptions::default(), &rows, &data[..27], &mut x).unwrap_err();
    assert!(e.message().contains("data has 27 values"), "{}", e);
    let e = lm.fit(&LmOptions::default(), &[0, 14, 7], &data[..14], &mut x).unwrap_err();
    assert!(e.message().contains("rows must not decrease"), "{}", e);
    let e = solve::fit_host(&g, &LmOptions::default(), &[], &[], &mut []).unwrap_err();
    assert!(e.message().contains("rows needs B + 1 offsets"), "{}", e);
    // An index outside the parameters names the instance and slot (host and device).
    let ring_graph =
        ExprGraph::from_text("xa ya xb yb", "", "norm2(xb - xa, yb - ya) - 1").unwrap();
    let (mut index, _, mut xr) = ring();
    index[4 * 5 + 2] = 99;
    let opt = SparseOptions::default();
    let e = solve::fit_sparse_host(&ring_graph, &opt, &index, &[], &mut xr, None).unwrap_err();
    assert!(e.message().contains("instance 5"), "{}", e);
    let mut sparse = LmSparse::new(&rt, &ring_graph, Precision::Auto).unwrap();
    let e = sparse.fit(&opt, &index, &[], &mut xr, None).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArg, "{}", e);
    let e = sparse.fit(&opt, &index[..7], &[], &mut xr, None).unwrap_err();
    assert!(e.message().contains("not a multiple"), "{}", e);
    // A residual that is not finite: Verify naming the instance.
    let root = ExprGraph::from_text("b", "x", "sqrt(x) - b").unwrap();
    let mut res = Residual::new(&rt, &root, Precision::F32).unwrap();
    let d = rt.buffer_from(&[1.0f32, 4.0, -1.0]).unwrap();
    let p = rt.buffer_from(&[1.0f32]).unwrap();
    let i = rt.buffer_from(&[0i32, 0, 0]).unwrap();
    let (r, j) = (rt.buffer::<f32>(3).unwrap(), rt.buffer::<f32>(3).unwrap());
    let e = res
        .evaluate(
            3,
            Some(&d.view(&[3, 1]).unwrap()),
            &i.view(&[3, 1]).unwrap(),
            &p.tensor(),
            &r.view(&[3, 1]).unwrap(),
            &j.view(&[3, 1, 1]).unwrap(),
        )
        .unwrap_err();
    assert_eq!(e.status(), Status::Verify, "{}", e);
    assert!(e.message().contains("instance 2"), "{}", e);
    // A panic in the progress callback comes out after the solve, not through C.
    let (index, data, mut x) = ring();
    let ring_l = ExprGraph::from_text("xa ya xb yb", "L", "norm2(xb - xa, yb - ya) - L").unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut stop = |_: &SparseProgress| panic!("from progress");
        solve::fit_sparse_host(&ring_l, &opt, &index, &data, &mut x, Some(&mut stop))
    }));
    assert!(caught.is_err());
    // Still usable.
    let (rows, data, mut x, _) = misra1a_batch();
    let report = lm.fit(&nist_options(), &rows, &data, &mut x).unwrap();
    assert!(report.status.iter().all(|s| s.converged()), "{}", report.summary());
}
