//! The kernel of the restructuring bench (`benches/restructure.rs`): Figure 1's short
//! circuit of Reissmann et al. in sequence, shared with the example that writes it to a
//! file (`examples/restructure_kernel.rs`) so that a whole compile can be timed on it.

use std::fmt::Write;

/// A kernel of `units` short circuits in sequence (about 37 instructions each).
pub fn short_circuit_kernel(units: usize) -> String {
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
