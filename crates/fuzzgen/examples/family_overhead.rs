//! Warp-instructions and redundant block executions of a pipeline over the synthetic CFG
//! family (every minimal unstructured acyclic graph of up to 7 nodes, one lane per path,
//! one warp), against the plain pipeline: the guard overhead of linearization.
//!
//! `cargo run --release -p warplift-fuzzgen --example family_overhead -- [SETTING=VALUE ...]`
//! (default: `passes=linearize linearize_regions=kernel linearize_opt=3`). `FAMILY_EACH=1`
//! prints each graph's difference, `FAMILY_DUMP=NAME` one graph's code both ways, and
//! `FAMILY_BREAKDOWN=1` where the difference lies: per graph on average, the
//! warp-instructions the pipeline's kernel runs minus the plain kernel's, by opcode in the
//! graph's own blocks and by the shape (the opcodes) of the blocks the pipeline made.

use std::collections::BTreeMap;
use warplift_codegen::isa::simt::encode;
use warplift_codegen::mir::MirFunction;
use warplift_codegen::Settings;
use warplift_emu::{run_with, MachineConfig, Program, RunOptions, Stats};
use warplift_fuzzgen::cfg_family::{minimal_unstructured, KernelStyle, SmallCfg};
use warplift_fuzzgen::Pipeline;

/// Compiles `cfg`'s kernel with `p` and runs it on one warp of 32 lanes.
fn compile_and_run(cfg: &SmallCfg, p: &Pipeline, options: RunOptions) -> (MirFunction, Stats) {
    let case = cfg.kernel(KernelStyle { trace: false });
    let mir = p
        .compile(&case.func, Settings::default())
        .unwrap_or_else(|e| panic!("{}: {e}", cfg.name()));
    let program = Program::from_code(&encode(&mir).unwrap()).expect("loads");
    let machine = MachineConfig::builder().warp_width(32).build().unwrap();
    let mut launch = case.launch.prepare(&case.func).expect("a valid launch");
    let stats = run_with(&program, &mut launch, &machine, options)
        .unwrap_or_else(|e| panic!("{}: {e}", cfg.name()));
    (mir, stats)
}

fn measure(cfg: &SmallCfg, p: &Pipeline) -> (u64, u64) {
    let options = RunOptions {
        redundancy: true,
        ..RunOptions::default()
    };
    let (_, stats) = compile_and_run(cfg, p, options);
    let redundant = stats
        .redundant_block_executions
        .expect("asked for")
        .iter()
        .filter(|(name, _)| name.starts_with("block"))
        .map(|(_, n)| n)
        .sum();
    (redundant, stats.warp_instructions)
}

/// Warp-instructions by kind: each block's opcodes (`@` marks a guarded one) times the
/// block's executions, keyed `graph OPCODE` for the graph's own blocks (IR blocks
/// `block0` to `block{n-1}`) and `made SHAPE` for the rest.
fn breakdown(cfg: &SmallCfg, p: &Pipeline, sign: i64, into: &mut BTreeMap<String, i64>) {
    let (mir, stats) = compile_and_run(cfg, p, RunOptions::default());
    // The printed machine IR: `mblockN:  ; IR-BLOCK` heads each block (`; IR-BLOCK,
    // KIND` for a block of another kind than the kernel's code).
    let text = mir.to_string();
    let mut blocks: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if line.starts_with("mblock") {
            let ir = line.split("; ").nth(1).unwrap_or("");
            let ir = ir.split(',').next().unwrap_or("").trim().to_string();
            blocks.push((ir, Vec::new()));
        } else if let Some((_, ops)) = blocks.last_mut() {
            if t.is_empty() || t == "}" {
                continue;
            }
            let mut words = t.split_whitespace();
            let first = words.next().unwrap_or("");
            ops.push(if first.starts_with('@') {
                format!("@{}", words.next().unwrap_or(""))
            } else {
                first.to_string()
            });
        }
    }
    for (ir, ops) in blocks {
        let runs = *stats.block_executions.get(&ir).unwrap_or(&0) as i64;
        let own = ir
            .strip_prefix("block")
            .and_then(|k| k.parse::<usize>().ok())
            .is_some_and(|k| k < cfg.len());
        if own {
            for op in &ops {
                *into.entry(format!("graph {op}")).or_insert(0) += sign * runs;
            }
        } else {
            *into.entry(format!("made {}", ops.join(","))).or_insert(0) +=
                sign * runs * ops.len() as i64;
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<String> = if args.is_empty() {
        [
            "passes=linearize",
            "linearize_regions=kernel",
            "linearize_opt=3",
        ]
        .map(String::from)
        .to_vec()
    } else {
        args
    };
    let settings: Vec<(&'static str, &'static str)> = args
        .iter()
        .map(|a| {
            let (k, v) = a.split_once('=').expect("SETTING=VALUE");
            let leak = |s: &str| -> &'static str { Box::leak(s.to_string().into_boxed_str()) };
            (leak(k), leak(v))
        })
        .collect();
    let plain = Pipeline {
        name: "plain".into(),
        settings: Vec::new(),
    };
    let p = Pipeline {
        name: args.join(" "),
        settings,
    };
    let cfgs = minimal_unstructured(7);
    let (mut sum, mut max, mut min) = (0i64, i64::MIN, i64::MAX);
    let (mut red_before, mut red_after, mut worst) = (0, 0, (0, String::new()));
    // FAMILY_EACH=1 prints every graph's difference.
    let each = std::env::var_os("FAMILY_EACH").is_some();
    // FAMILY_DUMP=NAME prints that graph's kernel as both pipelines compile it.
    if let Ok(name) = std::env::var("FAMILY_DUMP") {
        if let Some(cfg) = cfgs.iter().find(|c| c.name() == name) {
            let case = cfg.kernel(KernelStyle { trace: false });
            for pipeline in [&plain, &p] {
                match pipeline.compile(&case.func, Settings::default()) {
                    Ok(mir) => println!("{}:\n{mir}", pipeline.name),
                    Err(e) => println!("{}: {e}", pipeline.name),
                }
            }
        }
    }
    if std::env::var_os("FAMILY_BREAKDOWN").is_some() {
        let mut by_kind: BTreeMap<String, i64> = BTreeMap::new();
        for cfg in &cfgs {
            breakdown(cfg, &plain, -1, &mut by_kind);
            breakdown(cfg, &p, 1, &mut by_kind);
        }
        for (kind, n) in by_kind.iter().filter(|(_, &n)| n != 0) {
            println!("{kind:40} {:+.3}", *n as f64 / cfgs.len() as f64);
        }
    }
    for cfg in &cfgs {
        let (r0, w0) = measure(cfg, &plain);
        let (r1, w1) = measure(cfg, &p);
        let d = w1 as i64 - w0 as i64;
        if each {
            println!("{} {d:+} ({w0} -> {w1})", cfg.name());
        }
        sum += d;
        min = min.min(d);
        if d > max {
            max = d;
            worst = (d, cfg.name());
        }
        red_before += r0;
        red_after += r1;
    }
    println!(
        "{} graphs, {}: warp-instructions over plain: mean {:+.2}, min {min:+}, max {max:+} ({}); redundant executions {red_before} -> {red_after}",
        cfgs.len(),
        p.name,
        sum as f64 / cfgs.len() as f64,
        worst.1
    );
}
