//! warplift's SIMT bytecode: the one definition of the machine's instruction set, shared
//! by the compiler (which encodes allocated machine IR into it) and the emulator (which
//! runs it), in the manner of Cranelift's Pulley.
//!
//! ```text
//!  warplift-codegen: MirFunction (allocated) ──encode──▶ KernelCode (bytecode, block table, pc → srcloc)
//!  [KernelCode] ──write_object──▶ ELF: .text.<kernel>, .warplift.kernels, .debug_line/.debug_info
//!  ELF bytes ──load_object──▶ LoadedObject: per kernel a validated DecodedKernel + line table
//!  LoadedObject ──disassemble_object──▶ listing with pcs and source lines
//!  DecodedKernel ──▶ warplift-emu: runs the table's operations directly
//! ```
//!
//! - [`ops`]: the opcode table `for_each_op!`, and what is generated from it: the
//!   operation enum [`Op`], its encoder, decoder and disassembly;
//! - [`operands`] and [`regs`]: the operand types and modifier enums ([`MType`],
//!   [`Operand`], [`BinOp`], ...; the operation enums come from the table in
//!   `op_tables.rs`) and the register classes, which the compiler's machine IR reuses;
//! - [`decode()`]: decoding and the one validator of which operation takes which types
//!   and register classes ([`validate_inst`]);
//! - [`disasm`]: listings; [`object`]: the ELF + DWARF objects and their loader.
//!
//! Nothing here trusts its input: [`decode()`] and [`load_object`] validate everything and
//! return typed errors on any malformed, truncated or inconsistent bytes. The format, its
//! version policy and the object layout are documented in `docs/bytecode.md`.

mod code;
mod codes;
pub mod decode;
pub mod disasm;
pub mod object;
mod op_tables;
pub mod operands;
pub mod ops;
pub mod regs;

pub use code::{InstLoc, KernelCode};
pub use decode::{decode, validate_inst, BlockInfo, DecodeError, DecodedKernel, Inst, KernelInfo};
pub use disasm::{disassemble, disassemble_object, disassemble_object_with_source};
pub use object::{
    load_object, write_object, LineTable, LoadError, LoadedKernel, LoadedObject, ObjectError,
};
pub use operands::{Address, BinOp, Cond, CvtOp, Guard, MType, Operand, SpecialReg, TernOp, UnOp};
pub use ops::{Op, Pc, Role, MAX_REGS_PER_CLASS};
pub use regs::{Reg, RegClass};

/// The version of the bytecode and object format this crate writes and reads. Any change
/// to an encoding bumps it; loaders accept only the versions they know.
pub const FORMAT_VERSION: u16 = 2;
