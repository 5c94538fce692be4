//! The fuzz targets' rate, without libFuzzer: executions per second of the work one input
//! of `cargo fuzz run differential` and `cargo fuzz run ptx` does (generation included),
//! over consecutive seeds.
//!
//! - `differential-one-check`: one pipeline, warp width and register file per input
//!   ([`CheckConfig::single`] enumerates them as the fuzz target's input bytes choose
//!   them), one compilation, one interpreter run, one emulator run;
//! - `differential-all-checks`: what every input cost before, every pipeline at every
//!   width and register file (a few inputs only);
//! - `ptx-batch-64`: 64 kernels compiled to PTX one by one, then assembled by `ptxas` as
//!   one module emitted from their own compilation, unoptimised and for one architecture
//!   (the checked ones in turn), as the fuzz target does ([`PtxBatches`]; skipped without
//!   `ptxas`).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use warplift_codegen::isa::ptx::ptxas::find_ptxas;
use warplift_fuzzgen::{check_case, CheckConfig, GeneratedCase, PtxBatches};

fn bench_fuzz(c: &mut Criterion) {
    let mut group = c.benchmark_group("fuzz");
    group.sample_size(10);
    group.throughput(Throughput::Elements(1));
    let mut seed = 0u64;
    group.bench_function("differential-one-check", |b| {
        b.iter(|| {
            seed += 1;
            let case = GeneratedCase::from_seed(seed);
            check_case(black_box(&case), &CheckConfig::single(seed as usize)).unwrap()
        })
    });
    let all = CheckConfig::default();
    group.bench_function("differential-all-checks", |b| {
        b.iter(|| {
            seed += 1;
            let case = GeneratedCase::from_seed(seed);
            check_case(black_box(&case), &all).unwrap()
        })
    });
    if let Some(ptxas) = find_ptxas() {
        group.throughput(Throughput::Elements(PtxBatches::SIZE as u64));
        let mut batches = PtxBatches::new(Some(ptxas));
        group.bench_function("ptx-batch-64", |b| {
            b.iter(|| {
                // A full queue is assembled as its last kernel is added; a kernel the
                // generator made twice is queued once, so the rest is assembled by `flush`.
                for _ in 0..PtxBatches::SIZE {
                    seed += 1;
                    batches.add(GeneratedCase::from_seed(seed)).unwrap();
                }
                batches.flush().unwrap()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_fuzz);
criterion_main!(benches);
