//! Round trips of every instruction form through the bytecode, and the decoder's
//! rejection of malformed code.

use crate::simt_common as common;

use rand::{Rng, SeedableRng};
use warplift_codegen::isa::simt::ops::{opcode, OPCODES};
use warplift_codegen::isa::simt::{
    decode, decoded_to_mir, disassemble, encode, DecodeError, EncodeError, Op, Pc,
};
use warplift_codegen::mir::{MInstKind, MirFunction, Reg, RegClass};
use warplift_ir::SourceLoc;

fn srclocs(f: &MirFunction) -> Vec<SourceLoc> {
    f.order
        .iter()
        .flat_map(|&b| f.blocks[b].insts.iter().map(|i| i.srcloc))
        .collect()
}

#[test]
fn every_instruction_form_round_trips() {
    let f = common::kernel("all_forms");
    let code = encode(&f).expect("encodes");
    assert_eq!(code.insts.len(), f.num_insts());
    assert_eq!(code.info.num_regs, [64, 64, 64]);
    let k = decode(&code.code, &code.info).expect("decodes");
    assert_eq!(k.insts.len(), f.num_insts());

    // Back to MIR: the same instructions, guards, block origins and (given the pcs'
    // locations) source locations.
    let locs: std::collections::HashMap<u32, SourceLoc> =
        code.insts.iter().map(|i| (i.pc, i.srcloc)).collect();
    let g = decoded_to_mir(&k, |pc| locs[&pc]);
    assert_eq!(g.order.len(), f.order.len());
    for (&fb, &gb) in f.order.iter().zip(&g.order) {
        assert_eq!(f.blocks[fb].origin, g.blocks[gb].origin);
        assert_eq!(f.blocks[fb].insts, g.blocks[gb].insts, "in {fb}");
    }
    assert_eq!(srclocs(&f), srclocs(&g));
    assert_eq!(f.to_string(), g.to_string());

    // Every opcode of the table occurs.
    for &(code, name) in OPCODES {
        assert!(
            k.insts.iter().any(|i| i.op.opcode() == code),
            "opcode {name} not covered"
        );
    }
    // The disassembly lists every instruction at its pc.
    let text = disassemble(&k);
    for inst in &k.insts {
        assert!(text.contains(&format!("{:#06x}:", inst.pc)));
    }
    for needle in [
        "bin.add.i32",
        "ld.global.f32",
        "br.div $p63",
        "reconv exit",
        "br.uni !$p2",
        "mov.f64",
        "%tid.y",
        "spill 0, $r",
        "ret",
        "block2:\n",
        "block3:  ; block6",
    ] {
        assert!(text.contains(needle), "{needle} missing from\n{text}");
    }
}

#[test]
fn branches_carry_their_reconvergence_points() {
    let f = common::kernel("k");
    let code = encode(&f).unwrap();
    let k = decode(&code.code, &code.info).unwrap();
    let starts: Vec<u32> = k.info.blocks.iter().map(|b| b.pc).collect();
    let ends: Vec<&Op> = (0..6)
        .map(|b| &k.insts[k.block_insts(b).end - 1].op)
        .collect();
    assert_eq!(
        ends[0],
        &Op::BrDiv {
            cond: warplift_codegen::mir::Guard {
                pred: Reg::phys(63, RegClass::Pred),
                negated: false
            },
            taken: Pc(starts[1]),
            not_taken: Pc(starts[2]),
            reconv: Some(Pc(starts[3])),
        }
    );
    assert!(matches!(ends[1], Op::BrUni { .. }));
    assert!(matches!(ends[3], Op::BrDiv { reconv: None, .. }));
    // A loop whose exit is divergent reconverges at the exit block.
    let small = encode(&common::small_kernel("s")).unwrap();
    let k = decode(&small.code, &small.info).unwrap();
    let last_of_loop = &k.insts[k.block_insts(1).end - 1].op;
    assert!(
        matches!(last_of_loop, Op::BrDiv { reconv: Some(pc), .. } if pc.0 == k.info.blocks[2].pc)
    );
}

#[test]
fn immediates_are_stored_at_their_type_width() {
    let mut f = common::small_kernel("s");
    let b1 = f.order[1];
    if let MInstKind::Bin { ty, b, .. } = &mut f.blocks[b1].insts[0].kind {
        *ty = warplift_codegen::mir::MType::I8;
        *b = warplift_codegen::mir::Operand::Imm(0xffff_ff05);
    }
    let code = encode(&f).unwrap();
    let k = decode(&code.code, &code.info).unwrap();
    let i = k.block_starts[1];
    assert!(matches!(
        k.insts[i].op,
        Op::Bin {
            b: warplift_codegen::mir::Operand::Imm(5),
            ..
        }
    ));
}

#[test]
fn encoder_rejects_unallocated_or_malformed_functions() {
    let mut f = common::small_kernel("s");
    let b0 = f.order[0];
    f.blocks[b0].insts[0].kind = MInstKind::LdParam {
        ty: warplift_codegen::mir::MType::I32,
        dst: Reg::virt(3, RegClass::B32),
        index: 0,
    };
    assert!(matches!(
        encode(&f),
        Err(EncodeError::VirtualRegister { .. })
    ));

    let mut f = common::small_kernel("s");
    f.blocks[b0].insts.pop();
    assert!(matches!(
        encode(&f),
        Err(EncodeError::MissingTerminator { .. })
    ));

    let mut f = common::small_kernel("s");
    f.order.pop();
    assert!(matches!(
        encode(&f),
        Err(EncodeError::UnplacedTarget { .. })
    ));

    let mut f = common::small_kernel("s");
    f.blocks[b0].insts[0].kind = MInstKind::LdParam {
        ty: warplift_codegen::mir::MType::I64,
        dst: Reg::phys(0, RegClass::B64),
        index: 0,
    };
    assert!(matches!(
        encode(&f),
        Err(EncodeError::Invalid(DecodeError::BadParam { .. }))
    ));

    let f = MirFunction::new("empty", vec![]);
    assert!(matches!(encode(&f), Err(EncodeError::NoBlocks(_))));
}

#[test]
fn decoder_rejects_inconsistent_code() {
    let code = encode(&common::small_kernel("s")).unwrap();
    let ok = |info: &warplift_codegen::isa::simt::KernelInfo, bytes: &[u8]| decode(bytes, info);

    // Fewer registers declared than used.
    let mut info = code.info.clone();
    info.num_regs[0] = 1;
    assert!(matches!(
        ok(&info, &code.code),
        Err(DecodeError::RegisterOutOfRange { .. })
    ));
    // A block table entry inside an instruction.
    let mut info = code.info.clone();
    info.blocks[1].pc += 1;
    assert!(matches!(
        ok(&info, &code.code),
        Err(DecodeError::BadBlockStart { .. })
    ));
    // A block boundary that leaves a block without terminator.
    let mut info = code.info.clone();
    info.blocks.remove(1);
    assert!(ok(&info, &code.code).is_err());
    // Unknown opcode.
    let mut bytes = code.code.clone();
    bytes[0] = 0x7f;
    assert!(matches!(
        ok(&code.info, &bytes),
        Err(DecodeError::UnknownOpcode { .. })
    ));
    // A wrong reconvergence point: patch the loop's divergent branch to reconverge at
    // the loop header.
    let k = decode(&code.code, &code.info).unwrap();
    let br = &k.insts[k.block_insts(1).end - 1];
    assert_eq!(br.op.opcode(), opcode::BrDiv);
    let reconv_at = br.pc as usize + 1 + 1 + 4 + 4;
    let mut bytes = code.code.clone();
    bytes[reconv_at..reconv_at + 4].copy_from_slice(&k.info.blocks[1].pc.to_le_bytes());
    assert!(matches!(
        ok(&code.info, &bytes),
        Err(DecodeError::BadReconvergence { .. })
    ));
    // A branch into the middle of a block.
    let mut bytes = code.code.clone();
    bytes[br.pc as usize + 2..br.pc as usize + 6].copy_from_slice(&1u32.to_le_bytes());
    assert!(matches!(
        ok(&code.info, &bytes),
        Err(DecodeError::BadTarget { .. })
    ));
}

#[test]
fn decoder_survives_truncation_flips_and_garbage() {
    let code = encode(&common::kernel("k")).unwrap();
    for len in 0..code.code.len() {
        assert!(
            decode(&code.code[..len], &code.info).is_err(),
            "prefix {len}"
        );
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    for _ in 0..2000 {
        let mut bytes = code.code.clone();
        for _ in 0..rng.random_range(1..4) {
            let i = rng.random_range(0..bytes.len());
            bytes[i] ^= 1 << rng.random_range(0..8);
        }
        let _ = decode(&bytes, &code.info);
    }
    for len in [1, 2, 7, 64, 1000] {
        let bytes: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        let _ = decode(&bytes, &code.info);
    }
}

/// Code made of `ops` (the last one a terminator) in one block, with 8 registers of each
/// class and one spill slot.
fn one_block(ops: &[Op]) -> (Vec<u8>, warplift_codegen::isa::simt::KernelInfo) {
    let mut code = Vec::new();
    for op in ops {
        op.encode(None, &mut code);
    }
    let info = warplift_codegen::isa::simt::KernelInfo {
        name: "k".into(),
        params: common::params(),
        num_regs: [8, 8, 8],
        shared_size: 0,
        local_size: 0,
        spill_slots: 1,
        blocks: vec![warplift_codegen::isa::simt::BlockInfo {
            pc: 0,
            origin: None,
        }],
    };
    (code, info)
}

#[test]
fn decoder_checks_types_classes_immediates_and_slots() {
    use warplift_codegen::mir::{BinOp, MType, Operand};
    let r = |i| Reg::phys(i, RegClass::B32);
    let rd = |i| Reg::phys(i, RegClass::B64);
    let check = |op: Op| {
        let (code, info) = one_block(&[op, Op::Ret {}]);
        decode(&code, &info)
    };
    let bin = |op, ty, dst, b| Op::Bin {
        op,
        ty,
        dst,
        a: dst,
        b,
    };
    assert!(check(bin(BinOp::Add, MType::I32, r(1), Operand::Imm(7))).is_ok());
    assert!(matches!(
        check(bin(BinOp::FAdd, MType::I32, r(1), Operand::Imm(7))),
        Err(DecodeError::IllegalType { .. })
    ));
    assert!(matches!(
        check(bin(BinOp::Add, MType::I32, rd(1), Operand::Imm(7))),
        Err(DecodeError::WrongClass { .. })
    ));
    assert!(matches!(
        check(bin(BinOp::Add, MType::I8, r(1), Operand::Imm(0x100))),
        Err(DecodeError::ImmediateTooWide { .. })
    ));
    assert!(matches!(
        check(bin(BinOp::Add, MType::I32, r(8), Operand::Imm(0))),
        Err(DecodeError::RegisterOutOfRange { .. })
    ));
    assert!(matches!(
        check(Op::Spill { slot: 1, src: r(0) }),
        Err(DecodeError::BadSpillSlot { .. })
    ));
    assert!(matches!(
        check(Op::LdParam {
            ty: MType::I64,
            dst: rd(0),
            index: 3
        }),
        Err(DecodeError::BadParam { .. })
    ));
    // A block that does not end with a terminator; a terminator inside a block.
    let (code, info) = one_block(&[Op::Bar {}]);
    assert!(matches!(
        decode(&code, &info),
        Err(DecodeError::MissingTerminator { .. })
    ));
    let (code, info) = one_block(&[Op::Ret {}, Op::Ret {}]);
    assert!(matches!(
        decode(&code, &info),
        Err(DecodeError::TerminatorInsideBlock { .. })
    ));
    // More registers declared than the encoding can name.
    let (code, mut info) = one_block(&[Op::Ret {}]);
    info.num_regs[2] = 65;
    assert!(matches!(
        decode(&code, &info),
        Err(DecodeError::TooManyRegisters(_))
    ));
}

/// Random CFGs (loops, unreachable blocks, arms that return, both kinds of branch) over
/// random instructions round-trip, and their reconvergence points validate.
#[test]
fn random_kernels_round_trip() {
    use warplift_codegen::mir::{BlockTarget, MBlock};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2024);
    let mut g = common::Gen::new();
    let pool = common::every_form(&mut g, &common::params());
    for _ in 0..300 {
        let mut f = MirFunction::new("r", common::params());
        f.spill_slots = 4;
        let n = rng.random_range(1..12);
        let blocks: Vec<MBlock> = (0..n)
            .map(|i| {
                f.new_block(
                    rng.random_bool(0.8)
                        .then(|| warplift_ir::Block::from_u32(i)),
                )
            })
            .collect();
        // A random placement, entry first.
        let mut order = blocks.clone();
        for i in (2..order.len()).rev() {
            let j = rng.random_range(1..=i);
            order.swap(i, j);
        }
        f.order = order;
        for &b in &blocks {
            let mut insts: Vec<_> = (0..rng.random_range(0..4))
                .map(|_| pool[rng.random_range(0..pool.len())].clone())
                .collect();
            let pick = |rng: &mut rand_chacha::ChaCha8Rng| {
                BlockTarget::new(blocks[rng.random_range(0..blocks.len())])
            };
            let kind = match rng.random_range(0..4) {
                0 => MInstKind::Ret,
                1 => MInstKind::Jump {
                    dest: pick(&mut rng),
                },
                _ => MInstKind::Branch {
                    pred: Reg::phys(rng.random_range(0..64), RegClass::Pred),
                    negated: rng.random(),
                    taken: pick(&mut rng),
                    not_taken: pick(&mut rng),
                    divergent: rng.random(),
                },
            };
            insts.push(g.inst(kind));
            f.blocks[b].insts = insts;
        }
        let code = encode(&f).unwrap_or_else(|e| panic!("{e}\n{f}"));
        let k = decode(&code.code, &code.info).unwrap();
        let locs: std::collections::HashMap<u32, SourceLoc> =
            code.insts.iter().map(|i| (i.pc, i.srcloc)).collect();
        let back = decoded_to_mir(&k, |pc| locs[&pc]);
        // Blocks come back numbered in placement order.
        let number = |b: MBlock| f.order.iter().position(|&o| o == b).unwrap();
        for (i, &b) in f.order.iter().enumerate() {
            let mut want = f.blocks[b].insts.clone();
            for inst in &mut want {
                inst.kind
                    .for_each_target_mut(|t| t.block = MBlock::from_u32(number(t.block) as u32));
            }
            assert_eq!(want, back.blocks[MBlock::from_u32(i as u32)].insts);
        }
    }
}
