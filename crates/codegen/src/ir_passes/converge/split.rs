//! Split: a temporary reconvergence point inside the arms of a divergent branch, for common
//! expressions that can neither rise to the branch nor sink to its reconvergence point
//! (the paper's Listings 1.5/1.6).
//!
//! In Listing 1.5 the odd arm uses `a = b * c` inside the arm (so it cannot sink) and the
//! even arm redefines `b` first (so it cannot rise). Split cuts each arm around the
//! matched instructions: what they depend on runs first, in the arm (the *prefix*); the
//! matched pairs run once, converged, in a new block `S` that both prefixes jump to; a
//! second branch on the same condition sends each lane on to the rest of its own arm (the
//! *suffix*):
//!
//! ```text
//! block0:                                  block0:
//!     brif v91, block1, block2                 brif v91, block5(v5), block2
//! block1:                                  block2:
//!     v11 = imul v5, v4                        v13 = iconst.i32 10
//!     store global v11, v12                    jump block5(v13)
//!     jump block3(v11)             ==>     block5(v50: i32):            ; S
//! block2:                                      v51 = imul v50, v4
//!     v13 = iconst.i32 10                      brif v91, block6, block3(v51)
//!     v14 = imul v13, v4                   block6:
//!     jump block3(v14)                         store global v51, v12
//!                                              jump block3(v51)
//! ```
//!
//! Operands that differ between the arms become parameters of `S` (renaming, as a Sink
//! does at the reconvergence point); a value of a prefix read after `S` passes through a
//! parameter of `S` too (SSA: the prefix no longer dominates its arm's rest). An empty
//! prefix is no block at all (the branch passes its arguments to `S`), and an empty suffix
//! ending in a jump is none either (`S`'s branch jumps on directly), so Listing 1.5 becomes
//! Listing 1.6: one branch before and one after the shared product.
//!
//! [`partition`] is the legality test of Section 3.2 for a Split: no instruction changes
//! its order with one it depends on (data, or memory through stores, atomics and
//! barriers), since a node that depends on a matched one goes to the suffix, and a matched
//! node may not depend on a suffix node. Every lane runs each merged instruction exactly
//! where it ran its arm's copy, with its arm's operands: nothing is speculated and the
//! SIMT efficiency of the moved instructions rises.
//!
//! The new branch and the prefixes' jumps cost instructions the paper's model leaves out
//! (Section 3.1 names "the cost of additional branch and synchronization instructions in
//! the Split transform" as future work); here each costs `split_cost` cycles (by default
//! the emulator's branch latency), every prefix value carried across `S` one copy, and a
//! Split is made only when the matched expressions' profit pays for them.

use super::cost::copy_cost;
use super::dag::Arm;
use super::flatten::{speculable, MAX_SPECULATED};
use super::matching::{Matcher, Matching, Tables};
use super::pdg::{Direction, MemoryDeps};
use super::uses::Uses;
use super::Options;
use rustc_hash::FxHashMap as HashMap;
use warplift_ir::{Block, BlockCall, Function, Inst, InstructionData, Opcode, Type, Value};

/// What a Split did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Splitted {
    /// The blocks whose edges changed (made, emptied or removed).
    pub touched: Vec<Block>,
    /// Pairs merged into one instruction at the temporary reconvergence point.
    pub pairs: u64,
    /// Parameters of the temporary reconvergence point (renamed operands and carried
    /// prefix values).
    pub params: u64,
    /// The profit of the matching less the Split's own cost, in cycles.
    pub profit: i64,
}

/// Which nodes of `arm` run after the merged instructions (`true`: the suffix) when the
/// nodes `matched` are merged: every node that no matched node depends on, so that the
/// prefix holds only what the merged instructions need. `Err` with the matched nodes
/// that depend on a node which itself depends on a matched node: no cut orders both.
pub fn partition(func: &Function, arm: &Arm, matched: &[bool]) -> Result<Vec<bool>, Vec<usize>> {
    let deps = MemoryDeps::compute(func, arm);
    let n = arm.len();
    let depends_on = |i: usize| -> Vec<usize> {
        let data = func.dfg.insts[arm.insts[i]]
            .args()
            .iter()
            .filter_map(|&v| arm.node_of(func, v));
        data.chain(deps.preds(i).iter().copied()).collect()
    };
    // `tied`: depends, through the arm, on a matched node.
    let mut tied = vec![false; n];
    for i in 0..n {
        tied[i] = !matched[i] && depends_on(i).into_iter().any(|k| matched[k] || tied[k]);
    }
    // `needed`: a matched node depends on it; a node's dependences come before it.
    let mut needed = matched.to_vec();
    for i in (0..n).rev() {
        if needed[i] {
            for k in depends_on(i) {
                needed[k] = true;
            }
        }
    }
    let bad: Vec<usize> = (0..n)
        .filter(|&i| matched[i] && depends_on(i).into_iter().any(|k| tied[k]))
        .collect();
    if !bad.is_empty() {
        return Err(bad);
    }
    Ok((0..n).map(|i| !matched[i] && !needed[i]).collect())
}

/// The cut of both arms and the matching it serves.
struct Plan {
    matching: Matching,
    after_a: Vec<bool>,
    after_b: Vec<bool>,
}

/// Splits the arms `a` (the `brif`'s then side) and `b` (its else side) of the divergent
/// branch ending `branch`, whose condition is `cond`, when the cost model says it pays
/// (its matching tables built in `tables`' storage).
#[allow(clippy::too_many_arguments)]
pub fn split(
    func: &mut Function,
    uses: &mut Uses,
    branch: Block,
    cond: Value,
    a: &Arm,
    b: &Arm,
    opts: &Options,
    tables: &mut Tables,
) -> Option<Splitted> {
    let plan = plan(func, tables, a, b, opts)?;
    let unit = opts.split_cost;
    let (jumps_a, carried_a, spec_a) = overhead(func, uses, a, &plan.after_a, &plan.matching, true);
    let (jumps_b, carried_b, spec_b) =
        overhead(func, uses, b, &plan.after_b, &plan.matching, false);
    let (mut jumps_a, mut jumps_b) = (jumps_a, jumps_b);
    if both_jump_to_one_block(func, a, &plan.after_a, b, &plan.after_b) {
        // `S`'s branch cannot name one block twice: both suffixes keep their jumps.
        jumps_a = jumps_a.max(0);
        jumps_b = jumps_b.max(0);
    }
    let copies = (carried_a + carried_b) * copy_cost();
    // When both prefixes are short side-effect-free code, the branch into them flattens
    // afterwards (see [`super::flatten`]): `S`'s branch then replaces it, the prefixes'
    // code joins the branch's block, which ends in a jump to `S` instead — one jump more,
    // less each suffix that was only a jump and that `S`'s branch takes. Otherwise `S`'s
    // branch and the prefixes' jumps are new.
    let renamed = renamed_slots(func, a, b, &plan.matching) as i64;
    let flattens = opts.flatten
        && spec_a.zip(spec_b).is_some_and(|(x, y)| {
            let side_blocks = i64::from(x > 0) + i64::from(y > 0);
            // What `flatten` asks: fewer selects than the branch and side jumps it removes.
            x + y <= MAX_SPECULATED && renamed + carried_a + carried_b <= side_blocks
        });
    let cost = if flattens {
        // A flattened prefix has no jump of its own: what `jumps` counted less it is what
        // the arm's skipped suffix saves.
        let saved =
            |jumps: i64, prefix: Option<usize>| i64::from(prefix.is_some_and(|n| n > 0)) - jumps;
        copies + unit * (1 - saved(jumps_a, spec_a) - saved(jumps_b, spec_b))
    } else {
        copies + unit * (1 + jumps_a.max(0) + jumps_b.max(0))
    };
    let profit = plan.matching.profit - cost;
    // A Split whose matched code exactly pays for the branch, jumps and copies it adds
    // issues no more than before with more of it converged (Listing 1.5): ties go to
    // convergence, unlike a Hoist or Sink, whose tie would be paid by warps that do not
    // diverge at run time with nothing gained.
    if profit < opts.threshold || plan.matching.pairs.is_empty() {
        return None;
    }
    let mut done = apply(func, uses, branch, cond, a, b, &plan);
    done.profit = profit;
    Some(done)
}

/// The matching of the two arms for a Split, with the nodes that make a cut impossible
/// forbidden until the rest can be cut; each table is stored in `tables`.
fn plan(func: &Function, tables: &mut Tables, a: &Arm, b: &Arm, opts: &Options) -> Option<Plan> {
    // Allocated when a first node is forbidden (most matchings are legal at once).
    let mut forbid_a: Vec<bool> = Vec::new();
    let mut forbid_b: Vec<bool> = Vec::new();
    // Each round forbids at least one more node, so this ends.
    loop {
        let matcher = Matcher::new_in(
            core::mem::take(tables),
            func,
            a,
            b,
            Direction::Split,
            opts.rename,
            &forbid_a,
            &forbid_b,
        );
        // Matched code that reaches the threshold (ties included, see `split`).
        let m = matcher.best(opts.threshold - 1);
        *tables = matcher.into_tables();
        if m.pairs.is_empty() {
            return None;
        }
        let mut matched_a = vec![false; a.len()];
        let mut matched_b = vec![false; b.len()];
        for p in &m.pairs {
            matched_a[p.a] = true;
            matched_b[p.b] = true;
        }
        let (mut bad_a, mut bad_b) = renamed_matched(func, a, b, &m, &matched_a, &matched_b);
        let cut_a = partition(func, a, &matched_a);
        let cut_b = partition(func, b, &matched_b);
        if let Err(bad) = &cut_a {
            bad_a.extend(bad);
        }
        if let Err(bad) = &cut_b {
            bad_b.extend(bad);
        }
        if bad_a.is_empty() && bad_b.is_empty() {
            return Some(Plan {
                matching: m,
                after_a: cut_a.ok()?,
                after_b: cut_b.ok()?,
            });
        }
        for n in bad_a {
            forbid_a.resize(a.len(), false);
            forbid_a[n] = true;
        }
        for n in bad_b {
            forbid_b.resize(b.len(), false);
            forbid_b[n] = true;
        }
    }
}

/// The pairs (as their A and B nodes) with an operand slot that is renamed, not merged,
/// while one side's operand is itself merged: that operand runs in `S`, so no prefix can
/// pass it to `S`'s parameter.
fn renamed_matched(
    func: &Function,
    a: &Arm,
    b: &Arm,
    m: &Matching,
    matched_a: &[bool],
    matched_b: &[bool],
) -> (Vec<usize>, Vec<usize>) {
    let partner: HashMap<usize, usize> = m.pairs.iter().map(|p| (p.a, p.b)).collect();
    let mut bad = (Vec::new(), Vec::new());
    for p in &m.pairs {
        for (x, y) in slots(func, a, b, p) {
            let (nx, ny) = (a.node_of(func, x), b.node_of(func, y));
            let merged = matches!((nx, ny), (Some(i), Some(j)) if partner.get(&i) == Some(&j));
            if x == y || merged {
                continue;
            }
            if nx.is_some_and(|i| matched_a[i]) || ny.is_some_and(|j| matched_b[j]) {
                bad.0.push(p.a);
                bad.1.push(p.b);
            }
        }
    }
    bad
}

/// The distinct pairs of different operands the merged instructions read through
/// parameters of `S`.
fn renamed_slots(func: &Function, a: &Arm, b: &Arm, m: &Matching) -> usize {
    let partner: HashMap<usize, usize> = m.pairs.iter().map(|p| (p.a, p.b)).collect();
    let mut seen = rustc_hash::FxHashSet::default();
    for p in &m.pairs {
        for (x, y) in slots(func, a, b, p) {
            let merged = matches!(
                (a.node_of(func, x), b.node_of(func, y)),
                (Some(i), Some(j)) if partner.get(&i) == Some(&j)
            );
            if x != y && !merged {
                seen.insert((x, y));
            }
        }
    }
    seen.len()
}

/// The operand slots of pair `p`: A's operand beside B's (swapped where the pair is).
fn slots(func: &Function, a: &Arm, b: &Arm, p: &super::matching::Pair) -> Vec<(Value, Value)> {
    let xs = func.dfg.insts[a.insts[p.a]].args().to_vec();
    let mut ys = func.dfg.insts[b.insts[p.b]].args().to_vec();
    if p.swapped {
        ys.swap(0, 1);
    }
    xs.into_iter().zip(ys).collect()
}

/// What one arm adds: the jumps (one from a non-empty prefix to `S`, less the arm's own
/// when its suffix is empty and `S`'s branch takes it), the prefix values read after `S`
/// (each a copy), and the prefix's length when all of it could be flattened.
fn overhead(
    func: &Function,
    uses: &Uses,
    arm: &Arm,
    after: &[bool],
    m: &Matching,
    side_a: bool,
) -> (i64, i64, Option<usize>) {
    let mut matched = vec![false; arm.len()];
    for p in &m.pairs {
        matched[if side_a { p.a } else { p.b }] = true;
    }
    let prefix: Vec<usize> = (0..arm.len())
        .filter(|&i| !matched[i] && !after[i])
        .collect();
    let suffix_empty = !after.iter().any(|&x| x);
    let ends_in_jump = func
        .terminator(arm.block)
        .is_some_and(|t| func.dfg.insts[t].opcode() == Opcode::Jump);
    let jumps = i64::from(!prefix.is_empty()) - i64::from(suffix_empty && ends_in_jump);
    let carried = prefix
        .iter()
        .filter(|&&i| {
            let Some(r) = func.dfg.inst_result(arm.insts[i]) else {
                return false;
            };
            uses.of(func, r)
                .any(|u| match arm.insts.iter().position(|&x| x == u) {
                    Some(k) => after[k],
                    None => func.layout.inst_block(u) != Some(arm.block),
                })
        })
        .count() as i64;
    let speculable = prefix
        .iter()
        .all(|&i| speculable(&func.dfg.insts[arm.insts[i]]));
    (jumps, carried, speculable.then_some(prefix.len()))
}

/// Builds the Split of `plan` (see the module comment).
fn apply(
    func: &mut Function,
    uses: &mut Uses,
    branch: Block,
    cond: Value,
    a: &Arm,
    b: &Arm,
    plan: &Plan,
) -> Splitted {
    let mut done = Splitted::default();
    // A Sink before may have passed the arms' values to the join through new jump
    // arguments: make sure the use lists know the jumps read them.
    for arm in [a, b] {
        if let Some(t) = func.terminator(arm.block) {
            uses.add(func, t);
        }
    }
    let s = func.dfg.make_block();
    let mut args_a: Vec<Value> = Vec::new();
    let mut args_b: Vec<Value> = Vec::new();
    // Parameters of `S` by the value each side passes, for reuse.
    let mut params: HashMap<(Value, Value), Value> = HashMap::default();
    let mut merged: HashMap<usize, Value> = HashMap::default();
    let mut merged_insts = Vec::new();
    for pair in &plan.matching.pairs {
        let mut args = Vec::new();
        for (x, y) in slots(func, a, b, pair) {
            if x == y {
                args.push(x);
                continue;
            }
            let nx = a.node_of(func, x);
            if let Some(&r) = nx.and_then(|i| merged.get(&i)) {
                // Merged with its partner (renamed_matched ruled out any other case).
                args.push(r);
                continue;
            }
            let p = *params.entry((x, y)).or_insert_with(|| {
                args_a.push(x);
                args_b.push(y);
                done.params += 1;
                func.dfg.append_block_param(s, func.dfg.value_type(x))
            });
            args.push(p);
        }
        let ia = a.insts[pair.a];
        let mut data = func.dfg.insts[ia].clone();
        data.args_mut().copy_from_slice(&args);
        let ty = func.dfg.inst_result(ia).map(|r| func.dfg.value_type(r));
        let inst = func.dfg.make_inst(data, ty);
        func.srclocs[inst] = func.srclocs[ia];
        merged_insts.push((inst, pair.a, pair.b));
        if let Some(r) = func.dfg.inst_result(inst) {
            merged.insert(pair.a, r);
        }
        done.pairs += 1;
    }
    func.layout
        .insert_block_after(s, later(func, a.block, b.block));
    for &(inst, na, nb) in &merged_insts {
        func.layout.append_inst(inst, s);
        uses.add(func, inst);
        let (ia, ib) = (a.insts[na], b.insts[nb]);
        func.layout.remove_inst(ia);
        func.layout.remove_inst(ib);
        if let (Some(r), Some(ra), Some(rb)) = (
            func.dfg.inst_result(inst),
            func.dfg.inst_result(ia),
            func.dfg.inst_result(ib),
        ) {
            uses.replace(func, ra, r);
            uses.replace(func, rb, r);
        }
    }
    // Each arm's suffix (and terminator) moves to a block of its own after `S`.
    let rest_a = move_suffix(func, a, &plan.after_a, s);
    let rest_b = move_suffix(func, b, &plan.after_b, rest_a);
    // Prefix values read outside their prefix travel through parameters of `S`.
    let carried_a = carried(func, uses, a);
    let carried_b = carried(func, uses, b);
    let mut pending_b: Vec<Value> = carried_b.clone();
    for &v in &carried_a {
        let ty = func.dfg.value_type(v);
        let partner = pending_b
            .iter()
            .position(|&w| func.dfg.value_type(w) == ty)
            .map(|k| pending_b.remove(k));
        let w = partner.unwrap_or_else(|| filler(func, uses, branch, ty));
        let p = carry(func, uses, s, &mut params, (v, w), &mut args_a, &mut args_b);
        done.params += u64::from(p.1);
        reroute(func, uses, v, p.0, a.block);
        if partner.is_some() {
            reroute(func, uses, w, p.0, b.block);
        }
    }
    for w in pending_b {
        let ty = func.dfg.value_type(w);
        let v = filler(func, uses, branch, ty);
        let p = carry(func, uses, s, &mut params, (v, w), &mut args_a, &mut args_b);
        done.params += u64::from(p.1);
        reroute(func, uses, w, p.0, b.block);
    }
    // Entries into `S`: from each prefix block, or straight from the branch where a prefix
    // is empty (not both: `brif` names two different blocks).
    let term = func.terminator(branch).expect("the branch ends its block");
    let mut direct = [false, false];
    for (k, (arm, args)) in [(a, &args_a), (b, &args_b)].into_iter().enumerate() {
        let empty = func.layout.block_insts(arm.block).is_empty();
        if empty && !direct[0] {
            let dest = &mut func.dfg.insts[term].branch_destinations_mut()[k];
            dest.block = s;
            dest.args = args.clone();
            // Empty, removed with the pass's other emptied blocks at its end.
            direct[k] = true;
        } else {
            let jump = func.dfg.make_inst(
                InstructionData::Jump {
                    opcode: Opcode::Jump,
                    dest: BlockCall::new(s, args.clone()),
                },
                None,
            );
            func.srclocs[jump] = func.srclocs[term];
            func.layout.append_inst(jump, arm.block);
            uses.add(func, jump);
        }
    }
    uses.add(func, term);
    // `S` branches on the condition again; an empty suffix that only jumps is skipped.
    let mut dests = [
        BlockCall::new(rest_a, Vec::new()),
        BlockCall::new(rest_b, Vec::new()),
    ];
    for (k, rest) in [rest_a, rest_b].into_iter().enumerate() {
        if let Some(call) = only_jump(func, rest) {
            if k == 1 && dests[0].block == call.block {
                continue;
            }
            dests[k] = call;
            // Emptied, and removed with the pass's other emptied blocks at its end.
            let jump = func.terminator(rest).expect("a suffix ends in its jump");
            func.layout.remove_inst(jump);
        }
    }
    let brif = func.dfg.make_inst(
        InstructionData::Brif {
            opcode: Opcode::Brif,
            arg: cond,
            dests,
        },
        None,
    );
    func.srclocs[brif] = func.srclocs[term];
    func.layout.append_inst(brif, s);
    uses.add(func, brif);
    done.touched = vec![branch, a.block, b.block, s, rest_a, rest_b];
    done
}

/// Are both suffixes empty, with both arms jumping to the same block?
fn both_jump_to_one_block(
    func: &Function,
    a: &Arm,
    after_a: &[bool],
    b: &Arm,
    after_b: &[bool],
) -> bool {
    let target = |arm: &Arm, after: &[bool]| {
        if after.iter().any(|&x| x) {
            return None;
        }
        let t = func.terminator(arm.block)?;
        match &func.dfg.insts[t] {
            InstructionData::Jump { dest, .. } => Some(dest.block),
            _ => None,
        }
    };
    target(a, after_a).is_some_and(|x| target(b, after_b) == Some(x))
}

/// Of two blocks, the one later in the layout.
fn later(func: &Function, x: Block, y: Block) -> Block {
    if func.layout.block_position(x) > func.layout.block_position(y) {
        x
    } else {
        y
    }
}

/// Moves the suffix nodes of `arm` and its terminator to a new block placed after `at`;
/// returns it.
fn move_suffix(func: &mut Function, arm: &Arm, after: &[bool], at: Block) -> Block {
    let rest = func.dfg.make_block();
    func.layout.insert_block_after(rest, at);
    let mut moving: Vec<Inst> = (0..arm.len())
        .filter(|&i| after[i])
        .map(|i| arm.insts[i])
        .collect();
    if let Some(t) = func.terminator(arm.block) {
        moving.push(t);
    }
    for inst in moving {
        func.layout.remove_inst(inst);
        func.layout.append_inst(inst, rest);
    }
    rest
}

/// The results of the instructions left in `arm`'s block (its prefix) that something
/// outside the block reads.
fn carried(func: &Function, uses: &Uses, arm: &Arm) -> Vec<Value> {
    func.layout
        .block_insts(arm.block)
        .iter()
        .filter_map(|&i| func.dfg.inst_result(i))
        .filter(|&r| {
            uses.of(func, r)
                .any(|u| func.layout.inst_block(u) != Some(arm.block))
        })
        .collect()
}

/// The parameter of `S` that the two sides pass `(v, w)` to, made when there is none;
/// and whether it was made.
fn carry(
    func: &mut Function,
    _uses: &mut Uses,
    s: Block,
    params: &mut HashMap<(Value, Value), Value>,
    (v, w): (Value, Value),
    args_a: &mut Vec<Value>,
    args_b: &mut Vec<Value>,
) -> (Value, bool) {
    if let Some(&p) = params.get(&(v, w)) {
        return (p, false);
    }
    let p = func.dfg.append_block_param(s, func.dfg.value_type(v));
    args_a.push(v);
    args_b.push(w);
    params.insert((v, w), p);
    (p, true)
}

/// Makes every reader of `v` outside `home` (its prefix block) read `p` instead.
fn reroute(func: &mut Function, uses: &mut Uses, v: Value, p: Value, home: Block) {
    let readers: Vec<Inst> = uses
        .of(func, v)
        .filter(|&u| func.layout.inst_block(u) != Some(home))
        .collect();
    for u in readers {
        func.dfg.insts[u].map_values(|x| if x == v { p } else { x });
        uses.add(func, u);
    }
}

/// A value of type `ty` available at the end of `branch`, for the side of a parameter of
/// `S` whose lanes never read it: a result or parameter of `branch`, else a new zero.
fn filler(func: &mut Function, uses: &mut Uses, branch: Block, ty: Type) -> Value {
    let existing = func
        .dfg
        .block_params(branch)
        .iter()
        .copied()
        .chain(
            func.layout
                .block_insts(branch)
                .iter()
                .filter_map(|&i| func.dfg.inst_result(i)),
        )
        .find(|&v| func.dfg.value_type(v) == ty);
    if let Some(v) = existing {
        return v;
    }
    let zero = func.dfg.make_inst(InstructionData::zero(ty), Some(ty));
    let at = func.layout.block_insts(branch).len().saturating_sub(1);
    func.layout.insert_inst(zero, branch, at);
    uses.add(func, zero);
    func.dfg.inst_result(zero).expect("a constant has a result")
}

/// The destination of `block` when it holds nothing but a jump.
fn only_jump(func: &Function, block: Block) -> Option<BlockCall> {
    let insts = func.layout.block_insts(block);
    if insts.len() != 1 {
        return None;
    }
    match &func.dfg.insts[insts[0]] {
        InstructionData::Jump { dest, .. } => Some(dest.clone()),
        _ => None,
    }
}
