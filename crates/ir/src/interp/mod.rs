//! The reference interpreter: the executable definition of the IR's semantics.
//!
//! Every target must reproduce what this interpreter computes, for race-free kernels at
//! any warp width; differential tests and fuzzers compare against it. It is therefore
//! written for obviousness, not speed, but avoids per-instruction allocation so it can
//! run real test kernels.
//!
//! # Execution model
//!
//! The grid's blocks run one after another, in linear order (x fastest, then y, then z).
//! Within a block, each thread runs on its own, in linear thread order, until it reaches
//! a `barrier` or returns; then the next thread runs. When no thread can go on, every
//! thread that has not returned must wait at the *same* barrier instruction: then they
//! all pass it and the round repeats. Anything else (some threads returned while others
//! wait, or threads wait at different barriers) is a barrier-divergence error. Threads
//! interleave only at barriers, so atomics are trivially sequentially consistent, and a
//! racy kernel gets one particular, deterministic interleaving.
//!
//! Each block gets a zeroed shared window of [`Function::shared_size`] bytes, each thread
//! a zeroed local window of [`Function::local_size`] bytes. Global memory is the
//! [`GlobalMemory`](crate::launch::GlobalMemory) of the [`PreparedLaunch`].
//!
//! # Faults
//!
//! Out-of-bounds and misaligned accesses, barrier divergence and exceeding the step limit
//! stop the whole launch with an [`InterpError`] that names the kernel, the block and the
//! thread, the instruction as printed, its IR block and its source line. Global memory
//! keeps what was written before the fault.
//!
//! # Preconditions
//!
//! The function must pass the verifier. The interpreter checks cheaply what it can
//! (operand types of each opcode, branch argument counts, a terminator at the end of each
//! block) and reports a `malformed kernel` fault instead of panicking, but a function
//! that uses values it never defined, or entities of another function, may panic.
//!
//! The scalar semantics of each opcode live in [`ops`].

pub mod ops;
#[cfg(test)]
mod tests;

use crate::condcodes::AddrSpace;
use crate::entities::{Block, Inst, LocalVar, SharedVar, Value};
use crate::function::Function;
use crate::instructions::{BlockCall, InstructionData, Opcode};
use crate::launch::memory::{read_le, write_le};
use crate::launch::PreparedLaunch;
use crate::srcloc::SourceLoc;
use crate::types::Type;
use crate::write::{count, inst_to_string};
use core::fmt;
use cranelift_entity::{EntityRef, SecondaryMap};

/// The most bytes of interpreter state (values, local and shared windows) one block may
/// need: keeps an absurd kernel from exhausting the host's memory.
pub const MAX_BLOCK_STATE_BYTES: u64 = 1 << 30;

/// Settings of a run.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct InterpConfig {
    /// Threads per warp; only `lane_id` depends on it. At least 1.
    pub warp_width: u32,
    /// The most instructions all threads together may execute in one launch.
    pub max_steps: u64,
}

impl Default for InterpConfig {
    /// Warps of 32 threads, at most 100 million instructions.
    fn default() -> Self {
        InterpConfig {
            warp_width: 32,
            max_steps: 100_000_000,
        }
    }
}

/// What a run did. Every count is over threads: an instruction executed by 64 threads
/// counts 64 times.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InterpStats {
    /// Instructions executed, terminators and barriers included.
    pub insts_executed: u64,
    /// How many times threads entered each IR block (the entry block once per thread).
    pub block_execs: SecondaryMap<Block, u64>,
    /// How many times the threads of a block passed a barrier together.
    pub barriers: u64,
    /// Thread blocks run.
    pub thread_blocks: u64,
    /// Threads run.
    pub threads: u64,
}

/// The kind of memory access that faulted.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// A `load`.
    Load,
    /// A `store`.
    Store,
    /// An `atomic_rmw` or `atomic_cas`.
    Atomic,
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Access::Load => "load",
            Access::Store => "store",
            Access::Atomic => "atomic",
        })
    }
}

/// What went wrong at an instruction.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FaultKind {
    /// The accessed bytes are not all inside a buffer or window.
    #[error(
        "out-of-bounds {space} {access} of {} at {} ({detail})",
        count(*.size, "byte"),
        Addr(*.addr)
    )]
    OutOfBounds {
        /// The address space.
        space: AddrSpace,
        /// The kind of access.
        access: Access,
        /// Bytes accessed.
        size: u32,
        /// The effective address (address + offset, computed without wrapping).
        addr: i128,
        /// Which buffer or window the access missed.
        detail: String,
    },
    /// The effective address is not a multiple of the access size.
    #[error(
        "misaligned {space} {access} of {} at {}",
        count(*.size, "byte"),
        Addr(*.addr)
    )]
    Misaligned {
        /// The address space.
        space: AddrSpace,
        /// The kind of access.
        access: Access,
        /// Bytes accessed.
        size: u32,
        /// The effective address.
        addr: i128,
    },
    /// The launch executed more instructions than allowed.
    #[error("step limit of {} exceeded", count(*.limit, "instruction"))]
    StepLimit {
        /// The limit.
        limit: u64,
    },
    /// The function is not well formed (it would not pass the verifier).
    #[error("malformed kernel: {0}")]
    Malformed(String),
}

/// A thread's fault at an instruction, with everything needed to find it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{kind} in kernel %{kernel}, block {}, thread {}, at {}",
    Xyz(self.block),
    Xyz(self.thread),
    Where(self.srcloc, &self.inst, self.ir_block)
)]
pub struct Fault {
    /// What went wrong.
    pub kind: FaultKind,
    /// The kernel.
    pub kernel: String,
    /// The thread block's id.
    pub block: [u32; 3],
    /// The thread's id within its block.
    pub thread: [u32; 3],
    /// The instruction, as printed.
    pub inst: String,
    /// The IR block holding the instruction.
    pub ir_block: Block,
    /// The instruction's source location.
    pub srcloc: SourceLoc,
}

/// Why a run stopped early.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InterpError {
    /// A thread faulted at an instruction.
    #[error(transparent)]
    Fault(Box<Fault>),
    /// The threads of a block did not all reach the same barrier.
    #[error("barrier divergence in kernel %{kernel}, block {}: {detail}", Xyz(*.block))]
    BarrierDivergence {
        /// The kernel.
        kernel: String,
        /// The thread block's id.
        block: [u32; 3],
        /// Which threads wait where, and which have returned.
        detail: String,
    },
    /// The launch does not fit the kernel or the configuration is invalid.
    #[error("cannot run kernel %{kernel}: {message}")]
    Setup {
        /// The kernel.
        kernel: String,
        /// What is wrong.
        message: String,
    },
}

/// Prints `(x,y,z)`.
struct Xyz([u32; 3]);

impl fmt::Display for Xyz {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({},{},{})", self.0[0], self.0[1], self.0[2])
    }
}

/// Prints an address in hexadecimal, with a sign when negative.
struct Addr(i128);

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 < 0 {
            write!(f, "-{:#x}", self.0.unsigned_abs())
        } else {
            write!(f, "{:#x}", self.0)
        }
    }
}

/// Prints `14:5 `v9 = ...` in block2`, leaving out an unknown location.
struct Where<'a>(SourceLoc, &'a String, Block);

impl fmt::Display for Where<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.0.is_unknown() {
            write!(f, "{} ", self.0)?;
        }
        write!(f, "`{}` in {}", self.1, self.2)
    }
}

/// Runs `func` on the grid of `launch`, updating its global memory.
///
/// ```
/// use warplift_ir::interp::{run, InterpConfig};
/// use warplift_ir::launch::Launch;
/// use warplift_ir::parser::parse_function;
///
/// let func = parse_function(
///     "kernel %lanes(out: i64) {
///      block0(v0: i64):
///          v1 = thread_id x
///          v2 = lane_id
///          v3 = uextend.i64 v1
///          v4 = iconst.i64 2
///          v5 = ishl v3, v4
///          v6 = iadd v0, v5
///          store global v2, v6
///          return
///      }",
/// )?;
/// let launch = Launch::builder().block(6).zeros::<i32>("out", 6).build();
/// let mut prepared = launch.prepare(&func)?;
/// let config = InterpConfig { warp_width: 4, ..InterpConfig::default() };
/// let stats = run(&func, &mut prepared, &config)?;
/// assert_eq!(prepared.memory.read_buffer::<i32>("out")?, [0, 1, 2, 3, 0, 1]);
/// assert_eq!(stats.threads, 6);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run(
    func: &Function,
    launch: &mut PreparedLaunch,
    config: &InterpConfig,
) -> Result<InterpStats, InterpError> {
    let mut machine = Machine::new(func, launch, config)?;
    machine.run_grid()?;
    Ok(machine.stats)
}

/// What [`run_with_paths`] hands every finished thread block's paths to.
pub type PathObserver<'a> = dyn FnMut(&[Vec<Block>]) + 'a;

/// Runs like [`run`], recording the IR blocks every thread enters, in order: when a thread
/// block finishes, `observe` gets one path per thread (by linear thread index within the
/// block, so consecutive `warp_width` paths are one warp's lanes). For models of the SIMT
/// machine over the IR's own CFG, such as the reconvergence-stack depth of
/// [`crate::cfg::ipdom_stack`]; a run through [`run`] records nothing.
pub fn run_with_paths<'a>(
    func: &'a Function,
    launch: &'a mut PreparedLaunch,
    config: &InterpConfig,
    observe: &'a mut PathObserver<'a>,
) -> Result<InterpStats, InterpError> {
    let mut machine = Machine::new(func, launch, config)?;
    machine.paths = Some(vec![Vec::new(); machine.nthreads]);
    machine.observe = Some(observe);
    machine.run_grid()?;
    Ok(machine.stats)
}

/// Where a thread stands.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Status {
    /// It can run on.
    Running,
    /// It waits at this barrier.
    AtBarrier(Inst),
    /// It has returned.
    Done,
}

/// One thread's program counter and status.
#[derive(Copy, Clone, Debug)]
struct Thread {
    block: Block,
    index: usize,
    status: Status,
}

/// A resolved memory location.
#[derive(Copy, Clone, Debug)]
enum Loc {
    /// Buffer index and byte offset.
    Global(usize, usize),
    /// Byte offset in the block's shared window.
    Shared(usize),
    /// Byte offset in the whole local array (thread window already added).
    Local(usize),
}

/// The state of one launch.
struct Machine<'a> {
    func: &'a Function,
    launch: &'a mut PreparedLaunch,
    config: InterpConfig,
    entry: Block,
    /// Threads per block.
    nthreads: usize,
    /// Values per thread.
    nvals: usize,
    /// Every thread's values: thread `t`'s value `v` is at `t * nvals + v`.
    vals: Vec<u64>,
    threads: Vec<Thread>,
    shared: Vec<u8>,
    /// Every thread's local window, `local_size` bytes each.
    local: Vec<u8>,
    local_size: usize,
    shared_offsets: SecondaryMap<SharedVar, u32>,
    local_offsets: SecondaryMap<LocalVar, u32>,
    /// Branch arguments are read before any parameter is written (a parallel copy).
    scratch: Vec<u64>,
    block_id: [u32; 3],
    stats: InterpStats,
    /// Each thread's blocks so far, when [`run_with_paths`] asked for them.
    paths: Option<Vec<Vec<Block>>>,
    /// Who gets the paths of each finished thread block.
    observe: Option<&'a mut PathObserver<'a>>,
}

impl<'a> Machine<'a> {
    fn new(
        func: &'a Function,
        launch: &'a mut PreparedLaunch,
        config: &InterpConfig,
    ) -> Result<Self, InterpError> {
        let setup = |message: String| InterpError::Setup {
            kernel: func.name.clone(),
            message,
        };
        if config.warp_width == 0 {
            return Err(setup("the warp width must be at least 1".into()));
        }
        crate::launch::check_geometry(launch.grid, launch.block)
            .map_err(|e| setup(e.to_string()))?;
        let entry = func
            .entry_block()
            .ok_or_else(|| setup("the kernel has no blocks".into()))?;
        let nparams = func.dfg.block_params(entry).len();
        if nparams != launch.args.len() || nparams != func.signature.params.len() {
            return Err(setup(format!(
                "the kernel takes {}, the launch binds {}",
                count(func.signature.params.len(), "parameter"),
                launch.args.len()
            )));
        }
        let nthreads = launch.threads_per_block() as usize;
        let nvals = func.dfg.num_values();
        let local_size = func.local_size() as usize;
        let shared_size = func.shared_size() as usize;
        let state = (nthreads as u64) * (nvals as u64 * 8 + local_size as u64) + shared_size as u64;
        if state > MAX_BLOCK_STATE_BYTES {
            return Err(setup(format!(
                "a block would need {state} bytes of interpreter state (at most \
                 {MAX_BLOCK_STATE_BYTES})"
            )));
        }
        Ok(Machine {
            func,
            launch,
            config: *config,
            entry,
            nthreads,
            nvals,
            vals: vec![0; nthreads * nvals],
            threads: vec![
                Thread {
                    block: entry,
                    index: 0,
                    status: Status::Running,
                };
                nthreads
            ],
            shared: vec![0; shared_size],
            local: vec![0; nthreads * local_size],
            local_size,
            shared_offsets: func.shared_offsets(),
            local_offsets: func.local_offsets(),
            scratch: Vec::new(),
            block_id: [0; 3],
            stats: InterpStats::default(),
            paths: None,
            observe: None,
        })
    }

    fn run_grid(&mut self) -> Result<(), InterpError> {
        // The block count may exceed a u64 (up to about 2^93 blocks); the step limit,
        // not the count, bounds how many run.
        let [gx, gy, _] = self.launch.grid.map(u128::from);
        for linear in 0..self.launch.num_blocks() {
            // Each grid dimension fits in an i32, so the ids fit in a u32.
            self.block_id = [
                (linear % gx) as u32,
                (linear / gx % gy) as u32,
                (linear / (gx * gy)) as u32,
            ];
            self.run_block()?;
        }
        Ok(())
    }

    fn run_block(&mut self) -> Result<(), InterpError> {
        self.stats.thread_blocks += 1;
        self.stats.threads += self.nthreads as u64;
        self.shared.fill(0);
        self.local.fill(0);
        self.vals.fill(0);
        let params = self.func.dfg.block_params(self.entry);
        for t in 0..self.nthreads {
            let base = t * self.nvals;
            for (&p, &arg) in params.iter().zip(&self.launch.args) {
                let ty = self.func.dfg.value_type(p);
                self.vals[base + p.index()] = arg & ty.mask();
            }
            self.threads[t] = Thread {
                block: self.entry,
                index: 0,
                status: Status::Running,
            };
        }
        self.stats.block_execs[self.entry] += self.nthreads as u64;
        if let Some(paths) = &mut self.paths {
            for p in paths.iter_mut() {
                p.clear();
                p.push(self.entry);
            }
        }
        loop {
            for t in 0..self.nthreads {
                if self.threads[t].status == Status::Running {
                    self.run_thread(t)?;
                }
            }
            let first_wait = self.threads.iter().find_map(|th| match th.status {
                Status::AtBarrier(inst) => Some(inst),
                _ => None,
            });
            let Some(barrier) = first_wait else {
                // Every thread has returned.
                if let (Some(paths), Some(observe)) = (&self.paths, &mut self.observe) {
                    observe(paths);
                }
                return Ok(());
            };
            if self
                .threads
                .iter()
                .all(|th| th.status == Status::AtBarrier(barrier))
            {
                self.stats.barriers += 1;
                for th in &mut self.threads {
                    th.status = Status::Running;
                }
            } else {
                return Err(self.divergence());
            }
        }
    }

    /// Describes which threads wait at which barrier and which have returned.
    fn divergence(&self) -> InterpError {
        const SHOWN: usize = 4;
        let mut groups: Vec<(Status, Vec<usize>)> = Vec::new();
        for (t, th) in self.threads.iter().enumerate() {
            match groups.iter_mut().find(|(s, _)| *s == th.status) {
                Some((_, ts)) => ts.push(t),
                None => groups.push((th.status, vec![t])),
            }
        }
        let parts: Vec<String> = groups
            .iter()
            .map(|(status, ts)| {
                let mut names: Vec<String> = ts
                    .iter()
                    .take(SHOWN)
                    .map(|&t| Xyz(self.thread_id(t)).to_string())
                    .collect();
                if ts.len() > SHOWN {
                    names.push(format!("{} more", ts.len() - SHOWN));
                }
                let who = format!(
                    "thread{} {}",
                    if ts.len() == 1 { "" } else { "s" },
                    names.join(", ")
                );
                match *status {
                    Status::AtBarrier(inst) => {
                        let ir_block = self.func.layout.inst_block(inst);
                        let place = match ir_block {
                            Some(b) => {
                                Where(self.func.srclocs[inst], &inst_to_string(self.func, inst), b)
                                    .to_string()
                            }
                            None => inst_to_string(self.func, inst),
                        };
                        let verb = if ts.len() == 1 { "waits" } else { "wait" };
                        format!("{who} {verb} at {place}")
                    }
                    Status::Done => format!("{who} returned"),
                    Status::Running => format!("{who} still running"),
                }
            })
            .collect();
        InterpError::BarrierDivergence {
            kernel: self.func.name.clone(),
            block: self.block_id,
            detail: parts.join("; "),
        }
    }

    /// The `(x, y, z)` id of linear thread `t`.
    fn thread_id(&self, t: usize) -> [u32; 3] {
        let [bx, by, _] = self.launch.block.map(|d| d as usize);
        [
            (t % bx) as u32,
            (t / bx % by) as u32,
            (t / (bx * by)) as u32,
        ]
    }

    fn fault(&self, t: usize, inst: Inst, kind: FaultKind) -> InterpError {
        InterpError::Fault(Box::new(Fault {
            kind,
            kernel: self.func.name.clone(),
            block: self.block_id,
            thread: self.thread_id(t),
            inst: inst_to_string(self.func, inst),
            ir_block: self.threads[t].block,
            srcloc: self.func.srclocs[inst],
        }))
    }

    /// Runs thread `t` until it waits at a barrier, returns or faults.
    fn run_thread(&mut self, t: usize) -> Result<(), InterpError> {
        let func = self.func;
        let base = t * self.nvals;
        loop {
            let Thread { block, index, .. } = self.threads[t];
            let Some(&inst) = func.layout.block_insts(block).get(index) else {
                // Only an unverified function runs off the end of a block; blame its last
                // instruction if it has one.
                let msg = format!("{block} does not end with a terminator");
                return Err(match func.layout.last_inst(block) {
                    Some(last) => self.fault(t, last, FaultKind::Malformed(msg)),
                    None => InterpError::Setup {
                        kernel: func.name.clone(),
                        message: msg,
                    },
                });
            };
            if self.stats.insts_executed >= self.config.max_steps {
                let limit = self.config.max_steps;
                return Err(self.fault(t, inst, FaultKind::StepLimit { limit }));
            }
            self.stats.insts_executed += 1;
            self.threads[t].index += 1;
            match self.step(t, base, inst) {
                Ok(Flow::Next) => {}
                Ok(Flow::Stop) => return Ok(()),
                Err(kind) => return Err(self.fault(t, inst, kind)),
            }
        }
    }

    #[inline]
    fn val(&self, base: usize, v: Value) -> u64 {
        self.vals[base + v.index()]
    }

    #[inline]
    fn ty(&self, v: Value) -> Type {
        self.func.dfg.value_type(v)
    }

    /// Executes one instruction of thread `t` (whose values start at `base`); the pc has
    /// already moved past it.
    fn step(&mut self, t: usize, base: usize, inst: Inst) -> Result<Flow, FaultKind> {
        let func = self.func;
        let malformed = || FaultKind::Malformed(format!("operand types not accepted by {inst}"));
        let result = func.dfg.inst_result(inst);
        let result_ty = result.map(|r| func.dfg.value_type(r));
        let value: u64 = match &func.dfg.insts[inst] {
            InstructionData::UnaryImm { imm, .. } => *imm & result_ty.map_or(u64::MAX, Type::mask),
            InstructionData::FloatConst { opcode, bits } => match opcode {
                Opcode::F32const => bits & 0xffff_ffff,
                _ => *bits,
            },
            InstructionData::Unary { opcode, arg } => {
                let from = self.ty(*arg);
                let to = result_ty.unwrap_or(from);
                ops::unary(*opcode, from, to, self.val(base, *arg)).ok_or_else(malformed)?
            }
            InstructionData::Binary { opcode, args } => {
                let ty = self.ty(args[0]);
                let (a, b) = (self.val(base, args[0]), self.val(base, args[1]));
                ops::binary(*opcode, ty, a, b).ok_or_else(malformed)?
            }
            InstructionData::Ternary { opcode, args } => {
                let [a, b, c] = args.map(|v| self.val(base, v));
                match opcode {
                    Opcode::Select => {
                        if a & 1 != 0 {
                            b
                        } else {
                            c
                        }
                    }
                    _ => ops::ternary(*opcode, self.ty(args[0]), a, b, c).ok_or_else(malformed)?,
                }
            }
            InstructionData::IntCompare { cond, args, .. } => {
                let ty = self.ty(args[0]);
                u64::from(ops::icmp(
                    *cond,
                    ty,
                    self.val(base, args[0]),
                    self.val(base, args[1]),
                ))
            }
            InstructionData::FloatCompare { cond, args, .. } => {
                let ty = self.ty(args[0]);
                let (a, b) = (self.val(base, args[0]), self.val(base, args[1]));
                u64::from(ops::fcmp(*cond, ty, a, b).ok_or_else(malformed)?)
            }
            InstructionData::Geometry { opcode, dim } => {
                let d = dim.index();
                u64::from(match opcode {
                    Opcode::ThreadId => self.thread_id(t)[d],
                    Opcode::BlockId => self.block_id[d],
                    Opcode::BlockDim => self.launch.block[d],
                    _ => self.launch.grid[d],
                })
            }
            InstructionData::Nullary { opcode } => match opcode {
                Opcode::LaneId => (t as u64) % u64::from(self.config.warp_width),
                Opcode::Barrier => {
                    self.threads[t].status = Status::AtBarrier(inst);
                    return Ok(Flow::Stop);
                }
                _ => {
                    self.threads[t].status = Status::Done;
                    return Ok(Flow::Stop);
                }
            },
            InstructionData::Load {
                space, arg, offset, ..
            } => {
                let ty = result_ty.ok_or_else(malformed)?;
                let size = ty.bytes();
                let loc =
                    self.locate(t, *space, self.val(base, *arg), *offset, size, Access::Load)?;
                let bits = self.read(loc, size);
                if ty.is_bool() {
                    u64::from(bits != 0)
                } else {
                    bits
                }
            }
            InstructionData::Store {
                space,
                args,
                offset,
                ..
            } => {
                let ty = self.ty(args[0]);
                let size = ty.bytes();
                let value = self.val(base, args[0]);
                let loc = self.locate(
                    t,
                    *space,
                    self.val(base, args[1]),
                    *offset,
                    size,
                    Access::Store,
                )?;
                self.write(loc, size, if ty.is_bool() { value & 1 } else { value });
                return Ok(Flow::Next);
            }
            InstructionData::AtomicRmw {
                op,
                space,
                args,
                offset,
                ..
            } => {
                let ty = self.ty(args[1]);
                if !matches!(ty, Type::I32 | Type::I64) {
                    return Err(malformed());
                }
                let size = ty.bytes();
                let loc = self.locate(
                    t,
                    *space,
                    self.val(base, args[0]),
                    *offset,
                    size,
                    Access::Atomic,
                )?;
                let old = self.read(loc, size);
                let new = ops::atomic_rmw(*op, ty, old, self.val(base, args[1]));
                self.write(loc, size, new);
                old
            }
            InstructionData::AtomicCas {
                space,
                args,
                offset,
                ..
            } => {
                let ty = self.ty(args[1]);
                if !matches!(ty, Type::I32 | Type::I64) {
                    return Err(malformed());
                }
                let size = ty.bytes();
                let loc = self.locate(
                    t,
                    *space,
                    self.val(base, args[0]),
                    *offset,
                    size,
                    Access::Atomic,
                )?;
                let old = self.read(loc, size);
                if old == self.val(base, args[1]) {
                    self.write(loc, size, self.val(base, args[2]));
                }
                old
            }
            InstructionData::SharedAddr { var, .. } => u64::from(self.shared_offsets[*var]),
            InstructionData::LocalAddr { var, .. } => u64::from(self.local_offsets[*var]),
            InstructionData::Jump { dest, .. } => {
                self.take(t, base, dest)?;
                return Ok(Flow::Next);
            }
            InstructionData::Brif { arg, dests, .. } => {
                let which = if self.val(base, *arg) & 1 != 0 { 0 } else { 1 };
                self.take(t, base, &dests[which])?;
                return Ok(Flow::Next);
            }
            InstructionData::BrTable { arg, dests, .. } => {
                // The index is an unsigned i32; dests[0] is the default.
                let index = self.val(base, *arg) & 0xffff_ffff;
                let dest = usize::try_from(index)
                    .ok()
                    .and_then(|i| dests.get(i.checked_add(1)?))
                    .or(dests.first())
                    .ok_or_else(|| FaultKind::Malformed("br_table without destinations".into()))?;
                self.take(t, base, dest)?;
                return Ok(Flow::Next);
            }
        };
        if let Some(r) = result {
            self.vals[base + r.index()] = value;
        }
        Ok(Flow::Next)
    }

    /// Moves thread `t` to `call`'s block, passing its arguments.
    fn take(&mut self, t: usize, base: usize, call: &BlockCall) -> Result<(), FaultKind> {
        let params = self.func.dfg.block_params(call.block);
        if params.len() != call.args.len() {
            return Err(FaultKind::Malformed(format!(
                "{} takes {}, {} given",
                call.block,
                count(params.len(), "argument"),
                call.args.len()
            )));
        }
        self.scratch.clear();
        for &a in &call.args {
            self.scratch.push(self.vals[base + a.index()]);
        }
        for (&p, &v) in params.iter().zip(&self.scratch) {
            self.vals[base + p.index()] = v;
        }
        self.threads[t] = Thread {
            block: call.block,
            index: 0,
            status: Status::Running,
        };
        self.stats.block_execs[call.block] += 1;
        if let Some(paths) = &mut self.paths {
            paths[t].push(call.block);
        }
        Ok(())
    }

    /// Resolves the `size` bytes at `addr + offset` in `space` for thread `t`, checking
    /// bounds, then alignment.
    fn locate(
        &self,
        t: usize,
        space: AddrSpace,
        addr: u64,
        offset: i32,
        size: u32,
        access: Access,
    ) -> Result<Loc, FaultKind> {
        let oob = |eff: i128, detail: String| FaultKind::OutOfBounds {
            space,
            access,
            size,
            addr: eff,
            detail,
        };
        let (eff, loc) = match space {
            AddrSpace::Global => {
                let eff = i128::from(addr) + i128::from(offset);
                let Ok(a) = u64::try_from(eff) else {
                    return Err(oob(eff, "outside the address space".into()));
                };
                let (b, off) = self
                    .launch
                    .memory
                    .find(a, size)
                    .map_err(|e| oob(eff, e.to_string()))?;
                (eff, Loc::Global(b, off))
            }
            AddrSpace::Shared | AddrSpace::Local => {
                // Shared and local addresses are unsigned 32-bit offsets into the window.
                let eff = i128::from(addr as u32) + i128::from(offset);
                let window = if space == AddrSpace::Shared {
                    self.shared.len()
                } else {
                    self.local_size
                };
                if eff < 0 || eff + i128::from(size) > window as i128 {
                    let window = count(window, "byte");
                    return Err(oob(eff, format!("the {space} window is {window}")));
                }
                let off = eff as usize;
                let loc = if space == AddrSpace::Shared {
                    Loc::Shared(off)
                } else {
                    Loc::Local(t * self.local_size + off)
                };
                (eff, loc)
            }
        };
        if eff % i128::from(size) != 0 {
            return Err(FaultKind::Misaligned {
                space,
                access,
                size,
                addr: eff,
            });
        }
        Ok(loc)
    }

    fn read(&self, loc: Loc, size: u32) -> u64 {
        let n = size as usize;
        match loc {
            Loc::Global(b, off) => read_le(&self.launch.memory.buffers[b].bytes[off..off + n]),
            Loc::Shared(off) => read_le(&self.shared[off..off + n]),
            Loc::Local(off) => read_le(&self.local[off..off + n]),
        }
    }

    fn write(&mut self, loc: Loc, size: u32, bits: u64) {
        let n = size as usize;
        let bytes = match loc {
            Loc::Global(b, off) => &mut self.launch.memory.buffers[b].bytes[off..off + n],
            Loc::Shared(off) => &mut self.shared[off..off + n],
            Loc::Local(off) => &mut self.local[off..off + n],
        };
        write_le(bytes, bits);
    }
}

/// What a thread does after an instruction.
enum Flow {
    /// Runs on.
    Next,
    /// Stops: at a barrier or returned.
    Stop,
}
