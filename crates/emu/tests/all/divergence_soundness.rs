//! The divergence analysis against the emulator on random control flow: small random
//! CFGs (loops with several exits, nested and irreducible cycles), whose branches test
//! thread-dependent values, a counter of the blocks run so far (uniform only while no
//! thread has taken another path: the values temporal divergence and joins are about),
//! or a kernel parameter. Every kernel is lowered under both reconvergence models and run
//! at warp widths 4 and 32: the emulator faults when a branch marked uniform splits a
//! warp, and the memory must be the interpreter's. A branch wrongly proven uniform, by a
//! join missed or a loop exit not seen as divergent, fails here.

use std::fmt::Write;
use std::path::Path;
use warplift_codegen::isa::simt::encode;
use warplift_codegen::lower::lower_for;
use warplift_codegen::mir::MInstKind;
use warplift_codegen::regalloc::{allocate, RegisterFile, ReservationRequest};
use warplift_emu::{run, EmuError, FaultKind, MachineConfig, Program};
use warplift_ir::divergence::Reconvergence;
use warplift_ir::interp::{self, InterpConfig};
use warplift_ir::launch::Launch;
use warplift_ir::parser::parse_function;

/// Random kernels checked by the test.
const KERNELS: u64 = 100;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random kernel of `n` main blocks. Block `2i+1` counts itself in `s` and leaves for
/// the exit once `s` passes a limit (so every run terminates); block `2i+2` branches on a
/// random condition to random main blocks (any: back edges and jumps into loops alike)
/// or the exit, passing `s` and a random `x`.
fn kernel(rng: &mut Rng) -> String {
    let n = 2 + rng.below(5) as usize;
    let exit = 2 * n + 1;
    let mut v = 10u32;
    let mut fresh = || {
        v += 1;
        v
    };
    let mut t = String::from(
        "kernel %random(out: i64, n: i32) {\nblock0(v0: i64, v1: i32):\n    v2 = thread_id x\n    v3 = iconst.i32 0\n    v4 = iconst.i32 1\n    v5 = iconst.i32 3\n    v6 = iconst.i32 12\n    jump block1(v3, v3)\n",
    );
    for i in 0..n {
        let (s, x) = (fresh(), fresh());
        let (s2, over) = (fresh(), fresh());
        let (head, body) = (2 * i + 1, 2 * i + 2);
        writeln!(t, "block{head}(v{s}: i32, v{x}: i32):").unwrap();
        writeln!(t, "    v{s2} = iadd v{s}, v4").unwrap();
        writeln!(t, "    v{over} = icmp sgt v{s2}, v6").unwrap();
        writeln!(t, "    brif v{over}, block{exit}(v{s2}, v{x}), block{body}").unwrap();
        writeln!(t, "block{body}:").unwrap();
        let cond = fresh();
        match rng.below(5) {
            0 => {
                // Thread-dependent.
                let (a, r) = (fresh(), fresh());
                writeln!(t, "    v{a} = iadd v2, v{s2}").unwrap();
                writeln!(t, "    v{r} = urem v{a}, v5").unwrap();
                writeln!(t, "    v{cond} = icmp eq v{r}, v3").unwrap();
            }
            1 => {
                // What the threads carry: uniform unless some join or exit says not.
                let r = fresh();
                writeln!(t, "    v{r} = iadd v{x}, v{s2}").unwrap();
                writeln!(t, "    v{cond} = icmp eq v{r}, v5").unwrap();
            }
            2 => {
                // The block counter: uniform until threads part ways.
                let r = fresh();
                let m = 2 + rng.below(3);
                let k = fresh();
                writeln!(t, "    v{k} = iconst.i32 {m}").unwrap();
                writeln!(t, "    v{r} = urem v{s2}, v{k}").unwrap();
                writeln!(t, "    v{cond} = icmp eq v{r}, v3").unwrap();
            }
            3 => writeln!(t, "    v{cond} = icmp slt v{x}, v1").unwrap(),
            _ => writeln!(t, "    v{cond} = icmp slt v{s2}, v1").unwrap(),
        }
        let target = |rng: &mut Rng| {
            let b = rng.below(n as u64 + 1) as usize;
            if b == n {
                exit
            } else {
                2 * b + 1
            }
        };
        let mut arg = |rng: &mut Rng, t: &mut String| match rng.below(5) {
            0 => format!("v{x}"),
            1 => "v4".to_string(),
            2 => "v3".to_string(),
            3 => "v1".to_string(),
            _ => {
                let a = fresh();
                writeln!(t, "    v{a} = iadd v{x}, v{s2}").unwrap();
                format!("v{a}")
            }
        };
        let (a, b) = (target(rng), target(rng));
        let (xa, xb) = (arg(rng, &mut t), arg(rng, &mut t));
        if rng.below(5) == 0 {
            writeln!(t, "    jump block{a}(v{s2}, {xa})").unwrap();
        } else {
            writeln!(
                t,
                "    brif v{cond}, block{a}(v{s2}, {xa}), block{b}(v{s2}, {xb})"
            )
            .unwrap();
        }
    }
    let (se, xe) = (fresh(), fresh());
    let (w, off, addr, four, addr2, c4) = (fresh(), fresh(), fresh(), fresh(), fresh(), fresh());
    writeln!(t, "block{exit}(v{se}: i32, v{xe}: i32):").unwrap();
    writeln!(t, "    v{w} = uextend.i64 v2").unwrap();
    writeln!(t, "    v{four} = iconst.i64 3").unwrap();
    writeln!(t, "    v{off} = ishl v{w}, v{four}").unwrap();
    writeln!(t, "    v{addr} = iadd v0, v{off}").unwrap();
    writeln!(t, "    store global v{se}, v{addr}").unwrap();
    writeln!(t, "    v{c4} = iconst.i64 4").unwrap();
    writeln!(t, "    v{addr2} = iadd v{addr}, v{c4}").unwrap();
    // A branch on what the threads brought out of the CFG, so that a parameter of the
    // exit wrongly proven uniform splits a uniform branch.
    let (c, p, sum) = (fresh(), fresh(), fresh());
    writeln!(t, "    v{c} = icmp eq v{xe}, v4").unwrap();
    writeln!(t, "    brif v{c}, block{}, block{}", exit + 1, exit + 2).unwrap();
    writeln!(t, "block{}:\n    jump block{}(v3)", exit + 1, exit + 3).unwrap();
    writeln!(t, "block{}:\n    jump block{}(v4)", exit + 2, exit + 3).unwrap();
    writeln!(t, "block{}(v{p}: i32):", exit + 3).unwrap();
    writeln!(t, "    v{sum} = iadd v{xe}, v{p}").unwrap();
    writeln!(t, "    store global v{sum}, v{addr2}").unwrap();
    writeln!(t, "    return\n}}").unwrap();
    t
}

const LAUNCH: &str = "
block = [64]
[args]
n = 5
[buffers.out]
type = \"i32\"
len = 128
init = \"zeros\"
";

#[test]
fn random_control_flow_never_splits_a_uniform_branch() {
    let launch = Launch::from_toml_str(LAUNCH, Path::new("random.launch.toml")).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut uniform, mut total) = (0usize, 0usize);
    let kernels: u64 = std::env::var("DIVERGENCE_SOUNDNESS_KERNELS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(KERNELS);
    for case in 0..kernels {
        let text = kernel(&mut rng);
        let func = parse_function(&text).unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
        warplift_ir::verifier::verify_function(&func)
            .unwrap_or_else(|e| panic!("case {case}: {e:?}\n{text}"));
        let (u, t) = check(&format!("case {case}"), &text, &launch);
        uniform += u;
        total += t;
    }
    eprintln!("{uniform} of {total} branches uniform");
    assert!(
        uniform * 10 >= total,
        "{uniform} of {total} branches uniform"
    );
}

/// Lowers `text` under both reconvergence models and runs it at warp widths 4, 7 and 32:
/// no uniform branch may split a warp, and the memory must be the interpreter's. Returns
/// how many of the lowered branches are uniform, and how many there are.
fn check(case: &str, text: &str, launch: &Launch) -> (usize, usize) {
    let func = parse_function(text).unwrap_or_else(|e| panic!("{case}: {e}\n{text}"));
    warplift_ir::verifier::verify_function(&func)
        .unwrap_or_else(|e| panic!("{case}: {e:?}\n{text}"));
    let (mut uniform, mut total) = (0, 0);
    let prepared = launch.prepare(&func).unwrap();
    for model in [Reconvergence::Ipdom, Reconvergence::Independent] {
        let mir = lower_for(&func, model).unwrap();
        let allocated = allocate(&mir, &RegisterFile::MAX, &ReservationRequest::none()).unwrap();
        for b in &allocated.func.order {
            for inst in &allocated.func.blocks[*b].insts {
                if let MInstKind::Branch { divergent, .. } = inst.kind {
                    total += 1;
                    uniform += usize::from(!divergent);
                }
            }
        }
        let prog = Program::from_code(&encode(&allocated.func).unwrap()).unwrap();
        for width in [4, 7, 32] {
            let mut reference = prepared.clone();
            let config = InterpConfig {
                warp_width: width,
                ..Default::default()
            };
            interp::run(&func, &mut reference, &config).unwrap();
            let mut emulated = prepared.clone();
            let machine = MachineConfig::builder().warp_width(width).build().unwrap();
            match run(&prog, &mut emulated, &machine) {
                Ok(_) => {}
                Err(EmuError::Fault(f))
                    if matches!(f.kind, FaultKind::UniformBranchDiverged { .. }) =>
                {
                    panic!("{case} ({model:?}, width {width}): {f}\n{text}")
                }
                Err(e) => panic!("{case} ({model:?}, width {width}): {e}\n{text}"),
            }
            assert_eq!(
                emulated.memory.results_json(),
                reference.memory.results_json(),
                "{case} ({model:?}, width {width})\n{text}"
            );
        }
    }
    (uniform, total)
}

/// Threads that leave an inner loop for the outer loop's latch come back to the inner
/// loop's header through the outer header and meet the others at the inner loop's block
/// `P`, the branch's post-dominator, a turn later, with other values: the loop forest's
/// inner loop `{H, P}` does not hold the way round. Everything the threads carry to `P`
/// and out of it differs between them (the exit block branches on it).
#[test]
fn threads_leaving_an_inner_loop_for_the_outer_latch_meet_a_turn_later() {
    let text = "kernel %late(out: i64, n: i32) {
block0(v0: i64, v1: i32):
    v2 = thread_id x
    v3 = iconst.i32 0
    v4 = iconst.i32 1
    v5 = iconst.i32 3
    v6 = iconst.i32 12
    jump block1(v3, v3)
block1(v10: i32, v11: i32):
    jump block2(v10, v11)
block2(v12: i32, v13: i32):
    v14 = iadd v13, v4
    v15 = iadd v2, v14
    v16 = urem v15, v5
    v17 = icmp eq v16, v3
    brif v17, block3(v12, v14), block4(v12, v14)
block3(v18: i32, v19: i32):
    v20 = iadd v18, v4
    jump block5(v20, v19)
block5(v21: i32, v22: i32):
    jump block1(v21, v22)
block4(v23: i32, v24: i32):
    v25 = icmp sgt v24, v6
    brif v25, block6(v23), block2(v23, v24)
block6(v26: i32):
    v27 = icmp eq v26, v4
    brif v27, block7, block8
block7:
    jump block9(v3)
block8:
    jump block9(v4)
block9(v28: i32):
    v29 = iadd v28, v26
    v30 = uextend.i64 v2
    v31 = iconst.i64 2
    v32 = ishl v30, v31
    v33 = iadd v0, v32
    store global v29, v33
    return
}";
    let launch = Launch::from_toml_str(LAUNCH, Path::new("late.launch.toml")).unwrap();
    check("late", text, &launch);
}

/// LLVM's known bug (`divergent-cycle-exit-phi.ll`), on the emulator: threads leave the
/// loop {1, 2, 3, 5} at block2 by a divergent branch, or in a later iteration at block3 by
/// a uniform one, bringing different constants to block4, and block4 branches on them.
/// Proving that parameter uniform would make block4's branch split a uniform warp.
#[test]
fn a_value_leaving_a_loop_by_different_exits_splits_the_warp_when_tested() {
    let text = "kernel %exits(out: i64, n: i32) {
block0(v0: i64, v1: i32):
    v2 = thread_id x
    v3 = iconst.i32 0
    v4 = iconst.i32 1
    v12 = iconst.i32 2
    jump block1(v3)
block1(v5: i32):
    v6 = icmp slt v5, v1
    brif v6, block2, block3
block2:
    v7 = icmp slt v5, v2
    brif v7, block5, block4(v4)
block3:
    v10 = icmp eq v5, v1
    brif v10, block4(v12), block5
block5:
    v8 = iadd v5, v4
    jump block1(v8)
block4(v9: i32):
    v11 = icmp eq v9, v4
    brif v11, block6, block7
block6:
    jump block8(v3)
block7:
    jump block8(v4)
block8(v13: i32):
    v14 = uextend.i64 v2
    v15 = iconst.i64 2
    v16 = ishl v14, v15
    v17 = iadd v0, v16
    store global v13, v17
    return
}";
    let func = parse_function(text).unwrap();
    let launch = Launch::from_toml_str(LAUNCH, Path::new("exits.launch.toml")).unwrap();
    let prepared = launch.prepare(&func).unwrap();
    let mut reference = prepared.clone();
    interp::run(&func, &mut reference, &InterpConfig::default()).unwrap();
    let mir = lower_for(&func, Reconvergence::Ipdom).unwrap();
    let allocated = allocate(&mir, &RegisterFile::MAX, &ReservationRequest::none()).unwrap();
    let prog = Program::from_code(&encode(&allocated.func).unwrap()).unwrap();
    let mut emulated = prepared.clone();
    let machine = MachineConfig::builder().warp_width(32).build().unwrap();
    run(&prog, &mut emulated, &machine).unwrap();
    assert_eq!(
        emulated.memory.results_json(),
        reference.memory.results_json()
    );
    let div = warplift_ir::divergence::Divergence::compute(&func);
    assert!(div.is_divergent_branch(warplift_ir::Block::from_u32(4)));
}
