//! Encoding allocated MIR into bytecode, and back.
//!
//! [`encode`] lays the blocks out in the function's block order, turns each [`MInst`] into
//! an [`Op`] of the table (branch targets become the pcs of block starts; every divergent
//! branch gets the pc of its immediate post-dominator's block, computed on the final CFG,
//! or "exit"), and records the block table, the register counts and, for DWARF, the pc of
//! every instruction with its source location. Immediates are stored masked to their
//! operation's width, their canonical form. The result is decoded again before it is
//! returned, so whatever `encode` produces, the loader accepts.
//!
//! [`decoded_to_mir`] goes the other way, for printing bytecode as MIR and for
//! round-trip tests.

use crate::mir::{
    BlockTarget, MBlock, MInst, MInstKind, MType, MirFunction, Operand, Reg, SpillSlot,
};
use cranelift_entity::{EntityRef, SecondaryMap};
use warplift_ir::cfg::{ControlFlowGraph, PostDominatorTree};
use warplift_ir::SourceLoc;
use warplift_simt::{
    decode, BlockInfo, DecodeError, DecodedKernel, InstLoc, KernelCode, KernelInfo, Op, Pc,
    MAX_REGS_PER_CLASS,
};

/// Why a function could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[allow(missing_docs)] // the fields are named for what they are
pub enum EncodeError {
    #[error("kernel {0} has no blocks")]
    NoBlocks(String),
    #[error("{block} is empty or does not end with a terminator")]
    MissingTerminator { block: MBlock },
    #[error("{block} has a terminator before its end")]
    TerminatorInsideBlock { block: MBlock },
    #[error("{block} has block parameters or branch arguments: the function is not allocated")]
    BlockParams { block: MBlock },
    #[error("virtual register {reg} in {block}: the function is not allocated")]
    VirtualRegister { block: MBlock, reg: Reg },
    #[error("register {reg} in {block} is beyond the {MAX_REGS_PER_CLASS} registers of its class")]
    RegisterTooLarge { block: MBlock, reg: Reg },
    #[error("{block} branches to {target}, which is not in the block order")]
    UnplacedTarget { block: MBlock, target: MBlock },
    #[error("{block} appears twice in the block order")]
    DuplicateBlock { block: MBlock },
    #[error("the code of kernel {0} is larger than 4 GiB")]
    TooLarge(String),
    #[error("the encoded kernel does not validate: {0}")]
    Invalid(#[from] DecodeError),
}

/// `match $value { ... }` over the operations whose fields are the same in the machine
/// IR and the bytecode, converted field by field from `$from::V` to `$to::V` (a field
/// written `f = expr` becomes `expr`, for the immediates masked on the way into the
/// bytecode), followed by the arms `$rest` for the others.
macro_rules! same_fields {
    ($value:expr, $from:ident => $to:ident,
     [ $( $v:ident { $( $f:ident $( = $e:expr )? ),* $(,)? } )* ],
     { $( $rest:tt )* }) => {
        match $value {
            $( $from::$v { $( $f ),* } => $to::$v { $( $f: same_fields!(@field $f $( $e )?) ),* }, )*
            $( $rest )*
        }
    };
    (@field $f:ident) => {
        $f
    };
    (@field $f:ident $e:expr) => {
        $e
    };
}

/// The canonical form of an immediate of type `ty`: its low `ty.bits()` bits.
fn mask(o: Operand, ty: MType) -> Operand {
    match o {
        Operand::Imm(v) if ty.bits() < 64 => Operand::Imm(v & ((1u64 << ty.bits()) - 1)),
        o => o,
    }
}

/// The operation of `kind`, given where blocks start and the reconvergence point of the
/// block it ends.
fn op_of(kind: &MInstKind, pc_of: &impl Fn(MBlock) -> Pc, reconv: Option<Pc>) -> Op {
    use MInstKind as K;
    same_fields!(kind.clone(), K => Op, [
        Bin { op, ty, dst, a, b = mask(b, ty) }
        Un { op, ty, dst, src }
        Mad { ty, dst, a, b = mask(b, ty), c = mask(c, ty) }
        Fma { ty, dst, a, b, c }
        Tern { op, ty, dst, a, b, c = mask(c, ty) }
        Setp { cond, ty, dst, a, b = mask(b, ty) }
        Selp { ty, dst, a = mask(a, ty), b = mask(b, ty), pred }
        Cvt { op, to, from, dst, src }
        Mov { ty, dst, src = mask(src, ty) }
        ReadSpecial { dst, sreg }
        LdParam { ty, dst, index }
        Ld { space, ty, dst, addr }
        St { space, ty, addr, src = mask(src, ty) }
        Atom { op, space, ty, dst, addr, src = mask(src, ty) }
        Cas { space, ty, dst, addr, expected = mask(expected, ty),
              replacement = mask(replacement, ty) }
    ], {
        K::Bar => Op::Bar {},
        K::Spill { src, slot } => Op::Spill { slot: slot.0, src },
        K::Reload { dst, slot } => Op::Reload { dst, slot: slot.0 },
        K::Jump { dest } => Op::Jump {
            target: pc_of(dest.block),
        },
        K::Branch {
            pred,
            negated,
            taken,
            not_taken,
            divergent,
        } => {
            let cond = crate::mir::Guard { pred, negated };
            let (taken, not_taken) = (pc_of(taken.block), pc_of(not_taken.block));
            if divergent {
                Op::BrDiv {
                    cond,
                    taken,
                    not_taken,
                    reconv,
                }
            } else {
                Op::BrUni {
                    cond,
                    taken,
                    not_taken,
                }
            }
        }
        K::Ret => Op::Ret {},
    })
}

/// Encodes the allocated MIR function `func` (see the module documentation).
pub fn encode(func: &MirFunction) -> Result<KernelCode, EncodeError> {
    if func.order.is_empty() {
        return Err(EncodeError::NoBlocks(func.name.clone()));
    }
    let mut position: SecondaryMap<MBlock, Option<usize>> = SecondaryMap::new();
    let mut num_regs = [0u32; 3];
    for (i, &block) in func.order.iter().enumerate() {
        if position[block].replace(i).is_some() {
            return Err(EncodeError::DuplicateBlock { block });
        }
        let data = &func.blocks[block];
        if !data.params.is_empty() {
            return Err(EncodeError::BlockParams { block });
        }
        match data.insts.last() {
            Some(last) if last.kind.is_terminator() => {}
            _ => return Err(EncodeError::MissingTerminator { block }),
        }
        for (j, inst) in data.insts.iter().enumerate() {
            if inst.kind.is_terminator() && j + 1 != data.insts.len() {
                return Err(EncodeError::TerminatorInsideBlock { block });
            }
            let mut bad = None;
            inst.clone().visit_regs(|r, _| {
                if r.is_virtual() {
                    bad.get_or_insert(EncodeError::VirtualRegister { block, reg: *r });
                } else if r.index() >= MAX_REGS_PER_CLASS {
                    bad.get_or_insert(EncodeError::RegisterTooLarge { block, reg: *r });
                } else {
                    let n = &mut num_regs[r.class().index()];
                    *n = (*n).max(r.index() + 1);
                }
            });
            if let Some(e) = bad {
                return Err(e);
            }
            let mut targets_ok = Ok(());
            inst.kind.for_each_target(|t: &BlockTarget| {
                if !t.args.is_empty() {
                    targets_ok = Err(EncodeError::BlockParams { block });
                } else if targets_ok.is_ok() && !func.blocks.is_valid(t.block) {
                    targets_ok = Err(EncodeError::UnplacedTarget {
                        block,
                        target: t.block,
                    });
                }
            });
            targets_ok?;
        }
    }
    // Targets must be placed; checked after the whole order is known.
    for &block in &func.order {
        if let Some(t) = func.terminator(block) {
            let mut err = None;
            t.kind.for_each_target(|t| {
                if position[t.block].is_none() {
                    err.get_or_insert(EncodeError::UnplacedTarget {
                        block,
                        target: t.block,
                    });
                }
            });
            if let Some(e) = err {
                return Err(e);
            }
        }
    }

    let cfg = ControlFlowGraph::compute(func);
    let pdt = PostDominatorTree::compute(&cfg);

    // Instruction lengths do not depend on pcs: lay out once with dummy targets, then
    // encode for real.
    let mut block_pcs: SecondaryMap<MBlock, u32> = SecondaryMap::new();
    let mut scratch = Vec::new();
    let mut size: u64 = 0;
    for &block in &func.order {
        block_pcs[block] =
            u32::try_from(size).map_err(|_| EncodeError::TooLarge(func.name.clone()))?;
        for inst in &func.blocks[block].insts {
            scratch.clear();
            op_of(&inst.kind, &|_| Pc(0), None).encode(inst.guard, &mut scratch);
            size += scratch.len() as u64;
        }
    }
    if size >= u64::from(u32::MAX) {
        return Err(EncodeError::TooLarge(func.name.clone()));
    }
    let pc_of = |b: MBlock| Pc(block_pcs[b]);
    let mut code = Vec::with_capacity(size as usize);
    let mut insts = Vec::with_capacity(func.num_insts());
    let mut blocks = Vec::with_capacity(func.order.len());
    for &block in &func.order {
        blocks.push(BlockInfo {
            pc: block_pcs[block],
            origin: func.blocks[block].origin,
        });
        let reconv = pdt.reconvergence_point(block).map(pc_of);
        for inst in &func.blocks[block].insts {
            insts.push(InstLoc {
                pc: code.len() as u32,
                srcloc: inst.srcloc,
            });
            op_of(&inst.kind, &pc_of, reconv).encode(inst.guard, &mut code);
        }
    }
    let info = KernelInfo {
        name: func.name.clone(),
        params: func.params.clone(),
        num_regs,
        shared_size: func.shared_size,
        local_size: func.local_size,
        spill_slots: func.spill_slots,
        blocks,
    };
    decode(&code, &info)?;
    Ok(KernelCode { info, code, insts })
}

/// The decoded kernel `kernel` as allocated MIR: one block per block-table entry, in order
/// (`mblock0`, `mblock1`, …), with the source locations `srcloc` gives for each pc.
pub fn decoded_to_mir(kernel: &DecodedKernel, srcloc: impl Fn(u32) -> SourceLoc) -> MirFunction {
    let mut f = MirFunction::new(kernel.info.name.clone(), kernel.info.params.clone());
    f.shared_size = kernel.info.shared_size;
    f.local_size = kernel.info.local_size;
    f.spill_slots = kernel.info.spill_slots;
    for b in &kernel.info.blocks {
        let block = f.new_block(b.origin);
        f.order.push(block);
    }
    let block_at = |pc: Pc| -> BlockTarget {
        // Validation made every target a block start.
        BlockTarget::new(MBlock::new(kernel.block_at(pc.0).unwrap_or(0)))
    };
    for (i, inst) in kernel.insts.iter().enumerate() {
        use MInstKind as K;
        let kind = same_fields!(inst.op, Op => K, [
            Bin { op, ty, dst, a, b }
            Un { op, ty, dst, src }
            Mad { ty, dst, a, b, c }
            Fma { ty, dst, a, b, c }
            Tern { op, ty, dst, a, b, c }
            Setp { cond, ty, dst, a, b }
            Selp { ty, dst, a, b, pred }
            Cvt { op, to, from, dst, src }
            Mov { ty, dst, src }
            ReadSpecial { dst, sreg }
            LdParam { ty, dst, index }
            Ld { space, ty, dst, addr }
            St { space, ty, addr, src }
            Atom { op, space, ty, dst, addr, src }
            Cas { space, ty, dst, addr, expected, replacement }
        ], {
            Op::Bar {} => K::Bar,
            Op::Spill { slot, src } => K::Spill {
                src,
                slot: SpillSlot(slot),
            },
            Op::Reload { dst, slot } => K::Reload {
                dst,
                slot: SpillSlot(slot),
            },
            Op::Jump { target } => K::Jump {
                dest: block_at(target),
            },
            Op::BrUni {
                cond,
                taken,
                not_taken,
            } => K::Branch {
                pred: cond.pred,
                negated: cond.negated,
                taken: block_at(taken),
                not_taken: block_at(not_taken),
                divergent: false,
            },
            Op::BrDiv {
                cond,
                taken,
                not_taken,
                ..
            } => K::Branch {
                pred: cond.pred,
                negated: cond.negated,
                taken: block_at(taken),
                not_taken: block_at(not_taken),
                divergent: true,
            },
            Op::Ret {} => K::Ret,
        });
        let block = MBlock::new(kernel.block_of(i));
        f.blocks[block].insts.push(MInst {
            kind,
            guard: inst.guard,
            srcloc: srcloc(inst.pc),
        });
    }
    f
}
