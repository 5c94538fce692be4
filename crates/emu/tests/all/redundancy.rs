//! The opt-in redundant-block-execution counter: asking for it changes no other
//! statistic, the counts are bounded by the block executions, a warp of one lane has
//! none, and the paper's Figure 1 at warp width 4 has 3 (B3 once, B5 twice).

use warplift_codegen::lower::lower;
use warplift_codegen::regalloc::{allocate, RegisterFile, ReservationRequest};
use warplift_emu::{run, run_with, MachineConfig, Program, RunOptions};
use warplift_filetests::Walk;
use warplift_ir::Function;

/// `func` lowered, allocated into the full register file, and loaded.
fn program(func: &Function) -> Program {
    let allocated = allocate(
        &lower(func).unwrap(),
        &RegisterFile::MAX,
        &ReservationRequest::none(),
    )
    .unwrap();
    Program::from_code(&warplift_codegen::isa::simt::encode(&allocated.func).unwrap()).unwrap()
}

#[test]
fn counting_changes_nothing_else_and_stays_within_the_executions() {
    let seen = Walk::corpus().with_launch().each(|file| {
        let name = file.stem();
        let (func, prepared) = file.kernel().unwrap();
        let prog = program(&func);
        let mut seen_redundancy = false;
        for width in [1, 4, 32] {
            let config = MachineConfig::builder().warp_width(width).build().unwrap();
            let mut plain_memory = prepared.clone();
            let plain = run(&prog, &mut plain_memory, &config).unwrap();
            let mut counted_memory = prepared.clone();
            let options = RunOptions {
                redundancy: true,
                ..RunOptions::default()
            };
            let mut counted = run_with(&prog, &mut counted_memory, &config, options).unwrap();
            let redundant = counted
                .redundant_block_executions
                .take()
                .expect("counted when asked");
            assert_eq!(plain, counted, "{name} w{width}");
            assert!(plain.redundant_block_executions.is_none());
            for (a, b) in plain_memory
                .memory
                .buffers
                .iter()
                .zip(&counted_memory.memory.buffers)
            {
                assert_eq!(a.bytes, b.bytes, "{name} w{width}");
            }
            assert_eq!(
                redundant.keys().collect::<Vec<_>>(),
                plain.block_executions.keys().collect::<Vec<_>>(),
                "{name}"
            );
            for (block, &n) in &redundant {
                assert!(
                    n <= plain.block_executions[block],
                    "{name} w{width} {block}"
                );
                if width == 1 {
                    assert_eq!(n, 0, "{name}: a single lane is never redundant");
                }
            }
            seen_redundancy |= redundant.values().any(|&n| n > 0);
            if name == "short_circuit_fig1" && width == 4 {
                assert_eq!(redundant["block3"], 1);
                assert_eq!(redundant["block5"], 2);
                // The IR blocks' (the code generator's own blocks, `codeN`, left out).
                let ir: u64 = redundant
                    .iter()
                    .filter(|(b, _)| b.starts_with("block"))
                    .map(|(_, n)| n)
                    .sum();
                assert_eq!(ir, 3);
            }
        }
        seen_redundancy
    });
    assert!(seen.contains(&true), "the corpus has unstructured kernels");
}
