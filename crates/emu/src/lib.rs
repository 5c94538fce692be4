//! warplift's multi-warp SIMT emulator.
//!
//! The emulator runs a kernel on a configurable model of a GPU, as the reference
//! interpreter runs it on threads one at a time, and measures what the divergence
//! transformations of the project are about: cycles, SIMT efficiency, redundant block
//! executions, reconvergence-stack depth, stalls, memory transactions and occupancy.
//!
//! ```text
//!   KernelCode (codegen's encode) ──Program::from_code───┐
//!   SIMT object ──load_object──Program::from_loaded──────┴─▶ Program ─┐
//!                                                                      ├─ run ──▶ Stats (+ Trace)
//!   PreparedLaunch (grid, args, global memory) ───────────────────────┘   and the launch's memory
//! ```
//!
//! - [`program`]: a kernel's decoded bytecode as the emulator runs it, and its
//!   validation; the operations are the SIMT bytecode's own (`warplift_simt`), of which
//!   the emulator depends on nothing of the compiler;
//! - [`config`]: the machine (warp width, SMs, slots, latencies, scheduler, ...);
//! - [`machine`]: SMs, placement of blocks, schedulers and the cycle loop;
//! - `functional` (private): the functional mode, without timing, blocks on all cores
//!   ([`run_functional`]); `global` (private): global memory as the warps access it;
//! - [`monitor`]: progress reports and interruption of a run in progress;
//! - `warp` (private): a warp's registers, active mask, IPDOM stack, and
//!   the execution of one instruction across its lanes;
//! - [`stats`]: every statistic, defined once; [`trace`]: the optional timeline;
//!   `redundancy` (private): the optional per-lane block counter and path log
//!   ([`LanePaths`]);
//! - [`error`]: faults, naming kernel, block, thread, pc and source line.
//!
//! For a race-free kernel the memory a run leaves equals what
//! [`warplift_ir::interp::run`] leaves, at any warp width: that is the emulator's main
//! correctness test.

pub mod config;
pub mod error;
mod functional;
mod global;
pub mod machine;
pub mod monitor;
pub mod program;
mod redundancy;
mod sched;
pub mod stats;
pub mod trace;
mod warp;

pub use config::{Latencies, MachineConfig, MachineConfigBuilder, PartialBarrier, SchedulerPolicy};
pub use error::{EmuError, Fault, FaultKind};
pub use machine::{run, run_functional, run_traced, run_with, RunOptions};
pub use monitor::{Interrupted, Monitor, Progress, WarpPosition};
pub use program::Program;
pub use redundancy::LanePaths;
pub use stats::{StallReason, Stats};
pub use trace::Trace;
