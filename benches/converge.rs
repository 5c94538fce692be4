//! Common Subexpression Convergence: the time of the `converge` pass on kernels of about
//! 1k, 10k and 100k instructions made of divergent diamonds whose arms share expressions
//! (some hoistable, some only sinkable), beside the whole SIMT compilation of the same
//! kernel with and without the pass. The pass is `O(m n²)` over `m` branches with arms
//! of `n` instructions (the paper's Section 3.3): with arms of fixed size it must grow
//! linearly, and stay a small part of compile time.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use std::fmt::Write;
use std::hint::black_box;
use warplift::codegen::converge::{converge, Options};
use warplift::codegen::{lookup_by_name, Context, Settings};
use warplift::ir::parser::parse_function;

/// A kernel of `diamonds` divergent if/else diamonds in sequence (about 24 instructions
/// each): both arms load the same element and scale it (hoistable), then compute an index
/// of their own, load from it and scale (sinkable), and differ in one operation.
fn diamond_kernel(diamonds: usize) -> String {
    let mut s =
        String::from("kernel %converge_bench(a: i64, out: i64) {\nblock0(v0: i64, v1: i64):\n");
    s += "    v2 = thread_id x\n    v3 = iconst.i32 1\n    v4 = band v2, v3\n    v5 = iconst.i32 0\n";
    s += "    v6 = icmp ne v4, v5\n    v7 = iconst.i64 2\n    v8 = uextend.i64 v2\n    v9 = ishl v8, v7\n";
    s += "    v10 = iadd v0, v9\n    jump block1(v2)\n";
    let mut v = 100;
    for d in 0..diamonds {
        let (head, then, els, join) = (1 + 3 * d, 2 + 3 * d, 3 + 3 * d, 4 + 3 * d);
        let acc = v;
        v += 1;
        let _ = writeln!(
            s,
            "block{head}(v{acc}: i32):\n    brif v6, block{then}, block{els}"
        );
        for (arm, op) in [(then, "iadd"), (els, "isub")] {
            let b = v;
            v += 12;
            let _ = write!(
                s,
                "block{arm}:\n    v{l} = load.i32 global v10\n    v{c} = iconst.i32 3\n    v{m} = imul v{l}, v{c}\n    \
                 v{i} = {op} v{acc}, v{m}\n    v{k} = iconst.i32 255\n    v{j} = band v{i}, v{k}\n    \
                 v{x} = uextend.i64 v{j}\n    v{y} = ishl v{x}, v7\n    v{p} = iadd v0, v{y}\n    \
                 v{q} = load.i32 global v{p}\n    v{r} = imul v{q}, v{c}\n    jump block{join}(v{r})\n",
                l = b,
                c = b + 1,
                m = b + 2,
                i = b + 3,
                k = b + 4,
                j = b + 5,
                x = b + 6,
                y = b + 7,
                p = b + 8,
                q = b + 9,
                r = b + 10,
            );
        }
    }
    let last = 1 + 3 * diamonds;
    let _ = write!(
        s,
        "block{last}(v{v}: i32):\n    v{w} = iadd v1, v9\n    store global v{v}, v{w}\n    return\n}}\n",
        w = v + 1
    );
    s
}

fn bench_converge(c: &mut Criterion) {
    let mut group = c.benchmark_group("converge");
    group.sample_size(10);
    for size in [1_000, 10_000, 100_000] {
        let func = parse_function(&diamond_kernel(size / 24)).unwrap();
        let n = func.num_placed_insts() as u64;
        group.throughput(Throughput::Elements(n));
        group.bench_with_input(BenchmarkId::new("pass", n), &func, |b, func| {
            b.iter_batched(
                || func.clone(),
                |mut f| converge(black_box(&mut f), &Options::default()),
                BatchSize::LargeInput,
            )
        });
        for passes in ["", "converge"] {
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

criterion_group!(benches, bench_converge);
criterion_main!(benches);
