//! Structural classification of control-flow graphs, after Reissmann, Falch, Bjørnseth,
//! Bahmann, Meyer and Jahre, "Efficient Control Flow Restructuring for GPUs" (HPCS 2016),
//! Section III (Definitions 1–3) and Section V-D1 (Table I).
//!
//! Every graph falls in the first of these classes that holds it (each is a subset of the
//! next):
//!
//! | class             | what it admits                                        | test            |
//! |-------------------|-------------------------------------------------------|-----------------|
//! | linear            | straight-line code                                    | Definition 3    |
//! | tail-structured   | + properly nested conditionals, tail-controlled loops | rules 1–3       |
//! | SESE              | + head-controlled loops                               | rules 1–4       |
//! | reducible         | + multi-exit loops, jumps out of and between branches | loop forest     |
//! | irreducible       | + loops with several entries                          |                 |
//!
//! The reductions contract the graph by four rewriting rules (Definition 1); a graph is
//! SESE when the four contract it to a single node and tail-structured when rules 1–3
//! alone do (Definition 2):
//!
//! 1. *chain*: `n -> n'` where `n'` is `n`'s only successor and `n` is `n'`'s only
//!    predecessor: merge the two.
//! 2. *branch*: `n` branches to `n0, n1, ...` and possibly straight to `n'`; each `ni` has
//!    `n` as only predecessor and `n'` as only successor, and `n'` has no other
//!    predecessors: merge all of them into `n`.
//! 3. *tail-controlled loop*: `n -> n` where `n` has one other successor: drop the
//!    self-edge.
//! 4. *head-controlled loop*: `n -> n' -> n` where `n'` has `n` as only predecessor and
//!    only successor: drop `n'`.
//!
//! ```text
//!   if/else, then a do-while:        a while loop:          a short circuit (Fig. 1):
//!        a                                a                      c?
//!       / \      rule 1, rule 2           |                     /  \
//!      b   c     merge b, c, d into a     h <-.                 |   d?
//!       \ /                               |\  |  rule 4           \ / \
//!        d       rule 3 drops e -> e      | b-'  drops b          S1   S2   S1 joins c? and d?:
//!        |                                x                        \  /     no rule applies,
//!        e <-.   rule 1 merges a, e                                 S3      so it is reducible
//!        |`--'   -> tail-structured     -> SESE                             but not SESE
//! ```
//!
//! The paper leaves two points open; they are settled as follows. A kernel with several
//! return blocks has several exits, which the paper's single-exit graphs do not: a
//! virtual exit node joins them, so `if (c) return; ...; return;` is as structured as
//! the `if/else` it means. Edges are sets (a `brif` with both arms to one block is one
//! edge), and only blocks reachable from the entry count.
//!
//! Reducible and irreducible graphs are told apart by the [`LoopForest`] (a loop entered
//! at several blocks is irreducible, the T1/T2 criterion), and a graph is cyclic when it
//! has a loop. The *unstructured subgraphs* reported ([`unstructured_subgraphs`]) are
//! the minimal single-entry, single-exit regions around branches (grown and closed as
//! [`super::regions`] grows them) that rules 1–4 do not contract: the places a
//! restructuring must change. (Anantpur's unstructured edges miss some: in
//! `1 -> 2, 4; 2 -> 3, 5; 3 -> 4; 4 -> 5` no edge is unstructured by their Definition 1,
//! yet threads that reach block 4 from 1 and from 3 run it twice.)
//!
//! The reduction keeps a worklist of nodes whose neighbourhood changed, so it costs a
//! constant amount of work per rule application on graphs of bounded degree, and a rule
//! application removes a node or an edge: linear in the size of the graph.

use super::{
    Cfg, ControlFlowGraph, DominatorTree, LoopForest, MinimalRegions, PostDominatorTree,
    UnstructuredEdge,
};
use core::fmt;
use core::fmt::Debug;
use core::hash::Hash;
use cranelift_entity::{EntityRef, SecondaryMap};

/// The structural class of a graph (Table I of the paper); each class contains the ones
/// before it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StructureClass {
    /// Straight-line code (Definition 3).
    Linear,
    /// Properly nested conditionals and tail-controlled loops (Definition 2).
    TailStructured,
    /// Single-entry, single-exit: also head-controlled loops (Definition 1).
    Sese,
    /// Reducible: every loop has a single entry.
    Reducible,
    /// Some loop has several entries.
    Irreducible,
}

impl StructureClass {
    /// All classes, from the most to the least structured.
    pub const ALL: [StructureClass; 5] = [
        StructureClass::Linear,
        StructureClass::TailStructured,
        StructureClass::Sese,
        StructureClass::Reducible,
        StructureClass::Irreducible,
    ];

    /// The class's name, as the paper's Table I writes it in lower case.
    pub fn name(self) -> &'static str {
        match self {
            StructureClass::Linear => "linear",
            StructureClass::TailStructured => "tail-structured",
            StructureClass::Sese => "sese",
            StructureClass::Reducible => "reducible",
            StructureClass::Irreducible => "irreducible",
        }
    }

    /// Is a graph of this class tail-structured (or linear): the graphs an IPDOM stack
    /// runs without any redundant block execution, whatever the branches decide?
    pub fn is_tail_structured(self) -> bool {
        self <= StructureClass::TailStructured
    }
}

impl fmt::Display for StructureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unstructured subgraph: a minimal single-entry, single-exit region around a branch
/// that rules 1–4 do not contract.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnstructuredSubgraph<N> {
    /// Every edge into the region comes from here; `None`: the kernel's entry.
    pub entry: Option<N>,
    /// Every edge out of the region goes here; `None`: the region returns.
    pub exit: Option<N>,
    /// The region's blocks, in reverse post-order.
    pub blocks: Vec<N>,
}

/// What [`classify`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Classification<N> {
    /// The class.
    pub class: StructureClass,
    /// Does the graph have a loop?
    pub cyclic: bool,
    /// Blocks reachable from the entry.
    pub reachable_blocks: usize,
    /// Its unstructured subgraphs, in reverse post-order of their first blocks.
    pub unstructured: Vec<UnstructuredSubgraph<N>>,
}

/// Classifies `graph` (see the [module documentation](self)).
pub fn classify<G: Cfg + ?Sized>(graph: &G) -> Classification<G::Node> {
    classify_cfg(&ControlFlowGraph::compute(graph))
}

/// [`classify`] on a snapshot of the edges.
pub fn classify_cfg<N: EntityRef + Copy + Eq + Hash + Debug>(
    cfg: &ControlFlowGraph<N>,
) -> Classification<N> {
    let domtree = DominatorTree::compute(cfg);
    let loops = LoopForest::compute(cfg);
    let cyclic = !loops.is_empty();
    let class = if is_linear(cfg, &domtree) {
        StructureClass::Linear
    } else if reduces(cfg, &domtree, Rules::TailStructured) {
        StructureClass::TailStructured
    } else if reduces(cfg, &domtree, Rules::Sese) {
        StructureClass::Sese
    } else if loops.loops().any(|l| loops.is_irreducible(l)) {
        StructureClass::Irreducible
    } else {
        StructureClass::Reducible
    };
    let unstructured = if class <= StructureClass::Sese {
        Vec::new()
    } else {
        unstructured_subgraphs(cfg, |_| true)
    };
    Classification {
        class,
        cyclic,
        reachable_blocks: domtree.rpo().len(),
        unstructured,
    }
}

/// The unstructured subgraphs of `cfg` around the branches `is_candidate` accepts (the
/// divergent ones, say): for each such branch `b`, the minimal single-entry, single-exit
/// region holding `b` and its successors (entered from `b`'s dominator side, left to its
/// post-dominator side, closed as [`super::regions`] closes regions), kept when rules 1–4
/// do not contract it (so it is neither SESE nor tail-structured). Regions inside a region
/// already found are not searched again, a region holding another replaces it, and the
/// result is pairwise disjoint, in reverse post-order of the branches. A graph that is SESE
/// as a whole has none.
pub fn unstructured_subgraphs<N: EntityRef + Copy + Eq + Hash + Debug>(
    cfg: &ControlFlowGraph<N>,
    is_candidate: impl Fn(N) -> bool,
) -> Vec<UnstructuredSubgraph<N>> {
    let domtree = DominatorTree::compute(cfg);
    if reduces(cfg, &domtree, Rules::Sese) {
        return Vec::new();
    }
    let postdom = PostDominatorTree::compute(cfg);
    let mut found: Vec<UnstructuredSubgraph<N>> = Vec::new();
    let mut owner: SecondaryMap<N, u32> = SecondaryMap::with_default(u32::MAX);
    // One search for every branch: its set-up is proportional to the graph.
    let mut search = MinimalRegions::new(cfg, &domtree, &postdom);
    for &b in domtree.rpo() {
        let succs = cfg.succs(b);
        if succs.len() < 2 || owner[b] != u32::MAX || !is_candidate(b) {
            continue;
        }
        let seed = UnstructuredEdge {
            from: b,
            to: succs[0],
            conditions: Default::default(),
            retreating: false,
        };
        let r = search.of(&seed);
        if region_reduces(cfg, r.entry(), r.blocks(), r.exit()) {
            continue;
        }
        let region = UnstructuredSubgraph {
            entry: r.entry(),
            exit: r.exit(),
            blocks: r.blocks().to_vec(),
        };
        // Regions this one holds (by their entry or a block) give way to it.
        let idx = found.len() as u32;
        let mut swallowed: Vec<u32> = region
            .blocks
            .iter()
            .filter_map(|&n| (owner[n] != u32::MAX).then_some(owner[n]))
            .collect();
        swallowed.sort_unstable();
        swallowed.dedup();
        for &n in &region.blocks {
            owner[n] = idx;
        }
        for s in swallowed {
            found[s as usize].blocks.clear();
        }
        found.push(region);
    }
    found.retain(|r| !r.blocks.is_empty());
    found
}

/// Do rules 1–4 contract the subgraph of `blocks` between `entry` and `exit` (`None`:
/// the kernel's entry is among the blocks; the blocks' exits)?
fn region_reduces<N: EntityRef + Copy + Eq + Hash + Debug>(
    cfg: &ControlFlowGraph<N>,
    entry: Option<N>,
    blocks: &[N],
    exit: Option<N>,
) -> bool {
    let mut nodes: Vec<N> = Vec::with_capacity(blocks.len() + 2);
    if let Some(d) = entry {
        nodes.push(d);
    } else if let Some(e) = cfg.entry() {
        nodes.push(e);
    }
    let first = nodes.first().copied();
    nodes.extend(blocks.iter().copied().filter(|&b| Some(b) != first));
    if let Some(p) = exit {
        nodes.push(p);
    }
    let index: std::collections::HashMap<N, u32> = nodes
        .iter()
        .enumerate()
        .map(|(i, &n)| (n, i as u32))
        .collect();
    let succs: Vec<Vec<u32>> = nodes
        .iter()
        .map(|&n| {
            if Some(n) == exit {
                return Vec::new();
            }
            cfg.succs(n)
                .iter()
                .filter_map(|s| index.get(s).copied())
                .collect()
        })
        .collect();
    Reducer::from_succs(succs).run(Rules::Sese)
}

/// Which reduction rules of Definition 1 to apply.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Rules {
    /// Rules 1, 2 and 3 (Definition 2).
    TailStructured,
    /// All four rules (Definition 1).
    Sese,
}

/// Definition 3: every reachable block has at most one predecessor and one successor
/// (the entry none of the first, the exit none of the second), and there is no loop.
fn is_linear<N: EntityRef + Copy + Eq + Hash + Debug>(
    cfg: &ControlFlowGraph<N>,
    domtree: &DominatorTree<N>,
) -> bool {
    let rpo = domtree.rpo();
    let reachable_preds = |n: N| cfg.preds(n).iter().filter(|&&p| domtree.is_reachable(p));
    rpo.iter().enumerate().all(|(i, &n)| {
        let preds = reachable_preds(n).count();
        let succs = cfg.succs(n);
        preds == usize::from(i > 0) && succs.len() == usize::from(i + 1 < rpo.len())
    })
}

/// Does `rules` contract the reachable part of `cfg` to a single node? A virtual exit
/// joins the exit blocks when there are several, and a virtual entry precedes an entry
/// block that is the target of a branch; a graph without exit blocks never contracts.
pub fn reduces<N: EntityRef + Copy + Eq + Hash + Debug>(
    cfg: &ControlFlowGraph<N>,
    domtree: &DominatorTree<N>,
    rules: Rules,
) -> bool {
    Reducer::new(cfg, domtree).run(rules)
}

/// The graph being contracted: dense node numbers, successor and predecessor sets.
struct Reducer {
    succs: Vec<Vec<u32>>,
    preds: Vec<Vec<u32>>,
    alive: Vec<bool>,
    live: usize,
    has_exit: bool,
}

impl Reducer {
    fn new<N: EntityRef + Copy + Eq + Hash + Debug>(
        cfg: &ControlFlowGraph<N>,
        domtree: &DominatorTree<N>,
    ) -> Self {
        let rpo = domtree.rpo();
        let mut num: SecondaryMap<N, u32> = SecondaryMap::with_default(u32::MAX);
        for (i, &n) in rpo.iter().enumerate() {
            num[n] = i as u32;
        }
        let succs: Vec<Vec<u32>> = rpo
            .iter()
            .map(|&n| cfg.succs(n).iter().map(|&s| num[s]).collect())
            .collect();
        Self::from_succs(succs)
    }

    /// The graph with node `i`'s successors `succs[i]` (no duplicates), entered at 0.
    fn from_succs(mut succs: Vec<Vec<u32>>) -> Self {
        let exits: Vec<u32> = (0..succs.len() as u32)
            .filter(|&i| succs[i as usize].is_empty())
            .collect();
        let has_exit = !exits.is_empty();
        if exits.len() > 1 {
            let virtual_exit = succs.len() as u32;
            succs.push(Vec::new());
            for e in exits {
                succs[e as usize].push(virtual_exit);
            }
        }
        let mut preds = vec![Vec::new(); succs.len()];
        for (i, list) in succs.iter().enumerate() {
            for &s in list {
                preds[s as usize].push(i as u32);
            }
        }
        if preds.first().is_some_and(|p| !p.is_empty()) {
            // A virtual entry: the entry node of Definition 1 has no predecessor.
            let virtual_entry = succs.len() as u32;
            succs.push(vec![0]);
            preds.push(Vec::new());
            preds[0].push(virtual_entry);
        }
        let n = succs.len();
        Reducer {
            succs,
            preds,
            alive: vec![true; n],
            live: n,
            has_exit,
        }
    }

    fn run(mut self, rules: Rules) -> bool {
        if !self.has_exit {
            // Definition 1 wants an exit node; a graph that never ends has none.
            return false;
        }
        let mut work: Vec<u32> = (0..self.succs.len() as u32).rev().collect();
        let mut queued = vec![true; self.succs.len()];
        while let Some(n) = work.pop() {
            queued[n as usize] = false;
            if !self.alive[n as usize] {
                continue;
            }
            if let Some(mut touched) = self.apply(n, rules) {
                // Every neighbour of the changed node may match a rule now, and so may
                // the branches two steps up, for which it is the join of rule 2.
                touched.extend(self.succs[n as usize].iter().copied());
                for &p in &self.preds[n as usize] {
                    touched.push(p);
                    touched.extend(self.preds[p as usize].iter().copied());
                }
                for t in touched.into_iter().chain([n]) {
                    if self.alive[t as usize] && !queued[t as usize] {
                        queued[t as usize] = true;
                        work.push(t);
                    }
                }
            }
        }
        self.live <= 1
    }

    /// Applies the first rule that matches at `n`; returns the nodes whose
    /// neighbourhood changed, or `None` when no rule matched.
    fn apply(&mut self, n: u32, rules: Rules) -> Option<Vec<u32>> {
        let ni = n as usize;
        // Rule 3: a self-edge beside exactly one other successor.
        if self.succs[ni].contains(&n) && self.succs[ni].len() == 2 {
            self.remove_edge(n, n);
            return Some(self.succs[ni].clone());
        }
        // Rule 1: a chain link.
        if let [m] = self.succs[ni][..] {
            if m != n && self.preds[m as usize] == [n] {
                let mut touched = self.succs[m as usize].clone();
                self.remove_edge(n, m);
                self.absorb(n, m);
                touched.extend(self.preds[ni].iter().copied());
                return Some(touched);
            }
        }
        // Rule 2: a branch whose arms all meet at one node.
        if self.succs[ni].len() >= 2 {
            if let Some((arms, join)) = self.branch_at(n) {
                let mut touched = self.succs[join as usize].clone();
                for &a in &arms {
                    self.remove_edge(n, a);
                    self.remove_edge(a, join);
                    self.kill(a);
                }
                if self.succs[ni].contains(&join) {
                    self.remove_edge(n, join);
                }
                self.absorb(n, join);
                touched.extend(self.preds[ni].iter().copied());
                return Some(touched);
            }
        }
        // Rule 4: a head-controlled loop's body.
        if rules == Rules::Sese {
            let body = self.succs[ni].iter().copied().find(|&m| {
                m != n && self.succs[m as usize] == [n] && self.preds[m as usize] == [n]
            });
            if let Some(m) = body {
                self.remove_edge(n, m);
                self.remove_edge(m, n);
                self.kill(m);
                let mut touched = self.succs[ni].clone();
                touched.extend(self.preds[ni].iter().copied());
                return Some(touched);
            }
        }
        None
    }

    /// The arms and join of rule 2 at `n`, if it applies.
    fn branch_at(&self, n: u32) -> Option<(Vec<u32>, u32)> {
        let mut join = None;
        let mut arms = Vec::new();
        let mut direct = Vec::new();
        for &s in &self.succs[n as usize] {
            let si = s as usize;
            if s != n && self.preds[si] == [n] && self.succs[si].len() == 1 {
                let t = self.succs[si][0];
                if join.is_some_and(|j| j != t) {
                    return None;
                }
                join = Some(t);
                arms.push(s);
            } else {
                direct.push(s);
            }
        }
        let join = join?;
        if join == n || direct.iter().any(|&d| d != join) {
            return None;
        }
        let direct_edge = usize::from(!direct.is_empty());
        let jp = &self.preds[join as usize];
        let only_arms = jp.iter().all(|p| arms.contains(p) || *p == n);
        (only_arms && jp.len() == arms.len() + direct_edge).then_some((arms, join))
    }

    fn remove_edge(&mut self, a: u32, b: u32) {
        self.succs[a as usize].retain(|&x| x != b);
        self.preds[b as usize].retain(|&x| x != a);
    }

    /// Merges `m` (no longer connected to `n`) into `n`: `n` takes `m`'s successors.
    fn absorb(&mut self, n: u32, m: u32) {
        let out = std::mem::take(&mut self.succs[m as usize]);
        for s in out {
            self.preds[s as usize].retain(|&x| x != m);
            let s = if s == m { n } else { s };
            if !self.succs[n as usize].contains(&s) {
                self.succs[n as usize].push(s);
            }
            if !self.preds[s as usize].contains(&n) {
                self.preds[s as usize].push(n);
            }
        }
        let ins = std::mem::take(&mut self.preds[m as usize]);
        for p in ins {
            self.succs[p as usize].retain(|&x| x != m);
            if p != n {
                if !self.succs[p as usize].contains(&n) {
                    self.succs[p as usize].push(n);
                }
                if !self.preds[n as usize].contains(&p) {
                    self.preds[n as usize].push(p);
                }
            }
        }
        self.kill(m);
    }

    fn kill(&mut self, m: u32) {
        if self.alive[m as usize] {
            self.alive[m as usize] = false;
            self.live -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testgraph::{chain, graph, random_graphs, Graph, N};
    use super::*;

    fn class(edges: &[&[u32]]) -> StructureClass {
        classify(&graph(edges)).class
    }

    #[test]
    fn the_classes_of_small_graphs() {
        use StructureClass::*;
        assert_eq!(classify(&chain(1)).class, Linear);
        assert_eq!(classify(&chain(5)).class, Linear);
        // if/else diamond.
        assert_eq!(class(&[&[1, 2], &[3], &[3], &[]]), TailStructured);
        // if without else.
        assert_eq!(class(&[&[1, 2], &[2], &[]]), TailStructured);
        // do-while: 0 -> 1 -> 1 | 2.
        assert_eq!(class(&[&[1], &[1, 2], &[]]), TailStructured);
        // do-while of two blocks: 1 -> 2 -> 1 | 3.
        assert_eq!(class(&[&[1], &[2], &[1, 3], &[]]), TailStructured);
        // while: 0 -> 1 (header) -> 2 (body) -> 1; 1 -> 3.
        assert_eq!(class(&[&[1], &[2, 3], &[1], &[]]), Sese);
        // Figure 1: c? -> S1 | d?; d? -> S1 | S2; S1, S2 -> S3.
        assert_eq!(class(&[&[2, 1], &[2, 3], &[4], &[4], &[]]), Reducible);
        // A loop with two exits (a break).
        assert_eq!(class(&[&[1], &[2, 4], &[1, 3], &[4], &[]]), Reducible);
        // Irreducible: 0 -> 1 | 2, 1 <-> 2, both -> 3.
        assert_eq!(class(&[&[1, 2], &[2, 3], &[1, 3], &[]]), Irreducible);
        // Switch-like three-way branch into one join.
        assert_eq!(class(&[&[1, 2, 3], &[4], &[4], &[4], &[]]), TailStructured);
        // Two returns: a virtual exit joins them.
        assert_eq!(class(&[&[1, 2], &[], &[]]), TailStructured);
    }

    #[test]
    fn cyclicity_and_unstructured_subgraphs() {
        let fig1 = classify(&graph(&[&[2, 1], &[2, 3], &[4], &[4], &[]]));
        assert!(!fig1.cyclic);
        assert_eq!(fig1.unstructured.len(), 1);
        let r = &fig1.unstructured[0];
        assert_eq!(r.entry, Some(N(0)));
        assert_eq!(r.exit, Some(N(4)));
        let mut blocks = r.blocks.clone();
        blocks.sort();
        assert_eq!(blocks, [N(1), N(2), N(3)]);
        let w = classify(&graph(&[&[1], &[2, 3], &[1], &[]]));
        assert!(w.cyclic);
        assert!(w.unstructured.is_empty());
        assert!(classify(&graph(&[&[1], &[1, 2], &[]])).cyclic);
    }

    /// The worklist reduction ends where applying the rules to every node until none
    /// matches ends.
    #[test]
    fn the_worklist_reaches_the_fixpoint() {
        for edges in random_graphs(3, 600, 10) {
            let g = Graph {
                edges: edges.clone(),
            };
            let cfg = ControlFlowGraph::compute(&g);
            let domtree = DominatorTree::compute(&cfg);
            for rules in [Rules::TailStructured, Rules::Sese] {
                let fast = Reducer::new(&cfg, &domtree).run(rules);
                let mut slow = Reducer::new(&cfg, &domtree);
                let naive = if slow.has_exit {
                    loop {
                        let mut changed = false;
                        for n in 0..slow.succs.len() as u32 {
                            if slow.alive[n as usize] && slow.apply(n, rules).is_some() {
                                changed = true;
                            }
                        }
                        if !changed {
                            break slow.live <= 1;
                        }
                    }
                } else {
                    false
                };
                assert_eq!(fast, naive, "{edges:?} {rules:?}");
            }
        }
    }

    /// The classes nest: a graph rules 1–3 contract is contracted by all four, every
    /// SESE graph is reducible, and a graph with an unstructured edge is neither
    /// tail-structured nor SESE.
    #[test]
    fn classes_nest_on_random_graphs() {
        for edges in random_graphs(14, 400, 9) {
            let g = Graph {
                edges: edges.clone(),
            };
            let cfg = ControlFlowGraph::compute(&g);
            let domtree = DominatorTree::compute(&cfg);
            let tail = reduces(&cfg, &domtree, Rules::TailStructured);
            let sese = reduces(&cfg, &domtree, Rules::Sese);
            assert!(!tail || sese, "{edges:?}");
            let c = classify(&g);
            let loops = LoopForest::compute(&cfg);
            if sese {
                assert!(loops.loops().all(|l| !loops.is_irreducible(l)), "{edges:?}");
                assert!(c.unstructured.is_empty(), "{edges:?}: {c:?}");
            }
            assert_eq!(c.cyclic, !loops.is_empty());
        }
    }
}
#[cfg(test)]
mod regression_tests {
    use super::super::testgraph::graph;
    use super::*;

    /// An irreducible loop after restructuring: the reduction must revisit the entry
    /// when a rule fires at a node without predecessors.
    #[test]
    fn a_restructured_irreducible_loop_is_tail_structured() {
        let mut e: Vec<Vec<u32>> = vec![vec![]; 26];
        let edges = [
            (0, 6),
            (0, 7),
            (6, 14),
            (7, 15),
            (14, 13),
            (15, 13),
            (13, 1),
            (13, 3),
            (1, 21),
            (1, 9),
            (9, 2),
            (2, 10),
            (2, 11),
            (10, 17),
            (11, 18),
            (17, 25),
            (18, 25),
            (25, 24),
            (21, 24),
            (24, 22),
            (3, 20),
            (3, 4),
            (4, 16),
            (16, 23),
            (20, 23),
            (23, 22),
            (22, 13),
            (22, 19),
            (19, 8),
            (19, 12),
            (8, 5),
            (12, 5),
        ];
        for (a, b) in edges {
            e[a].push(b);
        }
        let refs: Vec<&[u32]> = e.iter().map(|v| v.as_slice()).collect();
        assert_eq!(
            classify(&graph(&refs)).class,
            StructureClass::TailStructured
        );
    }
}
