//! The emulator's input: a kernel's validated SIMT instructions with its metadata.
//!
//! A [`Program`] is one kernel as the emulator runs it: the operations of the bytecode's
//! one table ([`warplift_simt::Op`], decoded once, with their guards and source
//! locations) in one array, blocks as ranges of it, and a table from each block's start
//! pc to its index, so that a branch finds its destination in one step. There is no
//! second instruction set: what the decoder accepts is what the emulator executes.
//!
//! ```text
//!   KernelCode (warplift-codegen's encode) ──Program::from_code────┐
//!   SIMT object ──load_object──Program::from_loaded / from_decoded──┴─▶ Program ──validate──▶ run
//! ```
//!
//! [`Program::validate`] checks everything the executor relies on with the bytecode's own
//! validator ([`warplift_simt::validate_inst`]: register classes and ranges, the types
//! each operation accepts, parameter and spill-slot indices, targets that are block
//! starts) and the block structure (a terminator ending every block and nowhere else),
//! so that no program, however it was made, can make the emulator panic.
//!
//! The operations have the meaning the machine IR gives them: the IR's semantics
//! (`docs/ir.md`) at the operation's type, where an `i8`/`i16` operation reads only the
//! low bits of its `b32` sources. Spills and reloads are local stores and loads at the
//! spill slot's offset in the thread's frame.

use core::fmt;
use warplift_ir::{Param, SourceLoc};
use warplift_simt::decode::Limits;
use warplift_simt::{
    self as simt, DecodedKernel, Guard, KernelCode, LineTable, LoadedKernel, Op, Pc, RegClass,
};

/// "No block": a pc where no block starts.
const NO_BLOCK: u32 = u32::MAX;

/// One instruction: an operation of the bytecode's table, its guard, and where it came
/// from in the source.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Inst {
    /// The operation.
    pub op: Op,
    /// The guard, if predicated.
    pub guard: Option<Guard>,
    /// The source location (line 0: unknown).
    pub srcloc: SourceLoc,
}

/// A basic block: a range of instructions, ending with its only terminator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockInfo {
    /// The name statistics count its executions under: the IR block it implements
    /// (`block3`), or its own name when it implements none. Several blocks may share a
    /// name; their counts add up.
    pub name: String,
    /// Index of its first instruction.
    pub start: u32,
    /// Index one past its last instruction.
    pub end: u32,
}

/// A kernel ready to run: code and metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    /// The kernel's name.
    pub name: String,
    /// The kernel's parameters, read by `ldparam` (index into this list).
    pub params: Vec<Param>,
    /// Registers used per class, indexed by [`RegClass::index`].
    pub num_regs: [u32; 3],
    /// Bytes of shared memory per thread block.
    pub shared_size: u32,
    /// Bytes of local memory per thread (local variables and spill slots).
    pub local_size: u32,
    /// The byte offset of spill slot 0 in the thread's local memory (slots are 8 bytes).
    pub spill_base: u32,
    /// Number of spill slots.
    pub spill_slots: u32,
    /// Every instruction.
    pub insts: Vec<Inst>,
    /// The blocks; block 0 is the entry.
    pub blocks: Vec<BlockInfo>,
    /// The byte pc of each instruction in the bytecode: branch targets are pcs.
    pub pcs: Vec<u32>,
    /// The `.wir` file the source locations refer to, when known (an object names it).
    pub source_name: Option<String>,
    /// For every byte pc of the code, the index of the block starting there, or
    /// [`NO_BLOCK`]: how a branch finds its destination.
    block_at_pc: Vec<u32>,
}

/// Why a program cannot be built or run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid program for kernel %{kernel}{}: {message}", self.at())]
pub struct ProgramError {
    /// The kernel.
    pub kernel: String,
    /// The block, when the problem is in one.
    pub block: Option<String>,
    /// The instruction index, when the problem is at one.
    pub pc: Option<u32>,
    /// What is wrong.
    pub message: String,
}

impl ProgramError {
    fn at(&self) -> String {
        match (&self.block, self.pc) {
            (Some(b), Some(pc)) => format!(" in {b} at pc {pc}"),
            (Some(b), None) => format!(" in {b}"),
            (None, Some(pc)) => format!(" at pc {pc}"),
            (None, None) => String::new(),
        }
    }
}

/// The block index of each byte pc that starts a block, from the blocks' first pcs.
fn block_table(pcs: &[u32], blocks: &[BlockInfo]) -> Vec<u32> {
    let len = pcs.last().map_or(0, |&p| p as usize + 1);
    let mut table = vec![NO_BLOCK; len];
    for (b, block) in blocks.iter().enumerate() {
        if let Some(&pc) = pcs.get(block.start as usize) {
            table[pc as usize] = b as u32;
        }
    }
    table
}

impl Program {
    /// A program from its parts; [`Program::validate`] says whether it can run.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: String,
        params: Vec<Param>,
        num_regs: [u32; 3],
        shared_size: u32,
        local_size: u32,
        spill_base: u32,
        spill_slots: u32,
        insts: Vec<Inst>,
        blocks: Vec<BlockInfo>,
        pcs: Vec<u32>,
    ) -> Program {
        let block_at_pc = block_table(&pcs, &blocks);
        Program {
            name,
            params,
            num_regs,
            shared_size,
            local_size,
            spill_base,
            spill_slots,
            insts,
            blocks,
            pcs,
            source_name: None,
            block_at_pc,
        }
    }

    /// Builds the program of an encoded kernel (as the compiler's `encode` returns it),
    /// decoding and validating its bytecode and taking the source locations from it.
    pub fn from_code(code: &KernelCode) -> Result<Program, ProgramError> {
        let kernel = code.decode().map_err(|e| ProgramError {
            kernel: code.info.name.clone(),
            block: None,
            pc: None,
            message: e.to_string(),
        })?;
        Program::from_decoded(&kernel, &code.line_table())
    }

    /// Builds the program of a decoded SIMT bytecode kernel, with every instruction's
    /// source location from the kernel's line table. The decoder has checked each
    /// divergent branch's reconvergence point (the immediate post-dominator of its
    /// block); a uniform branch has none, and the machine faults if its lanes split.
    pub fn from_decoded(
        kernel: &DecodedKernel,
        lines: &LineTable,
    ) -> Result<Program, ProgramError> {
        let info = &kernel.info;
        let err = |message: String| ProgramError {
            kernel: info.name.clone(),
            block: None,
            pc: None,
            message,
        };
        let frame = u32::try_from(info.local_frame_size())
            .map_err(|_| err("the local frame is larger than 4 GiB".into()))?;
        let spill_base = u32::try_from(info.spill_slot_offset(0))
            .map_err(|_| err("the spill slots are beyond 4 GiB".into()))?;
        let insts = kernel
            .insts
            .iter()
            .map(|i| Inst {
                op: i.op,
                guard: i.guard,
                srcloc: lines.lookup(i.pc),
            })
            .collect();
        let blocks = (0..kernel.block_starts.len())
            .map(|b| {
                let range = kernel.block_insts(b);
                BlockInfo {
                    name: block_name(info.blocks[b].origin, b),
                    start: range.start as u32,
                    end: range.end as u32,
                }
            })
            .collect();
        let prog = Program::new(
            info.name.clone(),
            info.params.clone(),
            info.num_regs,
            info.shared_size,
            frame,
            spill_base,
            info.spill_slots,
            insts,
            blocks,
            kernel.insts.iter().map(|i| i.pc).collect(),
        );
        prog.validate()?;
        Ok(prog)
    }

    /// [`Program::from_decoded`] of a kernel loaded from an object, with the object's
    /// source file name for messages.
    pub fn from_loaded(kernel: &LoadedKernel, source_name: &str) -> Result<Program, ProgramError> {
        let mut prog = Program::from_decoded(&kernel.kernel, &kernel.lines)?;
        prog.source_name = Some(source_name.to_string());
        Ok(prog)
    }

    /// The index of the block starting at `pc` (a validated program's branch targets all
    /// start one).
    #[inline]
    pub fn block_at(&self, pc: Pc) -> u32 {
        self.block_at_pc
            .get(pc.0 as usize)
            .copied()
            .unwrap_or(NO_BLOCK)
    }

    /// The address of instruction `index` for messages: `0x0040`, its byte pc.
    pub fn pc_label(&self, index: u32) -> String {
        match self.pcs.get(index as usize) {
            Some(&pc) => format!("{pc:#06x}"),
            None => format!("#{index}"),
        }
    }

    /// The text of instruction `index` in the SIMT bytecode's assembly syntax
    /// (`@!$p0 ld.global.f32 $r3, [$rd2+4]`). Empty when `index` is out of range.
    pub fn inst_text(&self, index: u32) -> String {
        let Some(inst) = self.insts.get(index as usize) else {
            return String::new();
        };
        format!(
            "{}{}",
            simt::ops::display_guard(inst.guard),
            inst.op.display()
        )
    }

    /// The byte offset of spill slot `slot` in the thread's local memory.
    #[inline]
    pub fn spill_offset(&self, slot: u32) -> i32 {
        (u64::from(self.spill_base) + 8 * u64::from(slot)) as i32
    }
}

/// The name statistics give a block: the IR block it implements, else `code` and its
/// position in the code (the same for a machine function and its bytecode).
fn block_name(origin: Option<warplift_ir::Block>, position: usize) -> String {
    match origin {
        Some(origin) => origin.to_string(),
        None => format!("code{position}"),
    }
}

impl Program {
    /// Checks everything the executor relies on; see the [module documentation](self).
    pub fn validate(&self) -> Result<(), ProgramError> {
        let err = |block: Option<usize>, pc: Option<u32>, message: String| ProgramError {
            kernel: self.name.clone(),
            block: block.map(|b| self.block_label(b)),
            pc,
            message,
        };
        if self.blocks.is_empty() {
            return Err(err(None, None, "the program has no blocks".into()));
        }
        if self.pcs.len() != self.insts.len() || self.pcs.windows(2).any(|w| w[0] >= w[1]) {
            return Err(err(
                None,
                None,
                format!(
                    "{} pcs for {} instructions, or pcs not increasing",
                    self.pcs.len(),
                    self.insts.len()
                ),
            ));
        }
        for (c, &n) in self.num_regs.iter().enumerate() {
            if n > simt::MAX_REGS_PER_CLASS {
                return Err(err(
                    None,
                    None,
                    format!(
                        "{n} {} registers (at most {})",
                        RegClass::ALL[c],
                        simt::MAX_REGS_PER_CLASS
                    ),
                ));
            }
        }
        if self.spill_slots > 0
            && u64::from(self.spill_base) + 8 * u64::from(self.spill_slots)
                > u64::from(self.local_size)
        {
            return Err(err(
                None,
                None,
                "spill slots outside the local frame".into(),
            ));
        }
        let mut expected_start = 0u32;
        for (bi, block) in self.blocks.iter().enumerate() {
            if block.start != expected_start || block.end <= block.start {
                return Err(err(
                    Some(bi),
                    None,
                    "blocks must be non-empty and contiguous".into(),
                ));
            }
            if block.end as usize > self.insts.len() {
                return Err(err(
                    Some(bi),
                    None,
                    "block ends past the instructions".into(),
                ));
            }
            expected_start = block.end;
        }
        if expected_start as usize != self.insts.len() {
            return Err(err(None, None, "instructions outside every block".into()));
        }
        if self.block_at_pc != block_table(&self.pcs, &self.blocks) {
            return Err(err(
                None,
                None,
                "the block table does not match the blocks".into(),
            ));
        }
        let limits = Limits {
            num_regs: self.num_regs,
            params: &self.params,
            spill_slots: self.spill_slots,
        };
        for (bi, block) in self.blocks.iter().enumerate() {
            for index in block.start..block.end {
                let inst = &self.insts[index as usize];
                let e = |m: String| err(Some(bi), Some(index), m);
                let last = index + 1 == block.end;
                if inst.op.is_terminator() != last {
                    return Err(e(if last {
                        "the block does not end with a terminator".into()
                    } else {
                        "a terminator before the end of the block".into()
                    }));
                }
                simt::validate_inst(
                    self.pcs[index as usize],
                    inst.guard,
                    &inst.op,
                    &limits,
                    |t| self.block_at(t) != NO_BLOCK,
                )
                .map_err(|x| e(x.to_string()))?;
            }
        }
        Ok(())
    }

    /// `block #2 (block3)`-style label of block `b` for messages.
    fn block_label(&self, b: usize) -> String {
        format!("block #{b} ({})", self.blocks[b].name)
    }

    /// The block holding instruction `pc` (binary search; for messages, not the hot path).
    pub fn block_of(&self, pc: u32) -> Option<usize> {
        let i = self.blocks.partition_point(|b| b.start <= pc);
        (i > 0 && pc < self.blocks[i - 1].end).then(|| i - 1)
    }
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "program %{}: {} params, regs b32/b64/pred {}/{}/{}, shared {} B, local {} B",
            self.name,
            self.params.len(),
            self.num_regs[0],
            self.num_regs[1],
            self.num_regs[2],
            self.shared_size,
            self.local_size
        )?;
        for (bi, b) in self.blocks.iter().enumerate() {
            writeln!(f, "#{bi} {}:", b.name)?;
            for pc in b.start..b.end {
                writeln!(f, "  {pc:5}: {}", self.inst_text(pc))?;
            }
        }
        Ok(())
    }
}
