//! The dynamic-programming matching of two expression DAGs (the paper's Section 3.1,
//! Fig. 1).
//!
//! `T(i, j)` is the best profit — benefit minus cost — of executing node `i` of arm A and
//! node `j` of arm B as one instruction:
//!
//! - `T(i, j)` is impossible when the two differ in operator (opcode, immediates,
//!   condition, address space, offset, result type) or when either may not leave its arm
//!   ([`super::pdg::movable`]);
//! - otherwise `T(i, j) = benefit(i) + Σ over operand slots max(T(child_i, child_j),
//!   leaf(child_i, child_j))`, where `leaf` keeps the operands as they are: 0 when both
//!   arms read the same value, `-copy` when they read different values that can be
//!   *renamed* (a `select` before the branch, a parameter of the join after it:
//!   Listings 1.7/1.8), and impossible when the operand is not available where the pair
//!   moves to (a Hoist cannot read a value its arm computes and keeps).
//!
//! For a commutative operator the slots of B are also tried swapped, so `b * c` and
//! `c * b` match without a copy. Children come before their parents in an arm, so the
//! table is filled in arm order with no recursion; only pairs with the same operator are
//! stored, so the table costs `O(n m)` in the worst case (every instruction the same
//! operator) and far less in practice — the paper's `O(n²)` per region (Section 3.3).
//!
//! The table is stored sparse and dense at once: B's nodes are grouped by operator, and
//! each node of A that has a group gets a row of one cell per member of it, so a cell is
//! found by two array reads (no hashing) and the table holds only the pairs that can
//! match. The pass builds a table per branch and direction, thousands on a large kernel:
//! the hash maps it used before, and the allocations they made, were half of its time.
//!
//! Roots are chosen as Algorithm 1 does, walking arm A backwards and taking for each node
//! its best partner in B; a root is kept when its profit reaches the threshold and its
//! matched pairs agree with the pairs kept before (a node is matched to one partner at
//! most).

use super::cost::{benefit, copy_cost, join_param_cost};
use super::dag::{Arm, Def, Operator};
use super::pdg::{movable, Direction, MemoryDeps};
use rustc_hash::FxHashMap as HashMap;
use std::cell::{Cell as Mark, RefCell};
use warplift_ir::{Function, Opcode, Value};

/// No group, row or partner.
const NONE: u32 = u32::MAX;

/// One matched pair: node `a` of arm A, node `b` of arm B, and whether B's two operands
/// are read swapped (commutative operators).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Pair {
    /// The node of arm A.
    pub a: usize,
    /// The node of arm B.
    pub b: usize,
    /// B's operands are matched in swapped order.
    pub swapped: bool,
}

/// The pairs chosen, in the order of arm A (so every pair comes after the pairs of its
/// operands), with the summed profit of their roots.
#[derive(Clone, Debug, Default)]
pub struct Matching {
    /// The pairs, in arm A's order.
    pub pairs: Vec<Pair>,
    /// The profit of the kept roots (benefit minus copies, in cycles).
    pub profit: i64,
}

/// One cell of the table: `T(i, j)` and whether B's operands are swapped, when the match
/// is possible; and the last traceback that visited it, so that a traceback visits a pair
/// once.
#[derive(Clone, Debug)]
struct Entry {
    score: i64,
    swapped: bool,
    possible: bool,
    mark: Mark<u32>,
}

impl Entry {
    fn impossible() -> Entry {
        Entry {
            score: 0,
            swapped: false,
            possible: false,
            mark: Mark::new(0),
        }
    }
}

/// The storage of a matching table, handed from one table to the next: the pass builds a
/// few small tables per divergent branch, tens of thousands on a large kernel, and
/// allocating each one's vectors anew was a fifth of their cost.
#[derive(Default)]
pub struct Tables {
    /// The operator group of each node of B that may match, and its position in the
    /// group; `(NONE, NONE)` for a node that must stay.
    group_b: Vec<(u32, u32)>,
    /// The members of each group, in arm order: group `g` is
    /// `members[start[g]..start[g + 1]]`.
    members: Vec<u32>,
    start: Vec<u32>,
    /// The number of members of each group.
    sizes: Vec<u32>,
    /// The group of each node of A that may match, and the first cell of its row (one
    /// cell per member of the group); `(NONE, NONE)` when it has no candidate.
    row_a: Vec<(u32, u32)>,
    cells: Vec<Entry>,
    /// B's operators, numbered.
    groups: KeyIndex,
    /// What choosing roots works in ([`Matcher::choose`] borrows the table).
    choice: RefCell<Choice>,
}

/// The working storage of [`Matcher::choose`].
#[derive(Default)]
struct Choice {
    /// Each node's partner so far, per arm.
    of_a: Vec<u32>,
    of_b: Vec<u32>,
    /// The kept roots: their score and their own pairs, `pairs[from..to]`.
    kept: Vec<(i64, usize, usize)>,
    /// One traceback's pairs, and the pairs it has still to visit.
    trace: Vec<Pair>,
    stack: Vec<(usize, usize)>,
    /// The arms' load dependences.
    loads_a: LoadDeps,
    loads_b: LoadDeps,
    /// Each kept root's realized profit, in a round of dropping roots.
    scores: Vec<i64>,
}

/// The DP table of two arms, for one direction.
pub struct Matcher<'f> {
    func: &'f Function,
    a: &'f Arm,
    b: &'f Arm,
    dir: Direction,
    rename: bool,
    t: Tables,
    /// The tracebacks made so far.
    traces: Mark<u32>,
}

fn commutative(op: Opcode) -> bool {
    use Opcode::*;
    matches!(
        op,
        Iadd | Imul | Smulhi | Umulhi | Smin | Smax | Umin | Umax | Band | Bor | Bxor | Fadd | Fmul
    )
}

impl<'f> Matcher<'f> {
    /// Fills the table of arms `a` and `b`; `forbid_a`/`forbid_b` name nodes that must
    /// stay where they are whatever their kind (a node past a slice's end is not
    /// forbidden: an empty slice forbids nothing).
    pub fn new(
        func: &'f Function,
        a: &'f Arm,
        b: &'f Arm,
        dir: Direction,
        rename: bool,
        forbid_a: &[bool],
        forbid_b: &[bool],
    ) -> Matcher<'f> {
        Matcher::new_in(
            Tables::default(),
            func,
            a,
            b,
            dir,
            rename,
            forbid_a,
            forbid_b,
        )
    }

    /// [`Matcher::new`], storing the table in `tables` (taken back by
    /// [`Matcher::into_tables`]).
    #[allow(clippy::too_many_arguments)]
    pub fn new_in(
        mut t: Tables,
        func: &'f Function,
        a: &'f Arm,
        b: &'f Arm,
        dir: Direction,
        rename: bool,
        forbid_a: &[bool],
        forbid_b: &[bool],
    ) -> Matcher<'f> {
        t.groups.clear();
        t.group_b.clear();
        t.sizes.clear();
        t.start.clear();
        t.members.clear();
        t.row_a.clear();
        t.cells.clear();
        t.group_b.resize(b.len(), (NONE, NONE));
        t.row_a.resize(a.len(), (NONE, NONE));
        let empty = |t: Tables| Matcher {
            func,
            a,
            b,
            dir,
            rename,
            t,
            traces: Mark::new(0),
        };
        // Arms with no operator in common get no cell, and nothing below runs.
        if !a.shares_operator(b) {
            return empty(t);
        }
        // B's movable nodes grouped by operator, groups numbered in order of appearance.
        let deps_b = MemoryDeps::compute(func, b);
        for j in 0..b.len() {
            let Some(op) = b.operator(j) else {
                continue;
            };
            if forbid_b.get(j) == Some(&true) || !movable(func, b, &deps_b, j, dir) {
                continue;
            }
            let g = t.groups.insert(op);
            if g as usize == t.sizes.len() {
                t.sizes.push(0);
            }
            t.group_b[j] = (g, t.sizes[g as usize]);
            t.sizes[g as usize] += 1;
        }
        // A's rows, for its movable nodes whose operator B has: when none has, nothing
        // below runs.
        let mut cells = 0u32;
        if !t.groups.keys.is_empty() {
            let deps_a = MemoryDeps::compute(func, a);
            for i in 0..a.len() {
                let Some(g) = a.operator(i).and_then(|op| t.groups.find(&op)) else {
                    continue;
                };
                if forbid_a.get(i) != Some(&true) && movable(func, a, &deps_a, i, dir) {
                    t.row_a[i] = (g, cells);
                    cells += t.sizes[g as usize];
                }
            }
        }
        let mut m = empty(t);
        if cells == 0 {
            return m;
        }
        let t = &mut m.t;
        let mut total = 0;
        for &size in &t.sizes {
            t.start.push(total);
            total += size;
        }
        t.start.push(total);
        t.members.resize(total as usize, 0);
        for (j, &(g, k)) in t.group_b.iter().enumerate() {
            if g != NONE {
                t.members[(t.start[g as usize] + k) as usize] = j as u32;
            }
        }
        t.cells.resize(cells as usize, Entry::impossible());
        // Children come before their parents: each row reads only rows filled before it.
        for i in 0..a.len() {
            let (g, row) = m.t.row_a[i];
            if g == NONE {
                continue;
            }
            let (lo, hi) = (m.t.start[g as usize], m.t.start[g as usize + 1]);
            for k in lo..hi {
                let j = m.t.members[k as usize] as usize;
                if let Some((score, swapped)) = m.score(i, j) {
                    let cell = &mut m.t.cells[(row + k - lo) as usize];
                    cell.score = score;
                    cell.swapped = swapped;
                    cell.possible = true;
                }
            }
        }
        m
    }

    /// The table's storage, for the next table.
    pub fn into_tables(self) -> Tables {
        self.t
    }

    /// The cell of `(i, j)`, when both may match and have one operator.
    fn cell(&self, i: usize, j: usize) -> Option<usize> {
        let (g, row) = self.t.row_a[i];
        let (h, k) = self.t.group_b[j];
        (g != NONE && g == h).then(|| (row + k) as usize)
    }

    /// `T(i, j)` and whether B's operands are swapped, when the match is possible.
    fn entry(&self, i: usize, j: usize) -> Option<&Entry> {
        let e = &self.t.cells[self.cell(i, j)?];
        e.possible.then_some(e)
    }

    /// `T(i, j)`, from the already filled entries of the operands' pairs.
    fn score(&self, i: usize, j: usize) -> Option<(i64, bool)> {
        let da = &self.func.dfg.insts[self.a.insts[i]];
        let db = &self.func.dfg.insts[self.b.insts[j]];
        let (xs, ys) = (da.args(), db.args());
        let straight = self.slots(i, j, xs, ys, false);
        let swapped = if commutative(da.opcode()) && xs.len() == 2 && ys.len() == 2 {
            self.slots(i, j, xs, ys, true)
        } else {
            None
        };
        let gain = benefit(da);
        match (straight, swapped) {
            (Some(s), Some(t)) if t > s => Some((gain + t, true)),
            (Some(s), _) => Some((gain + s, false)),
            (None, Some(t)) => Some((gain + t, true)),
            (None, None) => None,
        }
    }

    /// The operands' summed profit, B's two operands read swapped when `swapped`; a pair
    /// of different operands read in two slots is renamed once (one `select`, one join
    /// parameter), so it counts once.
    fn slots(&self, i: usize, j: usize, xs: &[Value], ys: &[Value], swapped: bool) -> Option<i64> {
        let mut sum = 0;
        let n = xs.len().min(ys.len());
        for s in 0..n {
            let t = if swapped { 1 - s } else { s };
            let (x, y) = (xs[s], ys[t]);
            let repeated = (0..s).any(|r| {
                let u = if swapped { 1 - r } else { r };
                (xs[r], ys[u]) == (x, y)
            });
            let v = self.slot(x, y, self.a.def(i, s), self.b.def(j, t))?;
            if !repeated {
                sum += v;
            }
        }
        Some(sum)
    }

    /// The best of matching the operands' definitions `dx` and `dy` and keeping the
    /// operands `x` and `y` as they are.
    fn slot(&self, x: Value, y: Value, dx: Def, dy: Def) -> Option<i64> {
        let keep = self.leaf_of(x, y, dx, dy);
        let matched = match (dx.node, dy.node) {
            (Some(i), Some(j)) => self.get(i, j),
            _ => None,
        };
        match (keep, matched) {
            (Some(k), Some(m)) => Some(k.max(m)),
            (k, m) => k.or(m),
        }
    }

    /// The profit of keeping operands `x` (arm A) and `y` (arm B), defined as `dx` and
    /// `dy` say, as they are.
    fn leaf_of(&self, x: Value, y: Value, dx: Def, dy: Def) -> Option<i64> {
        if self.dir == Direction::Hoist && (dx.in_arm() || dy.in_arm()) {
            return None;
        }
        if x == y {
            return Some(0);
        }
        let dfg = &self.func.dfg;
        let cost = match self.dir {
            Direction::Sink => join_param_cost(),
            Direction::Hoist | Direction::Split => copy_cost(),
        };
        (self.rename && dfg.value_type(x) == dfg.value_type(y)).then_some(-cost)
    }

    /// Does the matching choose to converge the operands' definitions (rather than keep
    /// the operands)?
    fn child(&self, x: Value, y: Value, dx: Def, dy: Def) -> Option<(usize, usize)> {
        let (i, j) = (dx.node?, dy.node?);
        let m = self.get(i, j)?;
        match self.leaf_of(x, y, dx, dy) {
            Some(k) if k > m => None,
            _ => Some((i, j)),
        }
    }

    /// `T(i, j)` when the pair may match.
    pub fn get(&self, i: usize, j: usize) -> Option<i64> {
        self.entry(i, j).map(|e| e.score)
    }

    /// The pairs of the best matching rooted at `(i, j)`, into `out` (cleared first).
    fn traceback(&self, i: usize, j: usize, out: &mut Vec<Pair>, stack: &mut Vec<(usize, usize)>) {
        out.clear();
        stack.clear();
        let trace = self.traces.get() + 1;
        self.traces.set(trace);
        stack.push((i, j));
        while let Some((i, j)) = stack.pop() {
            let cell = self.cell(i, j).expect("a traced pair has a cell");
            if self.t.cells[cell].mark.replace(trace) == trace {
                continue;
            }
            let swapped = self.t.cells[cell].swapped;
            out.push(Pair {
                a: i,
                b: j,
                swapped,
            });
            let xs = self.func.dfg.insts[self.a.insts[i]].args();
            let ys = self.func.dfg.insts[self.b.insts[j]].args();
            for (s, &x) in xs.iter().enumerate() {
                // B's operands read swapped for a swapped (two-operand) pair.
                let t = if swapped { 1 - s } else { s };
                let (dx, dy) = (self.a.def(i, s), self.b.def(j, t));
                if let Some(c) = self.child(x, ys[t], dx, dy) {
                    stack.push(c);
                }
            }
        }
    }

    /// Chooses roots as Algorithm 1 does: each node of A, last first, with its best
    /// partner in B, kept when its profit exceeds `threshold` and it agrees with the
    /// pairs kept so far.
    pub fn best(&self, threshold: i64) -> Matching {
        let roots: Vec<(usize, usize)> = (0..self.a.len())
            .rev()
            .filter_map(|i| {
                let (g, _) = self.t.row_a[i];
                if g == NONE {
                    return None;
                }
                let (lo, hi) = (self.t.start[g as usize], self.t.start[g as usize + 1]);
                // The best score; on ties the earliest partner in B.
                let mut best: Option<(usize, i64)> = None;
                for &j in &self.t.members[lo as usize..hi as usize] {
                    let j = j as usize;
                    if let Some(s) = self.get(i, j) {
                        if best.is_none_or(|(_, b)| s > b) {
                            best = Some((j, s));
                        }
                    }
                }
                best.map(|(j, _)| (i, j))
            })
            .collect();
        self.choose(roots, threshold)
    }

    /// Keeps the given roots, in order, whose profit exceeds `threshold` and whose pairs
    /// agree with those kept before; then drops, until none is left to drop, the roots
    /// whose profit no longer exceeds it once hidden loads are priced ([`Self::hidden`]).
    pub fn choose(
        &self,
        roots: impl IntoIterator<Item = (usize, usize)>,
        threshold: i64,
    ) -> Matching {
        let mut choice = self.t.choice.borrow_mut();
        let Choice {
            of_a,
            of_b,
            kept,
            trace,
            stack,
            loads_a,
            loads_b,
            scores,
        } = &mut *choice;
        of_a.clear();
        of_a.resize(self.a.len(), NONE);
        of_b.clear();
        of_b.resize(self.b.len(), NONE);
        kept.clear();
        // Room for every node of the smaller arm (each is paired once at most).
        let mut pairs: Vec<Pair> = Vec::with_capacity(self.a.len().min(self.b.len()));
        // A sink's roots are passed to the reconvergence point: merging them frees the
        // parameter that received them.
        let credit = match self.dir {
            Direction::Sink => join_param_cost(),
            Direction::Hoist | Direction::Split => 0,
        };
        for (i, j) in roots {
            if of_a[i] != NONE || of_b[j] != NONE {
                continue;
            }
            let Some(score) = self.get(i, j).map(|s| s + credit) else {
                continue;
            };
            if score <= threshold {
                continue;
            }
            self.traceback(i, j, trace, stack);
            let agrees = trace.iter().all(|p| {
                (of_a[p.a] == NONE || of_a[p.a] as usize == p.b)
                    && (of_b[p.b] == NONE || of_b[p.b] as usize == p.a)
            });
            if !agrees {
                continue;
            }
            let from = pairs.len();
            for &p in trace.iter() {
                // A node paired twice in one traceback keeps its first pair.
                let before = core::mem::replace(&mut of_a[p.a], p.b as u32);
                if before == NONE {
                    of_b[p.b] = p.a as u32;
                    pairs.push(p);
                }
            }
            kept.push((score, from, pairs.len()));
        }
        // Only a load can be hidden, and only behind a load that stays: without both the
        // roots keep their scores.
        let stays = |arm: &Arm, of: &[u32]| (0..arm.len()).any(|n| of[n] == NONE && arm.is_load(n));
        let matched_load = pairs.iter().any(|p| self.a.is_load(p.a));
        if !matched_load || !(stays(self.a, of_a) || stays(self.b, of_b)) {
            let profit = kept.iter().map(|r| r.0).sum();
            pairs.sort_by_key(|p| p.a);
            return Matching { pairs, profit };
        }
        // Each drop unmatches loads, which may hide others: repeat until stable.
        loads_a.fill(self.a);
        loads_b.fill(self.b);
        let (loads_a, loads_b) = (&*loads_a, &*loads_b);
        let realized = |of_a: &[u32], of_b: &[u32], &(score, from, to): &(i64, usize, usize)| {
            let lost: i64 = pairs[from..to]
                .iter()
                .filter(|p| {
                    self.hidden(self.a, loads_a, p.a, of_a)
                        || self.hidden(self.b, loads_b, p.b, of_b)
                })
                .map(|p| benefit(&self.func.dfg.insts[self.a.insts[p.a]]))
                .sum();
            score - lost
        };
        let profit;
        // Each root's realized profit, worked out once per round.
        loop {
            scores.clear();
            scores.extend(kept.iter().map(|r| realized(of_a, of_b, r)));
            let Some(k) = scores.iter().position(|&s| s <= threshold) else {
                profit = scores.iter().sum();
                break;
            };
            let (_, from, to) = kept.remove(k);
            for p in &pairs[from..to] {
                of_a[p.a] = NONE;
                of_b[p.b] = NONE;
            }
        }
        // The kept roots' pairs, moved down in place (the roots' ranges are in order and
        // disjoint, so each pair moves to a slot at or before its own).
        let mut w = 0;
        for &(_, from, to) in kept.iter() {
            for k in from..to {
                pairs[w] = pairs[k];
                w += 1;
            }
        }
        pairs.truncate(w);
        pairs.sort_by_key(|p| p.a);
        Matching { pairs, profit }
    }

    /// Is the load `node` of `arm` one whose latency the arm hides anyway: another load of
    /// the arm that stays (its partner in `of` is `NONE`), of at least its latency, and
    /// independent of it (neither reads the other's result, directly or not), so that the
    /// arm waits for that one whether or not this one leaves? Converging a hidden load
    /// saves none of its latency — only an issue slot the warp spent waiting — and puts
    /// its issue on the path before the branch (or its wait after the join): it is
    /// credited nothing.
    fn hidden(&self, arm: &Arm, loads: &LoadDeps, node: usize, of: &[u32]) -> bool {
        let func = self.func;
        let data = &func.dfg.insts[arm.insts[node]];
        if data.opcode() != Opcode::Load {
            return false;
        }
        let weight = benefit(data);
        loads.loads.iter().any(|&other| {
            let other = other as usize;
            other != node
                && of[other] == NONE
                && benefit(&func.dfg.insts[arm.insts[other]]) >= weight
                && !loads.reaches(node, other)
                && !loads.reaches(other, node)
        })
    }
}

/// Operators numbered in order of first appearance: found by a linear search while they
/// are few (an arm has a handful of operators, and hashing each cost more than comparing
/// it), through a hash map beyond.
#[derive(Default)]
struct KeyIndex {
    keys: Vec<Operator>,
    map: Option<HashMap<Operator, u32>>,
}

impl KeyIndex {
    /// Past this many keys, a hash map.
    const LINEAR: usize = 16;

    /// Forgets every key (keeping the storage).
    fn clear(&mut self) {
        self.keys.clear();
        if let Some(map) = &mut self.map {
            map.clear();
        }
    }

    /// The number of `key`, when it has one.
    fn find(&self, key: &Operator) -> Option<u32> {
        if self.keys.len() > Self::LINEAR {
            if let Some(map) = &self.map {
                return map.get(key).copied();
            }
        }
        self.keys.iter().position(|k| k == key).map(|g| g as u32)
    }

    /// The number of `key`, given the next one when it is new.
    fn insert(&mut self, key: Operator) -> u32 {
        if let Some(g) = self.find(&key) {
            return g;
        }
        let g = self.keys.len() as u32;
        self.keys.push(key);
        if self.keys.len() > Self::LINEAR {
            let map = self.map.get_or_insert_with(HashMap::default);
            if self.keys.len() == Self::LINEAR + 1 {
                map.extend(self.keys.iter().copied().zip(0..));
            } else {
                map.insert(key, g);
            }
        }
        g
    }
}

/// The data dependences between the loads of an arm: for each node, the loads whose
/// results it reads, directly or through other nodes of the arm, as a bit set over the
/// arm's loads (computed once per matching, in arm order, instead of a search per
/// question).
#[derive(Default)]
struct LoadDeps {
    /// The arm's loads, in order.
    loads: Vec<u32>,
    /// Each node's index among the loads (`NONE` for other nodes).
    index: Vec<u32>,
    /// Words per node.
    words: usize,
    /// `reads[n * words ..][..words]`: the loads node `n` depends on.
    reads: Vec<u64>,
}

impl LoadDeps {
    /// Makes these the load dependences of `arm` (reusing the storage); none are recorded
    /// below two loads (a load can only be hidden behind another).
    fn fill(&mut self, arm: &Arm) {
        self.loads.clear();
        self.index.clear();
        self.reads.clear();
        self.words = 0;
        self.loads
            .extend((0..arm.len() as u32).filter(|&n| arm.is_load(n as usize)));
        let count = self.loads.len();
        if count < 2 {
            return;
        }
        self.loads.clear();
        let n = arm.len();
        let words = count.div_ceil(64);
        self.words = words;
        self.index.resize(n, NONE);
        self.reads.resize(n * words, 0);
        for node in 0..n {
            for d in arm.operand_nodes(node) {
                for w in 0..words {
                    self.reads[node * words + w] |= self.reads[d * words + w];
                }
                let k = self.index[d];
                if k != NONE {
                    self.reads[node * words + k as usize / 64] |= 1 << (k % 64);
                }
            }
            if arm.is_load(node) {
                self.index[node] = self.loads.len() as u32;
                self.loads.push(node as u32);
            }
        }
    }

    /// Does node `to` read the result of the load `from`, directly or not?
    fn reaches(&self, from: usize, to: usize) -> bool {
        let Some(&k) = self.index.get(from) else {
            return false;
        };
        k != NONE && self.reads[to * self.words + k as usize / 64] & (1 << (k % 64)) != 0
    }
}
