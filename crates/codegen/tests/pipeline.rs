//! The whole code-generation pipeline over the kernel corpus: every kernel lowers, passes
//! the machine-IR verifier, is allocated (with regalloc2's checker, both allocators, a full
//! register file and one small enough to force spills), and its PTX is accepted by `ptxas`
//! for sm_70, sm_80 and sm_90.

use std::path::PathBuf;
use warplift_codegen::isa::ptx::{emit_ptx, ptxas, PtxOptions};
use warplift_codegen::lower::lower;
use warplift_codegen::mir::verify::{verify_mir, verify_mir_with_limits};
use warplift_codegen::regalloc::{
    allocate_with, Algorithm, AllocOptions, RegisterFile, ReservationRequest,
};
use warplift_ir::parser::parse_functions;
use warplift_ir::verifier::verify_function;

fn corpus() -> Vec<(String, warplift_ir::Function)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/corpus exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wir"))
        .collect();
    files.sort();
    assert!(files.len() >= 25, "the corpus has {} kernels", files.len());
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        for func in parse_functions(&text).unwrap_or_else(|e| panic!("{name}: {e}")) {
            verify_function(&func).unwrap_or_else(|e| panic!("{name}: {e}"));
            out.push((name.clone(), func));
        }
    }
    out
}

/// A register file small enough that most corpus kernels spill.
const TINY: RegisterFile = RegisterFile {
    b32: 4,
    b64: 3,
    pred: 2,
};

#[test]
fn every_corpus_kernel_compiles_to_ptx_that_ptxas_accepts() {
    let ptxas = ptxas::ptxas_for_tests();
    let mut spilled = 0;
    for (name, func) in corpus() {
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
                file_name: Some(name.clone()),
                ..PtxOptions::default()
            };
            let ptx = emit_ptx(&allocated.func, &opts)
                .unwrap_or_else(|e| panic!("{name}: PTX: {e}\n{}", allocated.func));
            if let Some(ptxas) = &ptxas {
                ptxas::check_assembles(ptxas, &ptx).unwrap_or_else(|e| panic!("{name}: {e}"));
            }
        }
    }
    assert!(spilled >= 10, "only {spilled} allocations spilled");
}
