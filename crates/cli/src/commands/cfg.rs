//! `warplift cfg`: the control-flow graph of a kernel's machine code, before the optional
//! passes or after one of them, as Graphviz (`--dot`) or as a list of edges.

use crate::codegen_args::CodegenArgs;
use crate::source;
use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use warplift_codegen::mir::{dot::to_dot_marked, MirFunction};
use warplift_codegen::passes::Pipeline;
use warplift_codegen::{lookup_by_name, Context};

/// Arguments of `warplift cfg`.
#[derive(Args)]
pub struct CfgArgs {
    /// The .wir file.
    file: PathBuf,
    /// Which kernel of the file (default: the only one).
    #[arg(long)]
    kernel: Option<String>,
    #[command(flatten)]
    codegen: CodegenArgs,
    /// Show the CFG after this pass of the pipeline (default: before every optional pass,
    /// right after register allocation). Either way the edge blocks that register
    /// allocation left empty are removed, as in the final code.
    #[arg(long, value_name = "PASS")]
    after: Option<String>,
    /// Print Graphviz `dot` (render with `dot -Tsvg`).
    #[arg(long)]
    dot: bool,
}

/// Runs `warplift cfg`.
pub fn run(args: &CfgArgs) -> Result<ExitCode> {
    let funcs = source::load_verified(&args.file)?;
    let func = match (&args.kernel, funcs.as_slice()) {
        (Some(name), _) => {
            let name = name.trim_start_matches('%');
            match funcs.iter().find(|f| f.name == name) {
                Some(f) => f,
                None => bail!("{} has no kernel %{name}", args.file.display()),
            }
        }
        (None, [f]) => f,
        (None, _) => bail!(
            "{} has {} kernels; choose one with --kernel",
            args.file.display(),
            funcs.len()
        ),
    };
    let mut settings = args.codegen.settings()?;
    let pipeline: Vec<String> = settings
        .passes
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    settings.passes = match &args.after {
        None => String::new(),
        Some(after) => match pipeline.iter().position(|p| p == after) {
            Some(i) => pipeline[..=i].join(","),
            None if pipeline.is_empty() && Pipeline::parse(after).is_ok() => after.clone(),
            None => bail!(
                "--after {after}: the pipeline ({}) has no such pass",
                pipeline.join(",")
            ),
        },
    };
    let isa = lookup_by_name("simt", settings)?;
    let kernel = Context::new().compile_kernel(func, isa.as_ref())?;
    let text = if args.dot {
        let marks = meld_marks(func, isa.settings())?;
        to_dot_marked(&kernel.mir, &|b| marks.get(&b).copied())
    } else {
        edge_list(&kernel.mir)
    };
    crate::output::out!("{text}")?;
    Ok(ExitCode::SUCCESS)
}

/// `mblock0 (block0) -> mblock1 mblock2`, one line per block in order.
fn edge_list(func: &MirFunction) -> String {
    let mut out = String::new();
    for &b in &func.order {
        let data = &func.blocks[b];
        out.push_str(&b.to_string());
        if let Some(o) = data.origin {
            out.push_str(&format!(" ({o})"));
        }
        if data.kind != warplift_codegen::mir::BlockKind::Code {
            out.push_str(&format!(" [{}]", data.kind.name()));
        }
        out.push_str(" ->");
        for s in func.successors(b) {
            out.push_str(&format!(" {s}"));
        }
        out.push('\n');
    }
    out
}

/// The blocks `meld` melded (green) and unpredicated (orange) when the pipeline runs it:
/// the IR passes are run again on a copy, deterministically, to learn them.
fn meld_marks(
    func: &warplift_ir::Function,
    settings: &warplift_codegen::Settings,
) -> Result<std::collections::HashMap<warplift_ir::Block, (&'static str, &'static str)>> {
    use warplift_codegen::meld::{meld, Options};
    let mut marks = std::collections::HashMap::new();
    let pipeline = Pipeline::for_settings(settings)?;
    if !pipeline.ir.iter().any(|p| p.name() == "meld") {
        return Ok(marks);
    }
    let mut f = func.clone();
    for pass in &pipeline.ir {
        if pass.name() == "meld" {
            let stats = meld(&mut f, &Options::from_settings(settings));
            for b in stats.melded_block_ids {
                marks.insert(b, ("melded", "palegreen"));
            }
            for b in stats.unpredicated_block_ids {
                marks.insert(b, ("unpredicated", "lightsalmon"));
            }
        } else {
            pass.run(
                &mut f,
                &mut warplift_codegen::analysis::AnalysisCache::new(),
                settings,
            )?;
        }
    }
    Ok(marks)
}
