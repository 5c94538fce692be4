//! An encoded kernel as the compiler hands it to the object writer and the emulator:
//! bytecode, metadata and the source location of every instruction.

use crate::decode::{decode, DecodeError, DecodedKernel, KernelInfo};
use crate::object::LineTable;
use warplift_ir::SourceLoc;

/// A source location of an instruction, by pc: the input of the DWARF line table.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct InstLoc {
    /// The instruction's pc.
    pub pc: u32,
    /// Where its IR instruction came from.
    pub srcloc: SourceLoc,
}

/// An encoded kernel: its bytecode, metadata and source locations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelCode {
    /// Everything the metadata section says about the kernel.
    pub info: KernelInfo,
    /// The bytecode.
    pub code: Vec<u8>,
    /// Every instruction's pc and source location, in pc order.
    pub insts: Vec<InstLoc>,
}

impl KernelCode {
    /// The kernel decoded and validated, as a loader would see it.
    pub fn decode(&self) -> Result<DecodedKernel, DecodeError> {
        decode(&self.code, &self.info)
    }

    /// The line table of the kernel: one row per change of source location, as the
    /// object's DWARF line program records it.
    pub fn line_table(&self) -> LineTable {
        let mut rows: Vec<(u32, SourceLoc)> = Vec::new();
        for i in &self.insts {
            if rows.last().is_none_or(|&(_, loc)| loc != i.srcloc) {
                rows.push((i.pc, i.srcloc));
            }
        }
        LineTable { rows }
    }
}
