//! `warplift verify`: parses and verifies a file's kernels.

use crate::source;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

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
            "%{}: ok ({} blocks, {} instructions)",
            f.name,
            f.layout.num_blocks(),
            f.num_placed_insts()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
