//! CPU references for the DARM benchmark kernels of `tests/corpus/darm_*.wir`: plain Rust
//! that computes, from a launch's inputs, what each kernel must leave in memory. They
//! follow the kernels' algorithms, not their code: sorting kernels are checked against
//! `sort`, N-Queens against an independent backtracking count, and the arithmetic ones
//! redo each element's computation in the kernel's operation order (floats without
//! contraction), so a kernel that computes anything else fails.
#![allow(dead_code)] // the test file uses what it needs

/// The straight-line block bodies of the synthetic kernels, `f(X, Y, it)`:
/// `t1 = op1 x, k1; t2 = op2 t1, y; t3 = op3 t2, it; t4 = op4 t3, k2; t5 = op5 t4, k3;
/// u1 = op6 y, x; u2 = op7 u1, t5`, then `X = t5, Y = u2`. Index 0 is the identical
/// computation of SB1-SB4; the -R variants use 1 and 2 on their other sides.
const F: [FBody; 3] = [
    (
        Op::Imul,
        3,
        Op::Iadd,
        Op::Bxor,
        Op::Sshr,
        1,
        Op::Iadd,
        7,
        Op::Isub,
        Op::Iadd,
    ),
    (
        Op::Imul,
        5,
        Op::Isub,
        Op::Iadd,
        Op::Ushr,
        2,
        Op::Bxor,
        9,
        Op::Iadd,
        Op::Isub,
    ),
    (
        Op::Imul,
        7,
        Op::Bxor,
        Op::Isub,
        Op::Sshr,
        2,
        Op::Bor,
        5,
        Op::Bxor,
        Op::Iadd,
    ),
];

/// One `f`: its seven operations and three constants, in the order of [`F`]'s doc.
type FBody = (Op, i32, Op, Op, Op, i32, Op, i32, Op, Op);

/// The then blocks of SB3's second regions, `g(x, y, it)`: `t1 = opa x, y;
/// t2 = opb t1, k; t3 = opc t2, it; u = opd y, t3`, then `X = t3, Y = u`.
const G: [(Op, Op, i32, Op, Op); 2] = [
    (Op::Imul, Op::Ushr, 3, Op::Iadd, Op::Bxor),
    (Op::Isub, Op::Ishl, 2, Op::Bxor, Op::Iadd),
];

/// The integer operations the synthetic kernels use, with the IR's wrapping semantics.
#[derive(Clone, Copy)]
enum Op {
    Iadd,
    Isub,
    Imul,
    Bxor,
    Bor,
    Sshr,
    Ushr,
    Ishl,
}

impl Op {
    fn apply(self, a: i32, b: i32) -> i32 {
        let s = (b as u32) & 31;
        match self {
            Op::Iadd => a.wrapping_add(b),
            Op::Isub => a.wrapping_sub(b),
            Op::Imul => a.wrapping_mul(b),
            Op::Bxor => a ^ b,
            Op::Bor => a | b,
            Op::Sshr => a >> s,
            Op::Ushr => ((a as u32) >> s) as i32,
            Op::Ishl => ((a as u32) << s) as i32,
        }
    }
}

/// `f` number `fi` on the pair (x, y): the new (X, Y).
fn f(fi: usize, x: i32, y: i32, it: i32) -> (i32, i32) {
    let (op1, k1, op2, op3, op4, k2, op5, k3, op6, op7) = F[fi];
    let t1 = op1.apply(x, k1);
    let t2 = op2.apply(t1, y);
    let t3 = op3.apply(t2, it);
    let t4 = op4.apply(t3, k2);
    let t5 = op5.apply(t4, k3);
    let u1 = op6.apply(y, x);
    let u2 = op7.apply(u1, t5);
    (t5, u2)
}

/// `g` number `gi` on the pair (x, y): the new (X, Y).
fn g(gi: usize, x: i32, y: i32, it: i32) -> (i32, i32) {
    let (opa, opb, kb, opc, opd) = G[gi];
    let t1 = opa.apply(x, y);
    let t2 = opb.apply(t1, kb);
    let t3 = opc.apply(t2, it);
    let u = opd.apply(y, t3);
    (t3, u)
}

/// The four arrays of a synthetic kernel.
pub struct Sb {
    pub a: Vec<i32>,
    pub b: Vec<i32>,
    pub p: Vec<i32>,
    pub q: Vec<i32>,
}

/// Synthetic kernel SB`pattern` (1 to 4; `random` for its -R variant) on `n` elements in
/// tiles of `block` with `iters` inner iterations. Every element is updated by the lane
/// `idx % block` of its tile, independently of the others.
pub fn sb(pattern: u32, random: bool, mut s: Sb, n: u32, iters: i32, block: u32) -> Sb {
    let (fa, fb, fc) = if random { (0, 1, 2) } else { (0, 0, 0) };
    let (ga, gb) = if random { (0, 1) } else { (0, 0) };
    let (m1, m2) = if random { (4, 8) } else { (4, 4) };
    let (m3, m4) = if random { (8, 4) } else { (8, 8) };
    let len = (n / block * block) as usize;
    for idx in 0..len {
        let lane = idx as u32 % block;
        let (mut a, mut b, mut p, mut q) = (s.a[idx], s.b[idx], s.p[idx], s.q[idx]);
        for it in 0..iters {
            match pattern {
                1 => {
                    if lane.is_multiple_of(2) {
                        (a, b) = f(fa, a, b, it);
                    } else {
                        (p, q) = f(fb, p, q, it);
                    }
                }
                2 => {
                    if lane.is_multiple_of(2) {
                        if a & m1 == 0 {
                            (a, b) = f(fa, a, b, it);
                        }
                    } else if p & m2 == 0 {
                        (p, q) = f(fb, p, q, it);
                    }
                }
                3 => {
                    if lane.is_multiple_of(2) {
                        if a & m1 == 0 {
                            (a, b) = f(fa, a, b, it);
                        }
                        if a & m3 == 0 {
                            (a, b) = g(ga, a, b, it);
                        }
                    } else {
                        if p & m2 == 0 {
                            (p, q) = f(fb, p, q, it);
                        }
                        if p & m4 == 0 {
                            (p, q) = g(gb, p, q, it);
                        }
                    }
                }
                4 => match lane % 3 {
                    0 => (a, b) = f(fa, a, b, it),
                    1 => (p, q) = f(fb, p, q, it),
                    _ => (b, q) = f(fc, b, q, it),
                },
                _ => panic!("no synthetic pattern {pattern}"),
            }
        }
        (s.a[idx], s.b[idx], s.p[idx], s.q[idx]) = (a, b, p, q);
    }
    s
}

/// BIT, MS and PCM: every whole bucket of `block` elements of the first `n` sorted
/// ascending; the rest untouched.
pub fn sort_buckets(mut data: Vec<i32>, n: u32, block: u32) -> Vec<i32> {
    let len = (n / block * block) as usize;
    for bucket in data[..len].chunks_mut(block as usize) {
        bucket.sort_unstable();
    }
    data
}

/// LUD's perimeter step at offset 0 with BLOCK_SIZE = `block / 2`: the row tiles right of
/// the diagonal tile solved by its lower triangle (unit diagonal), the column tiles below
/// it by its upper triangle, in the kernel's order of operations.
pub fn lud(mut m: Vec<f32>, dim: u32, block: u32) -> Vec<f32> {
    let bs = (block / 2) as usize;
    let dim = dim as usize;
    let at = |r: usize, c: usize| r * dim + c;
    let dia: Vec<f32> = (0..bs * bs).map(|k| m[at(k / bs, k % bs)]).collect();
    for pb in 0..dim / bs - 1 {
        let colbase = (pb + 1) * bs;
        // peri_row[i][idx] = m[i][colbase + idx]
        for idx in 0..bs {
            for i in 1..bs {
                let mut acc = m[at(i, colbase + idx)];
                for j in 0..i {
                    acc -= dia[i * bs + j] * m[at(j, colbase + idx)];
                }
                m[at(i, colbase + idx)] = acc;
            }
        }
        // peri_col[r][c] = m[colbase + r][c], solved row by row
        for r in 0..bs {
            for i in 0..bs {
                let mut acc = m[at(colbase + r, i)];
                for j in 0..i {
                    acc -= m[at(colbase + r, j)] * dia[j * bs + i];
                }
                m[at(colbase + r, i)] = acc / dia[i * bs + i];
            }
        }
    }
    m
}

/// N-Queens: for each c < n * n, the completions of an n x n board whose first two rows
/// hold queens in columns c % n and c / n (0 where those two attack each other).
pub fn nqu(n: u32) -> Vec<i32> {
    fn count(n: i32, row: i32, cols: &mut Vec<i32>) -> i32 {
        if row == n {
            return 1;
        }
        let mut total = 0;
        for c in 0..n {
            let free = cols
                .iter()
                .enumerate()
                .all(|(r, &q)| q != c && (q - c).abs() != row - r as i32);
            if free {
                cols.push(c);
                total += count(n, row + 1, cols);
                cols.pop();
            }
        }
        total
    }
    let n = n as i32;
    (0..n * n)
        .map(|c| {
            let (c0, c1) = (c % n, c / n);
            if c0 == c1 || (c0 - c1).abs() == 1 {
                0
            } else {
                count(n, 2, &mut vec![c0, c1])
            }
        })
        .collect()
}

/// SRAD's diffusion coefficients of a `rows` x `cols` image, tiles of `block` columns by 8
/// rows whose borders come from the neighbouring rows and columns, clamped at the image's
/// edges. `C` outside whole tiles keeps `c_init`.
pub fn srad(j: &[f32], c_init: Vec<f32>, rows: u32, cols: u32, q0sqr: f32, block: u32) -> Vec<f32> {
    let (rows, cols, bd) = (rows as usize, cols as usize, block as usize);
    let mut out = c_init;
    let px = |r: usize, c: usize| j[r * cols + c];
    let (across, down) = (cols / bd, rows / 8);
    for ty in 0..down {
        for tx in 0..across {
            let (row0, col0) = (ty * 8, tx * bd);
            for y in 0..8 {
                for lane in 0..bd {
                    let (r, c) = (row0 + y, col0 + lane);
                    let jc = px(r, c);
                    let north = if y > 0 {
                        px(r - 1, c)
                    } else if ty == 0 {
                        px(row0, c)
                    } else {
                        px(row0 - 1, c)
                    };
                    let south = if y < 7 {
                        px(r + 1, c)
                    } else if ty == down - 1 {
                        px(row0 + 7, c)
                    } else {
                        px(row0 + 8, c)
                    };
                    let west = if lane > 0 {
                        px(r, c - 1)
                    } else if tx == 0 {
                        px(r, col0)
                    } else {
                        px(r, col0 - 1)
                    };
                    let east = if lane < bd - 1 {
                        px(r, c + 1)
                    } else if tx == across - 1 {
                        px(r, col0 + bd - 1)
                    } else {
                        px(r, col0 + bd)
                    };
                    let (n, s, w, e) = (north - jc, south - jc, west - jc, east - jc);
                    let g2 = (n * n + s * s + w * w + e * e) / (jc * jc);
                    let l = (n + s + w + e) / jc;
                    let num = 0.5f32 * g2 - 0.0625f32 * (l * l);
                    let den = 1.0f32 + 0.25f32 * l;
                    let qsqr = num / (den * den);
                    let den = (qsqr - q0sqr) / (q0sqr * (1.0 + q0sqr));
                    let cc = 1.0f32 / (1.0 + den);
                    // The kernel's three ways (c < 0, c > 1, else) are a clamp.
                    out[r * cols + c] = cc.clamp(0.0, 1.0);
                }
            }
        }
    }
    out
}

/// DCT quantization of a `stride` x `rows` plane by the 8x8 matrix `q`, over whole tiles
/// of `block` columns by 8 rows.
pub fn dct(mut plane: Vec<i16>, q: &[i16], stride: u32, rows: u32, block: u32) -> Vec<i16> {
    let (stride, bd) = (stride as usize, block as usize);
    let width = stride / bd * bd;
    let height = rows as usize / 8 * 8;
    for r in 0..height {
        for c in 0..width {
            let coef = i32::from(plane[r * stride + c]);
            let quant = i32::from(q[(r % 8) * 8 + c % 8]);
            let quantized = if coef < 0 {
                -((-coef + (quant >> 1)) / quant)
            } else {
                (coef + (quant >> 1)) / quant
            };
            plane[r * stride + c] = (quantized * quant) as i16;
        }
    }
    plane
}
