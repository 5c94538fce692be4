//! The opt-in per-lane block counter behind [`Stats::redundant_block_executions`].
//!
//! A redundant block execution is one a warp performs beyond what its busiest lane
//! needed: for each warp and block name, the warp's executions of the block minus the
//! largest number of times any one of its lanes executed it. An ideal SIMT machine runs a
//! block once per lane-iteration, so the difference counts the re-executions a divergent,
//! unstructured CFG forces (the paper's Figure 1 at warp width 4: B3 once, B5 twice).
//!
//! The counts are taken here, on the machine that ran the code, rather than derived from
//! the reference interpreter's per-thread counts: both the warp's and the lanes' counts
//! then use the same block names, so a block the code generator split (two machine
//! blocks of one IR block, counted twice per pass) or removed (counted never) cancels
//! out, and the result is never negative. A lane executes a block when it is in the
//! warp's active mask as the warp enters the block; linearized code skips a block its
//! guard rules out for the lanes by a branch, so the mask is exactly the lanes that run
//! it.
//!
//! Counting costs a loop over the active lanes at every block entry, so it is off unless
//! asked for ([`RunOptions::redundancy`](crate::machine::RunOptions)); a run without it
//! pays nothing more per block entry than the test, already there for the optional trace,
//! of whether anything records block entries (`Warp::observed`).
//!
//! [`Stats::redundant_block_executions`]: crate::stats::Stats::redundant_block_executions

use crate::program::Program;
use std::collections::{BTreeMap, HashMap};

/// Per-lane block counts of the warps in flight, and the redundant executions of the
/// warps that finished.
pub(crate) struct LaneCounts {
    width: usize,
    /// Dense name index of each machine block.
    name_of: Vec<u32>,
    /// The distinct block names, by index.
    names: Vec<String>,
    /// Per warp in flight (by its unique placement age): for each name, the warp's
    /// executions followed by each lane's, `width + 1` counters per name.
    live: HashMap<u64, Vec<u64>>,
    /// Cleared counter vectors of finished warps, reused by the next ones.
    free: Vec<Vec<u64>>,
    /// Redundant executions per name, over the finished warps.
    redundant: Vec<u64>,
}

impl LaneCounts {
    /// Counters for `program` at `width` lanes per warp.
    pub(crate) fn new(program: &Program, width: usize) -> Self {
        let mut index: BTreeMap<&str, u32> = BTreeMap::new();
        let mut names = Vec::new();
        let name_of = program
            .blocks
            .iter()
            .map(|b| {
                *index.entry(&b.name).or_insert_with(|| {
                    names.push(b.name.clone());
                    names.len() as u32 - 1
                })
            })
            .collect();
        let redundant = vec![0; names.len()];
        LaneCounts {
            width,
            name_of,
            names,
            live: HashMap::new(),
            free: Vec::new(),
            redundant,
        }
    }

    /// The warp of placement age `warp` starts machine block `block` with lanes `mask`.
    pub(crate) fn enter(&mut self, warp: u64, block: usize, mask: u64) {
        let stride = self.width + 1;
        let len = self.names.len() * stride;
        let free = &mut self.free;
        let counts = self
            .live
            .entry(warp)
            .or_insert_with(|| free.pop().unwrap_or_else(|| vec![0; len]));
        let base = self.name_of[block] as usize * stride;
        counts[base] += 1;
        let mut m = mask;
        while m != 0 {
            let lane = m.trailing_zeros() as usize;
            counts[base + 1 + lane] += 1;
            m &= m - 1;
        }
    }

    /// The warp of placement age `warp` has ended: its redundant executions are final.
    pub(crate) fn warp_done(&mut self, warp: u64) {
        let Some(mut counts) = self.live.remove(&warp) else {
            return;
        };
        for (n, chunk) in counts.chunks_exact(self.width + 1).enumerate() {
            let busiest = chunk[1..].iter().copied().max().unwrap_or(0);
            // A lane's count grows only with the warp's, so this never underflows.
            self.redundant[n] += chunk[0].saturating_sub(busiest);
        }
        counts.fill(0);
        self.free.push(counts);
    }

    /// Adds the redundant executions counted by `other` (of the same program), for runs
    /// that count blocks on several threads.
    pub(crate) fn merge(&mut self, other: LaneCounts) {
        for (x, y) in self.redundant.iter_mut().zip(other.redundant) {
            *x += y;
        }
    }

    /// The redundant executions per block name, every name of the program present.
    pub(crate) fn finish(self) -> BTreeMap<String, u64> {
        self.names.into_iter().zip(self.redundant).collect()
    }
}

/// Every lane's path through the machine blocks, per warp: what a run fills in when
/// [`RunOptions::lane_paths`](crate::RunOptions) asks for it, to replay the lanes on a
/// model of the CFG (the IPDOM stack of `warplift_ir::cfg::ipdom_stack`, say). A lane
/// enters a block when it is in the warp's active mask as the warp enters the block, as
/// for the redundant block executions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LanePaths {
    /// Per warp that ended, in the order they ended: per lane, the indices into
    /// [`Program::blocks`] of the blocks it entered, in order (a lane the warp does not
    /// have, in a thread block's last warp, runs none).
    pub warps: Vec<Vec<Vec<u32>>>,
}

/// The paths of the warps in flight, by placement age, and of those that ended.
pub(crate) struct PathLog {
    width: usize,
    live: HashMap<u64, Vec<Vec<u32>>>,
    done: Vec<Vec<Vec<u32>>>,
}

impl PathLog {
    /// An empty log for warps of `width` lanes.
    pub(crate) fn new(width: usize) -> Self {
        PathLog {
            width,
            live: HashMap::new(),
            done: Vec::new(),
        }
    }

    /// The warp of placement age `warp` starts machine block `block` with lanes `mask`.
    pub(crate) fn enter(&mut self, warp: u64, block: usize, mask: u64) {
        let width = self.width;
        let paths = self
            .live
            .entry(warp)
            .or_insert_with(|| vec![Vec::new(); width]);
        let mut m = mask;
        while m != 0 {
            paths[m.trailing_zeros() as usize].push(block as u32);
            m &= m - 1;
        }
    }

    /// The warp of placement age `warp` has ended.
    pub(crate) fn warp_done(&mut self, warp: u64) {
        if let Some(paths) = self.live.remove(&warp) {
            self.done.push(paths);
        }
    }

    /// The paths of the warps that ended.
    pub(crate) fn finish(self) -> LanePaths {
        LanePaths { warps: self.done }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::BlockInfo;

    fn program(names: &[&str]) -> Program {
        let blocks = names
            .iter()
            .map(|n| BlockInfo {
                name: (*n).into(),
                start: 0,
                end: 0,
            })
            .collect();
        let no_regs = [0; 3];
        Program::new(
            "k".into(),
            Vec::new(),
            no_regs,
            0,
            0,
            0,
            0,
            Vec::new(),
            blocks,
            Vec::new(),
        )
    }

    #[test]
    fn figure_1_at_width_4_has_three_redundant_executions() {
        // Blocks 0..6 are B0..B6 of the paper's Figure 1 with B0 the kernel's entry;
        // lanes T1..T4 are bits 0..3. The warp's path as the IPDOM stack runs it.
        let names = ["b0", "b1", "b2", "b3", "b4", "b5", "b6"];
        let mut c = LaneCounts::new(&program(&names), 4);
        for (block, mask) in [
            (0, 0b1111),
            (1, 0b1111),
            (2, 0b1100), // T3, T4 take c1 false
            (3, 0b0100), // T3 reaches B3 from B2
            (5, 0b0100), // T3: c3 false
            (5, 0b1000), // T4 from B2
            (3, 0b0011), // T1, T2 from B1
            (4, 0b0001),
            (5, 0b0010),
            (6, 0b1111),
        ] {
            c.enter(7, block, mask);
        }
        c.warp_done(7);
        let r = c.finish();
        assert_eq!(r["b3"], 1);
        assert_eq!(r["b5"], 2);
        assert_eq!(r.values().sum::<u64>(), 3);
    }

    #[test]
    fn paths_follow_each_lane_and_end_with_their_warp() {
        let mut log = PathLog::new(3);
        log.enter(5, 0, 0b111);
        log.enter(5, 2, 0b010);
        log.enter(5, 1, 0b101);
        log.enter(6, 0, 0b001);
        log.enter(5, 3, 0b111);
        log.warp_done(5);
        let paths = log.finish();
        // Warp 6 never ended: it is not reported.
        assert_eq!(
            paths.warps,
            vec![vec![vec![0, 1, 3], vec![0, 2, 3], vec![0, 1, 3]]]
        );
    }

    #[test]
    fn loops_count_per_iteration_and_shared_names_add_up() {
        // Two machine blocks implement `body`; each lane runs the loop a different
        // number of times, the warp as often as the longest.
        let mut c = LaneCounts::new(&program(&["entry", "body", "body", "exit"]), 2);
        c.enter(1, 0, 0b11);
        for mask in [0b11, 0b11, 0b10] {
            c.enter(1, 1, mask);
            c.enter(1, 2, mask);
        }
        c.enter(1, 3, 0b11);
        c.warp_done(1);
        // A second warp whose lanes split around `body`: two passes where one sufficed.
        c.enter(2, 0, 0b11);
        c.enter(2, 1, 0b01);
        c.enter(2, 1, 0b10);
        c.warp_done(2);
        // A warp that never ends is not counted; an unknown warp's end is ignored.
        c.enter(3, 1, 0b01);
        c.warp_done(99);
        let r = c.finish();
        assert_eq!(r["entry"], 0);
        assert_eq!(r["body"], 1);
        assert_eq!(r["exit"], 0);
        assert_eq!(r.len(), 3);
    }
}
