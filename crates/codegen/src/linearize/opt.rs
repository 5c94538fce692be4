//! Guard optimisations (Section 4.2 of the paper), enabled by `linearize_opt`.
//!
//! First a *guard-value analysis*: which values the guard variable may hold on each edge
//! of the linearized region. A block of the region (and the region's entry) leaves the
//! constants it assigns; a guard `g == k` passes `{k}` to its block and the rest to its
//! fall-through; a back-edge guard `g <= k` passes the values up to `k` back and the rest
//! on. The sets only grow and are bounded by the region's ids, so the iteration ends.
//!
//! Then, by level:
//! - **O1** (levels 1 and up): an edge leaving a block of the region (or the region's entry,
//!   or a back-edge guard) whose value set lacks the id of the guard it enters can only fall
//!   through that guard, so it goes to the guard's fall-through successor instead (the paper
//!   redirects when one edge has, or one edge lacks, the value; every such edge is safe to
//!   redirect). A guard whose remaining edges carry only its id always holds: it is removed
//!   and its edges go to its block.
//! - **O2** (levels 2 and up): the guards of the blocks a block dominates are nested inside
//!   its own guard: the guard's fall-through edge, taken by the lanes that do not run the
//!   block, skips the guards that test for the blocks it dominates. The linearized order
//!   keeps each block's dominator subtree contiguous (`dominance_order` in the parent module), so the
//!   skipped guards form one run and the guard becomes an if-then around the whole subtree;
//!   every skip is proved by the value analysis, which sees that no lane failing the guard
//!   can want a block the guard dominates (every path to such a block passes the dominator)
//!   — with loops the dominance argument alone would not do: a lane sent back over a back
//!   edge may hold the id of a dominated block without passing the dominator's guard again.
//!   Further guards that the failing lanes cannot match are skipped the same way.
//! - **O3** (level 3): a guard with a single predecessor that leaves a part of the region
//!   (a region block, or the exit of a structured sub-region) is merged into it (its test
//!   and branch replace the block's jump).
//!
//! Blocks inside a structured sub-region do not write `g`: the analysis passes their
//! input on unchanged.
//!
//! Every transformation keeps each guard's branch reconverging at its fall-through
//! successor, so the result stays structured.

use super::{GuardRegs, Linearized};
use crate::mir::{MBlock, MInstKind, MirFunction, Operand};
use std::collections::{BTreeSet, HashMap, HashSet};
use warplift_ir::cfg::{ControlFlowGraph, PostDominatorTree};

/// What the optimisations did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct OptStats {
    /// Guard blocks removed (always-true guards, and guards merged by O3).
    pub guards_removed: u64,
    /// Guard tests removed (always-true guards).
    pub tests_removed: u64,
    /// Edges redirected past a guard (O1).
    pub edges_redirected: u64,
}

/// The test a guard block makes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Test {
    /// `g == id`.
    Eq(u32),
    /// `g <= id`.
    Le(u32),
}

type Values = BTreeSet<u32>;

/// The constants a block assigns to the guard variable (its last definition of `g`), or
/// `None` when it does not write `g` (a block inside a structured sub-region).
fn assigned(func: &MirFunction, b: MBlock, regs: GuardRegs) -> Option<Values> {
    let imm = |o: Operand| match o {
        Operand::Imm(v) => Some(v as u32),
        Operand::Reg(_) => None,
    };
    for i in func.blocks[b].insts.iter().rev() {
        match i.kind {
            MInstKind::Mov { dst, src, .. } if dst == regs.g => {
                return Some(imm(src).into_iter().collect());
            }
            MInstKind::Selp { dst, a, b, .. } if dst == regs.g => {
                return Some(imm(a).into_iter().chain(imm(b)).collect());
            }
            _ => {}
        }
    }
    None
}

/// The value sets on each edge `(from, to)` leaving a block of the linearized region.
fn guard_values(
    func: &MirFunction,
    lin: &Linearized,
    tests: &HashMap<MBlock, Test>,
    regs: GuardRegs,
) -> HashMap<(MBlock, MBlock), Values> {
    let mut edges: HashMap<(MBlock, MBlock), Values> = HashMap::new();
    let mut input: HashMap<MBlock, Values> = HashMap::new();
    // The analysis stays in the linearized region: lanes leave it at the exit, or at an
    // edge of the entry that bypasses the region.
    let inside: HashSet<MBlock> = tests
        .keys()
        .chain(&lin.blocks)
        .copied()
        .chain([lin.entry])
        .collect();
    let mut work: Vec<MBlock> = vec![lin.entry];
    let mut queued: HashSet<MBlock> = HashSet::from([lin.entry]);
    while let Some(b) = work.pop() {
        queued.remove(&b);
        let outs: Vec<(MBlock, Values)> = match (tests.get(&b), func.terminator(b)) {
            (Some(&test), Some(t)) => match &t.kind {
                MInstKind::Branch {
                    taken, not_taken, ..
                } => {
                    let inp = input.get(&b).cloned().unwrap_or_default();
                    let (yes, no): (Values, Values) = inp.iter().partition(|&&v| match test {
                        Test::Eq(k) => v == k,
                        Test::Le(k) => v <= k,
                    });
                    vec![(taken.block, yes), (not_taken.block, no)]
                }
                _ => continue,
            },
            _ => {
                // A block that does not write `g` passes on what it received.
                let vals = assigned(func, b, regs)
                    .unwrap_or_else(|| input.get(&b).cloned().unwrap_or_default());
                func.successors(b)
                    .into_iter()
                    .map(|s| (s, vals.clone()))
                    .collect()
            }
        };
        for (s, vals) in outs {
            let first = !edges.contains_key(&(b, s));
            let e = edges.entry((b, s)).or_default();
            let before = e.len();
            e.extend(vals.iter().copied());
            let grew = e.len() != before;
            let inp = input.entry(s).or_default();
            let before = inp.len();
            inp.extend(vals);
            if (first || grew || inp.len() != before)
                && s != lin.exit
                && inside.contains(&s)
                && queued.insert(s)
            {
                work.push(s);
            }
        }
    }
    edges
}

/// Does every conditional branch among `blocks` reconverge at its fall-through successor
/// (the shape of Claim 1 that keeps each block to one execution per pass of the warp)?
fn structured(func: &MirFunction, blocks: &[MBlock]) -> bool {
    let pdt = PostDominatorTree::compute(&ControlFlowGraph::compute(func));
    let placed: HashSet<MBlock> = func.order.iter().copied().collect();
    blocks.iter().filter(|b| placed.contains(b)).all(|&b| {
        match func.terminator(b).map(|t| &t.kind) {
            Some(MInstKind::Branch { not_taken, .. }) => {
                pdt.reconvergence_point(b) == Some(not_taken.block)
            }
            _ => true,
        }
    })
}

/// Optimises the guards of one linearized region at `level` (1 to 3).
pub fn optimize(func: &mut MirFunction, lin: &Linearized, regs: GuardRegs, level: u32) -> OptStats {
    let mut stats = OptStats::default();
    let mut tests: HashMap<MBlock, Test> = HashMap::new();
    for (i, &g) in lin.guards.iter().enumerate() {
        tests.insert(g, Test::Eq(i as u32 + 1));
        if let Some(be) = lin.back_edge_guards[i] {
            tests.insert(be, Test::Le(i as u32 + 1));
        }
    }
    let mut edges = guard_values(func, lin, &tests, regs);
    let position: HashMap<MBlock, usize> = func
        .order
        .iter()
        .enumerate()
        .map(|(i, &b)| (b, i))
        .collect();
    let preds = |func: &MirFunction, to: MBlock| -> Vec<MBlock> {
        func.order
            .iter()
            .copied()
            .filter(|&b| func.successors(b).contains(&to))
            .collect()
    };
    // Moves edge `from -> old` to `new`, with its value set: later guards decide on it.
    let retarget = |func: &mut MirFunction,
                    edges: &mut HashMap<(MBlock, MBlock), Values>,
                    from: MBlock,
                    old: MBlock,
                    new: MBlock| {
        let vals = edges.remove(&(from, old)).unwrap_or_default();
        edges.entry((from, new)).or_default().extend(vals);
        if let Some(t) = func.blocks[from].insts.last_mut() {
            t.kind.for_each_target_mut(|t| {
                if t.block == old {
                    t.block = new;
                }
            });
        }
    };
    let mut removed: HashSet<MBlock> = HashSet::new();

    // O1, one guard at a time, kept only when every branch of the region still
    // reconverges at its fall-through successor: skipping guards can otherwise make two
    // groups of lanes meet a guard along different paths (e.g. two overlapping skips).
    let mut checked: Vec<MBlock> = lin.guards.clone();
    checked.extend(lin.back_edge_guards.iter().flatten());
    checked.extend(lin.tails.iter().copied());
    for (i, &g) in lin.guards.iter().enumerate() {
        let saved = (func.blocks.clone(), edges.clone());
        let k = i as u32 + 1;
        let (block, fall) = match func.terminator(g).map(|t| &t.kind) {
            Some(MInstKind::Branch {
                taken, not_taken, ..
            }) => (taken.block, not_taken.block),
            _ => continue,
        };
        let incoming = preds(func, g);
        let forward = |p: &MBlock| position[p] < position[&g];
        // Below O2 a guard's fall-through is not moved: lanes that fail one guard test the
        // next, however few values they can carry.
        let movable = |p: &MBlock| level >= 2 || !matches!(tests.get(p), Some(Test::Eq(_)));
        let lacking: Vec<MBlock> = incoming
            .iter()
            .copied()
            .filter(|p| {
                forward(p) && movable(p) && !edges.get(&(*p, g)).is_some_and(|v| v.contains(&k))
            })
            .collect();
        if lacking.len() == incoming.len() {
            continue;
        }
        for &p in &lacking {
            retarget(func, &mut edges, p, g, fall);
        }
        let rest: Vec<MBlock> = incoming
            .into_iter()
            .filter(|p| !lacking.contains(p))
            .collect();
        let always = rest.iter().all(|p| {
            edges
                .get(&(*p, g))
                .is_some_and(|v| v.iter().all(|&x| x == k))
        });
        if always {
            for &p in &rest {
                retarget(func, &mut edges, p, g, block);
            }
        }
        let order = func.order.clone();
        if always {
            func.order.retain(|&b| b != g);
        }
        if structured(func, &checked) {
            stats.edges_redirected += lacking.len() as u64;
            if always {
                removed.insert(g);
                stats.guards_removed += 1;
                stats.tests_removed += 1;
            }
        } else {
            (func.blocks, edges) = saved;
            func.order = order;
        }
    }

    // O3.
    if level >= 3 {
        let region: HashSet<MBlock> = lin.tails.iter().copied().collect();
        let all_guards = lin
            .guards
            .iter()
            .chain(lin.back_edge_guards.iter().flatten())
            .copied();
        for g in all_guards.collect::<Vec<_>>() {
            if removed.contains(&g) {
                continue;
            }
            let p = match preds(func, g)[..] {
                [p] => p,
                _ => continue,
            };
            let jumps_here = matches!(
                func.terminator(p).map(|t| &t.kind),
                Some(MInstKind::Jump { dest }) if dest.block == g
            );
            if !region.contains(&p) || !jumps_here {
                continue;
            }
            let saved = (func.blocks[p].insts.clone(), func.order.clone());
            let body = func.blocks[g].insts.clone();
            let insts = &mut func.blocks[p].insts;
            insts.pop();
            insts.extend(body);
            func.order.retain(|&b| b != g);
            if structured(func, &checked) {
                removed.insert(g);
                stats.guards_removed += 1;
            } else {
                (func.blocks[p].insts, func.order) = saved;
            }
        }
    }
    stats
}
