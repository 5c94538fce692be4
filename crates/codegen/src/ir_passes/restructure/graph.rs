//! The restructuring itself, on an abstract graph: loop restructuring (Section IV-A), loop
//! restructuring with copying (Section IV-C) and branch restructuring (Section IV-B).
//!
//! The graph holds the region's original blocks as [`Kind::Orig`] nodes whose successor
//! slots are the slots of their terminators, the region's exit, and the nodes the
//! restructuring adds: predicate assignments, dispatches on a predicate, two-way tests of
//! a predicate (the cascades that resolve an n-way dispatch), empty join nodes, and copies
//! of original blocks (loop inversion). Edges are `(node, slot)`; an edge may be *hidden*:
//! the repetition edges of restructured loops, which the loop phase sets aside so that the
//! branch phase sees an acyclic graph, and the entry node's edges that leave the region.
//! Nothing here touches the IR: [`super::materialize`] turns the graph into blocks.
//!
//! Every traversal is iterative, and the branch phase labels only the branch subgraphs of
//! each branch (never its tail), so a kernel of many consecutive branches costs time
//! linear in its size.

use cranelift_entity::{entity_impl, EntityRef, PrimaryMap, SecondaryMap};
use std::collections::HashMap;
use warplift_ir::Block;

/// A node of the abstract graph.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Node(u32);
entity_impl!(Node, "node");

/// A predicate variable made by the restructuring (the paper's `p`, `q` and `r`).
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PredVar(u32);
entity_impl!(PredVar, "pred");

pub use crate::settings::Cascade;

/// What a node is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An original block; its slots are its terminator's destinations.
    Orig(Block),
    /// A copy of an original block (loop inversion); slots as the original's.
    Copy(Block),
    /// The region's exit block (no successors in the graph).
    Exit,
    /// A block outside the region, target of a hidden edge of the entry.
    Outside(Block),
    /// Assignments of constants to predicates, then a jump (slot 0).
    Assign(Vec<(PredVar, u32)>),
    /// Continue at slot `k` when the predicate is `k` (a two-valued predicate: a `brif`
    /// on it; more values: a `br_table`).
    Dispatch(PredVar),
    /// Slot 0 when the predicate equals the constant, else slot 1.
    TestEq(PredVar, u32),
    /// Slot 0 when the predicate is below the constant, else slot 1.
    TestLt(PredVar, u32),
    /// An empty node that joins paths (a jump, slot 0).
    Dummy,
    /// A node the cleanup took out of the graph ([`super::simplify`]): no edges, no
    /// block; for an original block (an empty one threaded past), the block, which
    /// leaves the kernel.
    Removed(Option<Block>),
}

/// Counts of what the restructuring did, per kind of change.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct GraphStats {
    /// Cyclic strongly connected components found (every round).
    pub loops: u64,
    /// Loops that needed predicates (not already tail-controlled, not inverted).
    pub loops_restructured: u64,
    /// Head-controlled loops inverted by copying their condition (Section IV-C).
    pub loops_inverted: u64,
    /// Blocks copied for loop inversion.
    pub copied_blocks: u64,
    /// Loops with several entries (irreducible), given an entry dispatch.
    pub entry_dispatches: u64,
    /// Loops with several exit targets, given an exit dispatch.
    pub exit_dispatches: u64,
    /// Loops given a single repetition/exit branch on `r`.
    pub repetition_dispatches: u64,
    /// Branches whose subgraphs continued at several points, given a dispatch on `p`.
    pub branch_dispatches: u64,
    /// Branches found (nodes with two or more distinct successors heading a subgraph).
    pub branches: u64,
    /// Predicate assignments made.
    pub assignments: u64,
    /// Empty join nodes made.
    pub dummies: u64,
    /// Two-way tests made to resolve dispatches of more than two ways.
    pub cascade_tests: u64,
    /// Predicate variables made.
    pub predicates: u64,
    /// Empty original blocks threaded past (their edges go to their successor).
    pub threaded: u64,
    /// Branches whose arms only assigned predicates, turned into the assignments of
    /// values computed from their condition.
    pub folded: u64,
    /// Assignment nodes merged into the join they all led to.
    pub assignments_sunk: u64,
    /// Assignment nodes moved into the branch they followed.
    pub hoisted: u64,
    /// Assignments of the value their predicate already held on every path, removed.
    pub known_dropped: u64,
}

/// The abstract graph of one region.
#[derive(Clone, Debug)]
pub struct Graph {
    pub(crate) kinds: PrimaryMap<Node, Kind>,
    pub(crate) succs: SecondaryMap<Node, Vec<Node>>,
    /// Hidden slots of each node.
    pub(crate) hidden: SecondaryMap<Node, Vec<u32>>,
    /// Predecessor edges of every node (hidden ones included), kept up to date by
    /// [`Graph::add`], [`Graph::set_succs`] and [`Graph::redirect`].
    pub(super) preds: SecondaryMap<Node, Vec<(Node, u32)>>,
    /// Number of values of each predicate.
    pub(crate) preds_values: PrimaryMap<PredVar, u32>,
    /// Branch nodes turned into predicate assignments ([`super::simplify`]): per
    /// predicate, its value when the condition holds and when it does not; such a node
    /// has one slot, its branch's joined target.
    pub(crate) folded: SecondaryMap<Node, Vec<(PredVar, u32, u32)>>,
    /// Predicate assignments moved into a branch node, ahead of its branch
    /// ([`super::simplify`]).
    pub(crate) hoisted: SecondaryMap<Node, Vec<(PredVar, u32)>>,
    /// The slot of the arm a node's hoisted assignments came from: only the lanes taking
    /// it read them, so a two-valued predicate's hoisted value is materialized as the
    /// branch condition or its negation, whichever equals it on that arm.
    pub(crate) hoist_slot: SecondaryMap<Node, u32>,
    pub(crate) entry: Node,
    pub(crate) exit: Node,
    /// The cascade for dispatches of more than two ways.
    cascade: Cascade,
    /// Did anything change?
    pub(crate) changed: bool,
    pub(crate) stats: GraphStats,
}

impl Graph {
    /// A graph with only its entry and exit, the entry being `entry_kind`.
    pub fn new(entry_kind: Kind, cascade: Cascade) -> Self {
        let mut kinds = PrimaryMap::new();
        let entry = kinds.push(entry_kind);
        let exit = kinds.push(Kind::Exit);
        Graph {
            kinds,
            succs: SecondaryMap::new(),
            hidden: SecondaryMap::new(),
            preds: SecondaryMap::new(),
            preds_values: PrimaryMap::new(),
            folded: SecondaryMap::new(),
            hoisted: SecondaryMap::new(),
            hoist_slot: SecondaryMap::new(),
            entry,
            exit,
            cascade,
            changed: false,
            stats: GraphStats::default(),
        }
    }

    /// Adds a node.
    pub fn add(&mut self, kind: Kind, succs: Vec<Node>) -> Node {
        let n = self.kinds.push(kind);
        self.set_succs(n, succs);
        n
    }

    /// Sets `n`'s successor slots (`n` has none yet).
    pub fn set_succs(&mut self, n: Node, succs: Vec<Node>) {
        for (i, &t) in succs.iter().enumerate() {
            self.preds[t].push((n, i as u32));
        }
        self.succs[n] = succs;
    }

    /// Hides slot `slot` of `n`.
    pub fn hide(&mut self, n: Node, slot: u32) {
        if !self.hidden[n].contains(&slot) {
            self.hidden[n].push(slot);
        }
    }

    /// The nodes.
    pub fn nodes(&self) -> impl Iterator<Item = Node> + '_ {
        self.kinds.keys()
    }

    /// The visible edges of `n`: (slot, target).
    fn visible(&self, n: Node) -> impl Iterator<Item = (u32, Node)> + '_ {
        let hidden = &self.hidden[n];
        self.succs[n]
            .iter()
            .enumerate()
            .map(|(i, &t)| (i as u32, t))
            .filter(move |(i, _)| !hidden.contains(i))
    }

    /// The targets of the visible edges of `n`, in slot order (repeats included).
    pub(crate) fn visible_targets(&self, n: Node) -> impl Iterator<Item = Node> + '_ {
        self.visible(n).map(|(_, t)| t)
    }

    fn new_pred(&mut self, values: u32) -> PredVar {
        self.stats.predicates += 1;
        self.preds_values.push(values)
    }

    fn assign(&mut self, var: PredVar, value: u32, to: Node) -> Node {
        self.stats.assignments += 1;
        self.changed = true;
        self.add(Kind::Assign(vec![(var, value)]), vec![to])
    }

    fn dummy(&mut self, to: Node) -> Node {
        self.stats.dummies += 1;
        self.changed = true;
        self.add(Kind::Dummy, vec![to])
    }

    pub(super) fn redirect(&mut self, (n, slot): (Node, u32), to: Node) {
        let old = self.succs[n][slot as usize];
        self.preds[old].retain(|&e| e != (n, slot));
        self.preds[to].push((n, slot));
        self.succs[n][slot as usize] = to;
        self.changed = true;
    }

    /// A dispatch on `var` to `targets` (`targets[k]` when `var == k`): one node, or a
    /// cascade of tests (the setting's [`Cascade`]) for more than two targets. Returns
    /// the root and the nodes made.
    fn dispatch(&mut self, var: PredVar, targets: &[Node]) -> (Node, Vec<Node>) {
        self.changed = true;
        if targets.len() <= 2 || self.cascade == Cascade::Table {
            let n = self.add(Kind::Dispatch(var), targets.to_vec());
            return (n, vec![n]);
        }
        let mut made = Vec::new();
        let root = match self.cascade {
            Cascade::Depth => {
                // Built from the end: the last test decides between the last two.
                let k = targets.len();
                let mut next = targets[k - 1];
                for i in (0..k - 1).rev() {
                    next = self.add(Kind::TestEq(var, i as u32), vec![targets[i], next]);
                    made.push(next);
                }
                next
            }
            _ => {
                // A balanced tree over value ranges, built bottom-up with a stack.
                enum Job {
                    Visit(u32, u32),
                    Build(u32, u32),
                }
                let mut built: HashMap<(u32, u32), Node> = HashMap::new();
                let mut stack = vec![Job::Visit(0, targets.len() as u32)];
                while let Some(job) = stack.pop() {
                    match job {
                        Job::Visit(lo, hi) if hi - lo == 1 => {
                            built.insert((lo, hi), targets[lo as usize]);
                        }
                        Job::Visit(lo, hi) => {
                            let mid = lo + (hi - lo) / 2;
                            stack.push(Job::Build(lo, hi));
                            stack.push(Job::Visit(lo, mid));
                            stack.push(Job::Visit(mid, hi));
                        }
                        Job::Build(lo, hi) => {
                            let mid = lo + (hi - lo) / 2;
                            let (a, b) = (built[&(lo, mid)], built[&(mid, hi)]);
                            let n = self.add(Kind::TestLt(var, mid), vec![a, b]);
                            made.push(n);
                            built.insert((lo, hi), n);
                        }
                    }
                }
                built[&(0, targets.len() as u32)]
            }
        };
        self.stats.cascade_tests += made.len() as u64;
        (root, made)
    }

    /// Visible predecessor edge counts of every node.
    fn in_degrees(&self) -> SecondaryMap<Node, u32> {
        let mut deg: SecondaryMap<Node, u32> = SecondaryMap::with_capacity(self.kinds.len());
        for n in self.nodes() {
            for (_, t) in self.visible(n) {
                deg[t] += 1;
            }
        }
        deg
    }

    /// Does every node reachable from the entry reach the exit along visible edges?
    pub fn every_node_reaches_exit(&self) -> bool {
        let mut preds: SecondaryMap<Node, Vec<Node>> = SecondaryMap::new();
        let reachable = self.reachable();
        for &n in &reachable {
            for (_, t) in self.visible(n) {
                preds[t].push(n);
            }
        }
        let mut seen: SecondaryMap<Node, bool> = SecondaryMap::new();
        seen[self.exit] = true;
        let mut stack = vec![self.exit];
        let mut count = 0usize;
        while let Some(n) = stack.pop() {
            count += 1;
            for &p in &preds[n] {
                if !seen[p] {
                    seen[p] = true;
                    stack.push(p);
                }
            }
        }
        reachable.iter().all(|&n| seen[n]) && count > 0
    }

    /// Is the graph acyclic along visible edges?
    pub fn is_acyclic(&self) -> bool {
        self.cyclic_sccs().is_empty()
    }

    /// The nodes reachable from the entry along visible edges, in depth-first preorder.
    fn reachable(&self) -> Vec<Node> {
        let mut seen: SecondaryMap<Node, bool> = SecondaryMap::new();
        let mut out = Vec::new();
        let mut stack = vec![self.entry];
        seen[self.entry] = true;
        while let Some(n) = stack.pop() {
            out.push(n);
            for (_, t) in self.visible(n).collect::<Vec<_>>().into_iter().rev() {
                if !seen[t] {
                    seen[t] = true;
                    stack.push(t);
                }
            }
        }
        out
    }

    /// The cyclic strongly connected components over visible edges (Tarjan, iterative),
    /// each in the order its nodes were first reached.
    fn cyclic_sccs(&self) -> Vec<Vec<Node>> {
        const NONE: u32 = u32::MAX;
        let n = self.kinds.len();
        let mut index = vec![NONE; n];
        let mut low = vec![0u32; n];
        let mut on_stack = vec![false; n];
        let mut stack: Vec<Node> = Vec::new();
        let mut out = Vec::new();
        let mut next = 0u32;
        let mut call: Vec<(Node, usize)> = vec![(self.entry, 0)];
        let succs = |v: Node| -> Vec<Node> { self.visible(v).map(|(_, t)| t).collect() };
        let mut succ_cache: HashMap<Node, Vec<Node>> = HashMap::new();
        while let Some(&mut (v, ref mut i)) = call.last_mut() {
            let vi = v.index();
            if *i == 0 && index[vi] == NONE {
                index[vi] = next;
                low[vi] = next;
                next += 1;
                stack.push(v);
                on_stack[vi] = true;
            }
            let list = succ_cache.entry(v).or_insert_with(|| succs(v));
            if let Some(&w) = list.get(*i) {
                *i += 1;
                let wi = w.index();
                if index[wi] == NONE {
                    call.push((w, 0));
                } else if on_stack[wi] {
                    low[vi] = low[vi].min(index[wi]);
                }
                continue;
            }
            call.pop();
            if let Some(&(parent, _)) = call.last() {
                let p = parent.index();
                low[p] = low[p].min(low[vi]);
            }
            if low[vi] == index[vi] {
                let mut comp = Vec::new();
                loop {
                    let w = stack.pop().expect("Tarjan's stack holds the component");
                    on_stack[w.index()] = false;
                    comp.push(w);
                    if w == v {
                        break;
                    }
                }
                let self_loop = comp.len() == 1 && succ_cache[&v].contains(&v);
                if comp.len() > 1 || self_loop {
                    comp.sort_by_key(|w| index[w.index()]);
                    out.push(comp);
                }
            }
        }
        out
    }

    // ------------------------------------------------------------------------------
    // Loop restructuring (Section IV-A) and loop inversion (Section IV-C)
    // ------------------------------------------------------------------------------

    /// Makes every cycle a tail-controlled loop and hides its repetition edge, round by
    /// round until the visible graph is acyclic. `copy`: invert head-controlled loops
    /// instead (Section IV-C); `copyable` says which original blocks may be copied.
    pub fn restructure_loops(&mut self, copy: bool, copyable: &dyn Fn(Block) -> bool) {
        loop {
            let sccs = self.cyclic_sccs();
            if sccs.is_empty() {
                return;
            }
            for scc in sccs {
                self.stats.loops += 1;
                self.restructure_loop(&scc, copy, copyable);
            }
        }
    }

    fn restructure_loop(&mut self, scc: &[Node], copy: bool, copyable: &dyn Fn(Block) -> bool) {
        let mut in_l: HashMap<Node, bool> = scc.iter().map(|&n| (n, true)).collect();
        let inside = |m: &HashMap<Node, bool>, n: Node| m.get(&n).copied().unwrap_or(false);
        let mut entry_edges: Vec<((Node, u32), Node)> = Vec::new();
        let mut exit_edges: Vec<((Node, u32), Node)> = Vec::new();
        for &n in scc {
            for &(p, slot) in &self.preds[n] {
                let visible = !self.hidden[p].contains(&slot);
                if visible && !inside(&in_l, p) && self.succs[p][slot as usize] == n {
                    entry_edges.push(((p, slot), n));
                }
            }
            for (slot, t) in self.visible(n) {
                if !inside(&in_l, t) {
                    exit_edges.push(((n, slot), t));
                }
            }
        }
        let mut entry_nodes: Vec<Node> = Vec::new();
        for &(_, t) in &entry_edges {
            if !entry_nodes.contains(&t) {
                entry_nodes.push(t);
            }
        }
        let mut exit_nodes: Vec<Node> = Vec::new();
        for &(_, t) in &exit_edges {
            if !exit_nodes.contains(&t) {
                exit_nodes.push(t);
            }
        }
        let mut rep_edges: Vec<(Node, u32)> = Vec::new();
        for &n in scc {
            for (slot, t) in self.visible(n) {
                if entry_nodes.contains(&t) && inside(&in_l, t) {
                    rep_edges.push((n, slot));
                }
            }
        }
        if copy && self.invert(&entry_edges, &exit_edges, &rep_edges, copyable) {
            return;
        }

        // Step 2: one entry node.
        let entry = if entry_nodes.len() > 1 {
            self.stats.entry_dispatches += 1;
            let q = self.new_pred(entry_nodes.len() as u32);
            let (b_e, made) = self.dispatch(q, &entry_nodes);
            for m in made {
                in_l.insert(m, true);
            }
            for &(edge, t) in &entry_edges {
                let k = entry_nodes.iter().position(|&e| e == t).unwrap_or(0) as u32;
                let a = self.assign(q, k, b_e);
                self.redirect(edge, a);
            }
            let old = std::mem::take(&mut rep_edges);
            for edge in old {
                let t = self.succs[edge.0][edge.1 as usize];
                let k = entry_nodes.iter().position(|&e| e == t).unwrap_or(0) as u32;
                let a = self.assign(q, k, b_e);
                in_l.insert(a, true);
                self.redirect(edge, a);
                rep_edges.push((a, 0));
            }
            b_e
        } else {
            entry_nodes[0]
        };
        // Step 3: one exit node.
        let exit = if exit_nodes.len() > 1 {
            self.stats.exit_dispatches += 1;
            let x = self.new_pred(exit_nodes.len() as u32);
            let (b_x, _) = self.dispatch(x, &exit_nodes);
            let old = std::mem::take(&mut exit_edges);
            for (edge, t) in old {
                let k = exit_nodes.iter().position(|&e| e == t).unwrap_or(0) as u32;
                let a = self.assign(x, k, b_x);
                in_l.insert(a, true);
                self.redirect(edge, a);
                exit_edges.push(((a, 0), b_x));
            }
            b_x
        } else {
            exit_nodes[0]
        };
        // Step 4: one repetition edge and one exit edge, from one node.
        let tail_controlled =
            rep_edges.len() == 1 && exit_edges.len() == 1 && rep_edges[0].0 == exit_edges[0].0 .0;
        if tail_controlled {
            let (n, slot) = rep_edges[0];
            self.hide(n, slot);
            return;
        }
        self.stats.loops_restructured += 1;
        self.stats.repetition_dispatches += 1;
        let r = self.new_pred(2);
        let b_r = self.add(Kind::Dispatch(r), vec![exit, entry]);
        self.changed = true;
        for (edge, _) in exit_edges {
            self.assign_or_extend(edge, r, 0, b_r);
        }
        for edge in rep_edges {
            self.assign_or_extend(edge, r, 1, b_r);
        }
        self.hide(b_r, 1);
    }

    /// Diverts `edge` through an assignment `var := value` to `to`. When the edge leaves
    /// an assignment node of the restructuring (its only way on), the assignment joins
    /// that node instead of making another.
    fn assign_or_extend(&mut self, edge: (Node, u32), var: PredVar, value: u32, to: Node) {
        let (n, _) = edge;
        if let Kind::Assign(list) = &mut self.kinds[n] {
            list.push((var, value));
            self.stats.assignments += 1;
            self.redirect(edge, to);
            return;
        }
        let a = self.assign(var, value, to);
        self.redirect(edge, a);
    }

    /// Loop inversion of a head-controlled loop (Section IV-C): the linear condition
    /// subgraph `S` is copied to the end of the body, so the loop tests at its tail.
    /// Returns false (nothing changed) when the loop is not head-controlled.
    fn invert(
        &mut self,
        entry_edges: &[((Node, u32), Node)],
        exit_edges: &[((Node, u32), Node)],
        rep_edges: &[(Node, u32)],
        copyable: &dyn Fn(Block) -> bool,
    ) -> bool {
        let ([(_, first)], [((last, exit_slot), _)], [rep]) = (entry_edges, exit_edges, rep_edges)
        else {
            return false;
        };
        let (first, last, exit_slot, rep) = (*first, *last, *exit_slot, *rep);
        if rep.0 == last {
            // Already tail-controlled.
            return false;
        }
        // Walk the linear chain S from the entry node to the exiting node.
        let mut chain = vec![first];
        let mut cur = first;
        while cur != last {
            if self.succs[cur].len() != 1 || !self.hidden[cur].is_empty() {
                return false;
            }
            let next = self.succs[cur][0];
            // `next` must have `cur` as its only predecessor: checked below by counting.
            if chain.contains(&next) || chain.len() > 64 {
                return false;
            }
            chain.push(next);
            cur = next;
        }
        if self.succs[last].len() != 2 || !self.hidden[last].is_empty() {
            return false;
        }
        let body_slot = 1 - exit_slot;
        let body = self.succs[last][body_slot as usize];
        if chain.contains(&body) {
            return false;
        }
        let blocks: Option<Vec<Block>> = chain
            .iter()
            .map(|&n| match self.kinds[n] {
                Kind::Orig(b) if copyable(b) => Some(b),
                _ => None,
            })
            .collect();
        let Some(blocks) = blocks else {
            return false;
        };
        // Every node after the first has one predecessor, its chain neighbour.
        let deg = self.in_degrees();
        if chain[1..].iter().any(|&n| deg[n] != 1) {
            return false;
        }
        // Copy S; the copy ends the body and holds the new repetition and exit edges.
        let exit_target = self.succs[last][exit_slot as usize];
        let mut copies: Vec<Node> = blocks
            .iter()
            .map(|&b| self.kinds.push(Kind::Copy(b)))
            .collect();
        for i in 0..copies.len() {
            let succs = if i + 1 < copies.len() {
                vec![copies[i + 1]]
            } else {
                let mut s = vec![body; 2];
                s[exit_slot as usize] = exit_target;
                s
            };
            self.set_succs(copies[i], succs);
        }
        self.redirect(rep, copies[0]);
        let tail = copies.pop().expect("the chain has a node");
        self.hide(tail, body_slot);
        self.stats.loops_inverted += 1;
        self.stats.copied_blocks += blocks.len() as u64;
        true
    }

    // ------------------------------------------------------------------------------
    // Branch restructuring (Section IV-B)
    // ------------------------------------------------------------------------------

    /// Properly nests every branch of the (visibly acyclic) graph: each branch's
    /// subgraphs continue at one point, through a dispatch on a new predicate where they
    /// continued at several, and each subgraph leaves by one edge.
    pub fn restructure_branches(&mut self) -> Result<(), String> {
        // Every task splits off a smaller piece; the budget only guards against a bug
        // turning into a hang.
        let budget = 64 * self.kinds.len() + 4096;
        let mut done = 0usize;
        let mut indeg = self.in_degrees();
        let mut tasks: Vec<(Node, Node)> = vec![(self.entry, self.exit)];
        // Per node: the branch subgraph it was last labelled with (stamped per task).
        let mut label: SecondaryMap<Node, (u32, u32)> = SecondaryMap::new();
        let mut stamp = 0u32;
        while let Some((entry, exit)) = tasks.pop() {
            done += 1;
            if done > budget {
                return Err("branch restructuring did not converge".to_string());
            }
            // The head: follow single successors.
            let mut b = entry;
            let slots: Vec<(u32, Node)> = loop {
                if b == exit {
                    break Vec::new();
                }
                let v: Vec<(u32, Node)> = self.visible(b).collect();
                match v.first() {
                    None => break Vec::new(),
                    Some(&(_, t)) if v.iter().all(|&(_, u)| u == t) => b = t,
                    Some(_) => break v,
                }
            };
            if slots.is_empty() {
                continue;
            }
            self.stats.branches += 1;
            stamp += 1;
            // Label the branch subgraphs B_k: the nodes every one of whose visible
            // in-edges comes from B_k (the edge's own target for the first node).
            const MANY: u32 = u32::MAX;
            let mut arrivals: HashMap<Node, (u32, u32)> = HashMap::new(); // node -> (k, count)
            let mut members: Vec<Vec<Node>> = vec![Vec::new(); slots.len()];
            let mut work: Vec<(Node, u32)> = Vec::new();
            let mut continuation_order: Vec<Node> = Vec::new();
            let mut exits: Vec<((Node, u32), u32, Node)> = Vec::new(); // edge, k, target
            let note = |arrivals: &mut HashMap<Node, (u32, u32)>, t: Node, k: u32| {
                let e = arrivals.entry(t).or_insert((k, 0));
                if e.0 != k {
                    e.0 = MANY;
                }
                e.1 += 1;
                *e
            };
            for (k, &(_, t)) in slots.iter().enumerate() {
                let k = k as u32;
                let (lab, count) = note(&mut arrivals, t, k);
                if t != exit && lab == k && count == indeg[t] {
                    label[t] = (stamp, k);
                    members[k as usize].push(t);
                    work.push((t, k));
                }
            }
            while let Some((n, k)) = work.pop() {
                let outs: Vec<(u32, Node)> = self.visible(n).collect();
                for (_, t) in outs {
                    let (lab, count) = note(&mut arrivals, t, k);
                    if t != exit && lab == k && count == indeg[t] {
                        label[t] = (stamp, k);
                        members[k as usize].push(t);
                        work.push((t, k));
                    }
                }
            }
            let in_b = |label: &SecondaryMap<Node, (u32, u32)>, n: Node| label[n].0 == stamp;
            // Exit edges of each B_k (for an empty B_k: the branch's own edge), and the
            // continuation points in order of discovery.
            for (k, &(slot, t)) in slots.iter().enumerate() {
                if !in_b(&label, t) || label[t].1 != k as u32 {
                    exits.push(((b, slot), k as u32, t));
                }
            }
            for (k, list) in members.iter().enumerate() {
                for &n in list {
                    for (slot, t) in self.visible(n) {
                        if !in_b(&label, t) {
                            exits.push(((n, slot), k as u32, t));
                        }
                    }
                }
            }
            for &(_, _, t) in &exits {
                if !continuation_order.contains(&t) {
                    continuation_order.push(t);
                }
            }
            let nk = slots.len();
            let mut region_exits: Vec<Vec<(Node, u32)>> = vec![Vec::new(); nk];
            for &(edge, k, _) in &exits {
                region_exits[k as usize].push(edge);
            }
            let single = continuation_order.len() == 1;
            let (join, mut per_region) = if single {
                let c = continuation_order[0];
                (c, region_exits)
            } else {
                // Several continuation points: B_k assign p := m on the way to c_m, and
                // the tail is entered through a dispatch on p.
                self.stats.branch_dispatches += 1;
                let p = self.new_pred(continuation_order.len() as u32);
                let (e, made) = self.dispatch(p, &continuation_order);
                for &m in &made {
                    indeg[m] = 0;
                }
                for &c in &continuation_order {
                    // Edges from B's to c are replaced by edges from the dispatch.
                    let from_b = exits.iter().filter(|x| x.2 == c).count() as u32;
                    indeg[c] = indeg[c] - from_b + 1;
                }
                // The dispatch nodes' own in-degrees.
                for &m in &made {
                    for (_, t) in self.visible(m).collect::<Vec<_>>() {
                        if made.contains(&t) {
                            indeg[t] += 1;
                        }
                    }
                }
                let mut per_region: Vec<Vec<(Node, u32)>> = vec![Vec::new(); nk];
                for &(edge, k, t) in &exits {
                    let m = continuation_order.iter().position(|&c| c == t).unwrap_or(0);
                    let a = self.assign(p, m as u32, e);
                    self.redirect(edge, a);
                    indeg[a] = 1;
                    indeg[e] += 1;
                    per_region[k as usize].push((a, 0));
                }
                (e, per_region)
            };
            // Each branch subgraph leaves by one edge: join several exits in a dummy.
            for (k, edges) in per_region.iter_mut().enumerate() {
                let head = slots[k].1;
                let nonempty = !members[k].is_empty();
                let region_exit = if edges.len() > 1 {
                    let d = self.dummy(join);
                    indeg[join] = indeg[join] + 1 - edges.len() as u32;
                    indeg[d] = edges.len() as u32;
                    for &mut edge in edges.iter_mut() {
                        self.redirect(edge, d);
                    }
                    Some(d)
                } else {
                    edges.first().map(|&(n, _)| if single { join } else { n })
                };
                // An empty B_k is at most the assignment its edge passes through:
                // nothing to nest there.
                if let (Some(x), true) = (region_exit, nonempty) {
                    if head != x {
                        tasks.push((head, x));
                    }
                }
            }
            tasks.push((join, exit));
        }
        Ok(())
    }
}
