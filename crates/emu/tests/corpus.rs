//! The emulator's main correctness test: every corpus kernel, lowered and allocated (with
//! the full register file and with one small enough to force spills), run at warp widths
//! 1, 7, 32 and 64, leaves exactly the global memory the reference interpreter leaves.

use std::path::{Path, PathBuf};
use warplift_codegen::lower::lower;
use warplift_codegen::regalloc::{allocate, RegisterFile, ReservationRequest};
use warplift_emu::{run, MachineConfig, Program};
use warplift_ir::launch::Launch;
use warplift_ir::parser::parse_functions;

/// A register file small enough that most corpus kernels spill.
const TINY: RegisterFile = RegisterFile {
    b32: 4,
    b64: 3,
    pred: 2,
};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus")
}

#[test]
fn every_corpus_kernel_leaves_the_interpreters_memory() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("tests/corpus exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wir"))
        .collect();
    files.sort();
    let mut runs = 0;
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let launch_path = Launch::path_next_to(&path);
        if !launch_path.exists() {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let funcs = parse_functions(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let launch = Launch::from_file(&launch_path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let func = launch.select_kernel(&funcs).unwrap();
        let prepared = launch
            .prepare(func)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        // `lane_id` depends on the warp width: the reference runs at each width too.
        let references: Vec<_> = [1, 7, 32, 64]
            .map(|warp_size| {
                let mut reference = prepared.clone();
                let config = warplift_ir::interp::InterpConfig {
                    warp_size,
                    ..Default::default()
                };
                let result = warplift_ir::interp::run(func, &mut reference, &config);
                (result, reference)
            })
            .into_iter()
            .collect();
        let mir = lower(func).unwrap_or_else(|e| panic!("{name}: lowering: {e}"));
        for regs in [RegisterFile::MAX, TINY] {
            let allocated = allocate(&mir, &regs, &ReservationRequest::none())
                .unwrap_or_else(|e| panic!("{name}: allocation: {e}"));
            let prog = Program::from_mir(&allocated.func)
                .unwrap_or_else(|e| panic!("{name}: {e}\n{}", allocated.func));
            for (width, (interp, reference)) in [1, 7, 32, 64].into_iter().zip(&references) {
                let config = MachineConfig::builder().warp_width(width).build().unwrap();
                let mut emulated = prepared.clone();
                let result = run(&prog, &mut emulated, &config);
                match (interp, &result) {
                    (Ok(_), Ok(_)) => {
                        for (a, b) in reference
                            .memory
                            .buffers
                            .iter()
                            .zip(&emulated.memory.buffers)
                        {
                            assert!(
                                a.bytes == b.bytes,
                                "{name}: buffer {} differs at width {width} ({regs:?})\n\
                                 interpreter: {}\nemulator: {}\n{}",
                                a.name,
                                reference.memory.results_json(),
                                emulated.memory.results_json(),
                                allocated.func
                            );
                        }
                    }
                    (Err(_), Err(_)) => {}
                    (Ok(_), Err(e)) => panic!("{name}: width {width} ({regs:?}): {e}"),
                    (Err(e), Ok(_)) => {
                        panic!("{name}: the interpreter faults ({e}), the emulator does not")
                    }
                }
                runs += 1;
            }
        }
    }
    assert!(runs >= 100, "only {runs} runs");
}
