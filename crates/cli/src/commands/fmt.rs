//! `warplift fmt`: prints a file's kernels in canonical text form.

use crate::source;
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `warplift fmt`.
#[derive(Args)]
pub struct FmtArgs {
    /// The .wir file.
    file: PathBuf,
    /// Rewrite the file in place instead of printing.
    #[arg(short, long)]
    write: bool,
    /// Print nothing; exit with 1 when the file is not in canonical form.
    #[arg(long, conflicts_with = "write")]
    check: bool,
}

/// Runs `warplift fmt`.
pub fn run(args: &FmtArgs) -> Result<ExitCode> {
    let text = source::read_text(&args.file)?;
    let funcs = source::parse_file(&args.file)?;
    let canonical = funcs
        .iter()
        .map(|f| f.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    if args.check {
        if canonical == text {
            return Ok(ExitCode::SUCCESS);
        }
        eprintln!("{} is not in canonical form", args.file.display());
        return Ok(ExitCode::FAILURE);
    }
    if args.write {
        std::fs::write(&args.file, canonical)
            .with_context(|| format!("cannot write {}", args.file.display()))?;
    } else {
        crate::output::out!("{canonical}")?;
    }
    Ok(ExitCode::SUCCESS)
}
