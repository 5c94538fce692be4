//! `warplift divergence` against the divergence filetests: every `tests/divergence/NAME.wir`
//! (a `; test divergence` filetest, run through the library by `warplift-filetests`)
//! holds a kernel of one shape (loops with divergent exits, nested loops, irreducible
//! cycles, joins of uniform values, constant block parameters) followed by the analysis's
//! expected output for each target, as comment lines after a
//! `; expect divergence --target T` line:
//!
//! ```text
//! ; test divergence
//! kernel %k(...) { ... }
//!
//! ; expect divergence --target simt
//! ; kernel %k (reconvergence: ipdom)
//! ; ...
//! ; expect divergence --target ptx
//! ; ...
//! ```
//!
//! Here the command-line tool must print exactly the same. When the analysis changes on
//! purpose, rerun with `WARPLIFT_BLESS=1 cargo test -p warplift-filetests` to rewrite the
//! expectations, and review the diff.

use std::path::{Path, PathBuf};
use std::process::Command;
use warplift_filetests::{check_expectations, Walk};

/// The targets every file is checked for, in the order their expectations appear.
const TARGETS: [&str; 2] = ["simt", "ptx"];

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/divergence")
}

fn actual(path: &Path, target: &str) -> Result<String, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_warplift"))
        .args(["divergence", "--target", target])
        .arg(path)
        .output()
        .map_err(|e| format!("the warplift binary does not run: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    String::from_utf8(out.stdout).map_err(|e| e.to_string())
}

#[test]
fn divergence_filetests() {
    Walk::dir("tests/divergence").at_least(5).run(|file| {
        let outputs = TARGETS
            .iter()
            .map(|t| Ok((format!("divergence --target {t}"), actual(&file.path, t)?)))
            .collect::<Result<Vec<_>, String>>()?;
        check_expectations(&file.path, &file.text, &outputs).map_err(|failures| {
            failures
                .into_iter()
                .map(|f| f.message)
                .collect::<Vec<_>>()
                .join("\n")
        })
    });
}

#[test]
fn bad_arguments_are_clear_errors() {
    let file = dir().join("nested_loops.wir");
    for (args, needle) in [
        (vec!["--target", "gpu"], "unknown target `gpu`"),
        (vec!["--kernel", "nope"], "has no kernel %nope"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_warplift"))
            .arg("divergence")
            .args(&args)
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
    // One kernel by name, and a triple for the target.
    let out = Command::new(env!("CARGO_BIN_EXE_warplift"))
        .args(["divergence", "--kernel", "%nested_loops", "--target"])
        .arg("nvptx64-nvidia-cuda")
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout)
        .starts_with("kernel %nested_loops (reconvergence: independent)\n"));
}
