//! Sequence alignment, at two levels (Section IV-C of the paper).
//!
//! - **Subgraphs**: the chains of the two sides are aligned so that the sum of `MP_S`
//!   over aligned pairs is largest, pairs keeping their order on both sides (Definition
//!   7). Only meldable pairs whose profitability reaches the threshold may align; the gap
//!   penalty is zero (a subgraph left unaligned costs nothing it did not cost before), so
//!   the local and the global alignment coincide.
//! - **Instructions**: the instructions of two corresponding blocks (terminators apart:
//!   isomorphism already pairs them) are aligned with Smith–Waterman's scoring and affine
//!   gaps (Gotoh's recurrences), end to end: the instructions a local alignment would
//!   leave out at either end become unaligned runs too, and cost as such. Two instructions may align only when they can be one
//!   instruction: the same opcode and immediates (condition code, address space, memory
//!   variable) and the same operand and result types — the criteria of function merging
//!   the paper adopts — except memory offsets: two accesses at `x+o1` and `y+o2` meld
//!   into one at `select(c, x, y) + select(c, o1 - m, o2 - m)` with offset
//!   `m = min(o1, o2)`, the paper's way of melding what differs into an operand (SB1's
//!   two arms work on different shared arrays at different offsets of one base). An
//!   aligned pair scores what melding saves, its latency, minus one `select` per operand
//!   that differs (and a `select` and an `iadd` for differing offsets); a gap costs, once per run whatever
//!   its length, the two branches that unpredication adds around it (the gap penalty of
//!   the paper's longer version). Barriers never align.

use super::cost::{latency, BRANCH_LATENCY, SELECT_LATENCY};
use std::collections::{HashMap, HashSet};
use warplift_ir::{Block, Function, Inst, InstructionData, Opcode, Value, ValueDef};

/// One step of an instruction alignment.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// The `i`-th instruction of the first block melds with the `j`-th of the second.
    Match(usize, usize),
    /// The `i`-th instruction of the first block runs alone (true side).
    GapA(usize),
    /// The `j`-th instruction of the second block runs alone (false side).
    GapB(usize),
}

/// The best order-preserving alignment of two sequences of `n` and `m` subgraphs, given
/// the score of each pair (`None`: may not align); the aligned pairs, in order.
pub fn align_subgraphs(
    n: usize,
    m: usize,
    score: impl Fn(usize, usize) -> Option<f64>,
) -> Vec<(usize, usize)> {
    // A tiny bonus per pair prefers melding more pairs among equally profitable choices.
    const BONUS: f64 = 1e-9;
    let w = m + 1;
    let mut h = vec![0.0f64; (n + 1) * w];
    let mut s = vec![None; (n + 1) * w];
    for i in 1..=n {
        for j in 1..=m {
            let mut best = h[(i - 1) * w + j].max(h[i * w + j - 1]);
            if let Some(x) = score(i - 1, j - 1) {
                s[i * w + j] = Some(x);
                best = best.max(h[(i - 1) * w + j - 1] + x + BONUS);
            }
            h[i * w + j] = best;
        }
    }
    let mut out = Vec::new();
    let (mut i, mut j) = (n, m);
    while i > 0 && j > 0 {
        let here = h[i * w + j];
        if let Some(x) = s[i * w + j] {
            if here == h[(i - 1) * w + j - 1] + x + BONUS {
                out.push((i - 1, j - 1));
                i -= 1;
                j -= 1;
                continue;
            }
        }
        if here == h[(i - 1) * w + j] {
            i -= 1;
        } else {
            j -= 1;
        }
    }
    out.reverse();
    out
}

/// Can `a` and `b` be one instruction?
pub fn compatible(func: &Function, a: Inst, b: Inst) -> bool {
    let (da, db) = (func.inst(a), func.inst(b));
    if da.opcode() != db.opcode() || da.opcode() == Opcode::Barrier || da.opcode().is_terminator() {
        return false;
    }
    // Operands may differ (a select chooses), and so may memory offsets: the melded
    // access adds the selected difference to its address (see [`address`]).
    let blank = |d: &InstructionData| {
        let mut d = d.clone();
        d.map_values(|_| Value::from_u32(0));
        if let Some(o) = offset_mut(&mut d) {
            *o = 0;
        }
        d
    };
    if blank(da) != blank(db) {
        return false;
    }
    let ty = |i: Inst| func.dfg.inst_result(i).map(|v| func.dfg.value_type(v));
    ty(a) == ty(b)
        && da
            .args()
            .iter()
            .zip(db.args())
            .all(|(&x, &y)| func.dfg.value_type(x) == func.dfg.value_type(y))
}

/// The offset of a memory access (`addr+offset`), to change it.
pub fn offset_mut(data: &mut InstructionData) -> Option<&mut i32> {
    match data {
        InstructionData::Load { offset, .. }
        | InstructionData::Store { offset, .. }
        | InstructionData::AtomicRmw { offset, .. }
        | InstructionData::AtomicCas { offset, .. } => Some(offset),
        _ => None,
    }
}

/// The offset of a memory access and the index of its address among its operands.
pub fn address(data: &InstructionData) -> Option<(i32, usize)> {
    match *data {
        InstructionData::Load { offset, .. }
        | InstructionData::AtomicRmw { offset, .. }
        | InstructionData::AtomicCas { offset, .. } => Some((offset, 0)),
        InstructionData::Store { offset, .. } => Some((offset, 1)),
        _ => None,
    }
}

/// Whether two compatible accesses differ in their offsets: melded, they need the
/// difference selected and added to the address (a `select` and an `iadd`).
pub fn offsets_differ(func: &Function, a: Inst, b: Inst) -> bool {
    match (address(func.inst(a)), address(func.inst(b))) {
        (Some((x, _)), Some((y, _))) => x != y,
        _ => false,
    }
}

/// The number of operands of `a` and `b` that will need a `select`: those that differ,
/// except values melding makes one (`same`: parameters of corresponding blocks, results
/// of instructions aligned in the blocks before, as a melded loop's header parameters
/// in its body) and results of instructions of the two blocks with the same opcode
/// (likely melded themselves, as the paper's Fig. 3b case c).
fn selects_needed(
    func: &Function,
    a: Inst,
    b: Inst,
    local: &HashSet<Inst>,
    same: &HashMap<Value, Value>,
    cond: Value,
) -> u32 {
    let local_kind = |v: Value| match func.dfg.value_def(v) {
        ValueDef::Result(i) if local.contains(&i) => Some(func.inst(i).opcode()),
        _ => None,
    };
    func.inst(a)
        .args()
        .iter()
        .zip(func.inst(b).args())
        .filter(|&(&x, &y)| {
            x != y
                && same.get(&x) != Some(&y)
                && !(at_entry(func, cond) && at_entry(func, x) && at_entry(func, y))
                && (local_kind(x).is_none() || local_kind(x) != local_kind(y))
        })
        .count() as u32
}

/// The score of aligning `a` with `b` (`None`: incompatible).
fn pair_score(
    func: &Function,
    a: Inst,
    b: Inst,
    local: &HashSet<Inst>,
    same: &HashMap<Value, Value>,
    cond: Value,
) -> Option<i32> {
    compatible(func, a, b).then(|| {
        let extra = selects_needed(func, a, b, local, same, cond)
            + 2 * u32::from(offsets_differ(func, a, b));
        latency(func.inst(a)) as i32 - (extra * SELECT_LATENCY) as i32
    })
}

/// Is `v` defined in the kernel's entry block (a select or address of such values alone
/// is placed there by melding, run once)?
pub fn at_entry(func: &Function, v: Value) -> bool {
    let entry = func.layout.entry_block();
    match func.dfg.value_def(v) {
        ValueDef::Result(i) => func.layout.inst_block(i) == entry,
        ValueDef::Param(b, _) => Some(b) == entry,
    }
}

/// The instructions of `block` without its terminator.
pub fn body(func: &Function, block: Block) -> Vec<Inst> {
    let insts = func.layout.block_insts(block);
    match func.terminator(block) {
        Some(_) => insts[..insts.len() - 1].to_vec(),
        None => insts.to_vec(),
    }
}

/// The alignment of the bodies `a` and `b`, with Smith–Waterman's scoring and affine
/// gaps (Gotoh's recurrences), as steps covering every instruction of both in order.
/// The alignment runs end to end: instructions left out before or after a local
/// alignment are not free, they become unaligned runs as those inside it do (a branch
/// around them, or issues of every lane), so the end gaps cost what inner gaps cost.
/// (Left free, DCT's two `iadd`s, whose pair scores zero — its select costs what
/// melding saves — were left out of the local alignment that starts at the division,
/// and ran unaligned with the `ineg` before them.) `same` maps values of `a`'s side to
/// the values of `b`'s side that melding makes one with them (they need no select);
/// `cond` is the region's condition (a select of it on values of the kernel's entry
/// block is placed there, run once, so it costs nothing in the melded block: LUD's
/// loop bounds `BLOCK_SIZE / 2` and `BLOCK_SIZE`).
pub fn align_insts(
    func: &Function,
    a: &[Inst],
    b: &[Inst],
    same: &HashMap<Value, Value>,
    cond: Value,
) -> Vec<Step> {
    let open = 2 * BRANCH_LATENCY as i32;
    let (n, m) = (a.len(), b.len());
    let w = m + 1;
    let local: HashSet<Inst> = a.iter().chain(b).copied().collect();
    const NEG: i32 = i32::MIN / 4;
    let mut h = vec![0i32; (n + 1) * w];
    let mut e = vec![NEG; (n + 1) * w];
    let mut f = vec![NEG; (n + 1) * w];
    let mut sc: Vec<Option<i32>> = vec![None; (n + 1) * w];
    // The borders: a leading run of one body alone, one opening whatever its length.
    for i in 1..=n {
        e[i * w] = -open;
        h[i * w] = -open;
    }
    for j in 1..=m {
        f[j] = -open;
        h[j] = -open;
    }
    for i in 1..=n {
        for j in 1..=m {
            let k = i * w + j;
            e[k] = (h[k - w] - open).max(e[k - w]);
            f[k] = (h[k - 1] - open).max(f[k - 1]);
            let s = pair_score(func, a[i - 1], b[j - 1], &local, same, cond);
            sc[k] = s;
            let diag = s.map_or(NEG, |s| h[k - w - 1] + s);
            h[k] = diag.max(e[k]).max(f[k]);
        }
    }
    // Trace back from the end of both bodies.
    #[derive(PartialEq)]
    enum State {
        H,
        E,
        F,
    }
    let mut steps = Vec::new();
    let (mut i, mut j) = (n, m);
    let mut state = State::H;
    while i > 0 && j > 0 {
        let k = i * w + j;
        match state {
            State::H => {
                if sc[k].is_some_and(|s| h[k] == h[k - w - 1] + s) {
                    steps.push(Step::Match(i - 1, j - 1));
                    i -= 1;
                    j -= 1;
                } else if h[k] == e[k] {
                    state = State::E;
                } else {
                    state = State::F;
                }
            }
            State::E => {
                steps.push(Step::GapA(i - 1));
                state = if e[k] == h[k - w] - open {
                    State::H
                } else {
                    State::E
                };
                i -= 1;
            }
            State::F => {
                steps.push(Step::GapB(j - 1));
                state = if f[k] == h[k - 1] - open {
                    State::H
                } else {
                    State::F
                };
                j -= 1;
            }
        }
    }
    steps.reverse();
    let mut out: Vec<Step> = (0..i)
        .map(Step::GapA)
        .chain((0..j).map(Step::GapB))
        .collect();
    out.extend(steps);
    out
}
