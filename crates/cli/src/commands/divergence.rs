//! `warplift divergence`: the divergence analysis of a file's kernels, as the code
//! generator sees it for a target — every value and conditional branch with its
//! uniform/divergent flag and, for divergent ones, the reason (the stable text format of
//! `warplift_ir::divergence::DivergenceDisplay`, documented in docs/divergence.md).

use crate::source;
use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use warplift_codegen::{lookup_by_name, Settings};
use warplift_ir::divergence::Divergence;

/// Arguments of `warplift divergence`.
#[derive(Args)]
pub struct DivergenceArgs {
    /// The .wir file.
    file: PathBuf,
    /// The target whose reconvergence model to assume: `simt` (immediate post-dominators)
    /// or `ptx` (independent thread scheduling), or a triple.
    #[arg(long, short, default_value = "simt")]
    target: String,
    /// Only this kernel of the file (default: every kernel, in order).
    #[arg(long)]
    kernel: Option<String>,
}

/// Runs `warplift divergence`.
pub fn run(args: &DivergenceArgs) -> Result<ExitCode> {
    let funcs = source::load_verified(&args.file)?;
    let model = lookup_by_name(&args.target, Settings::default())?.reconvergence();
    let selected: Vec<_> = match &args.kernel {
        Some(name) => {
            let name = name.trim_start_matches('%');
            match funcs.iter().find(|f| f.name == name) {
                Some(f) => vec![f],
                None => bail!("{} has no kernel %{name}", args.file.display()),
            }
        }
        None => funcs.iter().collect(),
    };
    let mut text = String::new();
    for (i, func) in selected.into_iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        let div = Divergence::compute_for(func, model);
        text.push_str(&div.display(func).to_string());
    }
    crate::output::out!("{text}")?;
    Ok(ExitCode::SUCCESS)
}
