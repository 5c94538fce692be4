//! Throughput of the IR front half: parsing, verifying and interpreting generated kernels
//! of growing size. Parse and verify report IR instructions per second; the interpreter
//! reports thread-instructions per second.

mod common;

use common::generated_kernel;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use warplift::ir::interp::{self, InterpConfig};
use warplift::ir::launch::Launch;
use warplift::ir::parser::parse_function;
use warplift::ir::verifier::verify_function;

fn bench_front_end(c: &mut Criterion) {
    let mut group = c.benchmark_group("front_end");
    for size in [1_000, 10_000, 100_000] {
        let text = generated_kernel(size);
        let func = parse_function(&text).expect("the generated kernel parses");
        let n = func.num_placed_insts() as u64;
        group.throughput(Throughput::Elements(n));
        group.bench_with_input(BenchmarkId::new("parse", n), &text, |b, text| {
            b.iter(|| parse_function(black_box(text)).unwrap())
        });
        group.bench_with_input(BenchmarkId::new("verify", n), &func, |b, func| {
            b.iter(|| verify_function(black_box(func)).unwrap())
        });
    }
    group.finish();
}

fn bench_interpreter(c: &mut Criterion) {
    let mut group = c.benchmark_group("interpreter");
    group.sample_size(10);
    let text = generated_kernel(1_000);
    let func = parse_function(&text).unwrap();
    let mut launch = Launch::default();
    launch.set_block("256").unwrap();
    launch.add_buffer("out=i32[256]:zeros").unwrap();
    let prepared = launch.prepare(&func).unwrap();
    let config = InterpConfig::default();
    let steps = interp::run(&func, &mut prepared.clone(), &config)
        .unwrap()
        .insts_executed;
    group.throughput(Throughput::Elements(steps));
    group.bench_function(BenchmarkId::new("thread_instructions", steps), |b| {
        b.iter(|| interp::run(&func, &mut prepared.clone(), &config).unwrap())
    });
    group.finish();
}

criterion_group!(benches, bench_front_end, bench_interpreter);
criterion_main!(benches);
