//! Kernels generated for the benches, shared by every bench file.

use std::fmt::Write;

#[allow(dead_code)]
pub mod shapes;

/// A kernel of about `insts` instructions: a chain of diamonds, each arm doing integer
/// and float arithmetic on the values carried through block parameters.
pub fn generated_kernel(insts: usize) -> String {
    let mut s = String::from("kernel %gen(out: i64) {\nblock0(v0: i64):\n");
    s.push_str("    v1 = thread_id x\n    v2 = iconst.i32 7\n    v3 = f32const 1.5\n");
    s.push_str("    jump block1(v1, v3)\n");
    let diamonds = insts / 16 + 1;
    let mut v = 4;
    for d in 0..diamonds {
        let (head, left, right, join) = (4 * d + 1, 4 * d + 2, 4 * d + 3, 4 * d + 4);
        let (a, f) = (v, v + 1);
        v += 2;
        let _ = writeln!(s, "\nblock{head}(v{a}: i32, v{f}: f32):");
        let _ = writeln!(s, "    v{} = band v{a}, v2", v);
        let _ = writeln!(s, "    v{} = icmp ult v{}, v2", v + 1, v);
        let _ = writeln!(s, "    brif v{}, block{left}, block{right}", v + 1);
        v += 2;
        for (arm, op) in [(left, "iadd"), (right, "isub")] {
            let _ = writeln!(s, "\nblock{arm}:");
            let _ = writeln!(s, "    v{} = {op} v{a}, v2", v);
            let _ = writeln!(s, "    v{} = imul v{}, v{a}", v + 1, v);
            let _ = writeln!(s, "    v{} = fadd v{f}, v3", v + 2);
            let _ = writeln!(s, "    v{} = fmul v{}, v3", v + 3, v + 2);
            let _ = writeln!(s, "    jump block{join}(v{}, v{})", v + 1, v + 3);
            v += 4;
        }
        let (ja, jf) = (v, v + 1);
        v += 2;
        let _ = writeln!(s, "\nblock{join}(v{ja}: i32, v{jf}: f32):");
        let _ = writeln!(s, "    v{} = ushr v{ja}, v2", v);
        let _ = writeln!(s, "    jump block{}(v{}, v{jf})", join + 1, v);
        v += 1;
    }
    let last = 4 * diamonds + 1;
    let _ = writeln!(s, "\nblock{last}(v{}: i32, v{}: f32):", v, v + 1);
    let _ = writeln!(s, "    v{} = uextend.i64 v1", v + 2);
    let _ = writeln!(s, "    v{} = iconst.i64 2", v + 3);
    let _ = writeln!(s, "    v{} = ishl v{}, v{}", v + 4, v + 2, v + 3);
    let _ = writeln!(s, "    v{} = iadd v0, v{}", v + 5, v + 4);
    let _ = writeln!(s, "    store global v{}, v{}", v, v + 5);
    s.push_str("    return\n}\n");
    s
}
