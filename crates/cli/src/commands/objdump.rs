//! `warplift objdump`: disassembles a SIMT object, with the `.wir` source lines its DWARF
//! line table points at when the source file can be found.

use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use warplift_codegen::isa::simt::{
    disassemble_object, disassemble_object_with_source, load_object,
};

/// Arguments of `warplift objdump`.
#[derive(Args)]
pub struct ObjdumpArgs {
    /// The object file (from `warplift compile --target simt`).
    file: PathBuf,
    /// The .wir source to show lines from. Default: the file the object names, looked up
    /// next to the object.
    #[arg(long)]
    source: Option<PathBuf>,
}

/// Runs `warplift objdump`.
pub fn run(args: &ObjdumpArgs) -> Result<ExitCode> {
    let bytes = std::fs::read(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let object = load_object(&bytes).with_context(|| format!("{}", args.file.display()))?;
    let source_path = args.source.clone().or_else(|| {
        let dir = args.file.parent()?;
        Some(dir.join(&object.source_name)).filter(|p| p.is_file())
    });
    let source = source_path.and_then(|p| std::fs::read_to_string(p).ok());
    match source {
        Some(text) => crate::output::out!("{}", disassemble_object_with_source(&object, &text))?,
        None => crate::output::out!("{}", disassemble_object(&object))?,
    }
    Ok(ExitCode::SUCCESS)
}
