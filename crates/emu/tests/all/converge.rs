//! Common Subexpression Convergence (`--passes converge`) on the emulator: every corpus
//! kernel, converged under every setting variant of the pass, leaves the reference
//! interpreter's memory at warp widths 1, 7, 32 and 64, and never loses SIMT efficiency;
//! the paper's listings, its microbenchmarks and the bitonic sort gain exactly what they
//! are measured to gain.

use crate::common;

use common::{compile, each_kernel, emulate, load, References};
use warplift_codegen::passes::lookup;
use warplift_emu::{Program, Stats};

/// `passes=converge` and each of the pass's setting variants, as `name=value` lists.
fn variants() -> Vec<Vec<String>> {
    let pass = lookup("converge").expect("converge is registered");
    pass.variants()
        .iter()
        .map(|v| {
            std::iter::once("passes=converge".to_string())
                .chain(v.iter().map(|(n, val)| format!("{n}={val}")))
                .collect()
        })
        .collect()
}

/// Every corpus kernel, converged under every setting variant, leaves the interpreter's
/// memory at widths 1, 7, 32 and 64; at widths 8 and 32 it never takes more cycles nor
/// loses SIMT efficiency under the settings whose cost model prices every move — all but
/// the variant that makes branches free (`converge_split_cost=0`, there so that the
/// differential tests run Splits: it trades a branch for convergence by design).
#[test]
fn every_corpus_kernel_converged_leaves_the_interpreters_memory_and_is_never_worse() {
    let results = each_kernel(|name, func, prepared| {
        let mut runs = 0;
        let mut worse = Vec::new();
        let references = References::compute(name, &func, &prepared);
        let before: Vec<(u32, Stats)> = [8, 32]
            .into_iter()
            .map(|w| (w, emulate(&func, &prepared, &[], w)))
            .collect();
        for settings in variants() {
            let settings: Vec<&str> = settings.iter().map(String::as_str).collect();
            let kernel = compile(&func, &settings);
            let prog =
                Program::from_code(&warplift_codegen::isa::simt::encode(&kernel.mir).unwrap())
                    .unwrap_or_else(|e| panic!("{name}: {e}\n{}", kernel.mir));
            runs += references.check(&prog, &format!("{settings:?}"), &kernel.mir);
            let free_splits = settings.contains(&"converge_split_cost=0");
            for (width, before) in &before {
                let after = emulate(&func, &prepared, &settings, *width);
                if free_splits {
                    continue;
                }
                if after.simt_efficiency < before.simt_efficiency - 1e-12 {
                    worse.push(format!(
                        "{name} {settings:?} width {width}: SIMT efficiency {:.4} -> {:.4}",
                        before.simt_efficiency, after.simt_efficiency
                    ));
                }
                if after.cycles > before.cycles {
                    worse.push(format!(
                        "{name} {settings:?} width {width}: cycles {} -> {}",
                        before.cycles, after.cycles
                    ));
                }
            }
        }
        (runs, worse)
    });
    let runs: usize = results.iter().map(|r| r.0).sum();
    let worse: Vec<&String> = results.iter().flat_map(|r| &r.1).collect();
    assert!(worse.is_empty(), "converge made kernels worse:\n{worse:#?}");
    assert!(runs >= 400, "only {runs} runs");
}

/// `converge` composes with `meld` and `restructure` in any order the user names: every
/// corpus kernel compiled with `converge` before and after each of them, and with the
/// three in all six orders, leaves the interpreter's memory at widths 1, 7, 32 and 64.
#[test]
fn converge_composes_with_meld_and_restructure_in_any_order() {
    let orders = [
        "converge,meld",
        "meld,converge",
        "converge,restructure",
        "restructure,converge",
        "converge,meld,restructure",
        "converge,restructure,meld",
        "meld,converge,restructure",
        "meld,restructure,converge",
        "restructure,converge,meld",
        "restructure,meld,converge",
    ];
    let runs: usize = each_kernel(|name, func, prepared| {
        let references = References::compute(name, &func, &prepared);
        orders
            .iter()
            .map(|order| {
                let settings = [format!("passes={order}")];
                let settings: Vec<&str> = settings.iter().map(String::as_str).collect();
                let kernel = compile(&func, &settings);
                let code = warplift_codegen::isa::simt::encode(&kernel.mir).unwrap();
                let prog = Program::from_code(&code)
                    .unwrap_or_else(|e| panic!("{name} {order}: {e}\n{}", kernel.mir));
                references.check(&prog, order, &kernel.mir)
            })
            .sum::<usize>()
    })
    .into_iter()
    .sum();
    assert!(runs >= 1000, "only {runs} runs");
}

/// Before and after `converge` at warp width `width`.
fn measure(file: &str, width: u32) -> (Stats, Stats) {
    let (_, func, prepared) = load(file);
    (
        emulate(&func, &prepared, &[], width),
        emulate(&func, &prepared, &["passes=converge"], width),
    )
}

/// `(warp instructions, global transactions, SIMT efficiency to 4 places)`.
fn row(s: &Stats) -> (u64, u64, String) {
    (
        s.warp_instructions,
        s.transactions.global,
        format!("{:.4}", s.simt_efficiency),
    )
}

/// The paper's listings at warp width 32 (16 threads, one warp, so 0.5 is every thread
/// active): Hoist issues one instruction less; Sink, and renaming (Listing 1.7), then
/// flatten the emptied diamond into a `select` and reach every thread active, as LLVM
/// does on Listing 1.3 (whose join then merges into the flattened block: its jump goes);
/// the DP example hoists one and sinks one; Split (Listing 1.5) issues one instruction
/// less (the temporary reconvergence point merges into the flattened entry), more of
/// them converged; nested common code (Listing 1.10) flattens its inner branch and
/// hoists the outer pair.
#[test]
fn listings_gain_exactly_the_measured_efficiency() {
    let cases = [
        ("csc_hoist_l1_1.wir", (19, 4, "0.4211"), (18, 4, "0.4444")),
        ("csc_sink_l1_3.wir", (16, 2, "0.4375"), (13, 2, "0.5000")),
        ("csc_split_l1_5.wir", (19, 4, "0.4211"), (18, 4, "0.4583")),
        ("csc_rename_l1_7.wir", (17, 2, "0.4412"), (15, 2, "0.5000")),
        ("csc_dp_l1_9.wir", (19, 2, "0.4079"), (18, 2, "0.4444")),
        ("csc_nested_l1_10.wir", (23, 4, "0.3832"), (21, 4, "0.4167")),
    ];
    for (file, before, after) in cases {
        let (b, a) = measure(file, 32);
        let want = |(n, t, e): (u64, u64, &str)| (n, t, e.to_string());
        assert_eq!((row(&b), row(&a)), (want(before), want(after)), "{file}");
        assert!(
            a.cycles <= b.cycles + 3,
            "{file}: {} -> {} cycles",
            b.cycles,
            a.cycles
        );
    }
}

/// The microbenchmarks (the paper's Fig. 3, hoist and sink) on 4 blocks of 64 threads:
/// the hoist removes 64 of 160 global transactions and half the cycles, the sink merges
/// the two arms' loads into one, the four-way switch its four arms' loads. The switch
/// over four bases (`csc_micro_bases`) hoists its four loads as one, the base chosen by
/// three compares of the index and three `select`s: as many transactions (the one load
/// touches the segments the four did), 48 fewer warp instructions, and one load latency
/// instead of four in a row.
#[test]
fn microbenchmarks_converge_loads() {
    for (file, before, after) in [
        (
            "csc_micro_hoist.wir",
            (208, 160, "0.8269"),
            (176, 96, "1.0000"),
        ),
        (
            "csc_micro_sink.wir",
            (232, 136, "0.7414"),
            (184, 130, "0.9565"),
        ),
        (
            "csc_micro_switch.wir",
            (392, 192, "0.5153"),
            (272, 152, "0.7426"),
        ),
        (
            "csc_micro_bases.wir",
            (376, 160, "0.5745"),
            (328, 160, "0.8049"),
        ),
    ] {
        let (b, a) = measure(file, 32);
        let want = |(n, t, e): (u64, u64, &str)| (n, t, e.to_string());
        assert_eq!((row(&b), row(&a)), (want(before), want(after)), "{file}");
        assert!(
            a.cycles * 10 < b.cycles * 6,
            "{file}: {} -> {} cycles",
            b.cycles,
            a.cycles
        );
    }
}

/// The bitonic network on the CPU: what `csc_bitonic_l1_12` computes.
fn bitonic_reference(mut a: Vec<i32>) -> Vec<i32> {
    let n = a.len();
    let mut k = 2;
    while k <= n {
        let mut j = k / 2;
        while j > 0 {
            for i in 0..n {
                let ixj = i ^ j;
                if ixj > i {
                    let ascending = i & k == 0;
                    if (ascending && a[i] > a[ixj]) || (!ascending && a[i] < a[ixj]) {
                        a.swap(i, ixj);
                    }
                }
            }
            j /= 2;
        }
        k *= 2;
    }
    a
}

/// Bitonic sort (Listing 1.12) at warp widths 8, 32 and 64: the converged kernel sorts as
/// the CPU reference does. The two sides of the ascending/descending branch are one code
/// once `slt` is read as `sgt` with its operands swapped: Unify removes the branch, two
/// `select`s rename the compare's operands, and the loads, the compare and the swap run
/// once for both kinds of lanes — 90 fewer global transactions (656 to 566), higher SIMT
/// efficiency and fewer cycles at every width (1.10x, 1.40x, 1.61x).
#[test]
fn bitonic_sort_matches_the_cpu_reference_and_gains_at_every_width() {
    let (_, func, prepared) = load("csc_bitonic_l1_12.wir");
    let input: Vec<i32> = prepared.memory.buffers[0]
        .bytes
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let expected = bitonic_reference(input.clone());
    assert_eq!(expected, (0..64).collect::<Vec<i32>>());
    let kernel = compile(&func, &["passes=converge"]);
    let prog =
        Program::from_code(&warplift_codegen::isa::simt::encode(&kernel.mir).unwrap()).unwrap();
    let cases = [
        (
            8,
            (4240, 656, "0.7096"),
            (4225, 566, "0.7320"),
            (13341, 12104),
        ),
        (
            32,
            (1244, 656, "0.6047"),
            (1145, 566, "0.6753"),
            (14217, 10131),
        ),
        (
            64,
            (665, 656, "0.5656"),
            (581, 566, "0.6654"),
            (16226, 10064),
        ),
    ];
    for (width, before, after, cycles) in cases {
        let config = warplift_emu::MachineConfig::builder()
            .warp_width(width)
            .build()
            .unwrap();
        let mut launch = prepared.clone();
        warplift_emu::run(&prog, &mut launch, &config).unwrap();
        let sorted: Vec<i32> = launch.memory.buffers[0]
            .bytes
            .chunks(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(sorted, expected, "width {width}");
        let (b, a) = measure("csc_bitonic_l1_12.wir", width);
        let want = |(n, t, e): (u64, u64, &str)| (n, t, e.to_string());
        assert_eq!(
            (row(&b), row(&a)),
            (want(before), want(after)),
            "width {width}"
        );
        assert_eq!((b.cycles, a.cycles), cycles, "width {width}");
    }
}

/// The table of docs/convergence.md: `cargo test -p warplift-emu --test all
/// converge::print_table -- --nocapture`.
#[test]
fn print_table() {
    println!("| kernel | width | cycles | speedup | warp insts | global transactions | SIMT efficiency |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for f in [
        "csc_hoist_l1_1.wir",
        "csc_sink_l1_3.wir",
        "csc_split_l1_5.wir",
        "csc_rename_l1_7.wir",
        "csc_dp_l1_9.wir",
        "csc_nested_l1_10.wir",
        "csc_micro_hoist.wir",
        "csc_micro_sink.wir",
        "csc_micro_switch.wir",
        "csc_micro_cascade.wir",
        "csc_micro_bases.wir",
        "csc_micro_tables.wir",
        "csc_micro_elseif.wir",
        "csc_micro_fanout.wir",
        "csc_bitonic_l1_12.wir",
    ] {
        for w in [8, 32, 64] {
            let (b, a) = measure(f, w);
            println!(
                "| {} | {w} | {} → {} | {:.2}x | {} → {} | {} → {} | {:.3} → {:.3} |",
                f.trim_end_matches(".wir"),
                b.cycles,
                a.cycles,
                b.cycles as f64 / a.cycles as f64,
                b.warp_instructions,
                a.warp_instructions,
                b.transactions.global,
                a.transactions.global,
                b.simt_efficiency,
                a.simt_efficiency
            );
        }
    }
}

/// The multi-way hoist of a cascade of `brif`s (`csc_micro_cascade`: if / else-if chain
/// on `t % 4`, 4 blocks of 64 threads): the four arms' load, address, constant and
/// product run once at the head instead of once per arm — at width 32, 296 → 224 warp
/// instructions, 160 → 64 global transactions, SIMT efficiency 0.5743 → 0.7857.
#[test]
fn a_brif_cascade_hoists_its_arms_common_load_to_its_head() {
    let (b, a) = measure("csc_micro_cascade.wir", 32);
    let want = |(n, t, e): (u64, u64, &str)| (n, t, e.to_string());
    assert_eq!(
        (row(&b), row(&a)),
        (want((296, 160, "0.5743")), want((224, 64, "0.7857")))
    );
    assert!(
        a.cycles * 3 < b.cycles,
        "{} -> {} cycles",
        b.cycles,
        a.cycles
    );
}

/// The mechanism of the paper's "up to 26x fewer DRAM reads" (`csc_micro_fanout`: a
/// 32-way switch on the lane inside a 16-iteration loop, every arm loading one word):
/// each of the 32 paths a warp runs issues its own transaction before, the hoisted load
/// one for the warp after. Per warp of 32, 16 x 32 + 4 = 516 transactions become 16 + 4
/// = 20 (8 warps: 4128 → 160, 25.8x); at width 64 the 32 paths of two lanes each give
/// 2080 → 96, at width 8 the 8 paths of a warp 4128 → 544.
#[test]
fn a_lane_divergent_switch_reads_memory_once_per_warp_instead_of_once_per_path() {
    for (width, before, after) in [(8, 4128, 544), (32, 4128, 160), (64, 2080, 96)] {
        let (b, a) = measure("csc_micro_fanout.wir", width);
        assert_eq!(
            (b.transactions.global, a.transactions.global),
            (before, after),
            "width {width}"
        );
        assert!(
            a.cycles * 7 < b.cycles,
            "width {width}: {} -> {} cycles",
            b.cycles,
            a.cycles
        );
        assert!(a.simt_efficiency > b.simt_efficiency, "width {width}");
    }
}

/// `(cycles, warp instructions, SIMT efficiency to 4 places)`.
fn timing(s: &Stats) -> (u64, u64, String) {
    (
        s.cycles,
        s.warp_instructions,
        format!("{:.4}", s.simt_efficiency),
    )
}

/// A four-way table renaming two operands (`csc_micro_tables`, 4 blocks of 64 threads):
/// with the chains chosen together the scale's chain reads a test the base's made, so
/// each warp issues one instruction less than with the chains chosen one by one (the
/// compare; the constant it saves folds into an immediate either way). At widths 8, 32
/// and 64: without the pass, with it, and with `converge_joint_renaming=false`.
#[test]
fn a_tables_chains_chosen_together_issue_one_compare_less_per_warp() {
    let (_, func, prepared) = load("csc_micro_tables.wir");
    let greedy = ["passes=converge", "converge_joint_renaming=false"];
    for (width, none, joint, one_by_one) in [
        (
            8,
            (1867, 1600, "0.5550"),
            (674, 1376, "0.8140"),
            (678, 1408, "0.8182"),
        ),
        (
            32,
            (1749, 400, "0.5550"),
            (515, 344, "0.8140"),
            (515, 352, "0.8182"),
        ),
        (
            64,
            (1742, 200, "0.5550"),
            (507, 172, "0.8140"),
            (507, 176, "0.8182"),
        ),
    ] {
        let want = |(c, n, e): (u64, u64, &str)| (c, n, e.to_string());
        let got = [
            emulate(&func, &prepared, &[], width),
            emulate(&func, &prepared, &["passes=converge"], width),
            emulate(&func, &prepared, &greedy, width),
        ];
        assert_eq!(
            got.iter().map(timing).collect::<Vec<_>>(),
            [want(none), want(joint), want(one_by_one)],
            "width {width}"
        );
    }
}

/// A cascade whose levels compute their own conditions (`csc_micro_elseif`, 4 blocks of
/// 64 threads): the compares move to the head, and the four arms' loads become one, the
/// base chosen by three `select`s on them. Every warp runs all four arms, so the moved
/// compares were issued once per warp anyway; the loads are what is saved. At widths 8,
/// 32 and 64, without and with the pass.
#[test]
fn a_cascade_computing_its_own_conditions_loads_once_at_its_head() {
    let (_, func, prepared) = load("csc_micro_elseif.wir");
    for (width, none, with) in [
        (8, (1828, 1440, "0.5667"), (612, 1088, "0.9118")),
        (32, (1729, 360, "0.5667"), (482, 272, "0.9118")),
        (64, (1722, 180, "0.5667"), (474, 136, "0.9118")),
    ] {
        let want = |(c, n, e): (u64, u64, &str)| (c, n, e.to_string());
        let before = emulate(&func, &prepared, &[], width);
        let after = emulate(&func, &prepared, &["passes=converge"], width);
        assert_eq!(
            (timing(&before), timing(&after)),
            (want(none), want(with)),
            "width {width}"
        );
    }
}
