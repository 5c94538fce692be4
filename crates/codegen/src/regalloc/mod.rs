//! Register allocation: lowered MIR (SSA over virtual registers, block parameters) becomes
//! allocated MIR (physical registers only, moves, spills and reloads explicit), by
//! [regalloc2](https://docs.rs/regalloc2).
//!
//! ```text
//!  lowered MIR ──prepare──▶ no unreachable blocks, edges split for regalloc2's CFG rules
//!              ──adapter──▶ regalloc2::Function (blocks in reverse postorder, flattened
//!                           instructions, operands, edges)
//!              ──regalloc2 (+ its checker, in debug builds and tests)──▶ Output
//!              ──apply────▶ allocated MIR: physical registers, Mov / Spill / Reload,
//!                           registers renumbered densely, statistics
//! ```
//!
//! **Register files.** A target describes how many registers of each class a thread may use
//! ([`RegisterFile`]); regalloc2 numbers at most 64 physical registers per class, so each
//! class has 1 to 64. The classes map onto regalloc2's three: `b32` → `Int`, `b64` →
//! `Float`, `pred` → `Vector`.
//!
//! **Reservations.** The linearizer, which runs after allocation, needs a few registers
//! (guards and region flags) that nothing else uses. It asks for them before allocation with
//! a [`ReservationRequest`]; the highest-numbered registers of each class are left out of the
//! allocatable set, so no allocated value can land in them, and [`AllocatedFunction::reserved`]
//! names them afterwards.
//!
//! **Dense numbering.** regalloc2 spreads values over the whole allocatable set (it starts
//! each search at a different register to reduce contention), so a kernel with three live
//! values may touch registers 0, 17 and 40. A thread's register count decides occupancy, so
//! after allocation the registers of each class are renumbered in order onto `0..k`, and the
//! reserved ones onto `k..k+n`. Renaming physical registers bijectively within a class
//! changes nothing: no instruction constrains which register it gets. The kernel then needs
//! exactly `k + n` registers of the class ([`RegallocStats::regs_total`]).
//!
//! **Operand positions.** Every source is read early and every destination written late, so
//! an instruction's destination may share a register with one of its sources; every target
//! reads all sources before it writes its destination.

mod adapter;
mod apply;
mod prepare;
#[cfg(test)]
mod tests;

use crate::mir::{MBlock, MirFunction, Reg, RegClass};
use regalloc2 as ra;
use thiserror::Error;

/// The registers a target gives a thread, per class.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct RegisterFile {
    /// `b32` registers, 1 to 64.
    pub b32: u32,
    /// `b64` registers, 1 to 64.
    pub b64: u32,
    /// Predicate registers, 1 to 64.
    pub pred: u32,
}

impl RegisterFile {
    /// The most registers of one class: regalloc2 encodes a physical register in 6 bits.
    pub const MAX_PER_CLASS: u32 = ra::PReg::MAX as u32 + 1;

    /// The largest register file: 64 registers of each class.
    pub const MAX: RegisterFile = RegisterFile {
        b32: Self::MAX_PER_CLASS,
        b64: Self::MAX_PER_CLASS,
        pred: Self::MAX_PER_CLASS,
    };

    /// A register file with these counts.
    pub fn new(b32: u32, b64: u32, pred: u32) -> Self {
        RegisterFile { b32, b64, pred }
    }

    /// The number of registers of class `class`.
    pub fn count(&self, class: RegClass) -> u32 {
        match class {
            RegClass::B32 => self.b32,
            RegClass::B64 => self.b64,
            RegClass::Pred => self.pred,
        }
    }

    /// Checks that every class has 1 to [`Self::MAX_PER_CLASS`] registers.
    pub fn validate(&self) -> Result<(), RegallocError> {
        for class in RegClass::ALL {
            let count = self.count(class);
            if !(1..=Self::MAX_PER_CLASS).contains(&count) {
                return Err(RegallocError::RegisterFile { class, count });
            }
        }
        Ok(())
    }

    /// Reserves the registers `request` asks for: the highest-numbered of each class.
    /// Fails if the file is invalid or a class would keep no register to allocate.
    pub fn reserve(&self, request: &ReservationRequest) -> Result<Reservation, RegallocError> {
        self.validate()?;
        let mut allocatable = [0; 3];
        for class in RegClass::ALL {
            let available = self.count(class);
            let requested = request.count(class);
            if requested >= available {
                return Err(RegallocError::Reservation {
                    class,
                    requested,
                    available,
                });
            }
            allocatable[class.index()] = available - requested;
        }
        Ok(Reservation {
            file: *self,
            allocatable,
        })
    }
}

impl Default for RegisterFile {
    /// [`RegisterFile::MAX`].
    fn default() -> Self {
        Self::MAX
    }
}

/// How many registers of each class a later pass needs kept out of allocation.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ReservationRequest {
    counts: [u32; 3],
}

impl ReservationRequest {
    /// A request for no register.
    pub fn none() -> Self {
        Self::default()
    }

    /// Asks for `n` more registers of class `class`.
    pub fn reserve(&mut self, class: RegClass, n: u32) -> &mut Self {
        let c = &mut self.counts[class.index()];
        *c = c.saturating_add(n);
        self
    }

    /// This request with `n` more registers of class `class`.
    pub fn with(mut self, class: RegClass, n: u32) -> Self {
        self.reserve(class, n);
        self
    }

    /// The number of registers of class `class` asked for.
    pub fn count(&self, class: RegClass) -> u32 {
        self.counts[class.index()]
    }

    /// Does the request ask for nothing?
    pub fn is_empty(&self) -> bool {
        self.counts == [0; 3]
    }
}

/// A register file split into allocatable and reserved registers: per class, registers
/// `0..allocatable` go to the allocator and the rest are reserved.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Reservation {
    file: RegisterFile,
    allocatable: [u32; 3],
}

impl Reservation {
    /// The register file.
    pub fn file(&self) -> RegisterFile {
        self.file
    }

    /// The number of registers of class `class` the allocator may use.
    pub fn allocatable(&self, class: RegClass) -> u32 {
        self.allocatable[class.index()]
    }

    /// The number of reserved registers of class `class`.
    pub fn reserved(&self, class: RegClass) -> u32 {
        self.file.count(class) - self.allocatable(class)
    }

    /// regalloc2's view: the allocatable registers, all preferred, no scratch register
    /// (regalloc2 finds a free register or a stack slot to break move cycles).
    fn machine_env(&self) -> ra::MachineEnv {
        let mut preferred = [ra::PRegSet::empty(); 3];
        for class in RegClass::ALL {
            for hw in 0..self.allocatable(class) {
                preferred[class.index()].add(ra::PReg::new(hw as usize, ra_class(class)));
            }
        }
        ra::MachineEnv {
            preferred_regs_by_class: preferred,
            non_preferred_regs_by_class: [ra::PRegSet::empty(); 3],
            scratch_by_class: [None; 3],
            fixed_stack_slots: Vec::new(),
        }
    }
}

/// The reserved physical registers of an allocated function, by class.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ReservedRegs {
    regs: [Vec<Reg>; 3],
}

impl ReservedRegs {
    /// The reserved registers of class `class`, in increasing order.
    pub fn of(&self, class: RegClass) -> &[Reg] {
        &self.regs[class.index()]
    }

    /// Every reserved register.
    pub fn iter(&self) -> impl Iterator<Item = Reg> + '_ {
        self.regs.iter().flatten().copied()
    }

    /// Is `reg` one of the reserved registers?
    pub fn contains(&self, reg: Reg) -> bool {
        self.of(reg.class()).contains(&reg)
    }
}

/// What register allocation did to a function. Every count is over the allocated function.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RegallocStats {
    /// Per class (indexed by [`RegClass::index`]): registers holding values, numbered
    /// `0..regs_used`.
    pub regs_used: [u32; 3],
    /// Per class: reserved registers, numbered right after the used ones.
    pub reserved: [u32; 3],
    /// Spill slots in the thread's local frame (`MirFunction::spill_slots`).
    pub spill_slots: u32,
    /// `Spill` instructions inserted.
    pub spills: u32,
    /// `Reload` instructions inserted.
    pub reloads: u32,
    /// Register-to-register `Mov` instructions inserted (block-parameter copies and live-range
    /// splits).
    pub moves: u32,
    /// Blocks inserted to split edges.
    pub split_edges: u32,
}

impl RegallocStats {
    /// Registers of class `class` the kernel needs: used plus reserved.
    pub fn regs_total(&self, class: RegClass) -> u32 {
        self.regs_used[class.index()] + self.reserved[class.index()]
    }
}

impl core::fmt::Display for RegallocStats {
    /// One line: `b32 5+2, b64 1, pred 2+1 registers; 3 spill slots, 4 spills, 6 reloads,
    /// 2 moves, 1 split edge` (`+n`: reserved registers).
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for class in RegClass::ALL {
            let (used, reserved) = (self.regs_used[class.index()], self.reserved[class.index()]);
            let sep = if class == RegClass::Pred {
                " registers; "
            } else {
                ", "
            };
            if reserved > 0 {
                write!(f, "{class} {used}+{reserved}{sep}")?;
            } else {
                write!(f, "{class} {used}{sep}")?;
            }
        }
        let plural = |n: u32, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        write!(
            f,
            "{}, {}, {}, {}, {}",
            plural(self.spill_slots, "spill slot"),
            plural(self.spills, "spill"),
            plural(self.reloads, "reload"),
            plural(self.moves, "move"),
            plural(self.split_edges, "split edge")
        )
    }
}

/// The result of register allocation.
#[derive(Clone, Debug)]
pub struct AllocatedFunction {
    /// The allocated function: physical registers only, no block parameters or branch
    /// arguments, `spill_slots` set.
    pub func: MirFunction,
    /// Statistics.
    pub stats: RegallocStats,
    /// The reserved registers, which no instruction of `func` uses.
    pub reserved: ReservedRegs,
}

/// Which of regalloc2's allocators to run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// The backtracking allocator (regalloc2's "Ion"): live-range splitting, good code.
    #[default]
    Backtracking,
    /// The single-pass allocator (regalloc2's "Fastalloc"): fast, more moves and spills.
    Fast,
}

/// Options of [`allocate_with`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct AllocOptions {
    /// The allocator.
    pub algorithm: Algorithm,
    /// Run regalloc2's checker on the result (symbolic verification that every use reads
    /// the value its virtual register holds). On by default in debug builds.
    pub check: bool,
}

impl Default for AllocOptions {
    fn default() -> Self {
        AllocOptions {
            algorithm: Algorithm::default(),
            check: cfg!(debug_assertions),
        }
    }
}

/// Why a function could not be allocated.
#[derive(Clone, Debug, Error)]
pub enum RegallocError {
    /// A register class with no register, or more than regalloc2 can number.
    #[error("register file has {count} {class} registers; each class needs 1 to 64")]
    RegisterFile {
        /// The class.
        class: RegClass,
        /// Its register count.
        count: u32,
    },
    /// A reservation that would leave a class with no register to allocate.
    #[error(
        "cannot reserve {requested} of {available} {class} registers: none would be left to allocate"
    )]
    Reservation {
        /// The class.
        class: RegClass,
        /// Registers asked for.
        requested: u32,
        /// Registers in the file.
        available: u32,
    },
    /// One instruction needs more registers of a class at once than can be allocated.
    #[error(
        "%{kernel}: an instruction of {block} needs {needed} {class} registers at once, but only {available} can be allocated"
    )]
    TooFewRegisters {
        /// The kernel.
        kernel: String,
        /// The block of the instruction.
        block: MBlock,
        /// The class.
        class: RegClass,
        /// Registers the instruction needs.
        needed: u32,
        /// Allocatable registers of the class.
        available: u32,
    },
    /// The input is not lowered MIR (a physical register, a guarded definition, a block
    /// without terminator, mismatched branch arguments...).
    #[error("%{kernel}: not lowered MIR: {detail}")]
    Malformed {
        /// The kernel.
        kernel: String,
        /// What is wrong, and where.
        detail: String,
    },
    /// regalloc2 refused the function.
    #[error("%{kernel}: register allocation failed: {detail}")]
    Allocator {
        /// The kernel.
        kernel: String,
        /// regalloc2's error, described in MIR terms.
        detail: String,
        /// regalloc2's error.
        #[source]
        error: ra::RegAllocError,
    },
    /// regalloc2's checker found an allocation that does not preserve the program.
    #[error("%{kernel}: the register allocation checker failed: {detail}")]
    Checker {
        /// The kernel.
        kernel: String,
        /// The checker's findings.
        detail: String,
    },
}

/// Allocates `func` with the default [`AllocOptions`], keeping out the registers `request`
/// reserves.
pub fn allocate(
    func: &MirFunction,
    regs: &RegisterFile,
    request: &ReservationRequest,
) -> Result<AllocatedFunction, RegallocError> {
    allocate_with(func, regs, request, &AllocOptions::default())
}

/// `func` with the control flow register allocation gives it before allocating:
/// unreachable blocks dropped and the edges regalloc2 cannot place moves on split. A
/// machine pass that plans its reservation on the lowered kernel looks at this shape, the
/// one it will run on. `None` when `func` is not lowered MIR (allocation refuses it too).
pub fn allocation_cfg(func: &MirFunction) -> Option<MirFunction> {
    let mut f = func.clone();
    prepare::check_input(&mut f).ok()?;
    prepare::prepare(&mut f);
    Some(f)
}

/// Allocates the lowered function `func` into the register file `regs`, keeping out the
/// registers `request` reserves.
pub fn allocate_with(
    func: &MirFunction,
    regs: &RegisterFile,
    request: &ReservationRequest,
    options: &AllocOptions,
) -> Result<AllocatedFunction, RegallocError> {
    allocate_owned(func.clone(), regs, request, options)
}

/// [`allocate_with`] for a caller that no longer needs the lowered function: it is
/// rewritten in place instead of copied.
pub fn allocate_owned(
    f: MirFunction,
    regs: &RegisterFile,
    request: &ReservationRequest,
    options: &AllocOptions,
) -> Result<AllocatedFunction, RegallocError> {
    regs.reserve(request)?;
    allocate_prepared(prepare_owned(f)?, regs, request, options)
}

/// A lowered function in the shape allocation gives it ([`allocation_cfg`]), ready to
/// allocate: a caller that plans on that shape ([`crate::passes::MachinePass::plan`])
/// and then allocates prepares the function once.
pub struct Prepared {
    func: MirFunction,
    split_edges: u32,
}

impl Prepared {
    /// The function in its allocation shape.
    pub fn func(&self) -> &MirFunction {
        &self.func
    }
}

/// Checks the lowered function `f` and gives it its allocation shape, in place.
pub fn prepare_owned(mut f: MirFunction) -> Result<Prepared, RegallocError> {
    if let Err(detail) = prepare::check_input(&mut f) {
        return Err(RegallocError::Malformed {
            kernel: f.name.clone(),
            detail,
        });
    }
    let split_edges = prepare::prepare(&mut f);
    Ok(Prepared {
        func: f,
        split_edges,
    })
}

/// [`allocate_owned`] for a function [`prepare_owned`] prepared.
pub fn allocate_prepared(
    prepared: Prepared,
    regs: &RegisterFile,
    request: &ReservationRequest,
    options: &AllocOptions,
) -> Result<AllocatedFunction, RegallocError> {
    let reservation = regs.reserve(request)?;
    let Prepared {
        func: mut f,
        split_edges,
    } = prepared;
    let name = f.name.clone();
    let malformed = |detail: String| RegallocError::Malformed {
        kernel: name.clone(),
        detail,
    };
    let ra_order = prepare::reverse_postorder(&f);
    let adapter = adapter::Adapter::build(&mut f, ra_order, &reservation)?;

    let env = reservation.machine_env();
    let ra_options = ra::RegallocOptions {
        verbose_log: false,
        validate_ssa: cfg!(debug_assertions),
        algorithm: match options.algorithm {
            Algorithm::Backtracking => ra::Algorithm::Ion,
            Algorithm::Fast => ra::Algorithm::Fastalloc,
        },
    };
    let output =
        ra::run(&adapter, &env, &ra_options).map_err(|error| RegallocError::Allocator {
            kernel: f.name.clone(),
            detail: adapter.describe_error(&f, &error),
            error,
        })?;
    if options.check {
        let mut checker = ra::checker::Checker::new(&adapter, &env);
        checker.prepare(&output);
        checker.run().map_err(|errors| RegallocError::Checker {
            kernel: f.name.clone(),
            detail: format!("{errors:?}"),
        })?;
    }

    let counts = apply::apply(&mut f, &adapter, &output).map_err(malformed)?;
    let (regs_used, reserved) = apply::renumber(&mut f, &reservation);
    let stats = RegallocStats {
        regs_used,
        reserved: RegClass::ALL.map(|class| reservation.reserved(class)),
        spill_slots: f.spill_slots,
        spills: counts.spills,
        reloads: counts.reloads,
        moves: counts.moves,
        split_edges,
    };
    Ok(AllocatedFunction {
        func: f,
        stats,
        reserved,
    })
}

/// regalloc2's class for a MIR register class.
fn ra_class(class: RegClass) -> ra::RegClass {
    match class {
        RegClass::B32 => ra::RegClass::Int,
        RegClass::B64 => ra::RegClass::Float,
        RegClass::Pred => ra::RegClass::Vector,
    }
}

/// The MIR register class of a regalloc2 class.
fn mir_class(class: ra::RegClass) -> RegClass {
    match class {
        ra::RegClass::Int => RegClass::B32,
        ra::RegClass::Float => RegClass::B64,
        ra::RegClass::Vector => RegClass::Pred,
    }
}
