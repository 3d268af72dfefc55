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
//! - PE (Windows): nothing. rustc writes and passes its own .def of the same `#[no_mangle]`
//!   items, which is exactly what zklock.dll must export. (cargo-zigbuild drops that .def when
//!   zig links, so `make dist` will pass a zklock.def of its own, which also makes the MSVC
//!   import library: the next step of issue 36.)
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
    }
}
