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
//! Roots are chosen as Algorithm 1 does, walking arm A backwards and taking for each node
//! its best partner in B; a root is kept when its profit reaches the threshold and its
//! matched pairs agree with the pairs kept before (a node is matched to one partner at
//! most).

use super::cost::{benefit, copy_cost, join_param_cost};
use super::dag::{operator_key, Arm};
use super::pdg::{movable, Direction, MemoryDeps};
use rustc_hash::FxHashMap as HashMap;
use warplift_ir::{Function, InstructionData, Opcode, Value};

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

/// The DP table of two arms, for one direction.
pub struct Matcher<'f> {
    func: &'f Function,
    a: &'f Arm,
    b: &'f Arm,
    dir: Direction,
    rename: bool,
    /// `T(i, j)` and whether B's operands are swapped, for pairs with the same operator
    /// whose match is possible.
    table: HashMap<(usize, usize), (i64, bool)>,
    /// B's nodes by operator, in arm order.
    by_key: HashMap<(InstructionData, Option<warplift_ir::Type>), Vec<usize>>,
    key_a: Vec<(InstructionData, Option<warplift_ir::Type>)>,
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
    /// stay where they are whatever their kind.
    pub fn new(
        func: &'f Function,
        a: &'f Arm,
        b: &'f Arm,
        dir: Direction,
        rename: bool,
        forbid_a: &[bool],
        forbid_b: &[bool],
    ) -> Matcher<'f> {
        let deps_a = MemoryDeps::compute(func, a);
        let deps_b = MemoryDeps::compute(func, b);
        let mut by_key: HashMap<_, Vec<usize>> = HashMap::default();
        for (j, &inst) in b.insts.iter().enumerate() {
            if !forbid_b[j] && movable(func, b, &deps_b, j, dir) {
                by_key.entry(operator_key(func, inst)).or_default().push(j);
            }
        }
        let key_a = a.insts.iter().map(|&i| operator_key(func, i)).collect();
        let mut m = Matcher {
            func,
            a,
            b,
            dir,
            rename,
            table: HashMap::default(),
            by_key,
            key_a,
        };
        for (i, &forbidden) in forbid_a.iter().enumerate() {
            if forbidden || !movable(func, a, &deps_a, i, dir) {
                continue;
            }
            let Some(candidates) = m.by_key.get(&m.key_a[i]) else {
                continue;
            };
            let mut scores = Vec::new();
            for &j in candidates {
                if let Some(score) = m.score(i, j) {
                    scores.push((j, score));
                }
            }
            for (j, score) in scores {
                m.table.insert((i, j), score);
            }
        }
        m
    }

    /// `T(i, j)`, from the already filled entries of the operands' pairs.
    fn score(&self, i: usize, j: usize) -> Option<(i64, bool)> {
        let da = &self.func.dfg.insts[self.a.insts[i]];
        let db = &self.func.dfg.insts[self.b.insts[j]];
        let straight = self.slots(da.args(), db.args());
        let swapped = if commutative(da.opcode()) && da.args().len() == 2 {
            let args = db.args();
            self.slots(da.args(), &[args[1], args[0]])
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

    /// The operands' summed profit; a pair of different operands read in two slots is
    /// renamed once (one `select`, one join parameter), so it counts once.
    fn slots(&self, xs: &[Value], ys: &[Value]) -> Option<i64> {
        let mut sum = 0;
        for (s, (&x, &y)) in xs.iter().zip(ys).enumerate() {
            let repeated = xs[..s]
                .iter()
                .zip(&ys[..s])
                .any(|(&px, &py)| (px, py) == (x, y));
            let v = self.slot(x, y)?;
            if !repeated {
                sum += v;
            }
        }
        Some(sum)
    }

    /// The best of matching the operands' definitions and keeping them as they are.
    fn slot(&self, x: Value, y: Value) -> Option<i64> {
        let keep = self.leaf(x, y);
        let matched = match (self.a.node_of(self.func, x), self.b.node_of(self.func, y)) {
            (Some(i), Some(j)) => self.table.get(&(i, j)).map(|s| s.0),
            _ => None,
        };
        match (keep, matched) {
            (Some(k), Some(m)) => Some(k.max(m)),
            (k, m) => k.or(m),
        }
    }

    /// The profit of keeping operands `x` (arm A) and `y` (arm B) as they are.
    fn leaf(&self, x: Value, y: Value) -> Option<i64> {
        if self.dir == Direction::Hoist
            && (self.a.defines(self.func, x) || self.b.defines(self.func, y))
        {
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
    fn child(&self, x: Value, y: Value) -> Option<(usize, usize)> {
        let (i, j) = (self.a.node_of(self.func, x)?, self.b.node_of(self.func, y)?);
        let m = self.table.get(&(i, j))?.0;
        match self.leaf(x, y) {
            Some(k) if k > m => None,
            _ => Some((i, j)),
        }
    }

    /// `T(i, j)` when the pair may match.
    pub fn get(&self, i: usize, j: usize) -> Option<i64> {
        self.table.get(&(i, j)).map(|s| s.0)
    }

    /// The pairs of the best matching rooted at `(i, j)`.
    fn traceback(&self, i: usize, j: usize) -> Vec<Pair> {
        let mut out = Vec::new();
        let mut stack = vec![(i, j)];
        let mut seen = rustc_hash::FxHashSet::default();
        while let Some((i, j)) = stack.pop() {
            if !seen.insert((i, j)) {
                continue;
            }
            let swapped = self.table[&(i, j)].1;
            out.push(Pair {
                a: i,
                b: j,
                swapped,
            });
            let xs = self.func.dfg.insts[self.a.insts[i]].args();
            let mut ys = self.func.dfg.insts[self.b.insts[j]].args().to_vec();
            if swapped {
                ys.swap(0, 1);
            }
            for (&x, &y) in xs.iter().zip(&ys) {
                if let Some(c) = self.child(x, y) {
                    stack.push(c);
                }
            }
        }
        out
    }

    /// Chooses roots as Algorithm 1 does: each node of A, last first, with its best
    /// partner in B, kept when its profit exceeds `threshold` and it agrees with the
    /// pairs kept so far.
    pub fn best(&self, threshold: i64) -> Matching {
        let roots: Vec<(usize, usize)> = (0..self.a.len())
            .rev()
            .filter_map(|i| {
                let candidates = self.by_key.get(&self.key_a[i])?;
                candidates
                    .iter()
                    .rev()
                    .filter_map(|&j| Some((j, self.get(i, j)?)))
                    .max_by_key(|&(_, s)| s)
                    .map(|(j, _)| (i, j))
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
        let mut of_a: HashMap<usize, usize> = HashMap::default();
        let mut of_b: HashMap<usize, usize> = HashMap::default();
        let mut kept: Vec<(i64, Vec<Pair>)> = Vec::new();
        // A sink's roots are passed to the reconvergence point: merging them frees the
        // parameter that received them.
        let credit = match self.dir {
            Direction::Sink => join_param_cost(),
            Direction::Hoist | Direction::Split => 0,
        };
        for (i, j) in roots {
            if of_a.contains_key(&i) || of_b.contains_key(&j) {
                continue;
            }
            let Some(score) = self.get(i, j).map(|s| s + credit) else {
                continue;
            };
            if score <= threshold {
                continue;
            }
            let pairs = self.traceback(i, j);
            let agrees = pairs.iter().all(|p| {
                of_a.get(&p.a).is_none_or(|&b| b == p.b) && of_b.get(&p.b).is_none_or(|&a| a == p.a)
            });
            if !agrees {
                continue;
            }
            let mut own = Vec::new();
            for p in pairs {
                if of_a.insert(p.a, p.b).is_none() {
                    of_b.insert(p.b, p.a);
                    own.push(p);
                }
            }
            kept.push((score, own));
        }
        // Each drop unmatches loads, which may hide others: repeat until stable.
        let profit;
        loop {
            let matched_a: Vec<bool> = (0..self.a.len()).map(|n| of_a.contains_key(&n)).collect();
            let matched_b: Vec<bool> = (0..self.b.len()).map(|n| of_b.contains_key(&n)).collect();
            let realized = |(score, pairs): &(i64, Vec<Pair>)| -> i64 {
                let lost: i64 = pairs
                    .iter()
                    .filter(|p| {
                        self.hidden(self.a, p.a, &matched_a) || self.hidden(self.b, p.b, &matched_b)
                    })
                    .map(|p| benefit(&self.func.dfg.insts[self.a.insts[p.a]]))
                    .sum();
                score - lost
            };
            let Some(k) = kept.iter().position(|r| realized(r) <= threshold) else {
                profit = kept.iter().map(realized).sum();
                break;
            };
            for p in kept.remove(k).1 {
                of_a.remove(&p.a);
                of_b.remove(&p.b);
            }
        }
        let mut pairs: Vec<Pair> = kept.into_iter().flat_map(|r| r.1).collect();
        pairs.sort_by_key(|p| p.a);
        Matching { pairs, profit }
    }

    /// Is the load `node` of `arm` one whose latency the arm hides anyway: another load of
    /// the arm that stays (`matched` is false for it), of at least its latency, and
    /// independent of it (neither reads the other's result, directly or not), so that the
    /// arm waits for that one whether or not this one leaves? Converging a hidden load
    /// saves none of its latency — only an issue slot the warp spent waiting — and puts
    /// its issue on the path before the branch (or its wait after the join): it is
    /// credited nothing.
    pub fn hidden(&self, arm: &Arm, node: usize, matched: &[bool]) -> bool {
        let func = self.func;
        let data = &func.dfg.insts[arm.insts[node]];
        if data.opcode() != Opcode::Load {
            return false;
        }
        let weight = benefit(data);
        let reaches = |from: usize, to: usize| -> bool {
            // Does `to` read `from`'s result, directly or through the arm's nodes?
            let mut stack = vec![to];
            let mut seen = rustc_hash::FxHashSet::default();
            while let Some(n) = stack.pop() {
                for &v in func.dfg.insts[arm.insts[n]].args() {
                    if let Some(d) = arm.node_of(func, v) {
                        if d == from {
                            return true;
                        }
                        if d > from && seen.insert(d) {
                            stack.push(d);
                        }
                    }
                }
            }
            false
        };
        (0..arm.len()).any(|other| {
            let od = &func.dfg.insts[arm.insts[other]];
            other != node
                && !matched[other]
                && od.opcode() == Opcode::Load
                && benefit(od) >= weight
                && !reaches(node, other)
                && !reaches(other, node)
        })
    }
}
