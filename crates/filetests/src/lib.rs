//! warplift's filetest runner, in the manner of Cranelift's `cranelift/filetests`.
//!
//! A filetest is a `.wir` file whose leading comment block names what to do with its
//! kernels, and whose trailing comment blocks hold the output it must produce:
//!
//! ```text
//! ; A divergent branch in a loop.            <- documentation: any other comment
//! ; test run                                  <- emulator at warp widths 1, 7, 32, 64
//! ; test run passes=linearize linearize_opt=3 <- again, after another pipeline
//! ; test compile                              <- the final machine IR, checked exactly
//! ; set verify=true                           <- a setting for every command of the file
//! kernel %k(n: i32) { ... }
//!
//! ; expect compile --target simt
//! ; kernel %k ...
//! ```
//!
//! The test kinds ([`TestKind`]):
//!
//! | header               | checks                                                           |
//! |----------------------|------------------------------------------------------------------|
//! | `test interpret`     | the reference interpreter runs the launch file's launch at every width to its `[expect]` values, the same memory at every width unless the kernel reads `lane_id` |
//! | `test run`           | the emulator, after the command's pipeline, leaves the interpreter's memory (or both fault) at warp widths 1, 7, 32 and 64 |
//! | `test compile`       | the final machine IR (`target=simt`, the default) or the PTX text (`target=ptx`) equals the file's `; expect compile --target T` block |
//! | `test divergence`    | the divergence analysis, as `warplift divergence` prints it, equals the `; expect divergence --target T` blocks (both targets unless `target=` names one) |
//! | `test verify`        | the file parses; it verifies, or, where `; error: LINE:COL: TEXT` lines say so, fails verification with each of them |
//! | `test parse-error`   | parsing fails with the `; error: LINE:COL: TEXT` of the header |
//!
//! `name=value` words after the kind, and `; set name=value` lines (for every command of
//! the file), are code-generation settings (see `warplift_codegen::Settings`); `passes=`
//! chooses the pass pipeline. `widths=1,4,32` restricts `test run` and `test interpret`
//! to other warp widths, and `target=` chooses the target of `test compile` and
//! `test divergence`. A `test run` or `test interpret` kernel is launched as the
//! `NAME.launch.toml` next to the `.wir` file describes.
//!
//! Expected output is written by the runner: with `WARPLIFT_BLESS=1` in the environment,
//! every mismatching file is rewritten with the output the code produces now (review the
//! diff). Without it a mismatch fails, naming the file, the line of the expectation and
//! the first differing line.
//!
//! Two entry points:
//! - [`run_filetests`] runs the header commands of every `.wir` file of some directories
//!   (files without a header are skipped), in parallel over files.
//! - [`Walk`] walks a directory of kernels (the corpus in `tests/corpus` above all) and
//!   runs a test's own check on every file, in parallel over files, collecting every
//!   failure with its file name. The corpus kernels carry no header: each test that walks
//!   them says what it checks, and a kernel added to the directory is picked up by all.

mod expect;
mod file;
mod runner;
mod subtest;
mod walk;

pub use expect::{bless_requested, check_expectations, Expectation, BLESS_VAR};
pub use file::{Command, Header, TestFile, TestKind};
pub use runner::{run_filetests, FiletestSummary};
pub use subtest::run::{compile, emulate, References, WIDTHS};
pub use walk::{repo_root, Walk};

/// `.wir` text with every two-way branch's successors named the other way round:
/// `brif c, T, E` becomes `vN = bnot c` and `brif vN, E, T` (`N` counting up from
/// 10000), the same program, so that a test can hold a transformation to giving the
/// same result whichever successor a branch names first. `None` when the text has no
/// `brif`.
pub fn with_branch_successors_swapped(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut fresh = 10_000;
    for line in text.lines() {
        let code = line.split(';').next().unwrap_or("");
        let Some(rest) = code.trim_start().strip_prefix("brif ") else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let indent = &code[..code.len() - code.trim_start().len()];
        let (cond, dests) = rest.split_once(", ")?;
        // The first destination ends at the first comma outside its argument list.
        let mut depth = 0;
        let cut = dests.char_indices().find_map(|(i, c)| {
            depth += i32::from(c == '(') - i32::from(c == ')');
            (c == ',' && depth == 0).then_some(i)
        })?;
        let (then, other) = (dests[..cut].trim(), dests[cut + 1..].trim());
        out.push_str(&format!("{indent}v{fresh} = bnot {cond}\n"));
        out.push_str(&format!("{indent}brif v{fresh}, {other}, {then}\n"));
        fresh += 1;
    }
    (fresh > 10_000).then_some(out)
}

/// A failure of one check: a message, and the line of the file it concerns if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The 1-based line of the file the failure is about, if it is about one.
    pub line: Option<usize>,
    /// What went wrong.
    pub message: String,
}

impl Failure {
    /// A failure about the file as a whole.
    pub fn new(message: impl Into<String>) -> Failure {
        Failure {
            line: None,
            message: message.into(),
        }
    }

    /// A failure about line `line` (1-based) of the file.
    pub fn at(line: usize, message: impl Into<String>) -> Failure {
        Failure {
            line: Some(line),
            message: message.into(),
        }
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::new(message)
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Failure {
        Failure::new(message)
    }
}
