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
use warplift_ir::cfg::{Cfg, ControlFlowGraph, PostDominatorTree};

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

/// The linearized region as a graph of its own: its entry, its blocks, guards and exit,
/// without the rest of the kernel. A region is entered only from its entry and left only
/// to its exit, so post-dominance among its blocks is the same as in the whole kernel, and
/// checking one region costs what the region costs, not what the kernel does.
struct RegionGraph<'a> {
    func: &'a MirFunction,
    /// The region's blocks still placed, entry first.
    nodes: Vec<MBlock>,
    members: HashSet<MBlock>,
}

impl Cfg for RegionGraph<'_> {
    type Node = MBlock;

    fn entry(&self) -> Option<MBlock> {
        self.nodes.first().copied()
    }

    fn num_nodes(&self) -> usize {
        self.func.blocks.len()
    }

    fn successors(&self, node: MBlock, out: &mut Vec<MBlock>) {
        out.extend(
            self.func
                .successors(node)
                .into_iter()
                .filter(|s| self.members.contains(s)),
        );
    }

    fn nodes(&self) -> impl Iterator<Item = MBlock> + '_ {
        self.nodes.iter().copied()
    }
}

/// Does every conditional branch among `blocks` reconverge at its fall-through successor
/// (the shape of Claim 1 that keeps each block to one execution per pass of the warp)?
/// `region` lists the region's blocks (entry first); `removed` those taken out.
fn structured(
    func: &MirFunction,
    region: &[MBlock],
    removed: &HashSet<MBlock>,
    blocks: &[MBlock],
) -> bool {
    let nodes: Vec<MBlock> = region
        .iter()
        .copied()
        .filter(|b| !removed.contains(b))
        .collect();
    let members: HashSet<MBlock> = nodes.iter().copied().collect();
    let graph = RegionGraph {
        func,
        nodes,
        members,
    };
    let pdt = PostDominatorTree::compute(&ControlFlowGraph::compute(&graph));
    blocks
        .iter()
        .filter(|b| graph.members.contains(b))
        .all(|&b| match func.terminator(b).map(|t| &t.kind) {
            Some(MInstKind::Branch { not_taken, .. }) => {
                pdt.reconvergence_point(b) == Some(not_taken.block)
            }
            _ => true,
        })
}

/// What the optimisations change, cloned to try a batch of changes and roll it back.
#[derive(Clone)]
struct State {
    func: MirFunction,
    /// The guard values on each edge (updated as edges move).
    edges: HashMap<(MBlock, MBlock), Values>,
    /// The predecessors of every block of the region (updated as edges move).
    preds: HashMap<MBlock, Vec<MBlock>>,
    /// Guards taken out of the code.
    removed: HashSet<MBlock>,
    stats: OptStats,
}

impl State {
    /// Moves edge `from -> old` to `new`, with its value set: later guards decide on it.
    fn retarget(&mut self, from: MBlock, old: MBlock, new: MBlock) {
        let vals = self.edges.remove(&(from, old)).unwrap_or_default();
        self.edges.entry((from, new)).or_default().extend(vals);
        if let Some(t) = self.func.blocks[from].insts.last_mut() {
            t.kind.for_each_target_mut(|t| {
                if t.block == old {
                    t.block = new;
                }
            });
        }
        if let Some(p) = self.preds.get_mut(&old) {
            p.retain(|&b| b != from);
        }
        let p = self.preds.entry(new).or_default();
        if !p.contains(&from) {
            p.push(from);
        }
    }
}

/// Applies `step` to every item in turn, keeping only changes after which `check` holds.
///
/// Checking after every step would cost a whole-function analysis per guard, quadratic in
/// the kernel; instead the remaining steps are tried all at once, and only when the result
/// fails the check is the first failing step found by bisection (each probe replays a
/// prefix from the last good state), dropped, and the rest tried again. A step is kept
/// exactly when it would have been kept checking one step at a time, provided that a
/// failing prefix stays failing as it grows; otherwise some later good step may be dropped
/// too, never a bad one kept.
fn apply_checked<T: Copy>(
    state: &mut State,
    items: &[T],
    step: impl Fn(&mut State, T),
    check: impl Fn(&State) -> bool,
) {
    let replay = |base: &State, items: &[T]| {
        let mut s = base.clone();
        for &item in items {
            step(&mut s, item);
        }
        s
    };
    let mut rest = items;
    while !rest.is_empty() {
        let all = replay(state, rest);
        if check(&all) {
            *state = all;
            return;
        }
        // `rest[..good]` passes, `rest[..bad]` fails.
        let (mut good, mut bad) = (0, rest.len());
        while bad - good > 1 {
            let mid = (good + bad) / 2;
            if check(&replay(state, &rest[..mid])) {
                good = mid;
            } else {
                bad = mid;
            }
        }
        *state = replay(state, &rest[..good]);
        rest = &rest[good + 1..];
    }
}

/// Edges moving together: from each of `sources`, `from` becomes `to`.
struct Move<'a> {
    sources: &'a [MBlock],
    from: MBlock,
    to: MBlock,
}

/// How far [`breaks_structure`] looks: it only has to be right often, the whole-function
/// check decides.
const LOCAL_SCAN: usize = 64;

/// Would moving an edge of `p` forward to `new` make a branch reconverge past its
/// fall-through? In the linearized layout a branch's lanes split at it and meet at its
/// fall-through successor, so the blocks between the two are its span, and the spans nest.
/// An edge from inside the innermost span around `p` to beyond that span's end leaves it;
/// and when the edge is a guard's fall-through, the guard's span grows to `new`, which
/// every edge from inside must then stay within. Looking at most [`LOCAL_SCAN`] blocks
/// away, this predicts what the whole-function check would refuse, so that refused steps
/// need not be found by bisection.
fn breaks_structure(
    state: &State,
    layout: &[MBlock],
    position: &HashMap<MBlock, usize>,
    guarded: &HashSet<MBlock>,
    moves: &Move,
    p: MBlock,
) -> bool {
    let new = moves.to;
    if std::env::var_os("WL_NOPRE").is_some() {
        return false;
    }
    let (Some(&from), Some(&to)) = (position.get(&p), position.get(&new)) else {
        return false;
    };
    let placed = |i: &usize| !state.removed.contains(&layout[*i]);
    // Only the guards (and the blocks guards merged into) reconverge at their fall-through;
    // the branches of structured sub-regions keep their own shape.
    let span_end = |x: MBlock| match state.func.terminator(x).map(|t| &t.kind) {
        Some(MInstKind::Branch { not_taken, .. }) if guarded.contains(&x) => {
            // A fall-through moving in the same step ends where it is going.
            let end = if not_taken.block == moves.from && moves.sources.contains(&x) {
                moves.to
            } else {
                not_taken.block
            };
            position.get(&end).copied()
        }
        _ => None,
    };
    // The innermost span around `p`: the nearest branch before it that meets after it.
    let enclosing = (0..from)
        .rev()
        .filter(placed)
        .take(LOCAL_SCAN)
        .find_map(|i| span_end(layout[i]).filter(|&e| e > from));
    if enclosing.is_some_and(|e| e < to) {
        return true;
    }
    // A guard's own span grows to `new`: nothing inside may leave it.
    if span_end(p).is_some() {
        return (from + 1..to.min(layout.len()))
            .filter(placed)
            .take(LOCAL_SCAN)
            .any(|i| {
                state
                    .func
                    .successors(layout[i])
                    .iter()
                    .any(|s| position.get(s).is_some_and(|&j| j > to))
            });
    }
    false
}

/// What the optimisation steps read and do not change.
#[derive(Copy, Clone)]
struct Layout<'a> {
    lin: &'a Linearized,
    tests: &'a HashMap<MBlock, Test>,
    /// The blocks in their order before the optimisations.
    layout: &'a [MBlock],
    /// Each block's index in `layout`.
    position: &'a HashMap<MBlock, usize>,
    /// The guards, back-edge guards and blocks guards may merge into.
    guarded: &'a HashSet<MBlock>,
    level: u32,
}

/// O1 and O2 at guard `i`: moves the forward edges into it whose values lack its id to its
/// fall-through successor, and removes it when the edges left always match.
fn skip_guard(state: &mut State, cx: &Layout<'_>, i: usize) {
    let Layout {
        lin,
        tests,
        layout,
        position,
        guarded,
        level,
    } = *cx;
    let g = lin.guards[i];
    let k = i as u32 + 1;
    let (block, fall) = match state.func.terminator(g).map(|t| &t.kind) {
        Some(MInstKind::Branch {
            taken, not_taken, ..
        }) => (taken.block, not_taken.block),
        _ => return,
    };
    let incoming = state.preds.get(&g).cloned().unwrap_or_default();
    let forward = |p: &MBlock| position[p] < position[&g];
    // Below O2 a guard's fall-through is not moved: lanes that fail one guard test the
    // next, however few values they can carry.
    let movable = |p: &MBlock| level >= 2 || !matches!(tests.get(p), Some(Test::Eq(_)));
    let lacking: Vec<MBlock> = incoming
        .iter()
        .copied()
        .filter(|p| {
            forward(p) && movable(p) && !state.edges.get(&(*p, g)).is_some_and(|v| v.contains(&k))
        })
        .collect();
    // The guard's edges move together or not at all, as the whole-function check would
    // take or refuse them.
    let moves = Move {
        sources: &lacking,
        from: g,
        to: fall,
    };
    if lacking
        .iter()
        .any(|&p| breaks_structure(state, layout, position, guarded, &moves, p))
    {
        return;
    }
    if lacking.len() == incoming.len() {
        return;
    }
    for &p in &lacking {
        state.retarget(p, g, fall);
    }
    state.stats.edges_redirected += lacking.len() as u64;
    let rest: Vec<MBlock> = incoming
        .into_iter()
        .filter(|p| !lacking.contains(p))
        .collect();
    let always = rest.iter().all(|p| {
        state
            .edges
            .get(&(*p, g))
            .is_some_and(|v| v.iter().all(|&x| x == k))
    });
    if always {
        for &p in &rest {
            state.retarget(p, g, block);
        }
        state.func.order.retain(|&b| b != g);
        for s in state.func.successors(g) {
            if let Some(ps) = state.preds.get_mut(&s) {
                ps.retain(|&b| b != g);
            }
        }
        state.removed.insert(g);
        state.stats.guards_removed += 1;
        state.stats.tests_removed += 1;
    }
}

/// O3 at guard `g`: merged into its single predecessor when that is a block of the region
/// that jumps to it.
fn merge_guard(state: &mut State, region: &HashSet<MBlock>, g: MBlock) {
    if state.removed.contains(&g) {
        return;
    }
    let p = match state.preds.get(&g).map(Vec::as_slice) {
        Some(&[p]) => p,
        _ => return,
    };
    let jumps_here = matches!(
        state.func.terminator(p).map(|t| &t.kind),
        Some(MInstKind::Jump { dest }) if dest.block == g
    );
    if !region.contains(&p) || !jumps_here {
        return;
    }
    let body = state.func.blocks[g].insts.clone();
    let insts = &mut state.func.blocks[p].insts;
    insts.pop();
    insts.extend(body);
    state.func.order.retain(|&b| b != g);
    // `p` now branches where `g` did.
    for s in state.func.successors(p) {
        if let Some(ps) = state.preds.get_mut(&s) {
            for b in ps.iter_mut().filter(|b| **b == g) {
                *b = p;
            }
        }
        if let Some(vals) = state.edges.remove(&(g, s)) {
            state.edges.insert((p, s), vals);
        }
    }
    state.removed.insert(g);
    state.stats.guards_removed += 1;
}

/// Optimises the guards of one linearized region at `level` (1 to 3).
pub fn optimize(func: &mut MirFunction, lin: &Linearized, regs: GuardRegs, level: u32) -> OptStats {
    let mut tests: HashMap<MBlock, Test> = HashMap::new();
    for (i, &g) in lin.guards.iter().enumerate() {
        tests.insert(g, Test::Eq(i as u32 + 1));
        if let Some(be) = lin.back_edge_guards[i] {
            tests.insert(be, Test::Le(i as u32 + 1));
        }
    }
    let edges = guard_values(func, lin, &tests, regs);
    let layout = func.order.clone();
    let position: HashMap<MBlock, usize> = func
        .order
        .iter()
        .enumerate()
        .map(|(i, &b)| (b, i))
        .collect();
    // The region's own blocks: every edge into a guard comes from one of them.
    let mut region: Vec<MBlock> = vec![lin.entry];
    region.extend(lin.blocks.iter().copied());
    region.extend(lin.guards.iter().copied());
    region.extend(lin.back_edge_guards.iter().flatten().copied());
    region.push(lin.exit);
    let mut preds: HashMap<MBlock, Vec<MBlock>> = HashMap::new();
    for &b in &region {
        for s in func.successors(b) {
            let p = preds.entry(s).or_default();
            if !p.contains(&b) {
                p.push(b);
            }
        }
    }
    let mut state = State {
        func: std::mem::take(func),
        edges,
        preds,
        removed: HashSet::new(),
        stats: OptStats::default(),
    };
    // Skipping guards can make two groups of lanes meet a guard along different paths
    // (e.g. two overlapping skips); a change is kept only while every branch of the region
    // still reconverges at its fall-through successor.
    let mut checked: Vec<MBlock> = lin.guards.clone();
    checked.extend(lin.back_edge_guards.iter().flatten());
    checked.extend(lin.tails.iter().copied());
    let check = |s: &State| structured(&s.func, &region, &s.removed, &checked);
    let guarded: HashSet<MBlock> = checked.iter().copied().collect();
    let cx = Layout {
        lin,
        tests: &tests,
        layout: &layout,
        position: &position,
        guarded: &guarded,
        level,
    };

    let guards: Vec<usize> = (0..lin.guards.len()).collect();
    apply_checked(&mut state, &guards, |s, i| skip_guard(s, &cx, i), check);
    if level >= 3 {
        let region: HashSet<MBlock> = lin.tails.iter().copied().collect();
        let all_guards: Vec<MBlock> = lin
            .guards
            .iter()
            .chain(lin.back_edge_guards.iter().flatten())
            .copied()
            .collect();
        apply_checked(
            &mut state,
            &all_guards,
            |s, g| merge_guard(s, &region, g),
            check,
        );
    }
    *func = state.func;
    state.stats
}
