//! Hand-allocated machine kernels run on the emulator: memory compared with the reference
//! interpreter running the same kernel written in IR, and statistics checked exactly.

use std::path::Path;
use warplift_codegen::isa::simt::{encode, Op};
use warplift_codegen::mir::{
    Address, BinOp, BlockTarget, Cond, CvtOp, Guard, MBlock, MInst, MInstKind, MType, MirFunction,
    Operand, Reg, RegClass, SpecialReg, SpillSlot,
};
use warplift_emu::{
    run, run_traced, FaultKind, MachineConfig, PartialBarrier, Program, SchedulerPolicy, Stats,
    Trace,
};
use warplift_ir::launch::{Launch, PreparedLaunch};
use warplift_ir::{AddrSpace, AtomicRmwOp, Block, Dim, IntCC, Param, SourceLoc, Type};

fn r(i: u32) -> Reg {
    Reg::phys(i, RegClass::B32)
}
fn rd(i: u32) -> Reg {
    Reg::phys(i, RegClass::B64)
}
fn p(i: u32) -> Reg {
    Reg::phys(i, RegClass::Pred)
}
fn imm(v: i64) -> Operand {
    Operand::Imm(v as u64)
}

/// A function with `n` blocks, `blockK` implementing IR block `K`; instructions are
/// numbered as source lines in the order they are added.
struct K {
    f: MirFunction,
    b: Vec<MBlock>,
    line: u32,
}

impl K {
    fn new(name: &str, params: &[(&str, Type)], n: u32) -> K {
        let mut f = MirFunction::new(
            name,
            params
                .iter()
                .map(|&(n, ty)| Param { name: n.into(), ty })
                .collect(),
        );
        let b: Vec<MBlock> = (0..n)
            .map(|i| f.new_block(Some(Block::from_u32(i))))
            .collect();
        f.order = b.clone();
        K { f, b, line: 0 }
    }

    fn push(&mut self, block: usize, kind: MInstKind) -> &mut Self {
        self.line += 1;
        let inst = MInst::new(kind, SourceLoc::new(self.line, 1));
        self.f.blocks[self.b[block]].insts.push(inst);
        self
    }

    fn guarded(&mut self, block: usize, guard: Guard, kind: MInstKind) -> &mut Self {
        self.push(block, kind);
        self.f.blocks[self.b[block]].insts.last_mut().unwrap().guard = Some(guard);
        self
    }

    fn jump(&mut self, block: usize, to: usize) -> &mut Self {
        let dest = BlockTarget::new(self.b[to]);
        self.push(block, MInstKind::Jump { dest })
    }

    fn branch(&mut self, block: usize, pred: Reg, taken: usize, not_taken: usize) -> &mut Self {
        let (taken, not_taken) = (
            BlockTarget::new(self.b[taken]),
            BlockTarget::new(self.b[not_taken]),
        );
        self.push(
            block,
            MInstKind::Branch {
                pred,
                negated: false,
                taken,
                not_taken,
                divergent: true,
            },
        )
    }

    /// `dst = param index` (a pointer), `tid = tid.x`, `addr = dst + tid * 4`.
    fn thread_addr(&mut self, block: usize, param: u32, base: Reg, tid: Reg, addr: Reg) {
        self.push(
            block,
            MInstKind::LdParam {
                ty: MType::I64,
                dst: base,
                index: param,
            },
        );
        self.push(
            block,
            MInstKind::ReadSpecial {
                dst: tid,
                sreg: SpecialReg::Tid(Dim::X),
            },
        );
        self.push(
            block,
            MInstKind::Cvt {
                op: CvtOp::Zext,
                to: MType::I64,
                from: MType::I32,
                dst: addr,
                src: tid,
            },
        );
        self.push(
            block,
            MInstKind::Bin {
                op: BinOp::Shl,
                ty: MType::I64,
                dst: addr,
                a: addr,
                b: imm(2),
            },
        );
        self.push(
            block,
            MInstKind::Bin {
                op: BinOp::Add,
                ty: MType::I64,
                dst: addr,
                a: addr,
                b: base.into(),
            },
        );
    }

    /// `[addr] += v` (i32, global), through `tmp`.
    fn add_to(&mut self, block: usize, addr: Reg, tmp: Reg, v: Operand) {
        let a = Address {
            base: Some(addr),
            offset: 0,
        };
        self.push(
            block,
            MInstKind::Ld {
                space: AddrSpace::Global,
                ty: MType::I32,
                dst: tmp,
                addr: a,
            },
        );
        self.push(
            block,
            MInstKind::Bin {
                op: BinOp::Add,
                ty: MType::I32,
                dst: tmp,
                a: tmp,
                b: v,
            },
        );
        self.push(
            block,
            MInstKind::St {
                space: AddrSpace::Global,
                ty: MType::I32,
                src: tmp.into(),
                addr: a,
            },
        );
    }

    fn program(&self) -> Program {
        Program::from_code(&encode(&self.f).unwrap()).unwrap()
    }
}

fn setp(dst: Reg, cc: IntCC, a: Reg, b: Operand) -> MInstKind {
    MInstKind::Setp {
        cond: Cond::Int(cc),
        ty: MType::I32,
        dst,
        a,
        b,
    }
}

/// Prepares `launch_toml` for the IR kernel `wir`.
fn prepare(wir: &str, launch_toml: &str) -> (warplift_ir::Function, PreparedLaunch) {
    let func = warplift_ir::parser::parse_function(wir).unwrap();
    let launch = Launch::from_toml_str(launch_toml, Path::new("test.launch.toml")).unwrap();
    let prepared = launch.prepare(&func).unwrap();
    (func, prepared)
}

fn config(width: u32) -> MachineConfig {
    MachineConfig::builder().warp_width(width).build().unwrap()
}

/// Runs the program at `width` and checks the memory equals the interpreter's.
fn check(prog: &Program, wir: &str, launch_toml: &str, width: u32) -> (Stats, serde_json::Value) {
    let (func, launch) = prepare(wir, launch_toml);
    let mut reference = launch.clone();
    warplift_ir::interp::run(&func, &mut reference, &Default::default()).unwrap();
    let mut emulated = launch;
    let stats = run(prog, &mut emulated, &config(width)).unwrap();
    let mem = emulated.memory.results_json();
    assert_eq!(mem, reference.memory.results_json(), "width {width}");
    emulated.memory.check_expectations().unwrap();
    (stats, mem)
}

// ---------------------------------------------------------------------------------------

const DIAMOND_WIR: &str = "
kernel %diamond(out: i64) {
block0(v0: i64):
    v1 = thread_id x
    v2 = iconst.i32 3
    v3 = icmp slt v1, v2
    brif v3, block1, block2
block1:
    v4 = iconst.i32 2
    v5 = imul v1, v4
    jump block3(v5)
block2:
    v6 = iconst.i32 100
    v7 = iadd v1, v6
    jump block3(v7)
block3(v8: i32):
    v9 = uextend.i64 v1
    v10 = iconst.i64 2
    v11 = ishl v9, v10
    v12 = iadd v11, v0
    store global v8, v12
    return
}";

const DIAMOND_LAUNCH: &str = "
block = [8]
[buffers.out]
type = \"i32\"
len = 8
init = \"zeros\"
[expect]
out = [0, 2, 4, 103, 104, 105, 106, 107]
";

fn diamond() -> K {
    let mut k = K::new("diamond", &[("out", Type::I64)], 4);
    k.thread_addr(0, 0, rd(0), r(0), rd(1));
    k.push(0, setp(p(0), IntCC::SignedLessThan, r(0), imm(3)));
    k.branch(0, p(0), 1, 2);
    k.push(
        1,
        MInstKind::Bin {
            op: BinOp::Mul,
            ty: MType::I32,
            dst: r(1),
            a: r(0),
            b: imm(2),
        },
    );
    k.jump(1, 3);
    k.push(
        2,
        MInstKind::Bin {
            op: BinOp::Add,
            ty: MType::I32,
            dst: r(1),
            a: r(0),
            b: imm(100),
        },
    );
    k.jump(2, 3);
    k.push(
        3,
        MInstKind::St {
            space: AddrSpace::Global,
            ty: MType::I32,
            src: r(1).into(),
            addr: Address {
                base: Some(rd(1)),
                offset: 0,
            },
        },
    );
    k.push(3, MInstKind::Ret);
    k
}

#[test]
fn divergent_diamond_matches_interpreter_and_counts_blocks() {
    let prog = diamond().program();
    // Width 4: warp 0 (threads 0-3) splits, warp 1 (4-7) goes one way.
    let (s, _) = check(&prog, DIAMOND_WIR, DIAMOND_LAUNCH, 4);
    let execs: Vec<u64> = s.block_executions.values().copied().collect();
    assert_eq!(execs, [2, 1, 2, 2]);
    assert_eq!(s.max_stack_depth, 3);
    assert_eq!(s.warps, 2);
    // Entry 7 instructions, each arm 2, join 2: warp 0 runs both arms.
    assert_eq!(s.warp_instructions, 2 * 7 + (2 + 2) + 2 + 2 * 2);
    let thread_insts = 8 * 7 + 3 * 2 + 5 * 2 + 8 * 2;
    assert_eq!(s.thread_instructions, thread_insts);
    assert_eq!(s.active_thread_instructions, thread_insts);
    let eff = thread_insts as f64 / (s.warp_instructions as f64 * 4.0);
    assert!((s.simt_efficiency - eff).abs() < 1e-12);
    // Stores: each warp's 4 consecutive i32 = 16 bytes, in one 32-byte segment.
    assert_eq!(s.transactions.global, 2);
    assert_eq!(
        s.warp_instructions + s.stalls.total(),
        s.cycles * u64::from(MachineConfig::default().sms)
    );
    for width in [1, 3, 7, 8, 32, 64] {
        let (s, _) = check(&prog, DIAMOND_WIR, DIAMOND_LAUNCH, width);
        assert_eq!(s.thread_instructions, thread_insts, "width {width}");
    }
    // Width 8: one warp, split once.
    let (s, _) = check(&prog, DIAMOND_WIR, DIAMOND_LAUNCH, 8);
    let execs: Vec<u64> = s.block_executions.values().copied().collect();
    assert_eq!(execs, [1, 1, 1, 1]);
}

#[test]
fn schedulers_and_latencies_change_time_not_results() {
    let prog = diamond().program();
    let (_, launch) = prepare(DIAMOND_WIR, DIAMOND_LAUNCH);
    let mut cycles = Vec::new();
    for (policy, global) in [
        (SchedulerPolicy::Lrr, 400),
        (SchedulerPolicy::Gto, 400),
        (SchedulerPolicy::Gto, 100),
    ] {
        let c = MachineConfig::builder()
            .warp_width(2)
            .sms(1)
            .scheduler(policy)
            .global_latency(global)
            .build()
            .unwrap();
        let mut l = launch.clone();
        let s = run(&prog, &mut l, &c).unwrap();
        l.memory.check_expectations().unwrap();
        assert_eq!(s.warp_instructions + s.stalls.total(), s.cycles);
        cycles.push(s.cycles);
    }
    // The only load-like latency is none (stores do not wait), so latency does not
    // matter here, but the ALU chain does: the run is far from free.
    assert!(cycles.iter().all(|&c| c > 20));
}

// ---------------------------------------------------------------------------------------
// Fig. 1 of Anantpur & Govindarajan (2014): a short-circuit condition makes an
// unstructured CFG. With one warp of 4 threads where T1, T2 evaluate c1 true, T3 c2 true
// and T4 false, and T1 c3 true: B3 runs twice and B5 three times before all meet at B6.

const FIG1_WIR: &str = "
kernel %fig1(out: i64) {
block0(v0: i64):
    v1 = thread_id x
    v2 = iconst.i32 2
    v3 = icmp slt v1, v2
    brif v3, block2, block1
block1:
    v4 = iconst.i32 2
    v5 = icmp eq v1, v4
    brif v5, block2, block4
block2:
    v6 = iconst.i32 0
    v7 = icmp eq v1, v6
    brif v7, block3, block4
block3:
    v8 = uextend.i64 v1
    v9 = iconst.i64 2
    v10 = ishl v8, v9
    v11 = iadd v10, v0
    v12 = load.i32 global v11
    v13 = iconst.i32 1
    v14 = iadd v12, v13
    store global v14, v11
    jump block5
block4:
    v15 = uextend.i64 v1
    v16 = iconst.i64 2
    v17 = ishl v15, v16
    v18 = iadd v17, v0
    v19 = load.i32 global v18
    v20 = iconst.i32 10
    v21 = iadd v19, v20
    store global v21, v18
    jump block5
block5:
    v22 = uextend.i64 v1
    v23 = iconst.i64 2
    v24 = ishl v22, v23
    v25 = iadd v24, v0
    v26 = load.i32 global v25
    v27 = iconst.i32 100
    v28 = iadd v26, v27
    store global v28, v25
    return
}";

const FIG1_LAUNCH: &str = "
block = [4]
[buffers.out]
type = \"i32\"
len = 4
init = \"zeros\"
[expect]
out = [101, 110, 110, 110]
";

fn fig1() -> K {
    // B1..B6 are blocks 0..5.
    let mut k = K::new("fig1", &[("out", Type::I64)], 6);
    k.thread_addr(0, 0, rd(0), r(0), rd(1));
    k.push(0, setp(p(0), IntCC::SignedLessThan, r(0), imm(2)));
    k.branch(0, p(0), 2, 1);
    k.push(1, setp(p(0), IntCC::Equal, r(0), imm(2)));
    k.branch(1, p(0), 2, 4);
    k.push(2, setp(p(0), IntCC::Equal, r(0), imm(0)));
    k.branch(2, p(0), 3, 4);
    k.add_to(3, rd(1), r(1), imm(1));
    k.jump(3, 5);
    k.add_to(4, rd(1), r(1), imm(10));
    k.jump(4, 5);
    k.add_to(5, rd(1), r(1), imm(100));
    k.push(5, MInstKind::Ret);
    k
}

#[test]
fn unstructured_short_circuit_executes_blocks_redundantly() {
    let prog = fig1().program();
    let (s, _) = check(&prog, FIG1_WIR, FIG1_LAUNCH, 4);
    let execs: Vec<(&str, u64)> = s
        .block_executions
        .iter()
        .map(|(k, &v)| (k.as_str(), v))
        .collect();
    assert_eq!(
        execs,
        [
            ("block0", 1),
            ("block1", 1),
            ("block2", 2),
            ("block3", 1),
            ("block4", 3),
            ("block5", 1)
        ]
    );
    // base; B1 splits (two halves); B3's split replaces T1-T2's entry by T1's and T2's.
    assert_eq!(s.max_stack_depth, 4);
    for width in [1, 2, 3, 7, 32, 64] {
        check(&prog, FIG1_WIR, FIG1_LAUNCH, width);
    }
    // One thread per warp: no redundancy, every block runs once per thread that takes it.
    let (s, _) = check(&prog, FIG1_WIR, FIG1_LAUNCH, 1);
    assert_eq!(s.block_executions["block4"], 3);
    assert_eq!(s.block_executions["block5"], 4);
    assert_eq!(s.simt_efficiency, 1.0);
    assert_eq!(s.max_stack_depth, 1);
}

// ---------------------------------------------------------------------------------------

const LOOP_WIR: &str = "
kernel %tri(out: i64) {
block0(v0: i64):
    v1 = thread_id x
    v2 = iconst.i32 0
    jump block1(v2, v2)
block1(v3: i32, v4: i32):
    v5 = icmp slt v4, v1
    brif v5, block2, block3
block2:
    v6 = iadd v3, v4
    v7 = iconst.i32 1
    v8 = iadd v4, v7
    jump block1(v6, v8)
block3:
    v9 = uextend.i64 v1
    v10 = iconst.i64 2
    v11 = ishl v9, v10
    v12 = iadd v11, v0
    store global v3, v12
    return
}";

const LOOP_LAUNCH: &str = "
block = [10]
[buffers.out]
type = \"i32\"
len = 10
init = \"zeros\"
[expect]
out = [0, 0, 1, 3, 6, 10, 15, 21, 28, 36]
";

fn tri_loop(spill: bool) -> K {
    let mut k = K::new("tri", &[("out", Type::I64)], 4);
    k.thread_addr(0, 0, rd(0), r(0), rd(1));
    k.push(
        0,
        MInstKind::Mov {
            ty: MType::I32,
            dst: r(1),
            src: imm(0),
        },
    );
    k.push(
        0,
        MInstKind::Mov {
            ty: MType::I32,
            dst: r(2),
            src: imm(0),
        },
    );
    if spill {
        // Keep the address in a spill slot across the loop.
        k.f.spill_slots = 1;
        k.push(
            0,
            MInstKind::Spill {
                src: rd(1),
                slot: SpillSlot(0),
            },
        );
    }
    k.jump(0, 1);
    k.push(1, setp(p(0), IntCC::SignedLessThan, r(2), r(0).into()));
    k.branch(1, p(0), 2, 3);
    k.push(
        2,
        MInstKind::Bin {
            op: BinOp::Add,
            ty: MType::I32,
            dst: r(1),
            a: r(1),
            b: r(2).into(),
        },
    );
    k.push(
        2,
        MInstKind::Bin {
            op: BinOp::Add,
            ty: MType::I32,
            dst: r(2),
            a: r(2),
            b: imm(1),
        },
    );
    if spill {
        // Clobber the address register inside the loop.
        k.push(
            2,
            MInstKind::Mov {
                ty: MType::I64,
                dst: rd(1),
                src: imm(-1),
            },
        );
    }
    k.jump(2, 1);
    if spill {
        k.push(
            3,
            MInstKind::Reload {
                dst: rd(1),
                slot: SpillSlot(0),
            },
        );
    }
    k.push(
        3,
        MInstKind::St {
            space: AddrSpace::Global,
            ty: MType::I32,
            src: r(1).into(),
            addr: Address {
                base: Some(rd(1)),
                offset: 0,
            },
        },
    );
    k.push(3, MInstKind::Ret);
    k
}

#[test]
fn loop_with_per_thread_trip_count() {
    let prog = tri_loop(false).program();
    let (s, _) = check(&prog, LOOP_WIR, LOOP_LAUNCH, 16);
    // One warp: the header runs once per iteration of the longest thread (9) plus the
    // final test; the body 9 times; the exit block once: lanes leaving early wait there.
    assert_eq!(s.block_executions["block1"], 10);
    assert_eq!(s.block_executions["block2"], 9);
    assert_eq!(s.block_executions["block3"], 1);
    // The loop does not grow the stack: base + the lanes still looping.
    assert_eq!(s.max_stack_depth, 2);
    // Body thread-instructions: Σ trip counts × 3.
    let body_lanes: u64 = (0..10).sum::<u64>() * 3;
    assert!(s.thread_instructions > body_lanes);
    for width in [1, 7, 32, 64] {
        check(&prog, LOOP_WIR, LOOP_LAUNCH, width);
    }
}

#[test]
fn spills_go_to_local_memory() {
    let prog = tri_loop(true).program();
    assert_eq!(prog.local_size, 8);
    for width in [1, 7, 32, 64] {
        let (s, _) = check(&prog, LOOP_WIR, LOOP_LAUNCH, width);
        // A spill and a reload per warp, each lane's 8 bytes interleaved as two words.
        assert!(s.transactions.local >= 2, "width {width}");
    }
    let (s, _) = check(&prog, LOOP_WIR, LOOP_LAUNCH, 32);
    // 10 lanes × 8 bytes = 80 interleaved bytes, 3 segments of 32 bytes each way.
    assert_eq!(s.transactions.local, 6);
}

// ---------------------------------------------------------------------------------------
// Barrier + shared memory: each thread writes its id to shared memory, waits, and reads
// its neighbour's (reversed order), across several warps.

const SHARED_WIR: &str = "
kernel %reverse(out: i64) {
    smem0 = shared 256, align 4
block0(v0: i64):
    v1 = thread_id x
    v2 = iconst.i32 2
    v3 = ishl v1, v2
    store shared v1, v3
    barrier
    v4 = iconst.i32 63
    v5 = isub v4, v1
    v6 = ishl v5, v2
    v7 = load.i32 shared v6
    v8 = uextend.i64 v1
    v9 = iconst.i64 2
    v10 = ishl v8, v9
    v11 = iadd v10, v0
    store global v7, v11
    return
}";

const SHARED_LAUNCH: &str = "
grid = [3]
block = [64]
[buffers.out]
type = \"i32\"
len = 64
init = \"zeros\"
";

fn reverse() -> K {
    let mut k = K::new("reverse", &[("out", Type::I64)], 1);
    k.f.shared_size = 256;
    k.thread_addr(0, 0, rd(0), r(0), rd(1));
    let sh = |base: Reg| Address {
        base: Some(base),
        offset: 0,
    };
    k.push(
        0,
        MInstKind::Bin {
            op: BinOp::Shl,
            ty: MType::I32,
            dst: r(1),
            a: r(0),
            b: imm(2),
        },
    );
    k.push(
        0,
        MInstKind::St {
            space: AddrSpace::Shared,
            ty: MType::I32,
            src: r(0).into(),
            addr: sh(r(1)),
        },
    );
    k.push(0, MInstKind::Bar);
    k.push(
        0,
        MInstKind::Mov {
            ty: MType::I32,
            dst: r(2),
            src: imm(63),
        },
    );
    k.push(
        0,
        MInstKind::Bin {
            op: BinOp::Sub,
            ty: MType::I32,
            dst: r(2),
            a: r(2),
            b: r(0).into(),
        },
    );
    k.push(
        0,
        MInstKind::Bin {
            op: BinOp::Shl,
            ty: MType::I32,
            dst: r(2),
            a: r(2),
            b: imm(2),
        },
    );
    k.push(
        0,
        MInstKind::Ld {
            space: AddrSpace::Shared,
            ty: MType::I32,
            dst: r(3),
            addr: sh(r(2)),
        },
    );
    k.push(
        0,
        MInstKind::St {
            space: AddrSpace::Global,
            ty: MType::I32,
            src: r(3).into(),
            addr: sh(rd(1)),
        },
    );
    k.push(0, MInstKind::Ret);
    k
}

#[test]
fn barrier_and_shared_memory_across_warps() {
    let prog = reverse().program();
    for width in [1, 7, 8, 32, 64] {
        let (s, mem) = check(&prog, SHARED_WIR, SHARED_LAUNCH, width);
        let expect: Vec<serde_json::Value> = (0..64).rev().map(|i: i64| i.into()).collect();
        assert_eq!(mem["buffers"]["out"], serde_json::Value::Array(expect));
        assert_eq!(s.barriers, 3, "width {width}");
        assert_eq!(s.thread_blocks, 3);
    }
    // Width 32: each shared access touches 32 consecutive words, one per bank.
    let (s, _) = check(&prog, SHARED_WIR, SHARED_LAUNCH, 32);
    assert_eq!(s.transactions.shared, 3 * 2 * 2);
    assert!(s.stalls.barrier > 0 || s.stalls.memory > 0);
    assert!(s.occupancy > 0.0 && s.occupancy <= s.theoretical_occupancy + 1e-9);
}

// ---------------------------------------------------------------------------------------

const ATOMIC_WIR: &str = "
kernel %count(out: i64) {
block0(v0: i64):
    v1 = thread_id x
    v2 = iconst.i32 3
    v3 = band v1, v2
    v4 = uextend.i64 v3
    v5 = iconst.i64 2
    v6 = ishl v4, v5
    v7 = iadd v6, v0
    v8 = iconst.i32 1
    v9 = atomic_rmw add global v7, v8
    v10 = iconst.i32 0
    v12 = iconst.i32 7
    v11 = atomic_cas global v0+16, v10, v12
    return
}";

const ATOMIC_LAUNCH: &str = "
grid = [2]
block = [50]
[buffers.out]
type = \"i32\"
len = 5
init = \"zeros\"
[expect]
out = [26, 26, 24, 24, 7]
";

fn atomics() -> K {
    let mut k = K::new("count", &[("out", Type::I64)], 1);
    k.push(
        0,
        MInstKind::LdParam {
            ty: MType::I64,
            dst: rd(0),
            index: 0,
        },
    );
    k.push(
        0,
        MInstKind::ReadSpecial {
            dst: r(0),
            sreg: SpecialReg::Tid(Dim::X),
        },
    );
    k.push(
        0,
        MInstKind::Bin {
            op: BinOp::And,
            ty: MType::I32,
            dst: r(1),
            a: r(0),
            b: imm(3),
        },
    );
    k.push(
        0,
        MInstKind::Cvt {
            op: CvtOp::Zext,
            to: MType::I64,
            from: MType::I32,
            dst: rd(1),
            src: r(1),
        },
    );
    k.push(
        0,
        MInstKind::Mad {
            ty: MType::I64,
            dst: rd(1),
            a: rd(1),
            b: imm(4),
            c: rd(0).into(),
        },
    );
    k.push(
        0,
        MInstKind::Atom {
            op: AtomicRmwOp::Add,
            space: AddrSpace::Global,
            ty: MType::I32,
            dst: r(2),
            addr: Address {
                base: Some(rd(1)),
                offset: 0,
            },
            src: imm(1),
        },
    );
    k.push(
        0,
        MInstKind::Cas {
            space: AddrSpace::Global,
            ty: MType::I32,
            dst: r(3),
            addr: Address {
                base: Some(rd(0)),
                offset: 16,
            },
            expected: imm(0),
            replacement: imm(7),
        },
    );
    k.push(0, MInstKind::Ret);
    k
}

#[test]
fn atomics_are_sequential() {
    let prog = atomics().program();
    for width in [1, 7, 32, 64] {
        let (_, mem) = check(&prog, ATOMIC_WIR, ATOMIC_LAUNCH, width);
        assert_eq!(mem["buffers"]["out"][4], 7);
    }
}

#[test]
fn guards_act_only_where_the_predicate_holds() {
    // out[tid] = tid odd ? 7 : 0, by a guarded store.
    let wir = "
kernel %odd(out: i64) {
block0(v0: i64):
    v1 = thread_id x
    v2 = iconst.i32 1
    v3 = band v1, v2
    v4 = icmp ne v3, v2
    brif v4, block2, block1
block1:
    v5 = uextend.i64 v1
    v6 = iconst.i64 2
    v7 = ishl v5, v6
    v8 = iadd v7, v0
    v9 = iconst.i32 7
    store global v9, v8
    jump block2
block2:
    return
}";
    let launch = "block = [6]\n[buffers.out]\ntype = \"i32\"\nlen = 6\ninit = \"zeros\"\n\
                  [expect]\nout = [0, 7, 0, 7, 0, 7]\n";
    let mut k = K::new("odd", &[("out", Type::I64)], 1);
    k.thread_addr(0, 0, rd(0), r(0), rd(1));
    k.push(
        0,
        MInstKind::Bin {
            op: BinOp::And,
            ty: MType::I32,
            dst: r(1),
            a: r(0),
            b: imm(1),
        },
    );
    k.push(0, setp(p(0), IntCC::NotEqual, r(1), imm(0)));
    k.guarded(
        0,
        Guard {
            pred: p(0),
            negated: false,
        },
        MInstKind::St {
            space: AddrSpace::Global,
            ty: MType::I32,
            src: imm(7),
            addr: Address {
                base: Some(rd(1)),
                offset: 0,
            },
        },
    );
    k.push(0, MInstKind::Ret);
    let prog = k.program();
    let (s, _) = check(&prog, wir, launch, 8);
    // 9 instructions, 6 lanes; the store acts in 3.
    assert_eq!(s.warp_instructions, 9);
    assert_eq!(s.active_thread_instructions, 9 * 6);
    assert_eq!(s.thread_instructions, 8 * 6 + 3);
    assert_eq!(s.max_stack_depth, 1);
}

// ---------------------------------------------------------------------------------------
// Faults.

#[test]
fn out_of_bounds_store_names_thread_pc_and_line() {
    let mut k = diamond();
    // Store 4 bytes further: thread 7 writes past the end of `out`.
    let last = k.f.blocks[k.b[3]].insts.len() - 2;
    if let MInstKind::St { addr, .. } = &mut k.f.blocks[k.b[3]].insts[last].kind {
        addr.offset = 4;
    }
    let prog = k.program();
    let (_, mut launch) = prepare(DIAMOND_WIR, DIAMOND_LAUNCH);
    let err = run(&prog, &mut launch, &config(8)).unwrap_err();
    let fault = err.fault().expect("a fault");
    assert!(matches!(fault.kind, FaultKind::OutOfBounds { .. }), "{err}");
    assert_eq!(fault.thread, [7, 0, 0]);
    assert_eq!(fault.block, [0, 0, 0]);
    assert_eq!(fault.code_block, "block3");
    assert_eq!(prog.insts[fault.pc as usize].srcloc, fault.srcloc);
    assert_eq!(fault.srcloc.line, 12);
    let msg = err.to_string();
    assert!(
        msg.contains("kernel %diamond") && msg.contains("thread (7,0,0)"),
        "{msg}"
    );
    assert!(msg.contains("line 12"), "{msg}");
}

#[test]
fn misaligned_access_faults() {
    let mut k = diamond();
    let last = k.f.blocks[k.b[3]].insts.len() - 2;
    if let MInstKind::St { addr, .. } = &mut k.f.blocks[k.b[3]].insts[last].kind {
        addr.offset = 2;
    }
    let prog = k.program();
    let (_, mut launch) = prepare(DIAMOND_WIR, DIAMOND_LAUNCH);
    let err = run(&prog, &mut launch, &config(32)).unwrap_err();
    assert!(matches!(
        err.fault().unwrap().kind,
        FaultKind::Misaligned { .. }
    ));
    assert_eq!(err.fault().unwrap().thread, [0, 0, 0]);
}

#[test]
fn barrier_in_divergent_code_faults_unless_counting_warps() {
    // Only threads below 3 reach the barrier.
    let mut k = diamond();
    k.f.blocks[k.b[1]]
        .insts
        .insert(0, MInst::new(MInstKind::Bar, SourceLoc::new(99, 1)));
    let prog = k.program();
    let (_, launch) = prepare(DIAMOND_WIR, DIAMOND_LAUNCH);
    let err = run(&prog, &mut launch.clone(), &config(8)).unwrap_err();
    let f = err.fault().unwrap();
    assert!(matches!(f.kind, FaultKind::BarrierDivergence(_)), "{err}");
    assert_eq!(f.srcloc.line, 99);
    // Several warps: warp 1 (threads 4-7) returns while warp 0 waits.
    let err = run(&prog, &mut launch.clone(), &config(1)).unwrap_err();
    assert!(matches!(
        err.fault().unwrap().kind,
        FaultKind::BarrierDivergence(_)
    ));
    let lax = MachineConfig::builder()
        .warp_width(8)
        .partial_barrier(PartialBarrier::CountWarp)
        .build()
        .unwrap();
    let mut l = launch.clone();
    run(&prog, &mut l, &lax).unwrap();
    l.memory.check_expectations().unwrap();
}

#[test]
fn limits_fault() {
    let prog = tri_loop(false).program();
    let (_, launch) = prepare(LOOP_WIR, LOOP_LAUNCH);
    let c = MachineConfig::builder()
        .max_warp_instructions(20)
        .build()
        .unwrap();
    let err = run(&prog, &mut launch.clone(), &c).unwrap_err();
    assert!(matches!(
        err.fault().unwrap().kind,
        FaultKind::InstructionLimit(20)
    ));
    let c = MachineConfig::builder().max_cycles(50).build().unwrap();
    let err = run(&prog, &mut launch.clone(), &c).unwrap_err();
    assert!(matches!(
        err.fault().unwrap().kind,
        FaultKind::CycleLimit(50)
    ));
}

#[test]
fn block_too_big_for_an_sm_is_a_setup_error() {
    let prog = reverse().program();
    let (_, mut launch) = prepare(SHARED_WIR, SHARED_LAUNCH);
    let c = MachineConfig::builder().shared_memory(128).build().unwrap();
    let err = run(&prog, &mut launch, &c).unwrap_err();
    assert!(err.to_string().contains("shared memory"), "{err}");
}

#[test]
fn trace_records_block_spans() {
    let prog = fig1().program();
    let (_, mut launch) = prepare(FIG1_WIR, FIG1_LAUNCH);
    let mut trace = Trace::new();
    let s = run_traced(&prog, &mut launch, &config(4), &mut trace).unwrap();
    let spans = trace.events.len() as u64;
    assert_eq!(spans, s.block_executions.values().sum::<u64>());
    let json = trace.to_json();
    assert_eq!(json["traceEvents"][0]["name"], "block0");
    assert_eq!(json["traceEvents"][0]["ph"], "X");
    assert!(trace.events.iter().all(|e| e.ts + e.dur <= s.cycles + 1));
}

#[test]
fn stats_serialise_with_the_documented_keys() {
    let prog = diamond().program();
    let (s, _) = check(&prog, DIAMOND_WIR, DIAMOND_LAUNCH, 4);
    let j = s.to_json();
    for key in [
        "cycles",
        "warp_instructions",
        "thread_instructions",
        "simt_efficiency",
        "block_executions",
        "max_stack_depth",
        "stalls",
        "transactions",
        "occupancy",
    ] {
        assert!(j.get(key).is_some(), "{key}");
    }
    assert!(s.to_string().contains("SIMT efficiency"));
}

#[test]
fn invalid_programs_are_rejected() {
    let mut k = diamond();
    k.f.blocks[k.b[1]].insts.pop(); // no terminator
    assert!(encode(&k.f).is_err());
    let mut prog = diamond().program();
    prog.num_regs[0] = 1; // r1 is used
    assert!(prog.validate().is_err());
    let mut prog = diamond().program();
    prog.blocks.clear();
    assert!(prog.validate().is_err());
    let mut k = diamond();
    k.f.blocks[k.b[1]].insts[0].kind = MInstKind::Bin {
        op: BinOp::Mul,
        ty: MType::I32,
        dst: Reg::virt(0, RegClass::B32),
        a: r(0),
        b: imm(2),
    };
    assert!(encode(&k.f).is_err());
    // A program whose instruction breaks the validator's rules: a float op on i32.
    let mut prog = diamond().program();
    let bin = prog
        .insts
        .iter()
        .position(|i| matches!(i.op, Op::Bin { .. }));
    if let Op::Bin { op, .. } = &mut prog.insts[bin.expect("the diamond computes")].op {
        *op = BinOp::FAdd;
    }
    assert!(prog.validate().is_err());
}
