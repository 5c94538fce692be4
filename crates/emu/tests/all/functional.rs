//! The functional mode against the timed emulator: on every corpus kernel at warp widths
//! 1, 7, 32 and 64, a functional run leaves the timed run's memory and counts the same
//! warp- and thread-instructions, block executions, redundant block executions, stack
//! depth, transactions and barriers, with the timing quantities zero; its buffers are the
//! same for 1, 2 and 3 rayon threads; and a fault is the timed run's kind of fault.

use crate::common;

use common::{compile, each_kernel, WIDTHS};
use warplift_emu::{
    run, run_functional, run_with, EmuError, MachineConfig, Program, RunOptions, SchedulerPolicy,
    Stats,
};
use warplift_ir::launch::PreparedLaunch;

fn run_in_pool(
    threads: usize,
    prog: &Program,
    launch: &mut PreparedLaunch,
    config: &MachineConfig,
) -> Result<Stats, EmuError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| run_functional(prog, launch, config))
}

#[test]
fn functional_runs_leave_the_timed_memory_and_counts() {
    let (runs, compared) = each_kernel(|name, func, prepared| {
        let mut runs = 0;
        let mut compared = 0;
        let kernel = compile(&func, &[]);
        let prog =
            Program::from_code(&warplift_codegen::isa::simt::encode(&kernel.mir).unwrap()).unwrap();
        for width in WIDTHS {
            let config = MachineConfig::builder().warp_width(width).build().unwrap();
            let mut timed = prepared.clone();
            let options = RunOptions {
                redundancy: true,
                ..RunOptions::default()
            };
            let t = run_with(&prog, &mut timed, &config, options);
            let mut functional = prepared.clone();
            let options = RunOptions {
                redundancy: true,
                functional: true,
                ..RunOptions::default()
            };
            let f = run_with(&prog, &mut functional, &config, options);
            match (t, f) {
                (Ok(t), Ok(f)) => {
                    for (a, b) in timed.memory.buffers.iter().zip(&functional.memory.buffers) {
                        assert!(a.bytes == b.bytes, "{name} w{width}: buffer {}", a.name);
                    }
                    let untimed = Stats {
                        cycles: 0,
                        stalls: Default::default(),
                        occupancy: 0.0,
                        ..t.clone()
                    };
                    // Counts that depend on the interleaving of threads (a compare-and-swap
                    // retry loop) may differ; the others must not. A kernel whose counts
                    // are the same on one SM under the other scheduler policy is of the
                    // second kind.
                    let lrr = MachineConfig::builder()
                        .warp_width(width)
                        .sms(1)
                        .scheduler(SchedulerPolicy::Lrr)
                        .build()
                        .unwrap();
                    let l = run(&prog, &mut prepared.clone(), &lrr).unwrap();
                    let deterministic = l.warp_instructions == t.warp_instructions
                        && l.block_executions == t.block_executions;
                    if deterministic {
                        assert_eq!(f, untimed, "{name} w{width}");
                        compared += 1;
                    }
                    // Any number of threads: the same buffers.
                    for threads in [1, 3] {
                        let mut again = prepared.clone();
                        let s = run_in_pool(threads, &prog, &mut again, &config).unwrap();
                        if deterministic {
                            let f = Stats {
                                redundant_block_executions: None,
                                ..f.clone()
                            };
                            assert_eq!(s, f, "{name} w{width} x{threads}");
                        }
                        for (a, b) in again.memory.buffers.iter().zip(&functional.memory.buffers) {
                            assert!(a.bytes == b.bytes, "{name} w{width} x{threads}: {}", a.name);
                        }
                    }
                }
                (Err(t), Err(f)) => {
                    let (t, f) = (t.fault().unwrap(), f.fault().unwrap());
                    assert_eq!(
                        std::mem::discriminant(&t.kind),
                        std::mem::discriminant(&f.kind),
                        "{name} w{width}: {t} / {f}"
                    );
                }
                (t, f) => panic!("{name} w{width}: timed {t:?}, functional {f:?}"),
            }
            runs += 1;
        }
        (runs, compared)
    })
    .into_iter()
    .fold((0, 0), |acc, x| (acc.0 + x.0, acc.1 + x.1));
    assert!(runs >= 100, "only {runs} runs");
    assert!(
        compared * 10 >= runs * 8,
        "counts compared in {compared} of {runs} runs"
    );
}

#[test]
fn a_functional_run_has_no_trace() {
    let (_, func, prepared) = common::load("if_else_diamond.wir");
    let prog =
        Program::from_code(&warplift_codegen::isa::simt::encode(&compile(&func, &[]).mir).unwrap())
            .unwrap();
    let mut trace = warplift_emu::Trace::new();
    let options = RunOptions {
        trace: Some(&mut trace),
        functional: true,
        ..RunOptions::default()
    };
    let config = MachineConfig::default();
    let err = run_with(&prog, &mut prepared.clone(), &config, options).unwrap_err();
    assert!(err.to_string().contains("no timeline"), "{err}");
}
