//! A warp: its registers, its active mask and reconvergence stack, and the execution of
//! one instruction for all its lanes.
//!
//! # Data layout
//!
//! Registers are stored structure-of-arrays: `b32` registers as one `u32` per lane and
//! `b64` registers as one `u64` per lane (register `r`'s lanes at `r * width ..`),
//! predicates as one bit mask per register (bit `l` is lane `l`'s value). An instruction
//! is dispatched once per warp: the frequent 32-bit operations ([`Simple`], decoded once
//! per run) are computed on the registers in place, by loops compiled for each kind of
//! source operand (register or immediate) and, separately, for width 32; the others have
//! their operands gathered into lane arrays. Either way one loop over the lanes computes
//! the results with the operation chosen before the loop, and the results are written
//! back under the lanes it acts in. Results are computed for inactive lanes too (every arithmetic
//! operation is total, so that is harmless and keeps the loop branch-free); memory
//! operations visit only their acting lanes.
//!
//! # Reconvergence (IPDOM stack)
//!
//! Each stack entry is `(block, reconvergence block, mask)`; the top entry is what the
//! warp executes. A branch that splits the active lanes turns the top entry into the
//! waiting entry of the reconvergence block, and pushes the not-taken lanes, then the
//! taken lanes (so the taken side runs first), both with that reconvergence block. When
//! the top entry reaches its reconvergence block, or all its lanes have returned, it is
//! popped and the entry below resumes. Threads that split at an unstructured branch thus
//! meet only at its immediate post-dominator, and blocks between may run once per group:
//! the redundant executions that the statistics count.
//!
//! A branch the code generator marked uniform must never split the active lanes (its
//! condition was proven the same in all of them); when it does, the warp faults with
//! [`FaultKind::UniformBranchDiverged`] rather than guess a direction, so that every
//! run checks the divergence analysis.
//!
//! # Semantics
//!
//! Every operation computes what the IR operation of the same meaning computes, through
//! the scalar rules of [`warplift_ir::interp::ops`]. The most frequent integer and `f32`
//! operations have their own loops (tested against those rules), the others call the
//! rules lane by lane.

use crate::error::FaultKind;
use crate::global::Global;
use crate::machine::{type_mask, Counters, Ctx, Meta, WarpState, CHECKS};
use crate::stats::StallReason;
use warplift_ir::interp::ops;
use warplift_ir::interp::Access;
use warplift_ir::launch::memory::{load_le, store_le};
use warplift_ir::{AddrSpace, IntCC};
use warplift_simt::{
    Address, BinOp, Cond, CvtOp, Guard, MType, Op, Operand, Reg, RegClass, SpecialReg, UnOp,
};

// Evaluates `$body` with `$x` bound to the `Lanes32` of the `Src32` `$src`: once as a
// register, once as an immediate, so that the lane loops in `$body` are compiled for
// each kind.
macro_rules! with_src {
    ($src:expr, |$x:ident| $body:expr) => {
        match $src {
            Src32::Reg(r) => {
                let $x = RegLanes(r);
                $body
            }
            Src32::Imm(v) => {
                let $x = ImmLanes(v);
                $body
            }
        }
    };
}

/// A fault, with the lane that caused it when one did.
pub(crate) type LaneFault = (Option<u32>, FaultKind);

/// "No block" / "no register" / "reconverge only at exit".
pub(crate) const NONE: u32 = u32::MAX;

/// The most lanes of a warp.
pub(crate) const MAX_LANES: usize = 64;

/// One value per lane.
pub(crate) type Lanes = [u64; MAX_LANES];

/// Lane arrays reused by every instruction, so that none allocates or clears memory.
pub(crate) struct Scratch {
    a: Lanes,
    b: Lanes,
    c: Lanes,
    r: Lanes,
    /// Resolved byte offsets of a memory access, per lane.
    loc: [usize; MAX_LANES],
    /// Global buffer of each lane's access.
    buf: [u32; MAX_LANES],
    /// Segment or bank keys, for transaction counting.
    keys: [u64; MAX_LANES],
    /// Results of a 32-bit operation, before they are written to their register.
    out32: [u32; MAX_LANES],
}

impl Scratch {
    pub(crate) fn new() -> Box<Scratch> {
        Box::new(Scratch {
            a: [0; MAX_LANES],
            b: [0; MAX_LANES],
            c: [0; MAX_LANES],
            r: [0; MAX_LANES],
            loc: [0; MAX_LANES],
            buf: [0; MAX_LANES],
            keys: [0; MAX_LANES],
            out32: [0; MAX_LANES],
        })
    }
}

/// An entry of the reconvergence stack.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The block to run (or being run, for the top entry).
    pub block: u32,
    /// The block where the entry's lanes rejoin the entry below ([`NONE`]: at exit).
    pub rpc: u32,
    /// The entry's lanes.
    pub mask: u64,
}

/// A stretch of one warp in one block, for the trace.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Span {
    pub block: u32,
    pub start: u64,
    pub end: u64,
    pub lanes: u32,
}

/// What an instruction did to the warp's control.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Goes on with the next instruction.
    Next,
    /// Moved to another block.
    Transfer,
    /// Waits at a barrier.
    Barrier,
    /// This many threads ended (the warp may go on with others, or be done).
    Exit(u32),
}

/// An instruction the warp executes in place on its `b32` registers, with no effect on
/// control, memory or counters but the instruction counts, and no fault: the frequent
/// 32-bit integer operations. Decoded once per run from the program (see
/// [`Decoded::new`]), with register operands as offsets of their lanes in the warp's
/// `r32`, so that executing one is a single match and a loop over the lanes.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Simple {
    /// Any other instruction: [`Warp::step`] executes it in full.
    No,
    /// `bin.OP.i32 d, a, b`, for the operations of [`fast32`].
    Bin {
        op: BinOp,
        d: usize,
        a: usize,
        b: Src32,
    },
    /// `mad.i32 d, a, b, c`.
    Mad {
        d: usize,
        a: usize,
        b: Src32,
        c: Src32,
    },
    /// `mov.i32 d, s` or `mov.f32 d, s`.
    Mov { d: usize, s: Src32 },
    /// `setp.CC.i32 p, a, b` (`p` the predicate register's index).
    Setp {
        cc: IntCC,
        p: usize,
        a: usize,
        b: Src32,
    },
}

/// An instruction's [`Simple`] form and guard.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Decoded {
    pub guard: Option<Guard>,
    pub kind: Simple,
}

impl Decoded {
    /// The form of `inst` at warp width `w`.
    pub(crate) fn new(inst: &crate::program::Inst, w: usize) -> Decoded {
        let lanes = |r: Reg| r.index() as usize * w;
        let src = |o: Operand| match o {
            Operand::Reg(r) => Src32::Reg(lanes(r)),
            Operand::Imm(v) => Src32::Imm(v as u32),
        };
        let kind = match inst.op {
            Op::Bin {
                op,
                ty: MType::I32,
                dst,
                a,
                b,
            } if fast32(op) => Simple::Bin {
                op,
                d: lanes(dst),
                a: lanes(a),
                b: src(b),
            },
            Op::Mad {
                ty: MType::I32,
                dst,
                a,
                b,
                c,
            } => Simple::Mad {
                d: lanes(dst),
                a: lanes(a),
                b: src(b),
                c: src(c),
            },
            Op::Setp {
                cond: Cond::Int(cc),
                ty: MType::I32,
                dst,
                a,
                b,
            } => Simple::Setp {
                cc,
                p: dst.index() as usize,
                a: lanes(a),
                b: src(b),
            },
            Op::Mov {
                ty: MType::I32 | MType::F32,
                dst,
                src: s,
            } => Simple::Mov {
                d: lanes(dst),
                s: src(s),
            },
            _ => Simple::No,
        };
        Decoded {
            guard: inst.guard,
            kind,
        }
    }
}

/// A global load or store of 4- or 8-byte words with a base register (and, for a store, a
/// register source): the accesses that [`Warp::global_run`] may perform as one run of
/// words, with their register operands as offsets of their lanes.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Words {
    /// A store (else a load).
    pub store: bool,
    /// 8-byte words in `b64` registers (else 4-byte words in `b32` registers).
    pub wide: bool,
    /// The lanes of the register loaded or stored, in `r32` (4-byte words) or `r64`.
    pub reg: usize,
    /// The lanes of the base register, in `r64`.
    pub base: usize,
    /// The byte offset added to the base.
    pub offset: i32,
}

impl Words {
    /// The form of `op` at warp width `w`, when it is such an access.
    #[inline(always)]
    pub(crate) fn of(op: &Op, w: usize) -> Option<Words> {
        let (store, ty, addr, reg) = match *op {
            Op::Ld {
                space: AddrSpace::Global,
                ty,
                dst,
                addr,
            } => (false, ty, addr, dst),
            // A store of an immediate is rare: the lane-by-lane path does it.
            Op::St {
                space: AddrSpace::Global,
                ty,
                src: Operand::Reg(s),
                addr,
            } => (true, ty, addr, s),
            _ => return None,
        };
        let wide = match (ty.bytes(), ty.class()) {
            (4, RegClass::B32) => false,
            (8, RegClass::B64) => true,
            _ => return None,
        };
        Some(Words {
            store,
            wide,
            reg: reg.index() as usize * w,
            base: addr.base?.index() as usize * w,
            offset: addr.offset,
        })
    }
}

/// What a functional run's loop over a warp's instructions ([`Warp::run_fast`]) does with
/// an instruction that is not [`Simple`]: decoded once per run, so that the memory-bound
/// code of a loop (a load, some arithmetic, a store, the loop branch) runs in that loop
/// without returning to the block loop per instruction.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Fast {
    /// Anything else: the loop stops before it, and [`Warp::step`] executes it.
    Stop,
    /// A global load or store, executed as one run of words when it is one (and else
    /// left to [`Warp::step`]).
    Words(Words),
    /// `br.uni` or `br.div` on predicate `pred` (`negated`), to the blocks `taken` and
    /// `not_taken`: when the active lanes all go one way it is taken here, else
    /// [`Warp::branch`] splits them (or faults).
    Branch {
        pred: u32,
        negated: bool,
        taken: u32,
        not_taken: u32,
    },
}

impl Fast {
    /// The form of `inst` of `program` at warp width `w`.
    pub(crate) fn new(
        program: &crate::program::Program,
        inst: &crate::program::Inst,
        w: usize,
    ) -> Fast {
        match inst.op {
            Op::BrUni {
                cond,
                taken,
                not_taken,
            }
            | Op::BrDiv {
                cond,
                taken,
                not_taken,
                ..
            } => Fast::Branch {
                pred: cond.pred.index(),
                negated: cond.negated,
                taken: program.block_at(taken),
                not_taken: program.block_at(not_taken),
            },
            ref op => Words::of(op, w).map_or(Fast::Stop, Fast::Words),
        }
    }
}

/// The instructions [`Warp::run_fast`] executed: how many, and the lanes that acted and
/// that were active in them, summed.
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct Ran {
    pub insts: u64,
    pub acted: u64,
    pub active: u64,
}

/// The mask of the first `w` lanes.
#[inline]
pub(crate) fn lanes_mask(w: usize) -> u64 {
    if w >= 64 {
        u64::MAX
    } else {
        (1u64 << w) - 1
    }
}

/// One warp in a warp slot.
pub(crate) struct Warp {
    /// `b32` and `b64` registers, `[register][lane]`.
    r32: Vec<u32>,
    r64: Vec<u64>,
    /// Predicate registers, one lane mask each.
    preds: Vec<u64>,
    /// Scoreboard: per register (all classes, flattened), `ready cycle << 1 | from memory`.
    ready: Vec<u64>,
    stack: Vec<Entry>,
    /// The next instruction.
    pub pc: u32,
    /// Active lanes.
    pub mask: u64,
    /// How many: counted once per block entry rather than once per instruction (the
    /// processor may have no population-count instruction).
    active_lanes: u32,
    /// Lanes whose thread has ended.
    exited: u64,
    /// Lanes holding a thread.
    pub live: u64,
    pub state: WarpState,
    /// The first cycle the next instruction can issue.
    pub ready_at: u64,
    /// Why it cannot issue before `ready_at`.
    pub reason: StallReason,
    /// The block slot of its thread block.
    pub cta: usize,
    /// Linear index (in the block) of lane 0's thread.
    pub first_thread: u32,
    /// The id of its thread block in the grid.
    pub block_id: [u32; 3],
    /// Local memory, `local_size` bytes per lane.
    local: Vec<u8>,
    /// Placement order, for greedy-then-oldest.
    pub age: u64,
    /// The global buffer of the warp's last whole-warp run of words (see
    /// [`Warp::global_run`]), tried first by the next.
    buf_hint: Option<usize>,
    /// Instructions issued since the warp started (for the runaway budget).
    pub issued: u64,
    /// Whether a block entry has anything to record: a trace's spans, or the lanes' block
    /// counts (`Counters::lanes`). One flag, so that the warp is laid out as it is without
    /// the recorders and a run without them pays one test per block entry.
    observed: bool,
    cur: Span,
    /// Finished spans, drained by the machine when tracing.
    pub spans: Vec<Span>,
}

impl Warp {
    pub(crate) fn new(ctx: &Ctx<'_>) -> Warp {
        let w = ctx.width;
        let n = ctx.program.num_regs;
        Warp {
            r32: vec![0; n[0] as usize * w],
            r64: vec![0; n[1] as usize * w],
            preds: vec![0; n[2] as usize],
            ready: vec![0; ctx.meta.scoreboard_len],
            stack: Vec::new(),
            pc: 0,
            mask: 0,
            active_lanes: 0,
            exited: 0,
            live: 0,
            state: WarpState::Free,
            ready_at: 0,
            reason: StallReason::Idle,
            cta: 0,
            first_thread: 0,
            block_id: [0; 3],
            local: vec![0; ctx.program.local_size as usize * w],
            age: 0,
            buf_hint: None,
            issued: 0,
            observed: false,
            cur: Span {
                block: NONE,
                start: 0,
                end: 0,
                lanes: 0,
            },
            spans: Vec::new(),
        }
    }

    /// Starts a new warp of `lanes` threads in this slot, at the entry block.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn reset(
        &mut self,
        cta: usize,
        block_id: [u32; 3],
        first_thread: u32,
        lanes: u32,
        age: u64,
        now: u64,
        observed: bool,
    ) {
        self.r32.fill(0);
        self.r64.fill(0);
        self.preds.fill(0);
        self.ready.fill(0);
        self.local.fill(0);
        self.live = lanes_mask(lanes as usize);
        self.stack.clear();
        self.stack.push(Entry {
            block: 0,
            rpc: NONE,
            mask: self.live,
        });
        self.exited = 0;
        self.mask = 0;
        self.active_lanes = 0;
        self.pc = 0;
        self.state = WarpState::Running;
        self.ready_at = now;
        self.reason = StallReason::Dependency;
        self.cta = cta;
        self.first_thread = first_thread;
        self.block_id = block_id;
        self.age = age;
        self.issued = 0;
        self.observed = observed;
        self.cur.block = NONE;
        self.spans.clear();
    }

    /// Settles the stack after a control transfer or an exit: pops the entries that have
    /// reached their reconvergence block or lost all their lanes, then starts the top
    /// entry's block (or marks the warp done).
    pub(crate) fn enter(
        &mut self,
        ctx: &Ctx<'_>,
        counters: &mut Counters,
        now: u64,
    ) -> Result<(), FaultKind> {
        if self.observed && self.cur.block != NONE {
            self.cur.end = now + 1;
            self.spans.push(self.cur);
            self.cur.block = NONE;
        }
        loop {
            let n = self.stack.len();
            let top = self.stack[n - 1];
            let m = top.mask & !self.exited;
            if n > 1 && (m == 0 || top.block == top.rpc) {
                self.stack.pop();
                continue;
            }
            if m == 0 {
                self.state = WarpState::Done;
                self.mask = 0;
                self.active_lanes = 0;
                if self.observed {
                    if let Some(lanes) = &mut counters.lanes {
                        lanes.warp_done(self.age);
                    }
                    if let Some(paths) = &mut counters.paths {
                        paths.warp_done(self.age);
                    }
                }
                return Ok(());
            }
            if top.block == NONE {
                return Err(FaultKind::Malformed(
                    "threads that diverged at a branch without reconvergence point \
                     resumed before returning"
                        .into(),
                ));
            }
            self.stack[n - 1].mask = m;
            // `active_lanes` is `mask`'s count: a loop's branch re-enters with the lanes it
            // had, which keeps it (a population count takes a dozen instructions where
            // the processor has no instruction for it).
            if m != self.mask {
                self.mask = m;
                self.active_lanes = m.count_ones();
            }
            // The stack is deepest right after a split, which enters the taken side.
            counters.max_stack_depth = counters.max_stack_depth.max(n as u64);
            self.pc = ctx.program.blocks[top.block as usize].start;
            counters.block_execs[top.block as usize] += 1;
            if self.observed {
                self.observe_entry(counters, top.block, m, now);
            }
            return Ok(());
        }
    }

    /// What the optional recorders note as the warp starts `block` with lanes `mask`: the
    /// trace's span, the lanes' block counts and paths.
    #[inline(always)]
    fn observe_entry(&mut self, counters: &mut Counters, block: u32, mask: u64, now: u64) {
        if counters.tracing {
            self.cur = Span {
                block,
                start: now + 1,
                end: 0,
                lanes: mask.count_ones(),
            };
        }
        if let Some(lanes) = &mut counters.lanes {
            lanes.enter(self.age, block as usize, mask);
        }
        if let Some(paths) = &mut counters.paths {
            paths.enter(self.age, block as usize, mask);
        }
    }

    /// Sets `ready_at` for the next instruction: not before `earliest`, nor before its
    /// operands (and the register it overwrites) are ready.
    #[inline(always)]
    pub(crate) fn compute_ready(&mut self, meta: &Meta, earliest: u64, why: StallReason) {
        let m = &meta.insts[self.pc as usize];
        let mut at = earliest;
        // The first entry that is latest decides the reason: 0 for `why`, else 1 plus
        // whether its value comes from memory.
        let mut reason = 0u64;
        for &u in &m.checks[..usize::from(m.nchecks).min(CHECKS)] {
            let packed = self.ready.get(u as usize).copied().unwrap_or(0);
            let cycle = packed >> 1;
            if cycle > at {
                at = cycle;
                reason = 1 + (packed & 1);
            }
        }
        self.ready_at = at;
        self.reason = match reason {
            0 => why,
            1 => StallReason::Dependency,
            _ => StallReason::Memory,
        };
    }

    /// Executes the instruction at `pc` for the warp's lanes at cycle `now`. Returns what
    /// it did to control and `(lanes that acted, lanes active)`; a fault names the lane
    /// when one lane caused it. `TIMED` says whether the scoreboard is kept: a functional
    /// run has no clock, so it skips it.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn step<const TIMED: bool, G: Global>(
        &mut self,
        ctx: &Ctx<'_>,
        shared: &mut [u8],
        global: &mut G,
        counters: &mut Counters,
        sc: &mut Scratch,
        now: u64,
    ) -> Result<(Flow, (u32, u32)), LaneFault> {
        let pc = self.pc as usize;
        let Decoded { guard, kind } = &ctx.meta.simple[pc];
        let w = ctx.width;
        let active = self.mask;
        let (emask, lanes) = match guard {
            Some(g) => {
                let p = self.preds[g.pred.index() as usize];
                let emask = active & if g.negated { !p } else { p };
                (emask, (emask.count_ones(), self.active_lanes))
            }
            None => (active, (self.active_lanes, self.active_lanes)),
        };
        self.pc += 1;
        let flow = if !matches!(kind, Simple::No) {
            // The frequent operations first, decoded: no look at the operation itself.
            self.exec_simple(w, *kind, emask, &mut sc.out32);
            Flow::Next
        } else {
            let op = ctx.program.insts[pc].op;
            self.step_other(ctx, op, emask, active, shared, global, counters, sc, now)?
        };
        if TIMED {
            let m = &ctx.meta.insts[pc];
            if m.def != NONE {
                if let Some(r) = self.ready.get_mut(m.def as usize) {
                    *r = ((now + u64::from(m.latency)) << 1) | u64::from(m.memory);
                }
            }
        }
        Ok((flow, lanes))
    }

    /// [`Warp::step`]'s instructions that are not [`Simple`].
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn step_other<G: Global>(
        &mut self,
        ctx: &Ctx<'_>,
        op: Op,
        emask: u64,
        active: u64,
        shared: &mut [u8],
        global: &mut G,
        counters: &mut Counters,
        sc: &mut Scratch,
        now: u64,
    ) -> Result<Flow, LaneFault> {
        let w = ctx.width;
        Ok(match op {
            // A whole warp's global access to consecutive words (the coalesced case):
            // checked and copied as one run, without per-lane work.
            Op::Ld {
                space: AddrSpace::Global,
                ..
            }
            | Op::St {
                space: AddrSpace::Global,
                ..
            } if emask == lanes_mask(w) && self.global_run(ctx, op, global, counters) => Flow::Next,
            Op::BrUni { .. } | Op::BrDiv { .. } => self.branch(ctx, op, active, counters, now)?,
            // Every other operation: out of line, so that this hot path stays small.
            _ => self.exec(ctx, op, emask, active, shared, global, counters, sc, now)?,
        })
    }

    /// Executes the [`Simple`] instruction `kind` in the lanes of `emask`.
    #[inline(always)]
    fn exec_simple(&mut self, w: usize, kind: Simple, emask: u64, out: &mut [u32; MAX_LANES]) {
        let r = &mut self.r32;
        match kind {
            Simple::No => {}
            Simple::Bin { op, d, a, b } => bin32(op, r, out, w, emask, d, a, b),
            Simple::Mad { d, a, b, c } => {
                let a = RegLanes(a);
                with_src!(b, |b| with_src!(c, |c| map32(
                    r,
                    out,
                    w,
                    emask,
                    d,
                    a,
                    b,
                    c,
                    |x, y, z| x.wrapping_mul(y).wrapping_add(z)
                )));
            }
            Simple::Mov { d, s } => {
                let none = ImmLanes(0);
                with_src!(s, |s| map32(
                    r,
                    out,
                    w,
                    emask,
                    d,
                    s,
                    none,
                    none,
                    |x, _, _| x
                ));
            }
            Simple::Setp { cc, p, a, b } => {
                let bits = setp32(cc, r, w, a, b);
                let p = &mut self.preds[p];
                *p = (*p & !emask) | (bits & emask);
            }
        }
    }

    /// Executes the warp's instructions from `pc` on, at most `limit` of them, as that
    /// many calls of [`Warp::step`] would, without the per-instruction return to the
    /// caller: a functional run's [`Simple`] operations, its global loads and stores that
    /// are whole-warp runs of words ([`Warp::run_words`]), and its branches, so that a
    /// loop of such instructions runs here from one poll to the next. It stops before any
    /// other instruction, and before a load or store that is not such a run (it has done
    /// nothing to it then), for [`Warp::step`] to execute. Returns the instructions
    /// executed, and the fault of a branch with its pc, as `step` would have returned it
    /// (the instructions before it counted).
    #[inline]
    pub(crate) fn run_fast<G: Global>(
        &mut self,
        ctx: &Ctx<'_>,
        global: &mut G,
        counters: &mut Counters,
        sc: &mut Scratch,
        limit: u64,
    ) -> (Ran, Result<(), (u32, LaneFault)>) {
        let w = ctx.width;
        let mut ran = Ran::default();
        // The base register (its lanes, and whether of 8-byte words) of the last run of
        // words: its lanes are a run, which the next access with that base need not check
        // again until a `b64` register is written, which in this loop only an 8-byte load
        // does. A loop's load and store through one pointer check its lanes once per call.
        let mut run_base: Option<(usize, bool)> = None;
        while ran.insts < limit {
            let pc = self.pc as usize;
            // By reference: copying the whole entry first cost a tenth of the loop.
            let Some(decoded) = ctx.meta.simple.get(pc) else {
                break;
            };
            let (emask, acted) = match decoded.guard {
                None => (self.mask, self.active_lanes),
                Some(g) => {
                    let p = self.preds[g.pred.index() as usize];
                    let emask = self.mask & if g.negated { !p } else { p };
                    (emask, emask.count_ones())
                }
            };
            // The lanes active in this instruction, before a branch changes them.
            let active = self.active_lanes;
            match decoded.kind {
                Simple::No => match ctx.meta.fast[pc] {
                    Fast::Stop => break,
                    Fast::Words(a) => {
                        let known = run_base == Some((a.base, a.wide));
                        if emask != lanes_mask(w)
                            || !self.run_words(ctx, a, known, global, counters)
                        {
                            break;
                        }
                        run_base = (a.store || !a.wide).then_some((a.base, a.wide));
                        self.pc += 1;
                    }
                    Fast::Branch {
                        pred,
                        negated,
                        taken,
                        not_taken,
                    } => {
                        self.pc += 1;
                        let p = self.preds[pred as usize];
                        let t = self.mask & if negated { !p } else { p };
                        // As `branch` decides: every active lane taken, or none; a split
                        // (or its fault) is `branch`'s.
                        let one_way = if t == self.mask {
                            Some(taken)
                        } else if t == 0 {
                            Some(not_taken)
                        } else {
                            None
                        };
                        let done = match one_way {
                            Some(block) => {
                                self.goto(block);
                                self.enter(ctx, counters, 0).map_err(|k| (None, k))
                            }
                            None => {
                                let op = ctx.program.insts[pc].op;
                                self.branch(ctx, op, self.mask, counters, 0).map(|_| ())
                            }
                        };
                        if let Err(f) = done {
                            return (ran, Err((pc as u32, f)));
                        }
                    }
                },
                kind => {
                    self.exec_simple(w, kind, emask, &mut sc.out32);
                    self.pc += 1;
                }
            }
            ran.insts += 1;
            ran.acted += u64::from(acted);
            ran.active += u64::from(active);
        }
        (ran, Ok(()))
    }

    /// Whether the warp's next instruction may be executed by [`Warp::run_fast`].
    #[inline(always)]
    pub(crate) fn at_fast(&self, ctx: &Ctx<'_>) -> bool {
        let pc = self.pc as usize;
        match ctx.meta.simple.get(pc) {
            None => false,
            Some(Decoded {
                kind: Simple::No, ..
            }) => !matches!(ctx.meta.fast[pc], Fast::Stop),
            Some(_) => true,
        }
    }

    /// [`Warp::run_words`] of the operation `op`, when it is a global load or store of
    /// words ([`Words`]); false for any other. Out of line: inlined into the timed
    /// issue loop, it changed how the compiler laid that loop out, which cost the timed
    /// runs instructions.
    #[inline(never)]
    fn global_run<G: Global>(
        &mut self,
        ctx: &Ctx<'_>,
        op: Op,
        global: &mut G,
        counters: &mut Counters,
    ) -> bool {
        match Words::of(&op, ctx.width) {
            Some(a) => self.run_words(ctx, a, false, global, counters),
            None => false,
        }
    }

    /// Executes the global load or store `a` in every lane of the warp when its lanes'
    /// addresses are consecutive 4- or 8-byte words, lane `l` at `first + l * size`, all
    /// inside one buffer and aligned, and returns true; returns false, having done
    /// nothing, for any other access (the lane-by-lane path then performs it, or finds
    /// its fault and the lane that caused it).
    ///
    /// Such an access touches the segments from `first`'s to `end - 1`'s and each of them
    /// (a lane's word is no larger than a segment), so its transactions are counted from
    /// its two ends; and its words are one run of the buffer, copied to or from the
    /// registers directly.
    ///
    /// `known` says that the base register's lanes were found to be such a run, and
    /// have not changed since: only the offset, the alignment and the buffer are
    /// checked then.
    #[inline]
    fn run_words<G: Global>(
        &mut self,
        ctx: &Ctx<'_>,
        a: Words,
        known: bool,
        global: &mut G,
        counters: &mut Counters,
    ) -> bool {
        let w = ctx.width;
        let bases = &self.r64[a.base..a.base + w];
        let a0 = bases[0];
        let step: u64 = if a.wide { 8 } else { 4 };
        let bytes = w as u64 * step;
        if !known {
            let consecutive = if a.wide {
                run_diff::<8>(bases, a0) == 0
            } else {
                run_diff::<4>(bases, a0) == 0
            };
            // The lanes' base addresses do not wrap around, so each lane's address is
            // exactly `first + l * size`, as the lane-by-lane path computes it.
            if !consecutive || a0.checked_add(bytes - step).is_none() {
                return false;
            }
        }
        let Some(first) = a0.checked_add_signed(i64::from(a.offset)) else {
            return false;
        };
        let Some(end) = first.checked_add(bytes) else {
            return false;
        };
        if first & (step - 1) != 0 {
            return false;
        }
        // The buffer of the warp's last such access first: a warp's accesses mostly go
        // to one buffer, and buffers do not overlap, so the hint is exact when it holds.
        let (b, off) = match self.buf_hint.map(|b| (b, global.span(b))) {
            Some((b, (lo, hi))) if first >= lo && end <= hi => (b, (first - lo) as usize),
            _ => {
                let Ok((b, off)) = global.find(first, step as u32) else {
                    return false;
                };
                if end > global.span(b).1 {
                    return false;
                }
                self.buf_hint = Some(b);
                (b, off)
            }
        };
        let shift = ctx.config.segment_bytes.trailing_zeros();
        counters.transactions[0] += ((end - 1) >> shift) - (first >> shift) + 1;
        let r = a.reg;
        match (a.store, a.wide) {
            (false, false) => global.load_run32(b, off, &mut self.r32[r..r + w]),
            (false, true) => global.load_run64(b, off, &mut self.r64[r..r + w]),
            (true, false) => global.store_run32(b, off, &self.r32[r..r + w]),
            (true, true) => global.store_run64(b, off, &self.r64[r..r + w]),
        }
        true
    }

    /// Executes operation `op` in the lanes of `emask` (of the `active` ones) at cycle
    /// `now`: everything but the 32-bit integer operations [`Warp::step`] does itself.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn exec<G: Global>(
        &mut self,
        ctx: &Ctx<'_>,
        op: Op,
        emask: u64,
        active: u64,
        shared: &mut [u8],
        global: &mut G,
        counters: &mut Counters,
        sc: &mut Scratch,
        now: u64,
    ) -> Result<Flow, LaneFault> {
        let w = ctx.width;
        let mut flow = Flow::Next;
        match op {
            Op::Bin { op, ty, dst, a, b } => {
                let m = type_mask(ty);
                self.gather(w, ty.class(), Operand::Reg(a), m, &mut sc.a);
                self.gather(w, ty.class(), b, m, &mut sc.b);
                bin(op, ty, &sc.a[..w], &sc.b[..w], &mut sc.r[..w]);
                self.scatter(w, ty.class(), dst, &sc.r, emask);
            }
            Op::Un { op, ty, dst, src } => {
                self.gather(w, ty.class(), Operand::Reg(src), type_mask(ty), &mut sc.a);
                let t = MType::to_ir(ty);
                let opc = UnOp::ir_opcode(op);
                for (r, &x) in sc.r[..w].iter_mut().zip(&sc.a[..w]) {
                    *r = ops::unary(opc, t, t, x).unwrap_or(0);
                }
                self.scatter(w, ty.class(), dst, &sc.r, emask);
            }
            Op::Mad { ty, dst, a, b, c } => {
                let m = type_mask(ty);
                self.gather(w, ty.class(), Operand::Reg(a), m, &mut sc.a);
                self.gather(w, ty.class(), b, m, &mut sc.b);
                self.gather(w, ty.class(), c, m, &mut sc.c);
                for l in 0..w {
                    sc.r[l] = sc.a[l].wrapping_mul(sc.b[l]).wrapping_add(sc.c[l]);
                }
                self.scatter(w, ty.class(), dst, &sc.r, emask);
            }
            Op::Fma { ty, dst, a, b, c } => {
                let m = type_mask(ty);
                self.gather(w, ty.class(), Operand::Reg(a), m, &mut sc.a);
                self.gather(w, ty.class(), Operand::Reg(b), m, &mut sc.b);
                self.gather(w, ty.class(), Operand::Reg(c), m, &mut sc.c);
                if ty == MType::F32 {
                    for l in 0..w {
                        let (x, y, z) = (f32_of(sc.a[l]), f32_of(sc.b[l]), f32_of(sc.c[l]));
                        sc.r[l] = ops::canon_f32(x.mul_add(y, z));
                    }
                } else {
                    let t = MType::to_ir(ty);
                    for l in 0..w {
                        sc.r[l] = ops::fma(t, sc.a[l], sc.b[l], sc.c[l]).unwrap_or(0);
                    }
                }
                self.scatter(w, ty.class(), dst, &sc.r, emask);
            }
            Op::Tern {
                op,
                ty,
                dst,
                a,
                b,
                c,
            } => {
                let m = type_mask(ty);
                self.gather(w, ty.class(), Operand::Reg(a), m, &mut sc.a);
                self.gather(w, ty.class(), Operand::Reg(b), m, &mut sc.b);
                self.gather(w, ty.class(), c, m, &mut sc.c);
                let (t, opc) = (MType::to_ir(ty), op.ir_opcode());
                for l in 0..w {
                    sc.r[l] = ops::ternary(opc, t, sc.a[l], sc.b[l], sc.c[l]).unwrap_or(0);
                }
                self.scatter(w, ty.class(), dst, &sc.r, emask);
            }
            Op::Setp {
                cond,
                ty,
                dst,
                a,
                b,
            } => {
                let m = type_mask(ty);
                self.gather(w, ty.class(), Operand::Reg(a), m, &mut sc.a);
                self.gather(w, ty.class(), b, m, &mut sc.b);
                let bits = setp(cond, ty, &sc.a[..w], &sc.b[..w]);
                let p = &mut self.preds[dst.index() as usize];
                *p = (*p & !emask) | (bits & emask);
            }
            Op::Selp {
                ty,
                dst,
                a,
                b,
                pred,
            } => {
                let m = type_mask(ty);
                self.gather(w, ty.class(), a, m, &mut sc.a);
                self.gather(w, ty.class(), b, m, &mut sc.b);
                let p = self.preds[pred.index() as usize];
                for l in 0..w {
                    sc.r[l] = if (p >> l) & 1 != 0 { sc.a[l] } else { sc.b[l] };
                }
                self.scatter(w, ty.class(), dst, &sc.r, emask);
            }
            Op::Cvt {
                op,
                to,
                from,
                dst,
                src,
            } => {
                self.gather(
                    w,
                    from.class(),
                    Operand::Reg(src),
                    type_mask(from),
                    &mut sc.a,
                );
                let (opc, tf, tt) = (CvtOp::ir_opcode(op), MType::to_ir(from), MType::to_ir(to));
                for (r, &x) in sc.r[..w].iter_mut().zip(&sc.a[..w]) {
                    *r = ops::unary(opc, tf, tt, x).unwrap_or(0);
                }
                self.scatter(w, to.class(), dst, &sc.r, emask);
            }
            Op::Mov { ty, dst, src } => {
                self.gather(w, ty.class(), src, type_mask(ty), &mut sc.a);
                self.scatter(w, ty.class(), dst, &sc.a, emask);
            }
            Op::ReadSpecial { dst, sreg } => {
                for l in 0..w {
                    let t = self.first_thread + l as u32;
                    sc.r[l] = u64::from(match sreg {
                        SpecialReg::Tid(d) => ctx.thread_id(t)[d as usize],
                        SpecialReg::Ctaid(d) => self.block_id[d as usize],
                        SpecialReg::Ntid(d) => ctx.block[d as usize],
                        SpecialReg::Nctaid(d) => ctx.grid[d as usize],
                        SpecialReg::LaneId => l as u32,
                    });
                }
                self.scatter(w, RegClass::B32, dst, &sc.r, emask);
            }
            Op::LdParam { ty, dst, index } => {
                let v = ctx.args.get(index as usize).copied().unwrap_or(0) & type_mask(ty);
                sc.r[..w].fill(v);
                self.scatter(w, ty.class(), dst, &sc.r, emask);
            }
            Op::Ld { .. }
            | Op::St { .. }
            | Op::Atom { .. }
            | Op::Cas { .. }
            | Op::Spill { .. }
            | Op::Reload { .. } => {
                self.memory(ctx, &op, emask, shared, global, counters, sc)?;
            }
            Op::Bar {} => {
                let live = self.live & !self.exited;
                if active != live
                    && ctx.config.partial_barrier == crate::config::PartialBarrier::Error
                {
                    return Err((
                        None,
                        FaultKind::BarrierDivergence(format!(
                            "{} of the warp's {} live threads reached the barrier; the others \
                             are on another path",
                            active.count_ones(),
                            live.count_ones()
                        )),
                    ));
                }
                flow = Flow::Barrier;
            }
            Op::Jump { target } => {
                self.goto(ctx.program.block_at(target));
                self.enter(ctx, counters, now).map_err(|k| (None, k))?;
                flow = Flow::Transfer;
            }
            Op::BrUni { .. } | Op::BrDiv { .. } => {
                flow = self.branch(ctx, op, active, counters, now)?;
            }
            Op::Ret {} => {
                self.exited |= active;
                self.enter(ctx, counters, now).map_err(|k| (None, k))?;
                flow = Flow::Exit(active.count_ones());
            }
        }
        Ok(flow)
    }

    /// Executes the branch `op` (uniform or divergent) for the `active` lanes: the top
    /// entry of the stack moves to the destination, or, when the lanes split, the halves
    /// are pushed; then the warp enters the block now on top. Out of [`Warp::exec`], so
    /// that the loop branch, the most frequent control transfer, is reached from
    /// [`Warp::step`] in one call.
    #[inline(never)]
    fn branch(
        &mut self,
        ctx: &Ctx<'_>,
        op: Op,
        active: u64,
        counters: &mut Counters,
        now: u64,
    ) -> Result<Flow, LaneFault> {
        let (cond, taken, not_taken) = match op {
            Op::BrUni {
                cond,
                taken,
                not_taken,
            }
            | Op::BrDiv {
                cond,
                taken,
                not_taken,
                ..
            } => (cond, taken, not_taken),
            _ => return Ok(Flow::Next),
        };
        let (pred, negated) = (cond.pred, cond.negated);
        let uniform = matches!(op, Op::BrUni { .. });
        let reconverge = match op {
            Op::BrDiv {
                reconv: Some(r), ..
            } => Some(ctx.program.block_at(r)),
            _ => None,
        };
        let (taken, not_taken) = (ctx.program.block_at(taken), ctx.program.block_at(not_taken));
        let p = self.preds[pred.index() as usize];
        let t = active & if negated { !p } else { p };
        let n = active & !t;
        if uniform && n != 0 && t != 0 {
            return Err((
                None,
                FaultKind::UniformBranchDiverged {
                    taken: t.count_ones(),
                    not_taken: n.count_ones(),
                },
            ));
        }
        if n == 0 {
            self.goto(taken);
        } else if t == 0 {
            self.goto(not_taken);
        } else {
            let rpc = reconverge.unwrap_or(NONE);
            // Two exact economies keep loops from growing the stack: when the top
            // entry already reconverges at `rpc`, its two halves replace it (it
            // would only pop at `rpc` anyway); and a half that starts at `rpc`
            // is not pushed (it would pop at once).
            if self.stack.len() > 1 && self.stack[self.stack.len() - 1].rpc == rpc {
                self.stack.pop();
            } else {
                self.goto(rpc);
            }
            for (block, mask) in [(not_taken, n), (taken, t)] {
                if block != rpc {
                    self.stack.push(Entry { block, rpc, mask });
                }
            }
            counters.max_stack_depth = counters.max_stack_depth.max(self.stack.len() as u64);
        }
        self.enter(ctx, counters, now).map_err(|k| (None, k))?;
        Ok(Flow::Transfer)
    }

    /// Sets the top entry's block.
    #[inline]
    fn goto(&mut self, block: u32) {
        if let Some(top) = self.stack.last_mut() {
            top.block = block;
        }
    }

    /// Reads operand `src` of class `class` for every lane into `out`, masked to `mask`
    /// (predicates read as 0 or 1).
    #[inline]
    fn gather(&self, w: usize, class: RegClass, src: Operand, mask: u64, out: &mut Lanes) {
        match src {
            Operand::Imm(v) => out[..w].fill(v & mask),
            Operand::Reg(r) => match class {
                RegClass::Pred => {
                    let bits = self.preds[r.index() as usize];
                    for (l, o) in out[..w].iter_mut().enumerate() {
                        *o = (bits >> l) & 1;
                    }
                }
                RegClass::B32 => {
                    let r = r.index() as usize * w;
                    for (o, &v) in out[..w].iter_mut().zip(&self.r32[r..r + w]) {
                        *o = u64::from(v) & mask;
                    }
                }
                RegClass::B64 => {
                    let r = r.index() as usize * w;
                    for (o, &v) in out[..w].iter_mut().zip(&self.r64[r..r + w]) {
                        *o = v & mask;
                    }
                }
            },
        }
    }

    /// Writes `vals` into register `dst` of class `class`, in the lanes of `emask`.
    #[inline]
    fn scatter(&mut self, w: usize, class: RegClass, dst: Reg, vals: &Lanes, emask: u64) {
        match class {
            RegClass::Pred => {
                let mut bits = 0u64;
                for (l, &v) in vals[..w].iter().enumerate() {
                    bits |= (v & 1) << l;
                }
                let p = &mut self.preds[dst.index() as usize];
                *p = (*p & !emask) | (bits & emask);
            }
            RegClass::B32 => {
                let d = dst.index() as usize * w;
                let regs = &mut self.r32[d..d + w];
                if emask == lanes_mask(w) {
                    for (r, &v) in regs.iter_mut().zip(&vals[..w]) {
                        *r = v as u32;
                    }
                } else {
                    let mut m = emask;
                    while m != 0 {
                        let l = m.trailing_zeros() as usize;
                        m &= m - 1;
                        if l < w {
                            regs[l] = vals[l] as u32;
                        }
                    }
                }
            }
            RegClass::B64 => {
                let d = dst.index() as usize * w;
                let regs = &mut self.r64[d..d + w];
                if emask == lanes_mask(w) {
                    regs.copy_from_slice(&vals[..w]);
                } else {
                    let mut m = emask;
                    while m != 0 {
                        let l = m.trailing_zeros() as usize;
                        m &= m - 1;
                        if l < w {
                            regs[l] = vals[l];
                        }
                    }
                }
            }
        }
    }

    /// A 32-bit operand: where its lanes are in `r32`, or its immediate.
    #[inline]
    fn src32(&self, w: usize, src: Operand) -> Src32 {
        match src {
            Operand::Reg(r) => Src32::Reg(r.index() as usize * w),
            Operand::Imm(v) => Src32::Imm(v as u32),
        }
    }

    /// Executes a load, store or atomic in the lanes of `emask`.
    #[allow(clippy::too_many_arguments)]
    fn memory<G: Global>(
        &mut self,
        ctx: &Ctx<'_>,
        op: &Op,
        emask: u64,
        shared: &mut [u8],
        global: &mut G,
        counters: &mut Counters,
        sc: &mut Scratch,
    ) -> Result<(), LaneFault> {
        let w = ctx.width;
        let (space, ty, addr, access) = match *op {
            Op::Ld {
                space, ty, addr, ..
            } => (space, ty, addr, Access::Load),
            Op::St {
                space, ty, addr, ..
            } => (space, ty, addr, Access::Store),
            Op::Atom {
                space, ty, addr, ..
            }
            | Op::Cas {
                space, ty, addr, ..
            } => (space, ty, addr, Access::Atomic),
            // A spill slot is a local variable at a fixed offset of the thread's frame.
            Op::Spill { slot, src: r } | Op::Reload { dst: r, slot } => (
                AddrSpace::Local,
                spill_type(r.class()),
                Address {
                    base: None,
                    offset: ctx.program.spill_offset(slot),
                },
                if matches!(op, Op::Spill { .. }) {
                    Access::Store
                } else {
                    Access::Load
                },
            ),
            _ => return Ok(()),
        };
        if emask == 0 {
            return Ok(());
        }
        let Address { base, offset } = addr;
        let size = ty.bytes();
        match base {
            Some(r) => {
                let (class, m) = if space == AddrSpace::Global {
                    (RegClass::B64, u64::MAX)
                } else {
                    (RegClass::B32, 0xffff_ffff)
                };
                self.gather(w, class, Operand::Reg(r), m, &mut sc.a);
            }
            None => sc.a[..w].fill(0),
        }
        // Resolve and check every acting lane before any effect. Addresses are 64-bit
        // sums checked for overflow; the exact (128-bit) effective address is computed
        // only for the message of a fault.
        let local_size = ctx.program.local_size as usize;
        let offset = i64::from(offset);
        // Segments are a power of two bytes: a shift, not a division, per lane.
        let seg_shift = ctx.config.segment_bytes.trailing_zeros();
        // Sizes are powers of two: the low bits say whether an address is aligned.
        let align = u64::from(size - 1);
        let exact = |l: usize| i128::from(sc.a[l]) + i128::from(offset);
        let oob = |l: usize, detail: String| {
            let addr = exact(l);
            let kind = FaultKind::OutOfBounds {
                space,
                access,
                size,
                addr,
                detail,
            };
            (Some(l as u32), kind)
        };
        let misaligned = |l: usize| {
            let addr = exact(l);
            let kind = FaultKind::Misaligned {
                space,
                access,
                size,
                addr,
            };
            (Some(l as u32), kind)
        };
        // A whole warp's global access inside one buffer, aligned (the common case):
        // checked and keyed in branch-free loops over all lanes, accessed in one call.
        let one_buffer = if space == AddrSpace::Global && emask == lanes_mask(w) {
            global_in_one_buffer(
                global,
                &sc.a[..w],
                offset,
                size,
                seg_shift,
                &mut sc.loc,
                &mut sc.keys,
            )
        } else {
            None
        };
        // The keys noted so far; whether they come in non-decreasing lane order (the
        // coalesced case), so that counting distinct keys needs no sort; and how many
        // distinct keys there are then.
        let (mut nkeys, mut sorted, mut distinct) = match one_buffer {
            Some((b, sorted, distinct)) => {
                // Atomics read the lanes' buffers.
                sc.buf[..w].fill(b as u32);
                (w, sorted, distinct)
            }
            None => (0, true, 0u64),
        };
        let is_shared = space == AddrSpace::Shared;
        let mut note_key = |key: u64, order: u64, keys: &mut [u64; MAX_LANES]| {
            if nkeys == 0 {
                distinct = 1;
            } else {
                let prev = keys[nkeys - 1];
                if key != prev {
                    distinct += 1;
                }
                if order < if is_shared { prev & ORDER_MASK } else { prev } {
                    sorted = false;
                }
            }
            keys[nkeys] = key;
            nkeys += 1;
        };
        // A resolved lane-by-lane access visits `m`'s lanes.
        let mut m = if one_buffer.is_some() { 0 } else { emask };
        match space {
            AddrSpace::Global => {
                // The buffer of the last lane, `(index, base, end)`: neighbouring lanes
                // almost always access the same one.
                let mut last: Option<(usize, u64, u64)> = None;
                while m != 0 {
                    let l = m.trailing_zeros() as usize;
                    m &= m - 1;
                    let Some(a) = sc.a[l].checked_add_signed(offset) else {
                        return Err(oob(l, "outside the address space".into()));
                    };
                    let (b, off) = match last {
                        Some((b, lo, hi)) if a >= lo && a < hi && hi - a >= u64::from(size) => {
                            (b, (a - lo) as usize)
                        }
                        _ => {
                            let (b, off) =
                                global.find(a, size).map_err(|e| oob(l, e.to_string()))?;
                            let (lo, hi) = global.span(b);
                            last = Some((b, lo, hi));
                            (b, off)
                        }
                    };
                    if a & align != 0 {
                        return Err(misaligned(l));
                    }
                    sc.buf[l] = b as u32;
                    sc.loc[l] = off;
                    let key = a >> seg_shift;
                    note_key(key, key, &mut sc.keys);
                }
            }
            AddrSpace::Shared | AddrSpace::Local => {
                let window = if space == AddrSpace::Shared {
                    shared.len()
                } else {
                    local_size
                };
                while m != 0 {
                    let l = m.trailing_zeros() as usize;
                    m &= m - 1;
                    // The base is a 32-bit value and the offset 32-bit: no overflow in i64.
                    let e = sc.a[l] as i64 + offset;
                    if e < 0 || e + i64::from(size) > window as i64 {
                        return Err(oob(l, format!("the {space} window is {window} bytes")));
                    }
                    let off = e as usize;
                    if off as u64 & align != 0 {
                        return Err(misaligned(l));
                    }
                    if space == AddrSpace::Shared {
                        sc.loc[l] = off;
                        let word = (off / 4) as u64;
                        let bank = word % u64::from(ctx.config.shared_banks);
                        // Shared keys are ordered by word (their bank is a function of
                        // the word).
                        note_key((bank << 40) | word, word, &mut sc.keys);
                    } else {
                        sc.loc[l] = l * local_size + off;
                        // Local memory is interleaved across lanes in units of the
                        // access size.
                        let sz = size as usize;
                        let phys = ((off / sz) * w + l) * sz + off % sz;
                        let key = (phys as u64) >> seg_shift;
                        note_key(key, key, &mut sc.keys);
                    }
                }
            }
        }
        let tx = if sorted && !is_shared {
            distinct
        } else {
            transactions(
                &mut sc.keys[..nkeys],
                sorted,
                is_shared,
                ctx.config.shared_banks,
            )
        };
        counters.transactions[match space {
            AddrSpace::Global => 0,
            AddrSpace::Shared => 1,
            AddrSpace::Local => 2,
        }] += tx;
        // The accesses, in lane order.
        let class = ty.class();
        match *op {
            Op::Ld { dst, .. } | Op::Reload { dst, .. } => {
                let mut m = emask;
                macro_rules! each {
                    (|$l:ident| $e:expr) => {
                        while m != 0 {
                            let $l = m.trailing_zeros() as usize;
                            m &= m - 1;
                            sc.r[$l] = $e;
                        }
                    };
                }
                match space {
                    AddrSpace::Global => match one_buffer {
                        Some((b, ..)) => global.load_all(b, &sc.loc[..w], size, &mut sc.r[..w]),
                        None => each!(|l| global.load(sc.buf[l] as usize, sc.loc[l], size)),
                    },
                    AddrSpace::Shared => each!(|l| load_le(shared, sc.loc[l], size)),
                    AddrSpace::Local => each!(|l| load_le(&self.local, sc.loc[l], size)),
                }
                if class == RegClass::Pred {
                    for v in &mut sc.r[..w] {
                        *v = u64::from(*v != 0);
                    }
                }
                self.scatter(w, class, dst, &sc.r, emask);
            }
            Op::St { .. } | Op::Spill { .. } => {
                let src = match *op {
                    Op::Spill { src, .. } => Operand::Reg(src),
                    Op::St { src, .. } => src,
                    _ => return Ok(()),
                };
                if class == RegClass::B32 {
                    // A store writes the value's low bytes: 32-bit lanes need no widening.
                    let src = self.src32(w, src);
                    for (l, v) in sc.b[..w].iter_mut().enumerate() {
                        *v = u64::from(src.lane(&self.r32, l));
                    }
                } else {
                    self.gather(w, class, src, type_mask(ty), &mut sc.b);
                }
                let mut m = emask;
                macro_rules! each {
                    (|$l:ident, $v:ident, $off:ident| $e:expr) => {
                        while m != 0 {
                            let $l = m.trailing_zeros() as usize;
                            m &= m - 1;
                            let ($v, $off) = (sc.b[$l], sc.loc[$l]);
                            $e;
                        }
                    };
                }
                match space {
                    AddrSpace::Global => match one_buffer {
                        Some((b, ..)) => global.store_all(b, &sc.loc[..w], size, &sc.b[..w]),
                        None => each!(|l, v, off| global.store(sc.buf[l] as usize, off, size, v)),
                    },
                    AddrSpace::Shared => each!(|l, v, off| store_le(shared, off, size, v)),
                    AddrSpace::Local => each!(|l, v, off| store_le(&mut self.local, off, size, v)),
                }
            }
            Op::Atom {
                op: rmw, dst, src, ..
            } => {
                self.gather(w, ty.class(), src, type_mask(ty), &mut sc.b);
                let t = MType::to_ir(ty);
                let mut m = emask;
                while m != 0 {
                    let l = m.trailing_zeros() as usize;
                    m &= m - 1;
                    let x = sc.b[l];
                    let f = |old| Some(ops::atomic_rmw(rmw, t, old, x));
                    sc.r[l] = self.update(space, l, size, shared, global, sc, f);
                }
                self.scatter(w, ty.class(), dst, &sc.r, emask);
            }
            Op::Cas {
                dst,
                expected,
                replacement,
                ..
            } => {
                let tm = type_mask(ty);
                self.gather(w, ty.class(), expected, tm, &mut sc.b);
                self.gather(w, ty.class(), replacement, tm, &mut sc.c);
                let mut m = emask;
                while m != 0 {
                    let l = m.trailing_zeros() as usize;
                    m &= m - 1;
                    let (e, x) = (sc.b[l], sc.c[l]);
                    let f = |old| (old == e).then_some(x);
                    sc.r[l] = self.update(space, l, size, shared, global, sc, f);
                }
                self.scatter(w, ty.class(), dst, &sc.r, emask);
            }
            _ => {}
        }
        Ok(())
    }

    /// Replaces the value `old` at lane `l`'s resolved location by `f(old)` when that is
    /// `Some`; returns `old`.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn update<G: Global>(
        &mut self,
        space: AddrSpace,
        l: usize,
        size: u32,
        shared: &mut [u8],
        global: &mut G,
        sc: &Scratch,
        f: impl Fn(u64) -> Option<u64>,
    ) -> u64 {
        let off = sc.loc[l];
        let bytes = match space {
            AddrSpace::Global => return global.update(sc.buf[l] as usize, off, size, f),
            AddrSpace::Shared => shared,
            AddrSpace::Local => &mut self.local[..],
        };
        let old = load_le(bytes, off, size);
        if let Some(new) = f(old) {
            store_le(bytes, off, size, new);
        }
        old
    }
}

/// The OR over the lanes of `bases[l] ^ (a0 + l * S)` (wrapping): zero exactly when every
/// lane `l` holds `a0 + l * S`, the run of `S`-byte words from `a0`. Bits rather than
/// comparisons, with no branch in the loop and the size a constant of it, so that it
/// becomes vector instructions; the usual width gets its own copy, of a constant trip
/// count.
#[inline(always)]
fn run_diff<const S: u64>(bases: &[u64], a0: u64) -> u64 {
    let diff = |d: u64, (l, &a): (usize, &u64)| d | (a ^ a0.wrapping_add(l as u64 * S));
    match <&[u64; 32]>::try_from(bases) {
        Ok(lanes) => lanes.iter().enumerate().fold(0, diff),
        Err(_) => bases.iter().enumerate().fold(0, diff),
    }
}

/// Resolves a global access of every lane of `addrs` (base addresses, `offset` added)
/// when all of them fall inside the buffer of the first, aligned to `size`: the buffer,
/// then each lane's offset in `locs` and segment (`address >> seg_shift`) in `keys`, and
/// whether the segments are non-decreasing with how many distinct ones they are then.
/// `None` when some lane overflows, leaves that buffer or is misaligned: the caller then
/// resolves lane by lane, which finds the fault and its lane.
#[inline]
fn global_in_one_buffer<G: Global>(
    global: &G,
    addrs: &[u64],
    offset: i64,
    size: u32,
    seg_shift: u32,
    locs: &mut [usize; MAX_LANES],
    keys: &mut [u64; MAX_LANES],
) -> Option<(usize, bool, u64)> {
    let first = addrs.first()?.checked_add_signed(offset)?;
    let (b, _) = global.find(first, size).ok()?;
    let (lo, hi) = global.span(b);
    // `find` succeeded, so the buffer holds at least `size` bytes.
    let last_start = hi - u64::from(size);
    let (mut overflow, mut outside, mut bits) = (false, false, 0u64);
    for (l, &base) in addrs.iter().enumerate() {
        let (a, o) = base.overflowing_add_signed(offset);
        overflow |= o;
        outside |= (a < lo) | (a > last_start);
        bits |= a;
        locs[l] = a.wrapping_sub(lo) as usize;
        keys[l] = a >> seg_shift;
    }
    if overflow || outside || bits & u64::from(size - 1) != 0 {
        return None;
    }
    let keys = &keys[..addrs.len()];
    let (mut sorted, mut distinct) = (true, 1u64);
    for p in keys.windows(2) {
        sorted &= p[0] <= p[1];
        distinct += u64::from(p[0] != p[1]);
    }
    Some((b, sorted, distinct))
}

/// The part of a shared-memory key that orders it (its word), which is all of a global or
/// local key.
const ORDER_MASK: u64 = (1 << 40) - 1;

/// The transactions of one warp-access with segment or bank `keys` (see
/// [`Transactions`](crate::stats::Transactions)): for global and local memory the distinct
/// segments; for shared memory (`key = bank << 40 | word`) the most distinct words in one
/// bank. `sorted` says the keys (the words, for shared memory) are non-decreasing, as in a
/// coalesced access: then distinct keys are counted in one pass, and a shared access
/// whose words span fewer words than there are banks has no conflict (each bank holds at
/// most one of its words); otherwise the keys are sorted first.
fn transactions(keys: &mut [u64], sorted: bool, shared: bool, banks: u32) -> u64 {
    if keys.is_empty() {
        return 0;
    }
    let word_mask = (1u64 << 40) - 1;
    if sorted {
        if !shared {
            return 1 + keys.windows(2).filter(|p| p[0] != p[1]).count() as u64;
        }
        let span = (keys[keys.len() - 1] & word_mask) - (keys[0] & word_mask);
        if span < u64::from(banks) {
            return 1;
        }
    }
    keys.sort_unstable();
    if shared {
        // The most distinct words in one bank (keys sorted by bank, then word).
        let (mut best, mut run, mut prev) = (0u64, 0u64, None::<u64>);
        let mut prev_key = None;
        for &k in keys.iter() {
            if prev_key == Some(k) {
                continue;
            }
            prev_key = Some(k);
            let bank = k >> 40;
            run = if prev == Some(bank) { run + 1 } else { 1 };
            prev = Some(bank);
            best = best.max(run);
        }
        best
    } else {
        1 + keys.windows(2).filter(|p| p[0] != p[1]).count() as u64
    }
}

#[inline]
fn f32_of(bits: u64) -> f32 {
    f32::from_bits(bits as u32)
}

/// `r = a OP b` on every lane; operands are masked to the type, results may carry bits
/// above it (the register write masks to the class).
#[inline]
pub(crate) fn bin(op: BinOp, ty: MType, a: &[u64], b: &[u64], r: &mut [u64]) {
    macro_rules! map2 {
        (|$x:ident, $y:ident| $e:expr) => {
            for (r, (&$x, &$y)) in r.iter_mut().zip(a.iter().zip(b)) {
                *r = $e;
            }
        };
    }
    let bits = u64::from(ty.bits());
    let wide = matches!(ty, MType::I32 | MType::I64);
    match op {
        BinOp::Add if !ty.is_float() => map2!(|x, y| x.wrapping_add(y)),
        BinOp::Sub if !ty.is_float() => map2!(|x, y| x.wrapping_sub(y)),
        BinOp::Mul if !ty.is_float() => map2!(|x, y| x.wrapping_mul(y)),
        BinOp::And => map2!(|x, y| x & y),
        BinOp::Or => map2!(|x, y| x | y),
        BinOp::Xor => map2!(|x, y| x ^ y),
        BinOp::Shl if wide => map2!(|x, y| if y >= bits { 0 } else { x << y }),
        BinOp::ShrU if wide => map2!(|x, y| if y >= bits { 0 } else { x >> y }),
        BinOp::FAdd if ty == MType::F32 => {
            map2!(|x, y| ops::canon_f32(f32_of(x) + f32_of(y)))
        }
        BinOp::FSub if ty == MType::F32 => {
            map2!(|x, y| ops::canon_f32(f32_of(x) - f32_of(y)))
        }
        BinOp::FMul if ty == MType::F32 => {
            map2!(|x, y| ops::canon_f32(f32_of(x) * f32_of(y)))
        }
        _ => {
            let (opc, t) = (BinOp::ir_opcode(op), MType::to_ir(ty));
            map2!(|x, y| ops::binary(opc, t, x, y).unwrap_or(0))
        }
    }
}

/// Whether [`bin32`] computes `op` on `i32` values.
#[inline]
fn fast32(op: BinOp) -> bool {
    use BinOp::*;
    matches!(
        op,
        Add | Sub | Mul | And | Or | Xor | Shl | ShrU | ShrS | MinS | MinU | MaxS | MaxU
    )
}

/// A 32-bit source operand of an instruction on `b32` registers: the offset of its lanes
/// in the warp's `r32`, or an immediate.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Src32 {
    Reg(usize),
    Imm(u32),
}

impl Src32 {
    /// The operand's value in lane `l`.
    #[inline(always)]
    fn lane(self, regs: &[u32], l: usize) -> u32 {
        match self {
            Src32::Reg(r) => regs[r + l],
            Src32::Imm(v) => v,
        }
    }
}

/// A 32-bit source operand whose kind (register or immediate) is known at compile time,
/// so that a lane loop over it has no per-lane test of the kind and becomes vector
/// instructions: [`Src32`] is matched once per instruction (see `with_src!`), and each
/// combination of kinds gets its own loop.
trait Lanes32: Copy {
    /// What the loop reads lane `l` from: a register's `w` values, or the immediate.
    type View<'r>: LaneView;
    /// The operand's lanes in `regs`, for a warp of `w` lanes.
    fn view(self, regs: &[u32], w: usize) -> Self::View<'_>;
}

/// A [`Lanes32`]'s lanes as the loop reads them.
trait LaneView: Copy {
    /// The value of lane `l`.
    fn at(self, l: usize) -> u32;
}

impl LaneView for &[u32] {
    #[inline(always)]
    fn at(self, l: usize) -> u32 {
        self[l]
    }
}

impl LaneView for u32 {
    #[inline(always)]
    fn at(self, _: usize) -> u32 {
        self
    }
}

/// A register operand: its lanes start at `r32[.0]`.
#[derive(Copy, Clone)]
struct RegLanes(usize);

/// An immediate operand, the same in every lane.
#[derive(Copy, Clone)]
struct ImmLanes(u32);

impl Lanes32 for RegLanes {
    type View<'r> = &'r [u32];

    #[inline(always)]
    fn view(self, regs: &[u32], w: usize) -> &[u32] {
        &regs[self.0..self.0 + w]
    }
}

impl Lanes32 for ImmLanes {
    type View<'r> = u32;

    #[inline(always)]
    fn view(self, _: &[u32], _: usize) -> u32 {
        self.0
    }
}

/// `regs[d + l] = f(a, b, c)` in the lanes of `emask`, on `b32` registers. Every lane is
/// computed into `out` first, in one loop over slices of the same length that the compiler
/// turns into vector instructions (the destination may be one of the sources, so it
/// cannot be written while they are read), then the acting lanes are copied to the
/// destination: all at once when every lane acts.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn map32<A: Lanes32, B: Lanes32, C: Lanes32>(
    regs: &mut [u32],
    out: &mut [u32; MAX_LANES],
    w: usize,
    emask: u64,
    d: usize,
    a: A,
    b: B,
    c: C,
    f: impl Fn(u32, u32, u32) -> u32,
) {
    // The usual width gets a copy of the loops for its constant trip count: no remainder
    // loop and no bounds checks are left.
    if w == 32 {
        map32_at(regs, out, 32, emask, d, a, b, c, f)
    } else {
        map32_at(regs, out, w, emask, d, a, b, c, f)
    }
}

/// [`map32`] at width `w`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn map32_at<A: Lanes32, B: Lanes32, C: Lanes32>(
    regs: &mut [u32],
    out: &mut [u32; MAX_LANES],
    w: usize,
    emask: u64,
    d: usize,
    a: A,
    b: B,
    c: C,
    f: impl Fn(u32, u32, u32) -> u32,
) {
    let out = &mut out[..w];
    let (x, y, z) = (a.view(regs, w), b.view(regs, w), c.view(regs, w));
    for (l, r) in out.iter_mut().enumerate() {
        *r = f(x.at(l), y.at(l), z.at(l));
    }
    let dst = &mut regs[d..d + w];
    let all = lanes_mask(w);
    if emask & all == all {
        dst.copy_from_slice(out);
    } else {
        let mut m = emask & all;
        while m != 0 {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            dst[l] = out[l];
        }
    }
}

/// `regs[d + l] = regs[a + l] OP b` in the lanes of `emask`, for the operations of
/// [`fast32`], on `i32` lanes held as `u32`: the results of [`bin`] on the same values,
/// which the tests check. The operation is chosen once and the lanes are computed in
/// place, without gathering the operands first.
#[inline]
#[allow(clippy::too_many_arguments)]
fn bin32(
    op: BinOp,
    regs: &mut [u32],
    out: &mut [u32; MAX_LANES],
    w: usize,
    emask: u64,
    d: usize,
    a: usize,
    b: Src32,
) {
    let a = RegLanes(a);
    let none = ImmLanes(0);
    macro_rules! map2 {
        (|$x:ident, $y:ident| $e:expr) => {
            with_src!(b, |b| map32(
                regs,
                out,
                w,
                emask,
                d,
                a,
                b,
                none,
                |$x, $y, _| $e
            ))
        };
    }
    // A shift by an immediate shifts every lane by the same amount: one vector
    // instruction, where per-lane amounts would be shifted lane by lane.
    // The operation is chosen before the loop, and an amount of 32 or more (which gives
    // 0, or the sign for an arithmetic shift) is settled before it too.
    if let (BinOp::Shl | BinOp::ShrU | BinOp::ShrS, Src32::Imm(y)) = (op, b) {
        macro_rules! map1 {
            (|$x:ident| $e:expr) => {
                map32(regs, out, w, emask, d, a, none, none, |$x, _, _| $e)
            };
        }
        return match op {
            BinOp::Shl if y < 32 => map1!(|x| x << y),
            BinOp::ShrU if y < 32 => map1!(|x| x >> y),
            BinOp::ShrS => {
                let y = y.min(31);
                map1!(|x| ((x as i32) >> y) as u32)
            }
            _ => map1!(|_x| 0),
        };
    }
    match op {
        BinOp::Add => map2!(|x, y| x.wrapping_add(y)),
        BinOp::Sub => map2!(|x, y| x.wrapping_sub(y)),
        BinOp::Mul => map2!(|x, y| x.wrapping_mul(y)),
        BinOp::And => map2!(|x, y| x & y),
        BinOp::Or => map2!(|x, y| x | y),
        BinOp::Xor => map2!(|x, y| x ^ y),
        BinOp::Shl => map2!(|x, y| if y >= 32 { 0 } else { x << y }),
        BinOp::ShrU => map2!(|x, y| if y >= 32 { 0 } else { x >> y }),
        BinOp::ShrS => map2!(|x, y| ((x as i32) >> y.min(31)) as u32),
        BinOp::MinS => map2!(|x, y| (x as i32).min(y as i32) as u32),
        BinOp::MinU => map2!(|x, y| x.min(y)),
        BinOp::MaxS => map2!(|x, y| (x as i32).max(y as i32) as u32),
        BinOp::MaxU => map2!(|x, y| x.max(y)),
        _ => {
            let t = MType::to_ir(MType::I32);
            let opc = BinOp::ir_opcode(op);
            map2!(|x, y| ops::binary(opc, t, u64::from(x), u64::from(y)).unwrap_or(0) as u32)
        }
    }
}

/// The lane mask of the integer comparison `regs[a + l] CC b` on `i32` lanes held as
/// `u32`, for all `w` lanes.
#[inline]
fn setp32(cc: IntCC, regs: &[u32], w: usize, a: usize, b: Src32) -> u64 {
    let a = RegLanes(a);
    #[inline(always)]
    fn cmp<B: Lanes32>(
        regs: &[u32],
        w: usize,
        a: RegLanes,
        b: B,
        f: impl Fn(u32, u32) -> bool,
    ) -> u64 {
        // As in `map32`, the usual width has its own copy: one loop over the 32 lanes
        // into a 32-bit mask, which the compiler turns into vector comparisons whose
        // lanes are masked with their bits and ORed together, in about half the
        // instructions of the groups of eight.
        if w == 32 {
            let (x, y) = (a.view(regs, 32), b.view(regs, 32));
            let mut bits = 0u32;
            for l in 0..32 {
                bits |= u32::from(f(x.at(l), y.at(l))) << l;
            }
            u64::from(bits)
        } else {
            cmp_at(regs, w, a, b, f)
        }
    }
    #[inline(always)]
    fn cmp_at<B: Lanes32>(
        regs: &[u32],
        w: usize,
        a: RegLanes,
        b: B,
        f: impl Fn(u32, u32) -> bool,
    ) -> u64 {
        let (x, y) = (a.view(regs, w), b.view(regs, w));
        let mut bits = 0u64;
        let mut l = 0;
        // Groups of eight lanes, whose comparisons become vector instructions.
        while l + 8 <= w {
            let mut group = 0u64;
            for i in 0..8 {
                group |= u64::from(f(x.at(l + i), y.at(l + i))) << i;
            }
            bits |= group << l;
            l += 8;
        }
        for l in l..w {
            bits |= u64::from(f(x.at(l), y.at(l))) << l;
        }
        bits
    }
    macro_rules! cmp {
        (|$x:ident, $y:ident| $e:expr) => {
            with_src!(b, |b| cmp(regs, w, a, b, |$x, $y| $e))
        };
    }
    match cc {
        IntCC::Equal => cmp!(|x, y| x == y),
        IntCC::NotEqual => cmp!(|x, y| x != y),
        IntCC::UnsignedLessThan => cmp!(|x, y| x < y),
        IntCC::UnsignedLessThanOrEqual => cmp!(|x, y| x <= y),
        IntCC::UnsignedGreaterThan => cmp!(|x, y| x > y),
        IntCC::UnsignedGreaterThanOrEqual => cmp!(|x, y| x >= y),
        IntCC::SignedLessThan => cmp!(|x, y| (x as i32) < (y as i32)),
        IntCC::SignedLessThanOrEqual => cmp!(|x, y| (x as i32) <= (y as i32)),
        IntCC::SignedGreaterThan => cmp!(|x, y| (x as i32) > (y as i32)),
        IntCC::SignedGreaterThanOrEqual => cmp!(|x, y| (x as i32) >= (y as i32)),
    }
}

/// The lane mask of `a COND b` (operands masked to the type).
#[inline]
pub(crate) fn setp(cond: Cond, ty: MType, a: &[u64], b: &[u64]) -> u64 {
    let mut bits = 0u64;
    macro_rules! cmp {
        (|$x:ident, $y:ident| $e:expr) => {
            for (l, (&$x, &$y)) in a.iter().zip(b).enumerate() {
                bits |= u64::from($e) << l;
            }
        };
    }
    let t = MType::to_ir(ty);
    match cond {
        Cond::Int(cc) => match cc {
            IntCC::Equal => cmp!(|x, y| x == y),
            IntCC::NotEqual => cmp!(|x, y| x != y),
            IntCC::UnsignedLessThan => cmp!(|x, y| x < y),
            IntCC::UnsignedLessThanOrEqual => cmp!(|x, y| x <= y),
            IntCC::UnsignedGreaterThan => cmp!(|x, y| x > y),
            IntCC::UnsignedGreaterThanOrEqual => cmp!(|x, y| x >= y),
            IntCC::SignedLessThan => cmp!(|x, y| ops::sext(x, t) < ops::sext(y, t)),
            IntCC::SignedLessThanOrEqual => cmp!(|x, y| ops::sext(x, t) <= ops::sext(y, t)),
            IntCC::SignedGreaterThan => cmp!(|x, y| ops::sext(x, t) > ops::sext(y, t)),
            IntCC::SignedGreaterThanOrEqual => {
                cmp!(|x, y| ops::sext(x, t) >= ops::sext(y, t))
            }
        },
        Cond::Float(cc) => cmp!(|x, y| ops::fcmp(cc, t, x, y).unwrap_or(false)),
    }
    bits
}

/// The type a register of class `class` is spilled and reloaded at.
fn spill_type(class: RegClass) -> MType {
    match class {
        RegClass::B32 => MType::I32,
        RegClass::B64 => MType::I64,
        RegClass::Pred => MType::Pred,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warplift_ir::launch::memory::{Buffer, ElemType};
    use warplift_ir::launch::GlobalMemory;
    use warplift_ir::FloatCC;

    /// The whole-warp check accepts exactly the accesses that stay inside the first lane's
    /// buffer, aligned and without overflow, and counts their segments as the lane-by-lane
    /// path does.
    #[test]
    fn whole_warp_access_is_taken_only_inside_one_buffer() {
        let buf = |name: &str, base, len| Buffer {
            name: name.into(),
            elem: ElemType::U32,
            base,
            bytes: vec![0; len],
            print: true,
            save: None,
            expect: None,
        };
        let mem = GlobalMemory {
            buffers: vec![buf("a", 0x1000, 256), buf("b", 0x1100, 256)],
        };
        let (mut locs, mut keys) = ([0usize; MAX_LANES], [0u64; MAX_LANES]);
        let mut check = |addrs: &[u64], offset: i64, size: u32| {
            global_in_one_buffer(&mem, addrs, offset, size, 5, &mut locs, &mut keys)
        };
        let coalesced: Vec<u64> = (0..32).map(|l| 0x1000 + 4 * l).collect();
        // 128 bytes from a 32-byte-aligned start: 4 segments, in order.
        assert_eq!(check(&coalesced, 0, 4), Some((0, true, 4)));
        assert_eq!(check(&coalesced, 0x100, 4), Some((1, true, 4)));
        // Reversed lanes: the same segments, out of order (the caller sorts).
        let reversed: Vec<u64> = coalesced.iter().rev().copied().collect();
        assert_eq!(check(&reversed, 0, 4).map(|r| (r.0, r.1)), Some((0, false)));
        // The last lane runs past the first buffer into the next one.
        assert_eq!(check(&coalesced, 0x84, 4), None);
        // Misaligned for 4 bytes, and an 8-byte access at a 4-byte stride.
        assert_eq!(check(&coalesced, 2, 4), None);
        assert_eq!(check(&coalesced, 0, 8), None);
        // A lane whose address wraps around the address space, into the buffer.
        let mut wrap: Vec<u64> = (0..32).map(|l| 4 * l).collect();
        assert!(check(&wrap, 0x1020, 4).is_some());
        wrap[7] = u64::MAX - 15;
        assert_eq!(check(&wrap, 0x1020, 4), None);
        // Below every buffer.
        assert_eq!(check(&coalesced, -0x1000, 4), None);
    }

    /// The run of words ([`Warp::global_run`]) is taken only where the lane-by-lane
    /// path would succeed, and then leaves the same memory, registers and transaction
    /// count; where it is not taken, it has done nothing. Random bases near buffer ends,
    /// between two buffers, misaligned, wrapping around the address space, at every
    /// width and two segment sizes.
    #[test]
    fn runs_of_words_do_what_the_lane_by_lane_path_does() {
        use crate::config::MachineConfig;
        use crate::machine::{Counters, Ctx, Meta};
        use crate::program::Program;
        use warplift_ir::launch::GlobalMemory;
        let buf = |name: &str, base, len| Buffer {
            name: name.into(),
            elem: ElemType::U32,
            base,
            bytes: (0..len).map(|i| (i * 7 + 3) as u8).collect(),
            print: true,
            save: None,
            expect: None,
        };
        // Two buffers back to back, so that a run can straddle them.
        let memory = GlobalMemory {
            buffers: vec![buf("a", 0x1000, 2048), buf("b", 0x1800, 1024)],
        };
        let program = Program::new(
            "k".into(),
            Vec::new(),
            [2, 2, 0],
            0,
            0,
            0,
            0,
            Vec::new(),
            Vec::new(),
            Vec::new(),
        );
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut taken, mut declined) = (0, 0);
        for case in 0..6000u64 {
            let width = [1usize, 7, 32, 64][case as usize % 4];
            let config = MachineConfig::builder()
                .warp_width(width as u32)
                .segment_bytes([32, 128][(case / 4) as usize % 2])
                .build()
                .unwrap();
            let ctx = Ctx {
                program: &program,
                meta: Meta::new(&program, &config),
                config: &config,
                width,
                grid: [1; 3],
                block: [width as u32, 1, 1],
                args: Vec::new(),
            };
            let ty = [MType::I32, MType::I64, MType::F32, MType::I16][(next() % 4) as usize];
            let size = u64::from(ty.bytes());
            let first = match next() % 8 {
                // Near the end of the address space, so that some runs wrap.
                0 => u64::MAX - next() % 512,
                // Mostly aligned to the access size.
                1 => 0xfc0 + next() % 3200,
                _ => (0xfc0 + next() % 3200) & !(size - 1),
            };
            let mut bases: Vec<u64> = (0..width as u64)
                .map(|l| first.wrapping_add(l * size))
                .collect();
            if next() % 6 == 0 {
                // One lane out of step.
                let l = (next() % width as u64) as usize;
                bases[l] = bases[l].wrapping_add(size);
            }
            let offset = [0i32, 0, 4, -8, 8, 2][(next() % 6) as usize];
            let addr = Address {
                base: Some(Reg::phys(0, RegClass::B64)),
                offset,
            };
            let op = if next() % 2 == 0 {
                Op::Ld {
                    space: AddrSpace::Global,
                    ty,
                    dst: Reg::phys(1, ty.class()),
                    addr,
                }
            } else {
                Op::St {
                    space: AddrSpace::Global,
                    ty,
                    src: Operand::Reg(Reg::phys(1, ty.class())),
                    addr,
                }
            };
            let mut warp = Warp::new(&ctx);
            warp.r64[..width].copy_from_slice(&bases);
            for l in 0..width {
                warp.r32[width + l] = next() as u32;
                warp.r64[width + l] = next();
            }
            let regs = (warp.r32.clone(), warp.r64.clone());
            let mut fast = (warp, memory.clone(), Counters::default());
            let mut slow = (Warp::new(&ctx), memory.clone(), Counters::default());
            slow.0.r32.copy_from_slice(&regs.0);
            slow.0.r64.copy_from_slice(&regs.1);
            let ran = fast.0.global_run(&ctx, op, &mut fast.1, &mut fast.2);
            let mut sc = Scratch::new();
            let all = lanes_mask(width);
            let done = slow
                .0
                .memory(&ctx, &op, all, &mut [], &mut slow.1, &mut slow.2, &mut sc);
            let bytes = |m: &GlobalMemory| -> Vec<Vec<u8>> {
                m.buffers.iter().map(|b| b.bytes.clone()).collect()
            };
            if ran {
                taken += 1;
                assert!(done.is_ok(), "case {case}: taken where a lane faults");
                assert_eq!(fast.2.transactions, slow.2.transactions, "case {case}");
                assert_eq!(bytes(&fast.1), bytes(&slow.1), "case {case}");
                assert_eq!(fast.0.r32, slow.0.r32, "case {case}");
                assert_eq!(fast.0.r64, slow.0.r64, "case {case}");
            } else {
                declined += 1;
                // Nothing done: the lane-by-lane path then does it all.
                assert_eq!(fast.2.transactions, [0; 3], "case {case}");
                assert_eq!(bytes(&fast.1), bytes(&memory), "case {case}");
                assert_eq!(
                    (&fast.0.r32, &fast.0.r64),
                    (&regs.0, &regs.1),
                    "case {case}"
                );
            }
        }
        // Both ways are exercised.
        assert!(
            taken > 1000 && declined > 1000,
            "{taken} taken, {declined} declined"
        );
    }

    /// Edge values of a type, with upper garbage for sub-word types (which the gather
    /// masks away).
    fn samples(ty: MType) -> Vec<u64> {
        let m = type_mask(ty);
        let mut v = vec![
            0,
            1,
            2,
            3,
            7,
            31,
            32,
            33,
            63,
            64,
            65,
            m,
            m - 1,
            m >> 1,
            (m >> 1) + 1,
        ];
        if ty == MType::F32 {
            for x in [
                0.0f32,
                -0.0,
                1.5,
                -2.25,
                f32::INFINITY,
                f32::NAN,
                1e30,
                -1e-30,
            ] {
                v.push(u64::from(x.to_bits()));
            }
        }
        v.into_iter().map(|x| x & m).collect()
    }

    /// The 32-bit lane loops compute what the 64-bit ones do on the same `i32` values.
    #[test]
    fn lane_loops_on_u32_agree_with_the_u64_ones() {
        let mut out = [0; MAX_LANES];
        let s = samples(MType::I32);
        let (a, b): (Vec<u64>, Vec<u64>) = s
            .iter()
            .flat_map(|&x| s.iter().map(move |&y| (x, y)))
            .unzip();
        use BinOp::*;
        for op in [
            Add, Sub, Mul, And, Or, Xor, Shl, ShrU, ShrS, MinS, MinU, MaxS, MaxU, DivS, RemU,
        ] {
            // Widths 64, 32 (which has loops of its own) and 7.
            let chunks = [64, 32, 7]
                .into_iter()
                .flat_map(|n| a.chunks(n).zip(b.chunks(n)));
            for (ca, cb) in chunks {
                let mut r = vec![0; ca.len()];
                bin(op, MType::I32, ca, cb, &mut r);
                // Registers a, b, then the result, of `n` lanes each; and the same with b
                // an immediate, and with half the lanes acting.
                let n = ca.len();
                let mut regs: Vec<u32> = ca.iter().chain(cb).map(|&x| x as u32).collect();
                regs.resize(3 * n, 0);
                bin32(
                    op,
                    &mut regs,
                    &mut out,
                    n,
                    lanes_mask(n),
                    2 * n,
                    0,
                    Src32::Reg(n),
                );
                let mut imm = regs.clone();
                bin32(
                    op,
                    &mut imm,
                    &mut out,
                    1,
                    1,
                    2 * n,
                    0,
                    Src32::Imm(cb[0] as u32),
                );
                let mut half = regs.clone();
                half[2 * n..].fill(7);
                bin32(
                    op,
                    &mut half,
                    &mut out,
                    n,
                    0x5555_5555_5555_5555,
                    2 * n,
                    0,
                    Src32::Reg(n),
                );
                let mut r = vec![0; n];
                bin(op, MType::I32, ca, cb, &mut r);
                for i in 0..n {
                    let want = if i % 2 == 0 { r[i] & 0xffff_ffff } else { 7 };
                    assert_eq!(u64::from(half[2 * n + i]), want, "{op:?} masked");
                }
                assert_eq!(imm[2 * n], regs[2 * n], "{op:?} immediate");
                for i in 0..ca.len() {
                    assert_eq!(
                        u64::from(regs[2 * n + i]),
                        r[i] & 0xffff_ffff,
                        "{op:?} {} {}",
                        ca[i],
                        cb[i]
                    );
                }
            }
        }
        for cc in [
            IntCC::Equal,
            IntCC::NotEqual,
            IntCC::SignedLessThan,
            IntCC::SignedLessThanOrEqual,
            IntCC::SignedGreaterThan,
            IntCC::SignedGreaterThanOrEqual,
            IntCC::UnsignedLessThan,
            IntCC::UnsignedLessThanOrEqual,
            IntCC::UnsignedGreaterThan,
            IntCC::UnsignedGreaterThanOrEqual,
        ] {
            let chunks = [64, 32, 7]
                .into_iter()
                .flat_map(|n| a.chunks(n).zip(b.chunks(n)));
            for (ca, cb) in chunks {
                let n = ca.len();
                let regs: Vec<u32> = ca.iter().chain(cb).map(|&x| x as u32).collect();
                assert_eq!(
                    setp32(cc, &regs, n, 0, Src32::Reg(n)),
                    setp(Cond::Int(cc), MType::I32, ca, cb),
                    "{cc:?}"
                );
            }
        }
    }

    /// The sorted-key fast paths count what sorting counts.
    #[test]
    fn transactions_without_a_sort_match_the_sorted_count() {
        let slow = |keys: &[u64], shared: bool, banks: u32| {
            let mut k = keys.to_vec();
            transactions(&mut k, false, shared, banks)
        };
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for case in 0..2000 {
            let n = 1 + (next() % 64) as usize;
            let banks = [1u32, 4, 32][case % 3];
            let stride = next() % 5;
            let start = next() % 100;
            // Non-decreasing words: strided, with repeats.
            let words: Vec<u64> = (0..n as u64).map(|i| start + i * stride / 2).collect();
            let segs: Vec<u64> = words.iter().map(|w| w / 8).collect();
            let mut k = segs.clone();
            assert_eq!(
                transactions(&mut k, true, false, banks),
                slow(&segs, false, banks)
            );
            let shared: Vec<u64> = words
                .iter()
                .map(|&w| ((w % u64::from(banks)) << 40) | w)
                .collect();
            let mut k = shared.clone();
            assert_eq!(
                transactions(&mut k, true, true, banks),
                slow(&shared, true, banks),
                "{words:?} banks {banks}"
            );
        }
        assert_eq!(transactions(&mut [], true, false, 32), 0);
    }

    #[test]
    fn lane_loops_agree_with_the_scalar_rules() {
        use BinOp::*;
        let ops_list = [
            Add, Sub, Mul, MulHiS, MulHiU, DivS, DivU, RemS, RemU, MinS, MinU, MaxS, MaxU, And, Or,
            Xor, Shl, ShrU, ShrS,
        ];
        for ty in [MType::I8, MType::I16, MType::I32, MType::I64, MType::F32] {
            let s = samples(ty);
            let (a, b): (Vec<u64>, Vec<u64>) = s
                .iter()
                .flat_map(|&x| s.iter().map(move |&y| (x, y)))
                .unzip();
            let list: Vec<BinOp> = if ty.is_float() {
                vec![FAdd, FSub, FMul, FDiv, FMin, FMax]
            } else {
                ops_list.to_vec()
            };
            let t = MType::to_ir(ty);
            for op in list {
                for (ca, cb) in a.chunks(64).zip(b.chunks(64)) {
                    let mut r = vec![0; ca.len()];
                    bin(op, ty, ca, cb, &mut r);
                    for i in 0..ca.len() {
                        let want = ops::binary(BinOp::ir_opcode(op), t, ca[i], cb[i]).unwrap();
                        assert_eq!(
                            r[i] & type_mask(ty),
                            want,
                            "{op:?}.{ty} {:#x} {:#x}",
                            ca[i],
                            cb[i]
                        );
                    }
                }
            }
            for (ca, cb) in a.chunks(64).zip(b.chunks(64)) {
                let conds: Vec<Cond> = if ty.is_float() {
                    [FloatCC::LessThan, FloatCC::Unordered, FloatCC::NotEqual]
                        .into_iter()
                        .map(Cond::Float)
                        .collect()
                } else {
                    [
                        IntCC::Equal,
                        IntCC::NotEqual,
                        IntCC::SignedLessThan,
                        IntCC::SignedLessThanOrEqual,
                        IntCC::SignedGreaterThan,
                        IntCC::SignedGreaterThanOrEqual,
                        IntCC::UnsignedLessThan,
                        IntCC::UnsignedLessThanOrEqual,
                        IntCC::UnsignedGreaterThan,
                        IntCC::UnsignedGreaterThanOrEqual,
                    ]
                    .into_iter()
                    .map(Cond::Int)
                    .collect()
                };
                for cond in conds {
                    let bits = setp(cond, ty, ca, cb);
                    for i in 0..ca.len() {
                        let want = match cond {
                            Cond::Int(cc) => ops::icmp(cc, t, ca[i], cb[i]),
                            Cond::Float(cc) => ops::fcmp(cc, t, ca[i], cb[i]).unwrap(),
                        };
                        assert_eq!((bits >> i) & 1 != 0, want, "{cond:?}.{ty}");
                    }
                }
            }
        }
    }
}
