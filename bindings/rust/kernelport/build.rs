// SPDX-License-Identifier: Apache-2.0
//! The crate's own tests and examples run against the library kernelport-sys found, wherever it
//! is: an rpath to its directory, so neither `cargo test` nor `cargo run --example` needs
//! LD_LIBRARY_PATH. (An application of its own sets its rpath, or LD_LIBRARY_PATH, the same way.)

fn main() {
    if let Ok(libdir) = std::env::var("DEP_KERNELPORT_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", libdir);
    }
}
