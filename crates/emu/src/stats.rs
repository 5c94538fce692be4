//! The statistics of a run: every quantity the emulator measures, each defined once, here,
//! with its formula.
//!
//! Counts are over *warps* unless their name says threads: an instruction issued by a
//! warp with 20 active lanes is one warp-instruction and 20 thread-instructions. The
//! [`Stats`] serialise to JSON with the field names as keys (the stable, machine-readable
//! form) and print for a person through `Display`.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

/// Why an SM issued nothing in a cycle. Each such cycle is attributed to one reason: that
/// of the warp nearest to issuing (the one that becomes ready first).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StallReason {
    /// Waiting for the result of an ALU, multiply or SFU instruction (stall on use).
    Dependency,
    /// Waiting for the result of a load or atomic (stall on use).
    Memory,
    /// Refilling after a control transfer (jump, branch, reconvergence).
    Branch,
    /// Every resident warp waits at a barrier.
    Barrier,
    /// No warp is resident (before the first block, or after the SM ran out of blocks).
    Idle,
}

impl StallReason {
    /// Every reason, in report order.
    pub const ALL: [StallReason; 5] = [
        StallReason::Dependency,
        StallReason::Memory,
        StallReason::Branch,
        StallReason::Barrier,
        StallReason::Idle,
    ];

    /// The JSON key of the reason.
    pub fn name(self) -> &'static str {
        match self {
            StallReason::Dependency => "dependency",
            StallReason::Memory => "memory",
            StallReason::Branch => "branch",
            StallReason::Barrier => "barrier",
            StallReason::Idle => "idle",
        }
    }
}

/// Stall cycles by reason. Over all SMs, `issue cycles + every stall = cycles × SMs`,
/// where the issue cycles are the warp-instructions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Stalls {
    /// See [`StallReason::Dependency`].
    pub dependency: u64,
    /// See [`StallReason::Memory`].
    pub memory: u64,
    /// See [`StallReason::Branch`].
    pub branch: u64,
    /// See [`StallReason::Barrier`].
    pub barrier: u64,
    /// See [`StallReason::Idle`].
    pub idle: u64,
}

impl Stalls {
    /// Adds `n` cycles to `reason`.
    pub fn add(&mut self, reason: StallReason, n: u64) {
        *self.get_mut(reason) += n;
    }

    /// The cycles of `reason`.
    pub fn get(&self, reason: StallReason) -> u64 {
        match reason {
            StallReason::Dependency => self.dependency,
            StallReason::Memory => self.memory,
            StallReason::Branch => self.branch,
            StallReason::Barrier => self.barrier,
            StallReason::Idle => self.idle,
        }
    }

    fn get_mut(&mut self, reason: StallReason) -> &mut u64 {
        match reason {
            StallReason::Dependency => &mut self.dependency,
            StallReason::Memory => &mut self.memory,
            StallReason::Branch => &mut self.branch,
            StallReason::Barrier => &mut self.barrier,
            StallReason::Idle => &mut self.idle,
        }
    }

    /// All stall cycles.
    pub fn total(&self) -> u64 {
        StallReason::ALL.iter().map(|&r| self.get(r)).sum()
    }
}

/// Memory transactions by address space.
///
/// - global and local: the number of distinct `segment_bytes`-aligned segments the active
///   lanes of one warp-access touch, summed over warp-accesses. Local memory is
///   interleaved across the lanes of a warp in units of the access size (as on NVIDIA
///   GPUs), so lanes accessing the same local offset coalesce.
/// - shared: per warp-access, the largest number of distinct 4-byte words that fall in one
///   bank (1 without bank conflicts), summed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Transactions {
    /// Global-memory transactions.
    pub global: u64,
    /// Shared-memory transactions.
    pub shared: u64,
    /// Local-memory transactions.
    pub local: u64,
}

/// Everything a run measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    /// The kernel.
    pub kernel: String,
    /// Lanes per warp in this run.
    pub warp_width: u32,
    /// Cycles from the first issue to the cycle after the last: `last issue cycle + 1`
    /// (0 when nothing ran).
    pub cycles: u64,
    /// Instructions issued, one per warp per issue (guarded-off instructions included).
    pub warp_instructions: u64,
    /// Σ over warp-instructions of the lanes that did the work: active in the warp's mask
    /// and, for a guarded instruction, with the guard holding.
    pub thread_instructions: u64,
    /// Σ over warp-instructions of the lanes active in the warp's mask, guards ignored
    /// (so `thread_instructions ≤ active_thread_instructions`).
    pub active_thread_instructions: u64,
    /// `thread_instructions / (warp_instructions × warp_width)`: the fraction of issued
    /// lanes that did useful work (1.0 without divergence, guards or partial warps; 0 when
    /// nothing ran).
    pub simt_efficiency: f64,
    /// Executions of every basic block, by block name (the IR block a machine block
    /// implements, else its own name): each time a warp starts a block with some active
    /// lanes counts once, whatever the number of lanes. A block entered again after a
    /// divergence by another group of lanes counts again — the redundant executions of an
    /// unstructured CFG.
    pub block_executions: BTreeMap<String, u64>,
    /// Redundant block executions, by block name as in `block_executions`, when the run
    /// was asked to count them ([`RunOptions::redundancy`](crate::RunOptions)): for each
    /// warp and block, the warp's executions of the block minus the largest number of
    /// times any one of its lanes executed it (a lane executes a block when it is active
    /// as the warp enters it), summed over warps. An ideal SIMT machine runs a block once
    /// per lane-iteration, so this is 0 without divergence; the paper's Figure 1 at warp
    /// width 4 has 1 redundant execution of B3 and 2 of B5.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redundant_block_executions: Option<BTreeMap<String, u64>>,
    /// The most entries any warp's reconvergence stack held, the bottom entry included
    /// (1: the warp never diverged).
    pub max_stack_depth: u64,
    /// Cycles in which an SM issued nothing, by reason, summed over SMs.
    pub stalls: Stalls,
    /// Memory transactions by space.
    pub transactions: Transactions,
    /// Achieved occupancy: `Σ over SMs and cycles of resident warps / (cycles × SMs ×
    /// warp_slots)`, where a warp is resident from its block's placement on the SM until
    /// its last thread ends.
    pub occupancy: f64,
    /// Theoretical occupancy: `blocks per SM × warps per block / warp_slots`, the limit
    /// set by the warp, block, register and shared-memory capacity of an SM.
    pub theoretical_occupancy: f64,
    /// Thread blocks per SM the capacity allows (see `theoretical_occupancy`).
    pub blocks_per_sm: u32,
    /// Thread blocks run.
    pub thread_blocks: u64,
    /// Warps run.
    pub warps: u64,
    /// Times the threads of a block passed a barrier together.
    pub barriers: u64,
}

impl Stats {
    /// The statistics as a JSON value.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// Fills in the ratios from the counts.
    pub(crate) fn finish(&mut self, sms: u32, warp_slots: u32, resident_warp_cycles: u128) {
        let lanes = self.warp_instructions as f64 * f64::from(self.warp_width);
        self.simt_efficiency = if lanes > 0.0 {
            self.thread_instructions as f64 / lanes
        } else {
            0.0
        };
        let slots = self.cycles as f64 * f64::from(sms) * f64::from(warp_slots);
        self.occupancy = if slots > 0.0 {
            resident_warp_cycles as f64 / slots
        } else {
            0.0
        };
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "kernel %{} at warp width {}",
            self.kernel, self.warp_width
        )?;
        writeln!(f, "  cycles                 {:>14}", self.cycles)?;
        writeln!(f, "  warp-instructions      {:>14}", self.warp_instructions)?;
        writeln!(
            f,
            "  thread-instructions    {:>14}",
            self.thread_instructions
        )?;
        writeln!(
            f,
            "  SIMT efficiency        {:>13.1}%",
            self.simt_efficiency * 100.0
        )?;
        writeln!(f, "  max stack depth        {:>14}", self.max_stack_depth)?;
        if let Some(r) = &self.redundant_block_executions {
            writeln!(
                f,
                "  redundant block execs  {:>14}",
                r.values().sum::<u64>()
            )?;
        }
        writeln!(
            f,
            "  occupancy              {:>13.1}% (theoretical {:.1}%, {} blocks/SM)",
            self.occupancy * 100.0,
            self.theoretical_occupancy * 100.0,
            self.blocks_per_sm
        )?;
        writeln!(
            f,
            "  blocks, warps, barriers {:>13} {} {}",
            self.thread_blocks, self.warps, self.barriers
        )?;
        writeln!(
            f,
            "  transactions           global {}, shared {}, local {}",
            self.transactions.global, self.transactions.shared, self.transactions.local
        )?;
        write!(f, "  stall cycles          ")?;
        for r in StallReason::ALL {
            write!(f, " {} {}", r.name(), self.stalls.get(r))?;
        }
        writeln!(f)?;
        writeln!(f, "  block executions:")?;
        for (name, n) in &self.block_executions {
            writeln!(f, "    {name:<20} {n:>12}")?;
        }
        Ok(())
    }
}
