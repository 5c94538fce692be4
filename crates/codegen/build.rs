//! Compiles the lowering rules (`isle/*.isle` at the repository root) into Rust with the
//! ISLE compiler; `src/lower/isle.rs` includes the result from `OUT_DIR`.

use cranelift_isle::codegen::{CodegenOptions, Prefix};
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let isle_dir = manifest.join("../../isle");
    // The prelude first: it declares the types the rules use.
    let inputs = [isle_dir.join("prelude.isle"), isle_dir.join("lower.isle")];
    for input in &inputs {
        println!("cargo:rerun-if-changed={}", input.display());
    }
    let options = CodegenOptions {
        exclude_global_allow_pragmas: true,
        prefixes: vec![Prefix {
            prefix: isle_dir.display().to_string(),
            name: "isle".to_string(),
        }],
        ..Default::default()
    };
    match cranelift_isle::compile::from_files(&inputs, &options) {
        Ok(code) => {
            std::fs::write(out_dir.join("isle_lower.rs"), code).expect("write isle_lower.rs");
        }
        Err(errors) => {
            eprintln!("ISLE compilation failed:\n{errors}");
            std::process::exit(1);
        }
    }
}
