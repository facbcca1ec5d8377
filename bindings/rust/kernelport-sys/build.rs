// SPDX-License-Identifier: Apache-2.0
//! Finds libkernelport: `KERNELPORT_DIR` (a CMake build tree or an install prefix), else the
//! `pkg-config` program (no crate: the build machines reach no registry). Refuses headers of
//! another version than the committed bindings, whose struct layouts could differ.
//! Tells dependents' build scripts the library's directory as `DEP_KERNELPORT_LIBDIR`, for an
//! rpath.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Found {
    libdir: PathBuf,
    /// The directory holding `kernelport/kernelport.h`, where the tree has one.
    includedir: Option<PathBuf>,
}

fn main() {
    println!("cargo:rerun-if-env-changed=KERNELPORT_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_LIBDIR");
    println!("cargo:rerun-if-changed=src/bindings.rs");
    let found = match env::var_os("KERNELPORT_DIR") {
        // Cargo runs this script in the package's directory, not where cargo was started.
        Some(dir) if Path::new(&dir).is_relative() => {
            Err(format!("KERNELPORT_DIR={}: give an absolute path", Path::new(&dir).display()))
        }
        Some(dir) => from_dir(Path::new(&dir)),
        None => from_pkg_config(),
    }
    .unwrap_or_else(|msg| panic!("kernelport-sys: {}", msg));
    if let Some(inc) = &found.includedir {
        check_header_version(inc);
    }
    println!("cargo:rustc-link-search=native={}", found.libdir.display());
    println!("cargo:rustc-link-lib=dylib=kernelport");
    println!("cargo:libdir={}", found.libdir.display());
}

/// A build tree keeps the library in lib/ and names its source tree in CMakeCache.txt; an install
/// prefix has lib/, lib64/ or lib/<multiarch>/ and include/.
fn from_dir(dir: &Path) -> Result<Found, String> {
    let mut candidates = vec![dir.join("lib"), dir.join("lib64")];
    if let Ok(entries) = fs::read_dir(dir.join("lib")) {
        candidates.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
    }
    let libdir =
        candidates.iter().find(|d| d.join("libkernelport.so").exists()).cloned().ok_or_else(
            || {
                format!(
                    "KERNELPORT_DIR={}: no libkernelport.so in lib/, lib64/ or lib/<multiarch>/ \
                 (build Kernelport there, or install it with cmake --install)",
                    dir.display()
                )
            },
        )?;
    let includedir = if dir.join("include/kernelport/kernelport.h").exists() {
        Some(dir.join("include"))
    } else {
        cmake_source_dir(dir).map(|s| s.join("include"))
    };
    Ok(Found { libdir, includedir })
}

fn cmake_source_dir(build: &Path) -> Option<PathBuf> {
    let cache = fs::read_to_string(build.join("CMakeCache.txt")).ok()?;
    cache.lines().find_map(|l| l.strip_prefix("Kernelport_SOURCE_DIR:STATIC=")).map(PathBuf::from)
}

fn from_pkg_config() -> Result<Found, String> {
    let var = |name: &str| -> Result<String, String> {
        let out = Command::new("pkg-config")
            .args(["--variable", name, "kernelport"])
            .output()
            .map_err(|e| format!("cannot run pkg-config ({}); set KERNELPORT_DIR", e))?;
        if !out.status.success() {
            let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
            return Err(format!(
                "pkg-config found no kernelport{}; set KERNELPORT_DIR to a Kernelport build or \
                 install tree, or PKG_CONFIG_PATH to <prefix>/lib/pkgconfig",
                if why.is_empty() { String::new() } else { format!(" ({})", why) }
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let libdir = PathBuf::from(var("libdir")?);
    let includedir = PathBuf::from(var("includedir")?);
    Ok(Found { libdir, includedir: Some(includedir) })
}

/// "0.1" of `KP_VERSION_STRING "0.1.0"` in `text` (a C header or the generated bindings).
fn major_minor(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.contains("KP_VERSION_STRING"))?;
    let version = line.split('"').nth(1)?.trim_end_matches("\\0");
    let mut parts = version.split('.');
    Some(format!("{}.{}", parts.next()?, parts.next()?))
}

fn check_header_version(includedir: &Path) {
    let header = includedir.join("kernelport/kernelport.h");
    println!("cargo:rerun-if-changed={}", header.display());
    println!("cargo:include={}", includedir.display());
    let c = match fs::read_to_string(&header) {
        Ok(text) => major_minor(&text),
        Err(_) => return,
    };
    let rust = major_minor(include_str!("src/bindings.rs"));
    if c != rust {
        panic!(
            "kernelport-sys: {} is version {}, the committed bindings {}: run \
             bindings/rust/kernelport-sys/regenerate.sh (the struct layouts may differ)",
            header.display(),
            c.unwrap_or_default(),
            rust.unwrap_or_default()
        );
    }
}
