//! Unify: when the two sides of a divergent branch are the same code up to renamed
//! operands, the branch goes and both kinds of lanes run one copy of it (the limit of
//! Hoist and Sink, where every instruction of the arms is common — stores, compares and
//! inner branches included).
//!
//! The bitonic step of Listing 1.12 is the case the paper's evaluation names ("we use
//! branch flattening and sinking to move the common code to a convergent path"): both
//! sides load `a[i]` and `a[j]`, compare them, and swap them when the compare holds. The
//! compares differ — `a[i] > a[j]` ascending, `a[i] < a[j]` descending — but `x < y` is
//! `y > x`, so with the condition code swapped they are one compare whose operands differ
//! between the sides, renamed with a `select` each:
//!
//! ```text
//! block5:                               block5:
//!     brif v15, block6, block8              v22 = load.i32 global v18
//! block6:                                   v23 = load.i32 global v21
//!     v22 = load.i32 global v18             v30 = select v15, v22, v23
//!     v23 = load.i32 global v21     ==>     v31 = select v15, v23, v22
//!     v24 = icmp sgt v22, v23               v24 = icmp sgt v30, v31
//!     brif v24, block7, block10             brif v24, block7, block10
//! block8:                               block7:
//!     v25 = load.i32 global v18             store global v23, v18
//!     v26 = load.i32 global v21             store global v22, v21
//!     v27 = icmp slt v25, v26               jump block10
//!     brif v27, block9, block10
//! block7 / block9: the same swap
//! ```
//!
//! The then side's entry, now entered from the branch's block alone, joins it.
//!
//! **Matching.** The two sides are the regions `R_T` and `R_E` of blocks reached from the
//! branch's two destinations before its reconvergence point `J`; each must be entered only
//! through its destination, from the branch. They are walked in step from their entries: a
//! block of `R_E` maps onto one block of `R_T` (same parameters), and instruction `k` of a
//! block onto instruction `k` of its image, with the same operator (opcode, immediates,
//! address space, offset, result type; a compare may have its condition code swapped, its
//! operands then read swapped; a commutative operator may read its operands swapped).
//! Destinations inside the regions map onto each other; destinations outside must be the
//! same block. An operand of `R_E` defined in `R_E` reads the image of its definition; one
//! defined outside reads itself. Where the image differs from `R_T`'s operand, the operand
//! is *renamed*: `select c, x, y` on the branch condition `c` — before the branch when both
//! are defined outside the regions (one `select` per pair of values, shared), else right
//! before the instruction that reads it (both dominate it: `x` in `R_T`, and `y`'s image
//! by the isomorphism).
//!
//! **Legality.** A lane that took the else side now runs `R_T`, whose every instruction
//! computes, by induction over the walk, what its preimage in `R_E` computed for that lane
//! (the `select`s give it its side's operands, a swapped compare is the same predicate), with
//! the same side effects in the same order and the same control flow. Nothing runs on a lane
//! that would not have run it: a store, a load that may fault, a division stay on exactly
//! the lanes that ran them. A region holding a barrier is left alone (a barrier under
//! divergence is the program's to order).
//!
//! **Cost.** A divergent warp issued both sides; it now issues one side and the `select`s.
//! Unify is made when the latencies of `R_E`'s instructions (its terminators counting a
//! branch each) exceed the `select`s' by more than the threshold.

use super::cost::{benefit, copy_cost, BRANCH_LATENCY};
use super::dag::Operator;
use super::edges::Edges;
use super::uses::Uses;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use warplift_ir::{
    Block, FloatCC, Function, Inst, InstructionData, IntCC, Opcode, Value, ValueDef,
};

/// What a unification did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unified {
    /// The blocks whose edges changed (the branch's, and the removed side's).
    pub touched: Vec<Block>,
    /// Instructions of the removed side (terminators included).
    pub removed: u64,
    /// `select`s made for renamed operands.
    pub selects: u64,
    /// The profit, in cycles.
    pub profit: i64,
}

/// The condition that holds of `(y, x)` exactly when `cc` holds of `(x, y)`.
pub fn swap_int_cc(cc: IntCC) -> IntCC {
    use IntCC::*;
    match cc {
        Equal | NotEqual => cc,
        SignedLessThan => SignedGreaterThan,
        SignedGreaterThan => SignedLessThan,
        SignedLessThanOrEqual => SignedGreaterThanOrEqual,
        SignedGreaterThanOrEqual => SignedLessThanOrEqual,
        UnsignedLessThan => UnsignedGreaterThan,
        UnsignedGreaterThan => UnsignedLessThan,
        UnsignedLessThanOrEqual => UnsignedGreaterThanOrEqual,
        UnsignedGreaterThanOrEqual => UnsignedLessThanOrEqual,
    }
}

/// The condition that holds of `(y, x)` exactly when `cc` holds of `(x, y)`.
pub fn swap_float_cc(cc: FloatCC) -> FloatCC {
    use FloatCC::*;
    match cc {
        LessThan => GreaterThan,
        GreaterThan => LessThan,
        LessThanOrEqual => GreaterThanOrEqual,
        GreaterThanOrEqual => LessThanOrEqual,
        UnorderedOrLessThan => UnorderedOrGreaterThan,
        UnorderedOrGreaterThan => UnorderedOrLessThan,
        UnorderedOrLessThanOrEqual => UnorderedOrGreaterThanOrEqual,
        UnorderedOrGreaterThanOrEqual => UnorderedOrLessThanOrEqual,
        // Symmetric conditions.
        Ordered | Unordered | Equal | OrderedNotEqual | UnorderedOrEqual | NotEqual => cc,
    }
}

/// How instruction `b` of one side reads its operands to be instruction `a` of the other:
/// `Some(false)` in order, `Some(true)` with its two operands swapped (a compare whose
/// condition code is the swapped one), `None` when the operators differ. A commutative
/// operator matches both ways; the caller picks.
pub fn operator_match(func: &Function, a: Inst, b: Inst) -> Option<bool> {
    let (da, db) = (&func.dfg.insts[a], &func.dfg.insts[b]);
    match (da, db) {
        (
            InstructionData::IntCompare {
                cond: ca, args: _, ..
            },
            InstructionData::IntCompare { cond: cb, .. },
        ) if ca != cb => (*ca == swap_int_cc(*cb)).then_some(true),
        (
            InstructionData::FloatCompare { cond: ca, .. },
            InstructionData::FloatCompare { cond: cb, .. },
        ) if ca != cb => (*ca == swap_float_cc(*cb)).then_some(true),
        // A branch's destinations are the walk's to compare, not the operator's.
        _ if da.opcode().is_branch() => (da.opcode() == db.opcode()).then_some(false),
        _ => (Operator::of(func, a) == Operator::of(func, b)).then_some(false),
    }
}

/// Is the operator commutative in its two operands?
pub fn commutative(data: &InstructionData) -> bool {
    use Opcode::*;
    match data {
        InstructionData::IntCompare { cond, .. } => matches!(cond, IntCC::Equal | IntCC::NotEqual),
        InstructionData::FloatCompare { cond, .. } => *cond == swap_float_cc(*cond),
        _ => matches!(
            data.opcode(),
            Iadd | Imul
                | Smulhi
                | Umulhi
                | Smin
                | Smax
                | Umin
                | Umax
                | Band
                | Bor
                | Bxor
                | Fadd
                | Fmul
        ),
    }
}

/// The largest side, in blocks, Unify walks (a bound on the work per branch).
pub const MAX_BLOCKS: usize = 64;

/// The blocks reached from `entry` without passing `join`; `None` when the region reaches
/// `branch`, holds more than [`MAX_BLOCKS`] blocks, or is entered other than through
/// `entry` from `branch`.
fn region(cfg: &Edges, branch: Block, entry: Block, join: Block) -> Option<Vec<Block>> {
    let mut seen = HashSet::from_iter([entry]);
    let mut order = vec![entry];
    let mut k = 0;
    while k < order.len() {
        let b = order[k];
        k += 1;
        for &s in cfg.succs(b) {
            if s == branch || order.len() > MAX_BLOCKS {
                return None;
            }
            if s != join && seen.insert(s) {
                order.push(s);
            }
        }
    }
    let entered_inside = order.iter().all(|&b| {
        let preds = cfg.preds(b);
        if b == entry {
            preds == [branch]
        } else {
            preds.iter().all(|p| seen.contains(p))
        }
    });
    entered_inside.then_some(order)
}

/// One operand to rename: read at `user` (slot `slot` of its operands, or argument `arg`
/// of destination `dest` for a branch), `x` on the then side, `y`'s image on the else.
struct Rename {
    user: Inst,
    at: Slot,
    x: Value,
    y: Value,
    /// Both are defined outside the regions: the `select` goes before the branch.
    outside: bool,
}

#[derive(Copy, Clone)]
enum Slot {
    Operand(usize),
    Arg { dest: usize, arg: usize },
}

/// The walk's state: the else side's blocks and values mapped onto the then side's.
struct Walk<'f> {
    func: &'f Function,
    in_t: HashSet<Block>,
    in_e: HashSet<Block>,
    blocks: HashMap<Block, Block>,
    values: HashMap<Value, Value>,
    renames: Vec<Rename>,
    work: Vec<(Block, Block)>,
}

impl Walk<'_> {
    fn defined_in(&self, v: Value, side: &HashSet<Block>) -> bool {
        match self.func.dfg.value_def(v) {
            ValueDef::Result(inst) => self
                .func
                .layout
                .inst_block(inst)
                .is_some_and(|b| side.contains(&b)),
            ValueDef::Param(b, _) => side.contains(&b),
        }
    }

    /// The else side's operand `y` seen from the then side: its image when the else side
    /// defines it, itself otherwise (a value from outside the else side dominates the
    /// branch, so it is available on the then side too); `None` when that image is not
    /// yet known (the walk has not reached its definition). The flag: both are defined
    /// outside the sides.
    fn image(&self, x: Value, y: Value) -> Option<(Value, bool)> {
        let (x_in, y_in) = (
            self.defined_in(x, &self.in_t),
            self.defined_in(y, &self.in_e),
        );
        let y = if y_in { *self.values.get(&y)? } else { y };
        Some((y, !x_in && !y_in))
    }

    /// Records that `x` (then side) and `y` (else side) are read at `user`'s `at`; `false`
    /// when they cannot be made one operand.
    fn operand(&mut self, user: Inst, at: Slot, x: Value, y: Value) -> bool {
        let Some((y, outside)) = self.image(x, y) else {
            return false;
        };
        if x != y {
            if self.func.dfg.value_type(x) != self.func.dfg.value_type(y) {
                return false;
            }
            self.renames.push(Rename {
                user,
                at,
                x,
                y,
                outside,
            });
        }
        true
    }

    /// How many operands reading `xs` against `ys` would rename; `None` when impossible.
    fn count(&self, xs: &[Value], ys: &[Value]) -> Option<usize> {
        let mut n = 0;
        for (&x, &y) in xs.iter().zip(ys) {
            let (y, _) = self.image(x, y)?;
            if x != y {
                if self.func.dfg.value_type(x) != self.func.dfg.value_type(y) {
                    return None;
                }
                n += 1;
            }
        }
        Some(n)
    }

    /// Maps block `e` of the else side onto `t` of the then side.
    fn map_block(&mut self, t: Block, e: Block) -> bool {
        if let Some(&known) = self.blocks.get(&e) {
            return known == t;
        }
        if self.blocks.values().any(|&b| b == t) {
            return false;
        }
        let (pt, pe) = (self.func.dfg.block_params(t), self.func.dfg.block_params(e));
        if pt.len() != pe.len()
            || pt
                .iter()
                .zip(pe)
                .any(|(&a, &b)| self.func.dfg.value_type(a) != self.func.dfg.value_type(b))
        {
            return false;
        }
        for (&a, &b) in pt.iter().zip(pe) {
            self.values.insert(b, a);
        }
        self.blocks.insert(e, t);
        self.work.push((t, e));
        true
    }

    /// Walks the block pair `(t, e)`.
    fn block(&mut self, t: Block, e: Block) -> bool {
        let (it, ie) = (
            self.func.layout.block_insts(t).to_vec(),
            self.func.layout.block_insts(e).to_vec(),
        );
        if it.len() != ie.len() {
            return false;
        }
        it.iter().zip(&ie).all(|(&a, &b)| self.inst(a, b))
    }

    /// Walks the instruction pair `(a, b)`.
    fn inst(&mut self, a: Inst, b: Inst) -> bool {
        let func = self.func;
        let (da, db) = (&func.dfg.insts[a], &func.dfg.insts[b]);
        if da.opcode() == Opcode::Barrier {
            return false;
        }
        let Some(swapped) = operator_match(func, a, b) else {
            return false;
        };
        let xs = da.args().to_vec();
        let mut ys = db.args().to_vec();
        if swapped {
            ys.swap(0, 1);
        } else if commutative(da) && xs.len() == 2 {
            // Read the operands in the order that renames fewer.
            let straight = self.count(&xs, &ys);
            let crossed = self.count(&xs, &[ys[1], ys[0]]);
            let cross = match (straight, crossed) {
                (Some(s), Some(c)) => c < s,
                (None, Some(_)) => true,
                _ => false,
            };
            if cross {
                ys.swap(0, 1);
            }
        }
        for (s, (&x, &y)) in xs.iter().zip(&ys).enumerate() {
            if !self.operand(a, Slot::Operand(s), x, y) {
                return false;
            }
        }
        let (dests_a, dests_b) = (da.branch_destinations(), db.branch_destinations());
        if dests_a.len() != dests_b.len() {
            return false;
        }
        for (d, (ca, cb)) in dests_a.iter().zip(dests_b).enumerate() {
            let inside = (self.in_t.contains(&ca.block), self.in_e.contains(&cb.block));
            let ok = match inside {
                (true, true) => self.map_block(ca.block, cb.block),
                (false, false) => ca.block == cb.block,
                _ => false,
            };
            if !ok || ca.args.len() != cb.args.len() {
                return false;
            }
            for (k, (&x, &y)) in ca.args.iter().zip(&cb.args).enumerate() {
                if !self.operand(a, Slot::Arg { dest: d, arg: k }, x, y) {
                    return false;
                }
            }
        }
        match (func.dfg.inst_result(a), func.dfg.inst_result(b)) {
            (Some(ra), Some(rb)) if func.dfg.value_type(ra) == func.dfg.value_type(rb) => {
                self.values.insert(rb, ra);
                true
            }
            (None, None) => true,
            _ => false,
        }
    }
}

/// Unifies the two sides of the divergent `brif` ending `block`, which reconverge at
/// `join`, when they are one code up to renamed operands and the `select`s cost less than
/// the else side saves by more than `threshold` cycles.
pub fn unify(
    func: &mut Function,
    uses: &mut Uses,
    cfg: &Edges,
    block: Block,
    join: Block,
    threshold: i64,
) -> Option<Unified> {
    let term = func.terminator(block)?;
    let InstructionData::Brif {
        arg: cond, dests, ..
    } = func.dfg.insts[term].clone()
    else {
        return None;
    };
    let [t, e] = dests;
    if t.block == e.block || t.block == join || e.block == join {
        return None;
    }
    if !t.args.is_empty() || !e.args.is_empty() {
        return None;
    }
    // The walk begins by pairing the two entry blocks instruction for instruction: when
    // their lengths or operators differ it fails there, and the regions need no look.
    let (it, ie) = (
        func.layout.block_insts(t.block),
        func.layout.block_insts(e.block),
    );
    if it.len() != ie.len()
        || it
            .iter()
            .zip(ie)
            .any(|(&a, &b)| operator_match(func, a, b).is_none())
    {
        return None;
    }
    let rt = region(cfg, block, t.block, join)?;
    let re = region(cfg, block, e.block, join)?;
    if rt.len() != re.len() {
        return None;
    }
    let in_t: HashSet<Block> = rt.iter().copied().collect();
    let in_e: HashSet<Block> = re.iter().copied().collect();
    if in_t.iter().any(|b| in_e.contains(b)) {
        return None;
    }
    let mut walk = Walk {
        func,
        in_t,
        in_e,
        blocks: HashMap::default(),
        values: HashMap::default(),
        renames: Vec::new(),
        work: Vec::new(),
    };
    if !walk.map_block(t.block, e.block) {
        return None;
    }
    while let Some((bt, be)) = walk.work.pop() {
        if !walk.block(bt, be) {
            return None;
        }
    }
    if walk.blocks.len() != re.len() {
        return None;
    }
    // The else side's values are read nowhere else (SSA: it dominates nothing outside
    // itself, but check rather than assume).
    let mut e_insts = Vec::new();
    for &b in &re {
        for &inst in func.layout.block_insts(b) {
            e_insts.push(inst);
        }
    }
    for &inst in &e_insts {
        let results = func.dfg.inst_result(inst).into_iter();
        for v in results {
            if uses.of(func, v).any(|u| {
                func.layout
                    .inst_block(u)
                    .is_none_or(|b| !walk.in_e.contains(&b))
            }) {
                return None;
            }
        }
    }
    for &b in &re {
        for &p in func.dfg.block_params(b) {
            if uses.of(func, p).any(|u| {
                func.layout
                    .inst_block(u)
                    .is_none_or(|b| !walk.in_e.contains(&b))
            }) {
                return None;
            }
        }
    }
    // The cost model: the else side's issue slots against the selects.
    let saved: i64 = e_insts
        .iter()
        .map(|&i| {
            let data = &func.dfg.insts[i];
            if data.opcode().is_terminator() {
                i64::from(BRANCH_LATENCY)
            } else {
                benefit(data)
            }
        })
        .sum();
    let mut outside_pairs: HashSet<(Value, Value)> = HashSet::default();
    let mut inside = 0i64;
    for r in &walk.renames {
        if r.outside {
            outside_pairs.insert((r.x, r.y));
        } else {
            inside += 1;
        }
    }
    let selects = outside_pairs.len() as i64 + inside;
    let profit = saved - selects * copy_cost();
    if profit <= threshold {
        return None;
    }
    let renames = std::mem::take(&mut walk.renames);
    drop(walk);
    // Apply: the selects, the renamed operands, the branch become a jump, the else side
    // removed.
    let mut done = Unified {
        profit,
        ..Unified::default()
    };
    let mut shared: HashMap<(Value, Value), Value> = HashMap::default();
    let make_select = |func: &mut Function, x: Value, y: Value, at: Inst| -> Value {
        let sel = func.dfg.make_inst(
            InstructionData::Ternary {
                opcode: Opcode::Select,
                args: [cond, x, y],
            },
            Some(func.dfg.value_type(x)),
        );
        func.srclocs[sel] = func.srclocs[at];
        let blk = func.layout.inst_block(at).expect("placed");
        let pos = func
            .layout
            .block_insts(blk)
            .iter()
            .position(|&i| i == at)
            .expect("placed");
        func.layout.insert_inst(sel, blk, pos);
        func.dfg.inst_result(sel).expect("a select has a result")
    };
    for r in &renames {
        let v = if r.outside {
            match shared.get(&(r.x, r.y)) {
                Some(&v) => v,
                None => {
                    let v = make_select(func, r.x, r.y, term);
                    shared.insert((r.x, r.y), v);
                    done.selects += 1;
                    v
                }
            }
        } else {
            done.selects += 1;
            make_select(func, r.x, r.y, r.user)
        };
        let data = &mut func.dfg.insts[r.user];
        match r.at {
            Slot::Operand(s) => data.args_mut()[s] = v,
            Slot::Arg { dest, arg } => data.branch_destinations_mut()[dest].args[arg] = v,
        }
    }
    for r in &renames {
        uses.add(func, r.user);
    }
    for inst in func.layout.block_insts(block).to_vec() {
        uses.add(func, inst);
    }
    // The branch goes; the then side's entry, entered from it alone, joins its block
    // (no jump left between them).
    func.layout.remove_inst(term);
    for inst in func.layout.block_insts(t.block).to_vec() {
        func.layout.remove_inst(inst);
        func.layout.append_inst(inst, block);
    }
    // `t.block` is empty now: the pass removes its emptied blocks at the end.
    done.touched.push(t.block);
    for &inst in &e_insts {
        func.layout.remove_inst(inst);
        done.removed += 1;
    }
    done.touched.push(block);
    // The else side's blocks are empty now, removed with the others at the end.
    done.touched.extend(re.iter().copied());
    Some(done)
}
