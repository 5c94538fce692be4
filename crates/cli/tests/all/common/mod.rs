//! What the command-line tests share: running the `warplift` binary from the repository
//! root and reading what it printed.

#![allow(dead_code)] // each test file uses its own share of the helpers

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `warplift ARGS` in the repository root (where the corpus paths of the tests
/// resolve).
pub fn warplift(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_warplift"))
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("the warplift binary runs")
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// What the command printed on standard output.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// What the command printed on standard error.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The standard output of a command that must succeed (its standard error otherwise).
pub fn ok(o: &Output) -> String {
    assert!(o.status.success(), "stderr: {}", stderr(o));
    stdout(o)
}

/// The JSON `warplift ARGS` prints; the command must succeed.
pub fn json(args: &[&str]) -> serde_json::Value {
    let o = warplift(args);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("JSON output")
}
