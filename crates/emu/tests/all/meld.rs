//! Control-flow melding (`--passes meld`) on the emulator and the interpreter: every corpus
//! kernel, melded under every setting variant of the pass, leaves the reference
//! interpreter's memory at warp widths 1, 7, 32 and 64; the DARM paper's walk-through on
//! bitonic sort (Fig. 4 and 6) melds exactly the blocks the paper melds; melding never runs
//! a store, atomic or barrier on a lane that would not have run it (per-lane traces of
//! random divergent kernels); melded PTX assembles; and SB1- and SB2-like kernels of the
//! paper's Fig. 7 take fewer cycles at warp width 32.

use crate::common;

use common::{compile, each_kernel, emulate, load, References};
use warplift_codegen::isa::ptx::ptxas::{check_assembles, ptxas_for_tests};
use warplift_codegen::isa::simt::encode;
use warplift_codegen::meld::{meld, Options};
use warplift_codegen::passes::lookup;
use warplift_codegen::{lookup_by_name, Context, Settings};
use warplift_emu::Program;
use warplift_ir::interp::{self, InterpConfig};
use warplift_ir::parser::parse_functions;
use warplift_ir::{Function, InstructionData, Opcode};

/// `passes=meld` and each of the pass's setting variants, as `name=value` lists.
fn variants() -> Vec<Vec<String>> {
    let pass = lookup("meld").expect("meld is registered");
    pass.variants()
        .iter()
        .map(|v| {
            std::iter::once("passes=meld".to_string())
                .chain(v.iter().map(|(n, val)| format!("{n}={val}")))
                .collect()
        })
        .collect()
}

#[test]
fn every_corpus_kernel_melded_leaves_the_interpreters_memory() {
    let runs: usize = each_kernel(|name, func, prepared| {
        let mut runs = 0;
        let references = References::compute(name, &func, &prepared);
        for settings in variants() {
            let settings: Vec<&str> = settings.iter().map(String::as_str).collect();
            let kernel = compile(&func, &settings);
            let code = encode(&kernel.mir).unwrap_or_else(|e| panic!("{name}: {e}"));
            let prog =
                Program::from_code(&code).unwrap_or_else(|e| panic!("{name}: {e}\n{}", kernel.mir));
            runs += references.check(&prog, &format!("{settings:?}"), &kernel.mir);
        }
        runs
    })
    .into_iter()
    .sum();
    assert!(runs >= 400, "only {runs} runs");
}

/// Each block of `func` in layout order: its opcodes, and where it branches.
fn shape(func: &Function) -> Vec<String> {
    func.layout
        .blocks()
        .iter()
        .map(|&b| {
            let ops: Vec<String> = func
                .layout
                .block_insts(b)
                .iter()
                .map(|&i| match func.inst(i) {
                    InstructionData::IntCompare { cond, .. } => format!("icmp {cond}"),
                    d if d.opcode().is_branch() => {
                        let dests: Vec<String> = d
                            .branch_destinations()
                            .iter()
                            .map(|c| c.block.to_string())
                            .collect();
                        format!("{} {}", d.opcode(), dests.join(" "))
                    }
                    d => d.opcode().to_string(),
                })
                .collect();
            format!("{b}: {}", ops.join("; "))
        })
        .collect()
}

fn bitonic() -> Function {
    let (_, func, _) = load("meld_bitonic_fig4.wir");
    func
}

/// The paper's Fig. 4 and 6: the region (%B, %G) = (block5, block12) is meldable; the
/// subgraphs (%C, %X1) and (%D, %X2) meld — here the chain pair ({block6, block8},
/// {block7, block9}) melds into two blocks (%C_D, %E_F), and %X1 and %X2 (block10,
/// block11), empty blocks that only jump to %G, are passed through: the melded exit goes
/// to %G directly, the lanes converged (the paper melds them into %X1_X2, which its
/// simplification then turns into the same edge). The compares do not align (`slt`,
/// `sgt`); the stores align with equal operands (no select); the one select picks the
/// branch condition (%37). With unpredication alone (Fig. 4d, `if_convert` off) each
/// compare runs in a block of its own under the branch condition (%P.S.1, %P.S.2); with
/// the if-conversion of Fig. 4e they stay in %C_D. Either way the divergent branch on the
/// sort direction is gone.
#[test]
fn bitonic_walkthrough_melds_the_blocks_of_fig_4_and_6() {
    // Fig. 4d unpredicates the compares: two branches and two jumps to save nothing,
    // which the cost model declines; with the threshold at 0 (no cost model) it is made.
    let unpredicated = Options {
        if_convert: false,
        threshold: 0.0,
        ..Options::default()
    };
    let mut f = bitonic();
    let s = meld(&mut f, &unpredicated);
    assert_eq!(
        (
            s.regions,
            s.melded,
            s.melded_blocks,
            s.aligned,
            s.selects,
            s.unpredicated
        ),
        (2, 1, 2, 2, 1, 2),
        "{f}"
    );
    assert_eq!(s.unpredicated_block_ids.len(), 2, "{f}");
    // Fig. 4d / 6c: %B runs %C_D (block16, merged into %B, its only predecessor), which
    // runs each compare under the branch condition (%P.S.1 = block18, %P.S.2 = block19),
    // joins in block20 with one select of the two compares (%37), branches to %E_F
    // (block17) or straight to %G. The zero the untaken compare passes is a constant of
    // the kernel's entry block.
    let region = |f: &Function| -> Vec<String> {
        let got = shape(f);
        let from = got.iter().position(|l| l.starts_with("block5:")).unwrap();
        let to = got.iter().position(|l| l.starts_with("block12:")).unwrap();
        got[from..=to].to_vec()
    };
    assert_eq!(
        region(&f),
        [
            "block5: band; icmp eq; ishl; iadd; load; load; brif block18 block19",
            "block18: icmp slt; jump block20",
            "block19: icmp sgt; jump block20",
            "block20: select; brif block17 block12",
            "block17: store; store; jump block12",
            "block12: barrier; ushr; jump block3",
        ],
        "{f}"
    );
    assert_eq!(
        s.melded_block_ids.len(),
        2,
        "%C_D and %E_F; %X1, %X2 passed through"
    );
    assert_eq!(
        s.unpredicated_block_ids
            .iter()
            .map(|b| b.to_string())
            .collect::<Vec<_>>(),
        ["block18", "block19"]
    );
    warplift_ir::verifier::verify_function(&f).unwrap();

    let mut g = bitonic();
    let s = meld(&mut g, &Options::default());
    assert_eq!(
        (
            s.regions,
            s.melded,
            s.melded_blocks,
            s.aligned,
            s.selects,
            s.unpredicated
        ),
        (1, 1, 2, 2, 1, 0),
        "{g}"
    );
    // Fig. 4e: the compares stay in %C_D, run by every lane, and %C_D is merged into %B.
    assert_eq!(
        region(&g),
        [
            "block5: band; icmp eq; ishl; iadd; load; load; icmp slt; icmp sgt; select; brif block17 block12",
            "block17: store; store; jump block12",
            "block12: barrier; ushr; jump block3",
        ],
        "{g}"
    );
    warplift_ir::verifier::verify_function(&g).unwrap();
}

/// A small deterministic generator (an LCG), so the property test needs no seed corpus.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One operation of a generated arm.
#[derive(Clone, Debug)]
enum Op {
    /// `acc = op acc, k`.
    Arith(&'static str, u32),
    /// Appends `site + (acc & 255)` to the lane's trace: load its count, store the event,
    /// store the count plus one.
    Trace(u32),
    /// `acc += inp[(tid + k) & 63]`.
    Load(u32),
    /// `acc = sdiv acc, (acc | 1) + k` (a division only its own lanes may run).
    Div(u32),
    /// `atomic_rmw add` on the site's counter.
    Atomic(u32),
    /// `if (acc & k) != 0 { trace(site) }`: a nested, data-dependent divergent if-then.
    If(u32, u32),
}

/// A random arm, and the other arm as a perturbation of it (so that melding has
/// something to align, as in the paper's -R benchmarks).
fn arms(rng: &mut Rng) -> [Vec<Op>; 2] {
    let ops = ["iadd", "isub", "bxor", "imul", "band", "bor"];
    let mut site = 1;
    let one = |rng: &mut Rng, site: &mut u32| -> Op {
        *site += 1;
        match rng.below(6) {
            0 => Op::Arith(ops[rng.below(6) as usize], rng.below(100) as u32 + 1),
            1 => Op::Trace(*site * 1000),
            2 => Op::Load(rng.below(64) as u32),
            3 => Op::Div(rng.below(5) as u32),
            4 => Op::Atomic(*site % 8),
            _ => Op::If(rng.below(15) as u32 + 1, *site * 1000),
        }
    };
    let n = 1 + rng.below(6);
    let a: Vec<Op> = (0..n).map(|_| one(rng, &mut site)).collect();
    let mut b = Vec::new();
    for op in &a {
        match rng.below(6) {
            0 => {}                           // dropped
            1 => b.push(one(rng, &mut site)), // replaced
            2 => {
                b.push(one(rng, &mut site)); // something inserted
                b.push(op.clone());
            }
            _ => b.push(match op {
                // Same shape, another site: the traced value differs (a select).
                Op::Trace(s) => Op::Trace(s + 500),
                other => other.clone(),
            }),
        }
    }
    [a, b]
}

/// The text of a kernel whose divergent branch on `tid`'s bits leads to the two arms.
fn trace_kernel(arms: &[Vec<Op>; 2], mask: u32) -> String {
    let mut s = String::new();
    let mut v = 100;
    let mut fresh = || {
        v += 1;
        format!("v{v}")
    };
    s += "kernel %meld_trace(inp: i64, log: i64, cnt: i64, out: i64) {\n";
    s += "block0(v0: i64, v1: i64, v2: i64, v3: i64):\n";
    s += "    v4 = thread_id x\n    v5 = uextend.i64 v4\n    v6 = iconst.i64 2\n";
    s += "    v7 = ishl v5, v6\n    v8 = iadd v2, v7\n    v9 = iconst.i32 63\n";
    s += "    v10 = iconst.i32 255\n    v11 = iconst.i32 1\n    v12 = iconst.i32 4\n";
    s += "    v13 = iconst.i32 16\n    v14 = iadd v0, v7\n    v15 = load.i32 global v14\n";
    s += &format!("    v16 = iconst.i32 {mask}\n    v17 = band v4, v16\n    v18 = iconst.i32 0\n");
    s += "    v19 = icmp ne v17, v18\n    barrier\n    brif v19, block1, block2\n";
    let mut blocks = 3;
    for (k, arm) in arms.iter().enumerate() {
        s += &format!("block{}:\n", k + 1);
        let mut acc = "v15".to_string();
        for op in arm {
            let trace = |s: &mut String,
                         fresh: &mut dyn FnMut() -> String,
                         site: u32,
                         acc: &str| {
                let (n, slot, off, addr, lo, site_v, val, n1) = (
                    fresh(),
                    fresh(),
                    fresh(),
                    fresh(),
                    fresh(),
                    fresh(),
                    fresh(),
                    fresh(),
                );
                let (slot64, tidslot) = (fresh(), fresh());
                *s += &format!(
                    "    {n} = load.i32 global v8\n    {tidslot} = imul v4, v13\n    {slot} = iadd {tidslot}, {n}\n    \
                     {slot64} = uextend.i64 {slot}\n    {off} = ishl {slot64}, v6\n    {addr} = iadd v1, {off}\n    \
                     {lo} = band {acc}, v10\n    {site_v} = iconst.i32 {site}\n    {val} = iadd {site_v}, {lo}\n    \
                     store global {val}, {addr}\n    {n1} = iadd {n}, v11\n    store global {n1}, v8\n"
                );
            };
            match *op {
                Op::Arith(o, c) => {
                    let (k, r) = (fresh(), fresh());
                    s += &format!("    {k} = iconst.i32 {c}\n    {r} = {o} {acc}, {k}\n");
                    acc = r;
                }
                Op::Trace(site) => trace(&mut s, &mut fresh, site, &acc),
                Op::Load(c) => {
                    let (k, i, m, w, o, a, x, r) = (
                        fresh(),
                        fresh(),
                        fresh(),
                        fresh(),
                        fresh(),
                        fresh(),
                        fresh(),
                        fresh(),
                    );
                    s += &format!(
                        "    {k} = iconst.i32 {c}\n    {i} = iadd v4, {k}\n    {m} = band {i}, v9\n    \
                         {w} = uextend.i64 {m}\n    {o} = ishl {w}, v6\n    {a} = iadd v0, {o}\n    \
                         {x} = load.i32 global {a}\n    {r} = iadd {acc}, {x}\n"
                    );
                    acc = r;
                }
                Op::Div(c) => {
                    let (k, d, e, r) = (fresh(), fresh(), fresh(), fresh());
                    s += &format!(
                        "    {k} = iconst.i32 {c}\n    {d} = bor {acc}, v11\n    {e} = iadd {d}, {k}\n    {r} = sdiv {acc}, {e}\n"
                    );
                    acc = r;
                }
                Op::Atomic(c) => {
                    let (k, a, old) = (fresh(), fresh(), fresh());
                    s += &format!(
                        "    {k} = iconst.i64 {}\n    {a} = iadd v3, {k}\n    {old} = atomic_rmw add global {a}, v11\n",
                        256 + 4 * c
                    );
                }
                Op::If(m, site) => {
                    let (k, b, c) = (fresh(), fresh(), fresh());
                    let (then, join) = (blocks, blocks + 1);
                    blocks += 2;
                    s += &format!(
                        "    {k} = iconst.i32 {m}\n    {b} = band {acc}, {k}\n    {c} = icmp ne {b}, v18\n    \
                         brif {c}, block{then}, block{join}\nblock{then}:\n"
                    );
                    trace(&mut s, &mut fresh, site, &acc);
                    s += &format!("    jump block{join}\nblock{join}:\n");
                }
            }
        }
        s += &format!("    jump block999({acc})\n");
    }
    let join = 999;
    s += &format!(
        "block{join}(v99: i32):\n    barrier\n    v98 = iadd v3, v7\n    store global v99, v98\n    return\n}}\n"
    );
    s
}

/// The buffers the interpreter leaves after running `func` (64 threads, one warp of 32
/// lanes for `lane_id`, which the kernels do not read).
fn traces(func: &Function) -> Vec<Vec<u8>> {
    let launch = warplift_ir::launch::LaunchBuilder::new()
        .block([64])
        .random::<i32>("inp", 64, 11)
        .zeros::<i32>("log", 64 * 16)
        .zeros::<i32>("cnt", 64)
        .zeros::<i32>("out", 64 + 8)
        .build();
    let mut prepared = launch.prepare(func).unwrap();
    let config = InterpConfig {
        warp_width: 32,
        ..Default::default()
    };
    interp::run(func, &mut prepared, &config).unwrap_or_else(|e| panic!("{e}\n{func}"));
    prepared
        .memory
        .buffers
        .iter()
        .map(|b| b.bytes.clone())
        .collect()
}

/// The property of unpredication (Section IV-E): every lane runs exactly the side
/// effects it ran before melding, in the same order, with the same values. Each store
/// event appends to the lane's own trace (its count, then the event), atomics count per
/// site, nested data-dependent branches guard some events, and loads and divisions stand
/// between them; the arms are perturbations of each other, so that melding aligns some of
/// their stores and leaves others unaligned. Under every setting variant the traces after
/// melding equal those before, and barriers stay where they were.
#[test]
fn melding_never_runs_a_side_effect_on_a_lane_that_would_not_have_run_it() {
    let mut rng = Rng(0x5eed);
    let (mut melded, mut unpredicated, mut aligned_stores) = (0, 0, 0);
    let settings = [
        Options::default(),
        Options {
            threshold: 0.0,
            ..Options::default()
        },
        Options {
            threshold: 0.0,
            if_convert: false,
            ..Options::default()
        },
    ];
    for case in 0..60 {
        let arms = arms(&mut rng);
        let mask = [1u32, 2, 5, 16, 33][case % 5];
        let text = trace_kernel(&arms, mask);
        let func = parse_functions(&text)
            .unwrap_or_else(|e| panic!("{e}\n{text}"))
            .remove(0);
        warplift_ir::verifier::verify_function(&func).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
        let before = traces(&func);
        let barriers = |f: &Function| {
            f.layout
                .insts()
                .filter(|&i| f.inst(i).opcode() == Opcode::Barrier)
                .count()
        };
        for opts in &settings {
            let mut after = func.clone();
            let stats = meld(&mut after, opts);
            warplift_ir::verifier::verify_function(&after)
                .unwrap_or_else(|e| panic!("{e:?}\n{after}\nfrom\n{text}"));
            assert_eq!(barriers(&after), barriers(&func));
            assert!(
                traces(&after) == before,
                "case {case} {opts:?}: traces differ\n{after}\nfrom\n{text}"
            );
            melded += stats.melded;
            unpredicated += stats.unpredicated;
            aligned_stores += after
                .layout
                .insts()
                .filter(|&i| after.inst(i).opcode() == Opcode::Store)
                .count() as i64
                - func
                    .layout
                    .insts()
                    .filter(|&i| func.inst(i).opcode() == Opcode::Store)
                    .count() as i64;
        }
    }
    // The test is not vacuous: melding happened, unaligned side effects were
    // unpredicated, and stores of both arms became one.
    assert!(melded >= 60, "only {melded} melds");
    assert!(
        unpredicated >= 30,
        "only {unpredicated} unpredicated blocks"
    );
    assert!(
        aligned_stores <= -30,
        "only {} stores melded",
        -aligned_stores
    );
}

/// Cycles at warp width 32: the baseline, branch fusion and `meld`.
fn cycles(file: &str) -> (u64, u64, u64) {
    let (_, func, prepared) = load(file);
    let run = |settings: &[&str]| emulate(&func, &prepared, settings, 32).cycles;
    (
        run(&[]),
        run(&["passes=meld", "meld_branch_fusion=true"]),
        run(&["passes=meld"]),
    )
}

/// The paper's synthetic patterns (Fig. 7) at warp width 32: SB1 (a diamond with
/// identical arms) melds under both branch fusion and `meld`, SIMT efficiency rising to
/// 1; SB2 (if-then regions on both sides) only under `meld`; bitonic sort gains from
/// melding the compare-and-swap regions, which branch fusion cannot touch.
#[test]
fn melding_saves_cycles_on_sb1_sb2_and_bitonic_sort_at_warp_width_32() {
    assert_eq!(cycles("meld_sb1.wir"), (4920, 3004, 3004));
    assert_eq!(cycles("meld_sb2.wir"), (6008, 6008, 3964));
    assert_eq!(cycles("meld_bitonic_fig4.wir"), (2631, 2631, 2472));
    let (_, func, prepared) = load("meld_sb1.wir");
    let after = emulate(&func, &prepared, &["passes=meld"], 32);
    assert_eq!(after.simt_efficiency, 1.0);
}

/// The PTX of every corpus kernel melded (threshold 0: everything meldable) is accepted
/// by `ptxas`.
#[test]
fn melded_ptx_assembles() {
    let Some(ptxas) = ptxas_for_tests() else {
        return;
    };
    let checked = each_kernel(|name, func, _| {
        let settings = ["passes=meld", "meld_threshold=0"];
        let mut b = Settings::builder();
        for s in settings {
            b.set_assignment(s).unwrap();
        }
        let isa = lookup_by_name("ptx", b.finish()).unwrap();
        let code = Context::new()
            .compile(&func, isa.as_ref())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let ptx = code.text().expect("PTX is text");
        check_assembles(&ptxas, ptx).unwrap_or_else(|e| panic!("{name} {settings:?}: {e}"));
    })
    .len();
    assert!(checked >= 50, "only {checked} kernels assembled");
}

/// A run that melds nothing (no pair reaches a threshold of 1: identical subgraphs score
/// 0.5) hands every corpus kernel back exactly as it came, region simplification
/// included.
#[test]
fn a_run_that_melds_nothing_leaves_the_kernel_unchanged() {
    let kernels = each_kernel(|name, func, _| {
        let mut melded = func.clone();
        let opts = Options {
            threshold: 1.0,
            ..Options::default()
        };
        let stats = meld(&mut melded, &opts);
        assert_eq!(stats.melded, 0, "{name}");
        assert_eq!(melded.to_string(), func.to_string(), "{name}");
    })
    .len();
    assert!(kernels >= 50, "only {kernels} kernels");
}

/// The cost model's promise, on emulator cycles: on every DARM benchmark kernel and the
/// melding kernels of the corpus (at their launch files' block size), `meld` and branch
/// fusion, and `meld` told the block size and the warp width, are never more than 1%
/// slower than the kernel as it was, at warp widths 32 and 64 — where melding does not
/// pay by the cost model, it is not applied.
#[test]
fn melding_is_never_more_than_one_percent_slower_on_the_darm_kernels() {
    let pipelines: [&[&str]; 2] = [
        &["passes=meld"],
        &["passes=meld", "meld_branch_fusion=true"],
    ];
    let checked = each_kernel(|name, func, prepared| {
        if !(name.starts_with("darm_") || name.starts_with("meld_")) {
            return 0;
        }
        let mut n = 0;
        for width in [32, 64] {
            let base = emulate(&func, &prepared, &[], width).cycles;
            // Told the launch's block size and the machine's warp width, as the study
            // compiles each run.
            let block = format!("block_size_hint={}", prepared.block[0]);
            let warp = format!("warp_width_hint={width}");
            let hinted: &[&str] = &["passes=meld", &block, &warp];
            for settings in pipelines.into_iter().chain([hinted]) {
                let melded = emulate(&func, &prepared, settings, width).cycles;
                assert!(
                    melded * 100 <= base * 101,
                    "{name} at warp width {width} with {settings:?}: {melded} cycles against {base}"
                );
                n += 1;
            }
        }
        n
    })
    .into_iter()
    .sum::<usize>();
    assert!(checked >= 90, "only {checked} runs");
}

/// SB1's arms work on different shared arrays at different offsets of one base
/// (`v14+0`, `v14+1024` against `v14+2048`, `v14+3072`): the accesses align, the melded
/// ones read one selected address (`v14 + select(c, 0, 2048)`, made once in the entry
/// block as the lane parity and the base are defined there), and the loop body becomes
/// one straight block, every lane active.
#[test]
fn accesses_at_different_offsets_meld_into_one_selected_address() {
    let (_, mut f, prepared) = load("darm_sb1.wir");
    let base = emulate(&f, &prepared, &[], 32);
    let s = meld(&mut f, &Options::default());
    assert_eq!(
        (s.melded, s.aligned, s.selects, s.unpredicated),
        (1, 11, 1, 0),
        "{f}"
    );
    warplift_ir::verifier::verify_function(&f).unwrap();
    let got = shape(&f);
    assert!(got[0].contains("select; iadd; jump block1"), "{got:#?}");
    assert!(
        got.contains(
            &"block4: load; load; imul; iadd; bxor; sshr; iadd; isub; iadd; store; store; iadd; jump block3"
                .to_string()
        ),
        "{got:#?}"
    );
    let melded = emulate(&f, &prepared, &[], 32);
    assert_eq!(melded.simt_efficiency, 1.0);
    assert_eq!((base.cycles, melded.cycles), (4659, 4144));
}

/// The machine's warp width (`warp_width_hint`): LUD at block 64 (`BLOCK_SIZE` 32)
/// splits `tid < block_dim / 2` in its one warp of 64 lanes and in none of its two
/// warps of 32. Told a width of 64, the pass melds its loops (the same memory as the
/// interpreter at every width, and faster at width 64); told 32, or nothing, it leaves
/// the kernel as it is, where melding could only cost.
#[test]
fn lud_at_block_64_melds_for_a_warp_of_64_only() {
    let (name, func, _) = load("darm_lud.wir");
    // Two perimeter tiles of 32 x 32 (the corpus launch's 32 x 32 matrix has none at
    // this block size).
    let launch = "grid = [2]\nblock = [64]\n[args]\nmatrix_dim = 96\n[buffers.m]\n\
                  type = \"f32\"\nlen = 9216\ninit = \"random\"\nseed = 9\n\
                  range = [1.0, 2.0]\n";
    let prepared = warplift_ir::launch::Launch::from_toml_str(launch, std::path::Path::new("lud"))
        .and_then(|l| l.prepare(&func))
        .unwrap();
    let hinted = |width: u64| Options {
        block_size: Some(64),
        warp_width: Some(width),
        ..Options::default()
    };
    for opts in [
        hinted(32),
        Options {
            block_size: Some(64),
            ..Options::default()
        },
    ] {
        let mut f = func.clone();
        assert_eq!(meld(&mut f, &opts).melded, 0, "{opts:?}");
    }
    let mut f = func.clone();
    let s = meld(&mut f, &hinted(64));
    assert!(s.melded >= 3, "{s:?}");
    warplift_ir::verifier::verify_function(&f).unwrap();
    assert!(matches_interpreter(&name, &func, &f, &prepared) > 0);
    let (base, melded) = (
        emulate(&func, &prepared, &[], 64).cycles,
        emulate(&f, &prepared, &[], 64).cycles,
    );
    assert!(melded * 10 < base * 9, "{melded} cycles against {base}");
}

/// Runs `func` (already melded) against the interpreter's memory for the unmelded
/// kernel at warp widths 1, 7, 32 and 64; returns the number of runs checked.
fn matches_interpreter(
    name: &str,
    original: &Function,
    melded: &Function,
    prepared: &warplift_ir::launch::PreparedLaunch,
) -> usize {
    let references = References::compute(name, original, prepared);
    let kernel = compile(melded, &[]);
    let code = encode(&kernel.mir).unwrap_or_else(|e| panic!("{name}: {e}"));
    let prog = Program::from_code(&code).unwrap_or_else(|e| panic!("{name}: {e}"));
    references.check(&prog, &"melded", &kernel.mir)
}

/// The five counts of a melding that region replication is judged by.
fn replication_counts(s: &warplift_codegen::meld::Stats) -> Vec<u64> {
    let report = s.report();
    [
        "regions melded",
        "regions replicated",
        "instructions aligned",
        "selects",
        "unpredicated blocks",
    ]
    .iter()
    .map(|k| report.get(k).unwrap())
    .collect()
}

/// Region replication (the paper's Section IV-C, case 2 of Definition 6). SB4's
/// three-way branch: D2 (true side, one block) against the region D3 → D4, D5 (false
/// side). D2 melds with D4, the block of the region it shares most with: the replica of
/// D3 branches on a constant towards D2, so the melded D3 branches on
/// `select(lane % 3 == 0, true, lane % 3 == 1)`; then the melded D2/D4 and D5 meld as two
/// blocks. SB4's blocks are identical: everything aligns, nothing is unpredicated, and
/// the emulator agrees with the cost model (fewer cycles at warp widths 32 and 64).
///
/// SB4-R: D2 melds with D4 the same way, then the melded D2/D4 with D5. The loads, the
/// multiplication and the stores align; the arithmetic that differs cannot fault or
/// touch memory and is speculated (run by every lane, its results selected), which
/// costs less than a branch around each arm when the lane index splits every warp: the
/// loop body is one block, four stores fewer, nothing unpredicated, faster at warp
/// widths 32 and 64. Forced without speculation (threshold 0, `if_convert` off), the
/// melded D2/D4 aligns the two loads, the multiplication and the two stores (5
/// instructions; the stores' values and bases are selected: 4 selects, with the
/// condition's, 5) and runs the unaligned arithmetic under a branch (2 unpredicated
/// blocks); D5, which D2's lanes never reach, stays as it was and jumps straight to the
/// join past the empty D6.
///
/// NQU's full row (one block, `i--`) against the region that takes a column: the block
/// is placed where the region's `i--` blocks are, but the replica's entry must then run
/// the region's first block under a branch for the lanes of the other side, which costs
/// more than the one instruction it saves. The profitability of the pair is below the
/// threshold and the kernel is left as it was; forced (threshold 0) the replication is
/// made, correct at every width, and the emulator measures it slower, as the model says.
#[test]
fn region_replication_melds_a_block_with_a_block_inside_a_region() {
    let (name, func, prepared) = load("darm_sb4.wir");
    let mut f = func.clone();
    let s = meld(&mut f, &Options::default());
    assert_eq!(replication_counts(&s), [2, 1, 22, 6, 0], "{f}");
    warplift_ir::verifier::verify_function(&f).unwrap();
    assert!(matches_interpreter(&name, &func, &f, &prepared) >= 4);
    for width in [32, 64] {
        let before = emulate(&func, &prepared, &[], width).cycles;
        let after = emulate(&f, &prepared, &[], width).cycles;
        assert!(after < before, "width {width}: {after} against {before}");
    }

    let (name, func, prepared) = load("darm_sb4_r.wir");
    let mut f = func.clone();
    let s = meld(&mut f, &Options::default());
    assert_eq!(replication_counts(&s), [2, 1, 10, 12, 0], "{f}");
    warplift_ir::verifier::verify_function(&f).unwrap();
    let got = shape(&f);
    assert!(
        got.iter()
            .any(|b| b.starts_with("block4: load; load; imul;")
                && b.ends_with("store; iadd; jump block3")
                && !b.contains("brif")),
        "{got:#?}"
    );
    assert_eq!(count(&func, Opcode::Store) - count(&f, Opcode::Store), 4);
    assert!(matches_interpreter(&name, &func, &f, &prepared) >= 4);
    for width in [32, 64] {
        let before = emulate(&func, &prepared, &[], width).cycles;
        let after = emulate(&f, &prepared, &[], width).cycles;
        assert!(after < before, "width {width}: {after} against {before}");
    }
    let mut f = func.clone();
    let forced = Options {
        threshold: 0.0,
        if_convert: false,
        ..Options::default()
    };
    let s = meld(&mut f, &forced);
    assert_eq!(replication_counts(&s), [1, 1, 5, 5, 2], "{f}");
    warplift_ir::verifier::verify_function(&f).unwrap();
    let got = shape(&f);
    assert!(got[0].contains("select; jump block1"), "{got:#?}");
    assert!(
        got.iter().any(|b| b.contains(": load; load; imul; brif ")),
        "{got:#?}"
    );
    assert!(
        got.iter()
            .any(|b| b.ends_with("select; store; select; store; jump block7")),
        "{got:#?}"
    );
    assert!(
        got.iter().any(|b| b.ends_with(
            "load; load; imul; bxor; isub; sshr; bor; bxor; iadd; store; store; jump block7"
        )),
        "{got:#?}"
    );
    assert!(!got.iter().any(|b| b.starts_with("block12:")), "{got:#?}");
    assert!(matches_interpreter(&name, &func, &f, &prepared) >= 4);

    let (name, func, prepared) = load("darm_nqu.wir");
    let mut f = func.clone();
    let s = meld(&mut f, &Options::default());
    assert_eq!(replication_counts(&s), [0, 0, 0, 0, 0]);
    assert_eq!(f.to_string(), func.to_string());
    let s = meld(
        &mut f,
        &Options {
            threshold: 0.0,
            ..Options::default()
        },
    );
    assert_eq!(replication_counts(&s), [2, 2, 2, 3, 1], "{f}");
    warplift_ir::verifier::verify_function(&f).unwrap();
    assert!(matches_interpreter(&name, &func, &f, &prepared) >= 4);
    let before = emulate(&func, &prepared, &[], 32).cycles;
    let after = emulate(&f, &prepared, &[], 32).cycles;
    assert!(after > before, "{after} against {before}");
}

/// Merge sort's take-left diamond (MS): each arm stores its head at the same `dst[k]`
/// and advances its own index. Melded (forced, threshold 0) the loop body ends with the
/// selected value's store and the two indices advanced through selects, the join merged
/// in: `select; store; select; iadd; select; select; iadd; jump`, 8 issues where a warp
/// all of one side issues 6 (the `brif`, the arm, the join) and a divergent warp 9. The
/// branch depends on the data, and the late passes merge with one or two threads per
/// warp, so it rarely diverges: at the corpus launch the melded kernel issues more
/// warp-instructions and takes more cycles at widths 32 and 64, and by default the pass
/// leaves the kernel as it was.
#[test]
fn merge_sort_melded_step_costs_more_than_one_arm_and_is_declined() {
    let (name, func, prepared) = load("darm_ms.wir");
    let mut f = func.clone();
    let s = meld(&mut f, &Options::default());
    assert_eq!(s.melded, 0, "{:?}", s.report());
    assert_eq!(f.to_string(), func.to_string());
    let forced = Options {
        threshold: 0.0,
        ..Options::default()
    };
    let s = meld(&mut f, &forced);
    assert_eq!(s.melded, 1, "{:?}\n{f}", s.report());
    warplift_ir::verifier::verify_function(&f).unwrap();
    let got = shape(&f);
    assert!(
        got.iter()
            .any(|b| b.ends_with("select; store; select; iadd; select; select; iadd; jump block6")),
        "{got:#?}"
    );
    assert_eq!(count(&func, Opcode::Store) - count(&f, Opcode::Store), 1);
    assert!(matches_interpreter(&name, &func, &f, &prepared) >= 4);
    for width in [32, 64] {
        let before = emulate(&func, &prepared, &[], width);
        let after = emulate(&f, &prepared, &[], width);
        assert!(
            after.warp_instructions > before.warp_instructions && after.cycles > before.cycles,
            "width {width}: {} / {} against {} / {}",
            after.warp_instructions,
            after.cycles,
            before.warp_instructions,
            before.cycles
        );
    }
}

/// The number of placed instructions of `func` with opcode `op`.
fn count(func: &Function, op: Opcode) -> usize {
    func.layout
        .insts()
        .filter(|&i| func.inst(i).opcode() == op)
        .count()
}

/// Sides that are loops (the paper's PCM, whose sides each hold a binary-search loop,
/// and LUD, whose sides each hold loops over the rows of a tile): isomorphic loops meld
/// into one loop, which every lane runs as its own side's loop (its bounds, its
/// condition, selected), leaving it on its own turn. PCM's two loops become one, with
/// one shared load where there were two; LUD's storing loops likewise (a load and a
/// store fewer; its loading and solving loops, melded, would cost more than 1% in the
/// warps of one side, and from block 64 on every warp is of one side). Each
/// equals the interpreter at widths 1, 7, 32 and 64 and takes fewer cycles at its corpus
/// launch at widths 32 and 64.
#[test]
fn isomorphic_loops_on_the_two_sides_meld_into_one_loop() {
    for (file, loads, stores) in [("darm_pcm.wir", 1, 0), ("darm_lud.wir", 1, 1)] {
        let (name, func, prepared) = load(file);
        let mut f = func.clone();
        let s = meld(&mut f, &Options::default());
        warplift_ir::verifier::verify_function(&f).unwrap();
        assert!(s.melded >= 1, "{name}: {:?}", s.report());
        assert_eq!(
            (
                count(&func, Opcode::Load) - count(&f, Opcode::Load),
                count(&func, Opcode::Store) - count(&f, Opcode::Store)
            ),
            (loads, stores),
            "{name}: {f}"
        );
        assert!(matches_interpreter(&name, &func, &f, &prepared) >= 4);
        for width in [32, 64] {
            let before = emulate(&func, &prepared, &[], width).cycles;
            let after = emulate(&f, &prepared, &[], width).cycles;
            assert!(
                after < before,
                "{name} at width {width}: {after} against {before}"
            );
        }
    }
}

/// How often a branch diverges, as the cost model estimates it from conditions on the
/// thread index and the block size (evaluated lane by lane at block sizes 16 to 256,
/// warps of 32): SB1's lane parity splits every warp; SRAD's `tid == 0` and
/// `tid == block_dim - 1` split one warp of a block and leave the others all false
/// (0.575 of the warps split, averaged over the five block sizes); a tile corner,
/// `row == 0 & tid == 0` with a uniform row, does so only when the row allows it (half of
/// that); a condition on loaded data is unknown (divergent half the time).
#[test]
fn divergence_shares_come_from_the_lane_index_and_the_block_size() {
    use warplift_codegen::meld::cost::{divergent_share, Shares};
    use warplift_ir::divergence::Divergence;
    let text = "kernel %shares(data: i64) {
block0(v0: i64):
    v1 = thread_id x
    v2 = block_dim x
    v3 = block_id x
    v4 = iconst.i32 0
    v5 = iconst.i32 1
    v6 = band v1, v5
    v7 = icmp ne v6, v4
    v8 = icmp eq v1, v4
    v9 = isub v2, v5
    v10 = icmp eq v1, v9
    v11 = icmp eq v3, v4
    v12 = band v11, v8
    v13 = uextend.i64 v1
    v14 = iadd v0, v13
    v15 = load.i32 global v14
    v16 = icmp slt v15, v4
    v17 = ushr v2, v5
    v18 = icmp ult v1, v17
    return
}
";
    let func = warplift_ir::parser::parse_function(text).unwrap();
    let results: Vec<_> = func
        .layout
        .insts()
        .filter_map(|i| func.dfg.inst_result(i))
        .collect();
    // The results in order: v1, v2, v3, v4, v5, v6, v7, ...
    let v = |n: usize| results[n - 1];
    let div = Divergence::compute(&func);
    let share = |c| divergent_share(&func, &div, c, &[], None, None);
    let at = |c, block| divergent_share(&func, &div, c, &[], Some(block), None);
    let at_width = |c, block, width| divergent_share(&func, &div, c, &[], Some(block), Some(width));
    let near = |s: Shares, d: f64, t: f64, f: f64| {
        (s.divergent - d).abs() < 1e-9 && (s.first - t).abs() < 1e-9 && (s.second - f).abs() < 1e-9
    };
    assert!(near(share(v(7)), 1.0, 0.0, 0.0), "{:?}", share(v(7)));
    assert!(near(share(v(8)), 0.575, 0.0, 0.425), "{:?}", share(v(8)));
    assert!(near(share(v(10)), 0.575, 0.0, 0.425), "{:?}", share(v(10)));
    assert!(
        near(share(v(12)), 0.2875, 0.0, 0.7125),
        "{:?}",
        share(v(12))
    );
    assert_eq!(share(v(16)), Shares::UNKNOWN);
    // LUD's `tid < block_dim / 2`: one warp of 16 or 32 lanes splits; from block 64 on
    // every warp is all true or all false, where melding can only cost (the bound).
    assert!(near(share(v(18)), 0.4, 0.3, 0.3), "{:?}", share(v(18)));
    assert_eq!(share(v(18)).uniform_at, [true, true]);
    assert_eq!(share(v(7)).uniform_at, [false, false]);
    assert_eq!(share(v(8)).uniform_at, [false, false]);
    // With the launch's block size known (`block_size_hint`), at that size alone: LUD's
    // test splits the one warp of blocks 16 and 32 (divergent every time, no bound) and
    // none of block 64's two (uniform, half each way, bounded); `tid == 0` splits one of
    // block 64's two warps.
    for block in [16, 32] {
        assert!(
            near(at(v(18), block), 1.0, 0.0, 0.0),
            "{:?}",
            at(v(18), block)
        );
        assert_eq!(at(v(18), block).uniform_at, [false, false]);
    }
    assert!(near(at(v(18), 64), 0.0, 0.5, 0.5), "{:?}", at(v(18), 64));
    assert_eq!(at(v(18), 64).uniform_at, [true, true]);
    assert!(near(at(v(8), 64), 0.5, 0.0, 0.5), "{:?}", at(v(8), 64));
    assert!(near(at(v(7), 256), 1.0, 0.0, 0.0), "{:?}", at(v(7), 256));
    assert_eq!(at(v(16), 64), Shares::UNKNOWN);
    // With the machine's warp width known too (`warp_width_hint`): in a warp of 64 LUD's
    // test at block 64 splits the one warp (divergent, no bound), at block 128 none of
    // the two; `tid == 0` splits block 64's one warp; a width of 32 is the default's.
    assert!(
        near(at_width(v(18), 64, 64), 1.0, 0.0, 0.0),
        "{:?}",
        at_width(v(18), 64, 64)
    );
    assert_eq!(at_width(v(18), 64, 64).uniform_at, [false, false]);
    assert!(near(at_width(v(18), 128, 64), 0.0, 0.5, 0.5));
    assert_eq!(at_width(v(18), 128, 64).uniform_at, [true, true]);
    assert!(near(at_width(v(8), 64, 64), 1.0, 0.0, 0.0));
    assert_eq!(at_width(v(18), 64, 32), at(v(18), 64));

    // SRAD's corner test on the row its loop walks: `y == 0` is true once in the loop's
    // 8 passes (a counter from 0 by 1 while below 8), so `y == 0 & tid == 0` diverges in
    // an eighth of them; on a value the pass cannot bound it would be half.
    let text = "kernel %corner(n: i32) {
block0(v0: i32):
    v1 = thread_id x
    v2 = iconst.i32 0
    v3 = iconst.i32 1
    v4 = iconst.i32 8
    v5 = icmp eq v1, v2
    jump block1(v2)

block1(v6: i32):
    v7 = icmp ult v6, v4
    brif v7, block2, block3

block2:
    v8 = icmp eq v6, v2
    v9 = band v8, v5
    v10 = icmp eq v0, v2
    v11 = band v10, v5
    v12 = iadd v6, v3
    jump block1(v12)

block3:
    return
}
";
    let func = warplift_ir::parser::parse_function(text).unwrap();
    let results: Vec<_> = func
        .layout
        .insts()
        .filter_map(|i| func.dfg.inst_result(i))
        .collect();
    let div = Divergence::compute(&func);
    let (row, param) = (results[7], results[9]);
    let s = divergent_share(&func, &div, row, &[], Some(16), None);
    assert!(near(s, 0.125, 0.0, 0.875), "{s:?}");
    let s = divergent_share(&func, &div, param, &[], Some(16), None);
    assert!(near(s, 0.5, 0.0, 0.5), "{s:?}");
}

/// DCT's arms (negative coefficients: `ineg; iadd; sdiv; ineg`, the others `iadd; sdiv`)
/// align end to end: the `iadd`s and the divisions meld, the two `ineg`s of the negative
/// side are speculated (cheaper than a branch around each), and the melded row merges
/// with its join (whose parameter, the quotient, is selected): one block without a
/// branch, one division where there were two. Equal to the interpreter at widths 1, 7,
/// 32 and 64; faster at 32 and 64.
#[test]
fn dct_arms_meld_into_one_row_with_speculated_negations() {
    let (name, func, prepared) = load("darm_dct.wir");
    let mut f = func.clone();
    let s = meld(&mut f, &Options::default());
    assert_eq!((s.melded, s.aligned, s.unpredicated), (1, 2, 0), "{f}");
    warplift_ir::verifier::verify_function(&f).unwrap();
    let got = shape(&f);
    assert!(
        got.iter().any(|b| b.ends_with(
            "icmp slt; ineg; select; iadd; sdiv; ineg; select; imul; ireduce; store; iadd; jump block3"
        )),
        "{got:#?}"
    );
    assert_eq!(count(&func, Opcode::Sdiv) - count(&f, Opcode::Sdiv), 1);
    assert_eq!(count(&f, Opcode::Brif), count(&func, Opcode::Brif) - 1);
    assert!(matches_interpreter(&name, &func, &f, &prepared) >= 4);
    for width in [32, 64] {
        let before = emulate(&func, &prepared, &[], width).cycles;
        let after = emulate(&f, &prepared, &[], width).cycles;
        assert!(after < before, "width {width}: {after} against {before}");
    }
}

/// SRAD at block 64, warp width 32 (each warp of a block holds one tile edge, not both):
/// the melds the cost model accepts (the tile edges against the tile's inside, and the
/// saturation's two stores) are not slower there, and faster at block 16 (one warp
/// holds both edges).
#[test]
fn srad_melds_are_not_slower_at_any_block_size() {
    let (name, func, prepared) = load("darm_srad.wir");
    for block in [16, 64] {
        // An 8 x 64 image (the launch's 512 pixels): one tile of 64 columns.
        let mut p = prepared.clone();
        p.block[0] = block;
        p.args[2] = 8;
        p.args[3] = 64;
        let before = emulate(&func, &p, &[], 32).cycles;
        let after = emulate(&func, &p, &["passes=meld"], 32).cycles;
        assert!(
            after <= before,
            "{name} at block {block}: {after} against {before}"
        );
        if block == 16 {
            assert!(
                after * 20 < before * 19,
                "{name} at block 16: {after} against {before}"
            );
        }
    }
}

/// Post-processing takes selects out of melded loops: `select c, iadd(i, k), i` (an
/// `iadd` speculated for one side) becomes `iadd(i, select c, k, 0)`, whose select, of
/// values defined before the loop, moves to the block defining the last of them; a
/// select of loop-invariant values moves out as it is; a select dominated by one of the
/// same operands goes. The kernel computes the same at every width.
#[test]
fn selects_leave_melded_loops_where_their_operands_allow() {
    let text = "kernel %hoist(out: i64, n: i32) {
block0(v0: i64, v1: i32):
    v2 = thread_id x
    v3 = iconst.i32 1
    v4 = band v2, v3
    v5 = iconst.i32 0
    v6 = icmp eq v4, v5
    v7 = iconst.i32 7
    v8 = iconst.i32 2
    v23 = iconst.i64 2
    jump block1(v5, v5)

block1(v9: i32, v10: i32):
    v11 = icmp ult v9, v1
    brif v11, block2, block3

block2:
    v12 = iadd v9, v7
    v13 = select v6, v12, v9
    v14 = select v6, v7, v8
    v15 = select v6, v7, v8
    v16 = iadd v13, v14
    v17 = iadd v16, v15
    v18 = iadd v10, v17
    v19 = iadd v9, v3
    jump block1(v19, v18)

block3:
    v20 = uextend.i64 v2
    v21 = ishl v20, v23
    v22 = iadd v0, v21
    store global v10, v22
    return
}
";
    let func = warplift_ir::parser::parse_function(text).unwrap();
    let mut f = func.clone();
    let body = f.layout.blocks()[2];
    let moved = warplift_codegen::meld::post::hoist_selects(&mut f, &[body]);
    warplift_ir::verifier::verify_function(&f).unwrap_or_else(|e| panic!("{e:?}\n{f}"));
    assert_eq!(moved, 3, "{f}");
    let got = shape(&f);
    assert_eq!(
        got[2], "block2: iadd; iadd; iadd; iadd; iadd; jump block1",
        "{f}"
    );
    assert_eq!(count(&f, Opcode::Select), 2, "{f}");
    let p = warplift_ir::launch::LaunchBuilder::new()
        .block([32])
        .zeros::<i32>("out", 32)
        .arg("n", 5)
        .build()
        .prepare(&func)
        .unwrap();
    assert!(matches_interpreter("hoist", &func, &f, &p) >= 4);
}
