//! Reproducers of bugs the fuzzers found (`tests/fuzz-regressions/*.wir`, each with its
//! `.launch.toml`): each must pass the differential check — the interpreter and the
//! emulator agree after every pipeline, at every warp width and register file.

use warplift_filetests::Walk;
use warplift_fuzzgen::{check_case, CheckConfig, GeneratedCase};
use warplift_ir::launch::Launch;
use warplift_ir::parser::parse_function;

#[test]
fn fuzz_reproducers_pass_the_differential_check() {
    Walk::dir("tests/fuzz-regressions").run(|file| {
        let launch_path = file.launch_path();
        let launch_text = std::fs::read_to_string(&launch_path).map_err(|e| e.to_string())?;
        let case = GeneratedCase {
            func: parse_function(&file.text).map_err(|e| e.to_string())?,
            launch: Launch::from_toml_str(&launch_text, &launch_path).map_err(|e| e.to_string())?,
            text: file.text.clone(),
            launch_text,
        };
        check_case(&case, &CheckConfig::default()).map_err(|m| m.to_string())
    });
}
