fn main() {
    napi_build::setup();
    // Export what Node looks up only: the linker would also export the __start_/__stop_ bounds
    // of a dependency's linkme section. zig cc (the linker of make dist's manylinux2014 build)
    // refuses this option; there the bounds stay exported, with protected visibility
    // (docs/packaging.md).
    if !zig_links() {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,start-stop-visibility=hidden");
    }
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
}

/// Whether the linker is cargo-zigbuild's wrapper around `zig cc` (cargo zigbuild, maturin --zig).
fn zig_links() -> bool {
    std::env::var("RUSTC_LINKER").is_ok_and(|l| l.contains("zigcc"))
}
