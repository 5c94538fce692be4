//! warplift's SIMT bytecode: the binary form of allocated machine IR that the emulator
//! runs, and the ELF objects that carry it.
//!
//! ```text
//!  MirFunction (allocated) ──encode──▶ KernelCode (bytecode, block table, pc → srcloc)
//!  [KernelCode] ──write_object──▶ ELF: .text.<kernel>, .warplift.kernels, .debug_line/.debug_info
//!  ELF bytes ──load_object──▶ LoadedObject: per kernel a validated DecodedKernel + line table
//!  LoadedObject ──disassemble_object──▶ listing with pcs and source lines
//! ```
//!
//! Every instruction is declared once in the opcode table `for_each_op!`; the encoder,
//! decoder and disassembler are generated from it ([`ops`]). The format, its version
//! policy and the object layout are documented in `docs/bytecode.md`.
//!
//! Nothing here trusts its input: [`decode()`] and [`load_object`] validate everything and
//! return typed errors on any malformed, truncated or inconsistent bytes.

mod codes;
pub mod decode;
pub mod disasm;
pub mod encode;
mod isa;
pub mod object;
pub mod ops;

pub use decode::{decode, BlockInfo, DecodeError, DecodedKernel, Inst, KernelInfo};
pub use disasm::{disassemble, disassemble_object, disassemble_object_with_source};
pub use encode::{encode, EncodeError, InstLoc, KernelCode};
pub use isa::{SimtIsa, SIMT_TRIPLE};
pub use object::{
    load_object, write_object, LineTable, LoadError, LoadedKernel, LoadedObject, ObjectError,
};
pub use ops::{Op, Pc};

/// The version of the bytecode and object format this crate writes and reads. Any change
/// to an encoding bumps it; loaders accept only the versions they know.
pub const FORMAT_VERSION: u16 = 1;
