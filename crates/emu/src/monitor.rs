//! Watching a run while it goes: progress reports, interruption, and where the warps
//! stood when a run was stopped.
//!
//! A [`Monitor`] passed in [`RunOptions::monitor`](crate::RunOptions) is polled every few
//! thousand visited cycles with the run's [`Progress`]; it answers whether the run goes
//! on. A run it stops ends with [`EmuError::Interrupted`](crate::EmuError), which carries
//! the statistics so far and a [`WarpPosition`] for every warp not done — what a user who
//! pressed Ctrl-C on a run that seemed to hang wants to see.

use crate::stats::Stats;
use core::fmt;
use core::ops::ControlFlow;
use warplift_ir::SourceLoc;

/// How far a run has come.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// The current cycle (0 in a functional run, which has no clock).
    pub cycles: u64,
    /// Warp-instructions issued so far.
    pub warp_instructions: u64,
    /// Thread-instructions so far.
    pub thread_instructions: u64,
    /// Thread blocks finished.
    pub blocks_done: u64,
    /// Thread blocks of the grid.
    pub blocks: u64,
}

/// Watches a run. Called from the thread that runs the emulator's main loop (in a
/// functional run, from any of its worker threads, one call at a time).
pub trait Monitor: Send {
    /// Called every few thousand cycles; [`ControlFlow::Break`] stops the run with
    /// [`EmuError::Interrupted`](crate::EmuError).
    fn poll(&mut self, progress: &Progress) -> ControlFlow<()>;
}

impl<F: FnMut(&Progress) -> ControlFlow<()> + Send> Monitor for F {
    fn poll(&mut self, progress: &Progress) -> ControlFlow<()> {
        self(progress)
    }
}

/// Where a warp stood when the run stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WarpPosition {
    /// The SM it was resident on (0 in a functional run).
    pub sm: u32,
    /// Its thread block's id in the grid.
    pub block: [u32; 3],
    /// The id in the block of its first thread.
    pub first_thread: [u32; 3],
    /// Its threads that are active now.
    pub active_threads: u32,
    /// The next instruction's index in the program.
    pub pc: u32,
    /// The next instruction's address as messages show it.
    pub pc_label: String,
    /// The next instruction's text.
    pub inst: String,
    /// The code block holding it.
    pub code_block: String,
    /// Its source location.
    pub srcloc: SourceLoc,
    /// Whether it waits at a barrier.
    pub at_barrier: bool,
    /// Instructions the warp has issued.
    pub instructions: u64,
}

impl fmt::Display for WarpPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [bx, by, bz] = self.block;
        let [tx, ty, tz] = self.first_thread;
        write!(
            f,
            "SM {} block ({bx},{by},{bz}) warp of thread ({tx},{ty},{tz}): {} active, \
             {} instructions issued, {} pc {} in {} (`{}`)",
            self.sm,
            self.active_threads,
            self.instructions,
            if self.at_barrier {
                "waiting at a barrier at"
            } else {
                "next"
            },
            self.pc_label,
            self.code_block,
            self.inst
        )?;
        if !self.srcloc.is_unknown() {
            write!(f, ", line {}", self.srcloc)?;
        }
        Ok(())
    }
}

/// A run stopped by its [`Monitor`].
#[derive(Clone, Debug)]
pub struct Interrupted {
    /// The statistics up to the stop (cycles: the cycle it stopped at).
    pub stats: Stats,
    /// Every warp resident and not done, in SM and slot order.
    pub warps: Vec<WarpPosition>,
    /// Thread blocks finished.
    pub blocks_done: u64,
    /// Thread blocks in the grid.
    pub blocks: u64,
}

impl PartialEq for Interrupted {
    fn eq(&self, other: &Self) -> bool {
        self.stats == other.stats
            && self.warps == other.warps
            && self.blocks_done == other.blocks_done
            && self.blocks == other.blocks
    }
}

// The statistics' ratios are never NaN (a ratio over nothing is 0), so equality is total.
impl Eq for Interrupted {}

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "run of kernel %{} interrupted after {} warp-instructions ({} cycles), {} of the \
             grid's {} thread blocks done ({} started); the warps not done stood at:",
            self.stats.kernel,
            self.stats.warp_instructions,
            self.stats.cycles,
            self.blocks_done,
            self.blocks,
            self.stats.thread_blocks
        )?;
        for w in &self.warps {
            writeln!(f, "  {w}")?;
        }
        Ok(())
    }
}
