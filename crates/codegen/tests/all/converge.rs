//! `converge` (Common Subexpression Convergence) on the paper's listings: exactly which
//! instructions move where, and what the pass reports.

use std::path::Path;
use warplift_codegen::converge::{converge, Options, Stats};
use warplift_ir::parser::parse_functions;
use warplift_ir::verifier::verify_function;
use warplift_ir::Function;

fn corpus(file: &str) -> Function {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/corpus")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    parse_functions(&text).unwrap().remove(0)
}

/// The options of the hoist and sink tests: the control flow is left as it is (no Split,
/// no flattening, no Unify), so that the arms' contents can be read after the pass.
fn plain() -> Options {
    Options {
        split: false,
        flatten: false,
        unify: false,
        ..Options::default()
    }
}

fn parse(text: &str) -> Function {
    parse_functions(text).unwrap().remove(0)
}

/// Runs the pass with `opts` and returns the kernel's text after it and the statistics;
/// the result must verify.
fn run(mut func: Function, opts: &Options) -> (String, Stats) {
    let stats = converge(&mut func, opts);
    verify_function(&func).unwrap_or_else(|e| panic!("{e}\n{func}"));
    (func.to_string(), stats)
}

/// The statistics as `(hoisted, sunk, selects, join params)`.
fn moved(s: &Stats) -> (u64, u64, u64, u64) {
    (s.hoisted, s.sunk, s.selects, s.join_params)
}

/// The instructions of `block` in `text` (the kernel's printed form), one per line,
/// trimmed.
fn block<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with(name));
    lines
        .next()
        .unwrap_or_else(|| panic!("no {name} in\n{text}"));
    lines
        .take_while(|l| l.starts_with("    "))
        .map(str::trim)
        .collect()
}

#[test]
fn listing_1_1_hoists_the_product_to_the_branch() {
    let (text, stats) = run(corpus("csc_hoist_l1_1.wir"), &plain());
    assert_eq!(moved(&stats), (1, 0, 0, 0));
    assert_eq!(stats.profit, 4);
    assert_eq!(
        block(&text, "block0")[10..],
        [
            "v90 = iconst.i32 0",
            "v91 = icmp ne v11, v90",
            "v92 = imul v4, v6",
            "brif v91, block1, block2"
        ]
    );
    assert_eq!(
        block(&text, "block1"),
        [
            "v13 = iadd v1, v9",
            "store global v92, v13",
            "jump block3(v92)"
        ]
    );
    assert_eq!(block(&text, "block2"), ["jump block3(v92)"]);
}

#[test]
fn listing_1_3_sinks_the_product_renaming_b_through_a_join_parameter() {
    let (text, stats) = run(corpus("csc_sink_l1_3.wir"), &plain());
    assert_eq!(moved(&stats), (0, 1, 0, 1));
    assert_eq!(
        block(&text, "block1"),
        ["v10 = iconst.i32 10", "jump block3(v10)"]
    );
    assert_eq!(block(&text, "block2"), ["jump block3(v4)"]);
    assert_eq!(
        block(&text, "block3(v92: i32)"),
        [
            "v93 = imul v92, v3",
            "v14 = iadd v0, v7",
            "store global v93, v14",
            "return"
        ]
    );
    // Without renaming, `10 * c` and `b * c` are different computations.
    let opts = Options {
        rename: false,
        ..plain()
    };
    let (_, stats) = run(corpus("csc_sink_l1_3.wir"), &opts);
    assert_eq!(moved(&stats), (0, 0, 0, 0));
}

#[test]
fn listing_1_5_splits_around_the_product_and_flattens_the_entry() {
    // Neither rise (the even arm redefines b) nor sink (the odd arm stores a): Split
    // makes a temporary reconvergence point for a = b * c (Listing 1.6). The even arm's
    // prefix, b = 10, is then the only code before it, and flattens into a select.
    let (text, stats) = run(corpus("csc_split_l1_5.wir"), &Options::default());
    assert_eq!(moved(&stats), (0, 0, 1, 0));
    assert_eq!(
        (stats.splits, stats.split_pairs, stats.split_params),
        (1, 1, 1)
    );
    assert_eq!((stats.flattened, stats.speculated), (1, 1));
    // The temporary reconvergence point, entered from the flattened entry alone, merges
    // into it: the product runs in the branch's block, as in Listing 1.6.
    assert_eq!(stats.merged, 1);
    assert_eq!(
        block(&text, "block0")[10..],
        [
            "v91 = icmp ne v10, v90",
            "v13 = iconst.i32 10",
            "v94 = select v91, v5, v13",
            "v93 = imul v94, v4",
            "brif v91, block6, block3(v93)"
        ]
    );
    assert!(!text.contains("block5"), "{text}");
    assert_eq!(
        block(&text, "block6"),
        [
            "v12 = iadd v1, v8",
            "store global v93, v12",
            "jump block3(v93)"
        ]
    );
    // Without flattening the Split keeps its branch into the arms, and a branch and a jump
    // more than the product saves: the cost model declines it, unless branches are free.
    let keep_branches = Options {
        flatten: false,
        ..Options::default()
    };
    let func = corpus("csc_split_l1_5.wir");
    let before = func.to_string();
    let (text, stats) = run(func, &keep_branches);
    assert_eq!(stats.splits, 0);
    assert_eq!(text, before);
    let free = Options {
        split_cost: 0,
        ..keep_branches
    };
    let (text, stats) = run(corpus("csc_split_l1_5.wir"), &free);
    assert_eq!(stats.splits, 1);
    assert_eq!(
        block(&text, "block0").last(),
        Some(&"brif v91, block5(v5), block2")
    );
    assert_eq!(
        block(&text, "block2"),
        ["v13 = iconst.i32 10", "jump block5(v13)"]
    );
    assert_eq!(
        block(&text, "block5(v92: i32)"),
        ["v93 = imul v92, v4", "brif v91, block6, block3(v93)"]
    );
}

/// A load before a divergent branch whose one use is in one arm stays where it is: the
/// pass never moves work into a divergent arm (LLVM's instcombine sinks such a load into
/// the arm, and Listing 1.5 runs 81% slower for it), not even when it splits the arms.
#[test]
fn a_single_use_load_never_moves_into_a_divergent_arm() {
    let text = "kernel %k(p: i64, q: i64) {
block0(v0: i64, v1: i64):
    v2 = thread_id x
    v3 = load.i32 global v0
    v4 = iconst.i32 1
    v5 = band v2, v4
    v6 = iconst.i32 0
    v7 = icmp ne v5, v6
    brif v7, block1, block2
block1:
    v8 = imul v2, v2
    v9 = iadd v8, v3
    store global v9, v1
    jump block3(v8)
block2:
    v10 = iconst.i32 10
    v11 = imul v10, v2
    jump block3(v11)
block3(v12: i32):
    store global v12, v0
    return
}";
    let all = [
        Options::default(),
        plain(),
        Options {
            split_cost: 0,
            flatten: false,
            ..Options::default()
        },
        Options {
            hoist: false,
            ..Options::default()
        },
    ];
    for opts in all {
        let (out, stats) = run(parse(text), &opts);
        assert!(
            block(&out, "block0").contains(&"v3 = load.i32 global v0"),
            "{opts:?}\n{out}"
        );
        assert_eq!(out.matches("load").count(), 1, "{opts:?}\n{out}");
        if opts.split {
            assert_eq!(stats.splits, 1, "{opts:?}\n{out}");
        }
    }
}

#[test]
fn listing_1_7_renames_the_differing_operand() {
    let file = "csc_rename_l1_7.wir";
    // Hoisting `b * c` and `d * c` saves a multiplication and costs a select: a tie, which
    // warps that do not diverge at run time would pay with nothing gained. Declined.
    let hoist_only = Options {
        sink: false,
        ..plain()
    };
    assert_eq!(moved(&run(corpus(file), &hoist_only).1), (0, 0, 0, 0));
    // Sinking renames `b`/`d` through a new parameter of the join (a move in each arm, 8)
    // and frees the parameter that received the products (8): profit 4.
    let (text, stats) = run(corpus(file), &plain());
    assert_eq!(moved(&stats), (0, 1, 0, 1));
    assert_eq!(stats.profit, 4);
    assert_eq!(block(&text, "block1"), ["jump block3(v3)"]);
    assert_eq!(block(&text, "block2"), ["jump block3(v6)"]);
    assert_eq!(
        block(&text, "block3(v92: i32)")[..1],
        ["v93 = imul v92, v5"]
    );
    // With every step on, the two arms are one code up to the renamed operand: Unify
    // removes the branch, with one select (what LLVM cannot do: to it `b * c` and `d * c`
    // are different values).
    let (text, stats) = run(corpus(file), &Options::default());
    assert_eq!((stats.unified, stats.selects, stats.profit), (1, 1, 4));
    assert_eq!(
        block(&text, "block0")[12..],
        [
            "v92 = select v91, v3, v6",
            "v11 = imul v92, v5",
            "jump block3(v11)"
        ]
    );
}

#[test]
fn listing_1_9_hoists_a_and_sinks_e_as_the_matching_of_figure_1_says() {
    let (text, stats) = run(corpus("csc_dp_l1_9.wir"), &plain());
    // a = b*c rises (4 cycles, no copy); e = x*x sinks with x = d or f renamed through a
    // new join parameter (a move in each arm, 8) that takes the place of the one that
    // received e (8): 4; d = a+c and f = a/c differ in operator and stay.
    assert_eq!(moved(&stats), (1, 1, 0, 1));
    assert_eq!(stats.profit, 8);
    assert_eq!(
        block(&text, "block0").last(),
        Some(&"brif v91, block1, block2")
    );
    assert!(block(&text, "block0").contains(&"v92 = imul v3, v5"));
    assert_eq!(
        block(&text, "block1"),
        ["v11 = iadd v92, v5", "jump block3(v11)"]
    );
    assert_eq!(
        block(&text, "block2"),
        ["v14 = sdiv v92, v5", "jump block3(v14)"]
    );
    assert_eq!(
        block(&text, "block3(v93: i32)"),
        [
            "v94 = imul v93, v93",
            "v17 = iadd v0, v8",
            "store global v94, v17",
            "return"
        ]
    );
}

#[test]
fn listing_1_10_flattens_the_inner_branch_and_hoists_the_outer_pair() {
    // The inner if (t % 3 != 0) holds only a = b * c: it flattens into a select
    // (Listing 1.11), after which both outer arms compute b * c and it rises.
    let (text, stats) = run(corpus("csc_nested_l1_10.wir"), &Options::default());
    assert_eq!(stats.divergent_branches, 2);
    assert_eq!(moved(&stats), (1, 0, 1, 0));
    assert_eq!((stats.flattened, stats.speculated), (1, 1));
    assert_eq!(
        block(&text, "block0")[11..],
        [
            "v91 = icmp ne v11, v90",
            "v95 = imul v4, v6",
            "brif v91, block1, block2"
        ]
    );
    assert_eq!(
        block(&text, "block2")[4..],
        [
            "v93 = icmp ne v15, v92",
            "v94 = select v93, v95, v16",
            "jump block4(v94)"
        ]
    );
    assert!(!text.contains("block3"), "{text}");
    // Without flattening the nested pair stays apart.
    let func = corpus("csc_nested_l1_10.wir");
    let before = func.to_string();
    let (text, stats) = run(func, &plain());
    assert_eq!(moved(&stats), (0, 0, 0, 0));
    assert_eq!(text, before);
}

#[test]
fn listing_1_3_sunk_flattens_into_one_select_as_llvm_does() {
    // After the sink only b = 10 is left in one arm: the diamond becomes a select.
    let (text, stats) = run(corpus("csc_sink_l1_3.wir"), &Options::default());
    assert_eq!(moved(&stats), (0, 1, 1, 1));
    assert_eq!((stats.flattened, stats.merged), (1, 1));
    // The join, entered from the flattened block alone, merges into it: one straight
    // block, the sunk product reading the select.
    assert_eq!(
        block(&text, "block0")[10..],
        [
            "v91 = icmp ne v9, v90",
            "v10 = iconst.i32 10",
            "v94 = select v91, v10, v4",
            "v93 = imul v94, v3",
            "v14 = iadd v0, v7",
            "store global v93, v14",
            "return"
        ]
    );
    assert!(!text.contains("block3"), "{text}");
    // Listing 1.1 keeps its branch: the odd arm stores.
    let (_, stats) = run(corpus("csc_hoist_l1_1.wir"), &Options::default());
    assert_eq!((stats.hoisted, stats.flattened), (1, 0));
}

#[test]
fn flattening_never_speculates_loads_divisions_or_side_effects() {
    for then in [
        "    v10 = load.i32 global v0\n    jump block3(v10)",
        "    v10 = sdiv v3, v2\n    jump block3(v10)",
        "    store global v2, v0\n    jump block3(v2)",
    ] {
        let els = "    jump block3(v3)";
        let func = diamond(then, els);
        let before = func.to_string();
        let (text, stats) = run(func, &Options::default());
        assert_eq!(stats.flattened, 0, "{text}");
        assert_eq!(text, before);
    }
    // Five instructions are more than a warp that does not diverge should pay for.
    let long = "    v10 = iadd v2, v3\n    v11 = iadd v10, v3\n    v12 = iadd v11, v3\n    v13 = iadd v12, v3\n    v14 = iadd v13, v3\n    jump block3(v14)";
    let (_, stats) = run(diamond(long, "    jump block3(v3)"), &Options::default());
    assert_eq!(stats.flattened, 0);
    let short = "    v10 = iadd v2, v3\n    jump block3(v10)";
    let (text, stats) = run(diamond(short, "    jump block3(v3)"), &Options::default());
    assert_eq!((stats.flattened, stats.selects), (1, 1), "{text}");
}

#[test]
fn bitonic_step_hoists_both_loads_but_not_the_compares_or_the_swaps() {
    let (text, stats) = run(corpus("csc_bitonic_l1_12.wir"), &plain());
    assert_eq!(moved(&stats), (2, 0, 0, 0));
    assert_eq!(stats.profit, 800);
    let b5 = block(&text, "block5");
    assert_eq!(
        b5[b5.len() - 3..],
        [
            "v30 = load.i32 global v18",
            "v31 = load.i32 global v21",
            "brif v15, block6, block8"
        ]
    );
    assert_eq!(
        block(&text, "block6"),
        ["v24 = icmp sgt v30, v31", "brif v24, block7, block10"]
    );
    assert_eq!(
        block(&text, "block8"),
        ["v27 = icmp slt v30, v31", "brif v27, block9, block10"]
    );
    assert_eq!(
        block(&text, "block7")[..2],
        ["store global v31, v18", "store global v30, v21"]
    );
}

#[test]
fn bitonic_step_unifies_the_ascending_and_descending_sides() {
    // `a[i] < a[j]` is `a[j] > a[i]`: with the condition code swapped and the operands
    // renamed by two selects, the two sides of the ascending/descending branch are one
    // code — loads, compare, inner branch and swap — and the branch goes (Listing 1.12).
    let (text, stats) = run(corpus("csc_bitonic_l1_12.wir"), &Options::default());
    assert_eq!(
        (stats.unified, stats.selects, stats.hoisted, stats.profit),
        (1, 2, 0, 812)
    );
    let b5 = block(&text, "block5");
    assert_eq!(
        b5[b5.len() - 6..],
        [
            "v22 = load.i32 global v18",
            "v23 = load.i32 global v21",
            "v30 = select v15, v22, v23",
            "v31 = select v15, v23, v22",
            "v24 = icmp sgt v30, v31",
            "brif v24, block7, block10"
        ]
    );
    assert_eq!(
        block(&text, "block7"),
        [
            "store global v23, v18",
            "store global v22, v21",
            "jump block10"
        ]
    );
    assert!(
        !text.contains("block8") && !text.contains("block9"),
        "{text}"
    );
}

#[test]
fn unify_needs_every_instruction_to_match() {
    // One side stores what the other does not: not one code, the branch stays.
    let f = diamond(
        "    store global v2, v1\n    jump block3(v2)",
        "    store global v3, v1\n    v10 = iadd v3, v3\n    jump block3(v10)",
    );
    let (_, stats) = run(f, &Options::default());
    assert_eq!(stats.unified, 0);
    // The same code on both sides with a renamed store operand: one select, no branch.
    let f = diamond(
        "    store global v2, v1\n    jump block3(v2)",
        "    store global v3, v1\n    jump block3(v3)",
    );
    let (text, stats) = run(f, &Options::default());
    assert_eq!((stats.unified, stats.selects), (1, 1), "{text}");
    assert!(!text.contains("brif"), "{text}");
}

#[test]
fn microbenchmarks_hoist_loads_and_sink_a_load_with_a_renamed_address() {
    let (text, stats) = run(corpus("csc_micro_hoist.wir"), &plain());
    // Two loads, the constant 3 and the scaling rise; iadd and isub stay.
    assert_eq!(moved(&stats), (4, 0, 0, 0));
    assert_eq!(block(&text, "block1").len(), 2, "{text}");
    assert_eq!(block(&text, "block2").len(), 2, "{text}");
    let (text, stats) = run(corpus("csc_micro_sink.wir"), &plain());
    // The constant 5 rises; the address chain (extend, shift, add), the load and the
    // scaling sink, with the index renamed once.
    assert_eq!(moved(&stats), (1, 5, 0, 1), "{text}");
    assert_eq!(
        block(&text, "block3(v34: i32)")[..5],
        [
            "v35 = uextend.i64 v34",
            "v36 = ishl v35, v8",
            "v37 = iadd v0, v36",
            "v38 = load.i32 global v37",
            "v39 = imul v38, v33"
        ]
    );
    // A threshold above a load's 400 cycles keeps everything in place.
    let opts = Options {
        threshold: 1000,
        ..plain()
    };
    assert_eq!(
        moved(&run(corpus("csc_micro_sink.wir"), &opts).1),
        (0, 0, 0, 0)
    );
}

const DIAMOND: &str = "kernel %k(p: i64, q: i64) {
block0(v0: i64, v1: i64):
    v2 = thread_id x
    v3 = iconst.i32 1
    v4 = band v2, v3
    v5 = iconst.i32 0
    v6 = icmp ne v4, v5
    brif v6, block1, block2
block1:
THEN
block2:
ELSE
block3(v50: i32):
    store global v50, v1
    return
}";

fn diamond(then: &str, els: &str) -> Function {
    parse(&DIAMOND.replace("THEN", then).replace("ELSE", els))
}

#[test]
fn a_load_after_a_store_it_may_alias_does_not_rise_but_may_sink() {
    let then = "    store global v2, v0\n    v10 = load.i32 global v0\n    jump block3(v10)";
    let els = "    v11 = load.i32 global v0\n    jump block3(v11)";
    let no_sink = Options {
        sink: false,
        ..plain()
    };
    let (text, stats) = run(diamond(then, els), &no_sink);
    assert_eq!(moved(&stats), (0, 0, 0, 0), "{text}");
    // Nothing follows the load in its arm: it may sink, and does.
    let (text, stats) = run(diamond(then, els), &plain());
    assert_eq!(moved(&stats), (0, 1, 0, 0), "{text}");
    assert_eq!(
        block(&text, "block1"),
        ["store global v2, v0", "jump block3"]
    );
    // Same address, disjoint bytes: no alias, the load rises.
    let disjoint = then.replace("store global v2, v0", "store global v2, v0+4");
    let (text, stats) = run(diamond(&disjoint, els), &no_sink);
    assert_eq!(moved(&stats), (1, 0, 0, 0), "{text}");
}

#[test]
fn a_load_ordered_by_a_barrier_does_not_cross_it() {
    let then = "    barrier\n    v10 = load.i32 global v0\n    jump block3(v10)";
    let els = "    v11 = load.i32 global v0\n    jump block3(v11)";
    let no_sink = Options {
        sink: false,
        ..plain()
    };
    let (text, stats) = run(diamond(then, els), &no_sink);
    assert_eq!(moved(&stats), (0, 0, 0, 0), "{text}");
    // Sinking keeps it after the barrier: legal, and done.
    let (text, stats) = run(diamond(then, els), &plain());
    assert_eq!(moved(&stats), (0, 1, 0, 0), "{text}");
    assert_eq!(block(&text, "block1"), ["barrier", "jump block3"]);
    let then = "    v10 = load.i32 global v0\n    barrier\n    jump block3(v10)";
    let (text, stats) = run(diamond(then, els), &plain());
    // It may rise (nothing precedes it) but not sink past the barrier.
    assert_eq!(moved(&stats), (1, 0, 0, 0), "{text}");
    assert_eq!(block(&text, "block1"), ["barrier", "jump block3(v51)"]);
}

#[test]
fn atomics_and_stores_never_move() {
    let then =
        "    v10 = atomic_rmw add global v0, v3\n    store global v10, v1\n    jump block3(v10)";
    let els =
        "    v11 = atomic_rmw add global v0, v3\n    store global v11, v1\n    jump block3(v11)";
    let (text, stats) = run(diamond(then, els), &plain());
    assert_eq!(moved(&stats), (0, 0, 0, 0), "{text}");
}

#[test]
fn work_of_one_arm_is_never_speculated_onto_the_other() {
    // A division by a thread-varying divisor and a load the branch guards, in one arm
    // only: nothing to match, nothing moves.
    let then = "    v10 = sdiv v3, v2\n    v11 = load.i32 global v0\n    v12 = iadd v10, v11\n    jump block3(v12)";
    let els = "    v13 = iconst.i32 7\n    jump block3(v13)";
    let func = diamond(then, els);
    let before = func.to_string();
    let (text, stats) = run(func, &plain());
    assert_eq!(moved(&stats), (0, 0, 0, 0));
    assert_eq!(text, before);
}

#[test]
fn a_result_the_arm_keeps_using_does_not_sink() {
    // Both arms compute x * x; the first also stores it, so it cannot sink, and its
    // operand is computed in the arm, so it cannot rise.
    let then = "    v10 = iadd v2, v3\n    v11 = imul v10, v10\n    store global v11, v0\n    jump block3(v11)";
    let els = "    v12 = isub v2, v3\n    v13 = imul v12, v12\n    jump block3(v13)";
    let (text, stats) = run(diamond(then, els), &plain());
    assert_eq!(moved(&stats), (0, 0, 0, 0), "{text}");
}

#[test]
fn commutative_operands_match_in_either_order() {
    let then = "    v10 = imul v2, v3\n    jump block3(v10)";
    let els = "    v11 = imul v3, v2\n    jump block3(v11)";
    let (text, stats) = run(diamond(then, els), &plain());
    assert_eq!(moved(&stats), (1, 0, 0, 0), "{text}");
}

#[test]
fn a_four_way_switch_sinks_what_all_four_arms_share() {
    let (text, stats) = run(corpus("csc_micro_switch.wir"), &plain());
    // The constant 3, the same in all four arms, rises to the table; uextend, ishl, iadd
    // (the address), load and imul sink: five tuples of four, the index renamed through
    // one parameter.
    assert_eq!(moved(&stats), (1, 5, 0, 1), "{text}");
    assert_eq!((stats.multiway, stats.multiway_hoists), (1, 1));
    let b0 = block(&text, "block0");
    assert_eq!(
        b0[b0.len() - 2..],
        [
            "v45 = iconst.i32 3",
            "br_table v11, block4, [block1, block2, block3, block4]"
        ]
    );
    assert_eq!(block(&text, "block1"), ["jump block5(v6)"]);
    assert_eq!(
        block(&text, "block4"),
        [
            "v35 = iconst.i32 511",
            "v36 = isub v35, v6",
            "jump block5(v36)"
        ]
    );
    assert_eq!(
        block(&text, "block5(v46: i32)")[..5],
        [
            "v47 = uextend.i64 v46",
            "v48 = ishl v47, v8",
            "v49 = iadd v0, v48",
            "v50 = load.i32 global v49",
            "v51 = imul v50, v45"
        ]
    );
}

#[test]
fn a_four_way_table_hoists_what_all_four_arms_compute_alike() {
    // Every arm of the divergent br_table loads a[t] first: one load before the table,
    // instead of one per arm. The operations after it differ and stay.
    let text = "kernel %k(p: i64, q: i64) {
block0(v0: i64, v1: i64):
    v2 = thread_id x
    v3 = iconst.i32 3
    v4 = band v2, v3
    v5 = uextend.i64 v2
    v6 = iconst.i64 2
    v7 = ishl v5, v6
    v8 = iadd v0, v7
    br_table v4, block4, [block1, block2, block3, block4]
block1:
    v10 = load.i32 global v8
    v11 = iadd v10, v2
    jump block5(v11)
block2:
    v12 = load.i32 global v8
    v13 = isub v12, v2
    jump block5(v13)
block3:
    v14 = load.i32 global v8
    v15 = imul v14, v2
    jump block5(v15)
block4:
    v16 = load.i32 global v8
    v17 = bxor v16, v2
    jump block5(v17)
block5(v18: i32):
    v19 = iadd v1, v7
    store global v18, v19
    return
}";
    let (out, stats) = run(parse(text), &Options::default());
    assert_eq!((stats.hoisted, stats.multiway_hoists), (1, 1), "{out}");
    // Three pairwise matchings of a global load: 3 x 400.
    assert_eq!(stats.profit, 1200);
    let b0 = block(&out, "block0");
    assert_eq!(
        b0[b0.len() - 2..],
        [
            "v20 = load.i32 global v8",
            "br_table v4, block4, [block1, block2, block3, block4]"
        ]
    );
    assert_eq!(
        block(&out, "block1"),
        ["v11 = iadd v20, v2", "jump block5(v11)"]
    );
    assert_eq!(
        block(&out, "block4"),
        ["v17 = bxor v20, v2", "jump block5(v17)"]
    );
    // The default's arm loads another address: the arms fall into two groups by the
    // address they read, so one select chooses it, on one compare of the index. The
    // default's group (which would need `index >= 3`, catching the indices past the
    // table) is the fallback; the other three arms' indices are 0, 1 and 2, `index < 3`,
    // reading the constant 3 the block already has. Three loads saved (3 x 400) pay for
    // the select and the compare (2 x 4).
    let (out, stats) = run(
        parse(&text.replace("v16 = load.i32 global v8", "v16 = load.i32 global v0")),
        &Options::default(),
    );
    assert_eq!(
        (stats.hoisted, stats.selects, stats.table_tests),
        (1, 1, 1),
        "{out}"
    );
    assert_eq!(stats.profit, 3 * 400 - 2 * 4);
    let b0 = block(&out, "block0");
    assert_eq!(
        b0[b0.len() - 4..],
        [
            "v20 = icmp ult v4, v3",
            "v21 = select v20, v8, v0",
            "v22 = load.i32 global v21",
            "br_table v4, block4, [block1, block2, block3, block4]"
        ]
    );
    assert_eq!(
        block(&out, "block4"),
        ["v17 = bxor v22, v2", "jump block5(v17)"]
    );
    // Without renaming the loads stay.
    let no_rename = Options {
        rename: false,
        ..Options::default()
    };
    let (_, stats) = run(
        parse(&text.replace("v16 = load.i32 global v8", "v16 = load.i32 global v0")),
        &no_rename,
    );
    assert_eq!(stats.hoisted, 0);
}

#[test]
fn a_brif_cascade_hoists_what_all_its_arms_share_to_its_head() {
    // if t % 4 == 0 / else if == 1 / else if == 2 / else: the four arms' address, load,
    // constant and product rise to the head as four tuples of four, in one step; the
    // compares of the inner levels stay where they are.
    let (text, stats) = run(corpus("csc_micro_cascade.wir"), &plain());
    assert_eq!(moved(&stats), (4, 0, 0, 0), "{text}");
    assert_eq!(stats.multiway_hoists, 1);
    // Three pairwise matchings of the load (400), the address, constant and product (4
    // each).
    assert_eq!(stats.profit, 3 * (400 + 3 * 4));
    let b0 = block(&text, "block0");
    assert_eq!(
        b0[b0.len() - 5..],
        [
            "v40 = iadd v0, v9",
            "v41 = load.i32 global v40",
            "v42 = iconst.i32 3",
            "v43 = imul v41, v42",
            "brif v13, block1, block2"
        ]
    );
    assert_eq!(
        block(&text, "block1"),
        ["v18 = iadd v43, v6", "jump block7(v18)"]
    );
    assert_eq!(
        block(&text, "block2"),
        [
            "v19 = iconst.i32 1",
            "v20 = icmp eq v11, v19",
            "brif v20, block3, block4"
        ]
    );
    assert_eq!(
        block(&text, "block6"),
        ["v37 = imul v43, v43", "jump block7(v37)"]
    );
    // With every step on, the innermost branch, left with one instruction a side,
    // flattens after the hoist.
    let (_, stats) = run(corpus("csc_micro_cascade.wir"), &Options::default());
    assert_eq!((stats.hoisted, stats.multiway_hoists), (4, 1));
    assert_eq!((stats.flattened, stats.speculated), (1, 2));
}

/// A cascade whose four arms load from four addresses computed before it, then each do
/// their own work; `$conds` is where the compares of the inner levels stand.
fn cascade_of_loads(inner_compares: bool) -> Function {
    let (head, inner1, inner2) = if inner_compares {
        (
            "",
            "    v8 = icmp eq v4, v7\n",
            "    v10 = icmp eq v4, v9\n",
        )
    } else {
        (
            "    v8 = icmp eq v4, v7\n    v10 = icmp eq v4, v9\n",
            "",
            "",
        )
    };
    parse(&format!(
        "kernel %k(p: i64, q: i64) {{
block0(v0: i64, v1: i64):
    v2 = thread_id x
    v3 = iconst.i32 3
    v4 = band v2, v3
    v5 = iconst.i32 0
    v6 = icmp eq v4, v5
    v7 = iconst.i32 1
    v9 = iconst.i32 2
{head}    v11 = iconst.i64 4
    v12 = iadd v0, v11
    v13 = iconst.i64 8
    v14 = iadd v0, v13
    v15 = iconst.i64 12
    v16 = iadd v0, v15
    brif v6, block1, block2
block1:
    v20 = load.i32 global v0
    v21 = iadd v20, v2
    jump block6(v21)
block2:
{inner1}    brif v8, block3, block4
block3:
    v22 = load.i32 global v12
    v23 = isub v22, v2
    jump block6(v23)
block4:
{inner2}    brif v10, block5, block7
block5:
    v24 = load.i32 global v14
    v25 = imul v24, v2
    jump block6(v25)
block7:
    v26 = load.i32 global v16
    v27 = bxor v26, v2
    jump block6(v27)
block6(v28: i32):
    v29 = uextend.i64 v2
    v30 = iconst.i64 2
    v31 = ishl v29, v30
    v32 = iadd v1, v31
    store global v28, v32
    return
}}"
    ))
}

#[test]
fn a_cascade_renames_a_differing_operand_by_a_chain_of_selects_when_it_pays() {
    // The four loads read four addresses: one load at the head, its address chosen by a
    // chain of three selects on the cascade's conditions (all computed at the head). The
    // three loads saved (3 x 400) pay for the three selects (3 x 4).
    let (text, stats) = run(cascade_of_loads(false), &plain());
    assert_eq!(moved(&stats), (1, 0, 3, 0), "{text}");
    assert_eq!(stats.profit, 3 * 400 - 3 * 4);
    let b0 = block(&text, "block0");
    assert_eq!(
        b0[b0.len() - 5..],
        [
            "v33 = select v10, v14, v16",
            "v34 = select v8, v12, v33",
            "v35 = select v6, v0, v34",
            "v36 = load.i32 global v35",
            "brif v6, block1, block2"
        ]
    );
    assert_eq!(
        block(&text, "block7"),
        ["v27 = bxor v36, v2", "jump block6(v27)"]
    );
    // Without renaming no choice can be made at the head: the loads stay (the join's
    // multi-way sink would rename the address through a parameter, but the arms'
    // differing operations read the loads).
    let no_rename = Options {
        rename: false,
        ..plain()
    };
    let (text, stats) = run(cascade_of_loads(false), &no_rename);
    assert_eq!(moved(&stats), (0, 0, 0, 0), "{text}");
    // When the inner levels compute their conditions themselves (`icmp eq v4, v7`, `v4`
    // and `v7` from the head), the compares move to the head, charged as run by every
    // lane (2 x 4), and the same chain reads them there.
    let (text, stats) = run(cascade_of_loads(true), &plain());
    assert_eq!(moved(&stats), (1, 0, 3, 0), "{text}");
    assert_eq!((stats.multiway_hoists, stats.cascade_conditions), (1, 2));
    assert_eq!(stats.profit, 3 * 400 - 3 * 4 - 2 * 4);
    let b0 = block(&text, "block0");
    assert_eq!(
        b0[b0.len() - 7..],
        [
            "v8 = icmp eq v4, v7",
            "v10 = icmp eq v4, v9",
            "v33 = select v10, v14, v16",
            "v34 = select v8, v12, v33",
            "v35 = select v6, v0, v34",
            "v36 = load.i32 global v35",
            "brif v6, block1, block2"
        ]
    );
    assert_eq!(block(&text, "block2"), ["brif v8, block3, block4"]);
}

#[test]
fn a_store_between_the_levels_of_a_cascade_ends_it() {
    // The same four arms loading one address: one load at the head, no select.
    let text = cascade_of_loads(false)
        .to_string()
        .replace("load.i32 global v12", "load.i32 global v0")
        .replace("load.i32 global v14", "load.i32 global v0")
        .replace("load.i32 global v16", "load.i32 global v0");
    let (out, stats) = run(parse(&text), &plain());
    assert_eq!((stats.hoisted, stats.selects), (1, 0), "{out}");
    assert_eq!(
        block(&out, "block1"),
        ["v21 = iadd v33, v2", "jump block6(v21)"]
    );
    // A store in the second level: a load rising past it to the head could read what it
    // wrote. The cascade below the store (its three arms) is one set, whose loads rise to
    // the end of the store's block; the first arm keeps its own.
    let stored = text.replace("block2:\n", "block2:\n    store global v2, v0\n");
    assert!(stored.contains("store global v2, v0"));
    let (out, stats) = run(parse(&stored), &plain());
    assert_eq!((stats.hoisted, stats.multiway_hoists), (1, 1), "{out}");
    assert_eq!(
        block(&out, "block2"),
        [
            "store global v2, v0",
            "v33 = load.i32 global v0",
            "brif v8, block3, block4"
        ]
    );
    assert_eq!(block(&out, "block1")[0], "v20 = load.i32 global v0");
}

/// Renaming across a `br_table` (`csc_micro_bases`: a four-way switch on `t % 4` whose
/// arms add the same offset `4 g` to four different bases, then load): the offset
/// arithmetic and the load rise to the table, and the base is chosen by a chain of
/// `select`s on compares of the index, one per arm but the default's.
#[test]
fn a_table_renames_a_differing_base_by_compares_of_its_index() {
    let (text, stats) = run(corpus("csc_micro_bases.wir"), &plain());
    // uextend, the constant 2, ishl, the address (base renamed) and the load: five tuples
    // of four; three selects; three compares and their three constants.
    assert_eq!(moved(&stats), (5, 0, 3, 0), "{text}");
    assert_eq!((stats.multiway_hoists, stats.table_tests), (1, 6));
    // Three pairwise matchings of 3 x 4 + 4 + 400 cycles (the address pays for its
    // estimated select), less what the chain takes beyond the three estimated selects:
    // six instructions of tests.
    assert_eq!(stats.profit, 3 * (3 * 4 + 400) - 6 * 4);
    let b0 = block(&text, "block0");
    assert_eq!(
        b0[13..],
        [
            "v44 = uextend.i64 v6",
            "v45 = iconst.i64 2",
            "v46 = ishl v44, v45",
            // The default's arm (index 3, and any past the table) is the fallback; each
            // other arm's base where the index is that arm's.
            "v47 = iconst.i32 2",
            "v48 = icmp eq v14, v47",
            "v49 = select v48, v10, v12",
            "v50 = iconst.i32 1",
            "v51 = icmp eq v14, v50",
            "v52 = select v51, v8, v49",
            "v53 = iconst.i32 0",
            "v54 = icmp eq v14, v53",
            "v55 = select v54, v0, v52",
            "v56 = iadd v55, v46",
            "v57 = load.i32 global v56",
            "br_table v14, block4, [block1, block2, block3, block4]"
        ]
    );
    // Each arm keeps its own work, on the one load.
    assert_eq!(
        block(&text, "block1"),
        ["v20 = iadd v57, v6", "jump block5(v20)"]
    );
    assert_eq!(
        block(&text, "block4"),
        ["v38 = imul v57, v57", "jump block5(v38)"]
    );
    // Every step on: the same (the arms differ, so the table stays).
    let (all, _) = run(corpus("csc_micro_bases.wir"), &Options::default());
    assert_eq!(all, text);
    // Without renaming, only what every arm computes from the same operands rises: the
    // offset; the addresses, and the loads reading them, stay in the arms.
    let no_rename = Options {
        rename: false,
        ..plain()
    };
    let (text, stats) = run(corpus("csc_micro_bases.wir"), &no_rename);
    assert_eq!(moved(&stats), (3, 0, 0, 0), "{text}");
    assert_eq!(
        block(&text, "block1"),
        [
            "v18 = iadd v0, v46",
            "v19 = load.i32 global v18",
            "v20 = iadd v19, v6",
            "jump block5(v20)"
        ]
    );
}

/// Arms of a `br_table` that are left with nothing but a jump to one block, with the
/// same arguments, once their common code rose: the table becomes that jump.
#[test]
fn a_table_whose_arms_all_rose_becomes_a_jump() {
    let text = "kernel %k(p: i64, q: i64) {
block0(v0: i64, v1: i64):
    v2 = thread_id x
    v3 = iconst.i32 3
    v4 = band v2, v3
    v5 = uextend.i64 v2
    v6 = iconst.i64 2
    v7 = ishl v5, v6
    v8 = iconst.i64 1024
    v9 = iadd v0, v8
    br_table v4, block3, [block1, block2, block3, block3]
block1:
    v10 = iadd v0, v7
    v11 = load.i32 global v10
    jump block4(v11)
block2:
    v12 = iadd v9, v7
    v13 = load.i32 global v12
    jump block4(v13)
block3:
    v14 = iadd v9, v7
    v15 = load.i32 global v14
    jump block4(v15)
block4(v16: i32):
    v17 = iadd v1, v7
    store global v16, v17
    return
}";
    let (out, stats) = run(parse(text), &Options::default());
    // Two groups by base: block1's (index 0) and the others' (indices 1, 2, 3 and past
    // the table, `index >= 1`). The dearer test is the fallback's: block1's, `index ==
    // 0`, is one compare on a new constant. The table's arms then only jump to block4
    // with the one load: the table goes, and block4, entered from block0 alone, merges
    // into it.
    assert_eq!(
        (
            stats.hoisted,
            stats.selects,
            stats.table_tests,
            stats.flattened
        ),
        (2, 1, 2, 1),
        "{out}"
    );
    assert_eq!(stats.merged, 1);
    assert_eq!(
        block(&out, "block0")[7..],
        [
            "v9 = iadd v0, v8",
            "v18 = iconst.i32 0",
            "v19 = icmp eq v4, v18",
            "v20 = select v19, v0, v9",
            "v21 = iadd v20, v7",
            "v22 = load.i32 global v21",
            "v17 = iadd v1, v7",
            "store global v22, v17",
            "return"
        ]
    );
    assert!(!out.contains("br_table"), "{out}");
}

/// `csc_micro_tables`: a four-way table renaming two operands, the base (four groups of
/// one arm) and the scale (arms 0-2 read `v13`, the default's arm 3 `v15`). The chains are
/// chosen together: the base's falls back to arm 0's and tests `index == 2`, `== 1` and
/// `>= 3` (reading the block's `v13 = 3`); the scale's reads that last test again.
/// Chosen chain by chain (`converge_joint_renaming=false`), the base's chain falls back to
/// the default's arm and tests `index == 2, 1, 0`, and the scale's needs `index < 3` of
/// its own: one compare and one constant more for the same four `select`s.
#[test]
fn a_tables_renaming_chains_are_chosen_together_to_share_tests() {
    let (text, stats) = run(corpus("csc_micro_tables.wir"), &plain());
    // uextend, the constant 2, ishl, the address, the load and the product rise.
    assert_eq!(moved(&stats), (6, 0, 4, 0), "{text}");
    assert_eq!((stats.multiway_hoists, stats.table_tests), (1, 5));
    // Three pairwise matchings of 5 x 4 + 400 cycles, less the selects they priced (three
    // for the base, one for arm 3's scale), less what the chains take beyond those four
    // selects: the five test instructions.
    assert_eq!(stats.profit, 3 * (5 * 4 + 400) - 4 * 4 - 5 * 4);
    let b0 = block(&text, "block0");
    assert_eq!(
        b0[14..],
        [
            "v49 = uextend.i64 v6",
            "v50 = iconst.i64 2",
            "v51 = ishl v49, v50",
            "v52 = iconst.i32 2",
            "v53 = icmp eq v14, v52",
            "v54 = select v53, v10, v0",
            "v55 = iconst.i32 1",
            "v56 = icmp eq v14, v55",
            "v57 = select v56, v8, v54",
            "v58 = icmp uge v14, v13",
            "v59 = select v58, v12, v57",
            "v60 = iadd v59, v51",
            "v61 = load.i32 global v60",
            "v62 = select v58, v15, v13",
            "v63 = imul v61, v62",
            "br_table v14, block4, [block1, block2, block3, block4]"
        ]
    );
    assert_eq!(
        block(&text, "block4"),
        ["v43 = band v63, v6", "jump block5(v43)"]
    );
    let greedy = Options {
        joint_renaming: false,
        ..plain()
    };
    let (text, stats) = run(corpus("csc_micro_tables.wir"), &greedy);
    assert_eq!(moved(&stats), (6, 0, 4, 0), "{text}");
    assert_eq!(stats.table_tests, 7);
    assert_eq!(stats.profit, 3 * (5 * 4 + 400) - 4 * 4 - 7 * 4);
    let b0 = block(&text, "block0");
    assert_eq!(
        b0[17..],
        [
            "v52 = iconst.i32 2",
            "v53 = icmp eq v14, v52",
            "v54 = select v53, v10, v12",
            "v55 = iconst.i32 1",
            "v56 = icmp eq v14, v55",
            "v57 = select v56, v8, v54",
            "v58 = iconst.i32 0",
            "v59 = icmp eq v14, v58",
            "v60 = select v59, v0, v57",
            "v61 = iadd v60, v51",
            "v62 = load.i32 global v61",
            "v63 = icmp ult v14, v13",
            "v64 = select v63, v13, v15",
            "v65 = imul v62, v64",
            "br_table v14, block4, [block1, block2, block3, block4]"
        ]
    );
}

/// Two chains whose operands agree on three arms: each arm loads `p[k] + o` and
/// `p[k] + o + 4`, but the default's arm reads its second word from `q`. Chosen together,
/// the second chain is the first with one more `select` (arm 3's `q`), on a test the
/// first already made: four `select`s instead of six.
#[test]
fn a_tables_renaming_chain_builds_on_another_that_agrees_with_it() {
    let text = "kernel %k(p: i64, q: i64) {
block0(v0: i64, v1: i64):
    v2 = thread_id x
    v3 = iconst.i32 3
    v4 = band v2, v3
    v5 = uextend.i64 v2
    v6 = iconst.i64 3
    v7 = ishl v5, v6
    v8 = iconst.i64 4
    v9 = iadd v7, v8
    v10 = iconst.i64 1024
    v11 = iadd v0, v10
    v12 = iconst.i64 2048
    v13 = iadd v0, v12
    v14 = iconst.i64 3072
    v15 = iadd v0, v14
    br_table v4, block4, [block1, block2, block3, block4]
block1:
    v20 = iadd v0, v7
    v21 = load.i32 global v20
    v22 = iadd v0, v9
    v23 = load.i32 global v22
    v24 = iadd v21, v23
    jump block5(v24)
block2:
    v25 = iadd v11, v7
    v26 = load.i32 global v25
    v27 = iadd v11, v9
    v28 = load.i32 global v27
    v29 = isub v26, v28
    jump block5(v29)
block3:
    v30 = iadd v13, v7
    v31 = load.i32 global v30
    v32 = iadd v13, v9
    v33 = load.i32 global v32
    v34 = bxor v31, v33
    jump block5(v34)
block4:
    v35 = iadd v15, v7
    v36 = load.i32 global v35
    v37 = iadd v1, v9
    v38 = load.i32 global v37
    v39 = imul v36, v38
    jump block5(v39)
block5(v40: i32):
    v41 = iadd v1, v7
    store global v40, v41
    return
}";
    let (out, stats) = run(parse(text), &plain());
    // Two addresses and two loads rise. The table's arms are its distinct destinations
    // from the default's on: block4, block1, block2, block3. The first address's base
    // falls back to block1's `v0`, and three selects on `index == 2`, `== 1` and `>= 3`
    // lay the others over it; the second address's base is one more select over that
    // chain, on `index >= 3` again.
    assert_eq!(
        (stats.hoisted, stats.selects, stats.table_tests),
        (4, 4, 5),
        "{out}"
    );
    let b0 = block(&out, "block0");
    assert_eq!(
        b0[14..],
        [
            "v42 = iconst.i32 2",
            "v43 = icmp eq v4, v42",
            "v44 = select v43, v13, v0",
            "v45 = iconst.i32 1",
            "v46 = icmp eq v4, v45",
            "v47 = select v46, v11, v44",
            "v48 = icmp uge v4, v3",
            "v49 = select v48, v15, v47",
            "v50 = iadd v49, v7",
            "v51 = load.i32 global v50",
            "v52 = select v48, v1, v49",
            "v53 = iadd v52, v9",
            "v54 = load.i32 global v53",
            "br_table v4, block4, [block1, block2, block3, block4]"
        ]
    );
    // Chain by chain: the default's group is each chain's fallback, so the second chain
    // has three selects of its own (on the first chain's tests).
    let greedy = Options {
        joint_renaming: false,
        ..plain()
    };
    let (out, stats) = run(parse(text), &greedy);
    assert_eq!(
        (stats.hoisted, stats.selects, stats.table_tests),
        (4, 6, 6),
        "{out}"
    );
}

/// `csc_micro_elseif`: a cascade whose inner levels compute `k == 1` and `k == 2`
/// themselves (constant and compare in the level). They read only `k`, from the head, and
/// cannot fault: they move to the head (four instructions, charged 4 cycles each), and
/// the four arms' offset, address and load rise there, the base chosen by three
/// `select`s on the levels' conditions.
#[test]
fn a_cascade_computes_its_levels_conditions_at_its_head_to_rename() {
    let (text, stats) = run(corpus("csc_micro_elseif.wir"), &plain());
    assert_eq!(moved(&stats), (5, 0, 3, 0), "{text}");
    assert_eq!((stats.multiway_hoists, stats.cascade_conditions), (1, 4));
    // Three pairwise matchings of 4 x 4 + 400, less the three selects, less the moves.
    assert_eq!(stats.profit, 3 * (4 * 4 + 400) - 3 * 4 - 4 * 4);
    let b0 = block(&text, "block0");
    assert_eq!(
        b0[13..],
        [
            "v15 = iconst.i32 0",
            "v16 = icmp eq v14, v15",
            "v23 = iconst.i32 1",
            "v24 = icmp eq v14, v23",
            "v31 = iconst.i32 2",
            "v32 = icmp eq v14, v31",
            "v50 = uextend.i64 v6",
            "v51 = iconst.i64 2",
            "v52 = ishl v50, v51",
            "v53 = select v32, v10, v12",
            "v54 = select v24, v8, v53",
            "v55 = select v16, v0, v54",
            "v56 = iadd v55, v52",
            "v57 = load.i32 global v56",
            "brif v16, block1, block2"
        ]
    );
    assert_eq!(block(&text, "block2"), ["brif v24, block3, block4"]);
    assert_eq!(
        block(&text, "block6"),
        ["v44 = imul v57, v57", "jump block7(v44)"]
    );
}

/// A cascade whose levels' conditions cost more to compute for every lane than renaming
/// saves, or may fault, or read memory: nothing moves to the head.
#[test]
fn a_cascade_keeps_its_levels_conditions_where_moving_them_does_not_pay_or_is_unsafe() {
    // Each arm adds its own value to `g` and squares the sum: two ALU instructions saved
    // in three arms (24 cycles) against three selects (12) and, per inner level, a
    // constant and a compare (4 x 4): -4, declined. The innermost branch then hoists its
    // own pair with one select on its own condition.
    let adds = |level_consts: bool| {
        let (c1, c2) = if level_consts {
            ("    v7 = iconst.i32 1\n", "    v9 = iconst.i32 2\n")
        } else {
            ("", "")
        };
        let head = if level_consts {
            ""
        } else {
            "    v7 = iconst.i32 1\n    v9 = iconst.i32 2\n"
        };
        parse(&format!(
            "kernel %k(p: i64, q: i64) {{
block0(v0: i64, v1: i64):
    v2 = thread_id x
    v3 = iconst.i32 3
    v4 = band v2, v3
    v5 = iconst.i32 0
    v6 = icmp eq v4, v5
{head}    v11 = iconst.i32 10
    v12 = iconst.i32 20
    v13 = iconst.i32 30
    v14 = iconst.i32 40
    brif v6, block1, block2
block1:
    v20 = iadd v11, v2
    v21 = imul v20, v20
    v22 = iadd v21, v2
    jump block6(v22)
block2:
{c1}    v8 = icmp eq v4, v7
    brif v8, block3, block4
block3:
    v23 = iadd v12, v2
    v24 = imul v23, v23
    v25 = isub v24, v2
    jump block6(v25)
block4:
{c2}    v10 = icmp eq v4, v9
    brif v10, block5, block7
block5:
    v26 = iadd v13, v2
    v27 = imul v26, v26
    v28 = bxor v27, v2
    jump block6(v28)
block7:
    v29 = iadd v14, v2
    v30 = imul v29, v29
    v31 = band v30, v2
    jump block6(v31)
block6(v32: i32):
    v33 = uextend.i64 v2
    v34 = iconst.i64 2
    v35 = ishl v33, v34
    v36 = iadd v1, v35
    store global v32, v36
    return
}}"
        ))
    };
    let (text, stats) = run(adds(true), &plain());
    assert_eq!(
        (stats.multiway_hoists, stats.cascade_conditions),
        (0, 0),
        "{text}"
    );
    assert_eq!(moved(&stats), (2, 0, 1, 0), "{text}");
    assert_eq!(
        block(&text, "block2"),
        [
            "v7 = iconst.i32 1",
            "v8 = icmp eq v4, v7",
            "brif v8, block3, block4"
        ]
    );
    // With the constants at the head only the two compares move (8): 24 - 12 - 8 = 4
    // pays.
    let (text, stats) = run(adds(false), &plain());
    assert_eq!(
        (stats.multiway_hoists, stats.cascade_conditions),
        (1, 2),
        "{text}"
    );
    assert_eq!(moved(&stats), (2, 0, 3, 0), "{text}");
    assert_eq!(stats.profit, 3 * 8 - 3 * 4 - 2 * 4);
    // A condition that reads memory, or divides (which may fault), stays in its level:
    // without it at the head nothing can tell the arms apart there, and no multi-way
    // hoist is made. (The load itself may still rise by block0's own pairwise hoist,
    // beside arm 0's load: both sides of that branch run one.)
    for (def, name) in [
        ("    v7 = load.i32 global v1\n", "load"),
        ("    v40 = iconst.i32 7\n    v7 = udiv v40, v2\n", "udiv"),
    ] {
        let text = cascade_of_loads(true)
            .to_string()
            .replace("    v7 = iconst.i32 1\n", "")
            .replace("block2:\n", &format!("block2:\n{def}"));
        let (out, stats) = run(parse(&text), &plain());
        assert_eq!(
            (stats.multiway_hoists, stats.cascade_conditions),
            (0, 0),
            "{name}\n{out}"
        );
        let b2 = block(&out, "block2");
        assert!(
            b2[b2.len() - 2].starts_with("v8 = icmp eq v4, "),
            "{name}\n{out}"
        );
    }
}
