//! `converge` (Common Subexpression Convergence) on the paper's listings: exactly which
//! instructions move where, and what the pass reports.

use std::path::Path;
use warplift_codegen::converge::{converge, Options, Stats};
use warplift_ir::parser::parse_functions;
use warplift_ir::verifier::verify_function;
use warplift_ir::Function;

fn corpus(file: &str) -> Function {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/corpus")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    parse_functions(&text).unwrap().remove(0)
}

fn parse(text: &str) -> Function {
    parse_functions(text).unwrap().remove(0)
}

/// Runs the pass with `opts` and returns the kernel's text after it and the statistics;
/// the result must verify.
fn run(mut func: Function, opts: &Options) -> (String, Stats) {
    let stats = converge(&mut func, opts);
    verify_function(&func).unwrap_or_else(|e| panic!("{e}\n{func}"));
    (func.to_string(), stats)
}

#[test]
fn print_all() {
    for f in [
        "csc_hoist_l1_1.wir",
        "csc_sink_l1_3.wir",
        "csc_split_l1_5.wir",
        "csc_rename_l1_7.wir",
        "csc_dp_l1_9.wir",
        "csc_nested_l1_10.wir",
    ] {
        let (text, stats) = run(corpus(f), &Options::default());
        println!("== {f} {stats:?}\n{text}");
    }
    let _ = parse;
}
