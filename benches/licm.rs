//! Loop-invariant code motion: the time of the `licm` pass on kernels of about 1k, 10k
//! and 100k instructions made of loops in sequence, each computing three invariant
//! instructions per iteration, beside the whole SIMT compilation of the same kernel with
//! and without the pass. The pass visits each loop once, innermost first, so it must grow
//! linearly with the kernel.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use warplift::codegen::analysis::AnalysisCache;
use warplift::codegen::licm::licm;
use warplift::codegen::{lookup_by_name, Context, Settings};
use warplift::ir::parser::parse_function;

// The compile-time benches' "loops" shape: counted loops in sequence (about 8 instructions
// each), every iteration computing `(tid * 3 + 1) ^ 2`, invariant, and adding it to a
// running sum.
#[path = "common/shapes.rs"]
#[allow(dead_code)]
mod shapes;

fn bench_licm(c: &mut Criterion) {
    let mut group = c.benchmark_group("licm");
    group.sample_size(10);
    for size in [1_000, 10_000, 100_000] {
        let func = parse_function(&shapes::kernel("loops", size).wir).unwrap();
        let n = func.num_placed_insts() as u64;
        group.throughput(Throughput::Elements(n));
        group.bench_with_input(BenchmarkId::new("pass", n), &func, |b, func| {
            b.iter_batched(
                || func.clone(),
                |mut f| licm(black_box(&mut f), &mut AnalysisCache::new()),
                BatchSize::LargeInput,
            )
        });
        for passes in ["", "licm"] {
            let mut settings = Settings::builder();
            settings.set("verify", "false").unwrap();
            settings.set("passes", passes).unwrap();
            let isa = lookup_by_name("simt", settings.finish()).unwrap();
            let id = BenchmarkId::new(format!("simt[{passes}]"), n);
            group.bench_with_input(id, &func, |b, func| {
                let mut ctx = Context::new();
                b.iter(|| ctx.compile(black_box(func), isa.as_ref()).unwrap())
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_licm);
criterion_main!(benches);
