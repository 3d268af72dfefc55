//! The shared library answers to `libzklock.so`, the name it is installed and linked under.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libzklock.so");
    println!("cargo:rerun-if-changed=build.rs");
}
