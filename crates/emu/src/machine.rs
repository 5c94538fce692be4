//! The machine: SMs, resident blocks and warps, the schedulers and the cycle loop.
//!
//! # Timing
//!
//! Time advances in cycles, but only cycles in which something can happen are visited:
//! after each visited cycle the loop jumps to the earliest cycle at which some warp can
//! issue, so a machine waiting 400 cycles for memory costs one step, not 400. In a
//! visited cycle every SM issues at most one instruction, from a *ready* warp, chosen by
//! the scheduler policy ([`SchedulerPolicy`]). A warp is ready at the cycle its next
//! instruction's operands are available (a per-warp scoreboard records when each
//! register's pending result arrives — stall on use), not earlier than the cycle after its
//! last issue, or `latency.branch` cycles after a control transfer. Each issue executes
//! the instruction at once (functional execution at issue), so the order of issues is the
//! order of memory effects; the latency only decides when the result may be used.
//!
//! Every cycle an SM does not issue is attributed to a [`StallReason`], with the reason of
//! its warp nearest to ready, so that `warp-instructions + stalls = cycles × SMs`.
//!
//! # Placement
//!
//! A block needs `ceil(threads / warp_width)` warp slots, registers for every lane of its
//! warps and its shared memory; the resulting blocks per SM (the theoretical occupancy)
//! is fixed for the launch. Blocks are placed in linear order, breadth first over the
//! SMs, and each block that finishes is replaced on its SM by the next waiting one.
//!
//! # Divergence
//!
//! See the private `warp` module: one active mask per warp and an IPDOM reconvergence stack.

use crate::config::RUNAWAY_FACTOR;
use crate::config::{MachineConfig, PartialBarrier, SchedulerPolicy};
use crate::error::{EmuError, Fault, FaultKind};
use crate::monitor::{Interrupted, Monitor, Progress, WarpPosition};
use crate::program::Program;
use crate::redundancy::{LaneCounts, LanePaths, PathLog};
use crate::sched::ReadyQueue;
use crate::stats::{StallReason, Stats};
use crate::trace::Trace;
use crate::warp::{Decoded, Fast, Flow, Scratch, Warp, NONE};
use warplift_ir::launch::PreparedLaunch;
use warplift_simt::{MType, Op, Reg, RegClass, Role};

/// The most scoreboard entries an instruction waits for: a guard, three operands and the
/// register it overwrites.
pub(crate) const CHECKS: usize = 5;

/// Per-instruction data the scheduler needs, derived once per run from the program.
#[derive(Copy, Clone, Debug)]
pub(crate) struct InstMeta {
    /// The scoreboard entries the instruction waits for, in order: its register reads
    /// (guard first), then the register it writes; `checks[..nchecks]` are used. Kept
    /// in the entry rather than in a shared list, so that the check reads one place.
    pub checks: [u32; CHECKS],
    pub nchecks: u8,
    /// Scoreboard index of the register written, or [`NONE`].
    pub def: u32,
    /// Cycles until the written register can be read.
    pub latency: u32,
    /// Whether the result comes from memory (for stall attribution).
    pub memory: bool,
}

/// Scheduling data of a program.
pub(crate) struct Meta {
    pub insts: Vec<InstMeta>,
    /// Scoreboard entries: every register of every class.
    pub scoreboard_len: usize,
    /// Each instruction's [`Simple`](crate::warp::Simple) form at the machine's warp width.
    pub simple: Vec<Decoded>,
    /// Each instruction's [`Fast`](crate::warp::Fast) form at the machine's warp width,
    /// for a functional run.
    pub fast: Vec<Fast>,
}

impl Meta {
    pub(crate) fn new(program: &Program, config: &MachineConfig) -> Meta {
        let n = program.num_regs;
        let flat = |r: Reg| -> u32 {
            match r.class() {
                RegClass::B32 => r.index(),
                RegClass::B64 => n[0] + r.index(),
                RegClass::Pred => n[0] + n[1] + r.index(),
            }
        };
        let lat = &config.latency;
        let mut insts = Vec::with_capacity(program.insts.len());
        for inst in &program.insts {
            // Reads, then the write; no operation has more than `CHECKS` together.
            let mut uses = Vec::with_capacity(CHECKS);
            let mut def = NONE;
            if let Some(g) = inst.guard {
                uses.push(flat(g.pred));
            }
            inst.op.visit_regs(|r, role| match role {
                Role::Use => uses.push(flat(r)),
                Role::Def => def = flat(r),
            });
            let space_lat = |space| match space {
                warplift_ir::AddrSpace::Shared => lat.shared,
                _ => lat.global,
            };
            use warplift_simt::{BinOp, CvtOp, UnOp};
            let (latency, memory) = match inst.op {
                Op::Bin { op, .. } => match op {
                    BinOp::Mul | BinOp::MulHiS | BinOp::MulHiU => (lat.mul, false),
                    BinOp::DivS | BinOp::DivU | BinOp::RemS | BinOp::RemU | BinOp::FDiv => {
                        (lat.sfu, false)
                    }
                    _ => (lat.alu, false),
                },
                Op::Mad { .. } => (lat.mul, false),
                Op::Un {
                    op: UnOp::FSqrt, ..
                } => (lat.sfu, false),
                Op::Cvt {
                    op: CvtOp::FExt | CvtOp::FTrunc,
                    ..
                } => (lat.alu, false),
                Op::Ld { space, .. } | Op::Atom { space, .. } | Op::Cas { space, .. } => {
                    (space_lat(space), true)
                }
                // A reload is a local load.
                Op::Reload { .. } => (lat.global, true),
                _ => (lat.alu, false),
            };
            if def != NONE {
                uses.push(def);
            }
            debug_assert!(
                uses.len() <= CHECKS,
                "{inst:?} waits for too many registers"
            );
            let mut checks = [0; CHECKS];
            for (c, &u) in checks.iter_mut().zip(&uses) {
                *c = u;
            }
            insts.push(InstMeta {
                checks,
                nchecks: uses.len().min(CHECKS) as u8,
                def,
                latency,
                memory,
            });
        }
        let width = config.warp_width as usize;
        Meta {
            insts,
            scoreboard_len: (n[0] + n[1] + n[2]) as usize,
            simple: program
                .insts
                .iter()
                .map(|i| Decoded::new(i, width))
                .collect(),
            fast: program
                .insts
                .iter()
                .map(|i| Fast::new(program, i, width))
                .collect(),
        }
    }
}

/// Where a warp stands.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum WarpState {
    /// The slot holds no warp.
    Free,
    /// It runs.
    Running,
    /// It waits at the barrier at this pc.
    Barrier(u32),
    /// Every thread has ended.
    Done,
}

/// A resident thread block.
struct Cta {
    /// Linear index in the grid.
    linear: u64,
    /// Id in the grid.
    id: [u32; 3],
    /// The shared-memory window.
    shared: Vec<u8>,
    /// Warps not yet done.
    live_warps: u32,
    /// Warps waiting at a barrier.
    waiting: u32,
    /// Threads that have ended.
    exited_threads: u32,
    /// Whether the slot holds a block.
    active: bool,
}

/// One streaming multiprocessor.
struct Sm {
    /// Warp slots: block slot `b` owns `b * warps_per_block ..`.
    warps: Vec<Warp>,
    /// Per warp slot, the cycle its warp can issue: `Warp::ready_at` of a running warp,
    /// `u64::MAX` for any other (a running warp that can never issue is alike). The
    /// scheduler reads only these compact arrays, kept in step with the warps by
    /// [`Sm::sync`], so that choosing among many warps touches a few cache lines rather
    /// than every warp's state.
    ready: Vec<u64>,
    /// Per warp slot, `Warp::reason`.
    why: Vec<StallReason>,
    /// `ready` as greedy-then-oldest asks for it: the ready warps in age order, the
    /// others by cycle, filed anew whenever a warp's cycle changes (kept only under that
    /// policy).
    queue: ReadyQueue,
    /// Whether `queue` is kept (the policy is greedy-then-oldest).
    queued: bool,
    /// Greedy-then-oldest's start of the slot order that breaks ties between the warps
    /// due at the same cycle for the stall reason: the last warp when the SM chose anew,
    /// kept while the SM goes on with its last warp and no other warp changes (`fresh`
    /// false), as the reason of the others is the same then.
    tie_start: usize,
    /// Whether the SM chooses anew at its next issue (something besides its last warp
    /// changed), rather than going on with its last warp if ready.
    fresh: bool,
    ctas: Vec<Cta>,
    /// The warp that issued last.
    last: usize,
    /// Cycles before this one are attributed (issue or stall).
    accounted: u64,
    /// Why it cannot issue until its next ready cycle.
    reason: StallReason,
    /// Earliest cycle a warp can issue (`u64::MAX`: none can).
    next_ready: u64,
    /// Warps resident and not done.
    live_warps: u64,
}

impl Sm {
    /// Copies warp `w`'s scheduling state into the compact arrays.
    #[inline(always)]
    fn sync(&mut self, w: usize) {
        let warp = &self.warps[w];
        self.ready[w] = if warp.state == WarpState::Running {
            warp.ready_at
        } else {
            u64::MAX
        };
        self.why[w] = warp.reason;
        if self.queued {
            self.queue.set(w, self.ready[w]);
        }
    }

    /// Whether some warp waits at a barrier (each block counts its waiting warps).
    fn any_waiting(&self) -> bool {
        self.ctas.iter().any(|c| c.active && c.waiting > 0)
    }
}

/// Launch geometry and everything fixed during the run.
pub(crate) struct Ctx<'a> {
    pub program: &'a Program,
    pub meta: Meta,
    pub config: &'a MachineConfig,
    pub width: usize,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub args: Vec<u64>,
}

impl Ctx<'_> {
    /// The `(x, y, z)` id of linear thread `t` of a block.
    pub fn thread_id(&self, t: u32) -> [u32; 3] {
        let [bx, by, _] = self.block;
        [t % bx, t / bx % by, t / (bx * by)]
    }
}

/// Counters the warps update while executing.
#[derive(Default)]
pub(crate) struct Counters {
    pub block_execs: Vec<u64>,
    pub max_stack_depth: u64,
    pub transactions: [u64; 3],
    /// Per-lane block counts, when the redundant block executions are asked for.
    pub lanes: Option<Box<LaneCounts>>,
    /// Per-lane paths, when asked for.
    pub paths: Option<Box<PathLog>>,
    /// Whether the run records a trace (warps then keep their spans).
    pub tracing: bool,
}

/// Optional measurements of a run, each off by default because it costs time.
#[derive(Default)]
pub struct RunOptions<'t> {
    /// Record a timeline of the run here.
    pub trace: Option<&'t mut Trace>,
    /// Count every lane's block executions to fill in
    /// [`Stats::redundant_block_executions`].
    pub redundancy: bool,
    /// Record every lane's path through the machine blocks here (a timed run only).
    pub lane_paths: Option<&'t mut LanePaths>,
    /// Poll this while the run goes, to show progress or stop the run.
    pub monitor: Option<&'t mut dyn Monitor>,
    /// Run without the timing model, thread blocks spread over all cores (see
    /// [`run_functional`]): the same memory and per-warp counts, no cycles or stalls. A
    /// functional run cannot record a trace.
    pub functional: bool,
}

impl core::fmt::Debug for RunOptions<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RunOptions")
            .field("trace", &self.trace.is_some())
            .field("redundancy", &self.redundancy)
            .field("lane_paths", &self.lane_paths.is_some())
            .field("monitor", &self.monitor.is_some())
            .field("functional", &self.functional)
            .finish()
    }
}

/// Visited cycles between two polls of the monitor.
const POLL_CYCLES: u64 = 4096;

/// Runs `program` on the grid of `launch`, updating its global memory.
pub fn run(
    program: &Program,
    launch: &mut PreparedLaunch,
    config: &MachineConfig,
) -> Result<Stats, EmuError> {
    Machine::run(program, launch, config, RunOptions::default())
}

/// [`run`], recording a timeline into `trace`.
pub fn run_traced(
    program: &Program,
    launch: &mut PreparedLaunch,
    config: &MachineConfig,
    trace: &mut Trace,
) -> Result<Stats, EmuError> {
    let options = RunOptions {
        trace: Some(trace),
        ..RunOptions::default()
    };
    Machine::run(program, launch, config, options)
}

/// [`run`] with optional measurements.
pub fn run_with(
    program: &Program,
    launch: &mut PreparedLaunch,
    config: &MachineConfig,
    options: RunOptions<'_>,
) -> Result<Stats, EmuError> {
    if options.functional {
        if options.trace.is_some() {
            return Err(EmuError::Setup {
                kernel: program.name.clone(),
                message: "a functional run has no clock, so no timeline to trace".into(),
            });
        }
        if options.lane_paths.is_some() {
            return Err(EmuError::Setup {
                kernel: program.name.clone(),
                message: "a functional run records no lane paths: its warps run on \
                          several threads"
                    .into(),
            });
        }
        return crate::functional::run(
            program,
            launch,
            config,
            options.redundancy,
            options.monitor,
        );
    }
    Machine::run(program, launch, config, options)
}

/// Runs `program` on the grid of `launch` without the timing model: the memory a timed
/// run leaves (for a race-free kernel) and the same warp- and thread-instructions, block
/// executions, stack depth, transactions and barriers, with cycles, stalls and occupancy
/// zero; thread blocks run in parallel on rayon's threads, with the same results for any
/// number of threads. See the `functional` module.
pub fn run_functional(
    program: &Program,
    launch: &mut PreparedLaunch,
    config: &MachineConfig,
) -> Result<Stats, EmuError> {
    let options = RunOptions {
        functional: true,
        ..RunOptions::default()
    };
    run_with(program, launch, config, options)
}

/// What every run derives from its program, launch and machine before it starts.
pub(crate) struct Setup<'a> {
    pub ctx: Ctx<'a>,
    pub num_blocks: u64,
    pub blocks_per_sm: u32,
    pub warps_per_block: usize,
    pub threads_per_block: u32,
}

impl<'a> Setup<'a> {
    /// Validates the machine, the program and the launch, and derives the run's context.
    pub(crate) fn new(
        program: &'a Program,
        launch: &PreparedLaunch,
        config: &'a MachineConfig,
    ) -> Result<Setup<'a>, EmuError> {
        config.validate()?;
        program.validate()?;
        let setup = |message: String| EmuError::Setup {
            kernel: program.name.clone(),
            message,
        };
        warplift_ir::launch::check_geometry(launch.grid, launch.block)
            .map_err(|e| setup(e.to_string()))?;
        if launch.args.len() != program.params.len() {
            return Err(setup(format!(
                "the kernel takes {} parameters, the launch binds {}",
                program.params.len(),
                launch.args.len()
            )));
        }
        let args = program
            .params
            .iter()
            .zip(&launch.args)
            .map(|(p, &a)| a & p.ty.mask())
            .collect();
        let width = config.warp_width as usize;
        let threads_per_block = launch.threads_per_block();
        let warps_per_block = (threads_per_block as usize).div_ceil(width);
        let blocks_per_sm = blocks_per_sm(program, config, warps_per_block).map_err(setup)?;
        let ctx = Ctx {
            program,
            meta: Meta::new(program, config),
            config,
            width,
            grid: launch.grid,
            block: launch.block,
            args,
        };
        let num_blocks = u64::try_from(launch.num_blocks())
            .map_err(|_| setup("the grid has more than 2^64 blocks".into()))?;
        Ok(Setup {
            ctx,
            num_blocks,
            blocks_per_sm,
            warps_per_block,
            threads_per_block,
        })
    }
}

struct Machine<'a, 'm> {
    ctx: Ctx<'a>,
    sms: Vec<Sm>,
    warps_per_block: usize,
    threads_per_block: u32,
    next_block: u64,
    num_blocks: u64,
    blocks_done: u64,
    next_age: u64,
    counters: Counters,
    stats: Stats,
    trace: Option<&'a mut Trace>,
    /// Where the lanes' paths go.
    lane_paths: Option<&'m mut LanePaths>,
    /// Σ over visited cycles of resident warps (for the achieved occupancy).
    resident_cycles: u128,
    /// Warps resident and not done, over all SMs (the sum of `Sm::live_warps`).
    resident: u64,
    scratch: Box<Scratch>,
    /// Instructions a warp may issue before it counts as a runaway.
    budget: u64,
    monitor: Option<&'a mut (dyn Monitor + 'm)>,
}

impl<'a, 'm: 'a> Machine<'a, 'm> {
    fn run(
        program: &'a Program,
        launch: &mut PreparedLaunch,
        config: &'a MachineConfig,
        options: RunOptions<'m>,
    ) -> Result<Stats, EmuError> {
        let RunOptions {
            trace,
            redundancy,
            lane_paths,
            monitor,
            functional: _,
        } = options;
        let Setup {
            ctx,
            num_blocks,
            blocks_per_sm,
            warps_per_block,
            threads_per_block,
        } = Setup::new(program, launch, config)?;
        let width = ctx.width;
        // Only as many block slots as the grid can fill are materialised.
        let slots = u64::from(blocks_per_sm)
            .min(num_blocks.div_ceil(u64::from(config.sms)))
            .max(1) as usize;
        let mut sms = Vec::with_capacity(config.sms as usize);
        let nwarps = slots * warps_per_block;
        // A warp's ready cycle is at most the longest latency past the current cycle.
        let lat = &config.latency;
        let span = [
            lat.alu, lat.mul, lat.sfu, lat.shared, lat.global, lat.branch,
        ]
        .into_iter()
        .max()
        .map_or(1, u64::from)
            + 2;
        for _ in 0..config.sms {
            sms.push(Sm {
                ready: vec![u64::MAX; nwarps],
                why: vec![StallReason::Idle; nwarps],
                queue: ReadyQueue::new(nwarps, span),
                queued: config.scheduler == SchedulerPolicy::Gto,
                tie_start: 0,
                fresh: true,
                warps: (0..nwarps).map(|_| Warp::new(&ctx)).collect(),
                ctas: (0..slots)
                    .map(|_| Cta {
                        linear: 0,
                        id: [0; 3],
                        shared: vec![0; program.shared_size as usize],
                        live_warps: 0,
                        waiting: 0,
                        exited_threads: 0,
                        active: false,
                    })
                    .collect(),
                last: 0,
                accounted: 0,
                reason: StallReason::Idle,
                next_ready: u64::MAX,
                live_warps: 0,
            });
        }
        let stats = Stats {
            kernel: program.name.clone(),
            warp_width: config.warp_width,
            blocks_per_sm,
            theoretical_occupancy: f64::from(blocks_per_sm) * warps_per_block as f64
                / f64::from(config.warp_slots),
            ..Stats::default()
        };
        let mut m = Machine {
            counters: Counters {
                block_execs: vec![0; program.blocks.len()],
                lanes: redundancy.then(|| Box::new(LaneCounts::new(program, width))),
                paths: lane_paths.is_some().then(|| Box::new(PathLog::new(width))),
                tracing: trace.is_some(),
                ..Counters::default()
            },
            ctx,
            sms,
            warps_per_block,
            threads_per_block,
            next_block: 0,
            num_blocks,
            blocks_done: 0,
            next_age: 0,
            stats,
            trace,
            lane_paths,
            resident_cycles: 0,
            resident: 0,
            scratch: Scratch::new(),
            budget: config.max_warp_steps,
            monitor,
        };
        m.main_loop(launch)?;
        Ok(m.finish())
    }

    /// Places the next waiting block on SM `s`, if it has a free slot.
    fn place(&mut self, s: usize, now: u64) -> Result<bool, EmuError> {
        if self.next_block >= self.num_blocks {
            return Ok(false);
        }
        let Some(slot) = self.sms[s].ctas.iter().position(|c| !c.active) else {
            return Ok(false);
        };
        let linear = self.next_block;
        self.next_block += 1;
        let [gx, gy, _] = self.ctx.grid.map(u64::from);
        let id = [
            (linear % gx) as u32,
            (linear / gx % gy) as u32,
            (linear / (gx * gy)) as u32,
        ];
        let wpb = self.warps_per_block;
        let sm = &mut self.sms[s];
        sm.fresh = true;
        let cta = &mut sm.ctas[slot];
        cta.linear = linear;
        cta.id = id;
        cta.shared.fill(0);
        cta.live_warps = wpb as u32;
        cta.waiting = 0;
        cta.exited_threads = 0;
        cta.active = true;
        let width = self.ctx.width as u32;
        for k in 0..wpb {
            let first = k as u32 * width;
            let lanes = (self.threads_per_block - first).min(width);
            let age = self.next_age;
            self.next_age += 1;
            let warp = &mut sm.warps[slot * wpb + k];
            let observed = self.counters.tracing
                || self.counters.lanes.is_some()
                || self.counters.paths.is_some();
            warp.reset(slot, id, first, lanes, age, now, observed);
            warp.enter(&self.ctx, &mut self.counters, now)
                .map_err(|kind| fault(&self.ctx, warp, id, kind))?;
            warp.compute_ready(&self.ctx.meta, now, StallReason::Dependency);
            sm.sync(slot * wpb + k);
        }
        // The block's warps are now the youngest.
        let range = (slot * wpb) as u32..((slot + 1) * wpb) as u32;
        if sm.queued {
            sm.queue.make_youngest(range, &sm.ready);
        }
        sm.live_warps += wpb as u64;
        self.resident += wpb as u64;
        self.stats.thread_blocks += 1;
        self.stats.warps += wpb as u64;
        Ok(true)
    }

    fn main_loop(&mut self, launch: &mut PreparedLaunch) -> Result<(), EmuError> {
        let nsms = self.sms.len();
        // Breadth-first initial placement.
        loop {
            let mut placed = false;
            for s in 0..nsms {
                placed |= self.place(s, 0)?;
            }
            if !placed {
                break;
            }
        }
        for s in 0..nsms {
            self.refresh(s);
        }
        let mut now = 0u64;
        let mut last_issue = None;
        let mut until_poll = POLL_CYCLES;
        while self.blocks_done < self.num_blocks {
            until_poll -= 1;
            if until_poll == 0 {
                until_poll = POLL_CYCLES;
                self.poll(now)?;
            }
            if now >= self.ctx.config.max_cycles {
                return Err(self.limit_fault(FaultKind::CycleLimit(self.ctx.config.max_cycles)));
            }
            let resident_before = self.resident;
            // The earliest cycle an SM can issue at, as the SMs are visited (an SM's
            // visit changes only its own state).
            let mut next = u64::MAX;
            for s in 0..nsms {
                'visit: {
                    let sm = &mut self.sms[s];
                    if sm.accounted < now {
                        self.stats.stalls.add(sm.reason, now - sm.accounted);
                        sm.accounted = now;
                    }
                    if sm.next_ready > now {
                        break 'visit;
                    }
                    // Greedy-then-oldest: the last warp while it is ready, else the
                    // oldest ready one, from the queue; loose round-robin scans.
                    let (chosen, scan) = if sm.queued {
                        sm.queue.drain(now);
                        let last = sm.last;
                        let chosen = if sm.ready[last] <= now {
                            if sm.fresh {
                                sm.tie_start = last;
                            }
                            Some(last)
                        } else {
                            sm.tie_start = last;
                            sm.queue.oldest()
                        };
                        sm.fresh = false;
                        (chosen, None)
                    } else {
                        let scan = pick_lrr(sm, now);
                        (scan.chosen, Some(scan))
                    };
                    let Some(w) = chosen else {
                        self.refresh(s);
                        break 'visit;
                    };
                    let others_changed = self.issue(s, w, now, launch)?;
                    last_issue = Some(now);
                    let sm = &mut self.sms[s];
                    sm.accounted = now + 1;
                    if others_changed {
                        self.refresh(s);
                    } else {
                        // Only the issuing warp changed.
                        let (next, mut reason) = match scan {
                            // Combined with the scan of the others.
                            Some(scan) if sm.ready[w] < scan.next_other => (sm.ready[w], sm.why[w]),
                            Some(scan) => (scan.next_other, scan.reason_other),
                            None => queued_next(sm, now, w),
                        };
                        if next == u64::MAX {
                            reason = if sm.any_waiting() {
                                StallReason::Barrier
                            } else {
                                StallReason::Idle
                            };
                        }
                        sm.next_ready = next;
                        sm.reason = reason;
                    }
                }
                next = next.min(self.sms[s].next_ready);
            }
            if self.blocks_done >= self.num_blocks {
                break;
            }
            if next == u64::MAX {
                // Cannot happen: a block whose warps all wait is released or faulted when
                // its last warp arrives. Report it rather than spin.
                return Err(self.limit_fault(FaultKind::Malformed(
                    "no warp can ever issue again (deadlock)".into(),
                )));
            }
            let next = next.max(now + 1);
            let resident_after = self.resident;
            self.resident_cycles += u128::from(resident_before.max(resident_after))
                + u128::from(resident_after) * u128::from(next - now - 1);
            now = next;
        }
        let cycles = last_issue.map_or(0, |c| c + 1);
        self.stats.cycles = cycles;
        for sm in &mut self.sms {
            if sm.accounted < cycles {
                self.stats.stalls.add(sm.reason, cycles - sm.accounted);
                sm.accounted = cycles;
            }
        }
        Ok(())
    }

    /// Polls the monitor, if any, at cycle `now`; an error when it stops the run.
    fn poll(&mut self, now: u64) -> Result<(), EmuError> {
        let Some(monitor) = self.monitor.as_deref_mut() else {
            return Ok(());
        };
        let progress = Progress {
            cycles: now,
            warp_instructions: self.stats.warp_instructions,
            thread_instructions: self.stats.thread_instructions,
            blocks_done: self.blocks_done,
            blocks: self.num_blocks,
        };
        if monitor.poll(&progress).is_continue() {
            return Ok(());
        }
        let mut warps = Vec::new();
        for (s, sm) in self.sms.iter().enumerate() {
            for warp in &sm.warps {
                if matches!(warp.state, WarpState::Running | WarpState::Barrier(_)) {
                    warps.push(position(&self.ctx, s as u32, warp, sm.ctas[warp.cta].id));
                }
            }
        }
        let mut stats = self.snapshot(now);
        stats.cycles = now;
        Err(EmuError::Interrupted(Box::new(Interrupted {
            stats,
            warps,
            blocks_done: self.blocks_done,
            blocks: self.num_blocks,
        })))
    }

    /// The statistics so far, at cycle `now`.
    fn snapshot(&self, now: u64) -> Stats {
        let mut stats = self.stats.clone();
        for sm in &self.sms {
            if sm.accounted < now {
                stats.stalls.add(sm.reason, now - sm.accounted);
            }
        }
        stats.cycles = now;
        self.fill_counts(&mut stats);
        stats.finish(
            self.ctx.config.sms,
            self.ctx.config.warp_slots,
            self.resident_cycles,
        );
        stats
    }

    /// A fault for a run-wide limit, blamed on the first running warp.
    fn limit_fault(&self, kind: FaultKind) -> EmuError {
        for sm in &self.sms {
            for warp in &sm.warps {
                if matches!(warp.state, WarpState::Running | WarpState::Barrier(_)) {
                    return fault(&self.ctx, warp, sm.ctas[warp.cta].id, kind);
                }
            }
        }
        EmuError::Setup {
            kernel: self.ctx.program.name.clone(),
            message: kind.to_string(),
        }
    }

    /// Recomputes SM `s`'s next ready cycle and stall reason.
    fn refresh(&mut self, s: usize) {
        let sm = &mut self.sms[s];
        sm.fresh = true;
        let mut next = u64::MAX;
        let mut reason = StallReason::Idle;
        for (&r, &why) in sm.ready.iter().zip(&sm.why) {
            if r < next {
                next = r;
                reason = why;
            }
        }
        if next == u64::MAX && sm.any_waiting() {
            reason = StallReason::Barrier;
        }
        sm.next_ready = next;
        sm.reason = reason;
    }

    /// Issues the next instruction of warp `w` on SM `s` at cycle `now`, unless the run's
    /// instruction limit or the warp's runaway budget is reached. Returns whether
    /// other warps may have changed (a barrier, an exit), so that the SM must be rescanned.
    fn issue(
        &mut self,
        s: usize,
        w: usize,
        now: u64,
        launch: &mut PreparedLaunch,
    ) -> Result<bool, EmuError> {
        let ctx = &self.ctx;
        let sm = &mut self.sms[s];
        sm.last = w;
        let warp = &mut sm.warps[w];
        let max_insts = ctx.config.max_warp_instructions;
        if self.stats.warp_instructions >= max_insts {
            let id = sm.ctas[warp.cta].id;
            return Err(fault(ctx, warp, id, FaultKind::InstructionLimit(max_insts)));
        }
        if warp.issued >= self.budget {
            let id = sm.ctas[warp.cta].id;
            let kind = FaultKind::Runaway {
                issued: warp.issued,
                budget: self.budget,
            };
            return Err(fault(ctx, warp, id, kind));
        }
        let cta_slot = warp.cta;
        let cta = &mut sm.ctas[cta_slot];
        let pc = warp.pc;
        let (flow, lanes) = warp
            .step::<true, _>(
                ctx,
                &mut cta.shared,
                &mut launch.memory,
                &mut self.counters,
                &mut self.scratch,
                now,
            )
            .map_err(|(lane, kind)| {
                let lane = lane.unwrap_or_else(|| warp.mask.trailing_zeros().min(63));
                fault_at(ctx, warp, cta.id, kind, pc, lane)
            })?;
        warp.issued += 1;
        self.stats.warp_instructions += 1;
        self.stats.thread_instructions += u64::from(lanes.0);
        self.stats.active_thread_instructions += u64::from(lanes.1);
        match flow {
            Flow::Next => warp.compute_ready(&ctx.meta, now + 1, StallReason::Dependency),
            Flow::Transfer => {
                let at = now + u64::from(ctx.config.latency.branch);
                warp.compute_ready(&ctx.meta, at, StallReason::Branch);
            }
            Flow::Barrier => {
                warp.state = WarpState::Barrier(pc);
                cta.waiting += 1;
            }
            Flow::Exit(n) => {
                cta.exited_threads += n;
                if warp.state == WarpState::Done {
                    self.budget = self.budget.max(warp.issued.saturating_mul(RUNAWAY_FACTOR));
                    sm.live_warps -= 1;
                    self.resident -= 1;
                    cta.live_warps -= 1;
                } else {
                    let at = now + u64::from(ctx.config.latency.branch);
                    warp.compute_ready(&ctx.meta, at, StallReason::Branch);
                }
            }
        }
        sm.sync(w);
        let sm = &mut self.sms[s];
        let warp = &mut sm.warps[w];
        let cta = &sm.ctas[cta_slot];
        if let Some(t) = self.trace.as_deref_mut() {
            let linear = cta.linear;
            for span in warp.spans.drain(..) {
                t.events.push(crate::trace::TraceEvent {
                    name: ctx.program.blocks[span.block as usize].name.clone(),
                    ph: "X",
                    ts: span.start,
                    dur: span.end - span.start,
                    pid: s as u32,
                    tid: w as u32,
                    args: crate::trace::TraceArgs {
                        lanes: span.lanes,
                        thread_block: linear,
                    },
                });
            }
        }
        let others_changed = matches!(flow, Flow::Barrier | Flow::Exit(_));
        if others_changed {
            self.check_cta(s, cta_slot, now)?;
        }
        Ok(others_changed)
    }

    /// After a warp of block slot `slot` waits at a barrier or ends: releases the
    /// barrier when every live warp waits at it, faults on barrier divergence, and
    /// retires the block when every warp is done.
    fn check_cta(&mut self, s: usize, slot: usize, now: u64) -> Result<(), EmuError> {
        let wpb = self.warps_per_block;
        let sm = &mut self.sms[s];
        let cta = &sm.ctas[slot];
        if cta.live_warps == 0 {
            sm.ctas[slot].active = false;
            for w in slot * wpb..(slot + 1) * wpb {
                sm.warps[w].state = WarpState::Free;
                sm.sync(w);
            }
            self.blocks_done += 1;
            self.place(s, now + 1)?;
            return Ok(());
        }
        if cta.waiting == 0 || cta.waiting < cta.live_warps {
            return Ok(());
        }
        // Every live warp waits at a barrier.
        let warps = &sm.warps[slot * wpb..(slot + 1) * wpb];
        check_barrier(&self.ctx, warps, cta.exited_threads, cta.id)?;
        self.stats.barriers += 1;
        let sm = &mut self.sms[s];
        sm.ctas[slot].waiting = 0;
        for w in slot * wpb..(slot + 1) * wpb {
            let warp = &mut sm.warps[w];
            if let WarpState::Barrier(_) = warp.state {
                warp.state = WarpState::Running;
                warp.compute_ready(&self.ctx.meta, now + 1, StallReason::Barrier);
                sm.sync(w);
            }
        }
        Ok(())
    }

    /// Copies the counters the warps keep into `stats`, but the lanes' block counts.
    fn fill_counts(&self, stats: &mut Stats) {
        for (b, &n) in self
            .ctx
            .program
            .blocks
            .iter()
            .zip(&self.counters.block_execs)
        {
            *stats.block_executions.entry(b.name.clone()).or_insert(0) += n;
        }
        stats.max_stack_depth = self.counters.max_stack_depth;
        let [g, s, l] = self.counters.transactions;
        stats.transactions.global = g;
        stats.transactions.shared = s;
        stats.transactions.local = l;
    }

    fn finish(mut self) -> Stats {
        let mut stats = std::mem::take(&mut self.stats);
        self.fill_counts(&mut stats);
        stats.redundant_block_executions = self.counters.lanes.take().map(|l| l.finish());
        if let (Some(out), Some(log)) = (self.lane_paths.as_deref_mut(), self.counters.paths.take())
        {
            *out = log.finish();
        }
        stats.finish(
            self.ctx.config.sms,
            self.ctx.config.warp_slots,
            self.resident_cycles,
        );
        stats
    }
}

/// What one scan of an SM's warps found.
#[derive(Copy, Clone)]
struct Scan {
    /// The warp to issue, by the policy.
    chosen: Option<usize>,
    /// When the other running warps can issue: their earliest ready cycle if it is later
    /// than the scan's cycle, else some cycle not later (the SM issues again at once, so
    /// which does not matter); `u64::MAX` if none can.
    next_other: u64,
    /// The stall reason of the earliest of those warps, the first in slot order from the
    /// scan's start on ties (meaningful only when `next_other` is later than the scan's
    /// cycle: it is the reason of the cycles the SM then stalls).
    reason_other: StallReason,
}

/// Loose round-robin's choice on `sm` at `now`: it visits the warps from the one after
/// the last and keeps the first ready one, and in the same pass finds when the others
/// can issue, so that one scan per issue suffices. The scan stops at the second ready
/// warp: the SM will issue again in the next cycle, so the other warps' ready cycles and
/// reasons cannot matter. Only when no other warp is ready are they all needed, for the
/// earliest ready cycle and its reason, ties going to the first warp in slot order from
/// the scan's start.
fn pick_lrr(sm: &Sm, now: u64) -> Scan {
    let n = sm.ready.len();
    let start = (sm.last + 1) % n;
    let mut chosen = None;
    // The earliest warp not ready: (ready cycle, slot).
    let mut pending = (u64::MAX, 0usize);
    // Visits slot `w`; true when a second ready warp ends the scan.
    let mut visit = |w: usize, chosen: &mut Option<usize>| -> bool {
        let r = sm.ready[w];
        if r <= now {
            if chosen.is_some() {
                pending = (r, w);
                return true;
            }
            *chosen = Some(w);
        } else if r <= pending.0 && r != u64::MAX {
            // Ties (rare) go to the first slot from `start`.
            let pos = |w: usize| if w >= start { w - start } else { w + n - start };
            if r < pending.0 || pos(w) < pos(pending.1) {
                pending = (r, w);
            }
        }
        false
    };
    for w in (start..n).chain(0..start) {
        if visit(w, &mut chosen) {
            break;
        }
    }
    Scan {
        chosen,
        next_other: pending.0,
        reason_other: if pending.0 == u64::MAX {
            StallReason::Idle
        } else {
            sm.why[pending.1]
        },
    }
}

/// Greedy-then-oldest's next ready cycle and stall reason for `sm` after warp `w`
/// issued at `now`, from the SM's [`ReadyQueue`]: with a warp still ready, the SM issues
/// again in the next cycle; otherwise at the earliest pending cycle, stalling until then
/// for the reason of the warp due then, ties going to the first other than `w` in slot
/// order from `Sm::tie_start` (`w` had been ready, so it ranked after the others).
#[inline]
fn queued_next(sm: &mut Sm, now: u64, w: usize) -> (u64, StallReason) {
    let q = &mut sm.queue;
    if q.any_ready() {
        // Unused: the SM issues again in the next cycle.
        return (now, StallReason::Dependency);
    }
    match q.earliest() {
        None => (u64::MAX, StallReason::Idle),
        // A warp due in the next cycle issues then, so no cycle is charged to a reason.
        Some(m) if m == now + 1 => (m, StallReason::Dependency),
        Some(m) => (m, sm.why[q.first_at(m, sm.tie_start, w)]),
    }
}

/// The fault of `warp` at its current pc, blamed on its first active (else live) lane.
pub(crate) fn fault(ctx: &Ctx<'_>, warp: &Warp, block: [u32; 3], kind: FaultKind) -> EmuError {
    let lanes = if warp.mask != 0 { warp.mask } else { warp.live };
    fault_at(
        ctx,
        warp,
        block,
        kind,
        warp.pc,
        lanes.trailing_zeros().min(63),
    )
}

/// When every live warp of a block waits at a barrier: a barrier-divergence fault if some
/// of the block's threads have returned or its warps wait at different barriers (unless
/// the machine counts a partially reached barrier as reached).
pub(crate) fn check_barrier(
    ctx: &Ctx<'_>,
    warps: &[Warp],
    exited_threads: u32,
    id: [u32; 3],
) -> Result<(), EmuError> {
    let strict = ctx.config.partial_barrier == PartialBarrier::Error;
    let mut first_pc = None;
    let mut mixed = None;
    for w in warps {
        if let WarpState::Barrier(pc) = w.state {
            match first_pc {
                None => first_pc = Some(pc),
                Some(p) if p != pc => mixed = Some((p, pc)),
                _ => {}
            }
        }
    }
    if strict && (exited_threads > 0 || mixed.is_some()) {
        let detail = match mixed {
            Some((a, b)) => format!("warps wait at different barriers (pc {a} and pc {b})"),
            None => format!(
                "{exited_threads} of the block's threads have returned while the others wait"
            ),
        };
        let warp = warps
            .iter()
            .find(|w| matches!(w.state, WarpState::Barrier(_)))
            .unwrap_or(&warps[0]);
        let (pc, lanes) = match warp.state {
            WarpState::Barrier(pc) => (pc, warp.mask),
            _ => (warp.pc, warp.live),
        };
        let lane = lanes.trailing_zeros().min(63);
        return Err(fault_at(
            ctx,
            warp,
            id,
            FaultKind::BarrierDivergence(detail),
            pc,
            lane,
        ));
    }
    Ok(())
}

/// Where `warp`, resident on SM `sm` in thread block `block`, stands.
pub(crate) fn position(ctx: &Ctx<'_>, sm: u32, warp: &Warp, block: [u32; 3]) -> WarpPosition {
    let p = ctx.program;
    let (pc, at_barrier) = match warp.state {
        WarpState::Barrier(pc) => (pc, true),
        _ => (warp.pc, false),
    };
    let pc = pc.min(p.insts.len().saturating_sub(1) as u32);
    WarpPosition {
        sm,
        block,
        first_thread: ctx.thread_id(warp.first_thread),
        active_threads: warp.mask.count_ones(),
        pc,
        pc_label: p.pc_label(pc),
        inst: p.inst_text(pc),
        code_block: p
            .block_of(pc)
            .map_or_else(String::new, |b| p.blocks[b].name.clone()),
        srcloc: p
            .insts
            .get(pc as usize)
            .map(|i| i.srcloc)
            .unwrap_or_default(),
        at_barrier,
        instructions: warp.issued,
    }
}

/// The fault of lane `lane` of `warp` at instruction `pc`.
pub(crate) fn fault_at(
    ctx: &Ctx<'_>,
    warp: &Warp,
    block: [u32; 3],
    kind: FaultKind,
    pc: u32,
    lane: u32,
) -> EmuError {
    let p = ctx.program;
    let pc = pc.min(p.insts.len().saturating_sub(1) as u32);
    EmuError::Fault(Box::new(Fault {
        kind,
        kernel: p.name.clone(),
        block,
        thread: ctx.thread_id(warp.first_thread + lane),
        pc,
        pc_label: p.pc_label(pc),
        inst: p.inst_text(pc),
        code_block: p
            .block_of(pc)
            .map_or_else(String::new, |b| p.blocks[b].name.clone()),
        srcloc: p
            .insts
            .get(pc as usize)
            .map(|i| i.srcloc)
            .unwrap_or_default(),
        source_name: p.source_name.clone(),
    }))
}

/// Blocks per SM: the tightest of the warp-slot, block-slot, register and shared-memory
/// limits; an error naming the limit when not even one block fits.
pub(crate) fn blocks_per_sm(
    program: &Program,
    config: &MachineConfig,
    warps_per_block: usize,
) -> Result<u32, String> {
    let wpb = warps_per_block as u64;
    let regs_per_thread = u64::from(program.num_regs[0]) + 2 * u64::from(program.num_regs[1]);
    let regs_per_block = regs_per_thread * wpb * u64::from(config.warp_width);
    let shared = u64::from(program.shared_size);
    let limits = [
        ("block slots", u64::from(config.block_slots)),
        ("warp slots", u64::from(config.warp_slots) / wpb),
        (
            "registers",
            u64::from(config.registers)
                .checked_div(regs_per_block)
                .unwrap_or(u64::MAX),
        ),
        (
            "shared memory",
            u64::from(config.shared_memory)
                .checked_div(shared)
                .unwrap_or(u64::MAX),
        ),
    ];
    let (name, n) = limits
        .iter()
        .copied()
        .min_by_key(|&(_, n)| n)
        .unwrap_or(("block slots", 1));
    if n == 0 {
        return Err(format!(
            "a block of {wpb} warps ({regs_per_block} registers, {shared} bytes of shared \
             memory) does not fit on an SM: not enough {name}"
        ));
    }
    Ok(n.min(u64::from(u32::MAX)) as u32)
}

/// The bits of the type's value in a register.
pub(crate) fn type_mask(ty: MType) -> u64 {
    match ty {
        MType::Pred => 1,
        MType::I8 => 0xff,
        MType::I16 => 0xffff,
        MType::I32 | MType::F32 => 0xffff_ffff,
        MType::I64 | MType::F64 => u64::MAX,
    }
}
