//! Compile throughput: IR instructions per second through lowering and register
//! allocation (and through the whole pipeline to each target, and with the whole kernel
//! linearized), on generated kernels of about 1k, 10k and 100k instructions.

mod common;

use common::generated_kernel;
use common::shapes::{kernel, SHAPES};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use warplift::codegen::lower::lower;
use warplift::codegen::regalloc::{allocate_with, AllocOptions, RegisterFile, ReservationRequest};
use warplift::codegen::{lookup_by_name, Context, Settings};
use warplift::ir::parser::parse_function;

fn bench_lower_and_allocate(c: &mut Criterion) {
    let mut group = c.benchmark_group("codegen");
    group.sample_size(10);
    let options = AllocOptions {
        check: false,
        ..AllocOptions::default()
    };
    for size in [1_000, 10_000, 100_000] {
        let func = parse_function(&generated_kernel(size)).unwrap();
        let n = func.num_placed_insts() as u64;
        group.throughput(Throughput::Elements(n));
        group.bench_with_input(BenchmarkId::new("lower+regalloc", n), &func, |b, func| {
            b.iter(|| {
                let mir = lower(black_box(func)).unwrap();
                allocate_with(
                    &mir,
                    &RegisterFile::MAX,
                    &ReservationRequest::none(),
                    &options,
                )
                .unwrap()
            })
        });
        for target in ["ptx", "simt"] {
            let mut settings = Settings::builder();
            settings.set("verify", "false").unwrap();
            let isa = lookup_by_name(target, settings.finish()).unwrap();
            group.bench_with_input(BenchmarkId::new(target, n), &func, |b, func| {
                let mut ctx = Context::new();
                b.iter(|| ctx.compile(black_box(func), isa.as_ref()).unwrap())
            });
        }
        // The whole kernel linearized (every block guarded), without and with the guard
        // optimisations, whose structure checks must stay near-linear.
        for opt in ["0", "3"] {
            let mut settings = Settings::builder();
            for (name, value) in [
                ("verify", "false"),
                ("passes", "linearize"),
                ("linearize_regions", "kernel"),
                ("linearize_opt", opt),
            ] {
                settings.set(name, value).unwrap();
            }
            let isa = lookup_by_name("simt", settings.finish()).unwrap();
            let id = BenchmarkId::new(format!("simt+linearize-O{opt}"), n);
            group.bench_with_input(id, &func, |b, func| {
                let mut ctx = Context::new();
                b.iter(|| ctx.compile(black_box(func), isa.as_ref()).unwrap())
            });
        }
    }
    group.finish();
}

/// The shapes of `scripts/compile-time.sh` (straight, branchy and loops kernels: one block;
/// a chain of diamonds and short-circuit regions on thread-dependent conditions; counted
/// loops in sequence, the kernel-wide values live across all of them), compiled
/// to PTX plainly and with each linearization pass, whose cost must stay a small multiple
/// of the plain compile at every size.
fn bench_shapes(c: &mut Criterion) {
    let mut group = c.benchmark_group("shapes");
    group.sample_size(10);
    for shape in SHAPES {
        for size in [1_000, 10_000, 100_000] {
            let func = parse_function(&kernel(shape, size).wir).unwrap();
            let n = func.num_placed_insts() as u64;
            group.throughput(Throughput::Elements(n));
            for passes in ["", "linearize", "linearize_ssa"] {
                let mut settings = Settings::builder();
                settings.set("verify", "false").unwrap();
                settings.set("passes", passes).unwrap();
                let isa = lookup_by_name("ptx", settings.finish()).unwrap();
                let name = match passes {
                    "" => format!("{shape}/ptx"),
                    p => format!("{shape}/ptx+{p}"),
                };
                group.bench_with_input(BenchmarkId::new(name, n), &func, |b, func| {
                    let mut ctx = Context::new();
                    b.iter(|| ctx.compile(black_box(func), isa.as_ref()).unwrap())
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, bench_lower_and_allocate, bench_shapes);
criterion_main!(benches);
