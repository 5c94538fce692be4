//! The code generator leaves no block that only jumps: the edge blocks made for register
//! allocation and left empty by it are removed, so a loop runs its body and one branch per
//! iteration (exact warp-instruction counts), an if-then's PTX branches once, on the
//! inverted condition, and the results still equal the interpreter's.

use std::path::Path;
use warplift_codegen::isa::simt::encode;
use warplift_codegen::mir::{BlockKind, MInstKind};
use warplift_codegen::{lookup_by_name, CompiledKernel, Context, Settings};
use warplift_emu::{run, MachineConfig, Program, Stats};
use warplift_ir::launch::Launch;
use warplift_ir::parser::parse_function;

/// `do { acc = acc * 3 + i; i++; } while (i < n + tid % 4)`: a bottom-tested loop whose
/// back edge leaves a block with two successors for one with two predecessors (a critical
/// edge, split for register allocation).
const LOOP: &str = "kernel %simple_loop(out: i64, n: i32) {
block0(v0: i64, v1: i32):
    v2 = thread_id x
    v3 = iconst.i32 3
    v4 = band v2, v3
    v5 = iadd v1, v4
    v6 = iconst.i32 0
    jump block1(v6, v6)
block1(v7: i32, v8: i32):
    v9 = imul v8, v3
    v10 = iadd v9, v7
    v11 = iconst.i32 1
    v12 = iadd v7, v11
    v13 = icmp slt v12, v5
    brif v13, block1(v12, v10), block2
block2:
    v14 = uextend.i64 v2
    v15 = iconst.i64 2
    v16 = ishl v14, v15
    v17 = iadd v0, v16
    store global v10, v17
    return
}";

/// `if (tid & 1) out[tid] = 1;`: an if-then, whose join has two predecessors.
const IF_THEN: &str = "kernel %if_then(out: i64) {
block0(v0: i64):
    v1 = thread_id x
    v2 = uextend.i64 v1
    v3 = iconst.i64 2
    v4 = ishl v2, v3
    v5 = iadd v0, v4
    v6 = iconst.i32 1
    v7 = band v1, v6
    v8 = icmp eq v7, v6
    brif v8, block1, block2
block1:
    store global v6, v5
    jump block2
block2:
    return
}";

fn launch(n: i32) -> Launch {
    let toml = format!(
        "block = [32]\n[args]\nn = {n}\n[buffers.out]\ntype = \"i32\"\nlen = 32\ninit = \"zeros\"\n"
    );
    Launch::from_toml_str(&toml, Path::new("test.launch.toml")).unwrap()
}

fn compile(wir: &str, target: &str) -> CompiledKernel {
    let func = parse_function(wir).unwrap();
    let isa = lookup_by_name(target, Settings::default()).unwrap();
    Context::new().compile_kernel(&func, &*isa).unwrap()
}

/// Runs the loop kernel with `n` (one warp of 32) and checks the interpreter's memory.
fn run_loop(kernel: &CompiledKernel, n: i32) -> Stats {
    let func = parse_function(LOOP).unwrap();
    let prepared = launch(n).prepare(&func).unwrap();
    let mut reference = prepared.clone();
    warplift_ir::interp::run(&func, &mut reference, &Default::default()).unwrap();
    let prog = Program::from_code(&encode(&kernel.mir).unwrap()).unwrap();
    let config = MachineConfig::builder().warp_width(32).build().unwrap();
    let mut emulated = prepared.clone();
    let stats = run(&prog, &mut emulated, &config).unwrap();
    for (a, b) in reference
        .memory
        .buffers
        .iter()
        .zip(&emulated.memory.buffers)
    {
        assert!(a.bytes == b.bytes, "buffer {} differs", a.name);
    }
    stats
}

#[test]
fn a_simple_loop_runs_its_body_and_one_branch_per_iteration() {
    let kernel = compile(LOOP, "simt");
    assert_eq!(kernel.stats.regalloc.split_edges, 1);
    assert_eq!(kernel.stats.removed_edge_blocks, 1);
    assert!(kernel
        .mir
        .order
        .iter()
        .all(|&b| kernel.mir.blocks[b].kind != BlockKind::EdgeSplit));
    // The loop is one block branching to itself: mad (`acc * 3 + i`), add (the
    // increment), setp, branch.
    let looping: Vec<_> = kernel
        .mir
        .order
        .iter()
        .copied()
        .filter(|&b| kernel.mir.successors(b).contains(&b))
        .collect();
    assert_eq!(looping.len(), 1, "{}", kernel.mir);
    let body = &kernel.mir.blocks[looping[0]].insts;
    assert_eq!(body.len(), 4, "{}", kernel.mir);
    assert!(matches!(body[3].kind, MInstKind::Branch { .. }));
    // Ten more iterations in every lane: ten times the body plus one branch, exactly.
    let few = run_loop(&kernel, 10);
    let more = run_loop(&kernel, 20);
    assert_eq!(more.warp_instructions - few.warp_instructions, 10 * 4);
}

#[test]
fn an_if_then_branches_once_on_the_inverted_condition_in_ptx() {
    let kernel = compile(IF_THEN, "ptx");
    assert_eq!(kernel.stats.removed_edge_blocks, 1);
    let isa = lookup_by_name("ptx", Settings::default()).unwrap();
    let func = parse_function(IF_THEN).unwrap();
    let ptx = Context::new().compile(&func, &*isa).unwrap();
    let text = String::from_utf8(ptx.code).unwrap();
    let branches: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| l.contains("bra"))
        .collect();
    assert_eq!(branches.len(), 1, "{text}");
    assert!(branches[0].starts_with("@!%p"), "{text}");
    assert!(!text.contains("bra.uni"), "{text}");
}
