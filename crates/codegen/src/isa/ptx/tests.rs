//! Tests of the PTX emitter: every machine instruction kind, operation and type
//! combination the MIR allows, generated from the enums, emitted and assembled by `ptxas`
//! for `sm_70`, `sm_80` and `sm_90`; combinations no IR instruction lowers to must be
//! refused with an error.

use super::*;
use crate::mir::*;
use warplift_ir::{AddrSpace, AtomicRmwOp, Dim, FloatCC, IntCC, Param, SourceLoc, Type};

const TYPES: [MType; 7] = [
    MType::I8,
    MType::I16,
    MType::I32,
    MType::I64,
    MType::F32,
    MType::F64,
    MType::Pred,
];

const SPACES: [AddrSpace; 3] = [AddrSpace::Global, AddrSpace::Shared, AddrSpace::Local];

fn is_int(t: MType) -> bool {
    matches!(t, MType::I8 | MType::I16 | MType::I32 | MType::I64)
}

/// Physical register `n` of the class of `ty`.
fn r(n: u32, ty: MType) -> Reg {
    Reg::phys(n, ty.class())
}

fn p(n: u32) -> Reg {
    Reg::phys(n, RegClass::Pred)
}

/// Immediates worth trying at `ty`: zero, one, all ones, the sign bit, a plain value.
fn imms(ty: MType) -> Vec<u64> {
    match ty {
        MType::F32 => vec![0, 0x3F80_0000, 0x7FC0_0001],
        MType::F64 => vec![0, 0x3FF0_0000_0000_0000],
        MType::Pred => vec![0, 1],
        _ => vec![0, 1, u64::MAX, 1 << (ty.bits() - 1), 5, 200],
    }
}

/// Source operands at `ty`: a register and each immediate.
fn operands(ty: MType) -> Vec<Operand> {
    let mut v = vec![Operand::Reg(r(2, ty))];
    v.extend(imms(ty).into_iter().map(Operand::Imm));
    v
}

fn guards() -> [Option<Guard>; 3] {
    [
        None,
        Some(Guard {
            pred: p(3),
            negated: false,
        }),
        Some(Guard {
            pred: p(3),
            negated: true,
        }),
    ]
}

fn params() -> Vec<Param> {
    [
        Type::I1,
        Type::I8,
        Type::I16,
        Type::I32,
        Type::I64,
        Type::F32,
        Type::F64,
    ]
    .iter()
    .enumerate()
    .map(|(i, &ty)| Param::new(format!("a{i}"), ty))
    .collect()
}

/// A candidate instruction with whether the IR can produce it.
struct Case {
    kind: MInstKind,
    valid: bool,
}

fn cvt_valid(op: CvtOp, to: MType, from: MType) -> bool {
    use CvtOp::*;
    match op {
        Zext | Sext => {
            (is_int(from) || from == MType::Pred) && is_int(to) && to.bits() > from.bits()
        }
        Trunc => is_int(from) && (is_int(to) || to == MType::Pred) && to.bits() < from.bits(),
        FToS | FToU => from.is_float() && is_int(to),
        SToF | UToF => is_int(from) && to.is_float(),
        FExt => from == MType::F32 && to == MType::F64,
        FTrunc => from == MType::F64 && to == MType::F32,
        Bitcast => from.bits() == to.bits() && from.class() == to.class(),
    }
}

/// Every non-terminator instruction kind over every enum value and type.
fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let mut push = |kind, valid| out.push(Case { kind, valid });
    for ty in TYPES {
        for &op in BinOp::ALL {
            use BinOp::*;
            let valid = match op {
                FAdd | FSub | FMul | FDiv | FMin | FMax => ty.is_float(),
                And | Or | Xor => is_int(ty) || ty == MType::Pred,
                _ => is_int(ty),
            };
            for b in operands(ty) {
                // The destination is also the first source in every other case, to
                // exercise expansions that must read their sources before writing.
                for dst in [0, 1] {
                    push(
                        MInstKind::Bin {
                            op,
                            ty,
                            dst: r(dst, ty),
                            a: r(1, ty),
                            b,
                        },
                        valid,
                    );
                }
            }
        }
        for &op in UnOp::ALL {
            use UnOp::*;
            let valid = match op {
                FNeg | FAbs | FSqrt => ty.is_float(),
                Not => is_int(ty) || ty == MType::Pred,
                _ => is_int(ty),
            };
            push(
                MInstKind::Un {
                    op,
                    ty,
                    dst: r(0, ty),
                    src: r(1, ty),
                },
                valid,
            );
        }
        for b in operands(ty) {
            push(
                MInstKind::Mad {
                    ty,
                    dst: r(1, ty),
                    a: r(1, ty),
                    b,
                    c: Operand::Reg(r(2, ty)),
                },
                is_int(ty),
            );
            for &op in TernOp::ALL {
                push(
                    MInstKind::Tern {
                        op,
                        ty,
                        dst: r(0, ty),
                        a: r(1, ty),
                        b: r(2, ty),
                        c: b,
                    },
                    ty == MType::I32,
                );
            }
            push(
                MInstKind::Mad {
                    ty,
                    dst: r(0, ty),
                    a: r(1, ty),
                    b: Operand::Reg(r(2, ty)),
                    c: b,
                },
                is_int(ty),
            );
            for cc in IntCC::ALL {
                let valid = is_int(ty)
                    || (ty == MType::Pred && matches!(cc, IntCC::Equal | IntCC::NotEqual));
                push(
                    MInstKind::Setp {
                        cond: Cond::Int(*cc),
                        ty,
                        dst: p(0),
                        a: r(1, ty),
                        b,
                    },
                    valid,
                );
            }
            for cc in FloatCC::ALL {
                push(
                    MInstKind::Setp {
                        cond: Cond::Float(*cc),
                        ty,
                        dst: p(0),
                        a: r(1, ty),
                        b,
                    },
                    ty.is_float(),
                );
            }
            push(
                MInstKind::Selp {
                    ty,
                    dst: r(0, ty),
                    a: b,
                    b: Operand::Reg(r(1, ty)),
                    pred: p(2),
                },
                true,
            );
            push(
                MInstKind::Selp {
                    ty,
                    dst: r(1, ty),
                    a: Operand::Reg(r(1, ty)),
                    b,
                    pred: p(2),
                },
                true,
            );
            push(
                MInstKind::Mov {
                    ty,
                    dst: r(0, ty),
                    src: b,
                },
                true,
            );
        }
        push(
            MInstKind::Fma {
                ty,
                dst: r(0, ty),
                a: r(1, ty),
                b: r(2, ty),
                c: r(3, ty),
            },
            ty.is_float(),
        );
        for from in TYPES {
            for &op in CvtOp::ALL {
                push(
                    MInstKind::Cvt {
                        op,
                        to: ty,
                        from,
                        dst: r(0, ty),
                        src: r(1, from),
                    },
                    cvt_valid(op, ty, from),
                );
            }
        }
        for space in SPACES {
            let base = Some(if space == AddrSpace::Global {
                Reg::phys(5, RegClass::B64)
            } else {
                Reg::phys(5, RegClass::B32)
            });
            for addr in [
                Address { base, offset: 0 },
                Address { base, offset: -8 },
                Address {
                    base: None,
                    offset: 16,
                },
            ] {
                push(
                    MInstKind::Ld {
                        space,
                        ty,
                        dst: r(0, ty),
                        addr,
                    },
                    true,
                );
                for src in operands(ty) {
                    push(
                        MInstKind::St {
                            space,
                            ty,
                            src,
                            addr,
                        },
                        true,
                    );
                }
                for op in AtomicRmwOp::ALL {
                    for src in [Operand::Reg(r(2, ty)), Operand::Imm(7)] {
                        push(
                            MInstKind::Atom {
                                op: *op,
                                space,
                                ty,
                                dst: r(2, ty),
                                addr,
                                src,
                            },
                            matches!(ty, MType::I32 | MType::I64),
                        );
                    }
                }
                push(
                    MInstKind::Cas {
                        space,
                        ty,
                        dst: r(0, ty),
                        addr,
                        expected: Operand::Reg(r(1, ty)),
                        replacement: Operand::Imm(3),
                    },
                    matches!(ty, MType::I32 | MType::I64),
                );
            }
        }
    }
    for (index, param) in params().iter().enumerate() {
        let ty = MType::from_ir(param.ty);
        push(
            MInstKind::LdParam {
                ty,
                dst: r(0, ty),
                index: index as u32,
            },
            true,
        );
    }
    push(
        MInstKind::LdParam {
            ty: MType::I32,
            dst: r(0, MType::I32),
            index: 99,
        },
        false,
    );
    for d in [Dim::X, Dim::Y, Dim::Z] {
        for sreg in [
            SpecialReg::Tid(d),
            SpecialReg::Ctaid(d),
            SpecialReg::Ntid(d),
            SpecialReg::Nctaid(d),
        ] {
            push(
                MInstKind::ReadSpecial {
                    dst: r(0, MType::I32),
                    sreg,
                },
                true,
            );
        }
    }
    push(
        MInstKind::ReadSpecial {
            dst: r(0, MType::I32),
            sreg: SpecialReg::LaneId,
        },
        true,
    );
    push(MInstKind::Bar, true);
    for class in RegClass::ALL {
        for slot in [0, 2] {
            push(
                MInstKind::Spill {
                    src: Reg::phys(1, class),
                    slot: SpillSlot(slot),
                },
                true,
            );
            push(
                MInstKind::Reload {
                    dst: Reg::phys(1, class),
                    slot: SpillSlot(slot),
                },
                true,
            );
        }
    }
    out
}

/// A function of one block holding `insts` and a `ret`.
fn function(insts: Vec<MInst>) -> MirFunction {
    let mut f = MirFunction::new("all_cases", params());
    f.shared_size = 60;
    f.local_size = 20;
    f.spill_slots = 3;
    let b = f.new_block(None);
    f.blocks[b].insts = insts;
    f.blocks[b]
        .insts
        .push(MInst::new(MInstKind::Ret, SourceLoc::default()));
    f.order.push(b);
    f
}

/// Assembles `ptx` for sm_70, sm_80 and sm_90, failing with ptxas's message and the
/// numbered PTX on a rejection; skipped (loudly) when there is no ptxas outside CI.
fn check_ptx(ptx: &str) {
    let Some(ptxas) = super::ptxas::ptxas_for_tests() else {
        return;
    };
    if let Err(e) = super::ptxas::check_assembles(&ptxas, ptx) {
        panic!("{e}");
    }
}

#[test]
fn every_instruction_is_emitted_or_refused() {
    let opts = PtxOptions::default();
    let mut accepted = Vec::new();
    let mut count = 0;
    for case in cases() {
        for guard in guards() {
            let inst = MInst {
                kind: case.kind.clone(),
                guard,
                srcloc: SourceLoc::new(count + 1, 1),
            };
            count += 1;
            let result = emit_ptx(&function(vec![inst.clone()]), &opts);
            match (&result, case.valid) {
                (Ok(_), true) => accepted.push(inst),
                (Err(_), false) => {}
                (Ok(ptx), false) => panic!("{:?} should be refused, got\n{ptx}", inst.kind),
                (Err(e), true) => panic!("{:?} refused: {e}", inst.kind),
            }
        }
    }
    assert!(accepted.len() > 3000, "only {} cases", accepted.len());
    // A few thousand instructions per kernel keeps each ptxas run short.
    for chunk in accepted.chunks(2500) {
        let f = function(chunk.to_vec());
        let ptx = emit_ptx(
            &f,
            &PtxOptions {
                file_name: Some("all_cases.wir".into()),
                ..PtxOptions::default()
            },
        )
        .expect("emits");
        check_ptx(&ptx);
    }
}

/// A diamond and a loop: both branch forms, fall-through elision and `.uni`.
#[test]
fn branches_and_layout() {
    let mut f = MirFunction::new("branches", vec![Param::new("n", Type::I32)]);
    let b: Vec<MBlock> = (0..4).map(|_| f.new_block(None)).collect();
    let loc = SourceLoc::default();
    let i = |kind| MInst::new(kind, loc);
    let r0 = r(0, MType::I32);
    f.blocks[b[0]].insts = vec![
        i(MInstKind::LdParam {
            ty: MType::I32,
            dst: r0,
            index: 0,
        }),
        i(MInstKind::Setp {
            cond: Cond::Int(IntCC::SignedLessThan),
            ty: MType::I32,
            dst: p(0),
            a: r0,
            b: Operand::Imm(10),
        }),
        i(MInstKind::Branch {
            pred: p(0),
            negated: false,
            taken: BlockTarget::new(b[1]),
            not_taken: BlockTarget::new(b[2]),
            divergent: true,
        }),
    ];
    f.blocks[b[1]].insts = vec![
        i(MInstKind::Bin {
            op: BinOp::Add,
            ty: MType::I32,
            dst: r0,
            a: r0,
            b: Operand::Imm(1),
        }),
        i(MInstKind::Setp {
            cond: Cond::Int(IntCC::SignedLessThan),
            ty: MType::I32,
            dst: p(0),
            a: r0,
            b: Operand::Imm(10),
        }),
        i(MInstKind::Branch {
            pred: p(0),
            negated: true,
            taken: BlockTarget::new(b[3]),
            not_taken: BlockTarget::new(b[1]),
            divergent: false,
        }),
    ];
    f.blocks[b[2]].insts = vec![i(MInstKind::Jump {
        dest: BlockTarget::new(b[3]),
    })];
    f.blocks[b[3]].insts = vec![i(MInstKind::Ret)];
    f.order = b.clone();
    let ptx = emit_ptx(&f, &PtxOptions::default()).unwrap();
    // block1 follows block0: branch on the inverted condition and fall through.
    assert!(ptx.contains("@!%p0 bra $Lbb2;\n$Lbb1:"), "{ptx}");
    // Neither side of block1's branch follows it; a uniform branch is `bra.uni`.
    assert!(
        ptx.contains("@!%p0 bra.uni $Lbb3;\n\tbra.uni $Lbb1;"),
        "{ptx}"
    );
    // block2 jumps to the next block: nothing written.
    assert!(ptx.contains("$Lbb2:\n$Lbb3:"), "{ptx}");
    check_ptx(&ptx);

    // Neither side of block0's branch next: both halves written.
    f.order = vec![b[0], b[3], b[1], b[2]];
    let ptx = emit_ptx(&f, &PtxOptions::default()).unwrap();
    assert!(
        ptx.contains("@%p0 bra $Lbb1;\n\tbra.uni $Lbb2;\n$Lbb3:"),
        "{ptx}"
    );
    assert!(ptx.contains("$Lbb2:\n\tbra.uni $Lbb3;\n}"), "{ptx}");
    check_ptx(&ptx);
}

#[test]
fn header_params_and_line_info() {
    let mut f = function(vec![MInst::new(
        MInstKind::LdParam {
            ty: MType::I64,
            dst: r(0, MType::I64),
            index: 4,
        },
        SourceLoc::new(7, 3),
    )]);
    f.name = "k".into();
    let opts = PtxOptions {
        file_name: Some("dir/k\".wir".into()),
        ..PtxOptions::for_target("sm_90").unwrap()
    };
    let ptx = emit_ptx(&f, &opts).unwrap();
    assert!(
        ptx.contains(".version 7.8\n.target sm_90\n.address_size 64"),
        "{ptx}"
    );
    assert!(ptx.contains(".file 1 \"dir/k_.wir\""), "{ptx}");
    assert!(
        ptx.contains(".loc 1 7 3\n\tld.param.u64 %rd0, [p4];"),
        "{ptx}"
    );
    assert!(ptx.contains(".param .u8 p0,\n\t.param .u8 p1,\n\t.param .u16 p2,\n\t.param .u32 p3,\n\t.param .u64 p4,\n\t.param .f32 p5,\n\t.param .f64 p6\n"), "{ptx}");
    assert!(ptx.contains(".local .align 8 .b8 __wl_local[48];"), "{ptx}");
    assert!(
        ptx.contains(".shared .align 16 .b8 __wl_shared[60];"),
        "{ptx}"
    );
    check_ptx(&ptx);
}

#[test]
fn large_windows_are_zeroed_with_loops() {
    let mut f = function(vec![]);
    f.local_size = 1000;
    f.shared_size = 4097;
    let ptx = emit_ptx(&f, &PtxOptions::default()).unwrap();
    assert!(
        ptx.contains("$Lwl_zl:") && ptx.contains("$Lwl_zs:"),
        "{ptx}"
    );
    assert!(ptx.contains("bar.sync 0"), "{ptx}");
    check_ptx(&ptx);
    let no_zero = emit_ptx(
        &f,
        &PtxOptions {
            zero_init: false,
            ..PtxOptions::default()
        },
    )
    .unwrap();
    assert!(!no_zero.contains("bar.sync"), "{no_zero}");
    check_ptx(&no_zero);
}

#[test]
fn refuses_what_it_cannot_emit() {
    let mut f = function(vec![]);
    f.name = "not.an.identifier".into();
    assert!(matches!(
        emit_ptx(&f, &PtxOptions::default()),
        Err(PtxError::BadName(_))
    ));
    let f = function(vec![MInst::new(
        MInstKind::Mov {
            ty: MType::I32,
            dst: Reg::virt(0, RegClass::B32),
            src: Operand::Imm(1),
        },
        SourceLoc::default(),
    )]);
    assert!(matches!(
        emit_ptx(&f, &PtxOptions::default()),
        Err(PtxError::NotAllocated { .. })
    ));
    let f = function(vec![MInst::new(
        MInstKind::Mov {
            ty: MType::I32,
            dst: Reg::phys(0, RegClass::B64),
            src: Operand::Imm(1),
        },
        SourceLoc::default(),
    )]);
    assert!(matches!(
        emit_ptx(&f, &PtxOptions::default()),
        Err(PtxError::WrongClass { .. })
    ));
    let mut f = function(vec![]);
    f.blocks[MBlock::from_u32(0)].insts.clear();
    assert!(matches!(
        emit_ptx(&f, &PtxOptions::default()),
        Err(PtxError::BadTerminator(_))
    ));
    let opts = PtxOptions {
        target: "sm_90".into(),
        ..PtxOptions::default()
    };
    assert!(matches!(
        emit_ptx(&function(vec![]), &opts),
        Err(PtxError::VersionTooOld { .. })
    ));
    let opts = PtxOptions {
        target: "sm_50".into(),
        ..PtxOptions::default()
    };
    assert!(matches!(
        emit_ptx(&function(vec![]), &opts),
        Err(PtxError::UnknownTarget(_))
    ));
    assert!(matches!(
        emit_ptx(&MirFunction::new("e", vec![]), &PtxOptions::default()),
        Err(PtxError::Empty)
    ));
}

#[test]
fn identifiers() {
    for ok in ["k", "saxpy_2", "_x", "$a", "%a1"] {
        assert!(is_ptx_identifier(ok), "{ok}");
    }
    for bad in ["", "_", "1k", "a.b", "a-b", "é"] {
        assert!(!is_ptx_identifier(bad), "{bad}");
    }
}

/// The sequences of a few expansions, read as a reviewer would.
#[test]
fn expansions_read_as_documented() {
    let emit1 = |kind| {
        let f = function(vec![MInst {
            kind,
            guard: Some(Guard {
                pred: p(3),
                negated: false,
            }),
            srcloc: SourceLoc::default(),
        }]);
        let ptx = emit_ptx(
            &f,
            &PtxOptions {
                zero_init: false,
                ..PtxOptions::default()
            },
        )
        .unwrap();
        let body = &ptx[ptx.find("$Lbb0:\n").unwrap() + 7..ptx.find("\tret;").unwrap()];
        body.to_string()
    };
    let i32r = |n| r(n, MType::I32);
    assert_eq!(
        emit1(MInstKind::Bin {
            op: BinOp::DivS,
            ty: MType::I32,
            dst: i32r(0),
            a: i32r(0),
            b: Operand::Reg(i32r(1)),
        }),
        "\tsetp.eq.s32 %tp0, %r1, 0;\n\
         \tsetp.eq.s32 %tp1, %r1, -1;\n\
         \tor.pred %tp2, %tp0, %tp1;\n\
         \tselp.b32 %tr0, 1, %r1, %tp2;\n\
         \tdiv.s32 %tr1, %r0, %tr0;\n\
         \tneg.s32 %tr2, %r0;\n\
         \tselp.b32 %tr1, %tr2, %tr1, %tp1;\n\
         \t@%p3 selp.b32 %r0, -1, %tr1, %tp0;\n"
    );
    assert_eq!(
        emit1(MInstKind::Un {
            op: UnOp::Ctz,
            ty: MType::I8,
            dst: i32r(0),
            src: i32r(1),
        }),
        "\tor.b32 %tr1, %r1, 0x100;\n\tbrev.b32 %tr0, %tr1;\n\t@%p3 clz.b32 %r0, %tr0;\n"
    );
    assert_eq!(
        emit1(MInstKind::Bin {
            op: BinOp::Shl,
            ty: MType::I64,
            dst: r(0, MType::I64),
            a: r(1, MType::I64),
            b: Operand::Reg(r(2, MType::I64)),
        }),
        "\tmin.u64 %trd0, %rd2, 64;\n\tcvt.u32.u64 %tr0, %trd0;\n\t@%p3 shl.b64 %rd0, %rd1, %tr0;\n"
    );
    assert_eq!(
        emit1(MInstKind::Bin {
            op: BinOp::FMin,
            ty: MType::F32,
            dst: i32r(0),
            a: i32r(1),
            b: Operand::Reg(i32r(2)),
        }),
        "\tmin.f32 %tr0, %r1, %r2;\n\
         \ttestp.notanumber.f32 %tp0, %tr0;\n\
         \tselp.b32 %tr0, 0f7FFFFFFF, %tr0, %tp0;\n\
         \tor.b32 %tr1, %r1, %r2;\n\
         \tsetp.eq.f32 %tp1, %r1, %r2;\n\
         \t@%p3 selp.b32 %r0, %tr1, %tr0, %tp1;\n"
    );
    assert_eq!(
        emit1(MInstKind::Atom {
            op: AtomicRmwOp::Smin,
            space: AddrSpace::Shared,
            ty: MType::I64,
            dst: r(0, MType::I64),
            addr: Address {
                base: Some(i32r(1)),
                offset: 8,
            },
            src: Operand::Reg(r(0, MType::I64)),
        }),
        "\tadd.u32 %tr0, %wl_sbase, %r1;\n\
         \t@%p3 fence.sc.cta;\n\
         \t@%p3 atom.acq_rel.cta.shared.min.s64 %rd0, [%tr0+8], %rd0;\n"
    );
}
