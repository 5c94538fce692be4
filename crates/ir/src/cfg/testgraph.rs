//! A tiny graph type implementing [`Cfg`] for the tests of the analyses, and the
//! brute-force helpers they compare against.
//!
//! The brute-force definitions work on adjacency lists and boolean reachability, with no
//! cleverness, so that they can serve as the specification of the fast algorithms on
//! small random graphs.

use super::Cfg;
use cranelift_entity::entity_impl;
use rand::{Rng, SeedableRng};

/// A test node.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct N(pub u32);
entity_impl!(N, "n");

/// A hand-made graph: node `i` has successors `edges[i]`; the entry is node 0.
pub struct Graph {
    pub edges: Vec<Vec<u32>>,
}

impl Cfg for Graph {
    type Node = N;
    fn entry(&self) -> Option<N> {
        (!self.edges.is_empty()).then_some(N(0))
    }
    fn num_nodes(&self) -> usize {
        self.edges.len()
    }
    fn successors(&self, n: N, out: &mut Vec<N>) {
        out.extend(self.edges[n.0 as usize].iter().map(|&s| N(s)));
    }
    fn nodes(&self) -> impl Iterator<Item = N> + '_ {
        (0..self.edges.len() as u32).map(N)
    }
}

/// The graph with the given successor lists.
pub fn graph(edges: &[&[u32]]) -> Graph {
    Graph {
        edges: edges.iter().map(|e| e.to_vec()).collect(),
    }
}

/// A chain `0 -> 1 -> ... -> len-1`.
pub fn chain(len: u32) -> Graph {
    Graph {
        edges: (0..len)
            .map(|i| if i + 1 < len { vec![i + 1] } else { vec![] })
            .collect(),
    }
}

/// `count` random graphs of 1 to `max_nodes - 1` nodes with up to 3 successors each,
/// from a fixed seed.
pub fn random_graphs(seed: u64, count: usize, max_nodes: u32) -> Vec<Vec<Vec<u32>>> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let n = rng.random_range(1..max_nodes);
            (0..n)
                .map(|_| {
                    (0..rng.random_range(0..4))
                        .map(|_| rng.random_range(0..n))
                        .collect()
                })
                .collect()
        })
        .collect()
}

/// The nodes reachable from `from` (inclusive) along `edges`, never entering a node for
/// which `allowed` is false.
pub fn reach(edges: &[Vec<u32>], from: u32, allowed: &dyn Fn(u32) -> bool) -> Vec<bool> {
    let mut seen = vec![false; edges.len()];
    if !allowed(from) {
        return seen;
    }
    seen[from as usize] = true;
    let mut stack = vec![from];
    while let Some(n) = stack.pop() {
        for &s in &edges[n as usize] {
            if allowed(s) && !seen[s as usize] {
                seen[s as usize] = true;
                stack.push(s);
            }
        }
    }
    seen
}

/// The reachability matrix of `edges` restricted to the nodes `allowed`: `m[a][b]` when
/// a path of at least zero edges leads from `a` to `b`.
pub fn reach_matrix(edges: &[Vec<u32>], allowed: &dyn Fn(u32) -> bool) -> Vec<Vec<bool>> {
    (0..edges.len() as u32)
        .map(|a| reach(edges, a, allowed))
        .collect()
}
