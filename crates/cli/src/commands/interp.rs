//! `warplift interp`: runs a kernel on the reference interpreter and prints its buffers.

use crate::launch_args::LaunchArgs;
use crate::source;
use anyhow::{anyhow, Result};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use warplift_ir::interp::{self, InterpConfig, InterpStats};
use warplift_ir::write::count;
use warplift_ir::Function;

/// Arguments of `warplift interp`.
#[derive(Args)]
pub struct InterpArgs {
    /// The .wir file.
    file: PathBuf,
    #[command(flatten)]
    launch: LaunchArgs,
    /// Threads per warp (1 to 64), which `lane_id` refers to; the emulator's
    /// `--warp-width` [default: 32].
    #[arg(long, value_name = "N")]
    warp_width: Option<u32>,
    /// Deprecated: the old name of `--warp-width`.
    #[arg(long, value_name = "N", hide = true, conflicts_with = "warp_width")]
    warp_size: Option<u32>,
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
    let (flag, warp_width) = match (args.warp_width, args.warp_size) {
        (_, Some(w)) => {
            eprintln!("warning: --warp-size is deprecated; use --warp-width");
            ("--warp-size", w)
        }
        (w, None) => (
            "--warp-width",
            w.unwrap_or(InterpConfig::default().warp_width),
        ),
    };
    if warp_width == 0 || warp_width > 64 {
        return Err(anyhow!("{flag} must be 1 to 64, not {warp_width}"));
    }
    let config = InterpConfig {
        warp_width,
        max_steps: args.max_steps,
    };
    let stats = interp::run(func, &mut prepared, &config)?;
    prepared.memory.save_buffers()?;
    let memory = &prepared.memory;
    let stats_json = stats_json(func, &stats, &config);
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

fn stats_json(func: &Function, stats: &InterpStats, config: &InterpConfig) -> serde_json::Value {
    let blocks: serde_json::Map<String, serde_json::Value> = func
        .layout
        .blocks()
        .iter()
        .map(|&b| (b.to_string(), stats.block_execs[b].into()))
        .collect();
    serde_json::json!({
        "warp_width": config.warp_width,
        "instructions": stats.insts_executed,
        "threads": stats.threads,
        "thread_blocks": stats.thread_blocks,
        "barriers": stats.barriers,
        "block_executions": blocks,
    })
}

fn stats_text(func: &Function, stats: &InterpStats) -> String {
    let mut out = format!(
        "interpreted %{}: {} in {}, {}, {}\n",
        func.name,
        count(stats.threads, "thread"),
        count(stats.thread_blocks, "block"),
        count(stats.insts_executed, "instruction"),
        count(stats.barriers, "barrier")
    );
    out.push_str("block executions (per thread):");
    for &b in func.layout.blocks() {
        out.push_str(&format!(" {b}={}", stats.block_execs[b]));
    }
    out.push('\n');
    out
}
