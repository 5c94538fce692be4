//! What can stop a run: faults of the program, and setup errors.
//!
//! Faults are the program's, not the emulator's: an out-of-bounds or misaligned access, a
//! barrier reached by only some threads, or a run past the cycle or instruction limit.
//! Each names the kernel, the thread block, the thread, the instruction (its address and
//! text), the code block and the source location, so a fault can be found in the `.wir`
//! text:
//!
//! ```text
//! out-of-bounds global load of 4 bytes at 0x10000400 (...) in kernel %saxpy, block (0,0,0),
//! thread (3,0,0), pc 0x0040 in block1 (`ld.global.f32 $r3, [$rd2]`), saxpy.wir:19:5
//! ```

use crate::config::ConfigError;
use crate::program::ProgramError;
use core::fmt;
use warplift_ir::interp::Access;
use warplift_ir::{AddrSpace, SourceLoc};

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FaultKind {
    /// The accessed bytes are not all inside a buffer or window.
    #[error("out-of-bounds {space} {access} of {size} bytes at {} ({detail})", Addr(*.addr))]
    OutOfBounds {
        /// The address space.
        space: AddrSpace,
        /// The kind of access.
        access: Access,
        /// Bytes accessed.
        size: u32,
        /// The effective address (address + offset, without wrapping).
        addr: i128,
        /// Which buffer or window the access missed.
        detail: String,
    },
    /// The effective address is not a multiple of the access size.
    #[error("misaligned {space} {access} of {size} bytes at {}", Addr(*.addr))]
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
    /// Not every live thread of the block reached the same barrier.
    #[error("barrier divergence: {0}")]
    BarrierDivergence(String),
    /// A branch marked uniform (never splitting the warp) sent the warp's active threads
    /// both ways: the code generator's divergence analysis was wrong.
    #[error("a uniform branch split the warp: {taken} threads taken, {not_taken} not")]
    UniformBranchDiverged {
        /// Active threads that took the branch.
        taken: u32,
        /// Active threads that did not.
        not_taken: u32,
    },
    /// The run went past the cycle limit.
    #[error("cycle limit of {0} exceeded")]
    CycleLimit(u64),
    /// The run went past the warp-instruction limit.
    #[error("warp-instruction limit of {0} exceeded")]
    InstructionLimit(u64),
    /// A warp issued more instructions than its budget
    /// ([`MachineConfig::max_warp_steps`](crate::MachineConfig), or
    /// [`RUNAWAY_FACTOR`](crate::config::RUNAWAY_FACTOR) times the longest finished warp):
    /// it makes no progress, most likely an infinite loop.
    #[error(
        "runaway warp: it issued {issued} instructions without finishing, past its budget \
         of {budget} (an infinite loop? raise max_warp_steps if the kernel is meant to run \
         this long)"
    )]
    Runaway {
        /// Instructions the warp had issued.
        issued: u64,
        /// Its budget.
        budget: u64,
    },
    /// The program reached a state validation cannot rule out (a reconvergence stack
    /// entry that resumes at exit with live threads).
    #[error("malformed program: {0}")]
    Malformed(String),
}

/// A fault at an instruction, with everything needed to find it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{kind} in kernel %{kernel}, block {}, thread {}, pc {pc_label} in {code_block} (`{inst}`){}",
    Xyz(self.block),
    Xyz(self.thread),
    Line(self.srcloc, self.source_name.as_deref())
)]
pub struct Fault {
    /// What went wrong.
    pub kind: FaultKind,
    /// The kernel.
    pub kernel: String,
    /// The thread block's id in the grid.
    pub block: [u32; 3],
    /// The thread's id in its block (the first faulting lane's).
    pub thread: [u32; 3],
    /// The instruction's index in the program.
    pub pc: u32,
    /// The instruction's address as messages show it: its byte pc (`0x0040`) when the
    /// program came from bytecode, else `#` and its index (see `Program::pc_label`).
    pub pc_label: String,
    /// The instruction's text (see `Program::inst_text`).
    pub inst: String,
    /// The name of the code block holding the instruction.
    pub code_block: String,
    /// The instruction's source location.
    pub srcloc: SourceLoc,
    /// The `.wir` file of the source location, when known.
    pub source_name: Option<String>,
}

/// Why a run stopped.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EmuError {
    /// The program faulted.
    #[error(transparent)]
    Fault(Box<Fault>),
    /// The program is invalid.
    #[error(transparent)]
    Program(#[from] ProgramError),
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The run's monitor stopped it (Ctrl-C): the statistics so far and where each warp
    /// stood.
    #[error("{0}")]
    Interrupted(Box<crate::monitor::Interrupted>),
    /// The launch does not fit the kernel or the machine.
    #[error("cannot run kernel %{kernel}: {message}")]
    Setup {
        /// The kernel.
        kernel: String,
        /// What is wrong.
        message: String,
    },
}

impl EmuError {
    /// The fault, if the run stopped at one.
    pub fn fault(&self) -> Option<&Fault> {
        match self {
            EmuError::Fault(f) => Some(f),
            _ => None,
        }
    }
}

/// Prints `(x,y,z)`.
struct Xyz([u32; 3]);

impl fmt::Display for Xyz {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({},{},{})", self.0[0], self.0[1], self.0[2])
    }
}

/// Prints `, saxpy.wir:14:5` (`, line 14:5` without a file name), or nothing for an
/// unknown location.
struct Line<'a>(SourceLoc, Option<&'a str>);

impl fmt::Display for Line<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.0.is_unknown(), self.1) {
            (true, _) => Ok(()),
            (false, Some(file)) => write!(f, ", {file}:{}", self.0),
            (false, None) => write!(f, ", line {}", self.0),
        }
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
