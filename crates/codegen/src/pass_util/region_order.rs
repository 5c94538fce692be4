//! The order Algorithm 1 of "Taming Control Divergence in GPUs through Control Flow
//! Linearization" (Section 3.2) lays a region out in, and the back edges that order needs:
//! shared by the machine-level pass (`linearize`) and the SSA-level one (`linearize_ssa`),
//! so that both order a region's blocks the same way. Generic over the graph: each pass
//! gives its blocks and a successor function.
//!
//! - `region_rpo_by`: the region's blocks in reverse post-order, from its entry (line 5 of
//!   Algorithm 1), by an iterative depth-first search (kernels may be deep);
//! - `back_edge_targets`: for each part of the order with retreating edges, the part its
//!   back-edge guard returns to, moved up so that the back edges' intervals nest ("moved
//!   up, to the closest back edge destination").

use rustc_hash::{FxHashMap, FxHashSet};
use std::hash::Hash;

/// A region's blocks in reverse post-order over any graph, given by its successor function: shared by the
/// machine-level pass and the SSA-level one (`linearize_ssa`), so that both order a
/// region's blocks the same way.
pub(crate) fn region_rpo_by<N: Copy + Eq + Hash>(
    entry: N,
    members: &FxHashSet<N>,
    successors: impl Fn(N) -> Vec<N>,
) -> Vec<N> {
    let mut post = Vec::with_capacity(members.len());
    let mut seen: FxHashSet<N> = FxHashSet::default();
    // The search starts at the entry, which is not a member and so not in the result.
    let mut stack: Vec<(N, Vec<N>, usize)> = vec![(entry, successors(entry), 0)];
    while let Some((b, succs, i)) = stack.last_mut() {
        if let Some(&s) = succs.get(*i) {
            *i += 1;
            if members.contains(&s) && seen.insert(s) {
                let next = successors(s);
                stack.push((s, next, 0));
            }
        } else {
            if *b != entry {
                post.push(*b);
            }
            stack.pop();
        }
    }
    post.reverse();
    post
}

/// Back-edge destinations (indices into the order) for each part of the region with
/// retreating edges, moved up so that the back edges' intervals nest (Section 3.2).
/// `tails[i]` is the block whose edges leave part `i`; `pos` maps the block each part
/// is entered at to its index; `successors` gives a block's successors. Generic over the
/// graph so that the SSA-level pass (`linearize_ssa`) shares it.
pub(crate) fn back_edge_targets<N: Copy + Eq + Hash>(
    tails: &[N],
    pos: &FxHashMap<N, usize>,
    successors: impl Fn(N) -> Vec<N>,
) -> (Vec<Option<usize>>, u64) {
    let mut targets: Vec<Option<usize>> = vec![None; tails.len()];
    let mut retreating = 0;
    for (i, &b) in tails.iter().enumerate() {
        for s in successors(b) {
            if let Some(&j) = pos.get(&s) {
                if j <= i {
                    retreating += 1;
                    targets[i] = Some(targets[i].map_or(j, |t| t.min(j)));
                }
            }
        }
    }
    // Sources in increasing order: earlier intervals already nest, so extending the
    // current one leftwards until it overlaps none partially keeps them all nested.
    for j in 0..tails.len() {
        let Some(mut tj) = targets[j] else { continue };
        loop {
            let moved = (0..j)
                .filter_map(|i| targets[i].map(|ti| (i, ti)))
                .find(|&(i, ti)| ti < tj && tj <= i)
                .map(|(_, ti)| ti);
            match moved {
                Some(t) => tj = t,
                None => break,
            }
        }
        targets[j] = Some(tj);
    }
    (targets, retreating)
}
