//! The functional mode: the emulator's execution without its timing model, thread blocks
//! spread over all cores.
//!
//! A functional run executes exactly the instructions a timed run executes — the same
//! warps, masks, reconvergence stack and memory accesses, through the same
//! `Warp::step` (loops of simple 32-bit operations, whole-warp runs of words and
//! branches through `Warp::run_fast`, which executes them as `step` does, without
//! returning here for each) — but with no clock: no scheduler, no scoreboard, no stall accounting. A
//! block's warps run one after the other, each until it waits at a barrier or is done;
//! when every live warp waits, the barrier is checked and released (or faults, as in a
//! timed run) and the warps go on. Everything the statistics count per warp is the same
//! as in a timed run: warp- and thread-instructions, block executions, redundant block
//! executions, reconvergence-stack depth, memory transactions, barriers; the timing
//! quantities (cycles, stalls, occupancy) are zero.
//!
//! Thread blocks are independent but for global memory, so the grid is cut into
//! contiguous ranges of blocks run in parallel by rayon, each range by one worker that
//! keeps its warps, shared memory and counters. Global memory is shared as atomic words
//! (see the private `global` module). For a race-free kernel the memory a run leaves does
//! not depend on the order of blocks, so it is the same for any number of threads, and
//! equal to a timed run's; the statistics are sums and maxima, the same too. When blocks
//! fault, the fault reported is that of the lowest-numbered faulting block, whatever the
//! number of threads: a worker stops only at blocks above the lowest fault seen so far.
//!
//! The runaway rule is a timed run's (the budget of `max_warp_steps`, raised by the
//! longest finished warp), and a monitor is polled every 16384 warp-instructions of a
//! worker (one worker at a time); stopping it ends the run with the positions of the
//! warps the workers were running.

use crate::config::{MachineConfig, RUNAWAY_FACTOR};
use crate::error::{EmuError, FaultKind};
use crate::global::{SharedGlobal, SharedRef};
use crate::machine::{check_barrier, fault, fault_at, position, Counters, Ctx, Setup, WarpState};
use crate::monitor::{Interrupted, Monitor, Progress, WarpPosition};
use crate::program::Program;
use crate::redundancy::LaneCounts;
use crate::stats::Stats;
use crate::warp::{Flow, Scratch, Warp};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use warplift_ir::launch::PreparedLaunch;

/// Warp-instructions of a worker between two polls of the monitor.
const POLL_INSTRUCTIONS: u64 = 16384;

/// Chunks of the grid per rayon thread, so that uneven blocks still balance.
const CHUNKS_PER_THREAD: u64 = 8;

/// What the workers share.
struct Shared<'a, 'm> {
    ctx: &'a Ctx<'a>,
    setup: (u64, usize, u32),
    /// The lowest block that faulted so far (`u64::MAX`: none).
    lowest_fault: AtomicU64,
    /// The longest finished warp's instruction count.
    longest: AtomicU64,
    /// Set when the monitor stopped the run.
    stop: AtomicBool,
    warp_instructions: AtomicU64,
    thread_instructions: AtomicU64,
    blocks_done: AtomicU64,
    monitor: Option<Mutex<&'a mut (dyn Monitor + 'm)>>,
}

impl Shared<'_, '_> {
    fn budget(&self) -> u64 {
        self.ctx
            .config
            .max_warp_steps
            .max(self.longest.load(Relaxed).saturating_mul(RUNAWAY_FACTOR))
    }
}

/// Why a worker stopped early.
enum Stop {
    /// Block `.0` faulted.
    Fault(u64, EmuError),
    /// The monitor stopped the run; where the worker's warps stood.
    Interrupted(Vec<WarpPosition>),
}

/// One worker's state and counts.
struct Worker {
    warps: Vec<Warp>,
    shared: Vec<u8>,
    scratch: Box<Scratch>,
    counters: Counters,
    warp_instructions: u64,
    thread_instructions: u64,
    active_thread_instructions: u64,
    barriers: u64,
    blocks: u64,
    /// Instructions since the last poll.
    since_poll: u64,
    /// Warp- and thread-instructions published to the shared counts.
    published: (u64, u64),
}

impl Worker {
    fn new(ctx: &Ctx<'_>, wpb: usize, redundancy: bool) -> Worker {
        Worker {
            warps: (0..wpb).map(|_| Warp::new(ctx)).collect(),
            shared: vec![0; ctx.program.shared_size as usize],
            scratch: Scratch::new(),
            counters: Counters {
                block_execs: vec![0; ctx.program.blocks.len()],
                lanes: redundancy.then(|| Box::new(LaneCounts::new(ctx.program, ctx.width))),
                ..Counters::default()
            },
            warp_instructions: 0,
            thread_instructions: 0,
            active_thread_instructions: 0,
            barriers: 0,
            blocks: 0,
            since_poll: 0,
            published: (0, 0),
        }
    }

    /// Runs thread block `linear` to its end.
    fn run_block(
        &mut self,
        env: &Shared<'_, '_>,
        linear: u64,
        global: &mut SharedRef<'_>,
    ) -> Result<(), Stop> {
        let ctx = env.ctx;
        let (_, wpb, tpb) = env.setup;
        let [gx, gy, _] = ctx.grid.map(u64::from);
        let id = [
            (linear % gx) as u32,
            (linear / gx % gy) as u32,
            (linear / (gx * gy)) as u32,
        ];
        let width = ctx.width as u32;
        let observed = self.counters.lanes.is_some();
        self.shared.fill(0);
        let fault_of = |e: EmuError| Stop::Fault(linear, e);
        for (k, warp) in self.warps.iter_mut().enumerate() {
            let first = k as u32 * width;
            let lanes = (tpb - first).min(width);
            warp.reset(
                0,
                id,
                first,
                lanes,
                linear * wpb as u64 + k as u64,
                0,
                observed,
            );
            warp.enter(ctx, &mut self.counters, 0)
                .map_err(|kind| fault_of(fault(ctx, warp, id, kind)))?;
        }
        self.blocks += 1;
        let mut live = self
            .warps
            .iter()
            .filter(|w| w.state != WarpState::Done)
            .count();
        let mut exited_threads = 0u32;
        let mut budget = env.budget();
        loop {
            for k in 0..wpb {
                while self.warps[k].state == WarpState::Running {
                    let warp = &mut self.warps[k];
                    if warp.issued >= budget {
                        budget = env.budget();
                        if warp.issued >= budget {
                            let kind = FaultKind::Runaway {
                                issued: warp.issued,
                                budget,
                            };
                            return Err(fault_of(fault(ctx, warp, id, kind)));
                        }
                    }
                    // Loops of 32-bit operations, runs of words and branches run
                    // without returning here per instruction, within the budget and up
                    // to the next poll.
                    if warp.at_fast(ctx) {
                        let room = (budget - warp.issued).min(POLL_INSTRUCTIONS - self.since_poll);
                        let (ran, done) =
                            warp.run_fast(ctx, global, &mut self.counters, &mut self.scratch, room);
                        warp.issued += ran.insts;
                        self.warp_instructions += ran.insts;
                        self.thread_instructions += ran.acted;
                        self.active_thread_instructions += ran.active;
                        self.since_poll += ran.insts;
                        if let Err((pc, (lane, kind))) = done {
                            let lane = lane.unwrap_or_else(|| warp.mask.trailing_zeros().min(63));
                            return Err(fault_of(fault_at(ctx, warp, id, kind, pc, lane)));
                        }
                        if ran.insts > 0 {
                            continue;
                        }
                    }
                    let pc = warp.pc;
                    let (flow, lanes) = warp
                        .step::<false, _>(
                            ctx,
                            &mut self.shared,
                            global,
                            &mut self.counters,
                            &mut self.scratch,
                            0,
                        )
                        .map_err(|(lane, kind)| {
                            let lane = lane.unwrap_or_else(|| warp.mask.trailing_zeros().min(63));
                            fault_of(fault_at(ctx, warp, id, kind, pc, lane))
                        })?;
                    warp.issued += 1;
                    self.warp_instructions += 1;
                    self.thread_instructions += u64::from(lanes.0);
                    self.active_thread_instructions += u64::from(lanes.1);
                    match flow {
                        Flow::Next | Flow::Transfer => {}
                        Flow::Barrier => warp.state = WarpState::Barrier(pc),
                        Flow::Exit(n) => {
                            exited_threads += n;
                            if warp.state == WarpState::Done {
                                live -= 1;
                                env.longest.fetch_max(warp.issued, Relaxed);
                            }
                        }
                    }
                    self.since_poll += 1;
                    if self.since_poll >= POLL_INSTRUCTIONS {
                        self.poll(env, linear, id)?;
                    }
                }
            }
            if live == 0 {
                break;
            }
            // Every live warp waits at a barrier.
            check_barrier(ctx, &self.warps, exited_threads, id).map_err(fault_of)?;
            self.barriers += 1;
            for w in &mut self.warps {
                if let WarpState::Barrier(_) = w.state {
                    w.state = WarpState::Running;
                }
            }
        }
        env.blocks_done.fetch_add(1, Relaxed);
        Ok(())
    }

    /// Publishes the counts, polls the monitor when no other worker does, and stops when
    /// the run was stopped.
    fn poll(&mut self, env: &Shared<'_, '_>, linear: u64, id: [u32; 3]) -> Result<(), Stop> {
        env.warp_instructions
            .fetch_add(self.warp_instructions - self.published.0, Relaxed);
        env.thread_instructions
            .fetch_add(self.thread_instructions - self.published.1, Relaxed);
        self.published = (self.warp_instructions, self.thread_instructions);
        self.since_poll = 0;
        if let Some(m) = &env.monitor {
            if let Ok(mut monitor) = m.try_lock() {
                let progress = Progress {
                    cycles: 0,
                    warp_instructions: env.warp_instructions.load(Relaxed),
                    thread_instructions: env.thread_instructions.load(Relaxed),
                    blocks_done: env.blocks_done.load(Relaxed),
                    blocks: env.setup.0,
                };
                if monitor.poll(&progress).is_break() {
                    env.stop.store(true, Relaxed);
                }
            }
        }
        if env.stop.load(Relaxed) || linear > env.lowest_fault.load(Relaxed) {
            let warps = self
                .warps
                .iter()
                .filter(|w| matches!(w.state, WarpState::Running | WarpState::Barrier(_)))
                .map(|w| position(env.ctx, 0, w, id))
                .collect();
            return Err(Stop::Interrupted(warps));
        }
        Ok(())
    }

    /// Adds `other`'s counts to this worker's.
    fn merge(&mut self, other: Worker) {
        let (a, b) = (&mut self.counters, other.counters);
        for (x, y) in a.block_execs.iter_mut().zip(&b.block_execs) {
            *x += y;
        }
        a.max_stack_depth = a.max_stack_depth.max(b.max_stack_depth);
        for (x, y) in a.transactions.iter_mut().zip(b.transactions) {
            *x += y;
        }
        if let (Some(x), Some(y)) = (&mut a.lanes, b.lanes) {
            x.merge(*y);
        }
        self.warp_instructions += other.warp_instructions;
        self.thread_instructions += other.thread_instructions;
        self.active_thread_instructions += other.active_thread_instructions;
        self.barriers += other.barriers;
        self.blocks += other.blocks;
    }
}

/// Runs `program` on the grid of `launch` without the timing model, its thread blocks
/// spread over rayon's threads.
pub(crate) fn run(
    program: &Program,
    launch: &mut PreparedLaunch,
    config: &MachineConfig,
    redundancy: bool,
    monitor: Option<&mut (dyn Monitor + '_)>,
) -> Result<Stats, EmuError> {
    let Setup {
        ctx,
        num_blocks,
        blocks_per_sm,
        warps_per_block,
        threads_per_block,
    } = Setup::new(program, launch, config)?;
    let env = Shared {
        ctx: &ctx,
        setup: (num_blocks, warps_per_block, threads_per_block),
        lowest_fault: AtomicU64::new(u64::MAX),
        longest: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        warp_instructions: AtomicU64::new(0),
        thread_instructions: AtomicU64::new(0),
        blocks_done: AtomicU64::new(0),
        monitor: monitor.map(Mutex::new),
    };
    let shared = SharedGlobal::take(&mut launch.memory);
    let chunks =
        (rayon::current_num_threads() as u64 * CHUNKS_PER_THREAD).clamp(1, num_blocks.max(1));
    let per = num_blocks.div_ceil(chunks).max(1);
    let results: Vec<(Worker, Option<Stop>)> = (0..chunks)
        .into_par_iter()
        .map(|c| {
            let mut worker = Worker::new(&ctx, warps_per_block, redundancy);
            let mut global = SharedRef(&shared);
            let mut stop = None;
            for linear in c * per..((c + 1) * per).min(num_blocks) {
                if env.stop.load(Relaxed) || linear > env.lowest_fault.load(Relaxed) {
                    break;
                }
                if let Err(s) = worker.run_block(&env, linear, &mut global) {
                    if let Stop::Fault(b, _) = &s {
                        env.lowest_fault.fetch_min(*b, Relaxed);
                    }
                    stop = Some(s);
                    break;
                }
            }
            (worker, stop)
        })
        .collect();
    shared.give_back(&mut launch.memory);
    let mut total = Worker::new(&ctx, 0, redundancy);
    let mut lowest: Option<(u64, EmuError)> = None;
    let mut positions = Vec::new();
    for (worker, stop) in results {
        total.merge(worker);
        match stop {
            Some(Stop::Fault(b, e)) if lowest.as_ref().is_none_or(|(l, _)| b < *l) => {
                lowest = Some((b, e));
            }
            Some(Stop::Interrupted(p)) => positions.extend(p),
            _ => {}
        }
    }
    let mut stats = Stats {
        kernel: program.name.clone(),
        warp_width: config.warp_width,
        blocks_per_sm,
        theoretical_occupancy: f64::from(blocks_per_sm) * warps_per_block as f64
            / f64::from(config.warp_slots),
        warp_instructions: total.warp_instructions,
        thread_instructions: total.thread_instructions,
        active_thread_instructions: total.active_thread_instructions,
        barriers: total.barriers,
        thread_blocks: total.blocks,
        warps: total.blocks * warps_per_block as u64,
        ..Stats::default()
    };
    let c = &mut total.counters;
    for (b, &n) in program.blocks.iter().zip(&c.block_execs) {
        *stats.block_executions.entry(b.name.clone()).or_insert(0) += n;
    }
    stats.max_stack_depth = c.max_stack_depth;
    let [g, s, l] = c.transactions;
    stats.transactions.global = g;
    stats.transactions.shared = s;
    stats.transactions.local = l;
    stats.redundant_block_executions = c.lanes.take().map(|l| l.finish());
    stats.finish(config.sms, config.warp_slots, 0);
    if let Some((_, e)) = lowest {
        return Err(e);
    }
    if env.stop.load(Relaxed) {
        return Err(EmuError::Interrupted(Box::new(Interrupted {
            blocks_done: env.blocks_done.load(Relaxed),
            blocks: num_blocks,
            stats,
            warps: positions,
        })));
    }
    Ok(stats)
}
