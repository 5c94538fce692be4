//! SSA-level linearization (`--passes linearize_ssa`) on the emulator: every corpus
//! kernel, linearized before register allocation in each region mode, leaves the
//! reference interpreter's memory at warp widths 1, 7, 32 and 64; no block of the paper's
//! Figure 1 runs twice per warp; and the loops of Figures 5 and 6 and an irreducible loop
//! run each block at most as often as the machine-level pass makes them run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use warplift_codegen::{lookup_by_name, Context, Settings};
use warplift_emu::{run, MachineConfig, Program, Stats};
use warplift_ir::launch::{Launch, PreparedLaunch};
use warplift_ir::parser::parse_functions;
use warplift_ir::Function;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus")
}

/// The corpus kernels that have a launch file: name, kernel, prepared launch.
fn corpus() -> Vec<(String, Function, PreparedLaunch)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("tests/corpus exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wir"))
        .collect();
    files.sort();
    files
        .into_iter()
        .filter(|p| Launch::path_next_to(p).exists())
        .map(|p| load(&p.file_name().unwrap().to_string_lossy()))
        .collect()
}

fn load(file: &str) -> (String, Function, PreparedLaunch) {
    let path = corpus_dir().join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let funcs = parse_functions(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
    let launch = Launch::from_file(&Launch::path_next_to(&path)).unwrap();
    let func = launch.select_kernel(&funcs).unwrap().clone();
    let prepared = launch.prepare(&func).unwrap();
    (file.to_string(), func, prepared)
}

/// Compiles `func` for the SIMT target with `settings` (`name=value` each).
fn compile(func: &Function, settings: &[&str]) -> warplift_codegen::CompiledKernel {
    let mut b = Settings::builder();
    for s in settings {
        b.set_assignment(s).unwrap();
    }
    let isa = lookup_by_name("simt", b.finish()).unwrap();
    Context::new()
        .compile_kernel(func, &*isa)
        .unwrap_or_else(|e| panic!("%{}: {settings:?}: {e}", func.name))
}

/// Runs `func` compiled with `settings` at warp width `width`.
fn emulate(func: &Function, prepared: &PreparedLaunch, settings: &[&str], width: u32) -> Stats {
    let kernel = compile(func, settings);
    let prog = Program::from_mir(&kernel.mir).unwrap();
    let config = MachineConfig::builder().warp_width(width).build().unwrap();
    let mut launch = prepared.clone();
    run(&prog, &mut launch, &config)
        .unwrap_or_else(|e| panic!("%{}: {settings:?}: {e}\n{}", func.name, kernel.mir))
}

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
    let mut runs = 0;
    for (name, func, prepared) in corpus() {
        let references: Vec<_> = [1, 7, 32, 64]
            .map(|warp_size| {
                let mut reference = prepared.clone();
                let config = warplift_ir::interp::InterpConfig {
                    warp_size,
                    ..Default::default()
                };
                let result = warplift_ir::interp::run(&func, &mut reference, &config);
                (result, reference)
            })
            .into_iter()
            .collect();
        for settings in MODES {
            let kernel = compile(&func, settings);
            let prog = Program::from_mir(&kernel.mir)
                .unwrap_or_else(|e| panic!("{name}: {e}\n{}", kernel.mir));
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
                                "{name}: buffer {} differs at width {width} ({settings:?})\n\
                                 interpreter: {}\nemulator: {}\n{}",
                                a.name,
                                reference.memory.results_json(),
                                emulated.memory.results_json(),
                                kernel.mir
                            );
                        }
                    }
                    (Err(_), Err(_)) => {}
                    (Ok(_), Err(e)) => {
                        panic!("{name}: width {width} ({settings:?}): {e}\n{}", kernel.mir)
                    }
                    (Err(e), Ok(_)) => {
                        panic!("{name}: the interpreter faults ({e}), the emulator does not")
                    }
                }
                runs += 1;
            }
        }
    }
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
