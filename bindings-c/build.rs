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
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=libzklock.map");
}
