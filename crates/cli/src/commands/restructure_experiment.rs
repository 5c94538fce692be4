//! `warplift restructure-experiment`: the synthetic-CFG experiment of Reissmann et al.,
//! "Efficient Control Flow Restructuring for GPUs" (Section V-A, Figure 6).
//!
//! Every minimal unstructured acyclic CFG with binary branches up to `--max-nodes` nodes
//! (`warplift_fuzzgen::cfg_family`), as a kernel with one thread per entry-to-exit path in
//! one warp (every branch divergent, blocks otherwise empty), runs on the emulator as it
//! is, restructured (`--passes restructure`, whole kernel) and linearized (`--passes
//! linearize`, O3, whole kernel). Grouped by the number of redundant block executions of
//! the unstructured kernel, the command prints the number of graphs and the distribution
//! of the dynamic instruction overhead (thread-instructions restructured minus
//! unstructured), then both methods side by side, the paper's numbers and LLVM's
//! StructurizeCFG's (a stored table). Graphs run in parallel on every core (rayon), with
//! a progress bar on standard error (`--quiet`: none).

use crate::output::outln;
use anyhow::{anyhow, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use serde_json::json;
use std::collections::BTreeMap;
use std::process::ExitCode;
use warplift_codegen::{lookup_by_name, Context, Settings};
use warplift_emu::{run_with, MachineConfig, Program, RunOptions};
use warplift_fuzzgen::cfg_family::{minimal_unstructured, KernelStyle, SmallCfg};
use warplift_ir::Function;

/// Arguments of `warplift restructure-experiment`.
#[derive(Args)]
pub struct ExperimentArgs {
    /// The largest graphs, in nodes (entry and exit included).
    #[arg(long, default_value_t = 7)]
    max_nodes: usize,
    /// Print one JSON object (per graph and per group) instead of text.
    #[arg(long)]
    json: bool,
    /// Print one CSV line per graph instead of text.
    #[arg(long, conflicts_with = "json")]
    csv: bool,
    /// No progress bar on standard error.
    #[arg(long, short)]
    quiet: bool,
}

/// The progress bar, as `warplift study` shows it: graphs done, elapsed time and time
/// left.
fn progress_bar(len: usize, shown: bool) -> ProgressBar {
    let target = if shown {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(len as u64), target);
    if let Ok(style) = ProgressStyle::with_template(
        "{bar:30} {pos}/{len} graphs [{elapsed_precise} elapsed, {eta} left]",
    ) {
        bar.set_style(style);
    }
    bar
}

/// What one configuration did on one graph.
#[derive(Clone, Copy, Debug, Default)]
struct Run {
    redundant: u64,
    thread_insts: u64,
    warp_insts: u64,
    cycles: u64,
    blocks: u64,
    insts: u64,
}

/// One graph's runs: unstructured, restructured (whole kernel, and selective with the
/// cost model), linearized.
struct Row {
    name: String,
    nodes: usize,
    base: Run,
    restructured: Run,
    selective: Run,
    linearized: Run,
}

fn measure(
    func: &Function,
    case_launch: &warplift_ir::launch::Launch,
    settings: &[(&str, &str)],
) -> Result<Run> {
    let mut b = Settings::builder();
    for (k, v) in settings {
        b.set(k, v)?;
    }
    let isa = lookup_by_name("simt", b.finish())?;
    let kernel = Context::new().compile_kernel(func, &*isa)?;
    let code = warplift_codegen::isa::simt::encode(&kernel.mir)?;
    let prog = Program::from_code(&code).map_err(|e| anyhow!("{e}"))?;
    let mut launch = case_launch.prepare(func).map_err(|e| anyhow!("{e}"))?;
    let config = MachineConfig::builder()
        .warp_width(64)
        .build()
        .map_err(|e| anyhow!("{e}"))?;
    let options = RunOptions {
        redundancy: true,
        ..RunOptions::default()
    };
    let stats = run_with(&prog, &mut launch, &config, options).map_err(|e| anyhow!("{e}"))?;
    let mut ir = func.clone();
    // The static size after an IR pass (a machine pass leaves the IR as it is).
    if let Some(warplift_codegen::passes::Pass::Ir(p)) =
        warplift_codegen::passes::lookup(settings.first().map_or("", |s| s.1))
    {
        let mut b = Settings::builder();
        for (k, v) in settings {
            b.set(k, v)?;
        }
        let mut analyses = warplift_codegen::analysis::AnalysisCache::new();
        p.run(&mut ir, &mut analyses, &b.finish())?;
    }
    Ok(Run {
        redundant: stats
            .redundant_block_executions
            .as_ref()
            .map_or(0, |m| m.values().sum()),
        thread_insts: stats.thread_instructions,
        warp_insts: stats.warp_instructions,
        cycles: stats.cycles,
        blocks: ir.layout.num_blocks() as u64,
        insts: ir.num_placed_insts() as u64,
    })
}

fn row(cfg: &SmallCfg) -> Result<Row> {
    let case = cfg.kernel(KernelStyle::default());
    let base = measure(&case.func, &case.launch, &[])?;
    let restructured = measure(
        &case.func,
        &case.launch,
        &[("passes", "restructure"), ("restructure_regions", "kernel")],
    )?;
    let selective = measure(&case.func, &case.launch, &[("passes", "restructure")])?;
    let linearized = measure(
        &case.func,
        &case.launch,
        &[
            ("passes", "linearize"),
            ("linearize_regions", "kernel"),
            ("linearize_opt", "3"),
        ],
    )?;
    Ok(Row {
        name: cfg.name(),
        nodes: cfg.len(),
        base,
        restructured,
        selective,
        linearized,
    })
}

/// Min, quartiles and max of `v` (sorted in place).
fn five(v: &mut [i64]) -> [i64; 5] {
    v.sort_unstable();
    let q = |f: f64| v[((v.len() - 1) as f64 * f).round() as usize];
    [v[0], q(0.25), q(0.5), q(0.75), v[v.len() - 1]]
}

/// Runs `warplift restructure-experiment`.
pub fn run(args: &ExperimentArgs) -> Result<ExitCode> {
    let graphs = minimal_unstructured(args.max_nodes);
    let bar = progress_bar(graphs.len(), !args.quiet);
    let rows: Vec<Row> = graphs
        .par_iter()
        .enumerate()
        .map(|(i, g)| {
            let r = row(g).map_err(|e| anyhow!("graph {i} ({}): {e:#}", g.name()));
            bar.inc(1);
            r
        })
        .collect::<Result<_>>()?;
    bar.finish_and_clear();

    if args.csv {
        outln!("graph,nodes,redundant,redundant_restructured,redundant_linearized,thread_insts,thread_insts_restructured,thread_insts_linearized,warp_insts,warp_insts_restructured,warp_insts_linearized,cycles,cycles_restructured,cycles_linearized,blocks,blocks_restructured,insts,insts_restructured,redundant_selective,warp_insts_selective")?;
        for r in &rows {
            outln!(
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                r.name,
                r.nodes,
                r.base.redundant,
                r.restructured.redundant,
                r.linearized.redundant,
                r.base.thread_insts,
                r.restructured.thread_insts,
                r.linearized.thread_insts,
                r.base.warp_insts,
                r.restructured.warp_insts,
                r.linearized.warp_insts,
                r.base.cycles,
                r.restructured.cycles,
                r.linearized.cycles,
                r.base.blocks,
                r.restructured.blocks,
                r.base.insts,
                r.restructured.insts,
                r.selective.redundant,
                r.selective.warp_insts
            )?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut groups: BTreeMap<u64, Vec<&Row>> = BTreeMap::new();
    for r in &rows {
        groups.entry(r.base.redundant).or_default().push(r);
    }
    let overhead = |r: &Row| r.restructured.thread_insts as i64 - r.base.thread_insts as i64;
    if args.json {
        let per_group: Vec<_> = groups
            .iter()
            .map(|(&k, rs)| {
                let mut o: Vec<i64> = rs.iter().map(|r| overhead(r)).collect();
                json!({"redundant": k, "graphs": rs.len(), "overhead": five(&mut o)})
            })
            .collect();
        let graphs: Vec<_> = rows
            .iter()
            .map(|r| json!({
                "graph": r.name, "nodes": r.nodes,
                "redundant": [r.base.redundant, r.restructured.redundant, r.linearized.redundant, r.selective.redundant],
                "thread_instructions": [r.base.thread_insts, r.restructured.thread_insts, r.linearized.thread_insts, r.selective.thread_insts],
                "warp_instructions": [r.base.warp_insts, r.restructured.warp_insts, r.linearized.warp_insts, r.selective.warp_insts],
                "cycles": [r.base.cycles, r.restructured.cycles, r.linearized.cycles, r.selective.cycles],
            }))
            .collect();
        outln!(
            "{}",
            serde_json::to_string_pretty(
                &json!({"columns": ["plain", "restructure", "linearize O3", "selective"], "groups": per_group, "graphs": graphs})
            )?
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{} minimal unstructured acyclic CFGs of 2 to {} nodes (entry and exit counted; graphs counted as\nincidence matrices, not up to isomorphism; minimal: no node whose only successor has it as only\npredecessor; unstructured: not tail-structured). One thread per path, all in one warp.\n",
        rows.len(),
        args.max_nodes
    )?;
    outln!(
        "{:>9} {:>6}   overhead of restructuring, thread-instructions: min q1 median q3 max",
        "redundant",
        "graphs"
    )?;
    for (&k, rs) in &groups {
        let mut o: Vec<i64> = rs.iter().map(|r| overhead(r)).collect();
        let [a, b, c, d, e] = five(&mut o);
        outln!("{k:>9} {:>6}   {a} {b} {c} {d} {e}", rs.len())?;
    }
    let n = rows.len() as f64;
    let avg = |f: &dyn Fn(&Row) -> f64| rows.iter().map(f).sum::<f64>() / n;
    let max_over = rows.iter().map(overhead).max().unwrap_or(0);
    let left = |f: &dyn Fn(&Row) -> u64| rows.iter().filter(|r| f(r) > 0).count();
    let at_most_3 = rows.iter().filter(|r| r.base.redundant <= 3).count() as f64 / n * 100.0;
    let neg_above_7 = rows
        .iter()
        .filter(|r| r.base.redundant > 7)
        .all(|r| overhead(r) < 0);
    outln!("")?;
    outln!(
        "{:<40} {:>12} {:>12} {:>12}",
        "",
        "restructure",
        "selective",
        "linearize O3"
    )?;
    outln!(
        "{:<40} {:>12} {:>12} {:>12}",
        "graphs with redundant executions left",
        left(&|r| r.restructured.redundant),
        left(&|r| r.selective.redundant),
        left(&|r| r.linearized.redundant)
    )?;
    outln!(
        "{:<40} {:>12} {:>12} {:>12}",
        "graphs with more warp-instructions",
        rows.iter()
            .filter(|r| r.restructured.warp_insts > r.base.warp_insts)
            .count(),
        rows.iter()
            .filter(|r| r.selective.warp_insts > r.base.warp_insts)
            .count(),
        rows.iter()
            .filter(|r| r.linearized.warp_insts > r.base.warp_insts)
            .count()
    )?;
    let wi = |f: &dyn Fn(&Row) -> &Run| avg(&|r| f(r).warp_insts as f64 - r.base.warp_insts as f64);
    outln!(
        "{:<40} {:>12.1} {:>12.1} {:>12.1}",
        "warp-instructions after - before (avg)",
        wi(&|r| &r.restructured),
        wi(&|r| &r.selective),
        wi(&|r| &r.linearized)
    )?;
    let wmax = |f: &dyn Fn(&Row) -> &Run| {
        rows.iter()
            .map(|r| f(r).warp_insts as i64 - r.base.warp_insts as i64)
            .max()
            .unwrap_or(0)
    };
    outln!(
        "{:<40} {:>12} {:>12} {:>12}",
        "warp-instructions after - before (max)",
        wmax(&|r| &r.restructured),
        wmax(&|r| &r.selective),
        wmax(&|r| &r.linearized)
    )?;
    let cy = |f: &dyn Fn(&Row) -> &Run| avg(&|r| f(r).cycles as f64 - r.base.cycles as f64);
    outln!(
        "{:<40} {:>12.1} {:>12.1} {:>12.1}",
        "cycles after - before (avg)",
        cy(&|r| &r.restructured),
        cy(&|r| &r.selective),
        cy(&|r| &r.linearized)
    )?;
    outln!(
        "{:<40} {:>11.1}%",
        "block growth, restructure (avg)",
        avg(&|r| (r.restructured.blocks as f64 / r.base.blocks as f64 - 1.0) * 100.0)
    )?;
    outln!(
        "{:<40} {:>11.1}%",
        "IR instruction growth, restructure (avg)",
        avg(&|r| (r.restructured.insts as f64 / r.base.insts as f64 - 1.0) * 100.0)
    )?;
    outln!("")?;
    outln!("{:<46} {:>10} {:>10}", "", "paper", "warplift")?;
    outln!("{:<46} {:>10} {:>10}", "graphs", 1447, rows.len())?;
    outln!(
        "{:<46} {:>10} {:>10}",
        "graphs with 1 redundant execution",
        449,
        groups.get(&1).map_or(0, Vec::len)
    )?;
    outln!(
        "{:<46} {:>10} {:>10}",
        "graphs with 12 redundant executions",
        2,
        groups.get(&12).map_or(0, Vec::len)
    )?;
    outln!(
        "{:<46} {:>10} {:>10}",
        "most redundant executions",
        14,
        groups.keys().max().copied().unwrap_or(0)
    )?;
    outln!(
        "{:<46} {:>9}% {:>9.0}%",
        "graphs with at most 3",
        73,
        at_most_3
    )?;
    outln!(
        "{:<46} {:>10} {:>10}",
        "largest overhead (instructions)",
        35,
        max_over
    )?;
    outln!(
        "{:<46} {:>10} {:>10}",
        "overhead < 0 above 7 redundant executions",
        "yes",
        if neg_above_7 { "yes" } else { "no" }
    )?;
    outln!("")?;
    outln!("LLVM StructurizeCFG on the same graphs, measured on this emulator (stored table):")?;
    outln!("  redundant executions left 0; warp-instructions after - before -9.7 on average, +12 at most;")?;
    outln!("  blocks +55% and instructions +8.9% on average.")?;
    outln!("")?;
    outln!("Note: the paper counts 1447 graphs; the enumeration here counts graphs as matrices and keeps")?;
    outln!("every minimal unstructured one (the paper does not say what else it filtered), so the totals")?;
    outln!(
        "differ. Graphs are grouped by the emulator's redundant block executions of the compiled"
    )?;
    outln!("kernel (empty edge blocks are removed after allocation, so the groups equal the IPDOM model")?;
    outln!("of cfg_family). Overheads are emulator thread-instructions of our code, not the CUDA")?;
    outln!("profiler's. `restructure` restructures the whole kernel, as the paper does; `selective` is")?;
    outln!("the default, which restructures only where its cost model says it pays.")?;
    Ok(ExitCode::SUCCESS)
}
