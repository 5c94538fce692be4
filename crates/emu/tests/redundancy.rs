//! The opt-in redundant-block-execution counter: asking for it changes no other
//! statistic, the counts are bounded by the block executions, a warp of one lane has
//! none, and the paper's Figure 1 at warp width 4 has 3 (B3 once, B5 twice).

use std::path::{Path, PathBuf};
use warplift_codegen::isa::simt::encode;
use warplift_codegen::lower::lower;
use warplift_codegen::regalloc::{allocate, RegisterFile, ReservationRequest};
use warplift_emu::{run, run_with, MachineConfig, Program, RunOptions};
use warplift_ir::launch::{Launch, PreparedLaunch};
use warplift_ir::parser::parse_functions;

fn corpus() -> Vec<(String, Program, PreparedLaunch)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/corpus exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wir"))
        .filter(|p| Launch::path_next_to(p).exists())
        .collect();
    files.sort();
    files
        .iter()
        .map(|path| {
            let funcs = parse_functions(&std::fs::read_to_string(path).unwrap()).unwrap();
            let launch = Launch::from_file(&Launch::path_next_to(path)).unwrap();
            let func = launch.select_kernel(&funcs).unwrap();
            let prepared = launch.prepare(func).unwrap();
            let allocated = allocate(
                &lower(func).unwrap(),
                &RegisterFile::MAX,
                &ReservationRequest::none(),
            )
            .unwrap();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            (
                name,
                Program::from_code(&encode(&allocated.func).unwrap()).unwrap(),
                prepared,
            )
        })
        .collect()
}

#[test]
fn counting_changes_nothing_else_and_stays_within_the_executions() {
    let mut seen_redundancy = false;
    for (name, prog, prepared) in corpus() {
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
    }
    assert!(seen_redundancy, "the corpus has unstructured kernels");
}
