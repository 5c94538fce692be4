//! SSA-level linearization (`--passes linearize_ssa`) on the emulator: every corpus
//! kernel, linearized before register allocation in each region mode, leaves the
//! reference interpreter's memory at warp widths 1, 7, 32 and 64; no block of the paper's
//! Figure 1 runs twice per warp; and the loops of Figures 5 and 6 and an irreducible loop
//! run each block at most as often as the machine-level pass makes them run.

use crate::common;

use common::{compile, each_kernel, emulate, load, References};
use std::collections::BTreeMap;
use warplift_codegen::isa::simt::encode;
use warplift_emu::{Program, Stats};

/// Executions of the kernel's original blocks `block0` to `block{n-1}` (guard blocks the
/// pass adds are IR blocks too, numbered after them).
fn original_block_executions(stats: &Stats, n: usize) -> BTreeMap<String, u64> {
    (0..n)
        .map(|i| {
            let name = format!("block{i}");
            let count = stats.block_executions.get(&name).copied().unwrap_or(0);
            (name, count)
        })
        .collect()
}

const MODES: [&[&str]; 3] = [
    &["passes=linearize_ssa", "linearize_regions=kernel"],
    &["passes=linearize_ssa", "linearize_regions=all"],
    &["passes=linearize_ssa", "linearize_regions=divergent"],
];

#[test]
fn every_corpus_kernel_linearized_on_ssa_leaves_the_interpreters_memory() {
    let runs: usize = each_kernel(|name, func, prepared| {
        let mut runs = 0;
        let references = References::compute(name, &func, &prepared);
        for settings in MODES {
            let kernel = compile(&func, settings);
            let prog = Program::from_code(&encode(&kernel.mir).unwrap())
                .unwrap_or_else(|e| panic!("{name}: {e}\n{}", kernel.mir));
            runs += references.check(&prog, &format!("{settings:?}"), &kernel.mir);
        }
        runs
    })
    .into_iter()
    .sum();
    assert!(runs >= 300, "only {runs} runs");
}

#[test]
fn figure_1_runs_every_block_at_most_once_per_warp() {
    let (_, func, prepared) = load("short_circuit_fig1.wir");
    let before = original_block_executions(&emulate(&func, &prepared, &[], 4), 7);
    assert_eq!(before["block3"], 2, "{before:?}");
    assert_eq!(before["block5"], 3, "{before:?}");
    for settings in [MODES[0], MODES[2], &["passes=linearize_ssa"]] {
        let stats = emulate(&func, &prepared, settings, 4);
        let after = original_block_executions(&stats, 7);
        assert!(after.values().all(|&n| n == 1), "{settings:?}: {after:?}");
        // The guard blocks run once each too: the warp meets again at every guard.
        assert!(
            stats.block_executions.values().all(|&n| n <= 1),
            "{settings:?}: {:?}",
            stats.block_executions
        );
    }
}

#[test]
fn loops_of_figures_5_and_6_and_an_irreducible_loop_run_as_the_machine_pass_makes_them() {
    // The SSA-level pass orders blocks and moves back edges up as the machine pass does,
    // so the loops of Figures 5 and 6 run each original block as often under both.
    for file in ["loop_jump_out_fig5.wir", "loop_jump_in_fig6.wir"] {
        let (_, func, prepared) = load(file);
        let n = func.layout.num_blocks();
        for mode in ["kernel", "divergent"] {
            let setting = format!("linearize_regions={mode}");
            let machine = original_block_executions(
                &emulate(&func, &prepared, &["passes=linearize", &setting], 32),
                n,
            );
            let ssa = original_block_executions(
                &emulate(&func, &prepared, &["passes=linearize_ssa", &setting], 32),
                n,
            );
            assert_eq!(ssa, machine, "{file} {mode}");
        }
    }
    // The irreducible loop's order depends on the order of branch arms, which lowering
    // may swap (the machine pass sees `brif` arms as the machine branch names them): the
    // loops merge differently, and both orders take far fewer passes than the hardware
    // without linearization (202 passes over the first block).
    let (_, func, prepared) = load("irreducible_loop.wir");
    let n = func.layout.num_blocks();
    let total = |settings: &[&str]| -> u64 {
        original_block_executions(&emulate(&func, &prepared, settings, 32), n)
            .values()
            .sum()
    };
    let before = total(&[]);
    for mode in ["kernel", "divergent"] {
        let setting = format!("linearize_regions={mode}");
        let ssa = total(&["passes=linearize_ssa", &setting]);
        assert!(ssa * 3 < before * 2, "{mode}: {ssa} vs {before} before");
    }
}
