//! The header-driven runner: every `.wir` file of some directories that has `; test`
//! lines is run as they say, in parallel over files, and its expected output compared (or
//! blessed) once all its commands have run.

use crate::expect::check_expectations;
use crate::subtest::{compile, divergence, interpret, run, verify};
use crate::walk::{format_failure, panic_message, repo_root, Walk};
use crate::{Failure, TestFile, TestKind};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What [`run_filetests`] ran.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FiletestSummary {
    /// Files with a header, run.
    pub files: usize,
    /// Files without a `; test` line, skipped.
    pub skipped: usize,
    /// Commands run, by kind.
    pub commands: BTreeMap<&'static str, usize>,
}

/// Runs the filetests of the directories `dirs` (relative to the repository root).
/// Panics, after every file has run, with one line per failure, naming the file and
/// the line, if any check failed.
pub fn run_filetests(dirs: &[&str]) -> FiletestSummary {
    let mut files = Vec::new();
    for dir in dirs {
        files.extend(Walk::dir(dir).files());
    }
    let outcomes: Vec<Result<Option<TestFile>, Vec<Failure>>> = files
        .par_iter()
        .map(|path| {
            let file = TestFile::load(path).map_err(|f| vec![f])?;
            if file.header.commands.is_empty() {
                return Ok(None);
            }
            match catch_unwind(AssertUnwindSafe(|| run_file(&file))) {
                Ok(Ok(())) => Ok(Some(file)),
                Ok(Err(failures)) => Err(failures),
                Err(payload) => Err(vec![Failure::new(panic_message(&*payload))]),
            }
        })
        .collect();
    let root = repo_root();
    let mut summary = FiletestSummary::default();
    let mut report = Vec::new();
    for (path, outcome) in files.iter().zip(outcomes) {
        match outcome {
            Ok(None) => summary.skipped += 1,
            Ok(Some(file)) => {
                summary.files += 1;
                for c in &file.header.commands {
                    *summary.commands.entry(c.kind.name()).or_default() += 1;
                }
            }
            Err(failures) => {
                let rel = path.strip_prefix(&root).unwrap_or(path);
                report.extend(failures.iter().map(|f| format_failure(rel, f)));
            }
        }
    }
    assert!(
        report.is_empty(),
        "{} filetest failures:\n{}",
        report.len(),
        report.join("\n")
    );
    summary
}

/// Runs every command of `file`, then compares the outputs of those that produce one.
fn run_file(file: &TestFile) -> Result<(), Vec<Failure>> {
    let mut failures = Vec::new();
    let mut outputs = Vec::new();
    for command in &file.header.commands {
        let result = match command.kind {
            TestKind::Interpret => interpret::run_command(file, command),
            TestKind::Run => run::run_command(file, command),
            TestKind::Verify | TestKind::ParseError => verify::run_command(file, command),
            TestKind::Compile => compile::outputs(file, command).map(|o| outputs.extend(o)),
            TestKind::Divergence => divergence::outputs(file, command).map(|o| outputs.extend(o)),
        };
        if let Err(f) = result {
            failures.push(f);
        }
    }
    if failures.is_empty() {
        if let Err(f) = check_expectations(&file.path, &file.text, &outputs) {
            failures.extend(f);
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures)
    }
}
