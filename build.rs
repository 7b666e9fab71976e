//! Registers every agent adapter found under `adapters/`.
//!
//! Each folder `adapters/<name>/` with a `mod.rs` that defines `pub static ADAPTER` becomes a
//! module of the library, so that adding a third agent means adding one folder and nothing else.
use std::{env, fs, path::PathBuf};

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("adapters");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut names: Vec<String> = fs::read_dir(&root)
        .expect("adapters/ folder")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("mod.rs").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut out = String::new();
    for name in &names {
        let path = root.join(name).join("mod.rs");
        println!("cargo:rerun-if-changed={}", path.display());
        out.push_str(&format!(
            "#[path = {:?}]\npub mod {};\n",
            path.display().to_string(),
            name
        ));
    }
    out.push_str("static REGISTRY: &[&dyn crate::adapter::Adapter] = &[");
    for name in &names {
        out.push_str(&format!("&{name}::ADAPTER, "));
    }
    out.push_str("];\n/// Every adapter, in a stable order.\npub fn registry() -> &'static [&'static dyn crate::adapter::Adapter] {\n    REGISTRY\n}\n");
    fs::write(
        PathBuf::from(env::var("OUT_DIR").unwrap()).join("adapters.rs"),
        out,
    )
    .unwrap();
}
