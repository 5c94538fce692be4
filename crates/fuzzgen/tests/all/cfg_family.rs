//! The synthetic CFG family on the emulator: every minimal unstructured acyclic graph of up
//! to 7 nodes, compiled without passes and run with one lane per path, takes each lane
//! along its path (the traces equal the launch's expectations) and executes each IR block
//! exactly as often as the independent reconvergence-stack model of
//! [`SmallCfg::ipdom_executions`] says, at warp widths 32 (one warp) and 4 (lanes spread
//! over warps, each warp its own model).

use warplift_codegen::isa::simt::encode;
use warplift_codegen::Settings;
use warplift_emu::{run_with, MachineConfig, Program, RunOptions};
use warplift_fuzzgen::cfg_family::{minimal_unstructured, KernelStyle, SmallCfg};
use warplift_fuzzgen::pipelines;

/// Per-IR-block executions of `cfg`'s traced kernel on one warp holding every path.
fn emulated_runs(cfg: &SmallCfg, width: u32) -> (Vec<u64>, u64) {
    let case = cfg.kernel(KernelStyle { trace: true });
    let plain = &pipelines()[0];
    let mir = plain
        .compile(&case.func, Settings::default())
        .unwrap_or_else(|e| panic!("{}: {e}", cfg.name()));
    let program =
        Program::from_code(&encode(&mir).unwrap()).expect("the emulator loads the program");
    let machine = MachineConfig::builder()
        .warp_width(width)
        .build()
        .expect("a valid machine");
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
    launch
        .memory
        .check_expectations()
        .unwrap_or_else(|e| panic!("{}: {e}", cfg.name()));
    let runs = (0..cfg.len())
        .map(|node| {
            stats
                .block_executions
                .get(&format!("block{node}"))
                .copied()
                .unwrap_or(0)
        })
        .collect();
    // Edge-split blocks the code generator adds are counted under their own names; the
    // model knows only the graph's nodes.
    let redundant = stats
        .redundant_block_executions
        .expect("asked for")
        .iter()
        .filter(|(name, _)| {
            name.strip_prefix("block")
                .is_some_and(|n| n.parse::<usize>().is_ok_and(|n| n < cfg.len()))
        })
        .map(|(_, count)| count)
        .sum();
    (runs, redundant)
}

#[test]
fn the_emulator_runs_every_graph_as_the_ipdom_model_says() {
    let graphs = minimal_unstructured(7);
    let mut total_redundant = 0;
    for cfg in &graphs {
        let model: Vec<u64> = cfg.ipdom_executions().into_iter().map(u64::from).collect();
        let (runs, redundant) = emulated_runs(cfg, 32);
        assert_eq!(runs, model, "{}", cfg.name());
        assert_eq!(
            redundant,
            u64::from(cfg.ipdom_redundancy()),
            "{}",
            cfg.name()
        );
        total_redundant += redundant;
    }
    assert_eq!(total_redundant, 4531);
}

#[test]
fn narrow_warps_split_the_paths_and_the_redundancy() {
    // The short circuit with three paths on warps of two lanes: the first warp holds the
    // two paths through B1, which meet again at B2 and B3 in order, so nothing repeats;
    // the second holds only the path around B1.
    let short_circuit = SmallCfg::new(vec![vec![1, 2], vec![2, 3], vec![3], vec![]]).unwrap();
    let (runs, redundant) = emulated_runs(&short_circuit, 2);
    assert_eq!(runs, vec![2, 1, 2, 2]);
    assert_eq!(redundant, 0);
    let (runs, redundant) = emulated_runs(&short_circuit, 4);
    assert_eq!(runs, vec![1, 1, 2, 1]);
    assert_eq!(redundant, 1);
}
