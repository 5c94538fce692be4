//! The whole code-generation pipeline over the kernel corpus: every kernel lowers, passes
//! the machine-IR verifier, is allocated (with regalloc2's checker, both allocators, a full
//! register file and one small enough to force spills), and its PTX is accepted by `ptxas`
//! for sm_70, sm_80 and sm_90.

use warplift_codegen::isa::ptx::{emit_ptx, ptxas, PtxOptions};
use warplift_codegen::lower::lower;
use warplift_codegen::mir::verify::{verify_mir, verify_mir_with_limits};
use warplift_codegen::regalloc::{
    allocate_with, Algorithm, AllocOptions, RegisterFile, ReservationRequest,
};
use warplift_filetests::Walk;
use warplift_ir::verifier::verify_function;

/// A register file small enough that most corpus kernels spill.
const TINY: RegisterFile = RegisterFile {
    b32: 4,
    b64: 3,
    pred: 2,
};

#[test]
fn every_corpus_kernel_compiles_to_ptx_that_ptxas_accepts() {
    let ptxas = ptxas::ptxas_for_tests();
    let spilled: usize = Walk::corpus()
        .at_least(25)
        .functions(|name, func| {
            let mut spilled = 0;
            verify_function(&func).unwrap_or_else(|e| panic!("{name}: {e}"));
            let mir = lower(&func).unwrap_or_else(|e| panic!("{name}: lowering: {e}"));
            verify_mir(&mir).unwrap_or_else(|e| panic!("{name}: {e}\n{mir}"));
            for (regs, algorithm) in [
                (RegisterFile::MAX, Algorithm::Backtracking),
                (TINY, Algorithm::Backtracking),
                (TINY, Algorithm::Fast),
            ] {
                let options = AllocOptions {
                    algorithm,
                    check: true,
                };
                let allocated = allocate_with(&mir, &regs, &ReservationRequest::none(), &options)
                    .unwrap_or_else(|e| panic!("{name}: allocation into {regs:?}: {e}\n{mir}"));
                let limits = [regs.b32, regs.b64, regs.pred];
                verify_mir_with_limits(&allocated.func, Some(limits))
                    .unwrap_or_else(|e| panic!("{name}: {e}\n{}", allocated.func));
                if allocated.stats.spills > 0 {
                    spilled += 1;
                }
                let opts = PtxOptions {
                    file_name: Some(name.to_string()),
                    ..PtxOptions::default()
                };
                let ptx = emit_ptx(&allocated.func, &opts)
                    .unwrap_or_else(|e| panic!("{name}: PTX: {e}\n{}", allocated.func));
                if let Some(ptxas) = &ptxas {
                    ptxas::check_assembles(ptxas, &ptx).unwrap_or_else(|e| panic!("{name}: {e}"));
                }
            }
            spilled
        })
        .into_iter()
        .sum();
    assert!(spilled >= 10, "only {spilled} allocations spilled");
}
