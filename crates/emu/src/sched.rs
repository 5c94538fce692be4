//! An SM's warps sorted for the greedy-then-oldest scheduler: the ones ready now as a
//! bit set in age order, the others by the cycle they become ready.
//!
//! Greedy-then-oldest asks, at each cycle its SM can issue, for the oldest warp ready
//! now; after the issue, when no warp is left ready, for the earliest cycle one becomes
//! ready (and which warp that is, for the stall reason). A warp's ready cycle changes
//! only when it issues or its block's state changes, and it then lies in the future. So
//! rather than visit the warps, the scheduler keeps them as an event-driven simulator
//! keeps its events:
//!
//! - *pending*: a timing wheel (Varghese and Lauck, "Hashed and hierarchical timing
//!   wheels", 1987): one bucket per cycle of a horizon a little longer than the longest
//!   latency, each a bit set of warps by age rank; a warp whose cycle lies beyond the
//!   horizon (only with latencies longer than the wheel allows) goes into a binary
//!   min-heap;
//! - *ready*: a bit set indexed by age rank (bit 0 the oldest warp), which the buckets
//!   whose cycle has come are emptied into (`drain`): a bucket and the ready set being
//!   indexed alike, that is an OR of words.
//!
//! The oldest ready warp is then the lowest set bit; whether any is ready, a test of the
//! set; the earliest pending cycle, the next occupied bucket (found through a bit set of
//! occupied buckets). Filing a warp costs a few bit operations, instead of a visit of
//! every warp, and SMs of up to 64 warps (the usual) take one-word paths throughout.
//!
//! Updates are eager: the machine files a warp anew as soon as its cycle changes
//! ([`ReadyQueue::set`]), so the queue is always current and a choice is a drain and a
//! bit scan, with no scan of the warps.
//!
//! A warp's cycle changes only while it is not pending: it issued (so it was ready), or
//! it was never ready (waiting at a barrier, done, or a free slot). So filing it anew
//! takes it out of the ready set, never out of a bucket or the heap, and every entry of
//! the wheel and the heap is live: draining a bucket is an OR of its words, the earliest
//! pending cycle is the first occupied bucket (or the heap's top), and the warps of a
//! cycle are its bucket's bits.

/// The scheduling queue of one SM's warp slots.
pub(crate) struct ReadyQueue {
    /// Rank `i`'s slot (rank 0 the oldest warp).
    order: Vec<u32>,
    /// Slot `s`'s rank.
    rank: Vec<u32>,
    /// Bit `i % 64` of word `i / 64`: the warp of rank `i` is ready (its cycle has been
    /// drained).
    ready: Vec<u64>,
    /// 64-bit words of a bucket or of the ready set (one bit per rank).
    words: usize,
    /// Buckets, a power of two: bucket `c % horizon` holds, in rank bits, the warps whose
    /// cycle is `c`, for every `c` from `next` to `next + horizon - 1`.
    horizon: u64,
    /// The buckets, `words` words each.
    wheel: Vec<u64>,
    /// Bit `b % 64` of word `b / 64`: bucket `b` holds an entry.
    occupied: Vec<u64>,
    /// The first cycle not yet drained.
    next: u64,
    /// The warps whose cycle lies beyond the horizon when it is set.
    far: Heap,
}

impl ReadyQueue {
    /// A queue of `n` slots, none ready or pending, whose wheel covers at least `span`
    /// cycles (the longest distance from the current cycle to a warp's ready cycle).
    pub(crate) fn new(n: usize, span: u64) -> ReadyQueue {
        let words = n.div_ceil(64).max(1);
        // Past 4096 cycles (latencies far from any GPU's) the heap takes the rest.
        let horizon = span.clamp(64, 4096).next_power_of_two();
        ReadyQueue {
            order: (0..n as u32).collect(),
            rank: (0..n as u32).collect(),
            ready: vec![0; words],
            words,
            horizon,
            wheel: vec![0; horizon as usize * words],
            occupied: vec![0; horizon as usize / 64],
            next: 0,
            far: Heap::default(),
        }
    }

    /// Files slot `slot` anew under `cycle` (`u64::MAX`: never ready), out of the ready
    /// set: ready at once if the queue has drained `cycle` already. The slot must not be
    /// pending (see the module's comment).
    #[inline]
    pub(crate) fn set(&mut self, slot: usize, cycle: u64) {
        let r = self.rank[slot] as usize;
        if self.words == 1 {
            // Up to 64 warps (the usual SM): one word per bucket, and the ready set one
            // word too.
            let bit = 1u64 << (r % 64);
            let ready = &mut self.ready[0];
            if cycle < self.next {
                *ready |= bit;
                return;
            }
            *ready &= !bit;
            if cycle - self.next < self.horizon {
                let b = (cycle & (self.horizon - 1)) as usize;
                self.wheel[b] |= bit;
                self.occupied[b / 64] |= 1 << (b % 64);
            } else if cycle != u64::MAX {
                self.far.push((cycle, slot as u32));
            }
            return;
        }
        self.ready[r / 64] &= !(1u64 << (r % 64));
        if cycle != u64::MAX {
            self.push(slot, cycle);
        }
    }

    /// Files slot `slot`, not filed, under `cycle`.
    #[inline]
    fn push(&mut self, slot: usize, cycle: u64) {
        let r = self.rank[slot] as usize;
        let (word, bit) = (r / 64, 1u64 << (r % 64));
        if cycle < self.next {
            // Its cycle has already come.
            self.ready[word] |= bit;
        } else if cycle - self.next < self.horizon {
            let b = (cycle & (self.horizon - 1)) as usize;
            self.wheel[b * self.words + word] |= bit;
            self.occupied[b / 64] |= 1 << (b % 64);
        } else {
            self.far.push((cycle, slot as u32));
        }
    }

    /// The cycle of bucket `b`, between `next` and `next + horizon - 1`.
    #[inline]
    fn cycle_of(&self, b: usize) -> u64 {
        let m = self.horizon - 1;
        self.next + ((b as u64).wrapping_sub(self.next) & m)
    }

    /// Moves the warps whose cycle is at most `now` into the ready set.
    #[inline]
    pub(crate) fn drain(&mut self, now: u64) {
        if now < self.next {
            return;
        }
        let m = self.horizon - 1;
        if now == self.next && self.words == 1 {
            // The usual step, one cycle on: at most one bucket.
            let b = (now & m) as usize;
            let occupied = &mut self.occupied[b / 64];
            let bit = 1u64 << (b % 64);
            if *occupied & bit != 0 {
                *occupied &= !bit;
                self.ready[0] |= std::mem::take(&mut self.wheel[b]);
            }
        } else {
            // The buckets of cycles `next ..= now`, at most all of them, visited through
            // the occupied words.
            let count = (now - self.next).saturating_add(1).min(self.horizon);
            let first = (self.next & m) as usize;
            let mut done = 0u64;
            while done < count {
                let b = (first + done as usize) & m as usize;
                let room = (64 - b % 64) as u64;
                let take = room.min(count - done);
                let span = if take == 64 {
                    u64::MAX
                } else {
                    ((1u64 << take) - 1) << (b % 64)
                };
                let occupied = &mut self.occupied[b / 64];
                let mut bits = *occupied & span;
                *occupied &= !span;
                while bits != 0 {
                    let bb = (b / 64) * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    if self.words == 1 {
                        self.ready[0] |= std::mem::take(&mut self.wheel[bb]);
                    } else {
                        let row = &mut self.wheel[bb * self.words..(bb + 1) * self.words];
                        for (r, w) in self.ready.iter_mut().zip(row) {
                            *r |= std::mem::take(w);
                        }
                    }
                }
                done += take;
            }
        }
        self.next = now + 1;
        if self.far.entries.is_empty() {
            return;
        }
        while let Some((c, s)) = self.far.first() {
            if c > now {
                break;
            }
            self.far.pop();
            let r = self.rank[s as usize] as usize;
            self.ready[r / 64] |= 1 << (r % 64);
        }
    }

    /// The slot of the oldest ready warp (after [`ReadyQueue::drain`]).
    #[inline]
    pub(crate) fn oldest(&self) -> Option<usize> {
        let r = if self.words == 1 {
            let word = self.ready[0];
            if word == 0 {
                return None;
            }
            word.trailing_zeros() as usize
        } else {
            let (i, &word) = self.ready.iter().enumerate().find(|(_, &w)| w != 0)?;
            i * 64 + word.trailing_zeros() as usize
        };
        Some(self.order[r] as usize)
    }

    /// Whether some warp is ready.
    #[inline]
    pub(crate) fn any_ready(&self) -> bool {
        if self.words == 1 {
            return self.ready[0] != 0;
        }
        self.ready.iter().any(|&w| w != 0)
    }

    /// The earliest cycle of a pending warp; `None` if no warp is pending.
    #[inline]
    pub(crate) fn earliest(&self) -> Option<u64> {
        let m = self.horizon as usize - 1;
        let nwords = self.occupied.len();
        let first = self.next as usize & m;
        let mut near = None;
        // The occupied words from `first`'s on, wrapping around once (the first word is
        // visited twice, below and then above `first`). Their number is a power of two.
        let below = u64::MAX << (first % 64);
        for i in 0..=nwords {
            let w = (first / 64 + i) & (nwords - 1);
            let mut bits = self.occupied[w];
            if i == 0 {
                bits &= below;
            } else if i == nwords {
                bits &= !below;
            }
            if bits != 0 {
                near = Some(self.cycle_of(w * 64 + bits.trailing_zeros() as usize));
                break;
            }
        }
        let far = self.far.first().map(|(c, _)| c);
        match (near, far) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Among the pending warps whose cycle is `cycle` (the earliest), the first slot in
    /// slot order starting at `start` and wrapping around, leaving out slot `last`
    /// unless it is the only one.
    #[inline]
    pub(crate) fn first_at(&mut self, cycle: u64, start: usize, last: usize) -> usize {
        let n = self.rank.len();
        let pos = |s: usize| if s >= start { s - start } else { s + n - start };
        let (mut best, mut best_pos) = (last, usize::MAX);
        if cycle >= self.next && cycle - self.next < self.horizon {
            let b = (cycle & (self.horizon - 1)) as usize;
            for k in 0..self.words {
                let mut bits = self.wheel[b * self.words + k];
                while bits != 0 {
                    let s = self.order[k * 64 + bits.trailing_zeros() as usize] as usize;
                    bits &= bits - 1;
                    if s != last && pos(s) < best_pos {
                        (best, best_pos) = (s, pos(s));
                    }
                }
            }
        }
        if !self.far.entries.is_empty() {
            self.far.each_at(cycle, |s| {
                if s != last && pos(s) < best_pos {
                    (best, best_pos) = (s, pos(s));
                }
            });
        }
        best
    }

    /// Makes the slots of `range` the youngest, in range order; `cycles` holds every
    /// slot's ready cycle, from which the queue is rebuilt.
    pub(crate) fn make_youngest(&mut self, range: std::ops::Range<u32>, cycles: &[u64]) {
        self.order.retain(|s| !range.contains(s));
        self.order.extend(range);
        for (i, &s) in self.order.iter().enumerate() {
            self.rank[s as usize] = i as u32;
        }
        self.ready.fill(0);
        self.wheel.fill(0);
        self.occupied.fill(0);
        self.far.clear();
        for (s, &c) in cycles.iter().enumerate() {
            if c != u64::MAX {
                self.push(s, c);
            }
        }
    }
}

/// A binary min-heap of `(cycle, slot)` (children of `i` at `2i + 1` and `2i + 2`), for
/// the cycles beyond the wheel's horizon.
#[derive(Default)]
struct Heap {
    entries: Vec<(u64, u32)>,
    /// The positions still to visit in [`Heap::each_at`] (kept to reuse its memory).
    walk: Vec<u32>,
}

impl Heap {
    fn clear(&mut self) {
        self.entries.clear();
    }

    fn first(&self) -> Option<(u64, u32)> {
        self.entries.first().copied()
    }

    /// Calls `f` with the slot of every entry of cycle `cycle`, the heap's minimum.
    fn each_at(&mut self, cycle: u64, mut f: impl FnMut(usize)) {
        // The entries holding the minimum form a subtree at the root: a depth-first
        // walk of it visits no other entry but its children.
        self.walk.clear();
        if !self.entries.is_empty() {
            self.walk.push(0);
        }
        while let Some(i) = self.walk.pop() {
            let (c, s) = self.entries[i as usize];
            if c != cycle {
                continue;
            }
            f(s as usize);
            for child in [2 * i + 1, 2 * i + 2] {
                if (child as usize) < self.entries.len() {
                    self.walk.push(child);
                }
            }
        }
    }

    fn push(&mut self, e: (u64, u32)) {
        let mut i = self.entries.len();
        self.entries.push(e);
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.entries[parent] <= e {
                break;
            }
            self.entries[i] = self.entries[parent];
            i = parent;
        }
        self.entries[i] = e;
    }

    fn pop(&mut self) {
        let Some(last) = self.entries.pop() else {
            return;
        };
        let n = self.entries.len();
        if n == 0 {
            return;
        }
        let mut i = 0;
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let c = if l + 1 < n && self.entries[l + 1] < self.entries[l] {
                l + 1
            } else {
                l
            };
            if last <= self.entries[c] {
                break;
            }
            self.entries[i] = self.entries[c];
            i = c;
        }
        self.entries[i] = last;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against plain scans of the cycles, over pseudo-random cycles (with many ties),
    /// orders and times.
    #[test]
    fn agrees_with_a_scan() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = |k: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % k
        };
        // Spans below and above the wheel's largest horizon, so that the heap is used.
        for (n, span, step) in [
            (1usize, 8, 6),
            (2, 8, 6),
            (3, 70, 100),
            (5, 8, 6),
            (8, 64, 200),
            (13, 8, 6),
            (64, 500, 700),
            (100, 8, 20),
            (7, 10_000, 9_000),
        ] {
            let mut q = ReadyQueue::new(n, span);
            let mut cycles = vec![u64::MAX; n];
            let mut now = 0u64;
            // The last cycle drained: warps due by then are ready, not pending.
            let mut drained = None;
            for round in 0..400 {
                if round % 50 == 0 {
                    let a = rnd(n as u64) as u32;
                    let b = (a + 1 + rnd(4) as u32).min(n as u32);
                    q.make_youngest(a..b, &cycles);
                }
                // A warp's cycle is set only when it is ready or never ready (an issue,
                // a barrier, a retirement), and always to a later cycle or never.
                let s = rnd(n as u64) as usize;
                if Some(cycles[s]) <= drained || cycles[s] == u64::MAX {
                    cycles[s] = if rnd(5) == 0 {
                        u64::MAX
                    } else {
                        now + 1 + rnd(step)
                    };
                    q.set(s, cycles[s]);
                }
                let jump = if rnd(4) == 0 { step } else { 3 };
                now += rnd(jump);
                if rnd(3) == 0 {
                    // Drained only now and then, as an SM that stalls is visited.
                    continue;
                }
                q.drain(now);
                drained = Some(now);
                let by_age: Vec<usize> = q.order.iter().map(|&s| s as usize).collect();
                let want = by_age.iter().copied().find(|&s| cycles[s] <= now);
                assert_eq!(q.oldest(), want);
                assert_eq!(q.any_ready(), want.is_some());
                let later: Vec<usize> = (0..n)
                    .filter(|&y| cycles[y] > now && cycles[y] != u64::MAX)
                    .collect();
                let m = later.iter().map(|&y| cycles[y]).min();
                assert_eq!(q.earliest(), m);
                if let Some(m) = m {
                    let start = rnd(n as u64) as usize;
                    let last = rnd(n as u64) as usize;
                    let at_m = |y: usize| cycles[y] == m && y != last;
                    let first = (start..n).chain(0..start).find(|&y| at_m(y));
                    let want = first.unwrap_or(last);
                    if first.is_some() || cycles[last] == m {
                        assert_eq!(q.first_at(m, start, last), want);
                    }
                }
            }
        }
    }
}
