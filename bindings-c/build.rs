//! The shared library's name and exports, by the target's object format (issue 36):
//!
//! - ELF (Linux, and any other Unix but Apple's): installed as libzklock.so.<version>, it answers
//!   to its soname libzklock.so.0 (the ABI's major version: bump it with an incompatible change
//!   of zklock.h), and exports the zklock_* functions only (libzklock.map: without it the linker
//!   also exports the __start_/__stop_ section bounds of a dependency's `linkme` registry).
//! - Mach-O (macOS): the install name @rpath/libzklock.0.dylib, the soname's counterpart (same
//!   major version, so a program linked against ABI 0 never loads an incompatible library).
//!   No exported-symbols list: rustc already passes the linker its own, the cdylib's
//!   `#[no_mangle]` items (the zklock_* functions), and lists given beside it add to it rather
//!   than narrow it (ld64 and lld alike); the section bounds libzklock.map hides are ELF's
//!   (Mach-O's `section$start$…` are resolved at link time, never exported). `make test-dist`
//!   checks the exports (`nm -gU`: `_zklock_*` only).
//! - PE (Windows, the GNU ABI): a zklock.def written here, listing the functions
//!   include/zklock.h declares. rustc writes a .def of its own with the same `#[no_mangle]`
//!   items, but zig (make dist's linker) ignores it and then exports every symbol of the DLL
//!   (4,000 Rust symbols besides the 57 functions); a .def given as an input file it obeys.
//!   `make test-dist` checks that zklock.dll exports exactly zklock.h's functions.
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=libzklock.map");
    let cfg = |name: &str| std::env::var(format!("CARGO_CFG_TARGET_{name}")).unwrap_or_default();
    let apple = cfg("VENDOR") == "apple";
    let unix = cfg("FAMILY").split(',').any(|f| f == "unix");
    if unix && !apple {
        let map = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("libzklock.map");
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libzklock.so.0");
        println!(
            "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
            map.display()
        );
    } else if apple && cfg("OS") == "macos" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-install_name,@rpath/libzklock.0.dylib");
    } else if cfg("OS") == "windows" && cfg("ENV") == "gnu" {
        let header = Path::new(env!("CARGO_MANIFEST_DIR")).join("../include/zklock.h");
        println!("cargo:rerun-if-changed={}", header.display());
        let text = std::fs::read_to_string(&header).expect("include/zklock.h");
        let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
        let def = out.join("zklock.def");
        let mut lines = String::from("EXPORTS\n");
        for name in declared_functions(&text) {
            lines.push_str(&format!("  {name}\n"));
        }
        std::fs::write(&def, lines).expect("write zklock.def");
        println!("cargo:rustc-cdylib-link-arg={}", def.display());
    }
}

/// The names `zklock_…(` in the header, each once, in order: its function declarations (the
/// header's comments only name functions it declares).
fn declared_functions(header: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let bytes = header.as_bytes();
    let mut i = 0;
    while let Some(at) = header[i..].find("zklock_") {
        let start = i + at;
        let mut end = start;
        while end < bytes.len()
            && (bytes[end].is_ascii_lowercase()
                || bytes[end].is_ascii_digit()
                || bytes[end] == b'_')
        {
            end += 1;
        }
        let boundary =
            start == 0 || !(bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        if boundary
            && bytes.get(end) == Some(&b'(')
            && !names.iter().any(|n| n == &header[start..end])
        {
            names.push(header[start..end].to_string());
        }
        i = end.max(start + 1);
    }
    names
}
