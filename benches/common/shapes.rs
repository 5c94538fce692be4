//! The two kernel shapes of the compile-time comparison, each written both in warplift's
//! text format and as the equivalent LLVM function (for `llc -march=nvptx64`):
//!
//! - **straight**: one block of integer and float arithmetic over a sliding window of
//!   earlier values (nothing folds away), ending in one store;
//! - **branchy**: a chain alternating diamonds (`if c then A else B`) and short-circuit
//!   regions (`if c1 && c2 then A else B`, an unstructured region), every condition
//!   thread-dependent, the running values carried through block parameters (phis in
//!   LLVM), and the kernel-wide values (the output address, the thread id, constants)
//!   read all along the chain;
//! - **loops**: counted loops in sequence (four iterations each, about 8 instructions per
//!   loop), every iteration computing an invariant value from the thread id and adding it
//!   to a sum carried from loop to loop through block parameters (phis in LLVM), so the
//!   kernel-wide values live across every loop.
//!
//! Sizes are in IR instructions (terminators included), to within one region.

use std::fmt::Write;

/// A generated kernel in both languages.
pub struct Kernel {
    /// The kernel's name: `straight`, `branchy` or `loops`.
    pub name: &'static str,
    /// warplift text.
    pub wir: String,
    /// The equivalent LLVM IR (LLVM 14 syntax, typed pointers).
    pub ll: String,
}

/// The shapes, by name.
pub const SHAPES: [&str; 3] = ["straight", "branchy", "loops"];

/// The kernel of shape `name` with about `insts` instructions.
pub fn kernel(name: &str, insts: usize) -> Kernel {
    match name {
        "straight" => straight(insts),
        "branchy" => branchy(insts),
        "loops" => loops(insts),
        other => panic!("unknown shape {other}"),
    }
}

fn ll_header(name: &str) -> String {
    format!(
        "target datalayout = \"e-i64:64-i128:128-v16:16-v32:32-n16:32:64\"\n\
         target triple = \"nvptx64-nvidia-cuda\"\n\n\
         declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n\n\
         define void @{name}(i32 addrspace(1)* %out) {{\n"
    )
}

fn ll_footer(name: &str) -> String {
    format!(
        "}}\n\n!nvvm.annotations = !{{!0}}\n\
         !0 = !{{void (i32 addrspace(1)*)* @{name}, !\"kernel\", i32 1}}\n"
    )
}

/// One block: three integer operations for every float one, each reading the last value
/// of its kind and one a few steps back.
fn straight(insts: usize) -> Kernel {
    let mut wir = String::from("kernel %straight(out: i64) {\nblock0(v0: i64):\n");
    wir.push_str("    v1 = thread_id x\n    v2 = fcvt_from_sint.f32 v1\n");
    wir.push_str("    v3 = iconst.i32 7\n    v4 = iadd v1, v3\n");
    let mut ll = ll_header("straight");
    ll.push_str("entry:\n  %v1 = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n");
    ll.push_str("  %v2 = sitofp i32 %v1 to float\n  %v4 = add i32 %v1, 7\n");
    let mut ints = vec![1usize, 4];
    let mut floats = vec![2usize];
    let mut v = 5;
    let body = insts.saturating_sub(12).max(4);
    for k in 0..body {
        if k % 4 == 3 {
            let a = floats[floats.len() - 1];
            let b = floats[floats.len().saturating_sub(3)];
            let (op, lop) = if k % 8 == 3 {
                ("fadd", "fadd")
            } else {
                ("fmul", "fmul")
            };
            let _ = writeln!(wir, "    v{v} = {op} v{a}, v{b}");
            let _ = writeln!(ll, "  %v{v} = {lop} float %v{a}, %v{b}");
            floats.push(v);
        } else {
            let a = ints[ints.len() - 1];
            let b = ints[ints.len().saturating_sub(3)];
            let (op, lop) = [("iadd", "add"), ("imul", "mul"), ("bxor", "xor")][k % 3];
            let _ = writeln!(wir, "    v{v} = {op} v{a}, v{b}");
            let _ = writeln!(ll, "  %v{v} = {lop} i32 %v{a}, %v{b}");
            ints.push(v);
        }
        v += 1;
    }
    let (i, f) = (ints[ints.len() - 1], floats[floats.len() - 1]);
    let _ = writeln!(wir, "    v{} = fcvt_to_sint.i32 v{f}", v);
    let _ = writeln!(wir, "    v{} = iadd v{i}, v{}", v + 1, v);
    let _ = writeln!(wir, "    v{} = uextend.i64 v1", v + 2);
    let _ = writeln!(wir, "    v{} = iconst.i64 2", v + 3);
    let _ = writeln!(wir, "    v{} = ishl v{}, v{}", v + 4, v + 2, v + 3);
    let _ = writeln!(wir, "    v{} = iadd v0, v{}", v + 5, v + 4);
    let _ = writeln!(wir, "    store global v{}, v{}", v + 1, v + 5);
    wir.push_str("    return\n}\n");
    let _ = writeln!(ll, "  %v{v} = fptosi float %v{f} to i32");
    let _ = writeln!(ll, "  %v{} = add i32 %v{i}, %v{v}", v + 1);
    let _ = writeln!(ll, "  %v{} = zext i32 %v1 to i64", v + 2);
    let _ = writeln!(
        ll,
        "  %p = getelementptr i32, i32 addrspace(1)* %out, i64 %v{}",
        v + 2
    );
    let _ = writeln!(ll, "  store i32 %v{}, i32 addrspace(1)* %p", v + 1);
    ll.push_str("  ret void\n");
    ll.push_str(&ll_footer("straight"));
    Kernel {
        name: "straight",
        wir,
        ll,
    }
}

/// `%v<dst> = phi <ty> [ %v<value>, %<block> ], ...` in LLVM.
fn phi<'a>(ll: &mut String, dst: usize, ty: &str, srcs: impl Iterator<Item = (&'a String, usize)>) {
    let srcs: Vec<String> = srcs.map(|(b, v)| format!("[ %v{v}, %{b} ]")).collect();
    let _ = writeln!(ll, "  %v{dst} = phi {ty} {}", srcs.join(", "));
}

/// A chain of regions over `(a: i32, f: f32)`: even regions are diamonds (15
/// instructions), odd ones short-circuit `&&` regions (18 instructions).
fn branchy(insts: usize) -> Kernel {
    let mut wir = String::from("kernel %branchy(out: i64) {\nblock0(v0: i64):\n");
    wir.push_str("    v1 = thread_id x\n    v2 = iconst.i32 7\n    v3 = f32const 1.5\n");
    wir.push_str("    v4 = iconst.i32 3\n    v5 = fcvt_from_sint.f32 v1\n");
    wir.push_str("    jump block1(v1, v5)\n");
    let mut ll = ll_header("branchy");
    ll.push_str("entry:\n  %v1 = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n");
    ll.push_str("  %v5 = sitofp i32 %v1 to float\n  br label %b1\n");
    // LLVM names the constants inline; warplift reads them from v2, v3, v4.
    let lconst = |v: usize| match v {
        2 => "7".to_string(),
        3 => "1.5".to_string(),
        4 => "3".to_string(),
        _ => format!("%v{v}"),
    };
    // The incoming edges of the next region's head: (block, a, f) in LLVM.
    let mut incoming = vec![("entry".to_string(), 1usize, 5usize)];
    let mut v = 6;
    let mut block = 1;
    let regions = insts / 16 + 1;
    for r in 0..regions {
        let head = block;
        let (a, f) = (v, v + 1);
        v += 2;
        let _ = writeln!(wir, "\nblock{head}(v{a}: i32, v{f}: f32):");
        let _ = writeln!(ll, "b{head}:");
        phi(&mut ll, a, "i32", incoming.iter().map(|e| (&e.0, e.1)));
        phi(&mut ll, f, "float", incoming.iter().map(|e| (&e.0, e.2)));
        let (t, c) = (v, v + 1);
        v += 2;
        let _ = writeln!(wir, "    v{t} = band v{a}, v2");
        let _ = writeln!(wir, "    v{c} = icmp ult v{t}, v4");
        let _ = writeln!(ll, "  %v{t} = and i32 %v{a}, 7");
        let _ = writeln!(ll, "  %v{c} = icmp ult i32 %v{t}, 3");
        let (left, right, join);
        if r % 2 == 0 {
            (left, right, join) = (head + 1, head + 2, head + 3);
            block = head + 4;
        } else {
            // head -> second test (left) or else (right); the test -> then or else.
            let test = head + 1;
            (left, right, join) = (head + 2, head + 3, head + 4);
            block = head + 5;
            let _ = writeln!(wir, "    brif v{c}, block{test}, block{right}");
            let _ = writeln!(ll, "  br i1 %v{c}, label %b{test}, label %b{right}");
            let (t2, c2) = (v, v + 1);
            v += 2;
            let _ = writeln!(wir, "\nblock{test}:");
            let _ = writeln!(wir, "    v{t2} = bxor v{a}, v1");
            let _ = writeln!(wir, "    v{c2} = icmp ugt v{t2}, v2");
            let _ = writeln!(wir, "    brif v{c2}, block{left}, block{right}");
            let _ = writeln!(ll, "b{test}:");
            let _ = writeln!(ll, "  %v{t2} = xor i32 %v{a}, %v1");
            let _ = writeln!(ll, "  %v{c2} = icmp ugt i32 %v{t2}, 7");
            let _ = writeln!(ll, "  br i1 %v{c2}, label %b{left}, label %b{right}");
        }
        if r % 2 == 0 {
            let _ = writeln!(wir, "    brif v{c}, block{left}, block{right}");
            let _ = writeln!(ll, "  br i1 %v{c}, label %b{left}, label %b{right}");
        }
        let mut outs = Vec::new();
        for (arm, op, lop) in [(left, "iadd", "add"), (right, "isub", "sub")] {
            let _ = writeln!(wir, "\nblock{arm}:");
            let _ = writeln!(wir, "    v{} = {op} v{a}, v2", v);
            let _ = writeln!(wir, "    v{} = imul v{}, v{a}", v + 1, v);
            let _ = writeln!(wir, "    v{} = fadd v{f}, v3", v + 2);
            let _ = writeln!(wir, "    v{} = fmul v{}, v3", v + 3, v + 2);
            let _ = writeln!(wir, "    jump block{join}(v{}, v{})", v + 1, v + 3);
            let _ = writeln!(ll, "b{arm}:");
            let _ = writeln!(ll, "  %v{} = {lop} i32 %v{a}, {}", v, lconst(2));
            let _ = writeln!(ll, "  %v{} = mul i32 %v{}, %v{a}", v + 1, v);
            let _ = writeln!(ll, "  %v{} = fadd float %v{f}, {}", v + 2, lconst(3));
            let _ = writeln!(ll, "  %v{} = fmul float %v{}, {}", v + 3, v + 2, lconst(3));
            let _ = writeln!(ll, "  br label %b{join}");
            outs.push((format!("b{arm}"), v + 1, v + 3));
            v += 4;
        }
        let (ja, jf) = (v, v + 1);
        v += 2;
        let _ = writeln!(wir, "\nblock{join}(v{ja}: i32, v{jf}: f32):");
        let _ = writeln!(ll, "b{join}:");
        phi(&mut ll, ja, "i32", outs.iter().map(|e| (&e.0, e.1)));
        phi(&mut ll, jf, "float", outs.iter().map(|e| (&e.0, e.2)));
        let _ = writeln!(wir, "    v{} = ushr v{ja}, v4", v);
        let _ = writeln!(wir, "    jump block{block}(v{}, v{jf})", v);
        let _ = writeln!(ll, "  %v{} = lshr i32 %v{ja}, 3", v);
        let _ = writeln!(ll, "  br label %b{block}");
        incoming = vec![(format!("b{join}"), v, jf)];
        v += 1;
    }
    let (a, f) = (v, v + 1);
    let _ = writeln!(wir, "\nblock{block}(v{a}: i32, v{f}: f32):");
    let _ = writeln!(wir, "    v{} = fcvt_to_sint.i32 v{f}", v + 2);
    let _ = writeln!(wir, "    v{} = iadd v{a}, v{}", v + 3, v + 2);
    let _ = writeln!(wir, "    v{} = uextend.i64 v1", v + 4);
    let _ = writeln!(wir, "    v{} = iconst.i64 2", v + 5);
    let _ = writeln!(wir, "    v{} = ishl v{}, v{}", v + 6, v + 4, v + 5);
    let _ = writeln!(wir, "    v{} = iadd v0, v{}", v + 7, v + 6);
    let _ = writeln!(wir, "    store global v{}, v{}", v + 3, v + 7);
    wir.push_str("    return\n}\n");
    let _ = writeln!(ll, "b{block}:");
    let (from, ia, fa) = &incoming[0];
    let _ = writeln!(ll, "  %v{a} = phi i32 [ %v{ia}, %{from} ]");
    let _ = writeln!(ll, "  %v{f} = phi float [ %v{fa}, %{from} ]");
    let _ = writeln!(ll, "  %v{} = fptosi float %v{f} to i32", v + 2);
    let _ = writeln!(ll, "  %v{} = add i32 %v{a}, %v{}", v + 3, v + 2);
    let _ = writeln!(ll, "  %v{} = zext i32 %v1 to i64", v + 4);
    let _ = writeln!(
        ll,
        "  %p = getelementptr i32, i32 addrspace(1)* %out, i64 %v{}",
        v + 4
    );
    let _ = writeln!(ll, "  store i32 %v{}, i32 addrspace(1)* %p", v + 3);
    ll.push_str("  ret void\n");
    ll.push_str(&ll_footer("branchy"));
    Kernel {
        name: "branchy",
        wir,
        ll,
    }
}

/// `insts / 8` counted loops in sequence. Loop `l` is a preheader taking the running sum
/// and a header-latch block running four times: `sum += (tid * 3 + 1) ^ 2` (invariant in
/// the loop, which `licm` hoists), `i += 1`, `i < 4`. The kernel-wide values (the thread
/// id, the constants) are read in every loop.
fn loops(insts: usize) -> Kernel {
    let loops = insts / 8;
    let mut wir = String::from("kernel %loops(out: i64) {\nblock0(v0: i64):\n");
    wir.push_str("    v1 = thread_id x\n    v2 = iconst.i32 1\n    v3 = iconst.i32 0\n");
    wir.push_str("    v4 = iconst.i32 3\n    v5 = iconst.i32 2\n    v6 = iconst.i32 4\n");
    wir.push_str("    jump block1(v1)\n");
    let mut ll = ll_header("loops");
    ll.push_str("entry:\n  %v1 = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n  br label %b1\n");
    // The block the next preheader is entered from, and the value it passes.
    let (mut from, mut passed) = ("entry".to_string(), 1);
    let mut v = 100;
    for l in 0..loops {
        let (pre, head, next) = (1 + 2 * l, 2 + 2 * l, 3 + 2 * l);
        let (x, i, acc) = (v, v + 1, v + 2);
        let (a, b, c, d, e, f) = (v + 3, v + 4, v + 5, v + 6, v + 7, v + 8);
        v += 9;
        let _ = write!(
            wir,
            "block{pre}(v{x}: i32):\n    jump block{head}(v3, v{x})\n\
             block{head}(v{i}: i32, v{acc}: i32):\n    v{a} = imul v1, v4\n    \
             v{b} = iadd v{a}, v2\n    v{c} = bxor v{b}, v5\n    v{d} = iadd v{acc}, v{c}\n    \
             v{e} = iadd v{i}, v2\n    v{f} = icmp slt v{e}, v6\n    \
             brif v{f}, block{head}(v{e}, v{d}), block{next}(v{d})\n"
        );
        let _ = write!(
            ll,
            "b{pre}:\n  %v{x} = phi i32 [ %v{passed}, %{from} ]\n  br label %b{head}\n\
             b{head}:\n  %v{i} = phi i32 [ 0, %b{pre} ], [ %v{e}, %b{head} ]\n  \
             %v{acc} = phi i32 [ %v{x}, %b{pre} ], [ %v{d}, %b{head} ]\n  \
             %v{a} = mul i32 %v1, 3\n  %v{b} = add i32 %v{a}, 1\n  %v{c} = xor i32 %v{b}, 2\n  \
             %v{d} = add i32 %v{acc}, %v{c}\n  %v{e} = add i32 %v{i}, 1\n  \
             %v{f} = icmp slt i32 %v{e}, 4\n  br i1 %v{f}, label %b{head}, label %b{next}\n"
        );
        (from, passed) = (format!("b{head}"), d);
    }
    let last = 1 + 2 * loops;
    let (a, b, c, d) = (v + 1, v + 2, v + 3, v + 4);
    let _ = write!(
        wir,
        "block{last}(v{v}: i32):\n    v{a} = uextend.i64 v1\n    v{b} = iconst.i64 2\n    \
         v{c} = ishl v{a}, v{b}\n    v{d} = iadd v0, v{c}\n    store global v{v}, v{d}\n    \
         return\n}}\n"
    );
    let _ = write!(
        ll,
        "b{last}:\n  %v{v} = phi i32 [ %v{passed}, %{from} ]\n  %v{a} = zext i32 %v1 to i64\n  \
         %p = getelementptr i32, i32 addrspace(1)* %out, i64 %v{a}\n  \
         store i32 %v{v}, i32 addrspace(1)* %p\n  ret void\n"
    );
    ll.push_str(&ll_footer("loops"));
    Kernel {
        name: "loops",
        wir,
        ll,
    }
}
