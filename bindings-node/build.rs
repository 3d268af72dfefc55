//! napi's setup, and on Windows (the GNU ABI, linked by zig in `make dist`) a .def naming the
//! one symbol Node looks up in an addon, napi_register_module_v1: zig ignores rustc's own .def
//! and would otherwise export every symbol of the DLL.
fn main() {
    napi_build::setup();
    let cfg = |name: &str| std::env::var(format!("CARGO_CFG_TARGET_{name}")).unwrap_or_default();
    if cfg("OS") == "windows" && cfg("ENV") == "gnu" {
        let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
        let def = out.join("zklock_node.def");
        std::fs::write(&def, "EXPORTS\n  napi_register_module_v1\n")
            .expect("write zklock_node.def");
        println!("cargo:rustc-cdylib-link-arg={}", def.display());
    }
}
