//! The divergence analysis seen from the targets: a branch on a uniform condition is
//! `bra.uni` in PTX and `br.uni` (no reconvergence point) in the SIMT bytecode, a branch
//! on a thread-dependent one is `bra` / `br.div`.

use warplift_codegen::isa::simt::{decode, encode, Op};
use warplift_codegen::lower::lower;
use warplift_codegen::regalloc::{allocate, RegisterFile, ReservationRequest};
use warplift_codegen::{lookup_by_name, Context, Settings};
use warplift_filetests::Walk;
use warplift_ir::parser::parse_function;

/// `for (i = 0; i < n; i++) out[i] += tid < i ? 1 : 0;` — the loop branch tests the
/// kernel parameter `n` (uniform), the inner one the thread index (divergent).
const LOOP: &str = "kernel %uniform_loop(out: i64, n: i32) {
block0(v0: i64, v1: i32):
    v2 = iconst.i32 0
    v3 = thread_id x
    jump block1(v2)
block1(v4: i32):
    v5 = icmp slt v4, v1
    brif v5, block2, block5
block2:
    v6 = icmp slt v3, v4
    brif v6, block3, block4
block3:
    v7 = atomic_rmw add global v0, v4
    jump block4
block4:
    v8 = iconst.i32 1
    v9 = iadd v4, v8
    jump block1(v9)
block5:
    return
}";

/// The predicated branch instructions of a PTX listing, e.g. `@%p1 bra.uni $L__BB0_3;`.
fn predicated_branches(ptx: &str) -> Vec<String> {
    ptx.lines()
        .map(str::trim)
        .filter(|l| l.starts_with('@') && l.contains(" bra"))
        .map(String::from)
        .collect()
}

#[test]
fn uniform_loop_branch_is_bra_uni_in_ptx() {
    let func = parse_function(LOOP).unwrap();
    let isa = lookup_by_name("ptx", Settings::default()).unwrap();
    let compiled = Context::new().compile(&func, isa.as_ref()).unwrap();
    let ptx = String::from_utf8(compiled.code).unwrap();
    let branches = predicated_branches(&ptx);
    assert_eq!(branches.len(), 2, "{ptx}");
    let uniform = branches.iter().filter(|b| b.contains("bra.uni")).count();
    assert_eq!(uniform, 1, "one uniform and one divergent branch:\n{ptx}");
    if let Some(ptxas) = warplift_codegen::isa::ptx::ptxas::ptxas_for_tests() {
        warplift_codegen::isa::ptx::ptxas::check_assembles(&ptxas, &ptx).unwrap();
    }
}

#[test]
fn thread_dependent_branches_stay_divergent_in_ptx() {
    let text = LOOP.replace("icmp slt v4, v1", "icmp slt v4, v3");
    let func = parse_function(&text).unwrap();
    let isa = lookup_by_name("ptx", Settings::default()).unwrap();
    let compiled = Context::new().compile(&func, isa.as_ref()).unwrap();
    let ptx = String::from_utf8(compiled.code).unwrap();
    let branches = predicated_branches(&ptx);
    assert_eq!(branches.len(), 2, "{ptx}");
    assert!(branches.iter().all(|b| !b.contains("bra.uni")), "{ptx}");
}

#[test]
fn uniform_loop_branch_has_no_reconvergence_point_in_simt_bytecode() {
    let func = parse_function(LOOP).unwrap();
    let mir = lower(&func).unwrap();
    let allocated = allocate(&mir, &RegisterFile::MAX, &ReservationRequest::none()).unwrap();
    let code = encode(&allocated.func).unwrap();
    let kernel = decode(&code.code, &code.info).unwrap();
    let uni = kernel
        .insts
        .iter()
        .filter(|i| matches!(i.op, Op::BrUni { .. }))
        .count();
    let div = kernel
        .insts
        .iter()
        .filter(|i| matches!(i.op, Op::BrDiv { .. }))
        .count();
    assert_eq!((uni, div), (1, 1));
}

/// The corpus exercises uniform branches, so that the emulator's differential run of it
/// (which faults when a uniform branch splits a warp) checks the analysis on real kernels.
#[test]
fn the_corpus_has_uniform_and_divergent_branches() {
    let (uni, div) = Walk::corpus()
        .functions(|_, func| {
            let (mut uni, mut div) = (0, 0);
            let mir = lower(&func).unwrap();
            for b in &mir.order {
                for inst in &mir.blocks[*b].insts {
                    if let warplift_codegen::mir::MInstKind::Branch { divergent, .. } = inst.kind {
                        *(if divergent { &mut div } else { &mut uni }) += 1;
                    }
                }
            }
            (uni, div)
        })
        .into_iter()
        .fold((0, 0), |acc, x| (acc.0 + x.0, acc.1 + x.1));
    eprintln!("corpus branches: {uni} uniform, {div} divergent");
    assert!(uni >= 5 && div >= 5, "{uni} uniform, {div} divergent");
}

/// An irreducible cycle {block1, block2} entered at both blocks by a branch on the thread
/// index; block2's own branch tests a value computed from the kernel parameter only.
const IRREDUCIBLE: &str = "kernel %irreducible(out: i64, n: i32) {
block0(v0: i64, v1: i32):
    v2 = thread_id x
    v3 = iconst.i32 0
    v4 = icmp eq v2, v3
    brif v4, block1, block2
block1:
    v5 = atomic_rmw add global v0, v1
    jump block2
block2:
    v6 = iadd v1, v1
    v7 = icmp slt v6, v1
    brif v7, block1, block3
block3:
    return
}";

#[test]
fn no_bra_uni_in_an_irreducible_cycle_entered_divergently() {
    let func = parse_function(IRREDUCIBLE).unwrap();
    // PTX: independent thread scheduling promises no reconvergence inside the cycle, so
    // its branch may split the warp however uniform its condition looks.
    let isa = lookup_by_name("ptx", Settings::default()).unwrap();
    let compiled = Context::new().compile(&func, isa.as_ref()).unwrap();
    let ptx = String::from_utf8(compiled.code).unwrap();
    let branches = predicated_branches(&ptx);
    assert_eq!(branches.len(), 2, "{ptx}");
    assert!(branches.iter().all(|b| !b.contains("bra.uni")), "{ptx}");
    if let Some(ptxas) = warplift_codegen::isa::ptx::ptxas::ptxas_for_tests() {
        warplift_codegen::isa::ptx::ptxas::check_assembles(&ptxas, &ptx).unwrap();
    }
    // SIMT: the groups of threads run the cycle one after the other, and the branch of
    // block2 stays uniform.
    let isa = lookup_by_name("simt", Settings::default()).unwrap();
    let kernel = Context::new().compile_kernel(&func, isa.as_ref()).unwrap();
    let flags: Vec<bool> = kernel
        .mir
        .order
        .iter()
        .flat_map(|b| &kernel.mir.blocks[*b].insts)
        .filter_map(|i| match i.kind {
            warplift_codegen::mir::MInstKind::Branch { divergent, .. } => Some(divergent),
            _ => None,
        })
        .collect();
    assert_eq!(flags.iter().filter(|&&d| !d).count(), 1, "{}", kernel.mir);
}
