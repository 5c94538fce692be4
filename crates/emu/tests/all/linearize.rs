//! Linearization on the emulator: every corpus kernel, compiled with `--passes linearize`
//! in each region mode and optimisation level, leaves the reference interpreter's memory
//! at warp widths 1, 7, 32 and 64; and the paper's claims about its figures hold: no block
//! of Figure 1 runs twice per warp, Figure 3's reconvergence stack stays shallow, and
//! the loops of Figures 5 and 6 run each block once per iteration of the warp.

use crate::common;

use common::{compile, each_kernel, emulate, load, References};
use std::collections::BTreeMap;
use std::path::Path;
use warplift_codegen::isa::simt::encode;
use warplift_codegen::linearize::stack::max_depth_on_linearized_cfg;
use warplift_emu::{run, run_with, LanePaths, MachineConfig, Program, RunOptions, Stats};
use warplift_ir::launch::Launch;
use warplift_ir::launch::PreparedLaunch;
use warplift_ir::parser::parse_functions;

/// Executions of the kernel's own (IR) blocks; blocks made by the code generator are
/// named `codeN` and left out.
fn ir_block_executions(stats: &Stats) -> BTreeMap<String, u64> {
    stats
        .block_executions
        .iter()
        .filter(|(name, _)| name.starts_with("block"))
        .map(|(n, &c)| (n.clone(), c))
        .collect()
}

const LEVELS: [&str; 4] = [
    "linearize_opt=0",
    "linearize_opt=1",
    "linearize_opt=2",
    "linearize_opt=3",
];

const MODES: [&str; 3] = [
    "linearize_regions=kernel",
    "linearize_regions=all",
    "linearize_regions=divergent",
];

#[test]
fn every_corpus_kernel_linearized_leaves_the_interpreters_memory() {
    let runs: usize = each_kernel(|name, func, prepared| {
        let mut runs = 0;
        let references = References::compute(name, &func, &prepared);
        let mut configs: Vec<Vec<&str>> = Vec::new();
        for mode in MODES {
            for level in LEVELS {
                configs.push(vec!["passes=linearize", mode, level]);
            }
        }
        for level in [LEVELS[0], LEVELS[3]] {
            let kernel = ["passes=linearize", MODES[0], level];
            configs.push([&kernel[..], &["linearize_interleave=true"]].concat());
            configs.push([&kernel[..], &["linearize_merge_loops=always"]].concat());
        }
        configs.push(vec![
            "passes=linearize",
            "linearize_interleave=true",
            "linearize_opt=3",
        ]);
        for settings in &configs {
            let kernel = compile(&func, settings);
            let prog = Program::from_code(&encode(&kernel.mir).unwrap())
                .unwrap_or_else(|e| panic!("{name}: {e}\n{}", kernel.mir));
            runs += references.check(&prog, &format!("{settings:?}"), &kernel.mir);
        }
        runs
    })
    .into_iter()
    .sum();
    assert!(runs >= 1800, "only {runs} runs");
}

/// Kernel mode at O0, the default, and kernel mode at O3 without predication: O3
/// predicates short blocks into the straight-line code of their guards, where the
/// emulator no longer counts them as blocks of their own, so the tests that count block
/// executions turn it off.
const LINEARIZE: [&[&str]; 3] = [
    &["passes=linearize", "linearize_regions=kernel"],
    &["passes=linearize"],
    &[
        "passes=linearize",
        "linearize_regions=kernel",
        "linearize_opt=3",
        "linearize_predicate=0",
    ],
];

#[test]
fn figure_1_runs_every_block_at_most_once_per_warp() {
    let (_, func, prepared) = load("short_circuit_fig1.wir");
    // The paper's 4 threads, in a warp of 4 and in one of 32.
    for width in [4, 32] {
        // Before: B3 twice and B5 three times, as the paper's Section 2.1 says.
        let before = ir_block_executions(&emulate(&func, &prepared, &[], width));
        assert_eq!(before["block3"], 2, "{before:?}");
        assert_eq!(before["block5"], 3, "{before:?}");
        for settings in LINEARIZE
            .iter()
            .chain([&["passes=linearize_ssa"][..]].iter())
        {
            let stats = emulate(&func, &prepared, settings, width);
            let after = ir_block_executions(&stats);
            assert!(after.len() >= 7, "{after:?}");
            assert!(
                (0..7).all(|i| after[&format!("block{i}")] == 1),
                "{settings:?}: {after:?}"
            );
            if settings[0] == "passes=linearize" {
                // Guard tests reconverge at the next guard: one level of divergence at a
                // time.
                assert_eq!(stats.max_stack_depth, 2, "{settings:?}");
            }
        }
    }
}

#[test]
fn figure_3_keeps_the_reconvergence_stack_shallow() {
    let (_, func, prepared) = load("nested_branches_fig3.wir");
    // Before: the 7 entries of the paper's Figure 3(b) while S1 runs (the bottom entry,
    // then two per nested divergent branch), with the paper's 4 threads in a warp of 4 or
    // of 32.
    assert_eq!(emulate(&func, &prepared, &[], 4).max_stack_depth, 7);
    assert_eq!(emulate(&func, &prepared, &[], 32).max_stack_depth, 7);
    for settings in [LINEARIZE[0], LINEARIZE[2]] {
        assert_eq!(emulate(&func, &prepared, settings, 4).max_stack_depth, 2);
    }
    // Kernel mode: every divergent branch is a guard test that reconverges at the next
    // guard, so the stack never holds more than the bottom entry and the lanes running the
    // guarded block (Section 5.3: "the stack depth does not increase").
    for settings in [LINEARIZE[0], LINEARIZE[2]] {
        let stats = emulate(&func, &prepared, settings, 32);
        assert_eq!(stats.max_stack_depth, 2, "{settings:?}");
        let after = ir_block_executions(&stats);
        assert!(after.values().all(|&n| n == 1), "{settings:?}: {after:?}");
    }
    // The default mode linearizes unstructured regions only, and Figure 3 is structured:
    // the pass leaves the kernel as it was.
    let plain = compile(&func, &[]);
    let lin = compile(&func, LINEARIZE[1]);
    assert!(lin
        .mir
        .order
        .iter()
        .all(|&b| lin.mir.blocks[b].kind != warplift_codegen::mir::BlockKind::Guard));
    assert_eq!(lin.mir.order.len(), plain.mir.order.len());
    let stats = emulate(&func, &prepared, LINEARIZE[1], 32);
    assert_eq!(stats.max_stack_depth, 7);
    assert_eq!(
        ir_block_executions(&stats),
        ir_block_executions(&emulate(&func, &prepared, &[], 32))
    );
}

#[test]
fn loops_of_figures_5_and_6_and_an_irreducible_loop_run_as_measured() {
    // Executions per IR block, before and after, at the launch files' width of 32 (one
    // warp). Lanes that jump into the irreducible loop of `loop_jump_in_fig6` at its
    // second block wait there for the lanes that start at its first: no extra pass.
    let cases: [(&str, [u64; 6], [u64; 6]); 3] = [
        (
            "loop_jump_out_fig5.wir",
            [1, 6, 5, 5, 1, 1],
            [1, 6, 5, 5, 1, 1],
        ),
        (
            "loop_jump_in_fig6.wir",
            [1, 1, 6, 6, 1, 0],
            [1, 1, 6, 6, 1, 0],
        ),
        (
            "irreducible_loop.wir",
            [1, 202, 189, 99, 99, 1],
            [1, 112, 104, 43, 43, 1],
        ),
    ];
    for (file, before, after) in cases {
        let (_, func, prepared) = load(file);
        let counts = |settings: &[&str]| {
            let stats = ir_block_executions(&emulate(&func, &prepared, settings, 32));
            (0..6)
                .map(|i| stats.get(&format!("block{i}")).copied().unwrap_or(0))
                .collect::<Vec<_>>()
        };
        assert_eq!(counts(&[]), before, "{file} before");
        assert_eq!(counts(LINEARIZE[0]), after, "{file} after");
        // The default mode finds one unstructured region holding each loop, and
        // linearizes it as kernel mode does.
        assert_eq!(counts(LINEARIZE[1]), after, "{file} default mode");
    }
}

/// Executions of `block0`..`block{n-1}` of `file` at warp width `width`.
fn counts(file: &str, settings: &[&str], width: u32, n: usize) -> Vec<u64> {
    let (_, func, prepared) = load(file);
    let stats = ir_block_executions(&emulate(&func, &prepared, settings, width));
    (0..n)
        .map(|i| stats.get(&format!("block{i}")).copied().unwrap_or(0))
        .collect()
}

#[test]
fn figure_5_with_the_papers_paths_runs_s3_once() {
    // Per 4 lanes: goto at iteration 0, goto at iteration 1, normal exit after 2
    // iterations, never enters the loop (8 lanes: two such warps at width 4, one warp of
    // both groups in step at width 32). Blocks: B1 B2 B3 B4 B5 (S3) B6.
    for (width, warps) in [(4, 2), (32, 1)] {
        let before = counts("loop_jump_out_fig5_paths.wir", &[], width, 6);
        assert_eq!(before, [1, 3, 2, 2, 2, 1].map(|n| n * warps), "w{width}");
        // With default settings (loop merging on) and every level, S3 runs once: the
        // loop's exit stays after the loop.
        for level in LEVELS {
            let machine = ["passes=linearize", level, "linearize_predicate=0"];
            for settings in [&machine[..], &["passes=linearize_ssa"]] {
                let after = counts("loop_jump_out_fig5_paths.wir", settings, width, 6);
                assert_eq!(
                    after,
                    [1, 3, 2, 2, 1, 1].map(|n| n * warps),
                    "w{width} {settings:?}"
                );
            }
        }
    }
}

/// The corpus kernel in `file` with every two-way branch's successors named the other
/// way round (`warplift_filetests::with_branch_successors_swapped`).
fn with_successors_swapped(file: &str) -> (warplift_ir::Function, PreparedLaunch) {
    let (_, _, prepared) = load(file);
    let path = warplift_filetests::repo_root()
        .join("tests/corpus")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let swapped = warplift_filetests::with_branch_successors_swapped(&text)
        .unwrap_or_else(|| panic!("{file}: no branch to swap"));
    let func = parse_functions(&swapped)
        .unwrap_or_else(|e| panic!("{file}: {e:?}\n{swapped}"))
        .remove(0);
    (func, prepared)
}

#[test]
fn figures_1_3_and_5_in_both_successor_orders() {
    // Figure 6 has kernels of its own for its two orders (below); Figures 1, 3 and 5 are
    // checked here with every branch's successors named the other way round too: the
    // same block counts at widths 4 and 32, and after linearization the same stack.
    for swap in [false, true] {
        let get = |file: &str| {
            if swap {
                with_successors_swapped(file)
            } else {
                let (_, func, prepared) = load(file);
                (func, prepared)
            }
        };
        let (fig1, fig1_launch) = get("short_circuit_fig1.wir");
        let (fig3, fig3_launch) = get("nested_branches_fig3.wir");
        let (fig5, fig5_launch) = get("loop_jump_out_fig5_paths.wir");
        let blocks = |stats: &Stats, n: usize| {
            let e = ir_block_executions(stats);
            (0..n)
                .map(|i| e.get(&format!("block{i}")).copied().unwrap_or(0))
                .collect::<Vec<u64>>()
        };
        for (width, warps) in [(4, 2), (32, 1)] {
            let before = emulate(&fig1, &fig1_launch, &[], width);
            let b = ir_block_executions(&before);
            assert_eq!((b["block3"], b["block5"]), (2, 3), "swap {swap} w{width}");
            // Figure 3(b)'s 7 entries; named the other way round, other groups of lanes
            // run first, and the stack peaks at 5 (the depth before linearization
            // depends on the order, the depth after it does not).
            assert_eq!(
                emulate(&fig3, &fig3_launch, &[], width).max_stack_depth,
                if swap { 5 } else { 7 },
                "swap {swap} w{width}"
            );
            assert_eq!(
                blocks(&emulate(&fig5, &fig5_launch, &[], width), 6),
                [1, 3, 2, 2, 2, 1].map(|n| n * warps),
                "swap {swap} w{width}"
            );
            for settings in LINEARIZE
                .iter()
                .chain([&["passes=linearize_ssa"][..]].iter())
            {
                let what = format!("swap {swap} w{width} {settings:?}");
                let stats = emulate(&fig1, &fig1_launch, settings, width);
                assert_eq!(blocks(&stats, 7), [1; 7], "{what}");
                if settings[0] == "passes=linearize" {
                    assert_eq!(stats.max_stack_depth, 2, "{what}");
                }
                if settings.contains(&"linearize_regions=kernel") {
                    let stats = emulate(&fig3, &fig3_launch, settings, width);
                    assert_eq!(stats.max_stack_depth, 2, "{what}");
                }
                assert_eq!(
                    blocks(&emulate(&fig5, &fig5_launch, settings, width), 6),
                    [1, 3, 2, 2, 1, 1].map(|n| n * warps),
                    "{what}"
                );
            }
        }
    }
}

#[test]
fn figure_6_in_both_successor_orders_runs_l1_as_often_as_its_busiest_lane() {
    // Per 4 lanes: jumps to L1 and leaves at once, one iteration, two, none. Blocks: B1
    // B2 B3 B4 B5 (L1) B6. Before, B5 runs 3 times per warp (the jumping lane alone); after,
    // twice (the lane running two iterations), whichever successor B1 names first.
    for file in [
        "loop_jump_in_fig6_paths.wir",
        "loop_jump_in_fig6_paths_swapped.wir",
    ] {
        for (width, warps) in [(4, 2), (32, 1)] {
            let before = counts(file, &[], width, 6);
            assert_eq!(
                before,
                [1, 1, 3, 2, 3, 1].map(|n| n * warps),
                "{file} w{width}"
            );
            for settings in [
                &["passes=linearize"][..],
                &[
                    "passes=linearize",
                    "linearize_opt=3",
                    "linearize_predicate=0",
                ],
                &["passes=linearize", "linearize_regions=kernel"],
                &["passes=linearize_ssa"],
            ] {
                let after = counts(file, settings, width, 6);
                assert_eq!(
                    after,
                    [1, 1, 3, 2, 2, 1].map(|n| n * warps),
                    "{file} w{width} {settings:?}"
                );
            }
            // Predicated (O3's default), B2 and B4 run inside other blocks and are not
            // counted; no block runs more redundantly than unpredicated (a block whose
            // lanes would go around the loop once more to reach their next block, were it
            // predicated, is left branching).
            let (_, func, prepared) = load(file);
            let o3 = ["passes=linearize", "linearize_opt=3"];
            let unpredicated = [&o3[..], &["linearize_predicate=0"]].concat();
            assert_eq!(
                ir_redundancy(&func, &prepared, &o3, width),
                ir_redundancy(&func, &prepared, &unpredicated, width),
                "{file} w{width}"
            );
        }
    }
}

#[test]
fn linearization_merges_the_loops_of_figure_2b_only_when_told_to() {
    // Forced (`linearize_merge_loops=always`), reverse post-order puts the outer loop's
    // latch (B5, S3) before the inner loop's body (B4, S2), so the inner back edge's
    // interval overlaps the outer one and is moved up to the outer header: one back edge
    // serves both loops, as in the paper's Figure 8. Lanes that finish their inner loop
    // start the next outer iteration and join the others in the inner loop: fewer
    // inner-loop passes, more outer-loop ones.
    let (_, func, prepared) = load("loop_merge_fig2b.wir");
    let before = ir_block_executions(&emulate(&func, &prepared, &[], 32));
    let always = [LINEARIZE[0], &["linearize_merge_loops=always"]].concat();
    let merged = ir_block_executions(&emulate(&func, &prepared, &always, 32));
    assert_eq!((before["block4"], merged["block4"]), (30, 25));
    assert_eq!((before["block1"], merged["block1"]), (3, 8));
    // On these trip counts the trade is a loss: 5 passes of the inner loop (header and
    // S2) saved, 5 of the outer rest (header, S1, S3) paid, and the rest's guards run in
    // every pass of the merged loop.
    let redundant = |settings: &[&str], width| ir_redundancy(&func, &prepared, settings, width);
    let warp_insts = |settings: &[&str]| emulate(&func, &prepared, settings, 32).warp_instructions;
    let never = [LINEARIZE[0], &["linearize_merge_loops=never"]].concat();
    assert_eq!((redundant(&[], 32), redundant(&always, 32)), (10, 16));
    assert_eq!((warp_insts(&[]), warp_insts(&always)), (229, 774));
    // The cost model (the default) sees that a pass of the rest outweighs one of the inner
    // loop and would keep each loop's blocks together behind its own back edge; unmerged,
    // linearizing the nest removes no redundant execution and lowers no stack (every
    // divergent branch is a loop's exit), so kernel mode leaves the kernel as it is (it
    // ran 521 warp-instructions linearized unmerged): the inner loop runs as often as
    // before, and no block more redundantly.
    for settings in [LINEARIZE[0], &never[..]] {
        let apart = ir_block_executions(&emulate(&func, &prepared, settings, 32));
        assert_eq!((apart["block4"], apart["block1"]), (30, 3), "{settings:?}");
        for width in [4, 32] {
            assert_eq!(redundant(settings, width), 10, "{settings:?} w{width}");
        }
    }
    assert_eq!(warp_insts(LINEARIZE[0]), 229);
    assert_eq!(warp_insts(&never), 229);
}

#[test]
fn each_guard_optimisation_level_executes_fewer_instructions() {
    // The paper's Table 4 on our corpus: warp-instructions executed (one warp of 32 lanes
    // per launch file), before linearization and after it in kernel mode at O0 to O3.
    // Every level runs at most what the level below runs, on every kernel; the exact counts
    // of a few kernels pin what each optimisation removes. Kernel mode leaves a kernel as
    // it is where linearizing it can neither remove a redundant execution nor lower the
    // reconvergence stack: `loop_jump_out_fig5`, whose loop test is uniform (at O0 to O3
    // it ran 127 / 111 / 109 / 83), and Figure 2(b)'s loop nest, whose merging the cost
    // model declines (521 / 515 / 447 / 374); `loop_jump_out_fig5_paths`, whose lanes
    // leave the loop by its test at different iterations, is linearized.
    let expected: [(&str, [u64; 5]); 6] = [
        ("short_circuit_fig1.wir", [44, 66, 56, 48, 39]),
        ("loop_jump_out_fig5.wir", [55, 55, 55, 55, 55]),
        ("loop_jump_out_fig5_paths.wir", [39, 76, 66, 64, 50]),
        ("loop_jump_in_fig6.wir", [53, 130, 118, 118, 83]),
        ("loop_merge_fig2b.wir", [229, 229, 229, 229, 229]),
        ("irreducible_loop.wir", [1988, 2816, 2808, 2706, 2140]),
    ];
    let seen: usize = each_kernel(|name, func, prepared| {
        let mut seen = 0;
        let mut row = vec![emulate(&func, &prepared, &[], 32).warp_instructions];
        for level in 0..4 {
            let opt = format!("linearize_opt={level}");
            let settings = ["passes=linearize", "linearize_regions=kernel", &opt];
            row.push(emulate(&func, &prepared, &settings, 32).warp_instructions);
        }
        assert!(row[1..].windows(2).all(|w| w[1] <= w[0]), "{name}: {row:?}");
        if let Some((_, want)) = expected.iter().find(|(n, _)| *n == name) {
            assert_eq!(row, want, "{name}");
            seen += 1;
        }
        seen
    })
    .into_iter()
    .sum();
    assert_eq!(seen, expected.len());
}

#[test]
fn interleaving_the_arms_of_a_branch_overlaps_their_loads() {
    // Section 5.1 on one warp of 32 lanes: each arm loads from global memory and uses the
    // value at once. Arm by arm, the warp waits out two load latencies; interleaved, the
    // second arm's load issues while the first arm's is in flight.
    let (_, func, prepared) = load("branch_interleave_loads.wir");
    let kernel = ["passes=linearize", "linearize_regions=kernel"];
    let interleaved = [&kernel[..], &["linearize_interleave=true"]].concat();
    let cycles = |settings: &[&str]| emulate(&func, &prepared, settings, 32).cycles;
    assert_eq!(cycles(&[]), 845);
    assert_eq!(cycles(&kernel), 864);
    assert_eq!(cycles(&interleaved), 464);
    let compiled = compile(&func, &interleaved);
    let report = &compiled.stats.passes[0].1;
    let count = |name: &str| report.counts.iter().find(|(n, _)| *n == name).unwrap().1;
    assert_eq!(count("blocks split"), 2, "{report:?}");
}

#[test]
fn a_region_of_uniform_branches_gets_uniform_guards() {
    // Figure 1's short circuit with conditions every lane shares (kernel parameters): the
    // lanes enter the region together and never split, so they hold one guard value and
    // the guards' branches are uniform — the warp never pushes a reconvergence entry.
    let text = "kernel %k(c1: i32, c2: i32, c3: i32, out: i64) {
block0(v0: i32, v1: i32, v2: i32, v3: i64):
    v4 = thread_id x
    v5 = iconst.i32 0
    v6 = icmp ne v0, v5
    brif v6, block2, block1
block1:
    v7 = icmp ne v1, v5
    brif v7, block2, block4
block2:
    v8 = icmp ne v2, v5
    brif v8, block3, block4
block3:
    v9 = iconst.i32 3
    jump block5(v9)
block4:
    v10 = iconst.i32 4
    jump block5(v10)
block5(v11: i32):
    v12 = uextend.i64 v4
    v13 = iconst.i64 2
    v14 = ishl v12, v13
    v15 = iadd v3, v14
    store global v11, v15
    return
}";
    let func = parse_functions(text).unwrap().remove(0);
    let settings = [
        "passes=linearize",
        "linearize_regions=all",
        "linearize_opt=0",
    ];
    let kernel = compile(&func, &settings);
    let guard_branches: Vec<bool> = kernel
        .mir
        .order
        .iter()
        .filter(|&&b| kernel.mir.blocks[b].kind == warplift_codegen::mir::BlockKind::Guard)
        .filter_map(|&b| match kernel.mir.terminator(b).map(|t| &t.kind) {
            Some(warplift_codegen::mir::MInstKind::Branch { divergent, .. }) => Some(*divergent),
            _ => None,
        })
        .collect();
    assert!(!guard_branches.is_empty(), "{}", kernel.mir);
    assert!(guard_branches.iter().all(|d| !d), "{}", kernel.mir);
    for ((c1, c2, c3), want) in [
        ((0, 1, 1), 3),
        ((0, 0, 1), 4),
        ((1, 0, 0), 4),
        ((1, 1, 1), 3),
    ] {
        let toml = format!(
            "grid = [1]\nblock = [8]\n[args]\nc1 = {c1}\nc2 = {c2}\nc3 = {c3}\n\
             [buffers.out]\ntype = \"i32\"\nlen = 8\n"
        );
        let launch = Launch::from_toml_str(&toml, Path::new("k.launch.toml")).unwrap();
        let mut prepared = launch.prepare(&func).unwrap();
        let prog = Program::from_code(&encode(&kernel.mir).unwrap()).unwrap();
        let config = MachineConfig::builder().warp_width(4).build().unwrap();
        let stats = run(&prog, &mut prepared, &config).unwrap();
        let out: Vec<u8> = [want as u8, 0, 0, 0].repeat(8);
        assert_eq!(prepared.memory.buffers[0].bytes, out, "{c1} {c2} {c3}");
        assert_eq!(stats.max_stack_depth, 1, "{c1} {c2} {c3}");
    }
}

/// Redundant executions of the kernel's own IR blocks at warp width `width` (not the
/// blocks a pass adds: `linearize_ssa`'s guards are IR blocks too).
fn ir_redundancy(
    func: &warplift_ir::Function,
    prepared: &PreparedLaunch,
    settings: &[&str],
    width: u32,
) -> u64 {
    redundancy_and_warp_instructions(func, prepared, settings, width).0
}

/// [`ir_redundancy`] and the warp-instructions of the same run.
fn redundancy_and_warp_instructions(
    func: &warplift_ir::Function,
    prepared: &PreparedLaunch,
    settings: &[&str],
    width: u32,
) -> (u64, u64) {
    let run = measured_run(func, prepared, settings, width);
    (run.redundant, run.warp_instructions)
}

/// What one run of a corpus kernel shows of linearization's effect.
struct Measured {
    /// Redundant executions of the kernel's own IR blocks.
    redundant: u64,
    warp_instructions: u64,
    /// The emulator's deepest reconvergence stack.
    stack: u64,
    /// The pass report's `regions declined by cost` (0 without the pass).
    declined: u64,
}

/// Compiles `func` with `settings` and runs it at warp width `width`.
fn measured_run(
    func: &warplift_ir::Function,
    prepared: &PreparedLaunch,
    settings: &[&str],
    width: u32,
) -> Measured {
    let kernel = compile(func, settings);
    let declined = kernel
        .stats
        .passes
        .iter()
        .flat_map(|(_, r)| r.counts.iter())
        .find(|(n, _)| *n == "regions declined by cost")
        .map_or(0, |c| c.1);
    let prog = Program::from_code(&encode(&kernel.mir).unwrap()).unwrap();
    let config = MachineConfig::builder().warp_width(width).build().unwrap();
    let mut memory = prepared.clone();
    let options = RunOptions {
        redundancy: true,
        ..RunOptions::default()
    };
    let stats = run_with(&prog, &mut memory, &config, options).unwrap();
    let own: Vec<String> = func.layout.blocks().iter().map(|b| b.to_string()).collect();
    let redundant = stats
        .redundant_block_executions
        .as_ref()
        .expect("counted")
        .iter()
        .filter(|(b, _)| own.contains(b))
        .map(|(_, n)| n)
        .sum();
    Measured {
        redundant,
        warp_instructions: stats.warp_instructions,
        stack: stats.max_stack_depth,
        declined,
    }
}

/// The corpus runs in which `linearize` (divergent regions, the default, at any level) or
/// `linearize_ssa` removes no redundant execution yet runs more warp-instructions: kernels
/// whose regions can run a block twice, on launches whose lanes happen not to.
/// - `branch_table` at width 4: indices 0 and 3 both name `block1`, but the lanes with
///   those indices are in different warps of 4; at width 32 they share the warp and
///   linearization runs `block1` once instead of twice (asserted below).
/// - `loop_jump_in_fig6`: the lanes that jump into the loop start at a later `i` and so
///   never need more passes than the lanes that enter at the top; with lanes that do
///   (`loop_jump_in_fig6_paths`, the same irreducible loop), linearization removes the
///   redundant executions (`figure_6_in_both_successor_orders_runs_l1_as_often_as_its_busiest_lane`).
const BETS_NOT_TAKEN: [(&str, u32); 3] = [
    ("branch_table.wir", 4),
    ("loop_jump_in_fig6.wir", 4),
    ("loop_jump_in_fig6.wir", 32),
];

/// The corpus kernels whose region only a uniform branch can make run a block twice:
/// `all` mode counts every branch, whatever the divergence analysis says, and linearizes
/// them for nothing (the other modes leave them as they are).
/// - `loop_jump_out_fig5`: its loop test `i < n` is uniform (every lane still in the loop
///   has the same `i`); only a split there would run the exit block twice.
const UNIFORM_IN_ALL: [&str; 1] = ["loop_jump_out_fig5.wir"];

#[test]
fn no_corpus_kernel_runs_a_block_more_redundantly_linearized() {
    // In every region mode at every optimisation level (kernel mode included: its loop
    // nests are merged only where the cost model expects a gain), and at the SSA level.
    let mut configs: Vec<Vec<&str>> = Vec::new();
    for mode in MODES {
        for level in LEVELS {
            configs.push(vec!["passes=linearize", mode, level]);
        }
    }
    configs.push(vec!["passes=linearize_ssa"]);
    // Where a region's linearization removes no redundant execution it is left as it is
    // (`can_run_a_block_twice`), so in the `divergent` and `all` modes a run that removes
    // none runs no more warp-instructions either, but for the listed bets. (`all` counts
    // every branch that can go both ways, whatever the divergence analysis says; a branch
    // table's range check that every lane passes is not one.) In `kernel` mode the whole
    // kernel is linearized where that can remove a redundant execution or make the
    // reconvergence stack shallower, and left as it is elsewhere: a run that removes none
    // and runs more warp-instructions has a shallower stack, or is a listed bet.
    let decides = |settings: &[&str]| {
        settings.contains(&"passes=linearize_ssa")
            || settings.contains(&MODES[1])
            || settings.contains(&MODES[2])
    };
    let left_alone = std::sync::Mutex::new(Vec::new());
    let costly = std::sync::Mutex::new(Vec::<String>::new());
    let (before_total, after_total) = each_kernel(|name, func, prepared| {
        let (mut before_total, mut after_total) = (0, 0);
        for width in [4, 32] {
            let plain = measured_run(&func, &prepared, &[], width);
            let (before, insts_before) = (plain.redundant, plain.warp_instructions);
            for settings in &configs {
                let run = measured_run(&func, &prepared, settings, width);
                let (after, insts_after) = (run.redundant, run.warp_instructions);
                assert!(
                    after <= before,
                    "{name} w{width} {settings:?}: {before} -> {after}"
                );
                let costs = after == before && insts_after > insts_before;
                let excused = BETS_NOT_TAKEN.contains(&(name, width))
                    || (settings.contains(&MODES[1]) && UNIFORM_IN_ALL.contains(&name));
                if costs && (decides(settings) || run.stack >= plain.stack) && !excused {
                    costly.lock().unwrap().push(format!(
                        "{name} w{width} {settings:?}: {before} redundant executions kept, \
                         {insts_before} -> {insts_after} warp-instructions, stack {} -> {}",
                        plain.stack, run.stack
                    ));
                }
                if settings.contains(&MODES[0]) && run.declined > 0 {
                    // Left alone: exactly the plain kernel's run.
                    assert_eq!(
                        (after, insts_after),
                        (before, insts_before),
                        "{name} w{width} {settings:?}"
                    );
                    if width == 4 && settings.contains(&LEVELS[0]) {
                        let kernel = name.trim_end_matches(".wir").to_string();
                        left_alone.lock().unwrap().push(kernel);
                    }
                }
                if name == "branch_table.wir" && width == 32 && settings[0] == "passes=linearize" {
                    assert!(after < before, "{settings:?}: {before} -> {after}");
                }
                // The default: divergent regions at O0.
                if settings[1..] == [MODES[2], LEVELS[0]] {
                    before_total += before;
                    after_total += after;
                }
            }
        }
        (before_total, after_total)
    })
    .into_iter()
    .fold((0, 0), |acc, x| (acc.0 + x.0, acc.1 + x.1));
    // What the default removes over the corpus, at widths 4 and 32 together.
    assert!(
        after_total < before_total,
        "{before_total} -> {after_total}"
    );
    eprintln!("{before_total} -> {after_total}");
    let costly = costly.into_inner().unwrap();
    assert!(costly.is_empty(), "{}", costly.join("\n"));
    let mut left_alone = left_alone.into_inner().unwrap();
    left_alone.sort();
    eprintln!("kernel mode leaves alone: {left_alone:?}");
}

#[test]
fn branch_tables_whose_paths_meet_only_at_their_join_are_left_alone() {
    // A lane-divergent `br_table` on `t % n` over n entries, its default also its last
    // entry: the range check never fails (uniform, and one-way: `all` mode, which counts
    // uniform branches too, does not count it), the search tree's leaves meet only at
    // the join, and no block can run twice per pass of a warp. The unstructured region
    // the tree makes (its default edge joins the last leaf) is left as it is at every
    // level, in the `divergent` and `all` modes and at the SSA level: the same code, so
    // the same numbers as the plain kernel (`all` at O3 ran fanout at 114624
    // warp-instructions, width 4, before the range check was known one-way) — (warp width,
    // redundant executions, warp-instructions): the tree's tests count as executions of
    // the table's block, which no linearization changes.
    /// (warp width, redundant executions, warp-instructions).
    type Run = (u32, u64, u64);
    let cases: [(&str, [Run; 2]); 2] = [
        (
            "csc_micro_fanout.wir",
            [(4, 1024, 34752), (32, 3328, 21496)],
        ),
        ("csc_micro_switch.wir", [(4, 64, 3136), (32, 8, 392)]),
    ];
    for (file, runs) in cases {
        let (_, func, prepared) = load(file);
        let plain = encode(&compile(&func, &[]).mir).unwrap();
        for (width, redundant, insts) in runs {
            let base = redundancy_and_warp_instructions(&func, &prepared, &[], width);
            assert_eq!(base, (redundant, insts), "{file} w{width}");
        }
        for level in LEVELS {
            for settings in [
                vec!["passes=linearize", level],
                vec!["passes=linearize", MODES[1], level],
                vec!["passes=linearize_ssa"],
                vec!["passes=linearize_ssa", MODES[1]],
            ] {
                let kernel = compile(&func, &settings);
                let report = &kernel.stats.passes[0].1;
                let regions = report.counts.iter().find(|(n, _)| *n == "regions");
                assert_eq!(regions.map(|r| r.1), Some(0), "{file} {settings:?}");
                assert_eq!(encode(&kernel.mir).unwrap(), plain, "{file} {settings:?}");
            }
        }
    }
}

/// The deepest reconvergence stack on the IR's own CFG at warp width `width`: the IPDOM
/// stack model of `warplift_ir::cfg::ipdom_stack` replaying the reference interpreter's
/// per-lane paths over `func`'s CFG — the kernel as it is, or after `linearize_ssa` in
/// kernel mode (the linearization whose result is IR). The emulator's `max_stack_depth`
/// counts the machine CFG, with edge-split blocks.
fn ir_stack(
    func: &warplift_ir::Function,
    prepared: &PreparedLaunch,
    width: u32,
    linearized: bool,
) -> u64 {
    use warplift_ir::cfg::{ipdom_stack, ControlFlowGraph, PostDominatorTree};
    let mut func = func.clone();
    if linearized {
        warplift_codegen::linearize_ssa::linearize(
            &mut func,
            warplift_codegen::linearize::RegionMode::Kernel,
        )
        .unwrap();
    }
    let cfg = ControlFlowGraph::compute(&func);
    let pdt = PostDominatorTree::compute(&cfg);
    let mut launch = prepared.clone();
    let config = warplift_ir::interp::InterpConfig {
        warp_width: width,
        ..Default::default()
    };
    let mut depth = 0;
    let mut observe = |paths: &[Vec<warplift_ir::Block>]| {
        depth =
            depth.max(ipdom_stack::max_depth_in_warps(&cfg, &pdt, paths, width as usize).unwrap());
    };
    warplift_ir::interp::run_with_paths(&func, &mut launch, &config, &mut observe).unwrap();
    depth
}

/// The deepest reconvergence stack on the linearized CFG of `func` compiled with
/// `settings` (the machine CFG without its edge-split blocks: the kernel's blocks and the
/// guards), replaying the lanes' paths the emulator records at warp width `width`.
fn linearized_cfg_stack(
    func: &warplift_ir::Function,
    prepared: &PreparedLaunch,
    settings: &[&str],
    width: u32,
) -> u64 {
    let kernel = compile(func, settings);
    let prog = Program::from_code(&encode(&kernel.mir).unwrap()).unwrap();
    let config = MachineConfig::builder().warp_width(width).build().unwrap();
    let mut memory = prepared.clone();
    let mut paths = LanePaths::default();
    let options = RunOptions {
        lane_paths: Some(&mut paths),
        ..RunOptions::default()
    };
    run_with(&prog, &mut memory, &config, options).unwrap();
    max_depth_on_linearized_cfg(&kernel.mir, &paths.warps)
        .unwrap_or_else(|e| panic!("{settings:?}: {e}\n{}", kernel.mir))
}

#[test]
fn stack_depths_of_the_papers_figures_on_the_ir_cfg() {
    // (file, depth before, depth after kernel-mode linearization), at widths 4 and 32.
    // Figure 3: the paper's 7 entries (Figure 3(b)) before; after, as Section 5.3 says,
    // "the stack depth does not increase": the bottom entry and one guarded block. Figure
    // 1: T1-T2 and T3-T4 split at B1, then T1 and T2 at B3 (its halves replace their
    // entry, which waits at the same B6): 4 before, 2 after. Figures 5 and 6 (the lanes
    // of the `_paths` kernels): 3 before and after.
    let cases = [
        ("short_circuit_fig1.wir", 4, 2),
        ("nested_branches_fig3.wir", 7, 2),
        ("loop_jump_out_fig5_paths.wir", 3, 3),
        ("loop_jump_in_fig6_paths.wir", 3, 3),
        ("loop_jump_in_fig6_paths_swapped.wir", 3, 3),
    ];
    for (file, before, after) in cases {
        let (_, func, prepared) = load(file);
        for width in [4, 32] {
            let got = (
                ir_stack(&func, &prepared, width, false),
                ir_stack(&func, &prepared, width, true),
            );
            assert_eq!(got, (before, after), "{file} w{width}");
            // The machine-level pass at every level, on the linearized CFG (its guards
            // are nodes, the allocator's edge-split blocks are not): the same depths.
            // Unlinearized, the machine code's graph is the IR's, and the emulator's
            // lane paths give the depth the interpreter's do.
            assert_eq!(
                linearized_cfg_stack(&func, &prepared, &[], width),
                before,
                "{file} w{width}"
            );
            for level in LEVELS {
                let settings = ["passes=linearize", "linearize_regions=kernel", level];
                assert_eq!(
                    linearized_cfg_stack(&func, &prepared, &settings, width),
                    after,
                    "{file} w{width} {level}"
                );
            }
        }
    }
}

#[test]
fn machine_paths_on_the_machine_cfg_give_the_interpreters_ir_stack_depth() {
    // Every corpus kernel compiled without an optional pass, at warp width 32: the lanes'
    // paths the emulator records, replayed on the machine CFG without its edge-split
    // blocks, give the depth the reference interpreter's paths give on the IR CFG. This
    // is what makes the linearized-CFG depth of the `linearize` columns comparable with
    // the IR-CFG depth of the others. Kernels with a branch table lower it into a chain
    // of tests, blocks the IR does not have: they are left out.
    let compared: usize = each_kernel(|name, func, prepared| {
        let has_table = func.layout.blocks().iter().any(|&b| {
            func.layout
                .last_inst(b)
                .is_some_and(|i| func.dfg.insts[i].opcode() == warplift_ir::Opcode::BrTable)
        });
        if has_table {
            return 0;
        }
        assert_eq!(
            linearized_cfg_stack(&func, &prepared, &[], 32),
            ir_stack(&func, &prepared, 32, false),
            "{name}"
        );
        1
    })
    .into_iter()
    .sum();
    assert!(compared >= 50, "only {compared} kernels compared");
}
