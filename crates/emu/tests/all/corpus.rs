//! The emulator's main correctness test: every corpus kernel, lowered and allocated (with
//! the full register file and with one small enough to force spills), run at warp widths
//! 1, 7, 32 and 64, leaves exactly the global memory the reference interpreter leaves.

use crate::common;

use common::{each_kernel, References};
use warplift_codegen::lower::lower;
use warplift_codegen::regalloc::{allocate, RegisterFile, ReservationRequest};
use warplift_emu::Program;

/// A register file small enough that most corpus kernels spill.
const TINY: RegisterFile = RegisterFile {
    b32: 4,
    b64: 3,
    pred: 2,
};

#[test]
fn every_corpus_kernel_leaves_the_interpreters_memory() {
    let runs: usize = each_kernel(|name, func, prepared| {
        let mut runs = 0;
        let references = References::compute(name, &func, &prepared);
        let mir = lower(&func).unwrap_or_else(|e| panic!("{name}: lowering: {e}"));
        for regs in [RegisterFile::MAX, TINY] {
            let allocated = allocate(&mir, &regs, &ReservationRequest::none())
                .unwrap_or_else(|e| panic!("{name}: allocation: {e}"));
            let prog =
                Program::from_code(&warplift_codegen::isa::simt::encode(&allocated.func).unwrap())
                    .unwrap_or_else(|e| panic!("{name}: {e}\n{}", allocated.func));
            runs += references.check(&prog, &format!("{regs:?}"), &allocated.func);
        }
        runs
    })
    .into_iter()
    .sum();
    assert!(runs >= 100, "only {runs} runs");
}
