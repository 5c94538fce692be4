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

use super::dag::Arm;
use super::matching::{Matcher, Matching, Pair};
use super::pdg::Direction;
use super::sink::{jump_args, roots};
use super::uses::Uses;
use std::collections::HashMap;
use warplift_ir::{Block, Function, Value};

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
    let mut members: Vec<HashMap<usize, Pair>> = vec![HashMap::new()];
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
    let mut params: HashMap<Vec<Value>, Value> = HashMap::new();
    let mut merged: HashMap<usize, Value> = HashMap::new();
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
    let mut results: HashMap<Value, usize> = HashMap::new();
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
    /// The summed profit of the matchings kept.
    pub profit: i64,
}

/// Hoists the expressions common to every arm of `arms` (the distinct destinations of the
/// `br_table` ending `branch`) to the end of `branch`.
///
/// The first arm is matched against each other with the two-arm table in the Hoist
/// direction, without renaming: a differing operand would need an `N`-way choice on the
/// table's index, a chain of `N - 1` compares and `select`s, which for `N ≥ 3` costs more
/// than the one instruction it lets each arm drop. So the pairwise matchings compose: a
/// node of the first arm rises when every matching pairs it and, in every arm, each of
/// its operands is the same value defined before the branch or the member of another
/// rising tuple in the same slot. Every lane ran exactly one member of each tuple with
/// those operands, so the merged instruction computes for each lane what its arm did;
/// nothing is speculated (a lane that ran no arm does not exist: the table sends every
/// lane to one of them).
pub fn hoist_tuples(
    func: &mut Function,
    uses: &mut Uses,
    branch: Block,
    arms: &[Arm],
    threshold: i64,
) -> HoistedTuples {
    let Some((profit, members, mut nodes)) =
        match_every_arm(func, arms, Direction::Hoist, false, |matcher, _, _| {
            matcher.best(threshold)
        })
    else {
        return HoistedTuples::default();
    };
    // Drop tuples whose operands are not one value in every arm, until none is left to
    // drop (dropping one may strand the tuples that read it).
    loop {
        let t = Tuples {
            members: members.clone(),
            nodes: nodes.clone(),
        };
        let bad: Vec<usize> = nodes
            .iter()
            .copied()
            .filter(|&i| !operands_agree(func, arms, &t, i))
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
    let term = func
        .terminator(branch)
        .expect("the branch block ends in its br_table");
    let mut merged: HashMap<usize, Value> = HashMap::new();
    let mut done = HoistedTuples {
        profit,
        ..HoistedTuples::default()
    };
    for &i in &t.nodes {
        let inst0 = arms[0].insts[i];
        let mut data = func.dfg.insts[inst0].clone();
        for s in 0..data.args().len() {
            if let Some(c) = merged_slot(func, arms, &t, i, s) {
                data.args_mut()[s] = merged[&c];
            }
        }
        let ty = func.dfg.inst_result(inst0).map(|r| func.dfg.value_type(r));
        let new = func.dfg.make_inst(data, ty);
        func.srclocs[new] = func.srclocs[inst0];
        let at = func
            .layout
            .block_insts(branch)
            .iter()
            .position(|&x| x == term)
            .expect("placed");
        func.layout.insert_inst(new, branch, at);
        uses.add(func, new);
        let r = func
            .dfg
            .inst_result(new)
            .expect("a matched instruction has a result");
        merged.insert(i, r);
        done.tuples += 1;
    }
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

/// Does every operand of tuple `i` read one value in every arm: the same value defined
/// outside the arms, or the members of one other tuple?
fn operands_agree(func: &Function, arms: &[Arm], t: &Tuples, i: usize) -> bool {
    let (inst0, _) = member(arms, t, 0, i);
    let slots = func.dfg.insts[inst0].args().len();
    (0..slots).all(|s| {
        if merged_slot(func, arms, t, i, s).is_some() {
            return true;
        }
        let v0 = operands(func, inst0, false)[s];
        (0..arms.len()).all(|k| {
            let (inst, swapped) = member(arms, t, k, i);
            let v = operands(func, inst, swapped)[s];
            v == v0 && !arms[k].defines(func, v)
        })
    })
}
