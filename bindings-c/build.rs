//! The shared library is installed as libzklock.so.<version> and answers to its soname
//! libzklock.so.0 (the ABI's major version: bump it with an incompatible change of zklock.h).
//! It exports the zklock_* functions only (libzklock.map).
fn main() {
    let map = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("libzklock.map");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libzklock.so.0");
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        map.display()
    );
    // The linker gives the __start_/__stop_ bounds of named sections (a dependency's linkme
    // registry) default visibility, which no version script can hide; this option can.
    // zig cc (the linker of make dist's manylinux2014 build) refuses this option; there the
    // bounds stay exported, with protected visibility (docs/packaging.md).
    if !zig_links() {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,start-stop-visibility=hidden");
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=libzklock.map");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
}

/// Whether the linker is cargo-zigbuild's wrapper around `zig cc` (cargo zigbuild, maturin --zig).
fn zig_links() -> bool {
    std::env::var("RUSTC_LINKER").is_ok_and(|l| l.contains("zigcc"))
}
