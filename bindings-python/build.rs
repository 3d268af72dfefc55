//! Windows (the GNU ABI, linked by zig in `make dist`): a .def naming the one symbol CPython
//! looks up in the module, PyInit__zklock. zig ignores rustc's own .def and would otherwise
//! export every symbol of the DLL; maturin's `--zig` writes one for a mixed project's module
//! under its dotted name (PyInit_zklock._zklock, a symbol nothing defines), so scripts/dist.sh
//! links the Windows wheel through zig without `--zig` and this .def does the job instead.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let cfg = |name: &str| std::env::var(format!("CARGO_CFG_TARGET_{name}")).unwrap_or_default();
    if cfg("OS") == "windows" && cfg("ENV") == "gnu" {
        let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
        let def = out.join("zklock_python.def");
        std::fs::write(&def, "EXPORTS\n  PyInit__zklock\n").expect("write zklock_python.def");
        println!("cargo:rustc-cdylib-link-arg={}", def.display());
    }
}
