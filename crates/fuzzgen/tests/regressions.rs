//! Reproducers of bugs the fuzzers found (`tests/fuzz-regressions/*.wir`, each with its
//! `.launch.toml`): each must pass the differential check — the interpreter and the
//! emulator agree after every pipeline, at every warp width and register file.

use std::path::PathBuf;
use warplift_fuzzgen::{check_case, CheckConfig, GeneratedCase};
use warplift_ir::launch::Launch;
use warplift_ir::parser::parse_function;

#[test]
fn fuzz_reproducers_pass_the_differential_check() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fuzz-regressions");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/fuzz-regressions exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wir"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let launch_path = Launch::path_next_to(&path);
        let launch_text = std::fs::read_to_string(&launch_path).unwrap();
        let case = GeneratedCase {
            func: parse_function(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
            launch: Launch::from_toml_str(&launch_text, &launch_path).unwrap(),
            text,
            launch_text,
        };
        if let Err(m) = check_case(&case, &CheckConfig::default()) {
            panic!("{}: {m}", path.display());
        }
    }
}
