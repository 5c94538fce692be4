//! `warplift`, the command-line tool.
//!
//! Each subcommand lives in its own module under `commands/`; this file only declares the
//! command line and dispatches. Every failure is reported as an `error: ...` message and a
//! non-zero exit code; user input never makes the process panic.

mod commands;
mod launch_args;
mod source;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

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
    Interp(commands::interp::InterpArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Fmt(args) => commands::fmt::run(&args),
        Command::Verify(args) => commands::verify::run(&args),
        Command::Interp(args) => commands::interp::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
