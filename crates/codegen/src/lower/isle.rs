//! The glue between the ISLE lowering rules (`isle/prelude.isle`, `isle/lower.isle`) and
//! the lowering driver: the generated code is included here, and [`Lower`] implements
//! its `Context` trait.
//!
//! The glue only answers questions about the IR (an instruction's data, a value's type or
//! definition), hands out registers, and appends machine instructions to the current
//! block; every decision about *which* instructions to emit is a rule.

use super::Lower;
use crate::mir::{
    Address, BinOp, BlockTarget, Cond, CvtOp, MBlock, MInst, MInstKind, MType, Operand, Reg,
    SpecialReg, TernOp, UnOp,
};
use cranelift_entity::EntityRef;
use warplift_ir::{
    AddrSpace, AtomicRmwOp, BlockCall, Dim, FloatCC, Function, Inst, InstructionData, IntCC,
    LocalVar, Opcode, SharedVar, Type, Value, ValueDef,
};

/// The generated rules, with the lints that generated code cannot satisfy allowed.
#[allow(
    dead_code,
    unreachable_patterns,
    unused_imports,
    unused_variables,
    non_snake_case,
    unused_mut,
    irrefutable_let_patterns,
    unused_assignments,
    non_camel_case_types,
    missing_docs,
    clippy::all
)]
pub(super) mod generated {
    use crate::mir::{Address, BinOp, CvtOp, MType, Operand, Reg, TernOp, UnOp};
    use warplift_ir::{
        AddrSpace, AtomicRmwOp, BlockCall, Dim, FloatCC, Inst, InstructionData, IntCC, LocalVar,
        Opcode, SharedVar, Type, Value,
    };

    /// ISLE's unit type.
    pub type Unit = ();
    /// The operands of a two-operand instruction.
    pub type ValueArray2 = [Value; 2];
    /// The operands of a three-operand instruction.
    pub type ValueArray3 = [Value; 3];
    /// The destinations of a `brif`.
    pub type BlockCallArray2 = [BlockCall; 2];
    /// The destinations of a `br_table`.
    pub type BlockCallVec = Vec<BlockCall>;
    /// What lowering an instruction gives: the register of its result, if it has one.
    pub type InstOutput = Option<Reg>;

    include!(concat!(env!("OUT_DIR"), "/isle_lower.rs"));
}

use generated::{InstOutput, ValueArray2, ValueArray3};

impl generated::Context for Lower<'_> {
    fn unpack_value_array_2(&mut self, arr: ValueArray2) -> (Value, Value) {
        (arr[0], arr[1])
    }

    fn unpack_value_array_3(&mut self, arr: ValueArray3) -> (Value, Value, Value) {
        (arr[0], arr[1], arr[2])
    }

    fn inst_data(&mut self, inst: Inst) -> InstructionData {
        self.func.dfg.insts[inst].clone()
    }

    fn def_inst(&mut self, v: Value) -> Option<Inst> {
        match self.func.dfg.value_def(v) {
            ValueDef::Result(inst) => Some(inst),
            ValueDef::Param(..) => None,
        }
    }

    fn sinkable_inst(&mut self, v: Value) -> Option<Inst> {
        let inst = self.def_inst(v)?;
        let data = &self.func.dfg.insts[inst];
        let same_block = self.func.layout.inst_block(inst) == Some(self.ir_block);
        (same_block && self.use_counts[v.index()] == 1 && !data.opcode().has_side_effects())
            .then_some(inst)
    }

    fn value_type(&mut self, v: Value) -> Type {
        self.func.dfg.value_type(v)
    }

    fn result_type(&mut self, inst: Inst) -> Option<Type> {
        self.func
            .dfg
            .inst_result(inst)
            .map(|v| self.func.dfg.value_type(v))
    }

    fn ty_sub_word(&mut self, ty: &Type) -> Option<Type> {
        matches!(ty, Type::I8 | Type::I16).then_some(*ty)
    }

    fn const_bits(&mut self, v: Value) -> Option<u64> {
        let inst = self.def_inst(v)?;
        match self.func.dfg.insts[inst] {
            // `i1` constants stay in predicate registers: predicates have no immediates.
            InstructionData::UnaryImm { imm, .. } if self.func.dfg.value_type(v) != Type::I1 => {
                Some(imm)
            }
            InstructionData::FloatConst { bits, .. } => Some(bits),
            _ => None,
        }
    }

    fn mtype(&mut self, ty: &Type) -> MType {
        MType::from_ir(*ty)
    }

    fn put_in_reg(&mut self, v: Value) -> Reg {
        self.value_reg(v)
    }

    fn reg_operand(&mut self, r: Reg) -> Operand {
        Operand::Reg(r)
    }

    fn imm(&mut self, bits: u64) -> Operand {
        Operand::Imm(bits)
    }

    fn output(&mut self, r: Reg) -> InstOutput {
        Some(r)
    }

    fn emit_bin(&mut self, op: &BinOp, ty: &MType, a: Reg, b: Operand) -> Reg {
        let dst = self.mir.new_vreg(ty.class());
        self.emit(MInstKind::Bin {
            op: *op,
            ty: *ty,
            dst,
            a,
            b: self.masked(b, *ty),
        });
        dst
    }

    fn emit_un(&mut self, op: &UnOp, ty: &MType, src: Reg) -> Reg {
        let dst = self.mir.new_vreg(ty.class());
        self.emit(MInstKind::Un {
            op: *op,
            ty: *ty,
            dst,
            src,
        });
        dst
    }

    fn emit_mad(&mut self, ty: &MType, a: Reg, b: Operand, c: Operand) -> Reg {
        let dst = self.mir.new_vreg(ty.class());
        let (b, c) = (self.masked(b, *ty), self.masked(c, *ty));
        self.emit(MInstKind::Mad {
            ty: *ty,
            dst,
            a,
            b,
            c,
        });
        dst
    }

    fn emit_tern(&mut self, op: &TernOp, ty: &MType, a: Reg, b: Reg, c: Operand) -> Reg {
        let dst = self.mir.new_vreg(ty.class());
        let c = self.masked(c, *ty);
        self.emit(MInstKind::Tern {
            op: *op,
            ty: *ty,
            dst,
            a,
            b,
            c,
        });
        dst
    }

    fn emit_fma(&mut self, ty: &MType, a: Reg, b: Reg, c: Reg) -> Reg {
        let dst = self.mir.new_vreg(ty.class());
        self.emit(MInstKind::Fma {
            ty: *ty,
            dst,
            a,
            b,
            c,
        });
        dst
    }

    fn emit_setp_int(&mut self, cc: &IntCC, ty: &MType, a: Reg, b: Operand) -> Reg {
        self.setp(Cond::Int(*cc), *ty, a, b)
    }

    fn emit_setp_float(&mut self, cc: FloatCC, ty: &MType, a: Reg, b: Operand) -> Reg {
        self.setp(Cond::Float(cc), *ty, a, b)
    }

    fn emit_selp(&mut self, ty: &MType, a: Operand, b: Operand, pred: Reg) -> Reg {
        let dst = self.mir.new_vreg(ty.class());
        let (a, b) = (self.masked(a, *ty), self.masked(b, *ty));
        self.emit(MInstKind::Selp {
            ty: *ty,
            dst,
            a,
            b,
            pred,
        });
        dst
    }

    fn emit_cvt(&mut self, op: &CvtOp, to: &MType, from: &MType, src: Reg) -> Reg {
        let dst = self.mir.new_vreg(to.class());
        self.emit(MInstKind::Cvt {
            op: *op,
            to: *to,
            from: *from,
            dst,
            src,
        });
        dst
    }

    fn emit_mov_imm(&mut self, ty: &MType, bits: u64) -> Reg {
        let dst = self.mir.new_vreg(ty.class());
        let src = self.masked(Operand::Imm(bits), *ty);
        self.emit(MInstKind::Mov { ty: *ty, dst, src });
        dst
    }

    fn emit_read_geometry(&mut self, op: &Opcode, dim: Dim) -> Reg {
        let sreg = match op {
            Opcode::ThreadId => SpecialReg::Tid(dim),
            Opcode::BlockId => SpecialReg::Ctaid(dim),
            Opcode::BlockDim => SpecialReg::Ntid(dim),
            Opcode::GridDim => SpecialReg::Nctaid(dim),
            _ => {
                self.fail_unexpected();
                SpecialReg::Tid(dim)
            }
        };
        self.read_special(sreg)
    }

    fn emit_read_lane_id(&mut self) -> Reg {
        self.read_special(SpecialReg::LaneId)
    }

    fn emit_ld(&mut self, space: &AddrSpace, ty: &MType, addr: Address) -> Reg {
        let dst = self.mir.new_vreg(ty.class());
        self.emit(MInstKind::Ld {
            space: *space,
            ty: *ty,
            dst,
            addr,
        });
        dst
    }

    fn emit_st(
        &mut self,
        space: &AddrSpace,
        ty: &MType,
        src: Operand,
        addr: Address,
    ) -> InstOutput {
        let src = self.masked(src, *ty);
        self.emit(MInstKind::St {
            space: *space,
            ty: *ty,
            src,
            addr,
        });
        None
    }

    fn emit_atom(
        &mut self,
        op: AtomicRmwOp,
        space: &AddrSpace,
        ty: &MType,
        addr: Address,
        src: Operand,
    ) -> Reg {
        let dst = self.mir.new_vreg(ty.class());
        let src = self.masked(src, *ty);
        self.emit(MInstKind::Atom {
            op,
            space: *space,
            ty: *ty,
            dst,
            addr,
            src,
        });
        dst
    }

    fn emit_cas(
        &mut self,
        space: &AddrSpace,
        ty: &MType,
        addr: Address,
        expected: Operand,
        replacement: Operand,
    ) -> Reg {
        let dst = self.mir.new_vreg(ty.class());
        let (expected, replacement) = (self.masked(expected, *ty), self.masked(replacement, *ty));
        self.emit(MInstKind::Cas {
            space: *space,
            ty: *ty,
            dst,
            addr,
            expected,
            replacement,
        });
        dst
    }

    fn emit_bar(&mut self) -> InstOutput {
        self.emit(MInstKind::Bar);
        None
    }

    fn emit_ret(&mut self) -> InstOutput {
        self.emit(MInstKind::Ret);
        None
    }

    fn emit_jump(&mut self, inst: Inst) -> InstOutput {
        if let InstructionData::Jump { dest, .. } = &self.func.dfg.insts[inst] {
            let dest = self.target(dest);
            self.emit(MInstKind::Jump { dest });
        } else {
            self.fail_unexpected();
        }
        None
    }

    fn emit_branch(&mut self, pred: Reg, negated: bool, inst: Inst) -> InstOutput {
        if let InstructionData::Brif { dests, .. } = &self.func.dfg.insts[inst] {
            let taken = self.target(&dests[0]);
            let not_taken = self.target(&dests[1]);
            let divergent = self.divergence.is_divergent_branch(self.ir_block);
            self.emit(MInstKind::Branch {
                pred,
                negated,
                taken,
                not_taken,
                divergent,
            });
        } else {
            self.fail_unexpected();
        }
        None
    }

    fn emit_br_table(&mut self, index: Reg, inst: Inst) -> InstOutput {
        if let InstructionData::BrTable { arg, dests, .. } = &self.func.dfg.insts[inst] {
            let bound = index_bound(self.func, *arg);
            let targets: Vec<BlockTarget> = dests.iter().map(|d| self.target(d)).collect();
            self.br_table_tree(index, bound, &targets);
        } else {
            self.fail_unexpected();
        }
        None
    }

    fn ty_bits(&mut self, ty: &Type) -> u64 {
        u64::from(ty.bits())
    }

    fn ext_imm(&mut self, op: &CvtOp, ty: &Type, k: u64) -> u64 {
        match op {
            CvtOp::Sext => warplift_ir::interp::ops::sext(k, *ty) as u64 & 0xffff_ffff,
            _ => k & ty.mask(),
        }
    }

    fn intcc_swap(&mut self, cc: &IntCC) -> IntCC {
        use IntCC::*;
        match cc {
            Equal => Equal,
            NotEqual => NotEqual,
            SignedLessThan => SignedGreaterThan,
            SignedLessThanOrEqual => SignedGreaterThanOrEqual,
            SignedGreaterThan => SignedLessThan,
            SignedGreaterThanOrEqual => SignedLessThanOrEqual,
            UnsignedLessThan => UnsignedGreaterThan,
            UnsignedLessThanOrEqual => UnsignedGreaterThanOrEqual,
            UnsignedGreaterThan => UnsignedLessThan,
            UnsignedGreaterThanOrEqual => UnsignedLessThanOrEqual,
        }
    }

    fn shared_offset(&mut self, var: SharedVar) -> u64 {
        u64::from(self.shared_offsets[var])
    }

    fn local_offset(&mut self, var: LocalVar) -> u64 {
        u64::from(self.local_offsets[var])
    }

    fn var_offset(&mut self, inst: Inst) -> Option<u64> {
        match self.func.dfg.insts[inst] {
            InstructionData::SharedAddr { var, .. } => Some(u64::from(self.shared_offsets[var])),
            InstructionData::LocalAddr { var, .. } => Some(u64::from(self.local_offsets[var])),
            _ => None,
        }
    }

    fn address(&mut self, base: Reg, offset: i32) -> Address {
        Address {
            base: Some(base),
            offset,
        }
    }

    fn abs_address(&mut self, base: u64, k: u64, off: i32) -> Option<Address> {
        // Shared and local addresses are `i32` values: the sum wraps at 32 bits, and the
        // absolute address must be a non-negative `i32` offset.
        let sum = base.wrapping_add(k).wrapping_add(off as i64 as u64) & 0xffff_ffff;
        let offset = i32::try_from(sum).ok()?;
        Some(Address { base: None, offset })
    }

    fn add_offset(&mut self, off: i32, k: u64, addr_ty: &Type) -> Option<i32> {
        // `k` is a constant of the address type: read it signed at that width. Folding
        // is exact only when no wrap-around could differ: in 64 bits the sum is exact;
        // in 32 bits the machine adds the offset to the base at 32 bits as well.
        let k = warplift_ir::interp::ops::sext(k, *addr_ty);
        let sum = i64::from(off).checked_add(k)?;
        i32::try_from(sum).ok()
    }

    fn u64_sub(&mut self, a: u64, b: u64) -> u64 {
        a.wrapping_sub(b)
    }

    fn u64_shl(&mut self, a: u64, b: u64) -> u64 {
        a.checked_shl(b as u32).unwrap_or(0)
    }

    fn ty_mask(&mut self, ty: &Type) -> u64 {
        ty.mask()
    }
}

impl Lower<'_> {
    /// Appends `kind` to the current block with the current source location.
    pub(super) fn emit(&mut self, kind: MInstKind) {
        let inst = MInst::new(kind, self.srcloc);
        self.mir.blocks[self.block].insts.push(inst);
    }

    fn setp(&mut self, cond: Cond, ty: MType, a: Reg, b: Operand) -> Reg {
        let dst = self.mir.new_vreg(crate::mir::RegClass::Pred);
        let b = self.masked(b, ty);
        self.emit(MInstKind::Setp {
            cond,
            ty,
            dst,
            a,
            b,
        });
        dst
    }

    fn read_special(&mut self, sreg: SpecialReg) -> Reg {
        let dst = self.mir.new_vreg(crate::mir::RegClass::B32);
        self.emit(MInstKind::ReadSpecial { dst, sreg });
        dst
    }

    /// An immediate masked to the width of `ty`, so that equal immediates are equal bits.
    fn masked(&self, op: Operand, ty: MType) -> Operand {
        match op {
            Operand::Imm(bits) if ty.bits() < 64 => Operand::Imm(bits & ((1 << ty.bits()) - 1)),
            op => op,
        }
    }

    /// The machine target of an IR destination.
    fn target(&mut self, call: &BlockCall) -> BlockTarget {
        let block = self.mblock_of(call.block);
        let args = call.args.iter().map(|&v| self.value_reg(v)).collect();
        BlockTarget { block, args }
    }

    /// Emits a `br_table` over `targets` (the default first): a range check, then a
    /// balanced search tree of `index < mid` tests whose leaves are the destinations.
    /// The tree's blocks are placed right after the current IR block. Every branch of the
    /// tree tests the index, so all are divergent exactly when the `br_table` is — but
    /// the range check, where `bound` (the largest value the index can take) shows that
    /// every lane passes it, is uniform: it never splits a warp, and saying so keeps the
    /// default from looking like a second way into its block. (Linearization asks which
    /// blocks two groups of a warp's lanes can reach; a table whose default is also its
    /// last entry, `t % n` over n entries, would otherwise seem to be one.)
    fn br_table_tree(&mut self, index: Reg, bound: Option<u64>, targets: &[BlockTarget]) {
        let divergent = self.divergence.is_divergent_branch(self.ir_block);
        let Some((default, table)) = targets.split_first() else {
            self.fail_unexpected();
            return;
        };
        let n = table.len() as u64;
        if n == 0 {
            self.emit(MInstKind::Jump {
                dest: default.clone(),
            });
            return;
        }
        // Each pending node: the block to fill and the index range [lo, hi) it decides,
        // with hi - lo >= 2. Worked through with a stack, not recursion.
        let mut pending: Vec<(MBlock, u64, u64)> = Vec::new();
        let in_range = self.setp(
            Cond::Int(IntCC::UnsignedLessThan),
            MType::I32,
            index,
            Operand::Imm(n),
        );
        let root = self.tree_node(table, &mut pending, 0, n);
        let one_way = bound.is_some_and(|b| b < n);
        if one_way {
            self.mir.one_way_branches.insert(self.block);
        }
        self.emit(MInstKind::Branch {
            pred: in_range,
            negated: false,
            taken: root,
            not_taken: default.clone(),
            divergent: divergent && !one_way,
        });
        while let Some((mb, lo, hi)) = pending.pop() {
            self.block = mb;
            let mid = lo + (hi - lo) / 2;
            let below = self.setp(
                Cond::Int(IntCC::UnsignedLessThan),
                MType::I32,
                index,
                Operand::Imm(mid),
            );
            let taken = self.tree_node(table, &mut pending, lo, mid);
            let not_taken = self.tree_node(table, &mut pending, mid, hi);
            self.emit(MInstKind::Branch {
                pred: below,
                negated: false,
                taken,
                not_taken,
                divergent,
            });
        }
    }

    /// The target deciding indices [lo, hi): the table entry itself for a single index,
    /// else a new block, queued in `pending` to be filled.
    fn tree_node(
        &mut self,
        table: &[BlockTarget],
        pending: &mut Vec<(MBlock, u64, u64)>,
        lo: u64,
        hi: u64,
    ) -> BlockTarget {
        if hi - lo == 1 {
            return table[lo as usize].clone();
        }
        let mb = self.mir.new_block(Some(self.ir_block));
        self.extra_blocks.push(mb);
        pending.push((mb, lo, hi));
        BlockTarget::new(mb)
    }
}

/// The largest value `v` (a `br_table` index) can take, where its definition says so
/// alone: a constant, `band` with a constant, `urem` by a nonzero constant.
fn index_bound(func: &Function, v: Value) -> Option<u64> {
    let ValueDef::Result(inst) = func.dfg.value_def(v) else {
        return None;
    };
    let constant = |v: Value| match func.dfg.value_def(v) {
        ValueDef::Result(i) => match func.dfg.insts[i] {
            InstructionData::UnaryImm {
                opcode: Opcode::Iconst,
                imm,
            } => Some(imm),
            _ => None,
        },
        ValueDef::Param(..) => None,
    };
    match func.dfg.insts[inst] {
        InstructionData::UnaryImm {
            opcode: Opcode::Iconst,
            imm,
        } => Some(imm),
        InstructionData::Binary {
            opcode: Opcode::Band,
            args: [a, b],
        } => match (constant(a), constant(b)) {
            (Some(x), Some(y)) => Some(x & y),
            (Some(c), None) | (None, Some(c)) => Some(c),
            (None, None) => None,
        },
        InstructionData::Binary {
            opcode: Opcode::Urem,
            args: [_, b],
        } => constant(b).filter(|&c| c != 0).map(|c| c - 1),
        _ => None,
    }
}
