//! What the generator produces, over a fixed range of seeds: every opcode, loops (some of
//! them irreducible), varied launch shapes, and kernels that verify and terminate.

use std::collections::BTreeSet;
use warplift_fuzzgen::{generate, GeneratedCase};
use warplift_ir::cfg::{ControlFlowGraph, LoopForest};
use warplift_ir::interp::{self, InterpConfig};
use warplift_ir::verifier::verify_function;
use warplift_ir::Opcode;

const SEEDS: u64 = 150;

#[test]
fn kernels_cover_every_opcode_and_irreducible_loops() {
    let mut opcodes = BTreeSet::new();
    let (mut with_loops, mut irreducible, mut blocks_3d) = (0, 0, 0);
    let mut shapes = BTreeSet::new();
    for seed in 0..SEEDS {
        let case = GeneratedCase::from_seed(seed);
        verify_function(&case.func).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        for inst in case.func.layout.insts() {
            opcodes.insert(case.func.dfg.insts[inst].opcode());
        }
        let cfg = ControlFlowGraph::compute(&case.func);
        let forest = LoopForest::compute(&cfg);
        if !forest.is_empty() {
            with_loops += 1;
        }
        if forest.loops().any(|l| forest.is_irreducible(l)) {
            irreducible += 1;
        }
        if case.launch.block[2] > 1 {
            blocks_3d += 1;
        }
        shapes.insert((case.launch.grid, case.launch.block));
    }
    let missing: Vec<_> = Opcode::ALL
        .iter()
        .filter(|op| !opcodes.contains(op))
        .collect();
    assert!(missing.is_empty(), "opcodes never generated: {missing:?}");
    assert!(
        with_loops > SEEDS / 2,
        "only {with_loops} kernels with loops"
    );
    assert!(irreducible > SEEDS / 10, "only {irreducible} irreducible");
    assert!(blocks_3d > SEEDS / 10, "only {blocks_3d} 3-D blocks");
    assert!(
        shapes.len() > SEEDS as usize / 2,
        "only {} shapes",
        shapes.len()
    );
}

#[test]
fn kernels_terminate_and_run_without_faults() {
    for seed in 0..SEEDS {
        let case = GeneratedCase::from_seed(seed);
        let mut prepared = case.launch.prepare(&case.func).unwrap();
        interp::run(&case.func, &mut prepared, &InterpConfig::default())
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", case.text));
    }
}

#[test]
fn few_or_no_bytes_still_give_a_valid_kernel() {
    for data in [&[][..], &[0xff; 3][..], &[0x55; 64][..]] {
        let case = generate(&mut arbitrary::Unstructured::new(data)).unwrap();
        verify_function(&case.func).unwrap();
        case.launch.prepare(&case.func).unwrap();
    }
}
