//! The cost model of selective restructuring: does restructuring a region pay?
//!
//! Restructuring removes redundant block executions, but it adds work to every path: a
//! predicate assignment on each edge into a continuation point, a dispatch before the
//! tail, join blocks, and the moves that carry values through them. On a warp whose
//! threads all take one path the restructured region is always slower; on a warp whose
//! threads take every path through it (the worst case the divergence analysis admits,
//! and the paper's Section V-A experiment) the plain region runs some blocks several
//! times. The model prices both graphs under that worst case:
//!
//! *All paths taken.* A group of lanes at node `n` that will reconverge at `R` holds,
//! for each path from `n` to `R`, a lane that takes it. It runs `n`; at a branch it splits
//! into one group per successor, each running until the branch's immediate
//! post-dominator `d`, where the groups join and go on to `R` together. So the runs of
//! every node follow from states `(n, R)` with multiplicities, processed in topological
//! order (identical states add up: each is a group the warp runs separately). On
//! Figure 1's short circuit, `c?` splits into `{S1}` and `{d?}` reconverging at `S3`;
//! `d?` splits into `{S1}` and `{S2}`: `S1` runs twice before restructuring and once
//! after, where the dispatch `p?` and the assignments `p := 0`, `p := 1` run once each.
//!
//! The region is restructured when the priced restructured graph costs less than the
//! plain one: weights are instructions (an original block's, one per predicate
//! assignment plus its jump, a dispatch's branch, a cascade test's constant, compare and
//! branch, a join's jump; constants are not counted, as they mostly become immediates),
//! every assignment node is charged, too, one move for each block parameter of the
//! region it may carry to its continuation, and the restructured region one instruction
//! per predicate and per parameter for their initial definitions on entry. The model is
//! deliberately pessimistic about the restructured graph (the block merging after
//! restructuring removes many of the jumps it counts).
//!
//! *Cycles.* A loop's cost depends on its trip counts and on how far its lanes drift
//! out of phase, which no static model knows; restructuring a loop adds work to every
//! iteration (the `r` assignments and branch, the `q` dispatch), and the warp then runs a
//! block in each iteration in which any lane needs it, which on Figure 2 runs more
//! redundant executions than the plain loop. So the model declines every region whose
//! graph holds a cycle; the whole-kernel modes restructure loops as the paper does.
//! Restructuring does pay on a loop with a *splitting* branch (both arms stay in the
//! loop, the branch reconverges only after it, so each group of lanes runs the rest of
//! the loop on its own) when the lanes split often and the loop runs long: on the
//! corpus's `early_return_divergent`, 116 redundant executions become 5 and 695
//! warp-instructions 385 at width 32. But the shape does not decide it: on the random
//! cyclic kernels of the emulator's tests, reducible loops with such a branch included,
//! restructuring every unstructured region ran more warp-instructions in all 32 runs it
//! changed and fewer in none, and a rule accepting reducible loops with a splitting
//! branch made one of them go from 816 to 1355 warp-instructions at width 4. Telling the
//! two apart needs trip counts and how often the lanes split, which no static model here
//! knows (docs/restructuring.md has the numbers).

use super::graph::{Graph, Kind, Node};
use cranelift_entity::{EntityRef, SecondaryMap};
use std::collections::BTreeMap;

/// The most `(node, reconvergence point)` states the model follows before it gives up
/// (and declines): regions this complex are far beyond the unstructured subgraphs it
/// prices in practice.
const MAX_STATES: usize = 1 << 18;

/// What the model says of one region.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Verdict {
    /// Restructure: the estimated warp-instructions before and after.
    Pays { before: f64, after: f64 },
    /// Leave the region as it is, and why.
    Declines(String),
}

/// Prices `before` (the region's graph) and `after` (the same region restructured) with
/// `weight` per node. `param_moves`: the moves an assignment node is charged; `setup`:
/// the instructions the restructured region runs once on entry (the initial definitions
/// of its predicates and variables).
pub(crate) fn decide(
    before: &Graph,
    after: &Graph,
    weight: &dyn Fn(&Kind) -> f64,
    param_moves: f64,
    setup: f64,
) -> Verdict {
    if !before.is_acyclic() {
        return Verdict::Declines(
            "it holds a loop: restructuring a loop adds work to every iteration and does not \
             pay on a warp whose lanes leave it in different iterations"
                .to_string(),
        );
    }
    let Some(b) = all_paths_cost(before, &|g, n| weight(&g.kinds[n])) else {
        return Verdict::Declines("too complex for the cost model".to_string());
    };
    let after_weight = |g: &Graph, n: Node| match &g.kinds[n] {
        k @ Kind::Assign(_) => weight(k) + param_moves,
        // A branch folded into assignments computes each predicate instead, and carries
        // the region's values to the join its arms went to, as they did.
        k if !g.folded[n].is_empty() => weight(k) + g.folded[n].len() as f64 + param_moves,
        k => weight(k) + g.hoisted[n].len() as f64,
    };
    let Some(a) = all_paths_cost(after, &after_weight) else {
        return Verdict::Declines("too complex for the cost model".to_string());
    };
    let a = a + setup;
    if a < b {
        Verdict::Pays {
            before: b,
            after: a,
        }
    } else {
        Verdict::Declines(format!(
            "the cost model estimates {a} warp-instructions restructured against {b} as it \
             is, with every path taken"
        ))
    }
}

/// The weight of a node in instructions (the moves of assignment nodes aside);
/// `block_insts` counts an original block's.
pub(crate) fn kind_weight(kind: &Kind, block_insts: &dyn Fn(warplift_ir::Block) -> usize) -> f64 {
    match kind {
        Kind::Orig(b) | Kind::Copy(b) => block_insts(*b) as f64,
        Kind::Exit | Kind::Outside(_) | Kind::Removed(_) => 0.0,
        Kind::Assign(list) => list.len() as f64 + 1.0,
        Kind::Dispatch(_) | Kind::Dummy => 1.0,
        Kind::TestEq(..) | Kind::TestLt(..) => 3.0,
    }
}

/// The estimated instructions a warp runs through the visibly acyclic graph `g`, from
/// its entry to its exit, when its lanes take every path (see the module documentation);
/// `None` when the graph is cyclic or too complex.
pub(crate) fn all_paths_cost(g: &Graph, weight: &dyn Fn(&Graph, Node) -> f64) -> Option<f64> {
    let runs = all_paths_runs(g)?;
    Some(runs.iter().map(|(n, &r)| r * weight(g, n)).sum())
}

/// How often each node runs under the all-paths model.
pub(crate) fn all_paths_runs(g: &Graph) -> Option<SecondaryMap<Node, f64>> {
    // Reverse postorder of the visible graph from the entry (iterative).
    let succs = |n: Node| -> Vec<Node> {
        let mut v: Vec<Node> = g.visible_targets(n).collect();
        let mut seen = Vec::with_capacity(v.len());
        v.retain(|t| {
            let new = !seen.contains(t);
            seen.push(*t);
            new
        });
        v
    };
    let mut order: Vec<Node> = Vec::new();
    let mut state: SecondaryMap<Node, u8> = SecondaryMap::new(); // 0 new, 1 open, 2 done
    let mut stack: Vec<(Node, usize)> = vec![(g.entry, 0)];
    let mut lists: SecondaryMap<Node, Vec<Node>> = SecondaryMap::new();
    state[g.entry] = 1;
    lists[g.entry] = succs(g.entry);
    while let Some(&mut (n, ref mut i)) = stack.last_mut() {
        if let Some(&t) = lists[n].get(*i) {
            *i += 1;
            match state[t] {
                0 => {
                    state[t] = 1;
                    lists[t] = succs(t);
                    stack.push((t, 0));
                }
                1 => return None, // a cycle
                _ => {}
            }
            continue;
        }
        state[n] = 2;
        order.push(n);
        stack.pop();
    }
    order.reverse();
    let mut rpo: SecondaryMap<Node, u32> = SecondaryMap::new();
    for (i, &n) in order.iter().enumerate() {
        rpo[n] = i as u32;
    }
    // Immediate post-dominators, successors before predecessors. A node without
    // successors (the exit, or a node whose every edge is hidden) post-dominates itself
    // and is treated as reaching the exit.
    let sink = g.exit;
    let mut ipdom: SecondaryMap<Node, Option<Node>> = SecondaryMap::new();
    for &n in order.iter().rev() {
        let list = &lists[n];
        if list.is_empty() {
            ipdom[n] = (n != sink).then_some(sink);
            continue;
        }
        let mut acc = list[0];
        for &s in &list[1..] {
            let (mut a, mut b) = (acc, s);
            while a != b {
                let (ra, rb) = (rank(&rpo, a, sink), rank(&rpo, b, sink));
                if ra < rb {
                    a = ipdom[a].unwrap_or(sink);
                } else {
                    b = ipdom[b].unwrap_or(sink);
                }
            }
            acc = a;
        }
        ipdom[n] = Some(acc);
    }
    // The states, in topological order of their node: (rank, node, reconvergence point).
    let mut runs: SecondaryMap<Node, f64> = SecondaryMap::new();
    let mut states: BTreeMap<(u32, u32, u32), f64> = BTreeMap::new();
    let key = |n: Node, r: Node| (rank(&rpo, n, sink), n.index() as u32, r.index() as u32);
    states.insert(key(g.entry, sink), 1.0);
    let mut followed = 0usize;
    while let Some(((_, n, r), m)) = states.pop_first() {
        followed += 1;
        if followed > MAX_STATES {
            return None;
        }
        let (n, r) = (Node::new(n as usize), Node::new(r as usize));
        if n == r {
            continue;
        }
        runs[n] += m;
        let list = &lists[n];
        match list[..] {
            [] => {}
            [s] => *states.entry(key(s, r)).or_default() += m,
            _ => {
                let d = ipdom[n].unwrap_or(sink);
                for &s in list {
                    *states.entry(key(s, d)).or_default() += m;
                }
                *states.entry(key(d, r)).or_default() += m;
            }
        }
    }
    Some(runs)
}

/// The topological rank of `n`; the exit after everything.
fn rank(rpo: &SecondaryMap<Node, u32>, n: Node, sink: Node) -> u32 {
    if n == sink {
        u32::MAX
    } else {
        rpo[n]
    }
}
