//! `warplift verify`: parses and verifies a file's kernels.

use crate::source;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use warplift_ir::write::count;

/// Arguments of `warplift verify`.
#[derive(Args)]
pub struct VerifyArgs {
    /// The .wir file.
    file: PathBuf,
}

/// Runs `warplift verify`.
pub fn run(args: &VerifyArgs) -> Result<ExitCode> {
    let funcs = source::load_verified(&args.file)?;
    for f in &funcs {
        crate::output::outln!(
            "%{}: ok ({}, {})",
            f.name,
            count(f.layout.num_blocks(), "block"),
            count(f.num_placed_insts(), "instruction")
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
