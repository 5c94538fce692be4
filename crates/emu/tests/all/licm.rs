//! Loop-invariant code motion (`--passes licm`) on the emulator and the interpreter: every
//! corpus kernel, after `licm` and after `licm,meld`, leaves the reference interpreter's
//! memory at warp widths 1, 7, 32 and 64; bitonic sort gains from the move alone and
//! before melding; and on the DARM kernels the pass is never more than 1% slower.

use crate::common;

use common::{compile, each_kernel, emulate, load, References};
use warplift_codegen::isa::simt::encode;
use warplift_emu::Program;

#[test]
fn every_corpus_kernel_after_licm_leaves_the_interpreters_memory() {
    let pipelines: [&[&str]; 2] = [&["passes=licm"], &["passes=licm,meld"]];
    let runs: usize = each_kernel(|name, func, prepared| {
        let references = References::compute(name, &func, &prepared);
        let mut runs = 0;
        for settings in pipelines {
            let kernel = compile(&func, settings);
            let code = encode(&kernel.mir).unwrap_or_else(|e| panic!("{name}: {e}"));
            let prog =
                Program::from_code(&code).unwrap_or_else(|e| panic!("{name}: {e}\n{}", kernel.mir));
            runs += references.check(&prog, &format!("{settings:?}"), &kernel.mir);
        }
        runs
    })
    .into_iter()
    .sum();
    assert!(runs >= 400, "only {runs} runs");
}

/// Bitonic sort at its corpus launch, warp width 32: moving the region condition
/// `(tid & k) == 0` (and the shared address of the thread's own element) out of the j
/// loop saves cycles alone and before melding. `darm_bit_llvm`, which LLVM's LICM already
/// moved, is left as it is.
#[test]
fn bitonic_sort_gains_from_licm_alone_and_before_melding() {
    let (_, func, prepared) = load("darm_bit.wir");
    let run = |settings: &[&str]| emulate(&func, &prepared, settings, 32).cycles;
    assert_eq!(
        (
            run(&[]),
            run(&["passes=licm"]),
            run(&["passes=meld"]),
            run(&["passes=licm,meld"])
        ),
        (4639, 4479, 3799, 3699)
    );
    let (_, llvm, prepared) = load("darm_bit_llvm.wir");
    let base = emulate(&llvm, &prepared, &[], 32).cycles;
    assert_eq!(emulate(&llvm, &prepared, &["passes=licm"], 32).cycles, base);
}

/// On every DARM benchmark kernel and the melding kernels of the corpus (at their launch
/// files' block size), `licm` and `licm,meld` are never more than 1% slower than the
/// kernel as it was, at warp widths 32 and 64.
#[test]
fn licm_is_never_more_than_one_percent_slower_on_the_darm_kernels() {
    let pipelines: [&[&str]; 2] = [&["passes=licm"], &["passes=licm,meld"]];
    let checked = each_kernel(|name, func, prepared| {
        if !(name.starts_with("darm_") || name.starts_with("meld_")) {
            return 0;
        }
        let mut n = 0;
        for width in [32, 64] {
            let base = emulate(&func, &prepared, &[], width).cycles;
            for settings in pipelines {
                let cycles = emulate(&func, &prepared, settings, width).cycles;
                assert!(
                    cycles * 100 <= base * 101,
                    "{name} at warp width {width} with {settings:?}: {cycles} cycles against {base}"
                );
                n += 1;
            }
        }
        n
    })
    .into_iter()
    .sum::<usize>();
    assert!(checked >= 60, "only {checked} runs");
}
