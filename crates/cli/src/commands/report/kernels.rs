//! One kernel of the report in every column, gathered from the engine's runs.

use std::path::PathBuf;
use warplift_study::measure::{Measured, Outcome};

/// One kernel in every column.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelReport {
    /// The file the kernel comes from.
    pub file: PathBuf,
    /// The kernel's name.
    pub kernel: String,
    /// Whether it was run (it has a launch).
    pub launched: bool,
    /// One entry per column, in column order.
    pub columns: Vec<Measured>,
    /// Per column, the deepest reconvergence stack on the program's CFG (see `ir_stack`:
    /// the IR CFG, or the linearized CFG after a machine pass): `None` when not run.
    pub ir_stack: Vec<Option<Result<u64, String>>>,
}

impl KernelReport {
    /// Every failure and mismatch, one line each (a failure shared by every column, as
    /// the reference run's, once).
    pub fn failures(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .columns
            .iter()
            .filter_map(|m| match &m.outcome {
                Outcome::Mismatch(why) => Some(format!("MISMATCH {why}")),
                Outcome::Failed(why) => Some(why.clone()),
                Outcome::NotRun | Outcome::Ran(_) => match &m.static_ {
                    Err(why) => Some(why.clone()),
                    Ok(_) => None,
                },
            })
            .map(|why| format!("{} %{}: {why}", self.file.display(), self.kernel))
            .collect();
        let mut seen = std::collections::BTreeSet::new();
        lines.retain(|l| seen.insert(l.clone()));
        lines
    }
}
