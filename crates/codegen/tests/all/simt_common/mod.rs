//! Allocated MIR covering every instruction form of the bytecode, for the round-trip tests.

#![allow(dead_code)]

use warplift_codegen::mir::*;
use warplift_ir::{AddrSpace, AtomicRmwOp, Block, Dim, FloatCC, IntCC, Param, SourceLoc, Type};

pub const INT_TYPES: [MType; 4] = [MType::I8, MType::I16, MType::I32, MType::I64];
pub const FLOAT_TYPES: [MType; 2] = [MType::F32, MType::F64];
pub const ALL_TYPES: [MType; 7] = [
    MType::I8,
    MType::I16,
    MType::I32,
    MType::I64,
    MType::F32,
    MType::F64,
    MType::Pred,
];

fn is_int(t: MType) -> bool {
    INT_TYPES.contains(&t)
}

/// Is `op` defined on `ty`?
pub fn bin_legal(op: BinOp, ty: MType) -> bool {
    use BinOp::*;
    match op {
        FAdd | FSub | FMul | FDiv | FMin | FMax => ty.is_float(),
        And | Or | Xor => is_int(ty) || ty == MType::Pred,
        _ => is_int(ty),
    }
}

pub fn un_legal(op: UnOp, ty: MType) -> bool {
    match op {
        UnOp::FNeg | UnOp::FAbs | UnOp::FSqrt => ty.is_float(),
        UnOp::Not => is_int(ty) || ty == MType::Pred,
        _ => is_int(ty),
    }
}

pub fn cvt_legal(op: CvtOp, to: MType, from: MType) -> bool {
    let ip = |t: MType| is_int(t) || t == MType::Pred;
    match op {
        CvtOp::Zext | CvtOp::Sext | CvtOp::Trunc => ip(to) && ip(from),
        CvtOp::FToS | CvtOp::FToU => is_int(to) && from.is_float(),
        CvtOp::SToF | CvtOp::UToF => to.is_float() && is_int(from),
        CvtOp::FExt => to == MType::F64 && from == MType::F32,
        CvtOp::FTrunc => to == MType::F32 && from == MType::F64,
        CvtOp::Bitcast => to.bits() == from.bits(),
    }
}

/// Generates instructions with registers cycling over the whole 6-bit range and
/// immediates of every size, already masked to their type.
pub struct Gen {
    n: u32,
    line: u32,
}

impl Gen {
    pub fn new() -> Self {
        Gen { n: 0, line: 10 }
    }

    pub fn reg(&mut self, class: RegClass) -> Reg {
        self.n += 7;
        Reg::phys(self.n % 64, class)
    }

    pub fn r(&mut self, ty: MType) -> Reg {
        self.reg(ty.class())
    }

    pub fn imm(&mut self, ty: MType) -> Operand {
        self.n += 1;
        let raw = [
            0u64,
            5,
            0x1234,
            0xdead_beef,
            u64::MAX,
            0x8000_0000_0000_0001,
        ][self.n as usize % 6];
        let masked = if ty.bits() < 64 {
            raw & ((1 << ty.bits()) - 1)
        } else {
            raw
        };
        Operand::Imm(masked)
    }

    pub fn operand(&mut self, ty: MType) -> Operand {
        self.n += 1;
        if self.n.is_multiple_of(2) {
            self.imm(ty)
        } else {
            Operand::Reg(self.r(ty))
        }
    }

    pub fn addr(&mut self, space: AddrSpace) -> Address {
        self.n += 1;
        let offset = [0, 4, -8, 1 << 20, i32::MIN, i32::MAX][self.n as usize % 6];
        let base = match self.n % 3 {
            0 => None,
            _ if space == AddrSpace::Global => Some(self.reg(RegClass::B64)),
            _ => Some(self.reg(RegClass::B32)),
        };
        Address { base, offset }
    }

    /// An instruction, guarded every third time, with a source location that advances
    /// every other instruction (so rows of the line table cover several instructions).
    pub fn inst(&mut self, kind: MInstKind) -> MInst {
        self.n += 1;
        if self.n.is_multiple_of(2) {
            self.line += 1;
        }
        let guard = (self.n.is_multiple_of(3) && !kind.is_terminator()).then(|| Guard {
            pred: Reg::phys(self.n % 64, RegClass::Pred),
            negated: self.n.is_multiple_of(2),
        });
        MInst {
            kind,
            guard,
            srcloc: SourceLoc::new(self.line, self.n % 40 + 1),
        }
    }
}

/// Every straight-line instruction form.
pub fn every_form(g: &mut Gen, params: &[Param]) -> Vec<MInst> {
    let mut out = Vec::new();
    for &op in BinOp::ALL {
        for ty in ALL_TYPES.into_iter().filter(|&t| bin_legal(op, t)) {
            for imm in [false, true] {
                let b = if imm {
                    g.imm(ty)
                } else {
                    Operand::Reg(g.r(ty))
                };
                let k = MInstKind::Bin {
                    op,
                    ty,
                    dst: g.r(ty),
                    a: g.r(ty),
                    b,
                };
                out.push(g.inst(k));
            }
        }
    }
    for &op in UnOp::ALL {
        for ty in ALL_TYPES.into_iter().filter(|&t| un_legal(op, t)) {
            let k = MInstKind::Un {
                op,
                ty,
                dst: g.r(ty),
                src: g.r(ty),
            };
            out.push(g.inst(k));
        }
    }
    for ty in INT_TYPES {
        for _ in 0..2 {
            let k = MInstKind::Mad {
                ty,
                dst: g.r(ty),
                a: g.r(ty),
                b: g.operand(ty),
                c: g.operand(ty),
            };
            out.push(g.inst(k));
        }
    }
    for &op in TernOp::ALL {
        for _ in 0..2 {
            let ty = MType::I32;
            let k = MInstKind::Tern {
                op,
                ty,
                dst: g.r(ty),
                a: g.r(ty),
                b: g.r(ty),
                c: g.operand(ty),
            };
            out.push(g.inst(k));
        }
    }
    for ty in FLOAT_TYPES {
        let k = MInstKind::Fma {
            ty,
            dst: g.r(ty),
            a: g.r(ty),
            b: g.r(ty),
            c: g.r(ty),
        };
        out.push(g.inst(k));
    }
    for &cc in IntCC::ALL {
        for ty in INT_TYPES {
            let k = MInstKind::Setp {
                cond: Cond::Int(cc),
                ty,
                dst: g.reg(RegClass::Pred),
                a: g.r(ty),
                b: g.operand(ty),
            };
            out.push(g.inst(k));
        }
    }
    for &cc in FloatCC::ALL {
        for ty in FLOAT_TYPES {
            let k = MInstKind::Setp {
                cond: Cond::Float(cc),
                ty,
                dst: g.reg(RegClass::Pred),
                a: g.r(ty),
                b: g.operand(ty),
            };
            out.push(g.inst(k));
        }
    }
    for ty in ALL_TYPES {
        for _ in 0..2 {
            let k = MInstKind::Selp {
                ty,
                dst: g.r(ty),
                a: g.operand(ty),
                b: g.operand(ty),
                pred: g.reg(RegClass::Pred),
            };
            out.push(g.inst(k));
        }
    }
    for &op in CvtOp::ALL {
        for to in ALL_TYPES {
            for from in ALL_TYPES.into_iter().filter(|&f| cvt_legal(op, to, f)) {
                let k = MInstKind::Cvt {
                    op,
                    to,
                    from,
                    dst: g.r(to),
                    src: g.r(from),
                };
                out.push(g.inst(k));
            }
        }
    }
    for ty in ALL_TYPES {
        for imm in [false, true] {
            let src = if imm {
                g.imm(ty)
            } else {
                Operand::Reg(g.r(ty))
            };
            let k = MInstKind::Mov {
                ty,
                dst: g.r(ty),
                src,
            };
            out.push(g.inst(k));
        }
    }
    for sreg in [
        SpecialReg::LaneId,
        SpecialReg::Tid(Dim::X),
        SpecialReg::Tid(Dim::Y),
        SpecialReg::Tid(Dim::Z),
        SpecialReg::Ctaid(Dim::X),
        SpecialReg::Ctaid(Dim::Y),
        SpecialReg::Ctaid(Dim::Z),
        SpecialReg::Ntid(Dim::X),
        SpecialReg::Ntid(Dim::Y),
        SpecialReg::Ntid(Dim::Z),
        SpecialReg::Nctaid(Dim::X),
        SpecialReg::Nctaid(Dim::Y),
        SpecialReg::Nctaid(Dim::Z),
    ] {
        let k = MInstKind::ReadSpecial {
            dst: g.reg(RegClass::B32),
            sreg,
        };
        out.push(g.inst(k));
    }
    for (index, p) in params.iter().enumerate() {
        let ty = MType::from_ir(p.ty);
        let k = MInstKind::LdParam {
            ty,
            dst: g.r(ty),
            index: index as u32,
        };
        out.push(g.inst(k));
    }
    for &space in AddrSpace::ALL {
        for ty in ALL_TYPES {
            let k = MInstKind::Ld {
                space,
                ty,
                dst: g.r(ty),
                addr: g.addr(space),
            };
            out.push(g.inst(k));
            for _ in 0..2 {
                let k = MInstKind::St {
                    space,
                    ty,
                    src: g.operand(ty),
                    addr: g.addr(space),
                };
                out.push(g.inst(k));
            }
        }
        for ty in [MType::I32, MType::I64] {
            for &op in AtomicRmwOp::ALL {
                let k = MInstKind::Atom {
                    op,
                    space,
                    ty,
                    dst: g.r(ty),
                    addr: g.addr(space),
                    src: g.operand(ty),
                };
                out.push(g.inst(k));
            }
            let k = MInstKind::Cas {
                space,
                ty,
                dst: g.r(ty),
                addr: g.addr(space),
                expected: g.operand(ty),
                replacement: g.operand(ty),
            };
            out.push(g.inst(k));
        }
    }
    out.push(g.inst(MInstKind::Bar));
    for class in RegClass::ALL {
        for slot in [0, 3] {
            let src = g.reg(class);
            out.push(g.inst(MInstKind::Spill {
                src,
                slot: SpillSlot(slot),
            }));
            let dst = g.reg(class);
            out.push(g.inst(MInstKind::Reload {
                dst,
                slot: SpillSlot(slot),
            }));
        }
    }
    out
}

pub fn params() -> Vec<Param> {
    Type::ALL
        .iter()
        .enumerate()
        .map(|(i, &ty)| Param {
            name: format!("p{i}"),
            ty,
        })
        .collect()
}

fn target(b: MBlock) -> BlockTarget {
    BlockTarget::new(b)
}

/// A kernel with every instruction form and both kinds of branch:
///
/// ```text
/// b0 (every form) --div--> b1 | b2     reconverges at b3
/// b1 --uniform, negated--> b3 | b2
/// b2 (no IR origin) --jump--> b3
/// b3 --div--> b4 | b5                  reconverges at exit
/// b4: ret   b5: ret
/// ```
pub fn kernel(name: &str) -> MirFunction {
    let mut g = Gen::new();
    let params = params();
    let mut f = MirFunction::new(name, params.clone());
    f.shared_size = 256;
    f.local_size = 12;
    f.spill_slots = 4;
    let b: Vec<MBlock> = (0..6)
        .map(|i| f.new_block((i != 2).then(|| Block::from_u32(i * 2))))
        .collect();
    f.order = b.clone();
    let mut b0 = every_form(&mut g, &params);
    b0.push(g.inst(MInstKind::Branch {
        pred: Reg::phys(63, RegClass::Pred),
        negated: false,
        taken: target(b[1]),
        not_taken: target(b[2]),
        divergent: true,
    }));
    f.blocks[b[0]].insts = b0;
    let add = MInstKind::Bin {
        op: BinOp::Add,
        ty: MType::I32,
        dst: Reg::phys(1, RegClass::B32),
        a: Reg::phys(2, RegClass::B32),
        b: Operand::Imm(5),
    };
    f.blocks[b[1]].insts = vec![
        g.inst(add),
        g.inst(MInstKind::Branch {
            pred: Reg::phys(2, RegClass::Pred),
            negated: true,
            taken: target(b[3]),
            not_taken: target(b[2]),
            divergent: false,
        }),
    ];
    f.blocks[b[2]].insts = vec![g.inst(MInstKind::Jump { dest: target(b[3]) })];
    f.blocks[b[3]].insts = vec![g.inst(MInstKind::Branch {
        pred: Reg::phys(0, RegClass::Pred),
        negated: true,
        taken: target(b[4]),
        not_taken: target(b[5]),
        divergent: true,
    })];
    f.blocks[b[4]].insts = vec![g.inst(MInstKind::Ret)];
    f.blocks[b[5]].insts = vec![MInst::new(MInstKind::Ret, SourceLoc::default())];
    f
}

/// A small kernel: a loop with a divergent exit.
pub fn small_kernel(name: &str) -> MirFunction {
    let mut f = MirFunction::new(
        name,
        vec![Param {
            name: "n".into(),
            ty: Type::I32,
        }],
    );
    let b: Vec<MBlock> = (0..3)
        .map(|i| f.new_block(Some(Block::from_u32(i))))
        .collect();
    f.order = b.clone();
    let r = |i| Reg::phys(i, RegClass::B32);
    let p0 = Reg::phys(0, RegClass::Pred);
    let at = |l, c| SourceLoc::new(l, c);
    f.blocks[b[0]].insts = vec![
        MInst::new(
            MInstKind::LdParam {
                ty: MType::I32,
                dst: r(0),
                index: 0,
            },
            at(2, 5),
        ),
        MInst::new(
            MInstKind::ReadSpecial {
                dst: r(1),
                sreg: SpecialReg::Tid(Dim::X),
            },
            at(3, 5),
        ),
        MInst::new(MInstKind::Jump { dest: target(b[1]) }, at(4, 5)),
    ];
    f.blocks[b[1]].insts = vec![
        MInst::new(
            MInstKind::Bin {
                op: BinOp::Add,
                ty: MType::I32,
                dst: r(1),
                a: r(1),
                b: Operand::Imm(32),
            },
            at(6, 5),
        ),
        MInst::new(
            MInstKind::Setp {
                cond: Cond::Int(IntCC::SignedLessThan),
                ty: MType::I32,
                dst: p0,
                a: r(1),
                b: Operand::Reg(r(0)),
            },
            at(7, 5),
        ),
        MInst::new(
            MInstKind::Branch {
                pred: p0,
                negated: false,
                taken: target(b[1]),
                not_taken: target(b[2]),
                divergent: true,
            },
            at(8, 5),
        ),
    ];
    f.blocks[b[2]].insts = vec![MInst::new(MInstKind::Ret, at(10, 5))];
    f
}
