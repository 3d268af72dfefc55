fn main() {
    // Export PyInit__zklock only: the linker would also export the __start_/__stop_ bounds of a
    // dependency's linkme section. zig cc (maturin --zig, make dist's manylinux2014 build)
    // refuses this option; there the bounds stay exported, with protected visibility
    // (docs/packaging.md).
    if !zig_links() {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,start-stop-visibility=hidden");
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
}

/// Whether the linker is cargo-zigbuild's wrapper around `zig cc` (maturin --zig).
fn zig_links() -> bool {
    std::env::var("RUSTC_LINKER").is_ok_and(|l| l.contains("zigcc"))
}
