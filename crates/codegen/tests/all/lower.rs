//! Lowering tests: MIR snapshots of representative kernels, every corpus kernel lowers
//! to verified MIR, and every opcode at every type the IR verifier accepts lowers.
//!
//! Snapshots live in `tests/snapshots/`: each `NAME.wir` is lowered and compared with
//! `NAME.mir`. Run with `WARPLIFT_BLESS=1` to rewrite the expected files.

use std::path::{Path, PathBuf};
use warplift_codegen::lower::lower;
use warplift_codegen::mir::verify::verify_mir;
use warplift_codegen::mir::MirFunction;
use warplift_filetests::Walk;
use warplift_ir::parser::parse_functions;
use warplift_ir::verifier::verify_function;
use warplift_ir::{Function, Opcode};

fn lower_text(text: &str) -> Vec<MirFunction> {
    parse_functions(text)
        .expect("parse")
        .iter()
        .map(|f| {
            verify_function(f).unwrap_or_else(|e| panic!("IR of %{} invalid: {e:?}", f.name));
            let mir = lower(f).unwrap_or_else(|e| panic!("lowering %{}: {e}", f.name));
            verify_mir(&mir).unwrap_or_else(|e| panic!("{e}\n{mir}"));
            mir
        })
        .collect()
}

fn files_with_ext(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    files
}

#[test]
fn snapshots() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    let bless = std::env::var_os("WARPLIFT_BLESS").is_some_and(|v| v == "1");
    let inputs = files_with_ext(&dir, "wir");
    assert!(inputs.len() >= 10, "snapshot inputs are missing");
    let mut failures = Vec::new();
    for input in inputs {
        let text = std::fs::read_to_string(&input).expect("read input");
        let actual: String = lower_text(&text).iter().map(|m| m.to_string()).collect();
        let expected_path = input.with_extension("mir");
        if bless {
            std::fs::write(&expected_path, &actual).expect("write snapshot");
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if expected != actual {
            failures.push(format!(
                "{}: MIR differs (WARPLIFT_BLESS=1 rewrites it)\n--- expected\n{expected}--- actual\n{actual}",
                input.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_corpus_kernel_lowers_to_verified_mir() {
    // Every file holds at least one kernel, and every kernel lowers to verified MIR.
    let kernels = Walk::corpus().each(|file| lower_text(&file.text).len());
    assert!(kernels.iter().all(|&n| n >= 1), "{kernels:?}");
}

/// Kernels exercising `op` at every type combination: the IR verifier decides which are
/// valid, and every valid one must lower.
fn kernels_for(op: Opcode) -> Vec<String> {
    use warplift_ir::InstructionFormat as F;
    const TYPES: [&str; 7] = ["i1", "i8", "i16", "i32", "i64", "f32", "f64"];
    let name = op.name();
    let wrap = |params: &str, entry: &str, body: &str| {
        format!(
            "kernel %k({params}) {{\n    smem0 = shared 16, align 8\n    lmem0 = local 16, align 8\nblock0({entry}):\n{body}    return\n}}\n"
        )
    };
    let mut out = Vec::new();
    for t in TYPES {
        let p1 = format!("a: {t}");
        let e1 = format!("v0: {t}");
        let p2 = format!("a: {t}, b: {t}");
        let e2 = format!("v0: {t}, v1: {t}");
        let p3 = format!("a: {t}, b: {t}, c: {t}");
        let e3 = format!("v0: {t}, v1: {t}, v2: {t}");
        match op.format() {
            F::Unary if op.has_explicit_type() => {
                for to in TYPES {
                    out.push(wrap(&p1, &e1, &format!("    v1 = {name}.{to} v0\n")));
                }
            }
            F::Unary => out.push(wrap(&p1, &e1, &format!("    v1 = {name} v0\n"))),
            F::Binary => out.push(wrap(&p2, &e2, &format!("    v2 = {name} v0, v1\n"))),
            F::Ternary => {
                out.push(wrap(&p3, &e3, &format!("    v3 = {name} v0, v1, v2\n")));
                out.push(wrap(
                    &format!("c: i1, {p2}"),
                    &format!("v9: i1, {e2}"),
                    &format!("    v3 = {name} v9, v0, v1\n"),
                ));
            }
            F::IntCompare => out.push(wrap(&p2, &e2, &format!("    v2 = {name} ule v0, v1\n"))),
            F::FloatCompare => out.push(wrap(&p2, &e2, &format!("    v2 = {name} ult v0, v1\n"))),
            F::UnaryImm => out.push(wrap("", "", &format!("    v0 = {name}.{t} 1\n"))),
            F::Load => {
                for (space, addr) in [("global", "i64"), ("shared", "i32"), ("local", "i32")] {
                    out.push(wrap(
                        &format!("p: {addr}"),
                        &format!("v0: {addr}"),
                        &format!("    v1 = load.{t} {space} v0+8\n"),
                    ));
                }
            }
            F::Store => {
                for (space, addr) in [("global", "i64"), ("shared", "i32"), ("local", "i32")] {
                    out.push(wrap(
                        &format!("p: {addr}, x: {t}"),
                        &format!("v0: {addr}, v1: {t}"),
                        &format!("    store {space} v1, v0+8\n"),
                    ));
                }
            }
            F::AtomicRmw => {
                for (space, addr) in [("global", "i64"), ("shared", "i32")] {
                    out.push(wrap(
                        &format!("p: {addr}, x: {t}"),
                        &format!("v0: {addr}, v1: {t}"),
                        &format!("    v2 = {name} xor {space} v0+8, v1\n"),
                    ));
                }
            }
            F::AtomicCas => out.push(wrap(
                &format!("p: i64, x: {t}"),
                "v0: i64, v1: {t}".replace("{t}", t).as_str(),
                &format!("    v2 = {name} global v0, v1, v1\n"),
            )),
            _ => {}
        }
    }
    match op.format() {
        F::FloatConst => out.push(wrap("", "", &format!("    v0 = {name} 2.5\n"))),
        F::Geometry => out.push(wrap("", "", &format!("    v0 = {name} z\n"))),
        F::Nullary if op.has_result() => out.push(wrap("", "", &format!("    v0 = {name}\n"))),
        F::Nullary if op.is_terminator() => out.push(wrap("", "", "")),
        F::Nullary => out.push(wrap("", "", &format!("    {name}\n"))),
        F::SharedAddr => out.push(wrap("", "", "    v0 = shared_addr smem0\n")),
        F::LocalAddr => out.push(wrap("", "", "    v0 = local_addr lmem0\n")),
        F::Jump => out.push(
            "kernel %k() {\nblock0:\n    jump block1\nblock1:\n    return\n}\n".to_string(),
        ),
        F::Brif => out.push(
            "kernel %k(c: i1) {\nblock0(v0: i1):\n    brif v0, block1, block0(v0)\nblock1:\n    return\n}\n"
                .replace("block0(v0)", "block2")
                .replace("block1:\n    return\n}", "block1:\n    return\nblock2:\n    return\n}"),
        ),
        F::BrTable => {
            for n in 0..6 {
                let targets: Vec<String> = (0..n).map(|i| format!("block{}", i % 3 + 1)).collect();
                out.push(format!(
                    "kernel %k(i: i32) {{\nblock0(v0: i32):\n    br_table v0, block1, [{}]\nblock1:\n    return\nblock2:\n    return\nblock3:\n    return\n}}\n",
                    targets.join(", ")
                ));
            }
        }
        _ => {}
    }
    out
}

#[test]
fn every_opcode_lowers_at_every_valid_type() {
    for &op in Opcode::ALL {
        let mut valid = 0;
        for text in kernels_for(op) {
            let Ok(funcs) = parse_functions(&text) else {
                continue;
            };
            let f: &Function = &funcs[0];
            if verify_function(f).is_err() {
                continue;
            }
            valid += 1;
            let mir = lower(f).unwrap_or_else(|e| panic!("{op}: {e}\n{text}"));
            verify_mir(&mir).unwrap_or_else(|e| panic!("{op}: {e}\n{text}\n{mir}"));
        }
        assert!(valid > 0, "no valid kernel exercised {op}");
    }
}

#[test]
fn malformed_functions_are_errors_not_panics() {
    use warplift_codegen::lower::LowerError;
    let empty = Function::with_name_signature("k", Default::default());
    assert!(matches!(lower(&empty), Err(LowerError::NoEntry(_))));

    let cases = [
        // A use before its definition.
        "kernel %k() {\nblock0:\n    v1 = iadd v0, v0\n    v0 = iconst.i32 1\n    return\n}\n",
        // Entry parameters that do not match the signature.
        "kernel %k(a: i32) {\nblock0:\n    return\n}\n",
        // Operand types no rule accepts.
        "kernel %k(a: i1, b: i1) {\nblock0(v0: i1, v1: i1):\n    v2 = iadd v0, v1\n    return\n}\n",
        // A block without a terminator, falling off the end.
        "kernel %k() {\nblock0:\n    v0 = iconst.i32 1\n}\n",
    ];
    for text in cases {
        let Ok(f) = warplift_ir::parser::parse_function(text) else {
            continue;
        };
        assert!(verify_function(&f).is_err(), "{text}");
        // Lowering may succeed or fail on an unverified function, but must not panic;
        // whatever it produces must not pass off as valid MIR silently.
        if let Ok(mir) = lower(&f) {
            let _ = verify_mir(&mir);
        }
    }
}
