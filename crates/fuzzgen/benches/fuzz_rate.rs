//! The fuzz targets' rate, without libFuzzer: executions per second of the work one input
//! of `cargo fuzz run differential` and `cargo fuzz run ptx` does (generation included),
//! over consecutive seeds.
//!
//! - `differential-one-check`: one pipeline, warp width and register file per input
//!   ([`CheckConfig::single`] enumerates them as the fuzz target's input bytes choose
//!   them), one compilation, one interpreter run, one emulator run;
//! - `differential-all-checks`: what every input cost before, every pipeline at every
//!   width and register file (a few inputs only);
//! - `ptx-batch-64`: 64 kernels compiled to PTX one by one, then assembled by `ptxas`
//!   as one module, unoptimised and for one architecture, as the fuzz target does
//!   ([`check_ptx_batch_quick`]; skipped without `ptxas`).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use warplift_codegen::isa::ptx::ptxas::find_ptxas;
use warplift_codegen::{lookup_by_name, Context, Settings};
use warplift_fuzzgen::{check_case, check_ptx_batch_quick, CheckConfig, GeneratedCase};

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
        group.throughput(Throughput::Elements(64));
        let isa = lookup_by_name("ptx", Settings::default()).unwrap();
        group.bench_function("ptx-batch-64", |b| {
            b.iter(|| {
                let cases: Vec<GeneratedCase> = (0..64)
                    .map(|_| {
                        seed += 1;
                        let case = GeneratedCase::from_seed(seed);
                        Context::new().compile(&case.func, isa.as_ref()).unwrap();
                        case
                    })
                    .collect();
                check_ptx_batch_quick(&cases, &ptxas, "sm_80").unwrap()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_fuzz);
criterion_main!(benches);
