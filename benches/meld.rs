//! Control-flow melding: the time of the `meld` pass on a kernel whose one divergent
//! branch has arms of 10, 100 and 1000 instructions (alignment is quadratic in the arm
//! length: the `meld_align_limit` setting bounds it), and the whole SIMT compilation of
//! kernels of about 1k, 10k and 100k instructions made of divergent diamonds (`simt`), or
//! of regions that are each a candidate for region replication (`simt-rep`: a single
//! block against an if-then region), with and without the pass (it must stay within
//! 10x).

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use std::fmt::Write;
use std::hint::black_box;
use warplift::codegen::meld::{meld, Options};
use warplift::codegen::{lookup_by_name, Context, Settings};
use warplift::ir::parser::parse_function;

/// One arm of `len` instructions: a chain of loads and arithmetic on the accumulator
/// `acc`, the two arms differing in every fifth operation (so that alignment has gaps).
fn arm(s: &mut String, v: &mut usize, acc: usize, len: usize, other: bool) -> usize {
    let ops = ["iadd", "imul", "bxor", "isub", "band"];
    let mut cur = acc;
    let mut n = 0;
    while n + 1 < len {
        let op = if other && (n / 2) % 5 == 4 {
            "bor"
        } else {
            ops[(n / 2) % 5]
        };
        let (k, r) = (*v, *v + 1);
        *v += 2;
        let _ = writeln!(
            s,
            "    v{k} = iconst.i32 {}\n    v{r} = {op} v{cur}, v{k}",
            n % 13 + 1
        );
        cur = r;
        n += 2;
    }
    cur
}

/// A kernel of `diamonds` divergent diamonds in sequence, arms of `len` instructions.
fn kernel(diamonds: usize, len: usize) -> String {
    let mut s = String::from("kernel %meld_bench(out: i64) {\nblock0(v0: i64):\n");
    s += "    v1 = thread_id x\n    v2 = iconst.i32 1\n    v3 = band v1, v2\n    v4 = iconst.i32 0\n";
    s += "    v5 = icmp ne v3, v4\n    jump block1(v1)\n";
    let mut v = 100;
    for d in 0..diamonds {
        let (head, then, els, join) = (1 + 3 * d, 2 + 3 * d, 3 + 3 * d, 4 + 3 * d);
        let acc = v;
        v += 1;
        let _ = writeln!(
            s,
            "block{head}(v{acc}: i32):\n    brif v5, block{then}, block{els}"
        );
        let _ = writeln!(s, "block{then}:");
        let r = arm(&mut s, &mut v, acc, len, false);
        let _ = writeln!(s, "    jump block{join}(v{r})\nblock{els}:");
        let r = arm(&mut s, &mut v, acc, len, true);
        let _ = writeln!(s, "    jump block{join}(v{r})");
    }
    let last = 1 + 3 * diamonds;
    finish(s, last, v)
}

/// Closes a generated kernel: its last block `last` takes the final value `v` and stores
/// it at the thread's slot of `out`.
fn finish(mut s: String, last: usize, v: usize) -> String {
    let _ = write!(
        s,
        "block{last}(v{v}: i32):\n    v{w} = uextend.i64 v1\n    v{x} = iadd v0, v{w}\n    store global v{v}, v{x}\n    return\n}}\n",
        w = v + 1,
        x = v + 2
    );
    s
}

/// A kernel of `diamonds` divergent regions in sequence, each a single block of `len`
/// instructions against an if-then region whose `then` block is like it: every region
/// is a candidate for region replication (the single block placed at the `then` block).
fn kernel_replicated(diamonds: usize, len: usize) -> String {
    let mut s = String::from("kernel %meld_bench_rep(out: i64) {\nblock0(v0: i64):\n");
    s += "    v1 = thread_id x\n    v2 = iconst.i32 1\n    v3 = band v1, v2\n    v4 = iconst.i32 0\n";
    s += "    v5 = icmp ne v3, v4\n    v6 = iconst.i32 2\n    v7 = band v1, v6\n";
    s += "    v8 = icmp ne v7, v4\n    jump block1(v1)\n";
    let mut v = 100;
    for d in 0..diamonds {
        let (head, then, els, inner, join) =
            (1 + 4 * d, 2 + 4 * d, 3 + 4 * d, 4 + 4 * d, 5 + 4 * d);
        let acc = v;
        v += 1;
        let _ = writeln!(
            s,
            "block{head}(v{acc}: i32):\n    brif v5, block{then}, block{els}"
        );
        let _ = writeln!(s, "block{then}:");
        let r = arm(&mut s, &mut v, acc, len, false);
        let _ = writeln!(
            s,
            "    jump block{join}(v{r})\nblock{els}:\n    brif v8, block{inner}, block{join}(v{acc})\nblock{inner}:"
        );
        let r = arm(&mut s, &mut v, acc, len, true);
        let _ = writeln!(s, "    jump block{join}(v{r})");
    }
    let last = 1 + 4 * diamonds;
    finish(s, last, v)
}

fn bench_meld(c: &mut Criterion) {
    let mut group = c.benchmark_group("meld");
    group.sample_size(10);
    for len in [10, 100, 1000] {
        let func = parse_function(&kernel(1, len)).unwrap();
        group.throughput(Throughput::Elements(func.num_placed_insts() as u64));
        group.bench_with_input(BenchmarkId::new("arms", len), &func, |b, func| {
            b.iter_batched(
                || func.clone(),
                |mut f| meld(black_box(&mut f), &Options::default()),
                BatchSize::LargeInput,
            )
        });
    }
    for (size, replicated) in [1_000, 10_000, 100_000]
        .into_iter()
        .flat_map(|n| [(n, false), (n, true)])
    {
        let text = if replicated {
            kernel_replicated(size / 45, 20)
        } else {
            kernel(size / 44, 20)
        };
        let func = parse_function(&text).unwrap();
        let n = func.num_placed_insts() as u64;
        group.throughput(Throughput::Elements(n));
        let name = if replicated { "simt-rep" } else { "simt" };
        for passes in ["", "meld"] {
            let mut settings = Settings::builder();
            settings.set("verify", "false").unwrap();
            settings.set("passes", passes).unwrap();
            let isa = lookup_by_name("simt", settings.finish()).unwrap();
            let id = BenchmarkId::new(format!("{name}[{passes}]"), n);
            group.bench_with_input(id, &func, |b, func| {
                let mut ctx = Context::new();
                b.iter(|| ctx.compile(black_box(func), isa.as_ref()).unwrap())
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_meld);
criterion_main!(benches);
