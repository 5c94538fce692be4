//! Runs the repository's header-driven filetests: `tests/filetests` (one file per feature
//! of the format, and the kernels whose compiled code is pinned) and `tests/divergence`
//! (the divergence analysis's expected output). `WARPLIFT_BLESS=1` rewrites the expected
//! output of both.

use warplift_filetests::run_filetests;

#[test]
fn filetests() {
    let summary = run_filetests(&["tests/filetests"]);
    assert_eq!(
        summary.skipped, 0,
        "files without a `; test` line: {summary:?}"
    );
    for kind in ["interpret", "run", "compile", "verify"] {
        assert!(
            summary.commands.contains_key(kind),
            "no `test {kind}` file: {summary:?}"
        );
    }
}

#[test]
fn divergence_filetests() {
    let summary = run_filetests(&["tests/divergence"]);
    assert_eq!(
        summary.skipped, 0,
        "files without a `; test` line: {summary:?}"
    );
    assert!(
        summary.files >= 5,
        "only {} divergence filetests",
        summary.files
    );
}
