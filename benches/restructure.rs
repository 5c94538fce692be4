//! Restructuring (Reissmann et al., "Efficient Control Flow Restructuring for GPUs"): the
//! time of the `restructure` pass on kernels of about 1k, 10k and 100k IR instructions
//! made of Figure 1's short circuit (`if (c || d) S1; else S2; S3;`, both conditions
//! divergent) in sequence, a value carried through every block. Two modes: the selective
//! default (one small unstructured region per short circuit, each priced by the cost
//! model) and the whole kernel as one region (`restructure_regions=kernel`). Throughput is
//! in IR instructions: the cost per instruction must not grow more than 2x from 1k to
//! 100k.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use warplift::codegen::linearize::RegionMode;
use warplift::codegen::restructure::{restructure, Options};
use warplift::ir::parser::parse_function;

#[path = "common/short_circuit.rs"]
mod short_circuit;
use short_circuit::short_circuit_kernel;

fn bench_restructure(c: &mut Criterion) {
    let mut group = c.benchmark_group("restructure");
    group.sample_size(10);
    for units in [27, 270, 2700] {
        let func = parse_function(&short_circuit_kernel(units)).expect("the kernel parses");
        let n = func.num_placed_insts() as u64;
        group.throughput(Throughput::Elements(n));
        for (label, regions) in [
            ("selective", RegionMode::Divergent),
            ("kernel", RegionMode::Kernel),
        ] {
            let options = Options {
                regions,
                ..Options::default()
            };
            // Every unit is restructured (the cost model says it pays).
            let mut probe = func.clone();
            let outcome = restructure(&mut probe, &options);
            assert!(
                outcome.restructured > 0 && outcome.skipped.is_empty(),
                "{label}"
            );
            group.bench_with_input(BenchmarkId::new(label, n), &func, |b, func| {
                b.iter_batched(
                    || func.clone(),
                    |mut f| black_box(restructure(&mut f, &options)),
                    BatchSize::LargeInput,
                )
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_restructure);
criterion_main!(benches);
