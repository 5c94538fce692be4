//! Cleanup of the region graph around restructuring: what the paper's construction leaves
//! that an IPDOM machine pays for without needing it.
//!
//! Reissmann et al. (Section IV-B, Figure 3) place a predicate assignment on every edge
//! into a continuation point, an empty join node after every branch subgraph left by
//! several edges, and a dispatch before the tail. Their Section V-A counts the blocks
//! themselves as free; on a warp every one of them costs instructions each time a group
//! of lanes passes it, and a branch whose arms only assign a predicate splits the warp
//! for nothing. LLVM's StructurizeCFG avoids most of this by computing its flow
//! predicates from the branch conditions (phis of `i1` values) and by running after CFG
//! simplification. Here, on the abstract graph (before [`super::materialize`]):
//!
//! - **Threading empty blocks** (before the phases): an original block that holds only an
//!   argument-free jump is bypassed, its predecessors going straight to its successor.
//!   Such a block does nothing but join paths, and as a join it is what makes graphs
//!   unstructured: `c? -> S1 | d?; d? -> S1 | S2` with `S1` empty needs no predicate at
//!   all once `S1`'s edges go where `S1` went. The block leaves the kernel.
//! - **Folding branches into assignments**: a two-way branch both of whose arms are
//!   assignment nodes of the same predicates, reached only from it and leading to the
//!   same node, becomes one node that computes each predicate from its condition (the
//!   condition itself, its negation, a constant, or a `select`) and jumps there. A branch
//!   whose two arms lead to the same node becomes a jump. The warp no longer splits there.
//! - **Sinking assignments**: a join node all of whose predecessors are assignment nodes
//!   with the same assignments becomes that assignment node; they go.
//! - **Hoisting assignments**: an assignment node on one arm of a branch, when the lanes
//!   taking the other arm assign the same predicates again before anything reads them,
//!   moves into the branch's block ahead of the branch: every lane assigns it, and the
//!   arm's lanes go straight on.
//! - **Dropping known assignments**: on an acyclic graph, an assignment of the value a
//!   predicate already holds on every path to it goes (a forward analysis of known
//!   constants), and an assignment node left empty on one edge's way goes with it, the
//!   edge going on by itself: nested constructs and hoisting often assign again what an
//!   enclosing construct already assigned.
//!
//! None of these makes a block run more often: they only remove nodes, or merge a split
//! warp earlier. The empty join nodes themselves stay: without them branch subgraphs
//! would share their joins, which rules 1–3 of Definition 2 do not contract, and the
//! result would not be tail-structured (an IPDOM machine would run it without redundancy
//! all the same).

use super::graph::{Graph, Kind, Node, PredVar};
use cranelift_entity::SecondaryMap;
use std::collections::HashSet;
use warplift_ir::Block;

impl Graph {
    /// Takes `n` out of the graph: no edges left, kind [`Kind::Removed`].
    fn remove(&mut self, n: Node) {
        for (i, t) in std::mem::take(&mut self.succs[n]).into_iter().enumerate() {
            self.preds[t].retain(|&e| e != (n, i as u32));
        }
        self.hidden[n].clear();
        let block = match self.kinds[n] {
            Kind::Orig(b) => Some(b),
            _ => None,
        };
        self.kinds[n] = Kind::Removed(block);
        self.changed = true;
    }

    /// Sends every edge into `n` to `to` instead.
    fn forward(&mut self, n: Node, to: Node) {
        for edge in self.preds[n].clone() {
            self.redirect(edge, to);
        }
    }

    /// Threads past the original blocks `empty` says hold only an argument-free jump
    /// (not the entry, not a block whose jump is hidden, not a cycle of such blocks).
    pub fn thread_empty(&mut self, empty: &dyn Fn(Block) -> bool) {
        let threadable = |g: &Graph, n: Node| {
            n != g.entry
                && matches!(g.kinds[n], Kind::Orig(b) if empty(b))
                && g.succs[n].len() == 1
                && g.hidden[n].is_empty()
        };
        let nodes: Vec<Node> = self.nodes().collect();
        for &n in &nodes {
            if !threadable(self, n) {
                continue;
            }
            // Where the chain of empty blocks from `n` leads.
            let mut t = self.succs[n][0];
            let mut steps = 0;
            while t != n && threadable(self, t) && steps <= nodes.len() {
                t = self.succs[t][0];
                steps += 1;
            }
            if t == n || threadable(self, t) {
                continue; // a cycle of empty blocks
            }
            self.forward(n, t);
            self.remove(n);
            self.stats.threaded += 1;
        }
    }

    /// The cleanup after the phases (see the [module documentation](self)), until
    /// nothing changes; `brif` says which original blocks end with a two-way `brif`.
    /// `hoist`: hoisting is allowed (the region carries no values through its joins).
    pub fn simplify(&mut self, brif: &dyn Fn(Block) -> bool, hoist: bool) {
        // Each round removes a node or a branch, so the rounds are bounded.
        for _ in 0..=self.kinds.len() {
            let mut again = false;
            let nodes: Vec<Node> = self.nodes().collect();
            for &n in &nodes {
                again |= self.fold(n, brif);
            }
            for &n in &nodes {
                again |= self.sink(n);
            }
            for &n in nodes.iter().filter(|_| hoist) {
                again |= self.hoist(n, brif);
            }
            // Only once the rest is done: a branch whose arms assign a predicate folds
            // into a copy of its condition, which beats dropping one arm's assignment.
            if !again {
                again = self.drop_known_assignments();
            }
            if !again {
                break;
            }
        }
        self.relabel();
    }

    /// Removes the assignments that give a predicate the value it already holds on every
    /// path to them (a forward analysis of known constant values over the graph, which
    /// must be acyclic with its hidden edges), and then the assignment nodes left empty
    /// that are one edge's way on (that edge goes straight on). Returns whether anything
    /// changed.
    ///
    /// The construction assigns a predicate on every edge into a continuation, and
    /// hoisting puts constants ahead of branches; nested constructs then often assign a
    /// value an enclosing one already gave (`p := 0` in a branch node and again in the
    /// node its arm leads to). The value seen by every read stays the same: each removed
    /// assignment follows one of the same value on every path, with no other in between.
    fn drop_known_assignments(&mut self) -> bool {
        let Some(order) = self.topological_order() else {
            return false;
        };
        // Per node, the predicates known on entry: (predicate, value), sorted. A fact is
        // kept only up to the last node (in `order`) that assigns its predicate: past it
        // no assignment is left to drop, and carrying every predicate's fact to the end
        // made the sets, and the meets, grow with the kernel.
        type Known = Vec<(PredVar, u32)>;
        let mut last: SecondaryMap<PredVar, usize> = SecondaryMap::new();
        for (i, &n) in order.iter().enumerate() {
            let assigned = self.hoisted[n]
                .iter()
                .map(|&(p, _)| p)
                .chain(self.folded[n].iter().map(|&(p, _, _)| p));
            let listed: &[(PredVar, u32)] = match &self.kinds[n] {
                Kind::Assign(list) => list,
                _ => &[],
            };
            for p in assigned.chain(listed.iter().map(|&(p, _)| p)) {
                last[p] = i;
            }
        }
        let mut known_in: SecondaryMap<Node, Option<Known>> = SecondaryMap::new();
        known_in[self.entry] = Some(Vec::new());
        let mut changed = false;
        for (i, &n) in order.iter().enumerate() {
            let Some(mut known) = known_in[n].take() else {
                continue;
            };
            let holds = |known: &Known, p: PredVar, v: u32| known.binary_search(&(p, v)).is_ok();
            let set = |known: &mut Known, p: PredVar, v: Option<u32>| {
                known.retain(|&(q, _)| q != p);
                if let Some(v) = v {
                    let at = known.partition_point(|&x| x < (p, v));
                    known.insert(at, (p, v));
                }
            };
            // Hoisted assignments come first, then the folded ones (the node's branch
            // condition), then an assignment node's list.
            let before = self.hoisted[n].len();
            let hoisted = std::mem::take(&mut self.hoisted[n]);
            for &(p, v) in &hoisted {
                if !holds(&known, p, v) {
                    self.hoisted[n].push((p, v));
                    set(&mut known, p, Some(v));
                }
            }
            self.stats.known_dropped += (before - self.hoisted[n].len()) as u64;
            changed |= self.hoisted[n].len() != before;
            let folded = std::mem::take(&mut self.folded[n]);
            let before = folded.len();
            for (p, yes, no) in folded {
                if yes == no && holds(&known, p, yes) {
                    continue;
                }
                self.folded[n].push((p, yes, no));
                set(&mut known, p, (yes == no).then_some(yes));
            }
            self.stats.known_dropped += (before - self.folded[n].len()) as u64;
            changed |= self.folded[n].len() != before;
            if let Kind::Assign(list) = &mut self.kinds[n] {
                let before = list.len();
                let mut kept = Vec::with_capacity(before);
                for &(p, v) in list.iter() {
                    if !holds(&known, p, v) {
                        kept.push((p, v));
                        set(&mut known, p, Some(v));
                    }
                }
                self.stats.known_dropped += (before - kept.len()) as u64;
                changed |= kept.len() != before;
                *list = kept;
            }
            // Meet into the successors: what every path agrees on. A two-valued
            // predicate hoisted into a branch holds its value on the arm it came from
            // only: it is materialized as the branch condition (or its negation), which
            // differs on the other arm.
            known.retain(|&(p, _)| last[p] > i);
            for (slot, &t) in self.succs[n].iter().enumerate() {
                let mut edge = known.clone();
                if slot as u32 != self.hoist_slot[n] {
                    for &(p, _) in &self.hoisted[n] {
                        if self.preds_values[p] <= 2 {
                            edge.retain(|&(q, _)| q != p);
                        }
                    }
                }
                known_in[t] = Some(match known_in[t].take() {
                    None => edge,
                    Some(k) => k
                        .into_iter()
                        .filter(|x| edge.binary_search(x).is_ok())
                        .collect(),
                });
            }
        }
        // Assignment nodes left empty on one edge's way: the edge goes on by itself,
        // unless its source already has an edge where the node led.
        let nodes: Vec<Node> = self.nodes().collect();
        for n in nodes {
            let empty = matches!(&self.kinds[n], Kind::Assign(list) if list.is_empty());
            if !empty || n == self.entry || !self.hidden[n].is_empty() || self.succs[n].len() != 1 {
                continue;
            }
            let [(p, slot)] = self.preds[n][..] else {
                continue;
            };
            let to = self.succs[n][0];
            if self.succs[p].contains(&to) || to == n {
                continue;
            }
            self.remove(n);
            self.set_slot(p, slot, to);
            changed = true;
        }
        changed
    }

    /// The nodes reachable from the entry over every edge (hidden ones included), each
    /// after all its predecessors; `None` when those edges make a cycle.
    fn topological_order(&self) -> Option<Vec<Node>> {
        let mut reached: SecondaryMap<Node, bool> = SecondaryMap::new();
        let mut stack = vec![self.entry];
        reached[self.entry] = true;
        let mut indeg: SecondaryMap<Node, u32> = SecondaryMap::new();
        let mut count = 0usize;
        while let Some(n) = stack.pop() {
            count += 1;
            for &t in &self.succs[n] {
                indeg[t] += 1;
                if !reached[t] {
                    reached[t] = true;
                    stack.push(t);
                }
            }
        }
        let mut order = Vec::with_capacity(count);
        let mut ready = vec![self.entry];
        if indeg[self.entry] != 0 {
            return None;
        }
        while let Some(n) = ready.pop() {
            order.push(n);
            for &t in &self.succs[n] {
                indeg[t] -= 1;
                if indeg[t] == 0 {
                    ready.push(t);
                }
            }
        }
        (order.len() == count).then_some(order)
    }

    /// Flips the values of a two-valued predicate (and the order of its dispatch's
    /// targets) where more of its folded and hoisted assignments negate a condition than
    /// copy it: a copy costs nothing, a negation an instruction.
    fn relabel(&mut self) {
        // One pass counts, per predicate, the folded assignments that negate and that
        // copy a condition, and one more flips the predicates where negations win: a pass
        // over the graph per predicate was quadratic in a kernel restructured as one region.
        let mut counts: SecondaryMap<PredVar, (u32, u32)> = SecondaryMap::new();
        for n in self.nodes() {
            for &(p, yes, no) in &self.folded[n] {
                match (yes, no) {
                    (0, 1) => counts[p].0 += 1,
                    (1, 0) => counts[p].1 += 1,
                    _ => {}
                }
            }
            // A hoisted value is the condition where its arm is the taken one (slot 0)
            // and the value 1, or the other arm and 0; else the condition's negation.
            for &(p, v) in &self.hoisted[n] {
                if (v == 1) == (self.hoist_slot[n] == 0) {
                    counts[p].1 += 1;
                } else {
                    counts[p].0 += 1;
                }
            }
        }
        let mut flip_var: SecondaryMap<PredVar, bool> = SecondaryMap::new();
        let mut any = false;
        for (var, &values) in self.preds_values.iter() {
            let (negated, copied) = counts[var];
            if values == 2 && negated > copied {
                flip_var[var] = true;
                any = true;
            }
        }
        if !any {
            return;
        }
        let flip = |v: &mut u32| *v = 1 - *v;
        let nodes: Vec<Node> = self.nodes().collect();
        for n in nodes {
            match &mut self.kinds[n] {
                Kind::Assign(list) => {
                    for (p, v) in list.iter_mut() {
                        if flip_var[*p] {
                            flip(v);
                        }
                    }
                }
                Kind::Dispatch(p) if flip_var[*p] && self.succs[n].len() == 2 => {
                    self.swap_slots(n);
                }
                _ => {}
            }
            for (p, yes, no) in self.folded[n].iter_mut() {
                if flip_var[*p] {
                    flip(yes);
                    flip(no);
                }
            }
            for (p, v) in self.hoisted[n].iter_mut() {
                if flip_var[*p] {
                    flip(v);
                }
            }
        }
    }

    /// Exchanges the two slots of `n`, hidden marks included.
    fn swap_slots(&mut self, n: Node) {
        let (a, b) = (self.succs[n][0], self.succs[n][1]);
        let targets: &[Node] = if a == b { &[a] } else { &[a, b] };
        for &t in targets {
            for e in self.preds[t].iter_mut() {
                if e.0 == n {
                    e.1 = 1 - e.1;
                }
            }
        }
        self.succs[n].swap(0, 1);
        for slot in self.hidden[n].iter_mut() {
            *slot = 1 - *slot;
        }
    }

    /// Folds the branch `n` into predicate assignments, if both its arms only assign the
    /// same predicates on the way to one node (or lead to the same node).
    fn fold(&mut self, n: Node, brif: &dyn Fn(Block) -> bool) -> bool {
        let two_way = match self.kinds[n] {
            Kind::Orig(b) => brif(b),
            Kind::TestEq(..) | Kind::TestLt(..) => true,
            _ => false,
        };
        if !two_way
            || self.succs[n].len() != 2
            || !self.hidden[n].is_empty()
            || !self.folded[n].is_empty()
            || !self.hoisted[n].is_empty()
        {
            return false;
        }
        // Slot 0 is the `brif`'s first destination (a test's), taken when the condition
        // holds.
        let (yes, no) = (self.succs[n][0], self.succs[n][1]);
        let (to, list) = if yes == no {
            (yes, Vec::new())
        } else {
            let arm = |g: &Graph, a: Node, slot: u32| match &g.kinds[a] {
                Kind::Assign(list)
                    if g.preds[a] == [(n, slot)]
                        && g.hidden[a].is_empty()
                        && g.succs[a].len() == 1 =>
                {
                    Some((g.succs[a][0], list.clone()))
                }
                _ => None,
            };
            let (Some((t1, l1)), Some((t0, l0))) = (arm(self, yes, 0), arm(self, no, 1)) else {
                return false;
            };
            if t1 != t0 || t1 == yes || t1 == no {
                return false;
            }
            let mut list: Vec<(PredVar, u32, u32)> = Vec::with_capacity(l1.len());
            for &(var, v1) in &l1 {
                let mut in_l0 = l0.iter().filter(|&&(w, _)| w == var);
                let (Some(&(_, v0)), None) = (in_l0.next(), in_l0.next()) else {
                    return false;
                };
                if list.iter().any(|&(w, _, _)| w == var) {
                    return false;
                }
                list.push((var, v1, v0));
            }
            if l0.len() != l1.len() {
                return false;
            }
            self.remove(yes);
            self.remove(no);
            (t1, list)
        };
        // `n` keeps one slot, to where its arms went.
        for (i, t) in std::mem::take(&mut self.succs[n]).into_iter().enumerate() {
            self.preds[t].retain(|&e| e != (n, i as u32));
        }
        self.set_succs(n, vec![to]);
        self.stats.folded += 1;
        self.stats.assignments += list.len() as u64;
        self.folded[n] = list;
        self.changed = true;
        true
    }

    /// Moves the assignments on one arm of the branch `n` into `n` itself, ahead of its
    /// branch, when the lanes taking the other arm assign every one of those predicates
    /// again before anything reads it: the arm's node goes, and the lanes taking it run
    /// nothing of their own on the way to where it led.
    fn hoist(&mut self, n: Node, brif: &dyn Fn(Block) -> bool) -> bool {
        let is_brif = matches!(self.kinds[n], Kind::Orig(b) if brif(b));
        if !is_brif
            || self.succs[n].len() != 2
            || !self.hidden[n].is_empty()
            || !self.folded[n].is_empty()
            || !self.hoisted[n].is_empty()
        {
            return false;
        }
        for slot in 0..2u32 {
            let a = self.succs[n][slot as usize];
            let other = self.succs[n][1 - slot as usize];
            let Kind::Assign(list) = &self.kinds[a] else {
                continue;
            };
            if self.preds[a] != [(n, slot)] || !self.hidden[a].is_empty() || a == other {
                continue;
            }
            let list = list.clone();
            if !list
                .iter()
                .all(|&(var, _)| self.assigned_before_read(other, var))
            {
                continue;
            }
            let to = self.succs[a][0];
            self.remove(a);
            self.set_slot(n, slot, to);
            self.hoisted[n] = list;
            self.hoist_slot[n] = slot;
            self.stats.hoisted += 1;
            return true;
        }
        false
    }

    /// Points slot `slot` of `n`, which leads nowhere now, at `to`.
    fn set_slot(&mut self, n: Node, slot: u32, to: Node) {
        self.succs[n][slot as usize] = to;
        self.preds[to].push((n, slot));
        self.changed = true;
    }

    /// Does every path from `from` (hidden edges included) assign `var` before it reads
    /// it (a dispatch or test on it), if it reads it at all?
    fn assigned_before_read(&self, from: Node, var: PredVar) -> bool {
        // A set, not a mark per node of the graph: the walk usually ends after a few
        // nodes, and a mark per node made every call cost the whole graph.
        let mut seen: HashSet<Node> = HashSet::new();
        let mut stack = vec![from];
        while let Some(m) = stack.pop() {
            if !seen.insert(m) {
                continue;
            }
            let assigns = match &self.kinds[m] {
                Kind::Dispatch(p) | Kind::TestEq(p, _) | Kind::TestLt(p, _) if *p == var => {
                    return false
                }
                Kind::Assign(list) => list.iter().any(|&(p, _)| p == var),
                _ => {
                    self.folded[m].iter().any(|&(p, _, _)| p == var)
                        || self.hoisted[m].iter().any(|&(p, _)| p == var)
                }
            };
            if !assigns {
                stack.extend(self.succs[m].iter().copied());
            }
        }
        true
    }

    /// Merges the assignment nodes that are the only predecessors of the join `n`, when
    /// they all assign the same, into `n`.
    fn sink(&mut self, n: Node) -> bool {
        if self.kinds[n] != Kind::Dummy || n == self.entry || self.preds[n].len() < 2 {
            return false;
        }
        let preds = self.preds[n].clone();
        let mut common: Option<Vec<(PredVar, u32)>> = None;
        for &(a, slot) in &preds {
            let Kind::Assign(list) = &self.kinds[a] else {
                return false;
            };
            if slot != 0 || a == self.entry || !self.hidden[a].is_empty() {
                return false;
            }
            let mut list = list.clone();
            list.sort();
            match &common {
                None => common = Some(list),
                Some(c) if *c == list => {}
                Some(_) => return false,
            }
        }
        let Some(list) = common else {
            return false;
        };
        let mut arms: Vec<Node> = preds.iter().map(|&(a, _)| a).collect();
        arms.sort();
        arms.dedup();
        for &a in &arms {
            self.forward(a, n);
            self.remove(a);
        }
        self.stats.assignments_sunk += arms.len() as u64;
        self.kinds[n] = Kind::Assign(list);
        true
    }
}
