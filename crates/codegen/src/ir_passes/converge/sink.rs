//! Sink: the matched pairs of the two blocks that jump to a divergent branch's
//! reconvergence point move, as one instruction each, to the start of that point
//! (Listings 1.3/1.4).
//!
//! The reconvergence point `J` has exactly the two arm blocks as predecessors, so every
//! lane arriving at `J` ran exactly one instruction of each pair. A pair sinks only when
//! its results are read by nothing but sunk pairs (in the same operand slot on both sides)
//! and the jump to `J` (in the same argument position on both sides): the parameter of `J`
//! that received them becomes the merged instruction's result. Operands that differ
//! between the arms become new parameters of `J` (operand renaming: the copies of
//! Listing 1.8 are the jumps' arguments).

use super::dag::{operands, Arm};
use super::matching::{Matching, Pair};
use super::uses::Uses;
use warplift_ir::{Block, Function, Inst, Value};

/// What a sink did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Sunk {
    /// Pairs merged into one instruction at the reconvergence point.
    pub pairs: u64,
    /// Parameters added to the reconvergence point for renamed operands.
    pub params: u64,
}

/// The argument positions of the two arms' jumps to `join` where both pass a result of
/// their own arm: the roots of the matching.
pub fn roots(func: &Function, a: &Arm, b: &Arm) -> Vec<(usize, usize)> {
    let (xs, ys) = (jump_args_ref(func, a.block), jump_args_ref(func, b.block));
    xs.iter()
        .zip(ys)
        .filter_map(|(&x, &y)| Some((a.node_of(func, x)?, b.node_of(func, y)?)))
        .collect()
}

/// The arguments of the jump ending `block`.
pub fn jump_args(func: &Function, block: Block) -> Vec<Value> {
    func.terminator(block)
        .map(|t| func.dfg.insts[t].branch_destinations()[0].args.clone())
        .unwrap_or_default()
}

/// The arguments of the jump ending `block`, borrowed.
fn jump_args_ref(func: &Function, block: Block) -> &[Value] {
    func.terminator(block)
        .map_or(&[], |t| &func.dfg.insts[t].branch_destinations()[0].args)
}

/// The nodes of `matching` whose results are read where the merged result cannot stand
/// in for them: by an instruction that stays in the arm, by a sunk pair in a slot whose
/// other side is not the partner, or by the jump at a position whose other side is not
/// the partner. Empty when the sink is legal. Returns `(side A, side B)` nodes.
pub fn illegal_uses(
    func: &Function,
    uses: &Uses,
    a: &Arm,
    b: &Arm,
    matching: &Matching,
) -> (Vec<usize>, Vec<usize>) {
    // Each node's pair, by node (arms are small and dense: no hashing).
    let mut by_a: Vec<Option<Pair>> = vec![None; a.len()];
    let mut by_b: Vec<Option<Pair>> = vec![None; b.len()];
    for p in &matching.pairs {
        by_a[p.a] = Some(*p);
        by_b[p.b] = Some(*p);
    }
    let (ja, jb) = (jump_args_ref(func, a.block), jump_args_ref(func, b.block));
    let (ta, tb) = (func.terminator(a.block), func.terminator(b.block));
    let result = |arm: &Arm, n: usize| func.dfg.inst_result(arm.insts[n]);
    // Does every slot where `mine` reads `v` read `other` in `theirs`?
    let agree = |mine: &[Value], theirs: &[Value], v: Value, other: Value| {
        mine.iter().zip(theirs).all(|(&m, &t)| m != v || t == other)
    };
    // Slot `s` of the user pair `q` reads `v` on one side: the other side must read
    // `other` there.
    let check = |user: Inst, side_a: bool, v: Value, other: Value| -> bool {
        let (own, term, by) = if side_a {
            (a, ta, &by_a)
        } else {
            (b, tb, &by_b)
        };
        if Some(user) == term {
            let (mine, theirs) = if side_a { (ja, jb) } else { (jb, ja) };
            return agree(mine, theirs, v, other);
        }
        let Some(node) = own.node(user) else {
            return false;
        };
        let Some(q) = by[node] else { return false };
        let qa = func.dfg.insts[a.insts[q.a]].args();
        let qb = func.dfg.insts[b.insts[q.b]].args();
        let swapped_b: [Value; 2];
        let qb = if q.swapped {
            swapped_b = [qb[1], qb[0]];
            &swapped_b[..]
        } else {
            qb
        };
        if side_a {
            agree(qa, qb, v, other)
        } else {
            agree(qb, qa, v, other)
        }
    };
    let mut bad = (Vec::new(), Vec::new());
    for p in &matching.pairs {
        let (Some(va), Some(vb)) = (result(a, p.a), result(b, p.b)) else {
            bad.0.push(p.a);
            continue;
        };
        if !uses.all_readers(func, va, |u| check(u, true, va, vb)) {
            bad.0.push(p.a);
        }
        if !uses.all_readers(func, vb, |u| check(u, false, vb, va)) {
            bad.1.push(p.b);
        }
    }
    bad
}

/// Sinks `matching`'s pairs of arms `a` and `b` (both ending in a jump to `join`, its
/// only predecessors) into `join`. The matching must have no [`illegal_uses`].
pub fn sink(
    func: &mut Function,
    uses: &mut Uses,
    join: Block,
    a: &Arm,
    b: &Arm,
    matching: &Matching,
) -> Sunk {
    let mut done = Sunk::default();
    let ta = func.terminator(a.block).expect("arm ends in a jump");
    let tb = func.terminator(b.block).expect("arm ends in a jump");
    let original_params = func.dfg.block_params(join).len();
    // The renamed operand pairs and their parameters, and the merged results: a few per
    // sink, searched linearly (a hash table per sink cost more than the searches).
    let mut params: Vec<((Value, Value), Value)> = Vec::new();
    // The merged instructions, in order, placed at the start of `join` together after
    // the loop (none reads a value the loop replaces: their operands are arm A's, which
    // come before the pair's, or new parameters).
    let mut placed = Vec::with_capacity(matching.pairs.len());
    // The pairs' instructions, taken out of the arms together after the loop (dead once
    // replaced: a reader of a replaced value still in the arm is rewritten for nothing).
    let mut removed = Vec::with_capacity(2 * matching.pairs.len());
    let mut merged_results = Vec::with_capacity(matching.pairs.len());
    for pair in &matching.pairs {
        let (ia, ib) = (a.insts[pair.a], b.insts[pair.b]);
        let xs = operands(func, ia, false);
        let ys = operands(func, ib, pair.swapped);
        let mut data = func.dfg.insts[ia].clone();
        let mut args = xs;
        for (s, (&x, &y)) in xs.iter().zip(ys.iter()).enumerate() {
            if x == y {
                continue;
            }
            let v = match params.iter().find(|(k, _)| *k == (x, y)) {
                Some(&(_, p)) => p,
                None => {
                    let p = func.dfg.append_block_param(join, func.dfg.value_type(x));
                    func.dfg.insts[ta].branch_destinations_mut()[0].args.push(x);
                    func.dfg.insts[tb].branch_destinations_mut()[0].args.push(y);
                    done.params += 1;
                    params.push(((x, y), p));
                    p
                }
            };
            args[s] = v;
        }
        data.args_mut().copy_from_slice(&args);
        let ra = func
            .dfg
            .inst_result(ia)
            .expect("matched instructions have results");
        let rb = func
            .dfg
            .inst_result(ib)
            .expect("matched instructions have results");
        let merged = func.dfg.make_inst(data, Some(func.dfg.value_type(ra)));
        func.srclocs[merged] = func.srclocs[ia];
        placed.push(merged);
        uses.add(func, merged);
        let r = func.dfg.inst_result(merged).expect("merged has a result");
        removed.push(ia);
        removed.push(ib);
        uses.replace(func, ra, r);
        uses.replace(func, rb, r);
        merged_results.push(r);
        done.pairs += 1;
    }
    func.layout.insert_insts(join, 0, &placed);
    func.layout.remove_insts(&removed);
    uses.add(func, ta);
    uses.add(func, tb);
    // The jumps now pass merged results (defined in `join`) where they passed the pairs'
    // results: those parameters are the merged results themselves.
    for k in (0..original_params).rev() {
        let x = func.dfg.insts[ta].branch_destinations()[0].args[k];
        let y = func.dfg.insts[tb].branch_destinations()[0].args[k];
        if x == y && merged_results.contains(&x) {
            let param = func.dfg.block_params(join)[k];
            uses.replace(func, param, x);
            func.dfg.remove_block_param(join, k);
            func.dfg.insts[ta].branch_destinations_mut()[0]
                .args
                .remove(k);
            func.dfg.insts[tb].branch_destinations_mut()[0]
                .args
                .remove(k);
        }
    }
    done
}
