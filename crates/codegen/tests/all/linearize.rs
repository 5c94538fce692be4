//! The `linearize` machine pass over the kernel corpus, in every region mode: the result
//! verifies, is structured (every branch left is a guard test that reconverges at its
//! fall-through successor, Section 3.6 of the paper), grows as Claim 3 bounds, writes only
//! its two reserved registers (so the kernel needs exactly those two more registers and
//! spills no more), and its PTX assembles.

use std::collections::HashSet;
use std::path::PathBuf;
use warplift_codegen::isa::ptx::ptxas;
use warplift_codegen::linearize::check::check_linearized;
use warplift_codegen::linearize::Linearize;
use warplift_codegen::lower::lower;
use warplift_codegen::mir::verify::verify_mir_with_limits;
use warplift_codegen::mir::{BlockKind, MInstKind, MirFunction, RegClass};
use warplift_codegen::passes::MachinePass;
use warplift_codegen::regalloc::{allocate, RegisterFile};
use warplift_codegen::{lookup_by_name, Context, Settings};
use warplift_filetests::Walk;
use warplift_ir::parser::parse_functions;

fn settings(assignments: &[&str]) -> Settings {
    let mut b = Settings::builder();
    for a in assignments {
        b.set_assignment(a).unwrap();
    }
    b.finish()
}

const MODES: [&str; 3] = ["kernel", "all", "divergent"];

fn count(report: &warplift_codegen::passes::PassReport, name: &str) -> u64 {
    report
        .counts
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no count `{name}` in {report:?}"))
        .1
}

#[test]
fn linearized_kernels_are_structured_grow_linearly_and_write_only_reserved_registers() {
    let (blocks, retreating, added_blocks, added_insts) = Walk::corpus()
        .at_least(25)
        .functions(|name, func| {
            let (mut blocks, mut retreating, mut added_blocks, mut added_insts) = (0, 0, 0, 0);
            let mir = lower(&func).unwrap();
            for mode in MODES {
                for (level, interleave) in [(0, false), (3, false), (0, true), (2, true)] {
                    let s = settings(&[
                        &format!("linearize_regions={mode}"),
                        &format!("linearize_opt={level}"),
                        &format!("linearize_interleave={interleave}"),
                    ]);
                    let ctx = format!("{name} (%{}, {mode}, O{level}, {interleave})", func.name);
                    let allocated =
                        allocate(&mir, &RegisterFile::MAX, &Linearize.reservation(&s, &mir))
                            .unwrap();
                    let before = allocated.func.clone();
                    let mut after = allocated.func;
                    let report = Linearize
                        .run(&mut after, &allocated.reserved, &s)
                        .unwrap_or_else(|e| panic!("{ctx}: {e}\n{before}"));
                    verify_mir_with_limits(&after, Some([64, 64, 64]))
                        .unwrap_or_else(|e| panic!("{ctx}: {e}\n{after}"));
                    // Registers, structure and Claim 3, as `check_linearized` states them.
                    let growth =
                        check_linearized(&before, &after, &allocated.reserved, &report, &s)
                            .unwrap_or_else(|e| panic!("{ctx}: {e}\n{before}\n{after}"));
                    if mode == "kernel" && level == 0 && !interleave {
                        blocks += growth.region_blocks;
                        retreating += growth.retreating_edges;
                        added_blocks += growth.added_blocks;
                        added_insts += growth.added_insts;
                    }
                }
            }
            (blocks, retreating, added_blocks, added_insts)
        })
        .into_iter()
        .fold((0, 0, 0, 0), |acc, x| {
            (acc.0 + x.0, acc.1 + x.1, acc.2 + x.2, acc.3 + x.3)
        });
    eprintln!(
        "kernel mode over the corpus: {blocks} region blocks, {retreating} retreating edges; \
         {added_blocks} blocks and {added_insts} non-terminator instructions added"
    );
}

#[test]
fn linearization_costs_exactly_the_two_reserved_registers_and_no_spill() {
    let linearized_kernels = Walk::corpus()
        .at_least(25)
        .functions(|name, func| {
            let mut linearized_kernels = HashSet::new();
            let isa = lookup_by_name("simt", Settings::default()).unwrap();
            let plain = Context::new().compile_kernel(&func, &*isa).unwrap();
            let options = [
                "linearize_opt=0",
                "linearize_opt=3",
                "linearize_interleave=true",
                "linearize_merge_loops=always",
            ];
            for (mode, option) in MODES.iter().flat_map(|m| options.map(|o| (m, o))) {
                let regions = format!("linearize_regions={mode}");
                let s = settings(&["passes=linearize", &regions, option]);
                let isa = lookup_by_name("simt", s).unwrap();
                let lin = Context::new().compile_kernel(&func, &*isa).unwrap();
                let (a, b) = (&plain.stats.regalloc, &lin.stats.regalloc);
                // The guard registers are reserved exactly when there is something to linearize.
                let linearized = u32::from(count(&lin.stats.passes[0].1, "regions") > 0);
                if linearized > 0 {
                    linearized_kernels.insert((name.to_string(), *mode));
                }
                for (class, extra) in [
                    (RegClass::B32, linearized),
                    (RegClass::B64, 0),
                    (RegClass::Pred, linearized),
                ] {
                    assert_eq!(
                        b.regs_total(class),
                        a.regs_total(class) + extra,
                        "{name}, {mode}, {option}: {class}: {a} vs {b}"
                    );
                }
                assert_eq!(
                    (a.spills, a.reloads),
                    (b.spills, b.reloads),
                    "{name}, {mode}, {option}"
                );
            }
            linearized_kernels
        })
        .into_iter()
        .flatten()
        .collect::<HashSet<_>>();
    // Kernel mode linearizes every kernel with more than its entry and exit; the default
    // mode only the divergent unstructured ones.
    let count_mode = |m: &str| linearized_kernels.iter().filter(|(_, x)| *x == m).count();
    assert!(
        count_mode("kernel") > count_mode("divergent"),
        "{linearized_kernels:?}"
    );
    assert!(count_mode("divergent") >= 5, "{linearized_kernels:?}");
}

#[test]
fn linearized_ptx_assembles() {
    let ptxas = ptxas::ptxas_for_tests();
    Walk::corpus().at_least(25).functions(|name, func| {
        for mode in MODES {
            for (level, interleave) in [("0", false), ("3", false), ("2", true)] {
                let s = settings(&[
                    "passes=linearize",
                    &format!("linearize_regions={mode}"),
                    &format!("linearize_opt={level}"),
                    &format!("linearize_interleave={interleave}"),
                ]);
                let isa = lookup_by_name("ptx", s).unwrap();
                let code = Context::new()
                    .compile(&func, &*isa)
                    .unwrap_or_else(|e| panic!("{name}, {mode}: {e}"));
                let ptx = String::from_utf8(code.code).unwrap();
                assert!(ptx.contains(".entry"), "{name}");
                if let Some(ptxas) = &ptxas {
                    ptxas::check_assembles(ptxas, &ptx)
                        .unwrap_or_else(|e| panic!("{name}, {mode}: {e}"));
                }
            }
        }
    });
}

#[test]
fn a_structured_diamond_keeps_its_branches_and_only_the_unstructured_region_is_guarded() {
    // block1..block4: a divergent if/else diamond (structured); block4..block8: the
    // short-circuit region of the paper's Figure 1 between block4 and block8.
    let text = "kernel %k(c: i64, out: i64) {
block0(v0: i64, v1: i64):
    v2 = thread_id x
    v3 = uextend.i64 v2
    v4 = iadd v0, v3
    v5 = load.i8 global v4
    v6 = iconst.i8 0
    v7 = icmp ne v5, v6
    brif v7, block1, block2
block1:
    v8 = iconst.i32 1
    jump block3(v8)
block2:
    v9 = iconst.i32 2
    jump block3(v9)
block3(v10: i32):
    v11 = icmp eq v5, v6
    brif v11, block5, block4
block4:
    v12 = icmp ult v5, v6
    brif v12, block5, block7
block5:
    v13 = icmp sgt v5, v6
    brif v13, block6, block7
block6:
    jump block8(v10)
block7:
    v14 = iadd v10, v10
    jump block8(v14)
block8(v15: i32):
    v16 = iconst.i64 2
    v17 = ishl v3, v16
    v18 = iadd v1, v17
    store global v15, v18
    return
}";
    let func = parse_functions(text).unwrap().remove(0);
    let mir = lower(&func).unwrap();
    let s = settings(&[]);
    let allocated = allocate(&mir, &RegisterFile::MAX, &Linearize.reservation(&s, &mir)).unwrap();
    let before = allocated.func.clone();
    let mut after = allocated.func;
    let report = Linearize.run(&mut after, &allocated.reserved, &s).unwrap();
    verify_mir_with_limits(&after, Some([64, 64, 64])).unwrap();
    assert_eq!(count(&report, "regions"), 1, "{report:?}");
    let guards = after
        .order
        .iter()
        .filter(|&&b| after.blocks[b].kind == BlockKind::Guard)
        .count() as u64;
    assert_eq!(guards, count(&report, "guard blocks"), "{after}");
    // The region: block4 to block7 and the edge blocks between them; not the diamond.
    let region_blocks = count(&report, "region blocks");
    assert!((4..=8).contains(&region_blocks), "{report:?}\n{after}");
    // The diamond's branch still goes where it went, and nothing else of it changed.
    let origin = |b| after.blocks[b].origin.map(|o| o.to_string());
    for &b in &before.order {
        if matches!(origin(b).as_deref(), Some("block0" | "block1" | "block2")) {
            assert_eq!(
                after.blocks[b].insts, before.blocks[b].insts,
                "{b}\n{after}"
            );
        }
    }
    // Only region blocks from the IR's block4..block7 (or edge blocks) get a guard.
    for &g in &after.order {
        if after.blocks[g].kind != BlockKind::Guard {
            continue;
        }
        if let Some(MInstKind::Branch { taken, .. }) = after.terminator(g).map(|t| &t.kind) {
            let o = origin(taken.block);
            assert!(
                !matches!(
                    o.as_deref(),
                    Some("block0" | "block1" | "block2" | "block3")
                ),
                "{g} guards {o:?}\n{after}"
            );
        }
    }
}

#[test]
fn a_structured_diamond_inside_an_unstructured_region_is_guarded_at_its_entry_only() {
    // Figure 1 with S1 (block4) an if/else diamond block4 -> block9 | block10 -> block11.
    let text = "kernel %k(c: i64, out: i64) {
block0(v0: i64, v1: i64):
    v2 = thread_id x
    v3 = uextend.i64 v2
    v4 = iadd v0, v3
    v5 = load.i8 global v4
    v6 = iconst.i8 0
    v7 = icmp ne v5, v6
    v8 = iconst.i32 1
    brif v7, block3, block2
block2:
    v11 = icmp ult v5, v6
    brif v11, block3, block5
block3:
    v12 = icmp sgt v5, v6
    brif v12, block4, block5
block4:
    v13 = icmp eq v5, v6
    brif v13, block9, block10
block9:
    jump block11(v8)
block10:
    v14 = iadd v8, v8
    jump block11(v14)
block11(v15: i32):
    jump block6(v15)
block5:
    v16 = iconst.i32 7
    jump block6(v16)
block6(v17: i32):
    v18 = iconst.i64 2
    v19 = ishl v3, v18
    v20 = iadd v1, v19
    store global v17, v20
    return
}";
    let func = parse_functions(text).unwrap().remove(0);
    let mir = lower(&func).unwrap();
    for mode in ["all", "divergent"] {
        let s = settings(&[&format!("linearize_regions={mode}")]);
        let allocated =
            allocate(&mir, &RegisterFile::MAX, &Linearize.reservation(&s, &mir)).unwrap();
        let mut after = allocated.func;
        let report = Linearize.run(&mut after, &allocated.reserved, &s).unwrap();
        verify_mir_with_limits(&after, Some([64, 64, 64])).unwrap();
        assert_eq!(count(&report, "regions"), 1, "{report:?}");
        assert_eq!(
            count(&report, "structured sub-regions"),
            1,
            "{report:?}\n{after}"
        );
        assert_eq!(
            count(&report, "guard blocks"),
            count(&report, "region blocks") - count(&report, "sub-region blocks"),
            "{report:?}"
        );
        // The diamond's branch is kept, and no guard leads into its arms.
        let origin = |b| after.blocks[b].origin.map(|o| o.to_string());
        let b4 = after
            .order
            .iter()
            .copied()
            .find(|&b| origin(b).as_deref() == Some("block4"))
            .unwrap();
        assert!(matches!(
            after.terminator(b4).map(|t| &t.kind),
            Some(MInstKind::Branch { .. })
        ));
        for &g in &after.order {
            if after.blocks[g].kind != BlockKind::Guard {
                continue;
            }
            for s in after.successors(g) {
                let o = origin(s);
                assert!(
                    !matches!(o.as_deref(), Some("block9" | "block10" | "block11")),
                    "{g} enters the diamond at {o:?}\n{after}"
                );
            }
        }
    }
}

#[test]
fn the_claims_checker_catches_a_broken_linearization() {
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/short_circuit_fig1.wir"),
    )
    .unwrap();
    let func = parse_functions(&text).unwrap().remove(0);
    let mir = lower(&func).unwrap();
    let s = settings(&["linearize_regions=kernel"]);
    let allocated = allocate(&mir, &RegisterFile::MAX, &Linearize.reservation(&s, &mir)).unwrap();
    let mut after = allocated.func.clone();
    let report = Linearize.run(&mut after, &allocated.reserved, &s).unwrap();
    let check =
        |f: &MirFunction| check_linearized(&allocated.func, f, &allocated.reserved, &report, &s);
    check(&after).unwrap();
    let guard = *after
        .order
        .iter()
        .find(|&&b| after.blocks[b].kind == BlockKind::Guard)
        .unwrap();
    let body = after.order[0];

    // An added instruction that writes a register of the kernel.
    let mut broken = after.clone();
    let copy = broken.blocks[body].insts[0].clone();
    assert!(copy.kind.def().is_some(), "{copy:?}");
    broken.blocks[guard].insts.insert(0, copy);
    let e = check(&broken).unwrap_err();
    assert!(e.contains("not a reserved register"), "{e}");

    // A lost instruction.
    let mut broken = after.clone();
    let (b, i) = after
        .order
        .iter()
        .find_map(|&b| {
            let insts = &after.blocks[b].insts;
            (after.blocks[b].kind == BlockKind::Code && insts.len() > 1).then_some((b, 0))
        })
        .unwrap();
    broken.blocks[b].insts.remove(i);
    let e = check(&broken).unwrap_err();
    assert!(e.contains("is gone"), "{e}");

    // A guarded block that jumps past the next guard: the lanes that ran it and those
    // that did not no longer meet at the guard's fall-through.
    let mut broken = after.clone();
    let guards: Vec<_> = after
        .order
        .iter()
        .copied()
        .filter(|&b| after.blocks[b].kind == BlockKind::Guard)
        .collect();
    let guarded = match after.terminator(guards[0]).map(|t| &t.kind) {
        Some(MInstKind::Branch { taken, .. }) => taken.block,
        other => panic!("{other:?}"),
    };
    if let Some(t) = broken.blocks[guarded].insts.last_mut() {
        t.kind.for_each_target_mut(|t| {
            if t.block == guards[1] {
                t.block = guards[2];
            }
        });
    }
    let e = check(&broken).unwrap_err();
    assert!(e.contains("does not reconverge"), "{e}");
}
