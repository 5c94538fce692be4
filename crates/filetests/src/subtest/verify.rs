//! `test verify` and `test parse-error`: which errors the parser and the verifier report.
//!
//! The expected errors are the header's `; error: LINE:COL: TEXT` lines. `test
//! parse-error` wants the parser to fail with a message containing the one expected
//! error; `test verify` wants the parser to succeed and the verifier to report, for each
//! expected error, a message containing it (or, with no `; error:` line, no error at
//! all). The position is part of the text, so an error at the wrong place fails. Neither
//! stage may panic.

use crate::{Command, Failure, TestFile, TestKind};
use std::panic::{catch_unwind, AssertUnwindSafe};
use warplift_ir::parser::parse_functions;
use warplift_ir::verifier::verify_function;

/// Runs one `test verify` or `test parse-error` command of `file`.
pub(crate) fn run_command(file: &TestFile, command: &Command) -> Result<(), Failure> {
    let expected = &file.header.errors;
    for (want, line) in expected {
        check_position(file, want, *line)?;
    }
    let parsed = catch_unwind(AssertUnwindSafe(|| parse_functions(&file.text)))
        .map_err(|_| Failure::at(command.line, "the parser panicked"))?;
    if command.kind == TestKind::ParseError {
        let [(want, line)] = expected.as_slice() else {
            return Err(Failure::at(
                command.line,
                "`test parse-error` needs exactly one `; error: LINE:COL: TEXT` line",
            ));
        };
        return match parsed {
            Ok(_) => Err(Failure::at(*line, format!("parsed, expected `{want}`"))),
            Err(e) if e.to_string().contains(want.as_str()) => Ok(()),
            Err(e) => Err(Failure::at(
                *line,
                format!("expected `{want}`, the parser reports `{e}`"),
            )),
        };
    }
    let funcs = parsed.map_err(|e| Failure::at(command.line, format!("parse error: {e}")))?;
    let errors: Vec<String> = catch_unwind(AssertUnwindSafe(|| {
        funcs
            .iter()
            .filter_map(|f| verify_function(f).err())
            .flat_map(|errs| errs.0.into_iter().map(|e| e.to_string()))
            .collect()
    }))
    .map_err(|_| Failure::at(command.line, "the verifier panicked"))?;
    if expected.is_empty() && !errors.is_empty() {
        return Err(Failure::at(
            command.line,
            format!(
                "the verifier rejects the file:\n    {}",
                errors.join("\n    ")
            ),
        ));
    }
    for (want, line) in expected {
        if errors.is_empty() {
            return Err(Failure::at(*line, format!("verified, expected `{want}`")));
        }
        if !errors.iter().any(|e| e.contains(want.as_str())) {
            return Err(Failure::at(
                *line,
                format!(
                    "expected `{want}`, the verifier reports:\n    {}",
                    errors.join("\n    ")
                ),
            ));
        }
    }
    Ok(())
}

/// An expected error starts with `LINE:COL:`, a position within the file (one past the
/// last line for errors at the end of the input).
fn check_position(file: &TestFile, want: &str, line: usize) -> Result<(), Failure> {
    let mut parts = want.splitn(3, ':');
    let l: Option<usize> = parts.next().and_then(|l| l.trim().parse().ok());
    let c: Option<usize> = parts.next().and_then(|c| c.trim().parse().ok());
    let lines = file.text.lines().count();
    match (l, c) {
        (Some(l), Some(c)) if l >= 1 && l <= lines + 1 && c >= 1 => Ok(()),
        _ => Err(Failure::at(
            line,
            format!("`{want}` does not start with a position `LINE:COL:` within the file"),
        )),
    }
}
