//! Tests of register allocation: hand-built lowered functions, allocated with regalloc2's
//! checker on, inspected for the allocated-MIR contract, and run before and after
//! allocation by a small executor that must see the same stores.

use super::*;
use crate::mir::*;
use std::collections::HashMap;
use warplift_ir::{AddrSpace, IntCC, SourceLoc};

fn inst(kind: MInstKind) -> MInst {
    MInst::new(kind, SourceLoc::default())
}

fn param(f: &mut MirFunction, index: u32, class: RegClass) -> (Reg, MInst) {
    let dst = f.new_vreg(class);
    let ty = match class {
        RegClass::B32 => MType::I32,
        RegClass::B64 => MType::I64,
        RegClass::Pred => MType::Pred,
    };
    (dst, inst(MInstKind::LdParam { ty, dst, index }))
}

fn bin(op: BinOp, dst: Reg, a: Reg, b: impl Into<Operand>) -> MInst {
    let ty = if dst.class() == RegClass::B64 {
        MType::I64
    } else {
        MType::I32
    };
    inst(MInstKind::Bin {
        op,
        ty,
        dst,
        a,
        b: b.into(),
    })
}

fn imm(dst: Reg, value: u64) -> MInst {
    inst(MInstKind::Mov {
        ty: MType::I32,
        dst,
        src: Operand::Imm(value),
    })
}

fn setp(cc: IntCC, dst: Reg, a: Reg, b: impl Into<Operand>) -> MInst {
    inst(MInstKind::Setp {
        cond: Cond::Int(cc),
        ty: MType::I32,
        dst,
        a,
        b: b.into(),
    })
}

/// Stores `src` at global address `offset`: the executor records it.
fn store(src: Reg, offset: i32) -> MInst {
    inst(MInstKind::St {
        space: AddrSpace::Global,
        ty: MType::I32,
        src: src.into(),
        addr: Address { base: None, offset },
    })
}

fn jump(block: MBlock, args: Vec<Reg>) -> MInst {
    inst(MInstKind::Jump {
        dest: BlockTarget { block, args },
    })
}

fn branch(pred: Reg, taken: BlockTarget, not_taken: BlockTarget) -> MInst {
    inst(MInstKind::Branch {
        pred,
        negated: false,
        taken,
        not_taken,
        divergent: true,
    })
}

fn target(block: MBlock, args: Vec<Reg>) -> BlockTarget {
    BlockTarget { block, args }
}

fn ret() -> MInst {
    inst(MInstKind::Ret)
}

/// Adds a placed block.
fn block(f: &mut MirFunction, params: Vec<Reg>, insts: Vec<MInst>) -> MBlock {
    let b = f.new_block(Some(warplift_ir::Block::from_u32(f.order.len() as u32)));
    f.blocks[b].params = params;
    f.blocks[b].insts = insts;
    f.order.push(b);
    b
}

/// Runs `f` with kernel parameters `params`; returns the stores `(offset, value)` in order.
/// Handles what these tests build: integer `Bin`, `Mov`, `Setp`, `Selp`, `LdParam`,
/// global stores at absolute addresses, spills, reloads, jumps and branches with arguments.
fn execute(f: &MirFunction, params: &[u64]) -> Vec<(i32, u64)> {
    let mut regs: HashMap<Reg, u64> = HashMap::new();
    let mut slots: HashMap<u32, u64> = HashMap::new();
    let mut stores = Vec::new();
    let mut block = f.entry().unwrap();
    let read = |regs: &HashMap<Reg, u64>, r: Reg| {
        *regs
            .get(&r)
            .unwrap_or_else(|| panic!("{r} read before written"))
    };
    let operand = |regs: &HashMap<Reg, u64>, o: Operand| match o {
        Operand::Reg(r) => read(regs, r),
        Operand::Imm(v) => v,
    };
    let mask = |ty: MType, v: u64| match ty {
        MType::I64 => v,
        MType::Pred => v & 1,
        _ => v & 0xffff_ffff,
    };
    fn copy<K: std::hash::Hash + Eq>(map: &mut HashMap<K, u64>, key: K, value: Option<u64>) {
        match value {
            Some(v) => map.insert(key, v),
            None => map.remove(&key),
        };
    }
    // Executions of blocks that implement IR blocks: the same count before and after
    // allocation (split-edge blocks have no origin), so a function that loops forever
    // stores the same prefix in both.
    let mut budget = 200;
    loop {
        if f.blocks[block].origin.is_some() {
            if budget == 0 {
                return stores;
            }
            budget -= 1;
        }
        let mut next = None;
        for i in &f.blocks[block].insts {
            if let Some(g) = i.guard {
                if (read(&regs, g.pred) != 0) == g.negated {
                    continue;
                }
            }
            let jump_to = |regs: &mut HashMap<Reg, u64>, t: &BlockTarget| {
                let values: Vec<u64> = t.args.iter().map(|&a| read(regs, a)).collect();
                for (&p, v) in f.blocks[t.block].params.iter().zip(values) {
                    regs.insert(p, v);
                }
                t.block
            };
            match &i.kind {
                &MInstKind::Bin { op, ty, dst, a, b } => {
                    let (a, b) = (read(&regs, a), operand(&regs, b));
                    let v = match op {
                        BinOp::Add => a.wrapping_add(b),
                        BinOp::Sub => a.wrapping_sub(b),
                        BinOp::Mul => a.wrapping_mul(b),
                        BinOp::Xor => a ^ b,
                        _ => unimplemented!("{op:?}"),
                    };
                    regs.insert(dst, mask(ty, v));
                }
                // Copies, spills and reloads carry "undefined" along: with no scratch
                // register, regalloc2's move resolver may save and restore a register that
                // holds nothing. Only computations and stores must read defined values.
                &MInstKind::Mov {
                    ty,
                    dst,
                    src: Operand::Reg(src),
                } => {
                    let v = regs.get(&src).map(|&v| mask(ty, v));
                    copy(&mut regs, dst, v);
                }
                &MInstKind::Mov { ty, dst, src } => {
                    let v = operand(&regs, src);
                    regs.insert(dst, mask(ty, v));
                }
                &MInstKind::Setp {
                    cond, dst, a, b, ..
                } => {
                    let (a, b) = (read(&regs, a) as i32, operand(&regs, b) as i32);
                    let v = match cond {
                        Cond::Int(IntCC::SignedLessThan) => a < b,
                        Cond::Int(IntCC::Equal) => a == b,
                        Cond::Int(IntCC::NotEqual) => a != b,
                        _ => unimplemented!("{cond}"),
                    };
                    regs.insert(dst, v as u64);
                }
                &MInstKind::Selp {
                    dst, a, b, pred, ..
                } => {
                    let v = if read(&regs, pred) != 0 {
                        operand(&regs, a)
                    } else {
                        operand(&regs, b)
                    };
                    regs.insert(dst, v);
                }
                &MInstKind::LdParam { ty, dst, index } => {
                    regs.insert(dst, mask(ty, params[index as usize]));
                }
                &MInstKind::St { src, addr, .. } => {
                    stores.push((addr.offset, operand(&regs, src)));
                }
                &MInstKind::Spill { src, slot } => {
                    let v = regs.get(&src).copied();
                    copy(&mut slots, slot.0, v);
                }
                &MInstKind::Reload { dst, slot } => {
                    let v = slots.get(&slot.0).copied();
                    copy(&mut regs, dst, v);
                }
                MInstKind::Jump { dest } => next = Some(jump_to(&mut regs, dest)),
                MInstKind::Branch {
                    pred,
                    negated,
                    taken,
                    not_taken,
                    ..
                } => {
                    let t = if (read(&regs, *pred) != 0) != *negated {
                        taken
                    } else {
                        not_taken
                    };
                    next = Some(jump_to(&mut regs, t));
                }
                MInstKind::Ret => return stores,
                other => unimplemented!("{other:?}"),
            }
        }
        block = next.expect("block without terminator");
    }
}

/// Checks the allocated-MIR contract: physical registers only, within the counts the
/// statistics give; no block parameters or branch arguments; no reserved register used;
/// register copies typed by class.
fn assert_allocated(a: &AllocatedFunction) {
    let f = &a.func;
    for &b in &f.order {
        let data = &f.blocks[b];
        assert!(data.params.is_empty(), "{b} keeps parameters\n{f}");
        for i in &data.insts {
            let mut i = i.clone();
            i.kind
                .for_each_target(|t| assert!(t.args.is_empty(), "branch arguments left\n{f}"));
            if let MInstKind::Mov {
                ty,
                dst,
                src: Operand::Reg(_),
            } = i.kind
            {
                assert_eq!(ty.class(), dst.class());
            }
            i.visit_regs(|r, _| {
                assert!(!r.is_virtual(), "virtual register {r} left\n{f}");
                assert!(!a.reserved.contains(*r), "reserved register {r} used\n{f}");
                assert!(r.index() < a.stats.regs_used[r.class().index()], "{r}\n{f}");
            });
        }
    }
    for class in RegClass::ALL {
        let used = a.stats.regs_used[class.index()];
        let names: Vec<u32> = a.reserved.of(class).iter().map(|r| r.index()).collect();
        let expected: Vec<u32> = (used..used + a.stats.reserved[class.index()]).collect();
        assert_eq!(names, expected);
    }
    let count = |pred: fn(&MInstKind) -> bool| {
        f.order
            .iter()
            .flat_map(|&b| &f.blocks[b].insts)
            .filter(|i| pred(&i.kind))
            .count() as u32
    };
    assert_eq!(
        a.stats.spills,
        count(|k| matches!(k, MInstKind::Spill { .. }))
    );
    assert_eq!(
        a.stats.reloads,
        count(|k| matches!(k, MInstKind::Reload { .. }))
    );
    assert_eq!(a.stats.spill_slots, f.spill_slots);
}

/// Allocates with each algorithm, checker on; checks the contract and that the allocated
/// function stores what the lowered one does for each parameter set.
fn allocate_checked(
    f: &MirFunction,
    regs: RegisterFile,
    request: ReservationRequest,
    inputs: &[Vec<u64>],
) -> AllocatedFunction {
    let mut result = None;
    for algorithm in [Algorithm::Fast, Algorithm::Backtracking] {
        let options = AllocOptions {
            algorithm,
            check: true,
        };
        let a = allocate_with(f, &regs, &request, &options)
            .unwrap_or_else(|e| panic!("{algorithm:?}: {e}\n{f}"));
        assert_allocated(&a);
        for input in inputs {
            assert_eq!(
                execute(&a.func, input),
                execute(f, input),
                "{algorithm:?}, input {input:?}\n{}",
                a.func
            );
        }
        result = Some(a);
    }
    result.unwrap()
}

/// `sum = 0; for i in 0..n { sum += i * k }; store sum` — a loop with block parameters.
fn sum_loop() -> MirFunction {
    let mut f = MirFunction::new("sum_loop", Vec::new());
    let (n, ld_n) = param(&mut f, 0, RegClass::B32);
    let (k, ld_k) = param(&mut f, 1, RegClass::B32);
    let [i0, s0, i, s, t, s2, i2, r] = [(); 8].map(|_| f.new_vreg(RegClass::B32));
    let p = f.new_vreg(RegClass::Pred);
    let header = f.new_block(None);
    let body = f.new_block(None);
    let exit = f.new_block(None);
    let entry = block(&mut f, vec![], vec![ld_n, ld_k, imm(i0, 0), imm(s0, 0)]);
    f.blocks[entry].insts.push(jump(header, vec![i0, s0]));
    f.order.extend([header, body, exit]);
    f.blocks[header].params = vec![i, s];
    f.blocks[header].insts = vec![
        setp(IntCC::SignedLessThan, p, i, n),
        branch(p, target(body, vec![]), target(exit, vec![s])),
    ];
    f.blocks[body].insts = vec![
        bin(BinOp::Mul, t, i, k),
        bin(BinOp::Add, s2, s, t),
        bin(BinOp::Add, i2, i, Operand::Imm(1)),
        jump(header, vec![i2, s2]),
    ];
    f.blocks[exit].params = vec![r];
    f.blocks[exit].insts = vec![store(r, 0), ret()];
    f
}

#[test]
fn loop_with_block_parameters() {
    let f = sum_loop();
    let inputs: Vec<Vec<u64>> = (0..5).map(|n| vec![n, 3]).collect();
    assert_eq!(execute(&f, &[4, 3]), vec![(0, 18)]);
    let a = allocate_checked(&f, RegisterFile::MAX, ReservationRequest::none(), &inputs);
    assert_eq!(a.stats.split_edges, 0);
    assert_eq!(a.func.order.len(), 4);
    assert_eq!(a.stats.spills, 0);
    assert_eq!(a.stats.regs_used[RegClass::Pred.index()], 1);
}

#[test]
fn loop_under_pressure_spills() {
    // Three b32 registers for n, k, i, s and the temporaries.
    let f = sum_loop();
    let inputs: Vec<Vec<u64>> = (0..5).map(|n| vec![n, 7]).collect();
    let a = allocate_checked(
        &f,
        RegisterFile::new(3, 1, 1),
        ReservationRequest::none(),
        &inputs,
    );
    assert!(a.stats.spills > 0 && a.stats.reloads > 0, "{}", a.func);
}

/// A diamond whose every edge into a merge is critical, and a branch with both edges to
/// one block.
#[test]
fn critical_edges_are_split() {
    let mut f = MirFunction::new("diamond", Vec::new());
    let (x, ld_x) = param(&mut f, 0, RegClass::B32);
    let [p, q, e] = [(); 3].map(|_| f.new_vreg(RegClass::Pred));
    let [y, z, w, u] = [(); 4].map(|_| f.new_vreg(RegClass::B32));
    let [b1, b2, b3, b4] = [1, 2, 3, 4].map(|n| f.new_block(Some(warplift_ir::Block::from_u32(n))));
    let entry = block(
        &mut f,
        vec![],
        vec![
            ld_x,
            setp(IntCC::SignedLessThan, p, x, Operand::Imm(10)),
            branch(p, target(b1, vec![]), target(b2, vec![x])),
        ],
    );
    f.order.extend([b1, b2, b3, b4]);
    // b1: y = x + 1; branch q, b2(y), b3
    f.blocks[b1].insts = vec![
        bin(BinOp::Add, y, x, Operand::Imm(1)),
        setp(IntCC::Equal, q, x, Operand::Imm(3)),
        branch(q, target(b2, vec![y]), target(b3, vec![])),
    ];
    // b2(z): w = z * 2; brif e, b3, b3
    f.blocks[b2].params = vec![z];
    f.blocks[b2].insts = vec![
        bin(BinOp::Mul, w, z, Operand::Imm(2)),
        store(w, 4),
        setp(IntCC::NotEqual, e, w, Operand::Imm(6)),
        branch(e, target(b3, vec![]), target(b3, vec![])),
    ];
    f.blocks[b3].insts = vec![bin(BinOp::Add, u, x, Operand::Imm(100)), jump(b4, vec![])];
    f.blocks[b4].insts = vec![store(u, 8), ret()];
    let inputs: Vec<Vec<u64>> = [0, 3, 5, 12].iter().map(|&x| vec![x]).collect();
    let a = allocate_checked(&f, RegisterFile::MAX, ReservationRequest::none(), &inputs);
    // entry->b2, b1->b2, b1->b3, b2->b3 twice; b3->b4 is not critical.
    assert_eq!(a.stats.split_edges, 5);
    let order = &a.func.order;
    assert_eq!(order.len(), 10);
    // Each split block follows its predecessor, in branch order: entry, [entry->b2], b1,
    // [b1->b2], [b1->b3], b2, [b2->b3], [b2->b3], b3, b4.
    let origins: Vec<bool> = order
        .iter()
        .map(|&b| a.func.blocks[b].origin.is_some())
        .collect();
    assert_eq!(
        origins,
        [true, false, true, false, false, true, false, false, true, true]
    );
    for (i, &b) in order.iter().enumerate() {
        if !origins[i] {
            let insts = &a.func.blocks[b].insts;
            assert!(matches!(insts.last().unwrap().kind, MInstKind::Jump { .. }));
            // The block's predecessor is the nearest original block before it.
            let pred = order[..i]
                .iter()
                .rev()
                .find(|&&p| a.func.blocks[p].origin.is_some());
            assert!(a.func.successors(*pred.unwrap()).contains(&b));
        }
    }
    assert_eq!(order[0], entry);
}

/// More values live at once than two b32 registers hold.
#[test]
fn tiny_register_file_spills() {
    let mut f = MirFunction::new("pressure", Vec::new());
    let mut insts = Vec::new();
    let mut values = Vec::new();
    for index in 0..6 {
        let (v, ld) = param(&mut f, index, RegClass::B32);
        insts.push(ld);
        values.push(v);
    }
    // acc = v0 ^ v1 ^ ... ^ v5, then store every v + acc: all stay live across the chain.
    let mut acc = values[0];
    for &v in &values[1..] {
        let next = f.new_vreg(RegClass::B32);
        insts.push(bin(BinOp::Xor, next, acc, v));
        acc = next;
    }
    for (k, &v) in values.iter().enumerate() {
        let t = f.new_vreg(RegClass::B32);
        insts.push(bin(BinOp::Add, t, v, acc));
        insts.push(store(t, 4 * k as i32));
    }
    insts.push(ret());
    block(&mut f, vec![], insts);
    let inputs = vec![vec![1, 2, 3, 4, 5, 6], vec![9, 0, 77, 1 << 20, 5, 3]];
    let a = allocate_checked(
        &f,
        RegisterFile::new(2, 1, 1),
        ReservationRequest::none(),
        &inputs,
    );
    assert!(a.stats.spills > 0, "{}", a.func);
    assert!(a.stats.reloads > 0);
    assert!(a.stats.spill_slots > 0);
    assert_eq!(a.stats.regs_used[RegClass::B32.index()], 2);
    assert_eq!(
        a.func.local_frame_size(),
        a.stats.spill_slots * MirFunction::SPILL_SLOT_BYTES
    );
}

/// Three predicates live at once in a one-register predicate file.
#[test]
fn predicate_pressure_spills_predicates() {
    let mut f = MirFunction::new("preds", Vec::new());
    let (x, ld) = param(&mut f, 0, RegClass::B32);
    let mut insts = vec![ld];
    let preds: Vec<Reg> = (0..3).map(|_| f.new_vreg(RegClass::Pred)).collect();
    for (k, &p) in preds.iter().enumerate() {
        insts.push(setp(
            IntCC::SignedLessThan,
            p,
            x,
            Operand::Imm(k as u64 * 2),
        ));
    }
    for (k, &p) in preds.iter().enumerate() {
        let v = f.new_vreg(RegClass::B32);
        insts.push(inst(MInstKind::Selp {
            ty: MType::I32,
            dst: v,
            a: Operand::Imm(10 + k as u64),
            b: Operand::Imm(20 + k as u64),
            pred: p,
        }));
        insts.push(store(v, 4 * k as i32));
    }
    insts.push(ret());
    block(&mut f, vec![], insts);
    let inputs: Vec<Vec<u64>> = (0..6).map(|x| vec![x]).collect();
    let a = allocate_checked(
        &f,
        RegisterFile::new(8, 1, 1),
        ReservationRequest::none(),
        &inputs,
    );
    let pred_spills = a
        .func
        .order
        .iter()
        .flat_map(|&b| &a.func.blocks[b].insts)
        .filter(|i| matches!(i.kind, MInstKind::Spill { src, .. } if src.class() == RegClass::Pred))
        .count();
    assert!(pred_spills > 0, "{}", a.func);
}

#[test]
fn reserved_registers_stay_untouched() {
    let f = sum_loop();
    let inputs: Vec<Vec<u64>> = (0..4).map(|n| vec![n, 2]).collect();
    let request = ReservationRequest::none()
        .with(RegClass::B32, 3)
        .with(RegClass::Pred, 1);
    // Six b32 registers, three reserved: the loop must spill rather than touch them.
    let a = allocate_checked(&f, RegisterFile::new(6, 2, 2), request, &inputs);
    assert_eq!(a.reserved.of(RegClass::B32).len(), 3);
    assert_eq!(a.reserved.of(RegClass::Pred).len(), 1);
    assert!(a.reserved.of(RegClass::B64).is_empty());
    assert!(a.stats.regs_total(RegClass::B32) <= 6);
    assert_eq!(a.stats.regs_total(RegClass::Pred), 2);
    // assert_allocated has checked that no reserved register appears.
}

#[test]
fn reservation_and_register_file_errors() {
    let f = sum_loop();
    let file = RegisterFile::new(4, 4, 2);
    let all_preds = ReservationRequest::none().with(RegClass::Pred, 2);
    assert!(matches!(
        allocate(&f, &file, &all_preds),
        Err(RegallocError::Reservation {
            class: RegClass::Pred,
            requested: 2,
            available: 2
        })
    ));
    for bad in [RegisterFile::new(0, 4, 4), RegisterFile::new(4, 65, 4)] {
        let e = allocate(&f, &bad, &ReservationRequest::none()).unwrap_err();
        assert!(matches!(e, RegallocError::RegisterFile { .. }), "{e}");
    }
    let r = RegisterFile::new(64, 64, 64)
        .reserve(&ReservationRequest::none().with(RegClass::B64, 63))
        .unwrap();
    assert_eq!(r.allocatable(RegClass::B64), 1);
    assert_eq!(r.reserved(RegClass::B64), 63);
}

#[test]
fn one_instruction_needing_too_many_registers() {
    let mut f = MirFunction::new("fma", Vec::new());
    let mut insts = Vec::new();
    let mut v = Vec::new();
    for index in 0..3 {
        let (r, ld) = param(&mut f, index, RegClass::B32);
        insts.push(ld);
        v.push(r);
    }
    let d = f.new_vreg(RegClass::B32);
    insts.push(inst(MInstKind::Fma {
        ty: MType::F32,
        dst: d,
        a: v[0],
        b: v[1],
        c: v[2],
    }));
    insts.push(store(d, 0));
    insts.push(ret());
    block(&mut f, vec![], insts);
    let e = allocate(&f, &RegisterFile::new(2, 1, 1), &ReservationRequest::none()).unwrap_err();
    assert!(
        matches!(
            e,
            RegallocError::TooFewRegisters {
                class: RegClass::B32,
                needed: 3,
                available: 2,
                ..
            }
        ),
        "{e}"
    );
    assert!(allocate(&f, &RegisterFile::new(3, 1, 1), &ReservationRequest::none()).is_ok());
}

#[test]
fn malformed_inputs_are_errors() {
    let good = sum_loop();
    let check = |f: &MirFunction, what: &str| {
        let e = allocate(f, &RegisterFile::MAX, &ReservationRequest::none()).unwrap_err();
        let message = e.to_string();
        assert!(
            matches!(e, RegallocError::Malformed { .. }) && message.contains(what),
            "{message}"
        );
    };
    let header = good.order[1];
    let exit = good.order[3];

    let mut f = good.clone();
    f.blocks[exit].insts.pop();
    check(&f, "does not end with a terminator");

    let mut f = good.clone();
    f.blocks[exit].insts.insert(0, ret());
    check(&f, "terminator before its end");

    let mut f = good.clone();
    f.blocks[exit].insts[0] = store(Reg::phys(0, RegClass::B32), 0);
    check(&f, "physical register");

    let mut f = good.clone();
    f.blocks[exit].insts[0] = store(Reg::virt(999, RegClass::B32), 0);
    check(&f, "never created");

    let mut f = good.clone();
    let wrong_class = Reg::virt(0, RegClass::B64);
    f.blocks[exit].insts[0] = store(wrong_class, 0);
    check(&f, "is a b32 register");

    let mut f = good.clone();
    f.blocks[header].params.pop();
    check(&f, "which has 1 parameter");

    let mut f = good.clone();
    let p = f.new_vreg(RegClass::Pred);
    let x = f.new_vreg(RegClass::B32);
    let mut guarded = imm(x, 1);
    guarded.guard = Some(Guard {
        pred: p,
        negated: false,
    });
    f.blocks[exit].insts.insert(0, guarded);
    check(&f, "guarded instruction");

    let mut f = good.clone();
    f.order.remove(2);
    check(&f, "not placed");

    let mut f = good.clone();
    f.order.push(header);
    check(&f, "placed twice");

    let mut f = good.clone();
    f.blocks[good.order[0]]
        .params
        .push(Reg::virt(0, RegClass::B32));
    check(&f, "entry block");

    let mut f = good.clone();
    let i = f.blocks[header].params[0];
    f.blocks[exit].insts.insert(0, imm(i, 5));
    check(&f, "defined twice");

    check(&MirFunction::new("empty", Vec::new()), "no blocks");
}

#[test]
fn use_without_definition_is_an_allocator_error() {
    let mut f = MirFunction::new("undef", Vec::new());
    let x = f.new_vreg(RegClass::B32);
    block(&mut f, vec![], vec![store(x, 0), ret()]);
    let e = allocate(&f, &RegisterFile::MAX, &ReservationRequest::none()).unwrap_err();
    assert!(matches!(e, RegallocError::Allocator { .. }), "{e}");
}

#[test]
fn unreachable_blocks_are_dropped_and_emptied() {
    let mut f = sum_loop();
    let x = f.new_vreg(RegClass::B32);
    let dead = block(&mut f, vec![x], vec![store(x, 0), ret()]);
    let a = allocate_checked(
        &f,
        RegisterFile::MAX,
        ReservationRequest::none(),
        &[vec![3, 1]],
    );
    assert!(!a.func.order.contains(&dead));
    assert!(a.func.blocks[dead].insts.is_empty() && a.func.blocks[dead].params.is_empty());
}

#[test]
fn stats_of_a_small_function() {
    let mut f = MirFunction::new("small", Vec::new());
    let (a, ld_a) = param(&mut f, 0, RegClass::B32);
    let (b, ld_b) = param(&mut f, 1, RegClass::B32);
    let (w, ld_w) = param(&mut f, 2, RegClass::B64);
    let c = f.new_vreg(RegClass::B32);
    let d = f.new_vreg(RegClass::B64);
    block(
        &mut f,
        vec![],
        vec![
            ld_a,
            ld_b,
            ld_w,
            bin(BinOp::Add, c, a, b),
            bin(BinOp::Add, d, w, Operand::Imm(1)),
            store(c, 0),
            inst(MInstKind::St {
                space: AddrSpace::Global,
                ty: MType::I64,
                src: d.into(),
                addr: Address {
                    base: None,
                    offset: 8,
                },
            }),
            ret(),
        ],
    );
    let inputs = vec![vec![1, 2, 40]];
    let r = allocate_checked(
        &f,
        RegisterFile::MAX,
        ReservationRequest::none().with(RegClass::B64, 2),
        &inputs,
    );
    let stats = r.stats;
    // regalloc2 need not give `c` the register of `a` or `b`: it does not minimise the
    // register count, it only never exceeds the file.
    assert!((2..=3).contains(&stats.regs_used[0]), "{}", r.func);
    assert!((1..=2).contains(&stats.regs_used[1]), "{}", r.func);
    assert_eq!(stats.regs_used[2], 0);
    assert_eq!(stats.reserved, [0, 2, 0]);
    let b64 = stats.regs_used[1];
    assert_eq!(stats.regs_total(RegClass::B64), b64 + 2);
    assert_eq!(
        (
            stats.spill_slots,
            stats.spills,
            stats.reloads,
            stats.moves,
            stats.split_edges
        ),
        (0, 0, 0, 0, 0)
    );
    assert_eq!(
        r.reserved.of(RegClass::B64),
        [
            Reg::phys(b64, RegClass::B64),
            Reg::phys(b64 + 1, RegClass::B64)
        ]
    );
    assert_eq!(r.func.num_insts(), 8);
    let shown = RegallocStats {
        regs_used: [5, 1, 2],
        reserved: [2, 0, 1],
        spill_slots: 3,
        spills: 4,
        reloads: 6,
        moves: 2,
        split_edges: 1,
    }
    .to_string();
    assert_eq!(
        shown,
        "b32 5+2, b64 1, pred 2+1 registers; 3 spill slots, 4 spills, 6 reloads, 2 moves, 1 split edge"
    );
}

/// A small deterministic generator (xorshift64*), so the random tests need no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// A random function: kernel parameters and predicates defined in the entry block (so
/// usable everywhere), blocks with parameters fed by branch arguments, arithmetic,
/// comparisons, selects and stores, jumps and branches to any block but the entry (loops,
/// self-loops, critical edges and double edges included; the executor bounds the run).
fn random_function(rng: &mut Rng) -> MirFunction {
    let mut f = MirFunction::new("random", Vec::new());
    let num_blocks = 2 + rng.below(7);
    let blocks: Vec<MBlock> = (0..num_blocks)
        .map(|n| f.new_block(Some(warplift_ir::Block::from_u32(n as u32))))
        .collect();
    f.order = blocks.clone();
    for &b in &blocks[1..] {
        f.blocks[b].params = (0..rng.below(4))
            .map(|_| f.new_vreg(RegClass::B32))
            .collect();
    }
    let mut global = Vec::new();
    let mut global_preds = Vec::new();
    let mut entry = Vec::new();
    for index in 0..4 {
        let (v, ld) = param(&mut f, index, RegClass::B32);
        entry.push(ld);
        global.push(v);
    }
    for _ in 0..rng.below(3) {
        let p = f.new_vreg(RegClass::Pred);
        entry.push(setp(
            IntCC::SignedLessThan,
            p,
            rng.pick(&global),
            Operand::Imm(50),
        ));
        global_preds.push(p);
    }
    f.blocks[blocks[0]].insts = entry;
    let mut offset = 0;
    for i in 0..num_blocks {
        let b = blocks[i];
        let mut vals = global.clone();
        vals.extend(f.blocks[b].params.iter().copied());
        let mut preds = global_preds.clone();
        let mut insts = std::mem::take(&mut f.blocks[b].insts);
        for _ in 0..1 + rng.below(8) {
            match rng.below(6) {
                0..=2 => {
                    let op = rng.pick(&[BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Xor]);
                    let dst = f.new_vreg(RegClass::B32);
                    let b = if rng.below(3) == 0 {
                        Operand::Imm(rng.below(100) as u64)
                    } else {
                        rng.pick(&vals).into()
                    };
                    insts.push(bin(op, dst, rng.pick(&vals), b));
                    vals.push(dst);
                }
                3 => {
                    let p = f.new_vreg(RegClass::Pred);
                    let cc = rng.pick(&[IntCC::SignedLessThan, IntCC::Equal, IntCC::NotEqual]);
                    insts.push(setp(cc, p, rng.pick(&vals), rng.pick(&vals)));
                    preds.push(p);
                }
                4 if !preds.is_empty() => {
                    let dst = f.new_vreg(RegClass::B32);
                    insts.push(inst(MInstKind::Selp {
                        ty: MType::I32,
                        dst,
                        a: rng.pick(&vals).into(),
                        b: rng.pick(&vals).into(),
                        pred: rng.pick(&preds),
                    }));
                    vals.push(dst);
                }
                _ => {
                    insts.push(store(rng.pick(&vals), offset));
                    offset += 4;
                }
            }
        }
        let edge = |rng: &mut Rng, f: &MirFunction| {
            // Mostly forward, so that many runs reach the return.
            let to = if rng.below(4) == 0 {
                blocks[1 + rng.below(i.max(1))]
            } else {
                blocks[i + 1 + rng.below(num_blocks - i - 1)]
            };
            let args = f.blocks[to]
                .params
                .iter()
                .map(|_| rng.pick(&vals))
                .collect();
            target(to, args)
        };
        if i + 1 == num_blocks {
            insts.push(store(rng.pick(&vals), offset));
            offset += 4;
            insts.push(ret());
        } else if rng.below(2) == 0 {
            let t = edge(rng, &f);
            insts.push(inst(MInstKind::Jump { dest: t }));
        } else {
            let p = if preds.is_empty() || rng.below(3) == 0 {
                let p = f.new_vreg(RegClass::Pred);
                insts.push(setp(
                    IntCC::SignedLessThan,
                    p,
                    rng.pick(&vals),
                    rng.pick(&vals),
                ));
                p
            } else {
                rng.pick(&preds)
            };
            let (t, n) = (edge(rng, &f), edge(rng, &f));
            insts.push(branch(p, t, n));
        }
        f.blocks[b].insts = insts;
    }
    f
}

#[test]
fn random_functions_allocate_correctly() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut spilled = 0;
    for _ in 0..400 {
        let f = random_function(&mut rng);
        let regs = RegisterFile::new(3 + rng.below(4) as u32, 1, 1 + rng.below(3) as u32);
        let request = ReservationRequest::none().with(RegClass::B32, rng.below(2) as u32);
        let inputs: Vec<Vec<u64>> = (0..4)
            .map(|_| (0..4).map(|_| rng.below(100) as u64).collect())
            .collect();
        let a = allocate_checked(&f, regs, request, &inputs);
        spilled += (a.stats.spills > 0) as u32;
    }
    // The register files are small enough that many functions spill.
    assert!(spilled > 30, "{spilled}");
}
