//! Linearization on the synthetic CFG family (every minimal unstructured acyclic graph of
//! up to 7 nodes, one lane per path, every branch divergent): after the default `--passes
//! linearize`, no block runs redundantly (the IPDOM machine runs one or more blocks twice on
//! 1601 of them). `cargo run -p warplift-fuzzgen --example family_overhead` measures what
//! it costs.

use warplift_codegen::isa::simt::encode;
use warplift_codegen::Settings;
use warplift_emu::{run_with, MachineConfig, Program, RunOptions};
use warplift_fuzzgen::cfg_family::{minimal_unstructured, KernelStyle, SmallCfg};
use warplift_fuzzgen::Pipeline;

/// Redundant executions of the graph's blocks and warp-instructions, one warp; the run's
/// traces must equal the launch's expectations (every lane took its path).
fn measure(cfg: &SmallCfg, settings: &[(&'static str, &'static str)], trace: bool) -> (u64, u64) {
    let case = cfg.kernel(KernelStyle { trace });
    let p = Pipeline {
        name: format!("{settings:?}"),
        settings: settings.to_vec(),
    };
    let mir = p
        .compile(&case.func, Settings::default())
        .unwrap_or_else(|e| panic!("{}: {e}", cfg.name()));
    let program = Program::from_code(&encode(&mir).unwrap()).expect("loads");
    let machine = MachineConfig::builder().warp_width(32).build().unwrap();
    let mut launch = case.launch.prepare(&case.func).expect("a valid launch");
    let stats = run_with(
        &program,
        &mut launch,
        &machine,
        RunOptions {
            trace: None,
            redundancy: true,
            ..RunOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{}: {e}", cfg.name()));
    // Without traces the kernels store each thread's id, which the launch does not
    // expect: only traced runs are checked.
    if trace {
        launch
            .memory
            .check_expectations()
            .unwrap_or_else(|e| panic!("{} {settings:?}: {e}", cfg.name()));
    }
    let redundant = stats
        .redundant_block_executions
        .expect("asked for")
        .iter()
        .filter(|(name, _)| name.starts_with("block"))
        .map(|(_, n)| n)
        .sum();
    (redundant, stats.warp_instructions)
}

#[test]
fn default_linearization_leaves_no_block_of_the_family_redundant() {
    let cfgs = minimal_unstructured(7);
    assert_eq!(cfgs.len(), 1744);
    let mut left = Vec::new();
    for cfg in &cfgs {
        let (r, _) = measure(cfg, &[("passes", "linearize")], true);
        if r > 0 {
            left.push(format!("{} ({r})", cfg.name()));
        }
    }
    assert!(
        left.is_empty(),
        "{} left redundant: {}",
        left.len(),
        left[..left.len().min(20)].join(", ")
    );
}

#[test]
fn guard_overhead_on_the_family_at_o3() {
    // Every graph at O3 (threading, predication, folded tests, dead assignments) still
    // takes every lane its way (the traces) with no redundant execution; and with empty
    // blocks, as `examples/family_overhead.rs` measures, the linearized kernel runs fewer
    // warp-instructions than the plain one on average and at most as many on any graph.
    let o3 = [("passes", "linearize"), ("linearize_opt", "3")];
    let cfgs = minimal_unstructured(7);
    let (mut sum, mut max) = (0i64, i64::MIN);
    for cfg in &cfgs {
        assert_eq!(measure(cfg, &o3, true).0, 0, "{}", cfg.name());
        let (_, plain) = measure(cfg, &[], false);
        let (_, lin) = measure(cfg, &o3, false);
        let d = lin as i64 - plain as i64;
        sum += d;
        max = max.max(d);
    }
    assert_eq!(
        (sum, max),
        (-10383, 0),
        "mean {:+.2}",
        sum as f64 / cfgs.len() as f64
    );
}
