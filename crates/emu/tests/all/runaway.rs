//! The per-warp runaway rule and the run monitor: an infinite loop stops with a precise
//! fault however large the grid, a launch whose total work is far above the per-warp
//! budget runs to its end, and a monitor can stop a run and see where each warp stood.
//! Budgets are small here so that the rule's logic is tested without long runs.

use core::ops::ControlFlow;
use warplift_codegen::isa::simt::encode;
use warplift_codegen::{lookup_by_name, Context, Settings};
use warplift_emu::{run, run_with, EmuError, FaultKind, MachineConfig, Program, RunOptions};
use warplift_ir::launch::{Launch, PreparedLaunch};
use warplift_ir::parser::parse_functions;

/// Thread `x` of a block runs `x * scale` iterations, except thread `stuck` of block
/// `stuck_block`, which never stops (line 13 is the loop's back edge).
const SPIN: &str = "kernel %spin(out: i64, scale: i32, stuck: i32, stuck_block: i32) {
block0(v0: i64, v1: i32, v2: i32, v3: i32):
    v4 = thread_id x
    v5 = block_id x
    v6 = imul v4, v1
    v7 = icmp eq v4, v2
    v8 = icmp eq v5, v3
    v9 = band v7, v8
    v10 = iconst.i32 0
    jump block1(v10)
block1(v11: i32):
    v12 = iconst.i32 1
    v13 = iadd v11, v12
    v14 = icmp ult v13, v6
    v15 = bor v14, v9
    brif v15, block1(v13), block2
block2:
    v16 = block_dim x
    v17 = imul v5, v16
    v18 = iadd v17, v4
    v19 = uextend.i64 v18
    v20 = iconst.i64 2
    v21 = ishl v19, v20
    v22 = iadd v0, v21
    store global v13, v22
    return
}";

fn setup(
    grid: u32,
    block: u32,
    scale: i32,
    stuck: i32,
    stuck_block: i32,
) -> (Program, PreparedLaunch) {
    let funcs = parse_functions(SPIN).unwrap();
    let launch = Launch::from_toml_str(
        &format!(
            "grid = [{grid}]\nblock = [{block}]\n[args]\nscale = {scale}\nstuck = {stuck}\n\
         stuck_block = {stuck_block}\n[buffers.out]\ntype = \"i32\"\nlen = {}\ninit = \"zeros\"\n",
            grid * block
        ),
        std::path::Path::new("spin.launch.toml"),
    )
    .unwrap();
    let prepared = launch.prepare(&funcs[0]).unwrap();
    let isa = lookup_by_name("simt", Settings::builder().finish()).unwrap();
    let kernel = Context::new().compile_kernel(&funcs[0], &*isa).unwrap();
    (
        Program::from_code(&encode(&kernel.mir).unwrap()).unwrap(),
        prepared,
    )
}

fn config(width: u32, steps: u64) -> MachineConfig {
    MachineConfig::builder()
        .warp_width(width)
        .max_warp_steps(steps)
        .build()
        .unwrap()
}

#[test]
fn an_infinite_loop_stops_at_the_warp_budget_with_a_precise_fault() {
    let (prog, launch) = setup(8, 64, 2, 5, 3);
    let err = run(&prog, &mut launch.clone(), &config(32, 2000)).unwrap_err();
    let f = err.fault().unwrap_or_else(|| panic!("{err}"));
    // The budget is 2000, or 8 times the longest warp finished by then.
    let FaultKind::Runaway { issued, budget } = f.kind else {
        panic!("{err}");
    };
    assert_eq!(issued, budget);
    assert!(budget >= 2000, "{err}");
    assert_eq!(f.block, [3, 0, 0]);
    assert_eq!(
        f.thread,
        [5, 0, 0],
        "the only active lane is the stuck thread"
    );
    assert!(f.srcloc.line >= 11 && f.srcloc.line <= 16, "{err}");
    assert_eq!(f.code_block, "block1", "{err}");
    assert!(err.to_string().contains("runaway warp"), "{err}");
}

#[test]
fn the_budget_is_per_warp_not_per_launch() {
    // 256 blocks of 64 threads, up to 40 iterations each: far more work in all than the
    // per-warp budget, which no single warp reaches.
    let (prog, launch) = setup(256, 64, 1, -1, -1);
    let steps = 1000;
    let mut l = launch.clone();
    let stats = run(&prog, &mut l, &config(32, steps)).unwrap();
    assert!(
        stats.warp_instructions > 100 * steps,
        "{}",
        stats.warp_instructions
    );
    // The memory is that of an unlimited run.
    let mut free = launch.clone();
    run(&prog, &mut free, &config(32, u64::MAX)).unwrap();
    let bytes = |l: &PreparedLaunch| l.memory.buffers[0].bytes.clone();
    assert_eq!(bytes(&l), bytes(&free));
}

#[test]
fn the_budget_grows_with_the_longest_finished_warp() {
    // Width 1: thread 0's warp issues a few instructions, thread 3's about four times as
    // many per iteration count; with a budget just above thread 1's count, thread 3 runs
    // to its end only because finished warps raised the budget.
    let (prog, launch) = setup(1, 4, 6, -1, -1);
    let counts = |steps| run(&prog, &mut launch.clone(), &config(1, steps));
    let full = counts(u64::MAX).unwrap();
    // Find the smallest budget that lets the launch run: it is far below the longest
    // warp's count, as the budget grew with the warps that finished.
    let per_launch = full.warp_instructions;
    let mut lo = 1;
    let mut hi = per_launch;
    while lo < hi {
        let mid = (lo + hi) / 2;
        if counts(mid).is_ok() {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    assert!(
        lo * 2 < per_launch / 4,
        "smallest budget {lo}, launch {per_launch}"
    );
    // Below it, the fault is a runaway, not another error.
    let err = counts(lo - 1).unwrap_err();
    assert!(
        matches!(err.fault().unwrap().kind, FaultKind::Runaway { .. }),
        "{err}"
    );
    // A stuck thread still stops, finished warps or not.
    let (prog, launch) = setup(1, 4, 6, 3, 0);
    let err = run(&prog, &mut launch.clone(), &config(1, lo)).unwrap_err();
    let f = err.fault().unwrap();
    assert!(matches!(f.kind, FaultKind::Runaway { .. }), "{err}");
    assert_eq!(f.thread, [3, 0, 0]);
}

#[test]
fn a_monitor_sees_progress_and_can_stop_the_run() {
    let (prog, launch) = setup(64, 64, 1, 0, 0);
    let mut polls = Vec::new();
    let mut monitor = |p: &warplift_emu::Progress| {
        polls.push(*p);
        if polls.len() == 3 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let options = RunOptions {
        monitor: Some(&mut monitor),
        ..RunOptions::default()
    };
    let err = run_with(&prog, &mut launch.clone(), &config(32, u64::MAX), options).unwrap_err();
    let EmuError::Interrupted(stop) = &err else {
        panic!("{err}");
    };
    assert_eq!(polls.len(), 3);
    assert!(polls.windows(2).all(|w| w[0].cycles < w[1].cycles));
    assert!(polls.iter().all(|p| p.blocks == 64));
    assert_eq!(stop.stats.cycles, polls[2].cycles);
    assert_eq!(stop.stats.warp_instructions, polls[2].warp_instructions);
    // The stuck warp (block 0, thread 0) is among the warps still going.
    let stuck = stop
        .warps
        .iter()
        .find(|w| w.block == [0, 0, 0] && w.first_thread == [0, 0, 0])
        .unwrap_or_else(|| panic!("{err}"));
    assert_eq!(stuck.active_threads, 1);
    assert_eq!(stuck.code_block, "block1");
    assert!(err.to_string().contains("interrupted"), "{err}");
    // The message counts the blocks done against the whole grid, not only those started.
    assert_eq!(stop.blocks, 64);
    assert!(
        err.to_string()
            .contains("of the grid's 64 thread blocks done"),
        "{err}"
    );
}
