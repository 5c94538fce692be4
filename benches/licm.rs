//! Loop-invariant code motion: the time of the `licm` pass on kernels of about 1k, 10k
//! and 100k instructions made of loops in sequence, each computing three invariant
//! instructions per iteration, beside the whole SIMT compilation of the same kernel with
//! and without the pass. The pass visits each loop once, innermost first, so it must grow
//! linearly with the kernel.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use std::fmt::Write;
use std::hint::black_box;
use warplift::codegen::analysis::AnalysisCache;
use warplift::codegen::licm::licm;
use warplift::codegen::{lookup_by_name, Context, Settings};
use warplift::ir::parser::parse_function;

/// A kernel of `loops` counted loops in sequence (about 8 instructions each): every
/// iteration computes `(tid * 3 + 1) ^ 2`, invariant, and adds it to a running sum.
fn loop_kernel(loops: usize) -> String {
    let mut s = String::from("kernel %licm_bench(out: i64) {\nblock0(v0: i64):\n");
    s += "    v1 = thread_id x\n    v2 = iconst.i32 1\n    v3 = iconst.i32 0\n";
    s += "    v4 = iconst.i32 3\n    v5 = iconst.i32 2\n    v6 = iconst.i32 4\n";
    s += "    jump block1(v1)\n";
    let mut v = 100;
    for l in 0..loops {
        let (pre, head, next) = (1 + 2 * l, 2 + 2 * l, 3 + 2 * l);
        let (x, i, acc) = (v, v + 1, v + 2);
        let (a, b, c, d, e, f) = (v + 3, v + 4, v + 5, v + 6, v + 7, v + 8);
        v += 9;
        let _ = write!(
            s,
            "block{pre}(v{x}: i32):\n    jump block{head}(v3, v{x})\n\
             block{head}(v{i}: i32, v{acc}: i32):\n    v{a} = imul v1, v4\n    v{b} = iadd v{a}, v2\n    \
             v{c} = bxor v{b}, v5\n    v{d} = iadd v{acc}, v{c}\n    v{e} = iadd v{i}, v2\n    \
             v{f} = icmp slt v{e}, v6\n    brif v{f}, block{head}(v{e}, v{d}), block{next}(v{d})\n"
        );
    }
    let last = 1 + 2 * loops;
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

fn bench_licm(c: &mut Criterion) {
    let mut group = c.benchmark_group("licm");
    group.sample_size(10);
    for size in [1_000, 10_000, 100_000] {
        let func = parse_function(&loop_kernel(size / 8)).unwrap();
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
