// SPDX-License-Identifier: Apache-2.0
//! Batched curve fits with the solve layer: FITS noiseless 1D Gaussians (4 parameters, 25 points
//! each, random truths, starts off by up to 20%) solved on the default device in one launch and
//! by the host reference, each checked against its truths; one summary line per solver, or with
//! --json one JSON line each.
//!   cargo run --release --example fit -- [FITS] [--json]      (FITS: default 10000)

use std::process::ExitCode;
use std::time::Instant;

use kernelport::solve::{self, ExprGraph, FitReport, Lm, LmOptions, Precision};
use kernelport::{Result, Runtime};

const POINTS: usize = 25;

/// splitmix64 in [0, 1): reproducible without a crate.
fn uniform(state: &mut u64) -> f64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
}

/// Truths [fits, 4], starts [fits, 4], rows and data [fits * POINTS, 2] (t, y).
fn problems(fits: usize) -> (Vec<f64>, Vec<f64>, Vec<i32>, Vec<f64>) {
    let mut s = 28u64;
    let (mut truth, mut start, mut data) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..fits {
        let lo = [1.0, -0.5, 0.6, -0.2];
        let hi = [3.0, 0.5, 1.2, 0.2];
        let p: Vec<f64> = (0..4).map(|k| lo[k] + (hi[k] - lo[k]) * uniform(&mut s)).collect();
        for k in 0..4 {
            start.push(p[k] * (0.8 + 0.4 * uniform(&mut s)) + [0.0, 0.1, 0.0, 0.05][k]);
        }
        for i in 0..POINTS {
            let t = -3.0 + 6.0 * i as f64 / (POINTS - 1) as f64;
            data.push(t);
            data.push(p[0] * (-(t - p[1]).powi(2) / (2.0 * p[2] * p[2])).exp() + p[3]);
        }
        truth.extend(p);
    }
    let rows = (0..=fits).map(|b| (b * POINTS) as i32).collect();
    (truth, start, rows, data)
}

fn print(name: &str, precision: &str, r: &FitReport, seconds: f64, err: f64, json: bool) {
    let fits = r.status.len();
    if json {
        println!(
            "{{\"solver\": \"{}\", \"precision\": \"{}\", \"fits\": {}, \"converged\": {}, \
             \"seconds\": {:e}, \"fits_per_s\": {:e}, \"max_param_error\": {:e}}}",
            name,
            precision,
            fits,
            r.converged(),
            seconds,
            fits as f64 / seconds,
            err
        );
    } else {
        println!(
            "{:<8} {:<4} {:>9.3e} fits/s  max |x - truth| {:.1e}  {}",
            name,
            precision,
            fits as f64 / seconds,
            err,
            r.summary()
        );
    }
}

fn run(fits: usize, json: bool) -> Result<bool> {
    let g = ExprGraph::from_text("a mu s c", "t y", "a*exp(-(t-mu)^2/(2*s^2)) + c - y")?;
    let (truth, start, rows, data) = problems(fits);
    let opt = LmOptions { function_tolerance: 1e-12, ..LmOptions::default() };
    let max_err = |x: &[f64]| x.iter().zip(&truth).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);

    let rt = Runtime::new()?;
    let dev = rt.device()?;
    eprintln!("device: {} ({} {})", dev.name, dev.vendor, dev.device_type);
    let mut lm = Lm::new(&rt, &g, Precision::Auto)?;
    // The first solve builds the kernel (seconds on PoCL): warm it up on one problem.
    let mut x1 = start[..4].to_vec();
    lm.fit(&opt, &rows[..2], &data[..2 * POINTS], &mut x1)?;

    let mut x = start.clone();
    let t = Instant::now();
    let device = lm.fit(&opt, &rows, &data, &mut x)?;
    let device_err = max_err(&x);
    print("device", lm.precision().name(), &device, t.elapsed().as_secs_f64(), device_err, json);

    let mut x = start;
    let t = Instant::now();
    let host = solve::fit_host(&g, &opt, &rows, &data, &mut x)?;
    print("host", "f64", &host, t.elapsed().as_secs_f64(), max_err(&x), json);
    Ok(device.converged() == fits && host.converged() == fits)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|a| a == "--json");
    let fits = match args.iter().find(|a| !a.starts_with("--")).map(|a| a.parse::<usize>()) {
        None => 10_000,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("usage: fit [FITS] [--json]");
            return ExitCode::from(2);
        }
    };
    match run(fits, json) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("fit: not every problem converged");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("fit: {}", e);
            ExitCode::FAILURE
        }
    }
}
