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
//! are: every lane at the cascade's head runs exactly one of them once. An operand that
//! differs between the arms is renamed by a chain of `select`s that gives each lane its
//! own arm's operand: on the cascade's conditions, and on compares of a table's index
//! ([`Table`]), the arms grouped by the operand they read so that `G` groups take `G - 1`
//! `select`s. A table's chains are chosen together ([`chains`]: which group each falls
//! back to, and whether it builds on another chain), so that they share the compares
//! and `select`s they can. A cascade's conditions computed in its inner levels (`else
//! if (x == k)`) are computed at its head instead, when that code is cheap, pure and
//! cannot fault ([`condition_moves`]), charged as run on every lane. The cost model
//! counts the chain's `select`s, compares and moved conditions against what the hoist
//! saves; the hoist is worked out with renaming and without, and the more profitable
//! is made.

mod chains;

use super::cost::copy_cost;
use super::dag::Arm;
use super::edges::Edges;
use super::matching::{Matcher, Matching, Pair};
use super::pdg::Direction;
use super::sink::{jump_args, roots};
use super::uses::Uses;
use rustc_hash::FxHashMap as HashMap;
use warplift_ir::cfg::PostDominatorTree;
use warplift_ir::{Block, Function, InstructionData, IntCC, Opcode, Type, Value, ValueDef};

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
    for other in &arms[1..] {
        let matcher = Matcher::new(func, first, other, direction, rename, &[], &[]);
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
    /// Instructions made to tell a table's arms apart for those `select`s: compares of
    /// its index, the constants they read, and the `bor`s joining an arm's compares.
    pub tests: u64,
    /// Instructions moved from a cascade's inner levels to its head so that its `select`s
    /// can read the levels' conditions there (the compares, and what they read).
    pub conditions: u64,
    /// The summed profit of the matchings kept, less what renaming costs.
    pub profit: i64,
}

/// How a lane's own arm can be told before a multi-way branch: what a renamed operand is
/// chosen by.
pub enum Choice {
    /// Not at all: an operand must be one value in every arm.
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
    /// The index of a divergent `br_table`: a compare per arm tells its lanes apart, and
    /// a chain of `select`s on those compares gives each lane its arm's operand.
    Table(Table),
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

/// A divergent `br_table` as a multi-way set whose arms can be told apart before it, by
/// the table indices that lead to each (the default's arm by those past the table too).
///
/// A renamed operand is chosen by a chain of `select`s. The arms are grouped by the
/// operand they read; one group's operand is the fallback, and each other group's is
/// selected where the index leads to one of its arms: `select t_g, x_g, (...)`. The
/// tests are exclusive (a lane's index leads to one arm), so their order in the chain
/// does not matter, and `G` groups take `G - 1` `select`s. The fallback is the group
/// whose test would cost the most (the default's, whose test must also catch every index
/// past the table, unless a cheaper one is already made). A group's test is the cheapest
/// of these shapes on its indices (see [`Test`]):
///
/// - `index < n` (unsigned), when they are `0 .. n` (two or more): one compare;
/// - `index - lo < n` (unsigned; an index below `lo` wraps around to a large number),
///   when they are `n ≥ 2` consecutive indices from `lo`: a subtraction and a compare;
/// - `index >= lo` (unsigned), for the default's group when its indices are the last of
///   the table, from `lo`, or none (`lo` the table's length): one compare;
/// - `index == i` for each of its indices, joined by `bor` (and `index >= len` for the
///   default's): a compare each, a `bor` less.
///
/// Each constant a test reads is made once, unless the table's block already has it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    /// The table's index (an `i32`, read unsigned).
    pub index: Value,
    /// The indices leading to each arm, ascending.
    pub indices: Vec<Vec<u32>>,
    /// The arm the default destination is: it also takes every index from `len` on.
    pub default: usize,
    /// The number of the table's entries (the default not counted).
    pub len: u32,
}

/// The shape of a test on a table's index (see [`Table`]).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Test {
    /// `index <u n`.
    Below(u32),
    /// `index - lo <u len`.
    Range { lo: u32, len: u32 },
    /// `index >=u lo`.
    AtLeast(u32),
    /// `index == i` for each `i`, joined by `bor`, and `index >=u len` when given.
    Equal(Vec<u32>, Option<u32>),
}

impl Test {
    /// The cheapest test that holds exactly for `indices` (ascending) and, when `past` is
    /// given (the table's length), every index from it on.
    fn of(indices: &[u32], past: Option<u32>) -> Test {
        let consecutive = indices
            .windows(2)
            .all(|w| w[0].checked_add(1) == Some(w[1]));
        let len = u32::try_from(indices.len()).unwrap_or(u32::MAX);
        match (indices, past) {
            ([], Some(end)) => Test::AtLeast(end),
            ([lo, ..], Some(end))
                if consecutive && indices.last() == end.checked_sub(1).as_ref() =>
            {
                Test::AtLeast(*lo)
            }
            ([0, _, ..], None) if consecutive => Test::Below(len),
            ([lo, _, ..], None) if consecutive => Test::Range { lo: *lo, len },
            _ => Test::Equal(indices.to_vec(), past),
        }
    }

    /// The constants the test reads.
    fn constants(&self) -> Vec<u32> {
        match self {
            Test::Below(n) | Test::AtLeast(n) => vec![*n],
            Test::Range { lo, len } => vec![*lo, *len],
            Test::Equal(is, past) => is.iter().chain(past).copied().collect(),
        }
    }

    /// The instructions the test takes besides its constants.
    fn operations(&self) -> i64 {
        match self {
            Test::Below(_) | Test::AtLeast(_) => 1,
            Test::Range { .. } => 2,
            Test::Equal(is, past) => {
                let compares = is.len() as i64 + i64::from(past.is_some());
                2 * compares - 1
            }
        }
    }

    /// The instructions the test takes, constants included.
    fn cost(&self) -> i64 {
        self.operations() + self.constants().len() as i64
    }
}

impl Table {
    /// The table ending `block`, whose distinct destinations are `arms`.
    pub fn of(func: &Function, block: Block, arms: &[Block]) -> Option<Table> {
        let term = func.terminator(block)?;
        let InstructionData::BrTable { arg, dests, .. } = &func.dfg.insts[term] else {
            return None;
        };
        let arm_of = |b: Block| arms.iter().position(|&a| a == b);
        let default = arm_of(dests.first()?.block)?;
        let mut indices = vec![Vec::new(); arms.len()];
        for (i, d) in dests[1..].iter().enumerate() {
            indices[arm_of(d.block)?].push(u32::try_from(i).ok()?);
        }
        Some(Table {
            index: *arg,
            indices,
            default,
            len: u32::try_from(dests.len() - 1).ok()?,
        })
    }

    /// The test that holds exactly on the lanes whose index leads to one of `arms`.
    fn test(&self, arms: &[usize]) -> Test {
        let mut indices: Vec<u32> = arms
            .iter()
            .flat_map(|&k| self.indices[k].iter().copied())
            .collect();
        indices.sort_unstable();
        Test::of(&indices, arms.contains(&self.default).then_some(self.len))
    }

    /// The instructions the tests of `groups` (distinct) take, each constant counted once
    /// and not at all when `has` says the table's block already has it.
    fn tests_cost(&self, groups: &[&[usize]], has: impl Fn(u32) -> bool) -> i64 {
        let mut constants: Vec<u32> = Vec::new();
        let mut cost = 0;
        for arms in groups {
            let test = self.test(arms);
            cost += test.operations();
            for c in test.constants() {
                if !constants.contains(&c) {
                    constants.push(c);
                }
            }
        }
        cost + constants.iter().filter(|&&c| !has(c)).count() as i64
    }
}

/// An `iconst.i32 c` of `branch`'s, if it has one.
fn existing_constant(func: &Function, branch: Block, c: u32) -> Option<Value> {
    func.layout.block_insts(branch).iter().find_map(|&i| {
        let r = func.dfg.inst_result(i)?;
        let is_it = matches!(
            func.dfg.insts[i],
            InstructionData::UnaryImm { opcode: Opcode::Iconst, imm } if imm == u64::from(c)
        ) && func.dfg.value_type(r) == Type::I32;
        is_it.then_some(r)
    })
}

/// The most instructions moved to a cascade's head per level whose condition is computed
/// in the cascade (a compare and the constant it reads are two).
pub const MAX_CONDITION_INSTS: usize = 4;

/// Hoists what every arm of `cascade` computes alike to its head: with differing operands
/// renamed by a chain of `select`s on the cascade's conditions, or only what every arm
/// computes from the same operands, whichever the cost model prices higher.
///
/// A condition the cascade computes in an inner level (the usual `else if (x == k)`) is
/// not available at the head. When it is cheap, pure, non-faulting code reading values
/// the head has ([`condition_moves`]: compares, constants, ALU operations, never a load
/// nor a division), it can be computed at the head instead, for every lane: the renamed
/// hoist is then charged those instructions' latency on top of its `select`s, as if no
/// lane ran them before (a warp whose lanes all leave at the first level did not), and
/// they move only when that hoist is the one made.
pub fn hoist_cascade(
    func: &mut Function,
    uses: &mut Uses,
    cascade: &Cascade,
    arms: &[Arm],
    opts: &super::Options,
) -> HoistedTuples {
    let moves = condition_moves(func, cascade);
    let choice = if moves.is_some() {
        Choice::Cascade {
            levels: cascade.levels.clone(),
            inner: cascade.inner.clone(),
        }
    } else {
        Choice::None
    };
    let moves = moves.unwrap_or_default();
    let extra: i64 = moves
        .iter()
        .map(|&i| super::cost::benefit(&func.dfg.insts[i]))
        .sum();
    match pick(func, cascade.head, arms, &choice, opts, extra) {
        Some((plan, true)) => {
            for &inst in &moves {
                func.layout.remove_inst(inst);
                let at = func.layout.block_insts(cascade.head).len() - 1;
                func.layout.insert_inst(inst, cascade.head, at);
            }
            let mut done = apply_hoist(func, uses, cascade.head, arms, &choice, plan);
            done.conditions = moves.len() as u64;
            done
        }
        Some((plan, false)) => apply_hoist(func, uses, cascade.head, arms, &Choice::None, plan),
        None => HoistedTuples::default(),
    }
}

/// The instructions of a cascade's inner blocks that computing every level's condition
/// at its head takes, in an order that defines before it reads (the blocks in order,
/// each in its own order), or `None` when some condition cannot move: it reads something
/// that is not pure, non-faulting and cheap ([`super::flatten::speculable`]: no load, no
/// division), or more than [`MAX_CONDITION_INSTS`] instructions a level. Empty when the
/// head computes them all.
fn condition_moves(func: &Function, cascade: &Cascade) -> Option<Vec<warplift_ir::Inst>> {
    let mut moved: Vec<warplift_ir::Inst> = Vec::new();
    for level in &cascade.levels {
        let before = moved.len();
        let mut stack = vec![level.cond];
        while let Some(v) = stack.pop() {
            if available(func, &cascade.inner, v) {
                continue;
            }
            let ValueDef::Result(inst) = func.dfg.value_def(v) else {
                return None;
            };
            if moved.contains(&inst) {
                continue;
            }
            if !super::flatten::speculable(&func.dfg.insts[inst])
                || moved.len() - before >= MAX_CONDITION_INSTS
            {
                return None;
            }
            moved.push(inst);
            stack.extend_from_slice(func.dfg.insts[inst].args());
        }
    }
    let place = |&i: &warplift_ir::Inst| {
        let block = func
            .layout
            .inst_block(i)
            .expect("an inner block's instruction");
        let b = cascade.inner.iter().position(|&x| x == block);
        let at = func.layout.block_insts(block).iter().position(|&x| x == i);
        (b, at)
    };
    moved.sort_by_key(place);
    Some(moved)
}

/// A multi-way hoist worked out, before anything moves.
struct Plan {
    tuples: Tuples,
    /// The matchings' profit, less what the renaming costs.
    profit: i64,
    /// For a table: how each renaming chain is built, in the order the hoist meets them.
    chains: Vec<chains::ChainPlan>,
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
/// `select`s (at most `N - 1`). Every lane ran exactly one member of each tuple with
/// those operands, so the merged instruction computes for each lane what its arm did;
/// nothing is speculated (the branch sends every lane to one of the arms).
///
/// The cost model: the pairwise matchings price a `select` for each arm whose operand
/// differs from the first arm's; the chains' actual `select`s, and for a table the
/// compares that tell its arms apart, replace that estimate. The hoist is worked out
/// with renaming (where `choice` allows it) and without; the one of higher profit is
/// made, when its profit exceeds the threshold.
pub fn hoist_tuples(
    func: &mut Function,
    uses: &mut Uses,
    branch: Block,
    arms: &[Arm],
    choice: &Choice,
    opts: &super::Options,
) -> HoistedTuples {
    match pick(func, branch, arms, choice, opts, 0) {
        Some((plan, true)) => apply_hoist(func, uses, branch, arms, choice, plan),
        Some((plan, false)) => apply_hoist(func, uses, branch, arms, &Choice::None, plan),
        None => HoistedTuples::default(),
    }
}

/// The hoist to make, worked out with renaming under `choice` (charged `extra` cycles
/// more: what making the choice available costs) and without; `true` when it renames.
/// `None` when neither's profit exceeds the threshold.
fn pick(
    func: &Function,
    branch: Block,
    arms: &[Arm],
    choice: &Choice,
    opts: &super::Options,
    extra: i64,
) -> Option<(Plan, bool)> {
    let renamed = (opts.rename && !matches!(choice, Choice::None))
        .then(|| plan(func, branch, arms, choice, opts))
        .flatten()
        .map(|mut p| {
            p.profit -= extra;
            p
        })
        .filter(|p| p.profit > opts.threshold);
    let same = plan(func, branch, arms, &Choice::None, opts);
    match (renamed, same) {
        (Some(r), Some(s)) if s.profit >= r.profit => Some((s, false)),
        (Some(r), _) => Some((r, true)),
        (None, s) => s.map(|s| (s, false)),
    }
}

/// The tuples that can rise to `branch` under `choice` (renaming where it can tell the
/// arms apart), with their profit, when it exceeds `threshold`.
fn plan(
    func: &Function,
    branch: Block,
    arms: &[Arm],
    choice: &Choice,
    opts: &super::Options,
) -> Option<Plan> {
    let threshold = opts.threshold;
    let rename = !matches!(choice, Choice::None);
    let (profit, members, mut nodes) =
        match_every_arm(func, arms, Direction::Hoist, rename, |matcher, _, _| {
            matcher.best(threshold)
        })?;
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
            .filter(|&i| !operands_agree(func, arms, &t, i, choice))
            .collect();
        if bad.is_empty() {
            break;
        }
        nodes.retain(|n| !bad.contains(n));
    }
    if nodes.is_empty() {
        return None;
    }
    let tuples = Tuples { members, nodes };
    let (estimated, needed, chains) =
        renamings(func, branch, arms, &tuples, choice, opts.joint_renaming);
    // The matchings priced `estimated` selects; the chains need `needed` instructions.
    let profit = profit + (estimated - needed) * copy_cost();
    (profit > threshold).then_some(Plan {
        tuples,
        profit,
        chains,
    })
}

/// Makes the hoist `plan` worked out under `choice`.
fn apply_hoist(
    func: &mut Function,
    uses: &mut Uses,
    branch: Block,
    arms: &[Arm],
    choice: &Choice,
    plan: Plan,
) -> HoistedTuples {
    let t = plan.tuples;
    let mut chains: HashMap<Vec<Value>, Value> = HashMap::default();
    // A table's chains, built in the order the plan lists them.
    let mut built: Vec<Value> = Vec::new();
    let mut merged: HashMap<usize, Value> = HashMap::default();
    let mut tests = Tests::default();
    let mut done = HoistedTuples {
        profit: plan.profit,
        ..HoistedTuples::default()
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
            let v = match chains.get(&vs) {
                Some(&v) => v,
                None => {
                    let v = match choice {
                        Choice::Cascade { levels, .. } => {
                            cascade_chain(func, uses, branch, levels, &vs, inst0, &mut done)
                        }
                        Choice::Table(table) => {
                            let v = table_chain(
                                func,
                                uses,
                                branch,
                                table,
                                &mut tests,
                                (&plan.chains[built.len()], &built),
                                inst0,
                                &mut done,
                            );
                            built.push(v);
                            v
                        }
                        Choice::None => {
                            unreachable!("operands differ only where the arms can be told apart")
                        }
                    };
                    chains.insert(vs, v);
                    v
                }
            };
            data.args_mut()[s] = v;
        }
        let ty = func.dfg.inst_result(inst0).map(|r| func.dfg.value_type(r));
        let r = insert_before_branch(func, uses, branch, data, ty, inst0)
            .expect("a matched instruction has a result");
        merged.insert(i, r);
        done.tuples += 1;
    }
    done.tests = tests.made;
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

/// Makes `data` right before the terminator of `branch` (its last instruction), with the
/// source location of `from`, and returns its result.
fn insert_before_branch(
    func: &mut Function,
    uses: &mut Uses,
    branch: Block,
    data: InstructionData,
    ty: Option<Type>,
    from: warplift_ir::Inst,
) -> Option<Value> {
    let inst = func.dfg.make_inst(data, ty);
    func.srclocs[inst] = func.srclocs[from];
    let at = func.layout.block_insts(branch).len() - 1;
    func.layout.insert_inst(inst, branch, at);
    uses.add(func, inst);
    func.dfg.inst_result(inst)
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

/// What renaming the tuples' differing operands under `choice` takes: the number of
/// `select`s the pairwise matchings priced (one per arm whose operand differs from the
/// first arm's, each distinct list once per instruction), the number of instructions the
/// chains need (their `select`s, each distinct list of operands once, and for a table the
/// tests its chains read, each made once), and for a table how each chain is built
/// (chosen for all chains together when `joint`, see [`chains`]).
fn renamings(
    func: &Function,
    branch: Block,
    arms: &[Arm],
    t: &Tuples,
    choice: &Choice,
    joint: bool,
) -> (i64, i64, Vec<chains::ChainPlan>) {
    let mut estimated = 0;
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
            if vs.iter().all(|&v| v == vs[0]) || chained.contains(&vs) {
                continue;
            }
            chained.push(vs);
        }
    }
    match choice {
        Choice::Cascade { levels, .. } => {
            let needed = chained.iter().map(|vs| chain_length(levels, vs)).sum();
            (estimated, needed, Vec::new())
        }
        Choice::Table(table) => {
            let has = |c| existing_constant(func, branch, c).is_some();
            let plans = chains::choose(table, &chained, joint, &has);
            let needed = chains::cost(table, &plans.iter().collect::<Vec<_>>(), &has);
            (estimated, needed, plans)
        }
        Choice::None => (estimated, 0, Vec::new()),
    }
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
fn cascade_chain(
    func: &mut Function,
    uses: &mut Uses,
    branch: Block,
    levels: &[Level],
    vs: &[Value],
    from: warplift_ir::Inst,
    done: &mut HoistedTuples,
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
        below = select(func, uses, branch, cond, x, y, from);
        done.selects += 1;
    }
    below
}

/// Makes `select cond, x, y` before the terminator of `branch`.
fn select(
    func: &mut Function,
    uses: &mut Uses,
    branch: Block,
    cond: Value,
    x: Value,
    y: Value,
    from: warplift_ir::Inst,
) -> Value {
    let data = InstructionData::Ternary {
        opcode: Opcode::Select,
        args: [cond, x, y],
    };
    let ty = func.dfg.value_type(x);
    insert_before_branch(func, uses, branch, data, Some(ty), from).expect("a select has a result")
}

/// Makes, before the table's terminator, the chain `plan` (its base, then a `select` on
/// the test of each group laid over it, the first outermost) giving each lane of a
/// `br_table` its arm's operand, and returns its value; `built` are the values of the
/// chains before it.
#[allow(clippy::too_many_arguments)]
fn table_chain(
    func: &mut Function,
    uses: &mut Uses,
    branch: Block,
    table: &Table,
    tests: &mut Tests,
    (plan, built): (&chains::ChainPlan, &[Value]),
    from: warplift_ir::Inst,
    done: &mut HoistedTuples,
) -> Value {
    let mut chosen = match plan.base {
        chains::Base::Value(v) => v,
        chains::Base::Chain(c) => built[c],
    };
    for (value, arms) in plan.overlays.iter().rev() {
        let test = tests.test(func, uses, branch, table, arms.clone(), from);
        chosen = select(func, uses, branch, test, *value, chosen, from);
        done.selects += 1;
    }
    chosen
}

/// The tests of groups of a table's arms made so far, and the constants they read.
#[derive(Default)]
struct Tests {
    /// The groups tested, in the order their tests were made.
    groups: Vec<Vec<usize>>,
    values: Vec<Value>,
    constants: HashMap<u32, Value>,
    /// Instructions made (constants included).
    made: u64,
}

impl Tests {
    /// The `i1` that holds exactly on the lanes whose index leads to one of `arms`.
    fn test(
        &mut self,
        func: &mut Function,
        uses: &mut Uses,
        branch: Block,
        table: &Table,
        arms: Vec<usize>,
        from: warplift_ir::Inst,
    ) -> Value {
        if let Some(g) = self.groups.iter().position(|x| *x == arms) {
            return self.values[g];
        }
        let index = table.index;
        let compare = |cond, args| InstructionData::IntCompare {
            opcode: Opcode::Icmp,
            cond,
            args,
        };
        let v = match table.test(&arms) {
            Test::Below(n) => {
                let n = self.constant(func, uses, branch, n, from);
                let data = compare(IntCC::UnsignedLessThan, [index, n]);
                self.make(func, uses, branch, data, Type::I1, from)
            }
            Test::AtLeast(lo) => {
                let lo = self.constant(func, uses, branch, lo, from);
                let data = compare(IntCC::UnsignedGreaterThanOrEqual, [index, lo]);
                self.make(func, uses, branch, data, Type::I1, from)
            }
            Test::Range { lo, len } => {
                let lo = self.constant(func, uses, branch, lo, from);
                let len = self.constant(func, uses, branch, len, from);
                let data = InstructionData::Binary {
                    opcode: Opcode::Isub,
                    args: [index, lo],
                };
                let offset = self.make(func, uses, branch, data, Type::I32, from);
                let data = compare(IntCC::UnsignedLessThan, [offset, len]);
                self.make(func, uses, branch, data, Type::I1, from)
            }
            Test::Equal(is, past) => {
                let mut any: Option<Value> = None;
                let compares = is
                    .into_iter()
                    .map(|i| (IntCC::Equal, i))
                    .chain(past.map(|end| (IntCC::UnsignedGreaterThanOrEqual, end)));
                for (cond, c) in compares {
                    let c = self.constant(func, uses, branch, c, from);
                    let data = compare(cond, [index, c]);
                    let holds = self.make(func, uses, branch, data, Type::I1, from);
                    any = Some(match any {
                        None => holds,
                        Some(prev) => {
                            let data = InstructionData::Binary {
                                opcode: Opcode::Bor,
                                args: [prev, holds],
                            };
                            self.make(func, uses, branch, data, Type::I1, from)
                        }
                    });
                }
                any.expect("a group other than the fallback has an index")
            }
        };
        self.groups.push(arms);
        self.values.push(v);
        v
    }

    /// `iconst.i32 c`: the one made before, or the table's block's own, or a new one.
    fn constant(
        &mut self,
        func: &mut Function,
        uses: &mut Uses,
        branch: Block,
        c: u32,
        from: warplift_ir::Inst,
    ) -> Value {
        if let Some(&v) = self.constants.get(&c) {
            return v;
        }
        let v = match existing_constant(func, branch, c) {
            Some(v) => v,
            None => {
                let data = InstructionData::UnaryImm {
                    opcode: Opcode::Iconst,
                    imm: u64::from(c),
                };
                self.make(func, uses, branch, data, Type::I32, from)
            }
        };
        self.constants.insert(c, v);
        v
    }

    /// Makes `data` before the table's terminator, counting it.
    fn make(
        &mut self,
        func: &mut Function,
        uses: &mut Uses,
        branch: Block,
        data: InstructionData,
        ty: Type,
        from: warplift_ir::Inst,
    ) -> Value {
        self.made += 1;
        insert_before_branch(func, uses, branch, data, Some(ty), from)
            .expect("a test instruction has a result")
    }
}

/// Can every operand of tuple `i` be had at the branch: the members of one other tuple,
/// or values defined outside the arms (and, for a cascade, before its inner blocks) —
/// the same in every arm, or (when `choice` can tell the arms apart) each arm's own?
fn operands_agree(func: &Function, arms: &[Arm], t: &Tuples, i: usize, choice: &Choice) -> bool {
    let (inst0, _) = member(arms, t, 0, i);
    let slots = func.dfg.insts[inst0].args().len();
    let inner: &[Block] = match choice {
        Choice::Cascade { inner, .. } => inner,
        Choice::None | Choice::Table(_) => &[],
    };
    let rename = !matches!(choice, Choice::None);
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

#[cfg(test)]
mod tests {
    use super::Test;

    /// Each shape holds for exactly the indices it was made for: checked on every index
    /// of a table of 6 entries, and past it.
    #[test]
    fn a_table_test_holds_exactly_on_its_arms_indices() {
        let holds = |t: &Test, i: u32| match t {
            Test::Below(n) => i < *n,
            Test::Range { lo, len } => i.wrapping_sub(*lo) < *len,
            Test::AtLeast(lo) => i >= *lo,
            Test::Equal(is, past) => is.contains(&i) || past.is_some_and(|end| i >= end),
        };
        let cases: [(&[u32], Option<u32>, Test); 7] = [
            (&[0, 1, 2], None, Test::Below(3)),
            (&[2, 3], None, Test::Range { lo: 2, len: 2 }),
            (&[4], None, Test::Equal(vec![4], None)),
            (&[1, 3], None, Test::Equal(vec![1, 3], None)),
            (&[], Some(6), Test::AtLeast(6)),
            (&[4, 5], Some(6), Test::AtLeast(4)),
            (&[2], Some(6), Test::Equal(vec![2], Some(6))),
        ];
        for (indices, past, shape) in cases {
            let test = Test::of(indices, past);
            assert_eq!(test, shape, "{indices:?} {past:?}");
            for i in 0..10 {
                let want = indices.contains(&i) || past.is_some_and(|end| i >= end);
                assert_eq!(holds(&test, i), want, "{test:?} at {i}");
            }
        }
        // Costs: one compare (and its constant) for a run from 0 or to the end; a
        // subtraction more for a run elsewhere; a compare per index, joined by `bor`s.
        assert_eq!(Test::Below(3).cost(), 2);
        assert_eq!(Test::Range { lo: 2, len: 2 }.cost(), 4);
        assert_eq!(Test::Equal(vec![1, 3], None).cost(), 5);
        assert_eq!(Test::Equal(vec![2], Some(6)).cost(), 5);
    }
}
