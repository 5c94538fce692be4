//! Emulator speed in thread-instructions per second, for an ALU-bound and a memory-bound
//! kernel at warp widths 8, 32 and 64 (`cargo bench -p warplift-emu`), and the functional
//! mode on a grid of 64 blocks at width 32 on 1 and 2 threads (`functional/...`).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::path::Path;
use warplift_codegen::isa::simt::encode;
use warplift_codegen::mir::{
    Address, BinOp, BlockTarget, Cond, CvtOp, MBlock, MInst, MInstKind, MType, MirFunction,
    Operand, Reg, RegClass, SpecialReg,
};
use warplift_emu::{run, run_functional, MachineConfig, Program};
use warplift_ir::launch::{Launch, PreparedLaunch};
use warplift_ir::{AddrSpace, Dim, IntCC, Param, SourceLoc, Type};

const ITERS: i64 = 256;
const BLOCKS: u32 = 8;
const THREADS: u32 = 256;

fn r(i: u32) -> Reg {
    Reg::phys(i, RegClass::B32)
}
fn rd(i: u32) -> Reg {
    Reg::phys(i, RegClass::B64)
}
fn imm(v: i64) -> Operand {
    Operand::Imm(v as u64)
}
fn bin(op: BinOp, ty: MType, dst: Reg, a: Reg, b: Operand) -> MInstKind {
    MInstKind::Bin { op, ty, dst, a, b }
}

/// `block0: setup; block1: loop body ITERS times; block2: store and return`.
fn kernel(name: &str, setup: Vec<MInstKind>, body: Vec<MInstKind>) -> Program {
    let mut f = MirFunction::new(
        name,
        vec![Param {
            name: "out".into(),
            ty: Type::I64,
        }],
    );
    let b: Vec<MBlock> = (0..3).map(|_| f.new_block(None)).collect();
    f.order = b.clone();
    let mut push = |blk: usize, k: MInstKind| {
        f.blocks[b[blk]]
            .insts
            .push(MInst::new(k, SourceLoc::default()))
    };
    for k in setup {
        push(0, k);
    }
    push(
        0,
        MInstKind::Mov {
            ty: MType::I32,
            dst: r(1),
            src: imm(0),
        },
    );
    push(
        0,
        MInstKind::Jump {
            dest: BlockTarget::new(b[1]),
        },
    );
    for k in body {
        push(1, k);
    }
    push(1, bin(BinOp::Add, MType::I32, r(1), r(1), imm(1)));
    push(
        1,
        MInstKind::Setp {
            cond: Cond::Int(IntCC::SignedLessThan),
            ty: MType::I32,
            dst: Reg::phys(0, RegClass::Pred),
            a: r(1),
            b: imm(ITERS),
        },
    );
    push(
        1,
        MInstKind::Branch {
            pred: Reg::phys(0, RegClass::Pred),
            negated: false,
            taken: BlockTarget::new(b[1]),
            not_taken: BlockTarget::new(b[2]),
            divergent: true,
        },
    );
    push(
        2,
        MInstKind::St {
            space: AddrSpace::Global,
            ty: MType::I32,
            src: r(2).into(),
            addr: Address {
                base: Some(rd(1)),
                offset: 0,
            },
        },
    );
    push(2, MInstKind::Ret);
    Program::from_code(&encode(&f).unwrap()).expect("valid program")
}

/// out, tid, and the thread's element address (`rd1`) with a global thread index.
fn setup() -> Vec<MInstKind> {
    vec![
        MInstKind::LdParam {
            ty: MType::I64,
            dst: rd(0),
            index: 0,
        },
        MInstKind::ReadSpecial {
            dst: r(0),
            sreg: SpecialReg::Tid(Dim::X),
        },
        MInstKind::ReadSpecial {
            dst: r(3),
            sreg: SpecialReg::Ctaid(Dim::X),
        },
        MInstKind::Mad {
            ty: MType::I32,
            dst: r(3),
            a: r(3),
            b: imm(i64::from(THREADS)),
            c: r(0).into(),
        },
        MInstKind::Mov {
            ty: MType::I32,
            dst: r(2),
            src: r(3).into(),
        },
        MInstKind::Cvt {
            op: CvtOp::Zext,
            to: MType::I64,
            from: MType::I32,
            dst: rd(1),
            src: r(3),
        },
        MInstKind::Mad {
            ty: MType::I64,
            dst: rd(1),
            a: rd(1),
            b: imm(4),
            c: rd(0).into(),
        },
    ]
}

/// Eight dependent-free integer operations per iteration.
fn alu_kernel() -> Program {
    use BinOp::*;
    let t = MType::I32;
    let body = vec![
        MInstKind::Mad {
            ty: t,
            dst: r(2),
            a: r(2),
            b: imm(3),
            c: imm(1),
        },
        bin(Xor, t, r(4), r(2), r(0).into()),
        bin(Add, t, r(5), r(4), r(1).into()),
        bin(ShrU, t, r(6), r(5), imm(3)),
        bin(Sub, t, r(2), r(5), r(6).into()),
        bin(And, t, r(7), r(2), imm(0xffff)),
        bin(Or, t, r(8), r(7), imm(1)),
        bin(Add, t, r(2), r(2), r(8).into()),
    ];
    kernel("alu", setup(), body)
}

/// A load, an add and a store per iteration, over the thread's own element (coalesced).
fn memory_kernel() -> Program {
    let a = Address {
        base: Some(rd(1)),
        offset: 0,
    };
    let body = vec![
        MInstKind::Ld {
            space: AddrSpace::Global,
            ty: MType::I32,
            dst: r(4),
            addr: a,
        },
        bin(BinOp::Add, MType::I32, r(4), r(4), r(1).into()),
        MInstKind::St {
            space: AddrSpace::Global,
            ty: MType::I32,
            src: r(4).into(),
            addr: a,
        },
    ];
    kernel("mem", setup(), body)
}

fn launch() -> PreparedLaunch {
    launch_of(BLOCKS)
}

/// A launch of `blocks` blocks of [`THREADS`] threads.
fn launch_of(blocks: u32) -> PreparedLaunch {
    let func =
        warplift_ir::parser::parse_function("kernel %k(out: i64) {\nblock0(v0: i64):\n return\n}")
            .expect("parses");
    let toml = format!(
        "grid = [{blocks}]\nblock = [{THREADS}]\n[buffers.out]\ntype = \"i32\"\nlen = {}\n\
         init = \"zeros\"\n",
        blocks * THREADS
    );
    Launch::from_toml_str(&toml, Path::new("bench.launch.toml"))
        .and_then(|l| l.prepare(&func))
        .expect("launch")
}

fn bench(c: &mut Criterion) {
    let base = launch();
    for (name, prog) in [("alu", alu_kernel()), ("memory", memory_kernel())] {
        let mut group = c.benchmark_group(format!("emulate/{name}"));
        group.sample_size(10);
        for width in [8, 32, 64] {
            let config = MachineConfig::builder()
                .warp_width(width)
                .build()
                .expect("config");
            let stats = run(&prog, &mut base.clone(), &config).expect("runs");
            group.throughput(Throughput::Elements(stats.thread_instructions));
            group.bench_with_input(BenchmarkId::from_parameter(width), &width, |b, _| {
                b.iter(|| run(&prog, &mut base.clone(), &config).expect("runs"))
            });
        }
        group.finish();
    }
    // The functional mode against the timed one on the same 64 blocks.
    let grid = launch_of(64);
    let config = MachineConfig::default();
    for (name, prog) in [("alu", alu_kernel()), ("memory", memory_kernel())] {
        let mut group = c.benchmark_group(format!("functional/{name}"));
        group.sample_size(10);
        let stats = run(&prog, &mut grid.clone(), &config).expect("runs");
        group.throughput(Throughput::Elements(stats.thread_instructions));
        group.bench_function("timed", |b| {
            b.iter(|| run(&prog, &mut grid.clone(), &config).expect("runs"))
        });
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("thread pool");
            group.bench_function(format!("threads={threads}"), |b| {
                b.iter(|| {
                    pool.install(|| run_functional(&prog, &mut grid.clone(), &config))
                        .expect("runs")
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
