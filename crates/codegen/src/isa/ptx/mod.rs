//! The PTX target: allocated machine IR to PTX text that NVIDIA's `ptxas` accepts.
//!
//! The emitter works on **allocated** MIR (physical registers only, no block parameters,
//! spills explicit). Each physical register becomes one PTX register of its class
//! (`$r3` → `%r3` in `.reg .b32 %r<N>`, `$rd3` → `%rd3` in `.b64`, `$p3` → `%p3` in
//! `.pred`), so the register counts `ptxas` sees are the allocator's. Where an MIR
//! operation has no single PTX instruction with exactly the IR's semantics (`docs/ir.md`),
//! the emitter expands it using a few private temporaries (`%tr<n>`, `%trd<n>`, `%tp<n>`)
//! that live only within the expansion of one instruction.
//!
//! What the kernel looks like:
//!
//! ```text
//! .version 7.0
//! .target sm_70
//! .address_size 64
//! .visible .entry NAME(.param .u64 p0, ...)
//! {
//!     .shared .align 16 .b8 __wl_shared[SIZE];    // the block's shared window
//!     .reg .b32 %r<N>; .reg .b64 %rd<N>; .reg .pred %p<N>;   // allocated registers
//!     .reg .b32 %tr<N>; ...                                   // expansion temporaries
//!     .local .align 8 .b8 __wl_local[FRAME];       // locals, then spill slots
//!     prologue: window bases, zero-initialisation of the windows
//! $Lbb0: ...
//! }
//! ```
//!
//! Shared and local addresses in the IR are byte offsets into windows that start at 0; the
//! emitter adds the address of `__wl_shared` / `__wl_local` (kept in `%wl_sbase` /
//! `%wl_lbase`) to every register address, and uses `[__wl_shared+OFF]` for absolute ones.
//! Both windows are zero-initialised by the prologue, as the IR requires (shared memory
//! cooperatively by the whole block, then `bar.sync 0`).
//!
//! # How each operation keeps the IR's semantics
//!
//! Sub-word (`i8`/`i16`) values live in `b32` registers with unspecified upper bits; an
//! operation whose result depends on them first widens its sources into temporaries
//! (`cvt.s32.s8`/`cvt.s32.s16` to sign-extend, `and` to zero-extend) and then works in
//! 32 bits. Integer immediates are written as hex literals of the instruction's width.
//!
//! | MIR | PTX |
//! |---|---|
//! | `add`/`sub`/`mul`/`and`/`or`/`xor` | `add.s`/`sub.s`/`mul.lo.s`/`and.b`/... of 32 or 64 bits; on `pred`: `and.pred`/..., immediates folded |
//! | `mulhi` | `mul.hi.{s,u}`; sub-word: widen, `mul.lo.s32`, shift right by W |
//! | `div.u`/`rem.u` | `setp.eq` zero test, `div.u`/`rem.u`, `selp` all-ones / dividend (PTX leaves x/0 unspecified) |
//! | `div.s`/`rem.s` | divide by 1 when the divisor is 0 or -1, then `selp` -1 / `neg a` (so `MIN/-1 = MIN`) for div, the dividend for rem by 0 (`x % 1 = 0` covers -1); immediate divisors are resolved statically |
//! | `min`/`max` | `min.{s,u}`/`max.{s,u}` after widening |
//! | `shl`/`shr.u`/`shr.s` | `shl.b`/`shr.u`/`shr.s`: PTX clamps amounts above the width as the IR does; sub-word amounts are zero-extended, 64-bit amounts `min.u64 ..., 64` then narrowed to the `u32` PTX wants |
//! | `popc`/`clz` | `popc.b`/`clz.b` (`u32` count, widened for 64 bits); sub-word: zero-extend, `clz` minus `32 - W` |
//! | `ctz` | `brev` + `clz`; sub-word: `or` in bit W first, so `ctz 0 = W` |
//! | `fadd`/`fsub`/`fmul`/`fma` | `.rn` forms; `f32` NaN results are already `0x7fffffff` on NVIDIA hardware; `f64` results go through `testp.notanumber` + `selp` to the canonical NaN |
//! | `fdiv`/`fsqrt` | `div.rn`/`sqrt.rn` (software sequences in `ptxas` for `f32`), canonicalised for both types |
//! | `fmin`/`fmax` | `min`/`max` (a NaN operand yields the other), NaN canonicalised, and when `a == b` the bitwise `or` (min) / `and` (max) of the operands, which orders `-0 < +0` |
//! | `fneg`/`fabs` | `xor`/`and` of the sign bit: NaN payloads pass unchanged |
//! | `setp` | `setp.{eq,ne,lt,le,gt,ge}.s` / `{eq,ne,lo,ls,hi,hs}.u` after widening; floats `eq ne lt le gt ge equ neu ltu leu gtu geu num nan`; `pred` `eq`/`ne` by `xor.pred` |
//! | `selp` | `selp.b32`/`.b64`; `pred`: `(c and a) or (!c and b)` |
//! | `cvt` zext/sext | full-width results: `and` / `cvt.s32.s8`..., `cvt.{u,s}64.{u,s}32`, from `pred` `selp 1/-1, 0` |
//! | `cvt` trunc | `cvt.u32.u64` or a move; to `pred`: `and 1` + `setp.ne` |
//! | `cvt` ftos/ftou | `cvt.rzi.{s,u}{32,64}` (saturating), sub-word clamped with `max`/`min`, `selp` 0 when `testp.notanumber` |
//! | `cvt` stof/utof, fext, ftrunc | `cvt.rn` after widening; `cvt.f64.f32`, `cvt.rn.f32.f64`, NaN canonicalised |
//! | `ld`/`st` | `ld`/`st.{space}.{u8,u16,u32,u64}` (float immediates stored as their bits); `pred` as one byte: `selp` 1/0 + `st.u8`, `ld.u8` + `setp.ne` |
//! | `atom`/`cas` | `fence.sc.{gpu,cta}` then `atom.acq_rel.{gpu,cta}.{global,shared}.{add.u,min.s,max.s,min.u,max.u,and.b,or.b,xor.b,exch.b,cas.b}{32,64}` (sequentially consistent, as the IR's); local: load, operation, store |
//! | `bar` | `bar.sync 0` |
//! | `spill`/`reload` | `st.local`/`ld.local` at `[__wl_local+OFFSET]`; `pred` as a byte |
//! | `jump` | `bra.uni`, omitted when the target is the next block |
//! | `branch` | `@p bra` (divergent) or `@p bra.uni` (uniform) to one side, `bra.uni` to the other; the side that is the next block falls through, the condition inverted if need be |
//! | `ret` | `ret` |
//! | special registers | `%tid`, `%ctaid`, `%ntid`, `%nctaid`, `%laneid` (the IR's `lane_id` with a warp size of 32) |
//!
//! Kernel parameters are `.param .u8` (`i1`, `i8`), `.u16`, `.u32`, `.u64`, `.f32`,
//! `.f64`, named `p0`, `p1`, ..., read with `ld.param`; an `i1` is 0 or 1 in its byte.
//! `.loc` line information needs no debug target: `ptxas` accepts `.file`/`.loc` in a
//! plain `.target sm_70` module, as `nvcc -lineinfo` writes them.
//!
//! [`ptxas`] finds and runs NVIDIA's assembler, for tests and for users who want the
//! check.

mod emit;
mod isa;
mod name;
pub mod ptxas;

pub use isa::PtxIsa;

#[cfg(test)]
mod tests;

use thiserror::Error;

use crate::mir::{MBlock, MirFunction, Reg};

/// How to emit PTX.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxOptions {
    /// The `.version` directive, `(major, minor)`.
    pub version: (u32, u32),
    /// The `.target` architecture, `sm_NN`.
    pub target: String,
    /// When set, the name of the source file for `.file 1 "NAME"`, and `.loc` line
    /// information before every instruction whose source line differs from the last one.
    pub file_name: Option<String>,
    /// Zero-initialise the shared and local windows at kernel start, as the IR's
    /// semantics require. Turning it off saves the prologue for kernels known not to read
    /// memory before writing it.
    pub zero_init: bool,
}

impl Default for PtxOptions {
    fn default() -> Self {
        PtxOptions::for_target("sm_70").unwrap_or(PtxOptions {
            version: (7, 0),
            target: "sm_70".into(),
            file_name: None,
            zero_init: true,
        })
    }
}

impl PtxOptions {
    /// Options for architecture `target` (`sm_NN`) with the smallest `.version` that
    /// supports it and everything the emitter uses; `None` for an architecture the emitter
    /// does not know (see [`min_ptx_version`]).
    pub fn for_target(target: &str) -> Option<PtxOptions> {
        Some(PtxOptions {
            version: min_ptx_version(target)?,
            target: target.to_string(),
            file_name: None,
            zero_init: true,
        })
    }
}

/// The smallest PTX ISA version that can target `target` and has everything the emitter
/// uses: memory-model atomics (`atom.acq_rel`, `fence.sc`) need PTX 6.0 on `sm_70`, and the
/// emitter asks for at least 7.0 everywhere. `sm_70`, `sm_72`, `sm_75` and `sm_80` → 7.0;
/// `sm_86` → 7.1; `sm_87` → 7.4; `sm_89` and `sm_90` → 7.8. Older architectures lack the
/// memory model and are refused (`None`), as are architectures not in this table.
///
/// `ptxas` also accepts PTX whose `.target` is older than its `-arch`, so a `.target sm_70`
/// kernel runs everywhere from `sm_70` on.
pub fn min_ptx_version(target: &str) -> Option<(u32, u32)> {
    match target {
        "sm_70" | "sm_72" | "sm_75" | "sm_80" => Some((7, 0)),
        "sm_86" => Some((7, 1)),
        "sm_87" => Some((7, 4)),
        "sm_89" | "sm_90" => Some((7, 8)),
        _ => None,
    }
}

/// Why a function could not be emitted as PTX.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum PtxError {
    /// The options name an architecture the emitter does not know.
    #[error(
        "unknown PTX target `{0}` (known: sm_70, sm_72, sm_75, sm_80, sm_86, sm_87, sm_89, sm_90)"
    )]
    UnknownTarget(String),
    /// The `.version` is older than the target needs.
    #[error("PTX ISA {}.{} is too old for {target}: it needs {}.{}", .version.0, .version.1, .min.0, .min.1)]
    VersionTooOld {
        /// The requested version.
        version: (u32, u32),
        /// The target.
        target: String,
        /// The smallest version that works.
        min: (u32, u32),
    },
    /// The kernel's or the file's name cannot be written in PTX.
    #[error("`{0}` is not a valid PTX identifier")]
    BadName(String),
    /// The function has no blocks.
    #[error("the function has no blocks")]
    Empty,
    /// The function still has virtual registers, block parameters or branch arguments:
    /// it has not been through register allocation.
    #[error("{block}: {what}: the PTX emitter needs allocated MIR")]
    NotAllocated {
        /// Where.
        block: MBlock,
        /// What was found.
        what: String,
    },
    /// An instruction combines operation, types and registers in a way no IR
    /// instruction lowers to.
    #[error("{block}: instruction {index}: {message}")]
    InvalidInst {
        /// The block.
        block: MBlock,
        /// The instruction's index in its block.
        index: usize,
        /// What is wrong.
        message: String,
    },
    /// A block does not end with exactly one terminator.
    #[error("{0}: a block must end with exactly one terminator")]
    BadTerminator(MBlock),
    /// A register of the wrong class for its operand.
    #[error("{block}: instruction {index}: register {reg} has the wrong class")]
    WrongClass {
        /// The block.
        block: MBlock,
        /// The instruction's index in its block.
        index: usize,
        /// The register.
        reg: Reg,
    },
}

/// Emits `func`, which must be allocated MIR, as a PTX module holding one `.entry`.
pub fn emit_ptx(func: &MirFunction, opts: &PtxOptions) -> Result<String, PtxError> {
    emit_ptx_module(core::slice::from_ref(func), opts)
}

/// Emits a PTX module holding every kernel of `funcs` (allocated MIR), each as its own
/// `.entry` with its own shared window.
pub fn emit_ptx_module(funcs: &[MirFunction], opts: &PtxOptions) -> Result<String, PtxError> {
    check_version(opts)?;
    let mut out = emit::header(opts);
    for (i, func) in funcs.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        emit::Emitter::new(func, opts).run_into(&mut out)?;
    }
    Ok(out)
}

fn check_version(opts: &PtxOptions) -> Result<(), PtxError> {
    let min = min_ptx_version(&opts.target)
        .ok_or_else(|| PtxError::UnknownTarget(opts.target.clone()))?;
    if opts.version < min {
        return Err(PtxError::VersionTooOld {
            version: opts.version,
            target: opts.target.clone(),
            min,
        });
    }
    Ok(())
}

/// Is `s` a PTX identifier: a letter followed by letters, digits, `_` and `$`, or one of
/// `_`, `$`, `%` followed by at least one of those.
pub(crate) fn is_ptx_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    let rest_ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    if first.is_ascii_alphabetic() {
        chars.all(rest_ok)
    } else if matches!(first, '_' | '$' | '%') {
        let rest: Vec<char> = chars.collect();
        !rest.is_empty() && rest.into_iter().all(rest_ok)
    } else {
        false
    }
}
