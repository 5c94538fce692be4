//! Tests of the IR core: types, condition codes, literals, layout and structural equality.

use warplift_ir::write::{format_f32, format_f64, format_int_imm};
use warplift_ir::*;

#[test]
fn type_names_round_trip_and_sizes_are_consistent() {
    for ty in Type::ALL {
        assert_eq!(ty.name().parse::<Type>(), Ok(ty));
        assert_eq!(u64::from(ty.bits()), u64::from(ty.mask().count_ones()));
        assert!(ty.bytes() * 8 >= ty.bits());
    }
    assert!("i33".parse::<Type>().is_err());
}

#[test]
fn condition_code_inverses_are_involutions() {
    for &cc in IntCC::ALL {
        assert_ne!(cc.inverse(), cc);
        assert_eq!(cc.inverse().inverse(), cc);
        assert_eq!(cc.name().parse::<IntCC>(), Ok(cc));
    }
    for &cc in FloatCC::ALL {
        assert_ne!(cc.inverse(), cc);
        assert_eq!(cc.inverse().inverse(), cc);
        assert_eq!(cc.name().parse::<FloatCC>(), Ok(cc));
    }
}

#[test]
fn opcode_names_are_unique_and_found() {
    for &op in Opcode::ALL {
        assert_eq!(Opcode::from_name(op.name()), Some(op));
        assert_eq!(
            op.has_result(),
            !op.is_terminator() && !matches!(op, Opcode::Store | Opcode::Barrier)
        );
    }
    assert_eq!(Opcode::from_name("iad"), None);
}

#[test]
fn integer_immediates_print_signed() {
    assert_eq!(format_int_imm(0xffff_ffff, Type::I32), "-1");
    assert_eq!(format_int_imm(0x7fff_ffff, Type::I32), "2147483647");
    assert_eq!(format_int_imm(0x80, Type::I8), "-128");
    assert_eq!(format_int_imm(1, Type::I1), "1");
    assert_eq!(format_int_imm(u64::MAX, Type::I64), "-1");
}

#[test]
fn float_literals_round_trip_bit_exactly() {
    let samples32 = [
        0.0f32.to_bits(),
        (-0.0f32).to_bits(),
        1.5f32.to_bits(),
        f32::MIN_POSITIVE.to_bits(),
        1, // smallest subnormal
        f32::MAX.to_bits(),
        f32::INFINITY.to_bits(),
        f32::NEG_INFINITY.to_bits(),
    ];
    for bits in samples32 {
        let text = format_f32(bits);
        let back = match text.as_str() {
            "inf" => f32::INFINITY,
            "-inf" => f32::NEG_INFINITY,
            t => t.parse::<f32>().unwrap(),
        };
        assert_eq!(back.to_bits(), bits, "{text}");
    }
    assert_eq!(format_f32(write::CANONICAL_NAN_F32), "nan");
    assert_eq!(format_f32(0x7fc0_0001), "0x7fc00001");
    assert_eq!(format_f64(write::CANONICAL_NAN_F64), "nan");
    assert_eq!(format_f64(2.0f64.to_bits()), "2.0");
    assert_eq!(format_f64(1e300f64.to_bits()), "1e300");
}

fn tiny_kernel(first_const: u64) -> Function {
    let mut f = Function::with_name_signature(
        "k",
        Signature {
            params: vec![Param::new("out", Type::I64)],
        },
    );
    let b0 = f.dfg.make_block();
    let b1 = f.dfg.make_block();
    f.layout.append_block(b0);
    f.layout.append_block(b1);
    let p = f.dfg.append_block_param(b0, Type::I64);
    let q = f.dfg.append_block_param(b1, Type::I32);
    let c = f.dfg.make_inst(
        InstructionData::UnaryImm {
            opcode: Opcode::Iconst,
            imm: first_const,
        },
        Some(Type::I32),
    );
    f.layout.append_inst(c, b0);
    let cv = f.dfg.inst_result(c).unwrap();
    let j = f.dfg.make_inst(
        InstructionData::Jump {
            opcode: Opcode::Jump,
            dest: BlockCall::new(b1, [cv]),
        },
        None,
    );
    f.layout.append_inst(j, b0);
    let st = f.dfg.make_inst(
        InstructionData::Store {
            opcode: Opcode::Store,
            space: AddrSpace::Global,
            args: [q, p],
            offset: 4,
        },
        None,
    );
    f.layout.append_inst(st, b1);
    let r = f.dfg.make_inst(
        InstructionData::Nullary {
            opcode: Opcode::Return,
        },
        None,
    );
    f.layout.append_inst(r, b1);
    f
}

#[test]
fn printer_writes_the_text_format() {
    let f = tiny_kernel(7);
    assert_eq!(
        f.to_string(),
        "kernel %k(out: i64) {\n\
         block0(v0: i64):\n    v2 = iconst.i32 7\n    jump block1(v2)\n\n\
         block1(v1: i32):\n    store global v1, v0+4\n    return\n}\n"
    );
    assert_eq!(f.successors(f.entry_block().unwrap()).count(), 1);
}

#[test]
fn structural_equality_ignores_numbering_but_not_content() {
    let a = tiny_kernel(7);
    assert_eq!(a, a.clone());
    assert_ne!(a, tiny_kernel(8));
    // The same kernel with its values created in another order is still equal.
    let mut b = Function::with_name_signature("k", a.signature.clone());
    let b0 = b.dfg.make_block();
    let b1 = b.dfg.make_block();
    b.layout.append_block(b0);
    b.layout.append_block(b1);
    let c = b.dfg.make_inst(
        InstructionData::UnaryImm {
            opcode: Opcode::Iconst,
            imm: 7,
        },
        Some(Type::I32),
    );
    let q = b.dfg.append_block_param(b1, Type::I32);
    let p = b.dfg.append_block_param(b0, Type::I64);
    b.layout.append_inst(c, b0);
    let cv = b.dfg.inst_result(c).unwrap();
    let j = b.dfg.make_inst(
        InstructionData::Jump {
            opcode: Opcode::Jump,
            dest: BlockCall::new(b1, [cv]),
        },
        None,
    );
    b.layout.append_inst(j, b0);
    let st = b.dfg.make_inst(
        InstructionData::Store {
            opcode: Opcode::Store,
            space: AddrSpace::Global,
            args: [q, p],
            offset: 4,
        },
        None,
    );
    b.layout.append_inst(st, b1);
    let r = b.dfg.make_inst(
        InstructionData::Nullary {
            opcode: Opcode::Return,
        },
        None,
    );
    b.layout.append_inst(r, b1);
    assert_eq!(a, b);
    // Swapping the store's operands is a different kernel.
    if let InstructionData::Store { args, .. } = &mut b.dfg.insts[st] {
        args.swap(0, 1);
    }
    assert_ne!(a, b);
}

#[test]
fn memory_variables_are_laid_out_at_their_alignment() {
    let mut f = Function::default();
    f.shared_vars.push(MemVarData { size: 3, align: 1 });
    f.shared_vars.push(MemVarData { size: 8, align: 8 });
    f.shared_vars.push(MemVarData { size: 4, align: 4 });
    let offsets = f.shared_offsets();
    let offs: Vec<u32> = f.shared_vars.keys().map(|v| offsets[v]).collect();
    assert_eq!(offs, [0, 8, 16]);
    assert_eq!(f.shared_size(), 20);
    assert_eq!(f.local_size(), 0);
}

#[test]
fn layout_moves_and_removes_blocks_and_instructions() {
    let mut f = tiny_kernel(1);
    let b1 = f.layout.blocks()[1];
    let extra = f.dfg.make_block();
    f.layout.insert_block_after(extra, f.layout.blocks()[0]);
    assert_eq!(f.layout.block_position(extra), Some(1));
    assert_eq!(f.layout.block_position(b1), Some(2));
    f.layout.remove_block(extra);
    assert!(!f.layout.is_block_inserted(extra));
    let st = f.layout.block_insts(b1)[0];
    f.layout.remove_inst(st);
    assert_eq!(f.layout.inst_block(st), None);
    assert_eq!(f.layout.block_insts(b1).len(), 1);
    f.layout.insert_inst(st, b1, 0);
    assert_eq!(f.layout.block_insts(b1)[0], st);
}

/// Inserting several instructions at one position, and removing several, in one call each
/// leaves the layout as one call per instruction does.
#[test]
fn inserting_and_removing_instructions_together_matches_one_at_a_time() {
    let base = tiny_kernel(1);
    let b1 = base.layout.blocks()[1];
    let original = base.layout.block_insts(b1).to_vec();
    for at in 0..=original.len() {
        let mut together = base.clone();
        let mut one_by_one = base.clone();
        let made: Vec<_> = (0..3)
            .map(|_| {
                let data = InstructionData::zero(Type::I32);
                one_by_one.dfg.make_inst(data.clone(), Some(Type::I32));
                together.dfg.make_inst(data, Some(Type::I32))
            })
            .collect();
        together.layout.insert_insts(b1, at, &made);
        for (k, &inst) in made.iter().enumerate() {
            one_by_one.layout.insert_inst(inst, b1, at + k);
        }
        assert_eq!(
            together.layout.block_insts(b1),
            one_by_one.layout.block_insts(b1)
        );
        assert!(made
            .iter()
            .all(|&i| together.layout.inst_block(i) == Some(b1)));
        // Remove the first new one, the original first instruction and the last new one.
        let gone = [made[0], original[0], made[2]];
        together.layout.remove_insts(&gone);
        for inst in gone {
            one_by_one.layout.remove_inst(inst);
        }
        assert_eq!(
            together.layout.block_insts(b1),
            one_by_one.layout.block_insts(b1)
        );
        assert!(gone
            .iter()
            .all(|&i| together.layout.inst_block(i).is_none()));
        assert_eq!(together.layout.block_insts(b1).len(), original.len());
    }
}

/// Moving many blocks after their anchors in one pass gives the order that inserting them
/// one at a time gives: the last moved after an anchor first, chains of moved blocks
/// kept, blocks that were not moved in their order.
#[test]
fn moving_blocks_after_anchors_in_one_pass_matches_inserting_them_one_at_a_time() {
    let base = tiny_kernel(1);
    let mut one_pass = base.clone();
    let mut one_by_one = base.clone();
    let anchors: Vec<_> = base.layout.blocks().to_vec();
    let made: Vec<_> = (0..5).map(|_| one_pass.dfg.make_block()).collect();
    for _ in 0..5 {
        one_by_one.dfg.make_block();
    }
    // Two after the entry, one after the last block, one after a moved block, one more
    // after the entry.
    let moves = [
        (made[0], anchors[0]),
        (made[1], anchors[0]),
        (made[2], anchors[anchors.len() - 1]),
        (made[3], made[1]),
        (made[4], anchors[0]),
    ];
    for &(b, after) in &moves {
        one_pass.layout.append_block(b);
        one_by_one.layout.insert_block_after(b, after);
    }
    one_pass.layout.move_blocks_after(&moves);
    assert_eq!(one_pass.layout.blocks(), one_by_one.layout.blocks());
    assert_eq!(
        one_pass.layout.blocks()[..5],
        [anchors[0], made[4], made[1], made[3], made[0]]
    );
}
