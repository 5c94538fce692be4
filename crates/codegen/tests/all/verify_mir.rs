//! The MIR verifier: lowered MIR passes; each broken invariant is reported.

use warplift_codegen::lower::lower;
use warplift_codegen::mir::verify::{verify_mir, verify_mir_with_limits};
use warplift_codegen::mir::*;
use warplift_ir::parser::parse_function;
use warplift_ir::SourceLoc;

const LOOP: &str = "
kernel %k(p: i64, n: i32) {
block0(v0: i64, v1: i32):
    v2 = iconst.i32 0
    jump block1(v2)
block1(v3: i32):
    v4 = icmp slt v3, v1
    brif v4, block2, block3
block2:
    v5 = iconst.i32 1
    v6 = iadd v3, v5
    jump block1(v6)
block3:
    store global v3, v0
    return
}";

fn lowered() -> MirFunction {
    let mir = lower(&parse_function(LOOP).unwrap()).unwrap();
    verify_mir(&mir).unwrap();
    mir
}

fn block(mir: &MirFunction, i: usize) -> MBlock {
    mir.order[i]
}

/// Asserts that verification fails with a message containing `needle`.
fn fails(mir: &MirFunction, needle: &str) {
    let err = verify_mir(mir).expect_err("verification should fail");
    let text = err.to_string();
    assert!(
        text.contains(needle),
        "expected {needle:?} in:\n{text}\n{mir}"
    );
}

#[test]
fn missing_terminator() {
    let mut mir = lowered();
    let b = block(&mir, 3);
    mir.blocks[b].insts.pop();
    fails(&mir, "does not end with a terminator");
}

#[test]
fn terminator_in_the_middle() {
    let mut mir = lowered();
    let b = block(&mir, 3);
    mir.blocks[b]
        .insts
        .insert(0, MInst::new(MInstKind::Ret, SourceLoc::default()));
    fails(&mir, "terminator before the end");
}

#[test]
fn double_definition() {
    let mut mir = lowered();
    let b = block(&mir, 2);
    let first = mir.blocks[b].insts[0].clone();
    mir.blocks[b].insts.insert(1, first);
    fails(&mir, "defined twice");
}

#[test]
fn use_not_dominated() {
    let mut mir = lowered();
    // Read block2's register in block3, which block2 does not dominate.
    let (b2, b3) = (block(&mir, 2), block(&mir, 3));
    let r = mir.blocks[b2].insts[0].kind.def().unwrap();
    let dst = mir.new_vreg(RegClass::B32);
    mir.blocks[b3].insts.insert(
        0,
        MInst::new(
            MInstKind::Mov {
                ty: MType::I32,
                dst,
                src: Operand::Reg(r),
            },
            SourceLoc::default(),
        ),
    );
    fails(&mir, "does not dominate");
}

#[test]
fn undefined_register() {
    let mut mir = lowered();
    let b3 = block(&mir, 3);
    let ghost = mir.new_vreg(RegClass::B32);
    if let MInstKind::St { src, .. } = &mut mir.blocks[b3].insts[0].kind {
        *src = Operand::Reg(ghost);
    } else {
        panic!("expected a store");
    }
    fails(&mir, "never defined");
}

#[test]
fn branch_arguments_must_match_parameters() {
    let mut mir = lowered();
    let b0 = block(&mir, 0);
    let last = mir.blocks[b0].insts.last_mut().unwrap();
    last.kind.for_each_target_mut(|t| t.args.clear());
    fails(&mir, "takes 1 argument, the branch passes 0");
}

#[test]
fn register_class_must_match_type() {
    let mut mir = lowered();
    let b2 = block(&mir, 2);
    let wide = mir.new_vreg(RegClass::B64);
    for inst in &mut mir.blocks[b2].insts {
        if let MInstKind::Bin { dst, .. } = &mut inst.kind {
            *dst = wide;
        }
    }
    fails(&mir, "is not a b32 register");
}

#[test]
fn float_operation_at_integer_type() {
    let mut mir = lowered();
    let b2 = block(&mir, 2);
    for inst in &mut mir.blocks[b2].insts {
        if let MInstKind::Bin { op, .. } = &mut inst.kind {
            *op = BinOp::FAdd;
        }
    }
    fails(&mir, "fadd at type i32");
}

#[test]
fn guarded_definition() {
    let mut mir = lowered();
    let (b1, b2) = (block(&mir, 1), block(&mir, 2));
    let pred = mir.blocks[b1].insts[0].kind.def().unwrap();
    mir.blocks[b2].insts[0].guard = Some(Guard {
        pred,
        negated: false,
    });
    fails(&mir, "guarded instruction defines");
}

#[test]
fn entry_without_parameters() {
    let mut mir = lowered();
    let b0 = block(&mir, 0);
    let r = mir.new_vreg(RegClass::B32);
    mir.blocks[b0].params.push(r);
    fails(&mir, "entry block has parameters");
}

#[test]
fn ld_param_only_in_entry_and_typed() {
    let mut mir = lowered();
    let (b0, b3) = (block(&mir, 0), block(&mir, 3));
    let ld = mir.blocks[b0].insts[0].clone();
    mir.blocks[b3].insts.insert(0, ld);
    fails(&mir, "ld.param outside the entry block");

    let mut mir = lowered();
    if let MInstKind::LdParam { index, .. } = &mut mir.blocks[b0].insts[0].kind {
        *index = 1;
    }
    fails(&mir, "ld.param.i64 of a i32 parameter");
}

#[test]
fn allocated_form_checks_register_files() {
    let mut mir = MirFunction::new("k", vec![]);
    let b = mir.new_block(None);
    mir.order.push(b);
    let r = Reg::phys(7, RegClass::B32);
    for kind in [
        MInstKind::Mov {
            ty: MType::I32,
            dst: r,
            src: Operand::Imm(1),
        },
        MInstKind::Ret,
    ] {
        mir.blocks[b]
            .insts
            .push(MInst::new(kind, SourceLoc::default()));
    }
    verify_mir(&mir).unwrap();
    verify_mir_with_limits(&mir, Some([8, 8, 8])).unwrap();
    let err = verify_mir_with_limits(&mir, Some([7, 8, 8])).unwrap_err();
    assert!(
        err.to_string().contains("outside the 7 b32 registers"),
        "{err}"
    );

    mir.blocks[b].insts.insert(
        0,
        MInst::new(
            MInstKind::Spill {
                src: r,
                slot: SpillSlot(0),
            },
            SourceLoc::default(),
        ),
    );
    fails(&mir, "spill slot 0 of 0 slots");
    mir.spill_slots = 1;
    verify_mir(&mir).unwrap();
}

#[test]
fn empty_function() {
    let mir = MirFunction::new("k", vec![]);
    fails(&mir, "no blocks");
}
