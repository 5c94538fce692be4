//! `warplift`, the command-line tool.
//!
//! Each subcommand lives in its own module under `commands/`; this file only declares the
//! command line and dispatches. Every failure is reported as an `error: ...` message and a
//! non-zero exit code; user input never makes the process panic.

mod alloc_tuning;
mod codegen_args;
mod commands;
mod launch_args;
mod output;
mod progress;
mod watch;

use clap::{Parser, Subcommand};
use std::process::ExitCode;
use warplift_study::source;

/// A retargetable compiler backend for SIMT kernels.
#[derive(Parser)]
#[command(name = "warplift", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the kernels of a .wir file in canonical form.
    Fmt(commands::fmt::FmtArgs),
    /// Parse and verify the kernels of a .wir file.
    Verify(commands::verify::VerifyArgs),
    /// Run a kernel on the reference interpreter and print its buffers.
    Interp(Box<commands::interp::InterpArgs>),
    /// Run a kernel (.wir or SIMT object) on the SIMT emulator: buffers, statistics, trace.
    Run(Box<commands::run::RunArgs>),
    /// Compile a file's kernels to PTX or to a SIMT object.
    Compile(commands::compile::CompileArgs),
    /// Disassemble a SIMT object, with source lines.
    Objdump(commands::objdump::ObjdumpArgs),
    /// List the code generator's settings (for `--set`).
    Settings,
    /// List the optional passes (for `--passes`).
    Passes,
    /// Print a kernel's control-flow graph, before or after a pass (`--dot` for Graphviz).
    Cfg(commands::cfg::CfgArgs),
    /// The linearization report: static and dynamic numbers of kernels before and after
    /// each optimisation level (the paper's Tables 1, 2 and 4).
    Report(Box<commands::report::ReportArgs>),
    /// Print the divergence analysis of a file's kernels: every value and branch, uniform
    /// or divergent, and why.
    Divergence(commands::divergence::DivergenceArgs),
    /// Sweep kernels x pipelines x machines on the emulator: tables, plots, shards
    /// (`warplift study SPEC.toml`, `warplift study merge DIR...`; docs/studies.md).
    Study(Box<commands::study::StudyArgs>),
    /// The structural class of each kernel (linear, tail-structured, SESE, reducible,
    /// irreducible) and its unstructured subgraphs.
    Classify(commands::classify::ClassifyArgs),
    /// The synthetic-CFG experiment of Reissmann et al. (Section V-A, Figure 6):
    /// restructuring and linearization on every minimal unstructured acyclic CFG.
    RestructureExperiment(commands::restructure_experiment::ExperimentArgs),
}

fn main() -> ExitCode {
    alloc_tuning::tune();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Fmt(args) => commands::fmt::run(&args),
        Command::Verify(args) => commands::verify::run(&args),
        Command::Interp(args) => commands::interp::run(&args),
        Command::Run(args) => commands::run::run(&args),
        Command::Compile(args) => commands::compile::run(&args),
        Command::Objdump(args) => commands::objdump::run(&args),
        Command::Settings => print_settings(),
        Command::Passes => print_passes(),
        Command::Cfg(args) => commands::cfg::run(&args),
        Command::Report(args) => commands::report::run(&args),
        Command::Divergence(args) => commands::divergence::run(&args),
        Command::Study(args) => commands::study::run(&args),
        Command::Classify(args) => commands::classify::run(&args),
        Command::RestructureExperiment(args) => commands::restructure_experiment::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// `warplift settings`: every code-generator setting with its documentation.
fn print_settings() -> anyhow::Result<ExitCode> {
    let settings = warplift_codegen::Settings::DESCRIPTIONS;
    let width = settings
        .iter()
        .map(|(name, _)| name.len())
        .max()
        .unwrap_or(0);
    for (name, doc) in settings {
        let doc = doc.split_whitespace().collect::<Vec<_>>().join(" ");
        output::outln!("{name:width$}  {doc}")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `warplift passes`: every registered pass with one line of explanation.
fn print_passes() -> anyhow::Result<ExitCode> {
    let registry = warplift_codegen::passes::REGISTRY;
    if registry.is_empty() {
        output::outln!("no optional passes are registered")?;
    }
    for pass in registry {
        output::outln!("{:16} {}", pass.name(), pass.description())?;
    }
    Ok(ExitCode::SUCCESS)
}
