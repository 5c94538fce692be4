//! The `linearize_ssa` IR pass: on small kernels and the paper's figures, the result
//! verifies, has the guard structure of Algorithm 1 and computes what the kernel computed
//! (the reference interpreter runs both); over the corpus, the register cost of
//! linearizing before allocation against the machine-level pass, which costs exactly its
//! two reserved registers (printed as a table with `--nocapture`).

use cranelift_entity::EntityRef;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use warplift_codegen::isa::ptx::ptxas;
use warplift_codegen::linearize::RegionMode;
use warplift_codegen::linearize_ssa::{linearize, Stats};
use warplift_codegen::mir::RegClass;
use warplift_codegen::passes::PassReport;
use warplift_codegen::regalloc::RegallocStats;
use warplift_codegen::{lookup_by_name, Context, Settings};
use warplift_filetests::Walk;
use warplift_ir::interp::{self, InterpConfig};
use warplift_ir::launch::{Launch, PreparedLaunch};
use warplift_ir::parser::parse_functions;
use warplift_ir::verifier::verify_function;
use warplift_ir::{Function, Opcode};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus")
}

/// A corpus kernel with its launch.
fn load(file: &str) -> (Function, PreparedLaunch) {
    let path = corpus_dir().join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let funcs = parse_functions(&text).unwrap();
    let launch = Launch::from_file(&Launch::path_next_to(&path)).unwrap();
    let func = launch.select_kernel(&funcs).unwrap().clone();
    let prepared = launch.prepare(&func).unwrap();
    (func, prepared)
}

fn settings(assignments: &[&str]) -> Settings {
    let mut b = Settings::builder();
    for a in assignments {
        b.set_assignment(a).unwrap();
    }
    b.finish()
}

const MODES: [RegionMode; 3] = [RegionMode::Kernel, RegionMode::All, RegionMode::Divergent];

/// Runs the pass on a copy of `func`; the result must verify.
fn linearized(func: &Function, mode: RegionMode) -> (Function, Stats) {
    let mut f = func.clone();
    let stats = linearize(&mut f, mode).unwrap_or_else(|e| panic!("%{}: {e}", func.name));
    if let Err(errors) = verify_function(&f) {
        panic!("%{} ({mode:?}) does not verify:\n{errors}\n{f}", func.name);
    }
    (f, stats)
}

/// The interpreter's memory after running `func`, or its fault.
fn interpret(
    func: &Function,
    prepared: &PreparedLaunch,
    warp_width: u32,
) -> Result<Vec<Vec<u8>>, String> {
    let mut launch = prepared.clone();
    let config = InterpConfig {
        warp_width,
        ..InterpConfig::default()
    };
    interp::run(func, &mut launch, &config).map_err(|e| e.to_string())?;
    Ok(launch
        .memory
        .buffers
        .iter()
        .map(|b| b.bytes.clone())
        .collect())
}

/// Blocks whose terminator tests the guard variable: `icmp` against a constant, then
/// `brif` on it (the guard blocks and back-edge guards the pass made).
fn guard_blocks(f: &Function, original: usize) -> Vec<warplift_ir::Block> {
    f.layout
        .blocks()
        .iter()
        .copied()
        .filter(|b| b.index() >= original)
        .filter(|&b| {
            f.terminator(b)
                .is_some_and(|t| f.inst(t).opcode() == Opcode::Brif)
        })
        .collect()
}

/// Checks what every linearization must satisfy: the counts add up, every region block
/// lost its parameters and is entered from its guard alone.
fn check_structure(before: &Function, after: &Function, stats: &Stats) {
    let original = before.dfg.num_blocks();
    assert_eq!(stats.guard_blocks, stats.region_blocks, "{stats:?}");
    assert_eq!(
        stats.guard_tests,
        stats.guard_blocks + stats.back_edge_guards
    );
    assert_eq!(stats.guard_assignments, stats.region_blocks + stats.regions);
    assert_eq!(
        guard_blocks(after, original).len() as u64,
        stats.guard_blocks + stats.back_edge_guards,
        "{after}"
    );
    // The blocks the `icmp eq` guards branch to are the region blocks: their parameters
    // became variables, and each is entered from its guard alone (and unreachable code).
    let cfg = warplift_ir::cfg::ControlFlowGraph::compute(after);
    let domtree = warplift_ir::cfg::DominatorTree::compute(&cfg);
    let mut region_blocks = Vec::new();
    for g in guard_blocks(after, original) {
        let insts = after.layout.block_insts(g);
        let is_eq = insts.iter().any(|&i| {
            matches!(
                after.inst(i),
                warplift_ir::InstructionData::IntCompare {
                    cond: warplift_ir::IntCC::Equal,
                    ..
                }
            )
        });
        if let (true, Some(b)) = (is_eq, after.successors(g).next()) {
            region_blocks.push(b);
        }
    }
    assert_eq!(region_blocks.len() as u64, stats.region_blocks, "{after}");
    let mut params = 0;
    for &b in &region_blocks {
        assert!(b.index() < original, "{b}\n{after}");
        let reachable_preds = cfg.preds(b).iter().filter(|&&p| domtree.is_reachable(p));
        assert_eq!(reachable_preds.count(), 1, "{b}\n{after}");
        assert!(after.dfg.block_params(b).is_empty(), "{b}\n{after}");
        params += before.dfg.block_params(b).len() as u64;
    }
    assert_eq!(params, stats.param_variables, "{stats:?}\n{after}");
}

#[test]
fn every_corpus_kernel_linearized_verifies_and_computes_what_it_computed() {
    let linearized_regions: u64 = Walk::corpus()
        .at_least(25)
        .functions(|name, func| {
            let mut linearized_regions = 0;
            let path = corpus_dir().join(name);
            let with_launch = Launch::path_next_to(&path).exists();
            for mode in MODES {
                let (after, stats) = linearized(&func, mode);
                check_structure(&func, &after, &stats);
                linearized_regions += stats.regions;
                if !with_launch || stats.regions == 0 {
                    continue;
                }
                let (func, prepared) = load(name);
                for width in [1, 32] {
                    assert_eq!(
                        interpret(&after, &prepared, width),
                        interpret(&func, &prepared, width),
                        "{name} ({mode:?}, warp width {width})\n{after}"
                    );
                }
            }
            linearized_regions
        })
        .into_iter()
        .sum();
    assert!(linearized_regions >= 40, "{linearized_regions}");
}

/// `b32 + b64 + pred` registers, and spills.
fn cost(s: &RegallocStats) -> (u32, u32) {
    let regs = RegClass::ALL.iter().map(|&c| s.regs_total(c)).sum();
    (regs, s.spills)
}

fn compile(func: &Function, assignments: &[&str]) -> RegallocStats {
    let isa = lookup_by_name("simt", settings(assignments)).unwrap();
    Context::new()
        .compile_kernel(func, &*isa)
        .unwrap_or_else(|e| panic!("%{}: {assignments:?}: {e}", func.name))
        .stats
        .regalloc
}

#[test]
fn register_cost_of_linearizing_before_and_after_allocation() {
    let rows = Walk::corpus().at_least(25).functions(|name, func| {
        let plain = compile(&func, &[]);
        let isa = lookup_by_name(
            "simt",
            settings(&["passes=linearize", "linearize_regions=kernel"]),
        )
        .unwrap();
        let compiled = Context::new().compile_kernel(&func, &*isa).unwrap();
        let machine = compiled.stats.regalloc;
        let ssa = compile(&func, &["passes=linearize_ssa", "linearize_regions=kernel"]);
        // Linearizing after allocation costs exactly the guard register and the guard
        // predicate when it linearizes anything (nothing otherwise), and never a spill.
        let machine_regions = compiled.stats.passes[0]
            .1
            .counts
            .iter()
            .find(|(n, _)| *n == "regions")
            .map_or(0, |c| c.1);
        let extra = u32::from(machine_regions > 0);
        for (class, extra) in [
            (RegClass::B32, extra),
            (RegClass::B64, 0),
            (RegClass::Pred, extra),
        ] {
            assert_eq!(
                machine.regs_total(class),
                plain.regs_total(class) + extra,
                "{name}: {class}: {plain} vs {machine}"
            );
        }
        assert_eq!(
            (plain.spills, plain.reloads),
            (machine.spills, machine.reloads)
        );
        // Whether the kernel mode linearizes anything (a kernel of one block, or with a
        // barrier and a divergent branch, stays as it is).
        let mut copy = func.clone();
        let regions = linearize(&mut copy, RegionMode::Kernel).unwrap().regions;
        (
            format!("{name} %{}", func.name),
            plain,
            machine,
            ssa,
            regions,
        )
    });
    let (mut total_plain, mut total_machine, mut total_ssa) = (0, 0, 0);
    let (mut costlier, mut linearized_kernels) = (0, 0);
    println!(
        "{:<34} {:>22} {:>22} {:>22}",
        "kernel", "plain (b32 b64 pred)", "linearize", "linearize_ssa"
    );
    for (kernel, plain, machine, ssa, regions) in &rows {
        let show = |s: &RegallocStats| {
            format!(
                "{:>3} {:>3} {:>3} sp{:<3}",
                s.regs_total(RegClass::B32),
                s.regs_total(RegClass::B64),
                s.regs_total(RegClass::Pred),
                s.spills
            )
        };
        println!(
            "{:<34} {:>22} {:>22} {:>22}",
            kernel,
            show(plain),
            show(machine),
            show(ssa)
        );
        if *regions > 0 {
            linearized_kernels += 1;
            total_plain += cost(plain).0;
            total_machine += cost(machine).0;
            total_ssa += cost(ssa).0;
            if cost(ssa).0 > cost(machine).0 {
                costlier += 1;
            }
        }
    }
    println!(
        "total registers of linearized kernels: plain {total_plain}, linearize {total_machine}, linearize_ssa {total_ssa}; linearize_ssa costs more than linearize in {costlier} of the {linearized_kernels} linearized kernels ({} in all)",
        rows.len()
    );
    // Linearizing before allocation makes values live across guards that no lane reads
    // there: over the corpus it costs more registers than linearizing after allocation.
    assert!(total_ssa > total_machine, "{total_ssa} vs {total_machine}");
    // And in most of the kernels it linearizes, not just in a few.
    assert!(
        costlier * 3 >= linearized_kernels * 2,
        "{costlier} of {linearized_kernels}"
    );
}

/// A divergent if/else diamond, then a loop carrying two values.
const DIAMOND_AND_LOOP: &str = "kernel %k(n: i32, out: i64) {
block0(v0: i32, v1: i64):
    v2 = thread_id x
    v3 = iconst.i32 1
    v4 = band v2, v3
    v5 = icmp eq v4, v3
    brif v5, block1, block2
block1:
    v6 = iconst.i32 10
    jump block3(v6)
block2:
    v7 = iconst.i32 20
    jump block3(v7)
block3(v8: i32):
    v9 = iconst.i32 0
    jump block4(v9, v8)
block4(v10: i32, v11: i32):
    v12 = iadd v11, v10
    v13 = iadd v10, v3
    v14 = icmp slt v13, v2
    brif v14, block4(v13, v12), block5
block5:
    v15 = uextend.i64 v2
    v16 = iconst.i64 2
    v17 = ishl v15, v16
    v18 = iadd v1, v17
    store global v12, v18
    return
}";

fn run_small(func: &Function, threads: u32) -> Vec<Vec<u8>> {
    let launch: Launch = toml_launch(threads);
    let mut prepared = launch.prepare(func).unwrap();
    let config = InterpConfig {
        warp_width: 32,
        ..InterpConfig::default()
    };
    interp::run(func, &mut prepared, &config).unwrap();
    prepared
        .memory
        .buffers
        .iter()
        .map(|b| b.bytes.clone())
        .collect()
}

fn toml_launch(threads: u32) -> Launch {
    let text = format!(
        "grid = [1]\nblock = [{threads}]\n[args]\nn = 4\n[buffers.out]\ntype = \"i32\"\nlen = {threads}\ninit = \"zeros\"\n"
    );
    Launch::from_toml_str(&text, Path::new("k.launch.toml")).unwrap()
}

#[test]
fn a_structured_diamond_and_loop_are_left_alone_unless_the_whole_kernel_is_asked_for() {
    let func = parse_functions(DIAMOND_AND_LOOP).unwrap().remove(0);
    for mode in [RegionMode::Divergent, RegionMode::All] {
        let (after, stats) = linearized(&func, mode);
        assert_eq!(stats.regions, 0);
        assert!(after.structurally_eq(&func), "{after}");
    }
    let (after, stats) = linearized(&func, RegionMode::Kernel);
    check_structure(&func, &after, &stats);
    // block1..block5 but the single return block5: four region blocks, the loop's back
    // edge one retreating edge.
    assert_eq!(stats.region_blocks, 4, "{stats:?}");
    assert_eq!(stats.retreating_edges, 1);
    assert_eq!(stats.back_edge_guards, 1);
    // block3's and block4's parameters became variables; v12 (defined in the loop and
    // stored after it) too.
    assert_eq!(stats.param_variables, 3);
    assert_eq!(stats.value_variables, 1, "{stats:?}\n{after}");
    assert!(stats.block_params_added > 0, "{stats:?}");
    assert!(stats.zero_constants > 0, "{stats:?}");
    assert_eq!(run_small(&after, 40), run_small(&func, 40));
}

#[test]
fn paper_figures_linearize_to_algorithm_1() {
    // (file, mode, region blocks, retreating edges, back-edge guards)
    let cases = [
        ("short_circuit_fig1.wir", RegionMode::Kernel, 5, 0, 0),
        ("short_circuit_fig1.wir", RegionMode::Divergent, 4, 0, 0),
        // Lanes that leave the loop by its test at different iterations (the corpus
        // kernel's test is uniform: there nothing can run twice, and no region is taken).
        (
            "loop_jump_out_fig5_paths.wir",
            RegionMode::Divergent,
            4,
            1,
            1,
        ),
        ("loop_jump_in_fig6.wir", RegionMode::Kernel, 3, 1, 1),
        // Both of the irreducible loop's retreating edges leave one block: one back-edge
        // guard serves them.
        ("irreducible_loop.wir", RegionMode::Kernel, 4, 2, 1),
    ];
    for (file, mode, blocks, retreating, back_edge_guards) in cases {
        let (func, prepared) = load(file);
        let (after, stats) = linearized(&func, mode);
        check_structure(&func, &after, &stats);
        assert_eq!(
            (
                stats.regions,
                stats.region_blocks,
                stats.retreating_edges,
                stats.back_edge_guards
            ),
            (1, blocks, retreating, back_edge_guards),
            "{file} {mode:?}: {stats:?}\n{after}"
        );
        for width in [1, 4, 32] {
            assert_eq!(
                interpret(&after, &prepared, width),
                interpret(&func, &prepared, width),
                "{file} {mode:?}\n{after}"
            );
        }
    }
}

#[test]
fn figure_1_guards_test_g_and_blocks_assign_it() {
    let (func, _) = load("short_circuit_fig1.wir");
    let (after, _) = linearized(&func, RegionMode::Divergent);
    let original = func.dfg.num_blocks();
    let guards = guard_blocks(&after, original);
    assert_eq!(guards.len(), 4, "{after}");
    for g in guards {
        let insts = after.layout.block_insts(g);
        // iconst id; icmp eq g, id; brif
        assert_eq!(insts.len(), 3, "{after}");
        assert!(matches!(
            after.inst(insts[1]),
            warplift_ir::InstructionData::IntCompare {
                cond: warplift_ir::IntCC::Equal,
                ..
            }
        ));
    }
    // No region block branches any more: B2, B3 (brif) and B4, B5 (jump) all jump to the
    // next guard (or, the last one, to the exit B6); B1 (the entry) jumps to the first one.
    let new_blocks: HashSet<_> = after
        .layout
        .blocks()
        .iter()
        .copied()
        .filter(|b| b.index() >= original)
        .collect();
    for b in 1..=5 {
        let block = warplift_ir::Block::from_u32(b);
        let succs: Vec<_> = after.successors(block).collect();
        assert_eq!(succs.len(), 1, "block{b}: {succs:?}\n{after}");
        assert!(
            new_blocks.contains(&succs[0]) || succs[0] == warplift_ir::Block::from_u32(6),
            "block{b}\n{after}"
        );
    }
}

use crate::short_circuit;

#[test]
fn whole_kernel_mode_places_zeros_near_their_reads_and_does_not_spill() {
    // 27 short circuits in sequence (about 1k instructions), the whole kernel one region.
    // With every zero in the kernel's first block, each was live from there to its reads:
    // 83 spills. Near their reads, none.
    let func = parse_functions(&short_circuit::short_circuit_kernel(27))
        .unwrap()
        .remove(0);
    let plain = compile(&func, &[]);
    assert_eq!(plain.spills, 0, "{plain:?}");
    let ssa = compile(&func, &["passes=linearize_ssa", "linearize_regions=kernel"]);
    assert_eq!(ssa.spills, 0, "{ssa:?}");
    let (after, stats) = linearized(&func, RegionMode::Kernel);
    assert!(stats.zero_constants > 0, "{stats:?}");
    // The kernel's first block holds none of them (its instructions are the kernel's and
    // the guard variable's first assignment).
    let entry = after.layout.entry_block().unwrap();
    let entry_insts = after.layout.block_insts(entry).len();
    assert_eq!(
        entry_insts,
        func.layout
            .block_insts(func.layout.entry_block().unwrap())
            .len()
            + 1,
        "{after}"
    );
    let launch = Launch::from_toml_str(
        "grid = [1]\nblock = [32]\n[buffers.out]\ntype = \"i32\"\nlen = 32\ninit = \"zeros\"\n",
        Path::new("k.launch.toml"),
    )
    .unwrap();
    let prepared = launch.prepare(&func).unwrap();
    for width in [4, 32] {
        assert_eq!(
            interpret(&after, &prepared, width),
            interpret(&func, &prepared, width)
        );
    }
}

#[test]
fn the_pass_is_registered_reports_its_counts_and_checks_its_setting() {
    let pass = warplift_codegen::passes::lookup("linearize_ssa").expect("registered");
    assert_eq!(pass.variants().len(), 3);
    let (func, _) = load("short_circuit_fig1.wir");
    let isa = lookup_by_name("simt", settings(&["passes=linearize_ssa"])).unwrap();
    let kernel = Context::new().compile_kernel(&func, &*isa).unwrap();
    let (name, report): &(&str, PassReport) = &kernel.stats.passes[0];
    assert_eq!(*name, "linearize_ssa");
    let get = |n: &str| report.counts.iter().find(|(k, _)| *k == n).unwrap().1;
    assert_eq!(get("regions"), 1);
    assert_eq!(get("guard blocks"), 4);
    assert_eq!(get("parameter variables"), 4);
    // Its setting is typed: a bad value is refused when set, naming the values it takes.
    let err = Settings::builder()
        .set("linearize_regions", "some")
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("`linearize_regions`: expected divergent, all or kernel"),
        "{err}"
    );
    // Machine passes may follow it in a pipeline, not precede it.
    let isa = lookup_by_name("simt", settings(&["passes=linearize_ssa,linearize"])).unwrap();
    Context::new().compile_kernel(&func, &*isa).unwrap();
    let e = warplift_codegen::passes::Pipeline::parse("linearize,linearize_ssa").unwrap_err();
    assert!(e.to_string().contains("cannot run after"), "{e}");
}

#[test]
fn linearized_ptx_assembles() {
    let ptxas = ptxas::ptxas_for_tests();
    Walk::corpus().at_least(25).functions(|name, func| {
        for mode in ["kernel", "divergent"] {
            let s = settings(&["passes=linearize_ssa", &format!("linearize_regions={mode}")]);
            let isa = lookup_by_name("ptx", s).unwrap();
            let code = Context::new()
                .compile(&func, &*isa)
                .unwrap_or_else(|e| panic!("{name}, {mode}: {e}"));
            let ptx = String::from_utf8(code.code).unwrap();
            if let Some(ptxas) = &ptxas {
                ptxas::check_assembles(ptxas, &ptx)
                    .unwrap_or_else(|e| panic!("{name}, {mode}: {e}"));
            }
        }
    });
}

#[test]
fn unreachable_branches_into_a_region_and_several_returns_are_handled() {
    // Figure 1's shape, returning from B4 and B5, with block7 unreachable and branching
    // into the region with an argument: the region block loses its parameter, and the
    // unreachable branch its argument.
    let text = "kernel %k(c: i64, out: i64) {
block0(v0: i64, v1: i64):
    v2 = thread_id x
    v3 = uextend.i64 v2
    v4 = iconst.i64 2
    v5 = ishl v3, v4
    v6 = iadd v1, v5
    v7 = iconst.i32 3
    v8 = band v2, v7
    v9 = iconst.i32 0
    v10 = icmp eq v8, v9
    brif v10, block3(v8), block2
block2:
    v11 = iconst.i32 1
    v12 = icmp eq v8, v11
    brif v12, block3(v11), block5
block3(v13: i32):
    v14 = iconst.i32 2
    v15 = icmp ult v2, v14
    brif v15, block4, block5
block4:
    v16 = iadd v13, v14
    store global v16, v6
    return
block5:
    v17 = iconst.i32 7
    store global v17, v6
    return
block7:
    v18 = iconst.i32 9
    jump block3(v18)
}";
    let func = parse_functions(text).unwrap().remove(0);
    verify_function(&func).unwrap();
    for mode in MODES {
        let (after, stats) = linearized(&func, mode);
        check_structure(&func, &after, &stats);
        assert_eq!(
            (stats.regions, stats.exit_blocks),
            (1, 1),
            "{mode:?}: {stats:?}"
        );
        let b3 = warplift_ir::Block::from_u32(3);
        assert!(after.dfg.block_params(b3).is_empty(), "{after}");
        let launch = Launch::from_toml_str(
            "grid = [1]\nblock = [8]\n[buffers.c]\ntype = \"i8\"\nlen = 1\ninit = \"zeros\"\n\
             [buffers.out]\ntype = \"i32\"\nlen = 8\ninit = \"zeros\"\n",
            Path::new("k.launch.toml"),
        )
        .unwrap();
        let prepared = launch.prepare(&func).unwrap();
        for width in [1, 4, 32] {
            assert_eq!(
                interpret(&after, &prepared, width),
                interpret(&func, &prepared, width),
                "{mode:?}\n{after}"
            );
        }
    }
}

#[test]
fn the_linearize_stage_setting_runs_linearize_at_the_ssa_level() {
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/short_circuit_fig1.wir"),
    )
    .unwrap();
    let func = parse_functions(&text).unwrap().remove(0);
    let compile = |assignments: &[&str]| {
        let mut b = Settings::builder();
        for a in assignments {
            b.set_assignment(a).unwrap();
        }
        let isa = lookup_by_name("simt", b.finish()).unwrap();
        Context::new().compile_kernel(&func, &*isa).unwrap()
    };
    let staged = compile(&[
        "passes=linearize",
        "linearize_stage=ssa",
        "linearize_regions=kernel",
    ]);
    let named = compile(&["passes=linearize_ssa", "linearize_regions=kernel"]);
    let machine = compile(&["passes=linearize", "linearize_regions=kernel"]);
    assert_eq!(staged.mir.to_string(), named.mir.to_string());
    assert_eq!(staged.stats.passes[0].0, "linearize_ssa");
    assert_ne!(staged.mir.to_string(), machine.mir.to_string());
}
