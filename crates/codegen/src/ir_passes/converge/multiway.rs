//! Sink across more than two arms: the multi-way case (a divergent `br_table`, or a
//! reconvergence point several divergent paths reach), which the paper's microbenchmark
//! "multi-way switch" exercises.
//!
//! The reconvergence point `J` has `N ≥ 3` predecessors, each ending in a jump to it; every
//! lane arriving at `J` ran exactly one of them. The first arm is matched against each
//! other arm with the two-arm table ([`super::matching`], rooted at the values passed to
//! `J`); a node of the first arm sinks when every table matches it, as one *tuple* of `N`
//! instructions. An operand slot of a tuple reads the merged result of another tuple when
//! every arm's operand is that tuple's member, the common value when all arms read the
//! same one, and otherwise a new parameter of `J` to which each arm passes its own
//! operand. A tuple sinks only when its members' results are read by nothing but tuples
//! (through merged slots) and by the jumps at positions where every arm passes the same
//! tuple; tuples failing that are dropped until the rest is legal.
//!
//! Hoisting is the mirror image, to the block of the multi-way branch: the distinct
//! destinations of a divergent `br_table`, or the arms of a [`Cascade`] of `brif`s — an
//! if / else-if / ... / else chain, whose arms are one multi-way set just as a table's
//! are: every lane at the cascade's head runs exactly one of them once. A cascade's
//! arms can be told apart before its head when its conditions are all computed there:
//! a chain of `select`s on them then renames an operand that differs between arms.

use super::cost::copy_cost;
use super::dag::Arm;
use super::edges::Edges;
use super::matching::{Matcher, Matching, Pair};
use super::pdg::Direction;
use super::sink::{jump_args, roots};
use super::uses::Uses;
use rustc_hash::FxHashMap as HashMap;
use warplift_ir::cfg::PostDominatorTree;
use warplift_ir::{Block, Function, InstructionData, Opcode, Value, ValueDef};

/// What a multi-way sink did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct SunkTuples {
    /// Tuples (one instruction per arm) merged into one instruction at `J`.
    pub tuples: u64,
    /// Parameters added to `J` for renamed operands.
    pub params: u64,
    /// The summed profit of the matchings kept.
    pub profit: i64,
}

/// One arm's member of each tuple, by first-arm node; `None` for an arm where the node
/// has no partner.
struct Tuples {
    /// `members[k][i]`: the node of arm `k` matched with node `i` of arm 0.
    members: Vec<HashMap<usize, Pair>>,
    /// The first arm's nodes that form tuples, in order.
    nodes: Vec<usize>,
}

/// The summed profit, each arm's partners by first-arm node, and the nodes every arm pairs.
type ArmMatches = (i64, Vec<HashMap<usize, Pair>>, Vec<usize>);

/// Matches the first arm against every other arm with the two-arm table (`pick` runs the
/// table in the direction's own way) and returns the summed profit, each arm's partners by
/// first-arm node (`members[0]` is empty), and the first arm's nodes that every matching
/// pairs. `None` when some arm matches nothing, so no tuple can form.
fn match_every_arm(
    func: &Function,
    arms: &[Arm],
    direction: Direction,
    rename: bool,
    pick: impl Fn(&Matcher, &Arm, &Arm) -> Matching,
) -> Option<ArmMatches> {
    let first = &arms[0];
    let mut profit = 0;
    let mut members: Vec<HashMap<usize, Pair>> = vec![HashMap::default()];
    let none0 = vec![false; first.len()];
    for other in &arms[1..] {
        let none = vec![false; other.len()];
        let matcher = Matcher::new(func, first, other, direction, rename, &none0, &none);
        let m = pick(&matcher, first, other);
        if m.pairs.is_empty() {
            return None;
        }
        profit += m.profit;
        members.push(m.pairs.iter().map(|p| (p.a, *p)).collect());
    }
    let nodes = (0..first.len())
        .filter(|i| members[1..].iter().all(|m| m.contains_key(i)))
        .collect();
    Some((profit, members, nodes))
}

/// Sinks the expressions common to every arm of `arms` into `join`.
pub fn sink_tuples(
    func: &mut Function,
    uses: &mut Uses,
    join: Block,
    arms: &[Arm],
    rename: bool,
    threshold: i64,
) -> SunkTuples {
    let Some((profit, members, mut nodes)) = match_every_arm(
        func,
        arms,
        Direction::Sink,
        rename,
        |matcher, first, other| matcher.choose(roots(func, first, other), threshold),
    ) else {
        return SunkTuples::default();
    };
    // Drop tuples whose results are read where the merged result cannot stand in.
    loop {
        let tuples = Tuples {
            members: members.clone(),
            nodes: nodes.clone(),
        };
        let bad = illegal(func, uses, arms, &tuples);
        if bad.is_empty() {
            break;
        }
        nodes.retain(|n| !bad.contains(n));
    }
    if nodes.is_empty() {
        return SunkTuples::default();
    }
    let tuples = Tuples { members, nodes };
    let mut done = apply(func, uses, join, arms, &tuples);
    done.profit = profit;
    done
}

/// The member of tuple `i` in arm `k`, and whether its operands are swapped.
fn member(arms: &[Arm], t: &Tuples, k: usize, i: usize) -> (warplift_ir::Inst, bool) {
    if k == 0 {
        return (arms[0].insts[i], false);
    }
    let p = t.members[k][&i];
    (arms[k].insts[p.b], p.swapped)
}

fn operands(func: &Function, inst: warplift_ir::Inst, swapped: bool) -> Vec<Value> {
    let mut args = func.dfg.insts[inst].args().to_vec();
    if swapped {
        args.swap(0, 1);
    }
    args
}

/// The tuple whose member in arm `k` defines `v`, if any.
fn tuple_of(func: &Function, arms: &[Arm], t: &Tuples, k: usize, v: Value) -> Option<usize> {
    let node = arms[k].node_of(func, v)?;
    if k == 0 {
        return t.nodes.contains(&node).then_some(node);
    }
    t.nodes
        .iter()
        .copied()
        .find(|&i| t.members[k][&i].b == node)
}

/// Slot `s` of tuple `i` reads tuple `c` in every arm.
fn merged_slot(func: &Function, arms: &[Arm], t: &Tuples, i: usize, s: usize) -> Option<usize> {
    let mut common = None;
    for k in 0..arms.len() {
        let (inst, swapped) = member(arms, t, k, i);
        let v = operands(func, inst, swapped)[s];
        let c = tuple_of(func, arms, t, k, v)?;
        if common.is_some_and(|x| x != c) {
            return None;
        }
        common = Some(c);
    }
    common
}

/// The first-arm nodes of tuples some member of which is read where the merged result
/// cannot stand in for it.
fn illegal(func: &Function, uses: &Uses, arms: &[Arm], t: &Tuples) -> Vec<usize> {
    let jumps: Vec<Vec<Value>> = arms.iter().map(|a| jump_args(func, a.block)).collect();
    let mut bad = Vec::new();
    for &i in &t.nodes {
        let ok = (0..arms.len()).all(|k| {
            let (inst, _) = member(arms, t, k, i);
            let Some(r) = func.dfg.inst_result(inst) else {
                return false;
            };
            uses.of(func, r).all(|user| {
                if Some(user) == func.terminator(arms[k].block) {
                    // Every position passing `r` passes tuple `i` in every arm.
                    return jumps[k].iter().enumerate().all(|(pos, &v)| {
                        v != r
                            || (0..arms.len())
                                .all(|q| tuple_of(func, arms, t, q, jumps[q][pos]) == Some(i))
                    });
                }
                let Some(u) = t
                    .nodes
                    .iter()
                    .copied()
                    .find(|&u| member(arms, t, k, u).0 == user)
                else {
                    return false;
                };
                let (uinst, swapped) = member(arms, t, k, u);
                operands(func, uinst, swapped)
                    .iter()
                    .enumerate()
                    .all(|(s, &v)| v != r || merged_slot(func, arms, t, u, s) == Some(i))
            })
        });
        if !ok {
            bad.push(i);
        }
    }
    bad
}

fn apply(
    func: &mut Function,
    uses: &mut Uses,
    join: Block,
    arms: &[Arm],
    t: &Tuples,
) -> SunkTuples {
    let mut done = SunkTuples::default();
    let terms: Vec<_> = arms
        .iter()
        .map(|a| func.terminator(a.block).expect("arm ends in a jump"))
        .collect();
    let original_params = func.dfg.block_params(join).len();
    let mut params: HashMap<Vec<Value>, Value> = HashMap::default();
    let mut merged: HashMap<usize, Value> = HashMap::default();
    let mut at = 0;
    for &i in &t.nodes {
        let insts: Vec<_> = (0..arms.len()).map(|k| member(arms, t, k, i)).collect();
        let slots = func.dfg.insts[insts[0].0].args().len();
        let mut args = Vec::with_capacity(slots);
        for s in 0..slots {
            if let Some(c) = merged_slot(func, arms, t, i, s) {
                args.push(merged[&c]);
                continue;
            }
            let vs: Vec<Value> = insts
                .iter()
                .map(|&(inst, sw)| operands(func, inst, sw)[s])
                .collect();
            if vs.iter().all(|&v| v == vs[0]) {
                args.push(vs[0]);
                continue;
            }
            let p = match params.get(&vs) {
                Some(&p) => p,
                None => {
                    let p = func
                        .dfg
                        .append_block_param(join, func.dfg.value_type(vs[0]));
                    for (k, &v) in vs.iter().enumerate() {
                        func.dfg.insts[terms[k]].branch_destinations_mut()[0]
                            .args
                            .push(v);
                    }
                    done.params += 1;
                    params.insert(vs, p);
                    p
                }
            };
            args.push(p);
        }
        let mut data = func.dfg.insts[insts[0].0].clone();
        data.args_mut().copy_from_slice(&args);
        let ty = func
            .dfg
            .value_type(func.dfg.inst_result(insts[0].0).expect("has a result"));
        let new = func.dfg.make_inst(data, Some(ty));
        func.srclocs[new] = func.srclocs[insts[0].0];
        func.layout.insert_inst(new, join, at);
        at += 1;
        uses.add(func, new);
        let r = func.dfg.inst_result(new).expect("has a result");
        merged.insert(i, r);
        done.tuples += 1;
    }
    for &term in &terms {
        uses.add(func, term);
    }
    // Replace the members' results and the parameters they were passed to.
    let mut results: HashMap<Value, usize> = HashMap::default();
    for &i in &t.nodes {
        for k in 0..arms.len() {
            if let Some(r) = func.dfg.inst_result(member(arms, t, k, i).0) {
                results.insert(r, i);
            }
        }
    }
    for k in (0..original_params).rev() {
        let v0 = func.dfg.insts[terms[0]].branch_destinations()[0].args[k];
        if let Some(&i) = results.get(&v0) {
            let param = func.dfg.block_params(join)[k];
            uses.replace(func, param, merged[&i]);
            func.dfg.remove_block_param(join, k);
            for &term in &terms {
                func.dfg.insts[term].branch_destinations_mut()[0]
                    .args
                    .remove(k);
            }
        }
    }
    for &i in &t.nodes {
        for k in 0..arms.len() {
            let inst = member(arms, t, k, i).0;
            let r = func.dfg.inst_result(inst).expect("has a result");
            func.layout.remove_inst(inst);
            uses.replace(func, r, merged[&i]);
        }
    }
    done
}

/// What a multi-way hoist did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct HoistedTuples {
    /// Tuples (one instruction per arm) merged into one instruction before the branch.
    pub tuples: u64,
    /// `select`s made for renamed operands.
    pub selects: u64,
    /// The summed profit of the matchings kept, less what renaming costs.
    pub profit: i64,
}

/// How a lane's own arm can be told before a multi-way branch: what a renamed operand is
/// chosen by.
pub enum Choice {
    /// Not at all (a `br_table`, whose index would need a compare per arm as well as a
    /// `select`): an operand must be one value in every arm.
    None,
    /// The conditions of a cascade of `brif`s, all available at its head: a chain of
    /// `select`s on them gives each lane its arm's operand. A renamed operand must be
    /// available at the head too: not defined in the cascade's `inner` blocks.
    Cascade {
        /// The cascade's levels, head first.
        levels: Vec<Level>,
        /// The blocks between the head and the arms.
        inner: Vec<Block>,
    },
}

/// One `brif` of a cascade: its condition, and on which side the arm it leaves to is.
#[derive(Copy, Clone, Debug)]
pub struct Level {
    /// The branch condition.
    pub cond: Value,
    /// The arm of this level (the level's index in the cascade's arms) is the `brif`'s
    /// then side; the cascade goes on on the else side (for the last level: the last arm).
    pub arm_on_then: bool,
}

/// A cascade of divergent `brif`s, an if / else-if / ... / else chain: the head tests
/// `c0` and either leaves to arm 0 or goes on to a block that only it enters, which
/// tests `c1`, and so on; the last `brif` leaves to its two arms. Every lane at the head
/// runs exactly one arm, once, so the cascade's arms are one multi-way set, as a
/// `br_table`'s are.
pub struct Cascade {
    /// The block of the first `brif`, where common code rises to.
    pub head: Block,
    /// The blocks between the head and the arms: each holds the next `brif` and code
    /// without side effects (that a load may rise past).
    pub inner: Vec<Block>,
    /// The arms, level by level; the last two are the last `brif`'s.
    pub arms: Vec<Block>,
    /// The levels, head first.
    pub levels: Vec<Level>,
}

impl Cascade {
    /// The cascade whose innermost `brif` ends `block`, with the two sides `last` (as
    /// [`super::hoist_arms`] found them), when it has at least three arms; every level
    /// must reconverge at `join` and no arm may lead back into the cascade.
    pub fn find(
        func: &Function,
        cfg: &Edges,
        postdom: &PostDominatorTree<Block>,
        block: Block,
        join: Block,
        last: (Value, Block, Block),
    ) -> Option<Cascade> {
        let (cond, t, e) = last;
        let mut arms = vec![e, t];
        let mut levels = vec![Level {
            cond,
            arm_on_then: true,
        }];
        let mut inner = Vec::new();
        let mut cur = block;
        while let [p] = cfg.preds(cur) {
            let p = *p;
            let no_side_effects = func.layout.block_insts(cur).iter().all(|&i| {
                let op = func.dfg.insts[i].opcode();
                op.is_terminator() || !op.has_side_effects()
            });
            let Some(term) = func.terminator(p) else {
                break;
            };
            let InstructionData::Brif { arg, dests, .. } = &func.dfg.insts[term] else {
                break;
            };
            let (arm, arm_on_then) = if dests[1].block == cur && dests[0].block != cur {
                (dests[0].block, true)
            } else if dests[0].block == cur && dests[1].block != cur {
                (dests[1].block, false)
            } else {
                break;
            };
            let continues = dests.iter().all(|d| d.args.is_empty())
                && func.dfg.block_params(cur).is_empty()
                && no_side_effects
                && postdom.ipdom(p) == Some(join);
            let own = arm != join
                && arm != p
                && cfg.preds(arm) == [p]
                && func.dfg.block_params(arm).is_empty();
            if !continues || !own {
                break;
            }
            inner.push(cur);
            arms.push(arm);
            levels.push(Level {
                cond: *arg,
                arm_on_then,
            });
            cur = p;
        }
        if inner.is_empty() {
            return None;
        }
        arms.reverse();
        levels.reverse();
        inner.reverse();
        // A lane must not come back to the cascade before the join: it would run an arm
        // twice (the arms of a loop's body).
        let cascade_blocks: Vec<Block> =
            std::iter::once(cur).chain(inner.iter().copied()).collect();
        let loops = arms.iter().any(|&a| {
            cascade_blocks
                .iter()
                .any(|&b| super::returns_to(cfg, a, b, join))
        });
        (!loops).then_some(Cascade {
            head: cur,
            inner,
            arms,
            levels,
        })
    }
}

/// Is `v` available at the end of a cascade's head: not defined in the blocks `inner`
/// between it and the arms? (Values of the arms themselves are the caller's concern.)
fn available(func: &Function, inner: &[Block], v: Value) -> bool {
    let block = match func.dfg.value_def(v) {
        ValueDef::Result(inst) => func.layout.inst_block(inst),
        ValueDef::Param(b, _) => Some(b),
    };
    block.is_none_or(|b| !inner.contains(&b))
}

/// Hoists what every arm of `cascade` computes alike to its head, renaming differing
/// operands by a chain of `select`s on the cascade's conditions when they are all
/// available at the head and the cost model says the chain pays; otherwise (or when
/// renaming does not pay) only what every arm computes from the same operands rises.
pub fn hoist_cascade(
    func: &mut Function,
    uses: &mut Uses,
    cascade: &Cascade,
    arms: &[Arm],
    opts: &super::Options,
) -> HoistedTuples {
    let conds_available = cascade
        .levels
        .iter()
        .all(|l| available(func, &cascade.inner, l.cond));
    if opts.rename && conds_available {
        let choice = Choice::Cascade {
            levels: cascade.levels.clone(),
            inner: cascade.inner.clone(),
        };
        let done = hoist_tuples(func, uses, cascade.head, arms, &choice, opts);
        if done.tuples > 0 {
            return done;
        }
    }
    hoist_tuples(func, uses, cascade.head, arms, &Choice::None, opts)
}

/// Hoists the expressions common to every arm of `arms` (the arms of the multi-way branch
/// ending `branch`: the distinct destinations of a `br_table`, or a [`Cascade`]'s arms)
/// to the end of `branch`.
///
/// The first arm is matched against each other with the two-arm table in the Hoist
/// direction. The pairwise matchings compose: a node of the first arm rises when every
/// matching pairs it and, in every arm, each of its operands is the member of another
/// rising tuple in the same slot, or a value available at `branch` — the same in every
/// arm, or, when `choice` can tell the arms apart, each arm's own, renamed by a chain of
/// `N - 1` `select`s at most (one per level whose two sides read different values). Every
/// lane ran exactly one member of each tuple with those operands, so the merged
/// instruction computes for each lane what its arm did; nothing is speculated (the branch
/// sends every lane to one of the arms).
///
/// The cost model: the pairwise matchings price a `select` for each arm whose operand
/// differs from the first arm's; the chain's actual `select`s replace that estimate, and
/// the tuples rise only when their profit then still exceeds the threshold. A `br_table`
/// does not rename: telling its arms apart would take a compare on the index as well as a
/// `select` per arm.
pub fn hoist_tuples(
    func: &mut Function,
    uses: &mut Uses,
    branch: Block,
    arms: &[Arm],
    choice: &Choice,
    opts: &super::Options,
) -> HoistedTuples {
    let rename = opts.rename && matches!(choice, Choice::Cascade { .. });
    let threshold = opts.threshold;
    let Some((profit, members, mut nodes)) =
        match_every_arm(func, arms, Direction::Hoist, rename, |matcher, _, _| {
            matcher.best(threshold)
        })
    else {
        return HoistedTuples::default();
    };
    // Drop tuples whose operands cannot be had at the branch, until none is left to drop
    // (dropping one may strand the tuples that read it).
    loop {
        let t = Tuples {
            members: members.clone(),
            nodes: nodes.clone(),
        };
        let bad: Vec<usize> = nodes
            .iter()
            .copied()
            .filter(|&i| !operands_agree(func, arms, &t, i, choice, rename))
            .collect();
        if bad.is_empty() {
            break;
        }
        nodes.retain(|n| !bad.contains(n));
    }
    if nodes.is_empty() {
        return HoistedTuples::default();
    }
    let t = Tuples { members, nodes };
    let (estimated, needed) = renamings(func, arms, &t, choice);
    // The matchings priced `estimated` selects; the chains need `needed`.
    let profit = profit + (estimated - needed) * copy_cost();
    if profit <= threshold {
        return HoistedTuples::default();
    }
    let term = func
        .terminator(branch)
        .expect("the branch block ends in its multi-way branch");
    let mut selects: HashMap<Vec<Value>, Value> = HashMap::default();
    let mut merged: HashMap<usize, Value> = HashMap::default();
    let mut done = HoistedTuples {
        profit,
        ..HoistedTuples::default()
    };
    let at_term = |func: &Function| {
        func.layout
            .block_insts(branch)
            .iter()
            .position(|&x| x == term)
            .expect("placed")
    };
    for &i in &t.nodes {
        let inst0 = arms[0].insts[i];
        let mut data = func.dfg.insts[inst0].clone();
        for s in 0..data.args().len() {
            if let Some(c) = merged_slot(func, arms, &t, i, s) {
                data.args_mut()[s] = merged[&c];
                continue;
            }
            let vs = slot_values(func, arms, &t, i, s);
            if vs.iter().all(|&v| v == vs[0]) {
                continue;
            }
            let Choice::Cascade { levels, .. } = choice else {
                unreachable!("operands differ only where the arms can be told apart");
            };
            let v = match selects.get(&vs) {
                Some(&v) => v,
                None => {
                    let v = select_chain(func, uses, branch, levels, &vs, inst0, &at_term);
                    selects.insert(vs, v);
                    v
                }
            };
            data.args_mut()[s] = v;
        }
        let ty = func.dfg.inst_result(inst0).map(|r| func.dfg.value_type(r));
        let new = func.dfg.make_inst(data, ty);
        func.srclocs[new] = func.srclocs[inst0];
        let at = at_term(func);
        func.layout.insert_inst(new, branch, at);
        uses.add(func, new);
        let r = func
            .dfg
            .inst_result(new)
            .expect("a matched instruction has a result");
        merged.insert(i, r);
        done.tuples += 1;
    }
    done.selects = needed as u64;
    for &i in &t.nodes {
        for k in 0..arms.len() {
            let inst = member(arms, &t, k, i).0;
            let old = func.dfg.inst_result(inst).expect("has a result");
            func.layout.remove_inst(inst);
            uses.replace(func, old, merged[&i]);
        }
    }
    done
}

/// The operands of slot `s` of tuple `i`, arm by arm.
fn slot_values(func: &Function, arms: &[Arm], t: &Tuples, i: usize, s: usize) -> Vec<Value> {
    (0..arms.len())
        .map(|k| {
            let (inst, swapped) = member(arms, t, k, i);
            operands(func, inst, swapped)[s]
        })
        .collect()
}

/// The number of `select`s the cascade's chains need for the tuples' differing operands
/// (each distinct list of operands once), and the number the pairwise matchings priced
/// for them (one per arm whose operand differs from the first arm's, each distinct list
/// once per instruction).
fn renamings(func: &Function, arms: &[Arm], t: &Tuples, choice: &Choice) -> (i64, i64) {
    let Choice::Cascade { levels, .. } = choice else {
        return (0, 0);
    };
    let mut estimated = 0;
    let mut needed = 0;
    let mut chained: Vec<Vec<Value>> = Vec::new();
    for &i in &t.nodes {
        let slots = func.dfg.insts[arms[0].insts[i]].args().len();
        let mut priced: Vec<Vec<Value>> = Vec::new();
        for s in 0..slots {
            if merged_slot(func, arms, t, i, s).is_some() {
                continue;
            }
            let vs = slot_values(func, arms, t, i, s);
            if !priced.contains(&vs) {
                estimated += vs[1..].iter().filter(|&&v| v != vs[0]).count() as i64;
                priced.push(vs.clone());
            }
            if vs.iter().any(|&v| v != vs[0]) && !chained.contains(&vs) {
                needed += chain_length(levels, &vs);
                chained.push(vs);
            }
        }
    }
    (estimated, needed)
}

/// The `select`s of the chain for the operands `vs` (arm by arm): the last level chooses
/// between the last two arms, each level above between its own arm's operand and what
/// the levels below chose; a level whose two sides are one value needs none. (Once a
/// level has made a `select`, every level above needs one.)
fn chain_length(levels: &[Level], vs: &[Value]) -> i64 {
    let n = levels.len();
    let mut below = Some(vs[n]);
    let mut count = 0;
    for level in (0..n).rev() {
        if below != Some(vs[level]) {
            count += 1;
            below = None;
        }
    }
    count
}

/// Makes, before the terminator of `branch`, the chain of `select`s giving each lane of a
/// cascade its arm's operand of `vs`, and returns its value.
fn select_chain(
    func: &mut Function,
    uses: &mut Uses,
    branch: Block,
    levels: &[Level],
    vs: &[Value],
    from: warplift_ir::Inst,
    at_term: &impl Fn(&Function) -> usize,
) -> Value {
    let n = levels.len();
    let mut below = vs[n];
    for level in (0..n).rev() {
        let own = vs[level];
        if own == below {
            continue;
        }
        let Level { cond, arm_on_then } = levels[level];
        let (x, y) = if arm_on_then {
            (own, below)
        } else {
            (below, own)
        };
        let sel = func.dfg.make_inst(
            InstructionData::Ternary {
                opcode: Opcode::Select,
                args: [cond, x, y],
            },
            Some(func.dfg.value_type(own)),
        );
        func.srclocs[sel] = func.srclocs[from];
        let at = at_term(func);
        func.layout.insert_inst(sel, branch, at);
        uses.add(func, sel);
        below = func.dfg.inst_result(sel).expect("a select has a result");
    }
    below
}

/// Can every operand of tuple `i` be had at the branch: the members of one other tuple,
/// or values defined outside the arms (and, for a cascade, before its inner blocks) —
/// the same in every arm, or (with `rename`) each arm's own?
fn operands_agree(
    func: &Function,
    arms: &[Arm],
    t: &Tuples,
    i: usize,
    choice: &Choice,
    rename: bool,
) -> bool {
    let (inst0, _) = member(arms, t, 0, i);
    let slots = func.dfg.insts[inst0].args().len();
    let inner: &[Block] = match choice {
        Choice::Cascade { inner, .. } => inner,
        Choice::None => &[],
    };
    (0..slots).all(|s| {
        if merged_slot(func, arms, t, i, s).is_some() {
            return true;
        }
        let vs = slot_values(func, arms, t, i, s);
        let outside = vs
            .iter()
            .all(|&v| !arms.iter().any(|a| a.defines(func, v)) && available(func, inner, v));
        outside && (rename || vs.iter().all(|&v| v == vs[0]))
    })
}
