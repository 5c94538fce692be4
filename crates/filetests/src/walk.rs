//! Walking a directory of kernels: every `.wir` file, in name order, checked in parallel,
//! every failure collected with its file's name.
//!
//! A check is an ordinary closure that may return an error or panic (an `assert!` with a
//! message, as in any test): the walk catches the panic, so one failing kernel neither
//! hides the others' failures nor loses its file's name. Results come back in file order,
//! so a test can sum counts, compare tables or build a golden text after the walk.

use crate::{Failure, TestFile};
use rayon::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use warplift_ir::Function;

/// The repository's root directory.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Which `.wir` files of the directories a walk visits.
#[derive(Clone, Debug)]
pub struct Walk {
    dirs: Vec<PathBuf>,
    launch_only: bool,
    min_files: usize,
}

impl Walk {
    /// The kernel corpus, `tests/corpus`.
    pub fn corpus() -> Walk {
        Walk::dir("tests/corpus")
    }

    /// The `.wir` files of `dir`, relative to the repository root.
    pub fn dir(dir: &str) -> Walk {
        Walk {
            dirs: vec![repo_root().join(dir)],
            launch_only: false,
            min_files: 1,
        }
    }

    /// Adds the `.wir` files of another directory (relative to the repository root).
    pub fn and_dir(mut self, dir: &str) -> Walk {
        self.dirs.push(repo_root().join(dir));
        self
    }

    /// Visits only the files that have a launch file next to them.
    pub fn with_launch(mut self) -> Walk {
        self.launch_only = true;
        self
    }

    /// Fails unless the walk visits at least `n` files (by default one): a walk over an
    /// empty or misnamed directory must not pass by checking nothing.
    pub fn at_least(mut self, n: usize) -> Walk {
        self.min_files = n;
        self
    }

    /// The files the walk visits: each directory's `.wir` files in name order.
    pub fn files(&self) -> Vec<PathBuf> {
        let mut all = Vec::new();
        for dir in &self.dirs {
            let entries = std::fs::read_dir(dir)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
            let mut files: Vec<PathBuf> = entries
                .map(|e| e.expect("readable directory entry").path())
                .filter(|p| p.extension().is_some_and(|e| e == "wir"))
                .filter(|p| {
                    !self.launch_only || warplift_ir::launch::Launch::path_next_to(p).exists()
                })
                .collect();
            files.sort();
            all.extend(files);
        }
        assert!(
            all.len() >= self.min_files,
            "{} hold {} kernel files, fewer than {}",
            self.describe(),
            all.len(),
            self.min_files
        );
        all
    }

    fn describe(&self) -> String {
        let root = repo_root();
        self.dirs
            .iter()
            .map(|d| d.strip_prefix(&root).unwrap_or(d).display().to_string())
            .collect::<Vec<_>>()
            .join(" and ")
    }

    /// Runs `check` on every file, in parallel, and returns the results in file order.
    /// Panics, after every file has been checked, with one line per failing file (its
    /// path, and the line when the failure names one) if any check returned an error or
    /// panicked.
    pub fn run<T, E, F>(&self, check: F) -> Vec<T>
    where
        T: Send,
        E: Into<Failure>,
        F: Fn(&TestFile) -> Result<T, E> + Sync,
    {
        self.results(check)
            .into_iter()
            .map(|r| r.expect("failures were reported"))
            .collect()
    }

    /// Like [`Walk::run`] for a check that asserts and returns its result directly.
    pub fn each<T, F>(&self, check: F) -> Vec<T>
    where
        T: Send,
        F: Fn(&TestFile) -> T + Sync,
    {
        self.run(|f| Ok::<T, Failure>(check(f)))
    }

    /// Runs `check` on every kernel of every file (file name, kernel), in parallel over
    /// files, and returns the results in file and kernel order. A file that does not parse
    /// is a failure.
    pub fn functions<T, F>(&self, check: F) -> Vec<T>
    where
        T: Send,
        F: Fn(&str, Function) -> T + Sync,
    {
        self.run(|file| {
            let funcs = file.functions()?;
            Ok::<_, Failure>(
                funcs
                    .into_iter()
                    .map(|f| check(&file.name, f))
                    .collect::<Vec<T>>(),
            )
        })
        .into_iter()
        .flatten()
        .collect()
    }

    /// Like [`Walk::run`], and also returns each file's name with its result.
    pub fn run_named<T, E, F>(&self, check: F) -> Vec<(String, T)>
    where
        T: Send,
        E: Into<Failure>,
        F: Fn(&TestFile) -> Result<T, E> + Sync,
    {
        self.run(|f| check(f).map(|t| (f.name.clone(), t)))
    }

    fn results<T, E, F>(&self, check: F) -> Vec<Option<T>>
    where
        T: Send,
        E: Into<Failure>,
        F: Fn(&TestFile) -> Result<T, E> + Sync,
    {
        let files = self.files();
        let outcomes: Vec<Result<T, Failure>> = files
            .par_iter()
            .map(|path| {
                let file = TestFile::load(path)?;
                match catch_unwind(AssertUnwindSafe(|| check(&file))) {
                    Ok(result) => result.map_err(Into::into),
                    Err(payload) => Err(Failure::new(panic_message(&*payload))),
                }
            })
            .collect();
        let root = repo_root();
        let mut report = Vec::new();
        let mut results = Vec::with_capacity(outcomes.len());
        for (path, outcome) in files.iter().zip(outcomes) {
            match outcome {
                Ok(t) => results.push(Some(t)),
                Err(f) => {
                    report.push(format_failure(path.strip_prefix(&root).unwrap_or(path), &f));
                    results.push(None);
                }
            }
        }
        assert!(
            report.is_empty(),
            "{} of {} files failed:\n{}",
            report.len(),
            files.len(),
            report.join("\n")
        );
        results
    }
}

/// `path:line: message`, or `path: message` for a failure about the whole file.
pub(crate) fn format_failure(path: &Path, f: &Failure) -> String {
    match f.line {
        Some(line) => format!("{}:{line}: {}", path.display(), f.message),
        None => format!("{}: {}", path.display(), f.message),
    }
}

/// The message of a caught panic.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else if let Some(s) = payload.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else {
        "panicked".to_string()
    }
}
