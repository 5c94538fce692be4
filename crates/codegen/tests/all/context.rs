//! The embedder's view: pick a target by triple and settings, compile with `Context`.

use warplift_codegen::{lookup_by_name, CodegenError, Context, Settings};
use warplift_filetests::Walk;
use warplift_ir::parser::{parse_function, parse_functions};

const SAXPY: &str = include_str!("../../../../examples/saxpy.wir");

fn settings(assignments: &[&str]) -> Settings {
    let mut b = Settings::builder();
    for a in assignments {
        b.set_assignment(a).unwrap();
    }
    b.finish()
}

#[test]
fn compile_one_kernel_to_ptx() {
    let func = parse_function(SAXPY).unwrap();
    let isa = lookup_by_name("nvptx64-nvidia-cuda", Settings::default()).unwrap();
    assert_eq!(isa.name(), "ptx");
    let compiled = Context::new().compile(&func, isa.as_ref()).unwrap();
    let ptx = String::from_utf8(compiled.code).unwrap();
    assert!(ptx.contains(".visible .entry saxpy("), "{ptx}");
    assert!(ptx.contains("fma.rn.f32"), "{ptx}");
    let stats = &compiled.kernel.stats;
    assert_eq!(stats.ir_insts, func.num_placed_insts());
    assert_eq!(stats.regalloc.spills, 0);
    if let Some(ptxas) = warplift_codegen::isa::ptx::ptxas::ptxas_for_tests() {
        warplift_codegen::isa::ptx::ptxas::check_assembles(&ptxas, &ptx).unwrap();
    }
}

#[test]
fn settings_choose_register_file_allocator_and_ptx_target() {
    let func = parse_function(SAXPY).unwrap();
    let isa = lookup_by_name(
        "ptx",
        settings(&[
            "regs_b32=3",
            "regs_b64=2",
            "opt_level=none",
            "ptx_target=sm_90",
        ]),
    )
    .unwrap();
    let regs = isa.register_file();
    assert_eq!((regs.b32, regs.b64, regs.pred), (3, 2, 64));
    let compiled = Context::new().compile(&func, isa.as_ref()).unwrap();
    let stats = &compiled.kernel.stats.regalloc;
    assert!(
        stats.regs_used[0] <= 3 && stats.regs_used[1] <= 2,
        "{stats:?}"
    );
    assert!(
        stats.spills > 0,
        "a 2-register b64 file must spill: {stats:?}"
    );
    let ptx = String::from_utf8(compiled.code).unwrap();
    assert!(ptx.contains(".target sm_90"));
    if let Some(ptxas) = warplift_codegen::isa::ptx::ptxas::ptxas_for_tests() {
        warplift_codegen::isa::ptx::ptxas::check_assembles(&ptxas, &ptx).unwrap();
    }
}

#[test]
fn a_module_of_several_kernels_is_one_ptx_module() {
    let text = format!(
        "{SAXPY}\n{}",
        "kernel %fill(out: i64, v: i32) {\n    smem0 = shared 64, align 4\nblock0(v0: i64, v1: i32):\n    v2 = shared_addr smem0\n    store shared v1, v2\n    v3 = load.i32 shared v2\n    store global v3, v0\n    return\n}\n"
    );
    let funcs = parse_functions(&text).unwrap();
    let isa = lookup_by_name("ptx", Settings::default()).unwrap();
    let module = Context::new()
        .compile_module(&funcs, isa.as_ref(), Some("two.wir"))
        .unwrap();
    assert_eq!(module.kernels.len(), 2);
    let ptx = String::from_utf8(module.code).unwrap();
    assert_eq!(ptx.matches(".version").count(), 1);
    assert!(ptx.contains(".entry saxpy(") && ptx.contains(".entry fill("));
    assert!(ptx.contains(".file 1 \"two.wir\""));
    if let Some(ptxas) = warplift_codegen::isa::ptx::ptxas::ptxas_for_tests() {
        warplift_codegen::isa::ptx::ptxas::check_assembles(&ptxas, &ptx).unwrap();
    }
}

/// Compiling functions given up to the context (each freed once lowered, IR passes run
/// in place) emits what compiling borrowed ones does, with the same statistics, for both
/// targets, with and without IR passes, on every corpus kernel; and reports the same
/// errors.
#[test]
fn an_owned_module_compiles_as_a_borrowed_one() {
    let files = Walk::corpus().at_least(11).files();
    for target in ["ptx", "simt"] {
        for passes in [None, Some("converge,licm")] {
            let mut assignments = vec![];
            let list;
            if let Some(p) = passes {
                list = format!("passes={p}");
                assignments.push(list.as_str());
            }
            let isa = lookup_by_name(target, settings(&assignments)).unwrap();
            for path in &files {
                let funcs = parse_functions(&std::fs::read_to_string(path).unwrap()).unwrap();
                let borrowed = Context::new().compile_module(&funcs, isa.as_ref(), Some("k.wir"));
                let owned = Context::new().compile_module_owned(funcs, isa.as_ref(), Some("k.wir"));
                let what = format!("{} {target} {passes:?}", path.display());
                match (borrowed, owned) {
                    (Ok(b), Ok(o)) => {
                        assert_eq!(b.code, o.code, "{what}");
                        let stats = |m: &warplift_codegen::CompiledModule| {
                            m.kernels
                                .iter()
                                .map(|k| format!("{:?}", k.stats))
                                .collect::<Vec<_>>()
                        };
                        assert_eq!(stats(&b), stats(&o), "{what}");
                    }
                    (Err(b), Err(o)) => assert_eq!(b.to_string(), o.to_string(), "{what}"),
                    (b, o) => panic!("{what}: borrowed {:?}, owned {:?}", b.is_ok(), o.is_ok()),
                }
            }
        }
    }
}

#[test]
fn errors_are_typed() {
    let isa = lookup_by_name("ptx", Settings::default()).unwrap();
    let bad = parse_function(
        "kernel %k(p: i64) {\nblock0(v0: i64):\n    v1 = iconst.i32 1\n    v2 = iadd v0, v1\n    return\n}\n",
    )
    .unwrap();
    match Context::new().compile(&bad, isa.as_ref()) {
        Err(CodegenError::Verifier { kernel, errors }) => {
            assert_eq!(kernel, "k");
            assert!(
                errors.to_string().contains("4:5: v2 = iadd v0, v1"),
                "{errors}"
            );
        }
        other => panic!("expected a verifier error, got {other:?}"),
    }
    // An fma needs its three sources and its result in registers at once.
    let fma = parse_function(
        "kernel %k(p: i64) {\nblock0(v0: i64):\n    v1 = load.f32 global v0\n    v2 = load.f32 global v0+4\n    v3 = load.f32 global v0+8\n    v4 = fma v1, v2, v3\n    store global v4, v0\n    return\n}\n",
    )
    .unwrap();
    let tiny = lookup_by_name("ptx", settings(&["regs_b32=1"])).unwrap();
    match Context::new().compile(&fma, tiny.as_ref()) {
        Err(CodegenError::Regalloc(e)) => assert!(e.to_string().contains("b32"), "{e}"),
        other => panic!("expected a register-pressure error, got {other:?}"),
    }
    assert!(lookup_by_name("x86_64-unknown-linux-gnu", Settings::default()).is_err());
    assert!(lookup_by_name("gpu", Settings::default()).is_err());
}

#[test]
fn the_simt_target_emits_an_object_the_loader_reads_back() {
    use warplift_codegen::isa::simt::load_object;
    let func = parse_function(SAXPY).unwrap();
    for name in ["simt", "unknown-warplift-unknown"] {
        let isa = lookup_by_name(name, Settings::default()).unwrap();
        assert_eq!(isa.name(), "simt");
        assert!(!isa.emits_text());
        let module = Context::new()
            .compile_module(std::slice::from_ref(&func), isa.as_ref(), Some("saxpy.wir"))
            .unwrap();
        let object = load_object(&module.code).unwrap();
        assert_eq!(object.kernels.len(), 1);
        assert_eq!(object.kernels[0].kernel.info.name, "saxpy");
        assert_eq!(object.source_name, "saxpy.wir");
    }
}

#[test]
fn compile_for_simt_without_a_source_name() {
    let func = parse_function(SAXPY).unwrap();
    let isa = lookup_by_name("simt", Settings::default()).unwrap();
    let compiled = Context::new().compile(&func, isa.as_ref()).unwrap();
    let object = warplift_codegen::isa::simt::load_object(&compiled.code).unwrap();
    assert_eq!(object.source_name, "<unknown>");
}
