//! The loop nesting forest of reducible and irreducible control flow.
//!
//! A *loop* (a cycle, in the words of LLVM's `CycleInfo`, which this analysis follows) is
//! a strongly connected region of the graph. Its *entries* are its nodes with a
//! predecessor outside it: a natural loop has one, an irreducible loop several. Among the
//! entries one is designated the *header*: the entry that comes first in reverse
//! post-order (equivalently, the first node of the loop a depth-first search from the
//! entry reaches; every other node of the loop is its descendant). Loops nest: the
//! outermost loops are the maximal strongly connected regions (a single node counts only
//! with a self edge), and the loops nested in a loop `L` are the maximal strongly
//! connected regions of `L` *with its header removed*. The result is unique once the
//! headers are chosen, and for a reducible graph it is the classic natural-loop forest.
//!
//! ```text
//!        0             0 -> 1, 2     1 -> 2     2 -> 3     3 -> 1, 2, 4
//!       / \
//!      v   v           {1, 2, 3} is strongly connected and entered at 1 and 2:
//!      1 -> 2 <--+     an irreducible loop with header 1 (first in RPO 0 1 2 3 4)
//!      ^    |    |     and entries [1, 2]. Without 1, {2, 3} is still a cycle:
//!      |    v    |     a natural loop with header 2 nested inside, latch 3.
//!      +--- 3 ---+     Both loops exit to 4 from 3.
//!           |
//!           v
//!           4
//! ```
//!
//! The forest is computed as in LLVM's `GenericCycleInfoCompute` (itself close to
//! Havlak's "Nesting of reducible and irreducible loops", 1997), in near-linear time
//! instead of recomputing strongly connected regions level by level:
//!
//! 1. A depth-first search from the entry numbers the nodes in pre-order and records, for
//!    each node, the range of pre-order numbers of its subtree, so "`a` is an ancestor of
//!    `b`" is two comparisons.
//! 2. Candidates are visited in *reverse* pre-order, so inner loops are found before the
//!    loops around them. A candidate `h` heads a loop when it has a predecessor in its
//!    own subtree (the source of a back edge). The loop is then everything that reaches
//!    `h` backwards without leaving `h`'s subtree: a backward search from those
//!    predecessors. A node already in a loop found earlier stands for the outermost such
//!    loop (found with a union-find with path compression), which becomes a child of the
//!    new loop, and the search continues from that child's entries only. A node reached
//!    from outside the subtree is an entry.
//! 3. Loops are numbered in pre-order of the forest (parents before children, siblings by
//!    the position of their headers in the search), so that each loop's descendants are a
//!    contiguous range of [`Loop`] numbers, and its blocks a contiguous slice: "is `n` in
//!    `L`" is then a range check on the innermost loop of `n`.
//!
//! Latches, exits and exiting nodes are gathered once, in time proportional to their
//! number. Nodes unreachable from the entry belong to no loop, and edges from them do not
//! make entries. Every step uses explicit stacks: chains of 100 000 nodes and loops nested
//! 50 000 deep are fine.

use super::{ControlFlowGraph, NONE};
use core::fmt::Debug;
use core::hash::Hash;
use cranelift_entity::packed_option::PackedOption;
use cranelift_entity::{entity_impl, EntityRef, PrimaryMap, SecondaryMap};

/// A loop of a [`LoopForest`].
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Loop(u32);
entity_impl!(Loop, "loop");

/// What the forest knows of one loop.
#[derive(Clone, Debug)]
struct LoopData<N> {
    header: N,
    /// The header first, then the other entries in reverse post-order.
    entries: Vec<N>,
    latches: Vec<N>,
    exiting: Vec<N>,
    exits: Vec<N>,
    parent: PackedOption<Loop>,
    children: Vec<Loop>,
    depth: u32,
    /// The slice of `LoopForest::blocks` holding this loop's blocks.
    blocks_start: u32,
    blocks_end: u32,
    /// The loops numbered from this one up to (excluding) `subtree_end` are this loop
    /// and its descendants.
    subtree_end: u32,
}

/// The loop nesting forest of a control-flow graph (see the [module documentation](self)
/// for the definitions).
///
/// Lists of nodes are in reverse post-order of the graph unless said otherwise.
#[derive(Clone, Debug)]
pub struct LoopForest<N: EntityRef> {
    loops: PrimaryMap<Loop, LoopData<N>>,
    /// The outermost loops, in order.
    roots: Vec<Loop>,
    /// The innermost loop containing each node.
    innermost: SecondaryMap<N, PackedOption<Loop>>,
    /// The blocks of every loop, grouped so that each loop's blocks form a slice.
    blocks: Vec<N>,
}

/// A loop under construction, numbered in order of discovery (innermost first).
struct TmpLoop {
    /// Pre-order number of the header.
    header: u32,
    /// Pre-order numbers of the entries, the header first.
    entries: Vec<u32>,
    /// Discovery number of the parent, or `NONE`.
    parent: u32,
}

/// The depth-first search the forest is built on.
struct Dfs<N: EntityRef> {
    /// The reachable nodes in pre-order.
    order: Vec<N>,
    /// Pre-order number of each node, or `NONE` when unreachable.
    pre: SecondaryMap<N, u32>,
    /// For each pre-order number, the end (exclusive) of its subtree's pre-order range.
    end: Vec<u32>,
    /// Reverse-post-order number of each node, or `NONE` when unreachable.
    rpo: SecondaryMap<N, u32>,
}

impl<N: EntityRef + Copy + Eq + Hash + Debug> Dfs<N> {
    /// Searches from the entry, visiting successors in order (the order of
    /// [`ControlFlowGraph::reverse_post_order`]).
    fn run(cfg: &ControlFlowGraph<N>) -> Self {
        let mut dfs = Dfs {
            order: Vec::new(),
            pre: SecondaryMap::with_default(NONE),
            end: Vec::new(),
            rpo: SecondaryMap::with_default(NONE),
        };
        let Some(entry) = cfg.entry() else {
            return dfs;
        };
        let mut post: Vec<N> = Vec::new();
        let mut frames: Vec<(N, usize)> = vec![(entry, 0)];
        dfs.pre[entry] = 0;
        dfs.order.push(entry);
        dfs.end.push(NONE);
        while let Some(top) = frames.last_mut() {
            let (n, i) = *top;
            if let Some(&s) = cfg.succs(n).get(i) {
                top.1 += 1;
                if dfs.pre[s] == NONE {
                    dfs.pre[s] = dfs.order.len() as u32;
                    dfs.order.push(s);
                    dfs.end.push(NONE);
                    frames.push((s, 0));
                }
            } else {
                dfs.end[dfs.pre[n] as usize] = dfs.order.len() as u32;
                post.push(n);
                frames.pop();
            }
        }
        let len = post.len() as u32;
        for (i, &n) in post.iter().enumerate() {
            dfs.rpo[n] = len - 1 - i as u32;
        }
        dfs
    }

    /// Is pre-order number `a` an ancestor of (or equal to) pre-order number `b`?
    fn is_ancestor(&self, a: u32, b: u32) -> bool {
        a <= b && b < self.end[a as usize]
    }
}

/// The representative of `x`'s set in the union-find `top`, compressing the path.
fn find(top: &mut [u32], x: u32) -> u32 {
    let mut root = x;
    while top[root as usize] != root {
        root = top[root as usize];
    }
    let mut x = x;
    while top[x as usize] != root {
        let next = top[x as usize];
        top[x as usize] = root;
        x = next;
    }
    root
}

impl<N: EntityRef + Copy + Eq + Hash + Debug> LoopForest<N> {
    /// Computes the loop nesting forest of `cfg`.
    pub fn compute(cfg: &ControlFlowGraph<N>) -> Self {
        let dfs = Dfs::run(cfg);
        let (tmp, inner) = Self::discover(cfg, &dfs);
        let mut forest = Self::number(&dfs, &tmp, &inner);
        forest.gather_edges(cfg, &dfs);
        forest
    }

    /// Step 2 of the module documentation: the loops in order of discovery, and the
    /// innermost loop (discovery number) of each pre-order number.
    fn discover(cfg: &ControlFlowGraph<N>, dfs: &Dfs<N>) -> (Vec<TmpLoop>, Vec<u32>) {
        let len = dfs.order.len();
        let mut loops: Vec<TmpLoop> = Vec::new();
        let mut top: Vec<u32> = Vec::new(); // union-find over discovery numbers
        let mut inner = vec![NONE; len];
        let mut worklist: Vec<u32> = Vec::new();
        for h in (0..len as u32).rev() {
            for &p in cfg.preds(dfs.order[h as usize]) {
                let p = dfs.pre[p];
                if p != NONE && dfs.is_ancestor(h, p) {
                    worklist.push(p);
                }
            }
            if worklist.is_empty() {
                continue;
            }
            let l = loops.len() as u32;
            loops.push(TmpLoop {
                header: h,
                entries: vec![h],
                parent: NONE,
            });
            top.push(l);
            inner[h as usize] = l;
            // Pushes the predecessors of `b` inside the subtree of `h`; `b` is an entry
            // when it has one outside.
            let visit_preds = |b: u32, worklist: &mut Vec<u32>, entries: &mut Vec<u32>| {
                let mut is_entry = false;
                for &p in cfg.preds(dfs.order[b as usize]) {
                    let p = dfs.pre[p];
                    if p == NONE {
                        continue; // unreachable code does not enter loops
                    }
                    if dfs.is_ancestor(h, p) {
                        worklist.push(p);
                    } else {
                        is_entry = true;
                    }
                }
                if is_entry && b != h {
                    entries.push(b);
                }
            };
            while let Some(b) = worklist.pop() {
                if b == h {
                    continue;
                }
                if inner[b as usize] == NONE {
                    inner[b as usize] = l;
                    let mut entries = core::mem::take(&mut loops[l as usize].entries);
                    visit_preds(b, &mut worklist, &mut entries);
                    loops[l as usize].entries = entries;
                    continue;
                }
                let child = find(&mut top, inner[b as usize]);
                if child == l {
                    continue;
                }
                // An inner loop: it nests in this one, and the search goes on from its
                // entries, whose predecessors are the only ways into it.
                loops[child as usize].parent = l;
                top[child as usize] = l;
                let child_entries = core::mem::take(&mut loops[child as usize].entries);
                let mut entries = core::mem::take(&mut loops[l as usize].entries);
                for &e in &child_entries {
                    visit_preds(e, &mut worklist, &mut entries);
                }
                loops[l as usize].entries = entries;
                loops[child as usize].entries = child_entries;
            }
        }
        (loops, inner)
    }

    /// Step 3 of the module documentation: numbers the loops in pre-order of the forest
    /// and lays out their blocks.
    fn number(dfs: &Dfs<N>, tmp: &[TmpLoop], inner: &[u32]) -> Self {
        // Discovery goes by decreasing header pre-order, so walking it backwards lists
        // roots and children by increasing header pre-order.
        let mut children: Vec<Vec<u32>> = vec![Vec::new(); tmp.len()];
        let mut roots: Vec<u32> = Vec::new();
        for (l, t) in tmp.iter().enumerate().rev() {
            match t.parent {
                NONE => roots.push(l as u32),
                p => children[p as usize].push(l as u32),
            }
        }
        // The blocks each loop holds directly, in reverse post-order (header first).
        let mut own: Vec<Vec<N>> = vec![Vec::new(); tmp.len()];
        let mut by_rpo: Vec<N> = dfs.order.clone();
        by_rpo.sort_by_key(|&n| dfs.rpo[n]);
        for &n in &by_rpo {
            let l = inner[dfs.pre[n] as usize];
            if l != NONE {
                own[l as usize].push(n);
            }
        }

        let mut forest = LoopForest {
            loops: PrimaryMap::with_capacity(tmp.len()),
            roots: Vec::new(),
            innermost: SecondaryMap::new(),
            blocks: Vec::with_capacity(by_rpo.len()),
        };
        let mut new_number = vec![NONE; tmp.len()];
        // Frames: (discovery number, index of the next child to visit).
        let mut frames: Vec<(u32, usize)> = Vec::new();
        for &root in &roots {
            frames.push((root, 0));
            forest.enter(root, NONE, dfs, tmp, &own, &mut new_number);
            while let Some(frame) = frames.last_mut() {
                let (t, i) = *frame;
                if let Some(&c) = children[t as usize].get(i) {
                    frame.1 += 1;
                    forest.enter(c, new_number[t as usize], dfs, tmp, &own, &mut new_number);
                    frames.push((c, 0));
                } else {
                    let l = Loop::from_u32(new_number[t as usize]);
                    forest.loops[l].blocks_end = forest.blocks.len() as u32;
                    forest.loops[l].subtree_end = forest.loops.len() as u32;
                    frames.pop();
                }
            }
        }
        for (n, &l) in dfs.order.iter().zip(inner) {
            if l != NONE {
                forest.innermost[*n] = Loop::from_u32(new_number[l as usize]).into();
            }
        }
        forest
    }

    /// Creates the final loop for discovery number `t`, a child of final number `parent`
    /// (or a root), and lays out its own blocks.
    fn enter(
        &mut self,
        t: u32,
        parent: u32,
        dfs: &Dfs<N>,
        tmp: &[TmpLoop],
        own: &[Vec<N>],
        new_number: &mut [u32],
    ) {
        let data = &tmp[t as usize];
        let mut entries: Vec<N> = data
            .entries
            .iter()
            .map(|&e| dfs.order[e as usize])
            .collect();
        entries[1..].sort_by_key(|&e| dfs.rpo[e]);
        let parent = (parent != NONE).then(|| Loop::from_u32(parent));
        let depth = parent.map_or(1, |p| self.loops[p].depth + 1);
        let start = self.blocks.len() as u32;
        self.blocks.extend_from_slice(&own[t as usize]);
        let l = self.loops.push(LoopData {
            header: dfs.order[data.header as usize],
            entries,
            latches: Vec::new(),
            exiting: Vec::new(),
            exits: Vec::new(),
            parent: parent.into(),
            children: Vec::new(),
            depth,
            blocks_start: start,
            blocks_end: start,
            subtree_end: 0,
        });
        match parent {
            Some(p) => self.loops[p].children.push(l),
            None => self.roots.push(l),
        }
        new_number[t as usize] = l.as_u32();
    }

    /// Fills in latches, exits and exiting nodes.
    fn gather_edges(&mut self, cfg: &ControlFlowGraph<N>, dfs: &Dfs<N>) {
        for i in 0..self.loops.len() {
            let l = Loop::new(i);
            let mut latches = Vec::new();
            for &e in &self.loops[l].entries {
                for &p in cfg.preds(e) {
                    if self.contains(l, p) && dfs.is_ancestor(dfs.pre[e], dfs.pre[p]) {
                        latches.push(p);
                    }
                }
            }
            self.loops[l].latches = latches;
        }
        // An edge u -> v leaves exactly the loops around u that do not contain v: the
        // innermost loop of u and its ancestors, up to the first that contains v.
        for &u in &dfs.order {
            for &v in cfg.succs(u) {
                let mut l = self.innermost[u].expand();
                while let Some(cur) = l {
                    if self.contains(cur, v) {
                        break;
                    }
                    self.loops[cur].exits.push(v);
                    self.loops[cur].exiting.push(u);
                    l = self.loops[cur].parent.expand();
                }
            }
        }
        for data in self.loops.values_mut() {
            for list in [&mut data.latches, &mut data.exits, &mut data.exiting] {
                list.sort_by_key(|&n| dfs.rpo[n]);
                list.dedup();
            }
        }
    }

    /// The number of loops.
    pub fn len(&self) -> usize {
        self.loops.len()
    }

    /// Is the graph free of loops?
    pub fn is_empty(&self) -> bool {
        self.loops.is_empty()
    }

    /// Every loop, parents before their children (a pre-order of the forest; siblings in
    /// the order a depth-first search from the entry reaches their headers).
    pub fn loops(&self) -> impl Iterator<Item = Loop> + '_ {
        self.loops.keys()
    }

    /// The outermost loops, in the order of [`LoopForest::loops`].
    pub fn top_level(&self) -> &[Loop] {
        &self.roots
    }

    /// The designated header of `l`: its only entry for a natural loop, the entry first
    /// in reverse post-order for an irreducible one.
    pub fn header(&self, l: Loop) -> N {
        self.loops[l].header
    }

    /// The entries of `l` (its nodes with a predecessor outside it, counting the header
    /// always): the header first, then the others in reverse post-order.
    pub fn entries(&self, l: Loop) -> &[N] {
        &self.loops[l].entries
    }

    /// Does `l` have several entries?
    pub fn is_irreducible(&self, l: Loop) -> bool {
        self.loops[l].entries.len() > 1
    }

    /// The nodes of `l`, nested loops included: first the nodes whose innermost loop is
    /// `l`, in reverse post-order (so the header comes first), then the blocks of each
    /// child loop in turn, recursively.
    pub fn blocks(&self, l: Loop) -> &[N] {
        let d = &self.loops[l];
        &self.blocks[d.blocks_start as usize..d.blocks_end as usize]
    }

    /// The latches of `l`: its nodes with a back edge to one of its entries, where back
    /// edges are those of the depth-first search from the entry that visits successors in
    /// order (an edge `u -> v` with `v` an ancestor of `u` or `u` itself). Every edge from
    /// inside the loop to the header is a back edge; an edge to another entry of an
    /// irreducible loop may not be.
    pub fn latches(&self, l: Loop) -> &[N] {
        &self.loops[l].latches
    }

    /// The nodes of `l` with a successor outside it.
    pub fn exiting(&self, l: Loop) -> &[N] {
        &self.loops[l].exiting
    }

    /// The nodes outside `l` with a predecessor in it.
    pub fn exits(&self, l: Loop) -> &[N] {
        &self.loops[l].exits
    }

    /// The loop immediately around `l`, if any.
    pub fn parent(&self, l: Loop) -> Option<Loop> {
        self.loops[l].parent.expand()
    }

    /// The loops immediately inside `l`, in the order of [`LoopForest::loops`].
    pub fn children(&self, l: Loop) -> &[Loop] {
        &self.loops[l].children
    }

    /// The nesting depth of `l`: 1 for an outermost loop.
    pub fn depth(&self, l: Loop) -> u32 {
        self.loops[l].depth
    }

    /// Is `n` a node of `l` (or of a loop nested in it)?
    pub fn contains(&self, l: Loop, n: N) -> bool {
        match self.innermost.get(n).and_then(|i| i.expand()) {
            Some(i) => l <= i && i.as_u32() < self.loops[l].subtree_end,
            None => false,
        }
    }

    /// Is loop `a` the loop `b` or one around it?
    pub fn loop_contains(&self, a: Loop, b: Loop) -> bool {
        a <= b && b.as_u32() < self.loops[a].subtree_end
    }

    /// The innermost loop containing `n`, if any.
    pub fn innermost_loop(&self, n: N) -> Option<Loop> {
        self.innermost.get(n).and_then(|l| l.expand())
    }

    /// The number of loops containing `n` (0 outside every loop).
    pub fn loop_depth(&self, n: N) -> u32 {
        self.innermost_loop(n).map_or(0, |l| self.depth(l))
    }

    /// Is `n` the designated header of a loop? (Other entries of irreducible loops are
    /// not headers.)
    pub fn is_header(&self, n: N) -> bool {
        self.innermost_loop(n)
            .is_some_and(|l| self.loops[l].header == n)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testgraph::{chain, graph, random_graphs, reach, reach_matrix, Graph, N};
    use super::*;

    fn forest(edges: &[&[u32]]) -> LoopForest<N> {
        LoopForest::compute(&ControlFlowGraph::compute(&graph(edges)))
    }

    fn ns(list: &[u32]) -> Vec<N> {
        list.iter().map(|&i| N(i)).collect()
    }

    /// The loop headed by `h`.
    fn by_header(f: &LoopForest<N>, h: u32) -> Loop {
        f.loops().find(|&l| f.header(l) == N(h)).unwrap()
    }

    #[test]
    fn diamond_has_no_loop() {
        let f = forest(&[&[1, 2], &[3], &[3], &[]]);
        assert!(f.is_empty());
        assert_eq!(f.loop_depth(N(1)), 0);
        assert_eq!(f.innermost_loop(N(0)), None);
        assert!(!f.is_header(N(0)));
    }

    #[test]
    fn nested_natural_loops() {
        // 0 -> 1; 1 -> 2; 2 -> 3; 3 -> 2, 4; 4 -> 1, 5; 5 returns.
        let f = forest(&[&[1], &[2], &[3], &[2, 4], &[1, 5], &[]]);
        assert_eq!(f.len(), 2);
        let (outer, inner) = (Loop::new(0), Loop::new(1));
        assert_eq!(f.loops().collect::<Vec<_>>(), vec![outer, inner]);
        assert_eq!(f.top_level(), &[outer]);
        assert_eq!(f.header(outer), N(1));
        assert_eq!(f.header(inner), N(2));
        assert_eq!(f.blocks(outer), &ns(&[1, 4, 2, 3])[..]);
        assert_eq!(f.blocks(inner), &ns(&[2, 3])[..]);
        assert_eq!(f.entries(outer), &[N(1)]);
        assert_eq!(f.latches(outer), &[N(4)]);
        assert_eq!(f.latches(inner), &[N(3)]);
        assert_eq!(f.exits(outer), &[N(5)]);
        assert_eq!(f.exiting(outer), &[N(4)]);
        assert_eq!(f.exits(inner), &[N(4)]);
        assert_eq!(f.exiting(inner), &[N(3)]);
        assert_eq!(f.parent(inner), Some(outer));
        assert_eq!(f.parent(outer), None);
        assert_eq!(f.children(outer), &[inner]);
        assert_eq!((f.depth(outer), f.depth(inner)), (1, 2));
        assert_eq!(f.loop_depth(N(3)), 2);
        assert_eq!(f.loop_depth(N(4)), 1);
        assert_eq!(f.loop_depth(N(5)), 0);
        assert_eq!(f.innermost_loop(N(3)), Some(inner));
        assert!(f.is_header(N(2)) && f.is_header(N(1)) && !f.is_header(N(3)));
        assert!(f.contains(outer, N(3)) && !f.contains(inner, N(4)));
        assert!(f.loop_contains(outer, inner) && !f.loop_contains(inner, outer));
        assert!(!f.is_irreducible(outer) && !f.is_irreducible(inner));
    }

    #[test]
    fn loop_with_several_exits_and_latches() {
        // 0 -> 1; 1 -> 2, 5; 2 -> 3, 4; 3 -> 1; 4 -> 1, 6; 5, 6 return.
        let f = forest(&[&[1], &[2, 5], &[3, 4], &[1], &[1, 6], &[], &[]]);
        assert_eq!(f.len(), 1);
        let l = Loop::new(0);
        assert_eq!(f.header(l), N(1));
        assert_eq!(f.latches(l), &ns(&[4, 3])[..]);
        assert_eq!(f.exiting(l), &ns(&[1, 4])[..]);
        // RPO: 0 1 5 2 4 6 3
        assert_eq!(f.exits(l), &ns(&[5, 6])[..]);
        assert_eq!(f.blocks(l), &ns(&[1, 2, 4, 3])[..]);
    }

    #[test]
    fn self_loops() {
        // 0 -> 0, 1; 1 -> 1, 2; 2 returns: the entry itself loops.
        let f = forest(&[&[0, 1], &[1, 2], &[]]);
        assert_eq!(f.len(), 2);
        let (a, b) = (by_header(&f, 0), by_header(&f, 1));
        assert_eq!(f.blocks(a), &[N(0)]);
        assert_eq!(f.latches(a), &[N(0)]);
        assert_eq!(f.exits(a), &[N(1)]);
        assert_eq!(f.blocks(b), &[N(1)]);
        assert_eq!(f.latches(b), &[N(1)]);
        assert_eq!(f.exits(b), &[N(2)]);
        assert_eq!(f.parent(b), None);
    }

    #[test]
    fn jump_into_the_middle_of_a_loop() {
        // 0 -> 1, 2; 1 -> 2; 2 -> 3; 3 -> 1, 4: the loop 1 -> 2 -> 3 -> 1 is also entered
        // at 2.
        let f = forest(&[&[1, 2], &[2], &[3], &[1, 4], &[]]);
        assert_eq!(f.len(), 1);
        let l = Loop::new(0);
        assert!(f.is_irreducible(l));
        assert_eq!(f.header(l), N(1));
        assert_eq!(f.entries(l), &ns(&[1, 2])[..]);
        assert_eq!(f.latches(l), &[N(3)]);
        assert_eq!(f.exits(l), &[N(4)]);
        assert!(f.is_header(N(1)) && !f.is_header(N(2)));
    }

    #[test]
    fn classic_irreducible_triangle() {
        // 0 -> 1, 2; 1 -> 2; 2 -> 1.
        let f = forest(&[&[1, 2], &[2], &[1]]);
        assert_eq!(f.len(), 1);
        let l = Loop::new(0);
        assert_eq!(f.entries(l), &ns(&[1, 2])[..]);
        assert_eq!(f.blocks(l), &ns(&[1, 2])[..]);
        assert_eq!(f.latches(l), &[N(2)]);
        assert!(f.exits(l).is_empty());
    }

    #[test]
    fn module_documentation_example() {
        let f = forest(&[&[1, 2], &[2], &[3], &[1, 2, 4], &[]]);
        assert_eq!(f.len(), 2);
        let (outer, inner) = (Loop::new(0), Loop::new(1));
        assert_eq!(f.entries(outer), &ns(&[1, 2])[..]);
        assert_eq!(f.header(inner), N(2));
        assert_eq!(f.entries(inner), &[N(2)]);
        assert_eq!(f.parent(inner), Some(outer));
        assert_eq!(f.latches(outer), &[N(3)]);
        assert_eq!(f.latches(inner), &[N(3)]);
        assert_eq!(f.exits(outer), &[N(4)]);
        assert_eq!(f.exits(inner), &ns(&[1, 4])[..]);
    }

    #[test]
    fn irreducible_inside_reducible() {
        // 0 -> 1; 1 -> 2, 3 (header of the outer natural loop); 2 -> 3; 3 -> 2, 4;
        // 4 -> 1, 5; 5 returns. {2, 3} is entered at 2 and at 3.
        let f = forest(&[&[1], &[2, 3], &[3], &[2, 4], &[1, 5], &[]]);
        assert_eq!(f.len(), 2);
        let (outer, inner) = (Loop::new(0), Loop::new(1));
        assert_eq!(f.header(outer), N(1));
        assert!(!f.is_irreducible(outer));
        assert!(f.is_irreducible(inner));
        assert_eq!(f.entries(inner), &ns(&[2, 3])[..]);
        assert_eq!(f.parent(inner), Some(outer));
        assert_eq!(f.loop_depth(N(3)), 2);
        assert_eq!(f.exits(inner), &[N(4)]);
    }

    #[test]
    fn unreachable_nodes_are_in_no_loop() {
        // 0 -> 1; 1 -> 1, 2; 3 -> 1 and 3 -> 4 -> 3 are unreachable.
        let f = forest(&[&[1], &[1, 2], &[], &[1, 4], &[3]]);
        assert_eq!(f.len(), 1);
        assert_eq!(f.entries(Loop::new(0)), &[N(1)]);
        assert_eq!(f.innermost_loop(N(3)), None);
        assert_eq!(f.loop_depth(N(4)), 0);
    }

    #[test]
    fn empty_graph() {
        let f = forest(&[]);
        assert!(f.is_empty());
        assert_eq!(f.innermost_loop(N(0)), None);
    }

    #[test]
    fn long_chain_and_long_cycle() {
        const LEN: u32 = 100_000;
        let mut g = chain(LEN);
        let f = LoopForest::compute(&ControlFlowGraph::compute(&g));
        assert!(f.is_empty());
        g.edges[LEN as usize - 1].push(1);
        let f = LoopForest::compute(&ControlFlowGraph::compute(&g));
        assert_eq!(f.len(), 1);
        assert_eq!(f.blocks(Loop::new(0)).len(), LEN as usize - 1);
        assert_eq!(f.latches(Loop::new(0)), &[N(LEN - 1)]);
    }

    #[test]
    fn deep_nest() {
        // Headers h_i = i and latches l_i = K + i: h_i -> h_{i+1} (the last to l_{K-1}),
        // l_i -> h_i, l_{i-1} (the first to the exit 2K).
        const K: u32 = 50_000;
        let mut edges: Vec<Vec<u32>> = Vec::new();
        for i in 0..K {
            edges.push(vec![if i + 1 < K { i + 1 } else { 2 * K - 1 }]);
        }
        for i in 0..K {
            edges.push(vec![i, if i > 0 { K + i - 1 } else { 2 * K }]);
        }
        edges.push(Vec::new());
        let f = LoopForest::compute(&ControlFlowGraph::compute(&Graph { edges }));
        assert_eq!(f.len(), K as usize);
        let innermost = f.innermost_loop(N(K - 1)).unwrap();
        assert_eq!(f.depth(innermost), K);
        assert_eq!(f.header(innermost), N(K - 1));
        assert_eq!(f.loop_depth(N(2 * K)), 0);
        assert_eq!(f.blocks(Loop::new(0)).len(), 2 * K as usize);
        assert_eq!(f.exits(innermost), &[N(2 * K - 2)]);
        assert!(f.contains(Loop::new(0), N(K - 1)));
    }

    /// A loop as the brute force sees it: header, sorted blocks, entries, latches, exits,
    /// exiting nodes, parent header and depth.
    type Brute = (
        u32,
        Vec<u32>,
        Vec<u32>,
        Vec<u32>,
        Vec<u32>,
        Vec<u32>,
        Option<u32>,
        u32,
    );

    /// The forest by its definition: maximal strongly connected regions by mutual
    /// reachability, header the member first in RPO, recursing with the header removed.
    fn brute_force(edges: &[Vec<u32>], rpo: &[N], dfs_pre: &[u32], dfs_end: &[u32]) -> Vec<Brute> {
        let n = edges.len() as u32;
        let reachable = reach(edges, 0, &|_| true);
        let mut out = Vec::new();
        let mut work: Vec<(Vec<u32>, Option<u32>, u32)> =
            vec![((0..n).filter(|&v| reachable[v as usize]).collect(), None, 1)];
        while let Some((region, parent, depth)) = work.pop() {
            let m = reach_matrix(edges, &|v| region.contains(&v));
            let mut done = vec![false; n as usize];
            for &v in &region {
                if done[v as usize] {
                    continue;
                }
                let scc: Vec<u32> = region
                    .iter()
                    .copied()
                    .filter(|&w| m[v as usize][w as usize] && m[w as usize][v as usize])
                    .collect();
                for &w in &scc {
                    done[w as usize] = true;
                }
                if scc.len() == 1 && !edges[v as usize].contains(&v) {
                    continue;
                }
                let header = rpo.iter().find(|r| scc.contains(&r.0)).unwrap().0;
                let mut entries: Vec<u32> = scc
                    .iter()
                    .copied()
                    .filter(|&w| {
                        w == header
                            || (0..n).any(|p| {
                                reachable[p as usize]
                                    && !scc.contains(&p)
                                    && edges[p as usize].contains(&w)
                            })
                    })
                    .collect();
                entries.sort();
                let ancestor = |a: u32, b: u32| {
                    dfs_pre[a as usize] <= dfs_pre[b as usize]
                        && dfs_pre[b as usize] < dfs_end[a as usize]
                };
                let latches: Vec<u32> = scc
                    .iter()
                    .copied()
                    .filter(|&u| {
                        edges[u as usize]
                            .iter()
                            .any(|&e| entries.contains(&e) && ancestor(e, u))
                    })
                    .collect();
                let exiting: Vec<u32> = scc
                    .iter()
                    .copied()
                    .filter(|&u| edges[u as usize].iter().any(|e| !scc.contains(e)))
                    .collect();
                let mut exits: Vec<u32> = (0..n)
                    .filter(|w| {
                        !scc.contains(w) && scc.iter().any(|&u| edges[u as usize].contains(w))
                    })
                    .collect();
                exits.sort();
                let rest: Vec<u32> = scc.iter().copied().filter(|&w| w != header).collect();
                out.push((
                    header,
                    scc.clone(),
                    entries,
                    latches,
                    exits,
                    exiting,
                    parent,
                    depth,
                ));
                work.push((rest, Some(header), depth + 1));
            }
        }
        out.sort();
        out
    }

    #[test]
    fn random_graphs_match_brute_force() {
        let mut irreducible = 0;
        for edges in random_graphs(5, 1000, 13) {
            let cfg = ControlFlowGraph::compute(&Graph {
                edges: edges.clone(),
            });
            let f = LoopForest::compute(&cfg);
            let dfs = Dfs::run(&cfg);
            let n = edges.len();
            let pre: Vec<u32> = (0..n as u32).map(|v| dfs.pre[N(v)]).collect();
            let end: Vec<u32> = pre
                .iter()
                .map(|&p| if p == NONE { 0 } else { dfs.end[p as usize] })
                .collect();
            let expected = brute_force(&edges, &cfg.reverse_post_order(), &pre, &end);
            let sorted = |list: &[N]| {
                let mut v: Vec<u32> = list.iter().map(|n| n.0).collect();
                v.sort();
                v
            };
            let mut got: Vec<Brute> = f
                .loops()
                .map(|l| {
                    (
                        f.header(l).0,
                        sorted(f.blocks(l)),
                        sorted(f.entries(l)),
                        sorted(f.latches(l)),
                        sorted(f.exits(l)),
                        sorted(f.exiting(l)),
                        f.parent(l).map(|p| f.header(p).0),
                        f.depth(l),
                    )
                })
                .collect();
            got.sort();
            assert_eq!(got, expected, "{edges:?}");
            irreducible += f.loops().filter(|&l| f.is_irreducible(l)).count();
            for l in f.loops() {
                // Structure: parents first, blocks of children inside, header first.
                assert_eq!(f.blocks(l)[0], f.header(l));
                assert_eq!(f.entries(l)[0], f.header(l));
                for &c in f.children(l) {
                    assert!(c > l);
                    assert_eq!(f.parent(c), Some(l));
                    assert!(f.blocks(c).iter().all(|&b| f.contains(l, b)));
                }
                for v in 0..n as u32 {
                    let inside = f.blocks(l).contains(&N(v));
                    assert_eq!(f.contains(l, N(v)), inside);
                }
            }
            for v in 0..n as u32 {
                let around: Vec<Loop> = f.loops().filter(|&l| f.contains(l, N(v))).collect();
                assert_eq!(f.loop_depth(N(v)) as usize, around.len());
                assert_eq!(f.innermost_loop(N(v)), around.last().copied());
            }
        }
        assert!(
            irreducible > 20,
            "the random graphs exercise irreducible loops"
        );
    }
}
