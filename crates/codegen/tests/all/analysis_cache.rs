//! The analysis cache the IR passes share: each analysis is computed once per pipeline
//! while the passes preserve it, and again after a pass that changed the kernel.

use std::path::PathBuf;
use warplift_codegen::analysis::Computations;
use warplift_codegen::passes::PassReport;
use warplift_codegen::{lookup_by_name, Context, Settings};
use warplift_ir::parser::parse_functions;
use warplift_ir::Function;

fn kernel(file: &str) -> Function {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/corpus")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    parse_functions(&text).unwrap().remove(0)
}

/// The analyses computed compiling `file` under `passes`, and what each pass reported.
fn computed(file: &str, passes: &str) -> (Computations, Vec<(&'static str, PassReport)>) {
    computed_with(file, passes, &[])
}

/// [`computed`], with more settings.
fn computed_with(
    file: &str,
    passes: &str,
    settings: &[(&str, &str)],
) -> (Computations, Vec<(&'static str, PassReport)>) {
    let mut b = Settings::builder();
    b.set("passes", passes).unwrap();
    for (name, value) in settings {
        b.set(name, value).unwrap();
    }
    let isa = lookup_by_name("simt", b.finish()).unwrap();
    let mut ctx = Context::new();
    let k = ctx.compile_kernel(&kernel(file), &*isa).unwrap();
    assert_eq!(ctx.analyses().computations(), k.stats.analyses);
    (k.stats.analyses, k.stats.passes)
}

const ONCE: Computations = Computations {
    cfg: 1,
    domtree: 1,
    postdom: 1,
    loops: 1,
    divergence: 1,
};

/// The count `name` of the `i`th pass's report.
fn count(reports: &[(&'static str, PassReport)], i: usize, name: &str) -> u64 {
    reports[i].1.get(name).unwrap()
}

#[test]
fn linearize_ssa_computes_each_analysis_once() {
    // Region selection and linearization used to compute divergence once each.
    let (c, reports) = computed("short_circuit_fig1.wir", "linearize_ssa");
    assert_eq!(count(&reports, 0, "regions"), 1);
    assert_eq!(c, ONCE);
}

#[test]
fn a_pass_that_changes_nothing_hands_its_analyses_on() {
    // `converge` finds nothing to move in Figure 5's kernel (with the paper's lane paths,
    // whose loop test diverges): the CFG and post-dominators it computed, and the
    // divergence analysis (by the cache's dominator tree and loops) where its branches
    // needed it, serve linearize_ssa, which linearizes one region: each is computed once.
    let (c, reports) = computed("loop_jump_out_fig5_paths.wir", "converge,linearize_ssa");
    assert_eq!(
        count(&reports, 0, "hoisted") + count(&reports, 0, "sunk"),
        0
    );
    assert_eq!(count(&reports, 1, "regions"), 1);
    assert_eq!(c, ONCE);
}

#[test]
fn a_pass_that_changes_the_kernel_invalidates_them() {
    // `converge` sinks the load and scaling of the sink microbenchmark: linearize_ssa
    // computes again the CFG and post-dominators converge had. Converge asks for no
    // divergence analysis (its one branch tests a value computed from `thread_id`, divergent
    // whatever the analysis's other rules say), so neither it nor the dominator tree and
    // loops it would run on are computed for converge; linearize_ssa computes those two
    // for itself, and no divergence (the diamond left is structured). Flattening and
    // splitting are off: the diamond stays a diamond.
    let (c, reports) = computed_with(
        "csc_micro_sink.wir",
        "converge,linearize_ssa",
        &[("converge_flatten", "false"), ("converge_split", "false")],
    );
    assert!(count(&reports, 0, "sunk") > 0);
    assert_eq!(count(&reports, 1, "regions"), 0);
    assert_eq!(
        c,
        Computations {
            cfg: 2,
            postdom: 2,
            divergence: 0,
            ..ONCE
        }
    );
    // `restructure` rewrites the region: linearize_ssa finds the kernel structured on
    // the new graph, with analyses of its own (divergence only restructure asked for,
    // and linearize_ssa needs none without an unstructured edge). The CFG, trees and
    // loops restructure's divergence analysis ran on are counted, and computed again for
    // linearize_ssa on the new graph.
    // (`all`: the selective default's cost model declines this region.)
    let (c, reports) = computed_with(
        "short_circuit_fig1.wir",
        "restructure,linearize_ssa",
        &[("restructure_regions", "all")],
    );
    assert_eq!(count(&reports, 0, "regions restructured"), 1);
    assert_eq!(count(&reports, 1, "regions"), 0);
    assert_eq!(
        c,
        Computations {
            cfg: 2,
            domtree: 2,
            postdom: 2,
            loops: 2,
            ..ONCE
        }
    );
}

#[test]
fn no_ir_pass_computes_nothing() {
    let (c, _) = computed("short_circuit_fig1.wir", "linearize");
    assert_eq!(c, Computations::default());
}
