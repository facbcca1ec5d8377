// SPDX-License-Identifier: Apache-2.0
//! Verifies kernels against their host references, as `kernelport verify` does: one line per
//! kernel as it finishes (on stderr), the comparisons as a table or, with --json, as JSON lines.
//!   cargo run --example verify -- [PATTERN] [--json]     (PATTERN: "gru", "tensor.soft*")

use std::process::ExitCode;

use kernelport::{Result, Runtime, Verification};

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn print(v: &Verification, json: bool) {
    for r in &v.results {
        if json {
            println!(
                "{{\"kernel\": {}, \"size\": {}, \"output\": {}, \"elements\": {}, \
                 \"max_abs_err\": {:e}, \"max_rel_err\": {:e}, \"atol\": {:e}, \"rtol\": {:e}, \
                 \"failures\": {}, \"passed\": {}}}",
                json_string(&r.kernel),
                json_string(&r.size),
                json_string(&r.output),
                r.elements,
                r.max_abs_err,
                r.max_rel_err,
                r.atol,
                r.rtol,
                r.failures,
                r.passed
            );
        } else {
            println!(
                "{:<28} {:<16} {:<12} {:>9} max abs {:.2e} (atol {:.1e}) {}",
                r.kernel,
                r.size,
                r.output,
                r.elements,
                r.max_abs_err,
                r.atol,
                if r.passed { "ok" } else { "FAILED" }
            );
        }
    }
}

fn run(pattern: &str, json: bool) -> Result<bool> {
    let rt = Runtime::new()?;
    let dev = rt.device()?;
    eprintln!("device: {} ({})", dev.name, dev.vendor);
    let kernels: Vec<_> =
        rt.kernels().into_iter().filter(|k| kernelport::name_matches(pattern, &k.name())).collect();
    let mut all = true;
    for (i, k) in kernels.iter().enumerate() {
        let name = k.name();
        eprint!("[{}/{}] {} ... ", i + 1, kernels.len(), name);
        if k.supported().is_err() || k.sample_sizes(false).is_empty() {
            eprintln!("skipped (not on this device, or no samples)");
            continue;
        }
        match k.verify(None, 1) {
            Ok(v) => {
                eprintln!("{}", if v.passed { "ok" } else { "FAILED" });
                all &= v.passed;
                print(&v, json);
            }
            Err(e) => {
                eprintln!("error: {}", e);
                all = false;
            }
        }
    }
    Ok(all)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|a| a == "--json");
    let pattern = args.iter().find(|a| !a.starts_with("--")).map_or("example", |s| s.as_str());
    match run(pattern, json) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("verify: {}", e);
            ExitCode::FAILURE
        }
    }
}
