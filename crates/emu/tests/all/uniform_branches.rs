//! Branches the divergence analysis proves uniform never split a warp: compiled through
//! the whole pipeline (parse, lower, allocate, `Program::from_mir`), a kernel whose only
//! branches are uniform runs with a reconvergence stack of depth 1, at warp width 32, and
//! leaves the interpreter's memory. A branch wrongly marked uniform is caught: the
//! emulator faults when such a branch splits the warp, which makes every differential
//! test of the emulator (the corpus one above all) a soundness check of the analysis.

use std::path::Path;
use warplift_codegen::lower::lower;
use warplift_codegen::mir::MInstKind;
use warplift_codegen::regalloc::{allocate, RegisterFile, ReservationRequest};
use warplift_emu::{run, FaultKind, MachineConfig, Program, Stats};
use warplift_filetests::Walk;
use warplift_ir::launch::Launch;
use warplift_ir::parser::parse_function;

/// `for (i = 0; i < n; i++) out[tid] += i;` — the loop runs `n` (a kernel parameter)
/// times in every thread.
const UNIFORM_LOOP: &str = "kernel %uniform_loop(out: i64, n: i32) {
block0(v0: i64, v1: i32):
    v2 = thread_id x
    v3 = uextend.i64 v2
    v4 = iconst.i64 2
    v5 = ishl v3, v4
    v6 = iadd v0, v5
    v7 = iconst.i32 0
    jump block1(v7, v7)
block1(v8: i32, v9: i32):
    v10 = icmp slt v8, v1
    brif v10, block2, block3
block2:
    v11 = iadd v9, v8
    v12 = iconst.i32 1
    v13 = iadd v8, v12
    jump block1(v13, v11)
block3:
    store global v9, v6
    return
}";

const LAUNCH: &str = "
block = [64]
[args]
n = 10
[buffers.out]
type = \"i32\"
len = 64
init = \"zeros\"
";

/// Compiles `wir`, runs it at warp width 32 and checks the memory against the
/// interpreter; returns the statistics and the number of uniform and divergent branches.
fn run_checked(wir: &str) -> (Stats, usize, usize) {
    let func = parse_function(wir).unwrap();
    let launch = Launch::from_toml_str(LAUNCH, Path::new("test.launch.toml")).unwrap();
    let prepared = launch.prepare(&func).unwrap();
    let mut reference = prepared.clone();
    warplift_ir::interp::run(&func, &mut reference, &Default::default()).unwrap();

    let mir = lower(&func).unwrap();
    let allocated = allocate(&mir, &RegisterFile::MAX, &ReservationRequest::none()).unwrap();
    let (mut uni, mut div) = (0, 0);
    for b in &allocated.func.order {
        for inst in &allocated.func.blocks[*b].insts {
            if let MInstKind::Branch { divergent, .. } = inst.kind {
                *(if divergent { &mut div } else { &mut uni }) += 1;
            }
        }
    }
    let prog =
        Program::from_code(&warplift_codegen::isa::simt::encode(&allocated.func).unwrap()).unwrap();
    let mut emulated = prepared;
    let config = MachineConfig::builder().warp_width(32).build().unwrap();
    let stats = run(&prog, &mut emulated, &config).unwrap();
    assert_eq!(
        emulated.memory.results_json(),
        reference.memory.results_json()
    );
    (stats, uni, div)
}

#[test]
fn a_loop_over_a_kernel_parameter_never_pushes_the_stack() {
    let (stats, uni, div) = run_checked(UNIFORM_LOOP);
    assert_eq!((uni, div), (1, 0), "the loop branch is uniform");
    assert_eq!(stats.max_stack_depth, 1);
}

#[test]
fn a_loop_over_the_thread_index_diverges() {
    // The same loop running `tid` times: its exit is divergent.
    let (stats, uni, div) =
        run_checked(&UNIFORM_LOOP.replace("icmp slt v8, v1", "icmp slt v8, v2"));
    assert_eq!((uni, div), (0, 1));
    assert!(stats.max_stack_depth > 1);
}

#[test]
fn a_wrongly_uniform_branch_faults() {
    let func = parse_function(&UNIFORM_LOOP.replace("icmp slt v8, v1", "icmp slt v8, v2")).unwrap();
    let launch = Launch::from_toml_str(LAUNCH, Path::new("test.launch.toml")).unwrap();
    let mut prepared = launch.prepare(&func).unwrap();
    let mir = lower(&func).unwrap();
    let mut allocated = allocate(&mir, &RegisterFile::MAX, &ReservationRequest::none()).unwrap();
    for b in allocated.func.order.clone() {
        for inst in &mut allocated.func.blocks[b].insts {
            if let MInstKind::Branch { divergent, .. } = &mut inst.kind {
                *divergent = false;
            }
        }
    }
    let prog =
        Program::from_code(&warplift_codegen::isa::simt::encode(&allocated.func).unwrap()).unwrap();
    let config = MachineConfig::builder().warp_width(32).build().unwrap();
    let err = run(&prog, &mut prepared, &config).unwrap_err();
    let warplift_emu::EmuError::Fault(fault) = &err else {
        panic!("{err}");
    };
    // Thread 0 leaves the loop at once, the other 31 threads of the warp stay.
    assert_eq!(
        fault.kind,
        FaultKind::UniformBranchDiverged {
            taken: 31,
            not_taken: 1
        },
        "{err}"
    );
}

/// The analysis is sound on every corpus kernel under both reconvergence models: lowered
/// with its flags, no branch marked uniform ever splits a warp on the emulator (which
/// faults when one does) at warp widths 4 and 32, and the memory is the interpreter's.
#[test]
fn no_uniform_branch_splits_a_warp_on_the_corpus() {
    use warplift_ir::divergence::Reconvergence;
    // The corpus kernels and the fuzzers' reproducers that have a launch file.
    let walk = Walk::corpus()
        .and_dir("tests/fuzz-regressions")
        .with_launch();
    let (uniform_branches, runs) = walk
        .run(|file| {
            let name = &file.name;
            let (func, prepared) = file.kernel()?;
            let mut uniform_branches = 0;
            let mut runs = 0;
            for model in [Reconvergence::Ipdom, Reconvergence::Independent] {
                let mir = warplift_codegen::lower::lower_for(&func, model).unwrap();
                let allocated =
                    allocate(&mir, &RegisterFile::MAX, &ReservationRequest::none()).unwrap();
                for b in &allocated.func.order {
                    for inst in &allocated.func.blocks[*b].insts {
                        if let MInstKind::Branch {
                            divergent: false, ..
                        } = inst.kind
                        {
                            uniform_branches += 1;
                        }
                    }
                }
                let prog = Program::from_code(
                    &warplift_codegen::isa::simt::encode(&allocated.func).unwrap(),
                )
                .unwrap();
                for width in [4, 32] {
                    let mut reference = prepared.clone();
                    let interp_config = warplift_ir::interp::InterpConfig {
                        warp_width: width,
                        ..Default::default()
                    };
                    let interp = warplift_ir::interp::run(&func, &mut reference, &interp_config);
                    let mut emulated = prepared.clone();
                    let config = MachineConfig::builder().warp_width(width).build().unwrap();
                    let result = run(&prog, &mut emulated, &config);
                    if let Err(warplift_emu::EmuError::Fault(f)) = &result {
                        assert!(
                            !matches!(f.kind, FaultKind::UniformBranchDiverged { .. }),
                            "{name} ({model:?}, width {width}): {f}\n{}",
                            allocated.func
                        );
                    }
                    match (interp, result) {
                        (Ok(_), Ok(_)) => assert_eq!(
                            emulated.memory.results_json(),
                            reference.memory.results_json(),
                            "{name} ({model:?}, width {width})"
                        ),
                        (Err(_), Err(_)) => {}
                        (i, e) => panic!("{name} ({model:?}, width {width}): {i:?} / {e:?}"),
                    }
                    runs += 1;
                }
            }
            Ok::<_, warplift_filetests::Failure>((uniform_branches, runs))
        })
        .into_iter()
        .fold((0, 0), |acc, x| (acc.0 + x.0, acc.1 + x.1));
    assert!(runs >= 100, "only {runs} runs");
    assert!(
        uniform_branches >= 20,
        "only {uniform_branches} uniform branches: the test proves little"
    );
}
