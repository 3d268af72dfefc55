fn main() {
    napi_build::setup();
    // Export what Node looks up only: the linker would also export the __start_/__stop_ bounds
    // of a dependency's linkme section.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,start-stop-visibility=hidden");
}
