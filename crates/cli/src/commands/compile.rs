//! `warplift compile`: compiles a file's kernels for a target, writing PTX text or an ELF
//! object, and optionally printing the machine IR and compilation statistics.

use crate::codegen_args::CodegenArgs;
use crate::source;
use anyhow::{Context as _, Result};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use warplift_codegen::lower::lower;
use warplift_codegen::Context;
use warplift_ir::write::count;

/// Which machine IR `--print-mir` shows.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum MirStage {
    /// Right after lowering: virtual registers, block parameters.
    Lowered,
    /// The final code the emitter sees: physical registers, spills explicit.
    Final,
}

/// Arguments of `warplift compile`.
#[derive(Args)]
pub struct CompileArgs {
    /// The .wir file.
    file: PathBuf,
    /// The target: `ptx`, `simt`, or a triple (`nvptx64-nvidia-cuda`,
    /// `unknown-warplift-unknown`).
    #[arg(long, short, default_value = "simt")]
    target: String,
    /// Where to write the output. Default: PTX to standard output, an object to FILE.o.
    #[arg(long, short)]
    output: Option<PathBuf>,
    #[command(flatten)]
    codegen: CodegenArgs,
    /// Print the machine IR of every kernel (`lowered` or `final`; default `final`) instead of
    /// writing the output.
    #[arg(long, value_name = "STAGE", num_args = 0..=1, default_missing_value = "final")]
    print_mir: Option<MirStage>,
    /// Print per-kernel statistics (instructions, registers, spills) on standard error.
    #[arg(long)]
    stats: bool,
}

/// Runs `warplift compile`.
pub fn run(args: &CompileArgs) -> Result<ExitCode> {
    let funcs = source::load_verified(&args.file)?;
    let isa = args.codegen.target(&args.target)?;
    let mut ctx = Context::with_input_verified();
    if args.print_mir == Some(MirStage::Lowered) {
        for f in &funcs {
            crate::output::out!("{}", lower(f)?)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let source_name = args
        .file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    // The kernels are not needed once compiled: each one's IR is freed as soon as it is
    // lowered, and the memory serves allocation and emission.
    let module = ctx
        .compile_module_owned(funcs, isa.as_ref(), source_name.as_deref())
        .with_context(|| format!("compiling {}", args.file.display()))?;
    if args.stats {
        for k in &module.kernels {
            let s = &k.stats;
            eprintln!(
                "%{}: {} -> {} lowered -> {} final in {}; {}; {} removed",
                k.mir.name,
                count(s.ir_insts, "IR instruction"),
                s.lowered_insts,
                s.final_insts,
                count(s.final_blocks, "block"),
                s.regalloc,
                count(s.removed_edge_blocks, "empty edge block")
            );
        }
    }
    if args.print_mir == Some(MirStage::Final) {
        for k in &module.kernels {
            crate::output::out!("{}", k.mir)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    match (&args.output, isa.emits_text()) {
        (Some(path), _) => write_file(path, &module.code)?,
        (None, true) => crate::output::write_stdout(&module.code)?,
        (None, false) => write_file(&args.file.with_extension("o"), &module.code)?,
    }
    // The process ends right after this: freeing the kernels, block by block and
    // instruction by instruction, would cost about 2% of a large compile for nothing, so
    // the operating system takes the memory back instead. (Nothing here has a destructor
    // with an effect outside the process: the output is written and flushed above.)
    std::mem::forget(module);
    Ok(ExitCode::SUCCESS)
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}
