//! `warplift interp`: runs a kernel on the reference interpreter and prints its buffers.

use crate::launch_args::LaunchArgs;
use crate::source;
use anyhow::{anyhow, Result};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use warplift_ir::interp::{self, InterpConfig, InterpStats};
use warplift_ir::Function;

/// Arguments of `warplift interp`.
#[derive(Args)]
pub struct InterpArgs {
    /// The .wir file.
    file: PathBuf,
    #[command(flatten)]
    launch: LaunchArgs,
    /// Warp width that `lane_id` refers to.
    #[arg(long, default_value_t = InterpConfig::default().warp_size)]
    warp_size: u32,
    /// Stop with an error after this many instructions (all threads together).
    #[arg(long, default_value_t = InterpConfig::default().max_steps)]
    max_steps: u64,
    /// Print one JSON object: `{"kernel", "buffers", "stats"}`.
    #[arg(long)]
    json: bool,
    /// Also print execution statistics (instructions, block executions).
    #[arg(long)]
    stats: bool,
}

/// Runs `warplift interp`.
pub fn run(args: &InterpArgs) -> Result<ExitCode> {
    let funcs = source::load_verified(&args.file)?;
    let launch = args.launch.resolve(&args.file)?;
    let func = launch.select_kernel(&funcs)?;
    let mut prepared = launch.prepare(func)?;
    if args.warp_size == 0 || args.warp_size > 64 {
        return Err(anyhow!(
            "--warp-size must be 1 to 64, not {}",
            args.warp_size
        ));
    }
    let config = InterpConfig {
        warp_size: args.warp_size,
        max_steps: args.max_steps,
    };
    let stats = interp::run(func, &mut prepared, &config)?;
    prepared.memory.save_buffers()?;
    let memory = &prepared.memory;
    let stats_json = stats_json(func, &stats);
    let json = args.json.then_some((func.name.as_str(), &stats_json));
    let tail = if args.stats {
        stats_text(func, &stats)
    } else {
        String::new()
    };
    crate::output::print_results(memory, args.launch.detail(), json, &tail)?;
    memory
        .check_expectations()
        .map_err(|e| anyhow!("the results differ from the launch's expectations:\n{e}"))?;
    Ok(ExitCode::SUCCESS)
}

fn stats_json(func: &Function, stats: &InterpStats) -> serde_json::Value {
    let blocks: serde_json::Map<String, serde_json::Value> = func
        .layout
        .blocks()
        .iter()
        .map(|&b| (b.to_string(), stats.block_execs[b].into()))
        .collect();
    serde_json::json!({
        "instructions": stats.insts_executed,
        "threads": stats.threads,
        "thread_blocks": stats.thread_blocks,
        "barriers": stats.barriers,
        "block_executions": blocks,
    })
}

fn stats_text(func: &Function, stats: &InterpStats) -> String {
    let mut out = format!(
        "interpreted %{}: {} threads in {} blocks, {} instructions, {} barriers\n",
        func.name, stats.threads, stats.thread_blocks, stats.insts_executed, stats.barriers
    );
    out.push_str("block executions (per thread):");
    for &b in func.layout.blocks() {
        out.push_str(&format!(" {b}={}", stats.block_execs[b]));
    }
    out.push('\n');
    out
}
