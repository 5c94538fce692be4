//! Malformed kernels: every `tests/malformed/*.wir` must be rejected, by the parser or the
//! verifier, with one specific error.
//!
//! The first line of each file is `; error: LINE:COL: TEXT`: parsing and then verifying
//! the file must fail, and the message (for the verifier, one of the lines it reports) must
//! contain `LINE:COL: TEXT`. The position is part of the check, so an error reported at
//! the wrong place, or a different error, fails the test. Neither stage may panic: a panic
//! becomes a failure naming the file.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use warplift::ir::parser::parse_functions;
use warplift::ir::verifier::verify_function;

/// The fewest malformed inputs the suite may hold.
const MIN_FILES: usize = 24;

fn malformed_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/malformed");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("tests/malformed exists")
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "wir"))
        .collect();
    files.sort();
    files
}

/// The expected error of a file: the text after `; error: ` on its first line.
fn expected_error(text: &str) -> Option<&str> {
    text.lines()
        .next()?
        .strip_prefix("; error: ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// Parses and verifies `text`; returns the error messages, empty when the text is valid.
fn errors_of(text: &str) -> Vec<String> {
    match parse_functions(text) {
        Err(e) => vec![e.to_string()],
        Ok(funcs) => funcs
            .iter()
            .filter_map(|f| verify_function(f).err())
            .flat_map(|errs| errs.0.into_iter().map(|e| e.to_string()))
            .collect(),
    }
}

#[test]
fn malformed_inputs_fail_with_their_expected_error() {
    let files = malformed_files();
    assert!(
        files.len() >= MIN_FILES,
        "{} malformed inputs, fewer than {MIN_FILES}",
        files.len()
    );
    let mut failures = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(path).expect("readable file");
        let Some(want) = expected_error(&text) else {
            failures.push(format!(
                "{name}: the first line is not `; error: LINE:COL: TEXT`"
            ));
            continue;
        };
        match catch_unwind(AssertUnwindSafe(|| errors_of(&text))) {
            Err(_) => failures.push(format!("{name}: parsing or verifying panicked")),
            Ok(errors) if errors.is_empty() => {
                failures.push(format!("{name}: accepted, expected `{want}`"))
            }
            Ok(errors) => {
                if !errors.iter().any(|e| e.contains(want)) {
                    failures.push(format!(
                        "{name}: expected `{want}`, got:\n    {}",
                        errors.join("\n    ")
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn expected_errors_name_a_position() {
    // `LINE:COL:` with a line within the file (one past the end for end-of-input errors).
    for path in malformed_files() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let want = expected_error(&text).unwrap_or("");
        let mut parts = want.splitn(3, ':');
        let line: Option<usize> = parts.next().and_then(|l| l.parse().ok());
        let col: Option<usize> = parts.next().and_then(|c| c.parse().ok());
        let lines = text.lines().count();
        assert!(
            matches!((line, col), (Some(l), Some(c)) if l >= 1 && l <= lines + 1 && c >= 1),
            "{name}: `{want}` does not start with a position within the file"
        );
    }
}
