//! A tournament tree over an SM's warp slots in age order, for the greedy-then-oldest
//! scheduler.
//!
//! Each leaf holds the cycle a warp can issue (`u64::MAX`: never, or no running warp);
//! each inner node the minimum of its leaves and how many leaves reach it. Finding the
//! oldest ready warp, and the earliest ready cycle of all warps but one, then costs a
//! walk of the tree's height rather than a visit of every warp: with 64 warps waiting
//! on memory, that is 6 steps instead of 64.
//!
//! Updates are lazy: a changed slot is only marked, and the marks are applied when the
//! tree is next read, so that a scheduler which mostly finds its warp without the tree
//! (many warps ready) pays almost nothing for it.

/// One node of the tree: the minimum of its leaves, how many hold it and the leftmost
/// that does. The three sit together (16 bytes, two siblings in one cache line), since
/// every step of an update or a query reads them together.
#[derive(Copy, Clone, PartialEq, Eq)]
struct Node {
    /// The earliest ready cycle under the node.
    min: u64,
    /// How many leaves under the node hold `min`.
    count: u32,
    /// The leftmost leaf under the node holding `min`.
    arg: u32,
}

/// The tree. Leaves are the slots ordered oldest warp first.
pub(crate) struct AgeTree {
    /// Leaf `i`'s slot.
    order: Vec<u32>,
    /// Slot `s`'s leaf.
    rank: Vec<u32>,
    /// Leaves, a power of two.
    p: usize,
    /// The nodes (root 1, children `2i` and `2i + 1`, leaves from `p`).
    nodes: Vec<Node>,
    /// Slots changed since the tree was last brought up to date.
    dirty: Vec<u32>,
    /// Per slot, whether it is in `dirty`.
    marked: Vec<bool>,
}

impl AgeTree {
    /// A tree of `n` slots, none ready.
    pub(crate) fn new(n: usize) -> AgeTree {
        let p = n.max(1).next_power_of_two();
        AgeTree {
            order: (0..n as u32).collect(),
            rank: (0..n as u32).collect(),
            p,
            nodes: (0..2 * p)
                .map(|i| Node {
                    min: u64::MAX,
                    count: 1,
                    arg: i.saturating_sub(p) as u32,
                })
                .collect(),
            dirty: Vec::with_capacity(n),
            marked: vec![false; n],
        }
    }

    /// Notes that slot `slot`'s ready cycle changed.
    #[inline]
    pub(crate) fn touch(&mut self, slot: usize) {
        if !self.marked[slot] {
            self.marked[slot] = true;
            self.dirty.push(slot as u32);
        }
    }

    /// Brings the tree up to date with `ready`, every slot's ready cycle.
    pub(crate) fn flush(&mut self, ready: &[u64]) {
        if self.dirty.len() * 8 > self.p {
            // Many changes: rebuilding is cheaper than walking up from each.
            for &s in &self.dirty {
                self.marked[s as usize] = false;
            }
            self.dirty.clear();
            self.rebuild(ready);
            return;
        }
        while let Some(s) = self.dirty.pop() {
            self.marked[s as usize] = false;
            let mut i = self.p + self.rank[s as usize] as usize;
            if self.nodes[i].min == ready[s as usize] {
                continue;
            }
            self.nodes[i].min = ready[s as usize];
            // Above a node that did not change, nothing changes either (the other
            // changed leaves walk up on their own).
            while i > 1 {
                i >>= 1;
                if !self.pull(i) {
                    break;
                }
            }
        }
    }

    /// Recomputes every node.
    fn rebuild(&mut self, ready: &[u64]) {
        for (i, &s) in self.order.iter().enumerate() {
            self.nodes[self.p + i].min = ready[s as usize];
        }
        for i in (1..self.p).rev() {
            self.pull(i);
        }
    }

    /// Recomputes inner node `i` from its children; whether it changed.
    #[inline]
    fn pull(&mut self, i: usize) -> bool {
        let (a, b) = (self.nodes[2 * i], self.nodes[2 * i + 1]);
        let node = if a.min < b.min {
            a
        } else if b.min < a.min {
            b
        } else {
            Node {
                count: a.count + b.count,
                ..a
            }
        };
        let changed = self.nodes[i] != node;
        self.nodes[i] = node;
        changed
    }

    /// Makes the slots of `range` the youngest, in range order; `ready` holds every
    /// slot's ready cycle.
    pub(crate) fn make_youngest(&mut self, range: std::ops::Range<u32>, ready: &[u64]) {
        self.order.retain(|s| !range.contains(s));
        self.order.extend(range);
        for (i, &s) in self.order.iter().enumerate() {
            self.rank[s as usize] = i as u32;
        }
        for &s in &self.dirty {
            self.marked[s as usize] = false;
        }
        self.dirty.clear();
        self.rebuild(ready);
    }

    /// The first leaf whose cycle is at most `m`, skipping leaf `skip`.
    fn first_at_most(&self, m: u64, skip: Option<usize>) -> Option<usize> {
        let skip = skip.map(|s| self.p + s);
        let mut i = 1;
        loop {
            if self.nodes[i].min <= m && Some(i) != skip {
                // Descend to the leftmost such leaf: at most one leaf (`skip`) is
                // excluded, and only a leaf, so an inner node holding `skip` with a
                // minimum at most `m` is retried to its right.
                while i < self.p {
                    i = if self.nodes[2 * i].min <= m {
                        2 * i
                    } else {
                        2 * i + 1
                    };
                }
                if Some(i) != skip {
                    return Some(i - self.p);
                }
            }
            // Go to the next subtree to the right.
            while i & 1 == 1 {
                i >>= 1;
            }
            if i == 0 {
                return None;
            }
            i += 1;
        }
    }

    /// The slot of the oldest warp ready at `now` (the tree must be up to date, as for
    /// every query).
    #[inline]
    pub(crate) fn oldest_ready(&self, now: u64) -> Option<usize> {
        if self.nodes[1].min > now {
            return None;
        }
        self.first_at_most(now, None)
            .map(|i| self.order[i] as usize)
    }

    /// The earliest cycle over every slot but `slot`, how many slots reach it, and one
    /// of them (the only one when the count is 1).
    #[inline]
    pub(crate) fn min_except(&self, slot: usize) -> (u64, u32, usize) {
        let (mut m, mut c, mut leaf) = (u64::MAX, 0, 0);
        let mut i = self.p + self.rank[slot] as usize;
        while i > 1 {
            let s = i ^ 1;
            let node = self.nodes[s];
            if node.min < m {
                (m, c, leaf) = (node.min, node.count, node.arg);
            } else if node.min == m {
                c += node.count;
            }
            i >>= 1;
        }
        (
            m,
            c,
            self.order.get(leaf as usize).map_or(0, |&s| s as usize),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a plain scan, over pseudo-random cycles (with many ties) and orders.
    #[test]
    fn agrees_with_a_scan() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = |k: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % k
        };
        for n in [1usize, 2, 3, 5, 8, 13, 64] {
            let mut t = AgeTree::new(n);
            let mut ready = vec![u64::MAX; n];
            for round in 0..300 {
                if round % 50 == 0 {
                    let a = rnd(n as u64) as u32;
                    let b = (a + 1 + rnd(4) as u32).min(n as u32);
                    t.make_youngest(a..b, &ready);
                }
                let s = rnd(n as u64) as usize;
                ready[s] = if rnd(5) == 0 { u64::MAX } else { rnd(12) };
                t.touch(s);
                if rnd(3) == 0 {
                    continue;
                }
                t.flush(&ready);
                let now = rnd(12);
                let by_age: Vec<usize> = t.order.iter().map(|&s| s as usize).collect();
                let want = by_age.iter().copied().find(|&s| ready[s] <= now);
                assert_eq!(t.oldest_ready(now), want);
                for x in 0..n {
                    let others = (0..n).filter(|&y| y != x).map(|y| ready[y]);
                    let m = others.clone().min().unwrap_or(u64::MAX);
                    let c = others.filter(|&r| r == m).count() as u32;
                    let (gm, gc, gs) = t.min_except(x);
                    assert_eq!(gm, m);
                    if n > 1 && m != u64::MAX {
                        assert_eq!(gc, c);
                        if c == 1 {
                            assert!(gs != x && ready[gs] == m);
                        }
                    }
                }
            }
        }
    }
}
