//! Restructuring (Reissmann et al., "Efficient Control Flow Restructuring for GPUs"): the
//! time of the `restructure` pass on kernels of about 1k, 10k and 100k IR instructions
//! made of Figure 1's short circuit (`if (c || d) S1; else S2; S3;`, both conditions
//! divergent) in sequence, a value carried through every block. Two modes: the selective
//! default (one small unstructured region per short circuit, each priced by the cost
//! model) and the whole kernel as one region (`restructure_regions=kernel`). Throughput is
//! in IR instructions: the cost per instruction must not grow more than 2x from 1k to
//! 100k.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use std::fmt::Write;
use std::hint::black_box;
use warplift::codegen::linearize::RegionMode;
use warplift::codegen::restructure::{restructure, Options};
use warplift::ir::parser::parse_function;

/// A kernel of `units` short circuits in sequence (about 37 instructions each).
fn short_circuit_kernel(units: usize) -> String {
    let mut s = String::from("kernel %restructure_bench(out: i64) {\nblock0(v0: i64):\n");
    s += "    v1 = thread_id x\n    v2 = iconst.i32 1\n    v3 = iconst.i32 0\n";
    s += "    v4 = band v1, v2\n    v5 = icmp ne v4, v3\n    v6 = iconst.i32 2\n";
    s += "    v7 = band v1, v6\n    v8 = icmp ne v7, v3\n    v9 = iconst.i32 3\n";
    s += "    jump block1(v1)\n";
    let mut v = 100;
    // Three instructions of work on `x`, the last result returned.
    let mut work = |s: &mut String, x: usize| -> usize {
        let (a, b, c) = (v, v + 1, v + 2);
        v += 3;
        let _ = write!(
            s,
            "    v{a} = imul v{x}, v9\n    v{b} = iadd v{a}, v2\n    v{c} = bxor v{b}, v6\n"
        );
        c
    };
    for u in 0..units {
        let (head, d, s1, s2) = (1 + 4 * u, 2 + 4 * u, 3 + 4 * u, 4 + 4 * u);
        let next = 5 + 4 * u;
        let p = |k: usize| 10_000_000 + 8 * u + k;
        let _ = writeln!(s, "block{head}(v{}: i32):", p(0));
        let x = work(&mut s, p(0));
        let _ = writeln!(s, "    brif v5, block{s1}(v{x}), block{d}(v{x})");
        let _ = writeln!(s, "block{d}(v{}: i32):", p(1));
        let x = work(&mut s, p(1));
        let _ = writeln!(s, "    brif v8, block{s1}(v{x}), block{s2}(v{x})");
        // S1, the block the plain kernel runs twice, is heavy enough for restructuring
        // to pay.
        for (blk, k, rounds) in [(s1, 2, 8), (s2, 3, 1)] {
            let _ = writeln!(s, "block{blk}(v{}: i32):", p(k));
            let mut x = p(k);
            for _ in 0..rounds {
                x = work(&mut s, x);
            }
            let _ = writeln!(s, "    jump block{next}(v{x})");
        }
    }
    let last = 1 + 4 * units;
    let _ = write!(
        s,
        "block{last}(v{v}: i32):\n    v{a} = uextend.i64 v1\n    v{b} = iconst.i64 2\n    \
         v{c} = ishl v{a}, v{b}\n    v{d} = iadd v0, v{c}\n    store global v{v}, v{d}\n    return\n}}\n",
        a = v + 1,
        b = v + 2,
        c = v + 3,
        d = v + 4,
    );
    s
}

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
