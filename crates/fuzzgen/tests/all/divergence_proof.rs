//! The cheap proof of divergent branches ([`prove_divergent_branches`], which lowering and
//! the convergence pass use instead of the divergence analysis when it settles a kernel)
//! against the analysis itself: wherever the proof answers, its divergent branches are
//! exactly the analysis's under both reconvergence models, over the corpus, the
//! divergence tests' kernels, random kernels and the synthetic CFG family; and it answers
//! for some kernels of each kind while leaving others to the analysis.

use warplift_filetests::Walk;
use warplift_fuzzgen::cfg_family::{acyclic_cfgs, KernelStyle};
use warplift_fuzzgen::GeneratedCase;
use warplift_ir::divergence::{
    prove_divergent_branches, Divergence, DivergentBranches, Reconvergence,
};
use warplift_ir::Function;

const SEEDS: u64 = 300;

/// Checks `func`; true when the proof settled it.
fn check(name: &str, func: &Function) -> bool {
    let Some(flags) = prove_divergent_branches(func) else {
        return false;
    };
    let proven = DivergentBranches::Proven(flags).blocks();
    for model in [Reconvergence::Ipdom, Reconvergence::Independent] {
        let analysis = Divergence::compute_for(func, model);
        assert_eq!(
            proven,
            analysis.divergent_branches(),
            "{name} under {model:?}"
        );
    }
    true
}

/// Asserts that the proof settled some and left some of a kind of kernel.
fn settled_some(kind: &str, results: &[bool]) {
    let settled = results.iter().filter(|&&s| s).count();
    assert!(
        settled > 0 && settled < results.len(),
        "{kind}: the proof settled {settled} of {}",
        results.len()
    );
}

#[test]
fn proven_branches_are_the_analysis_branches_on_the_corpus() {
    // The divergence tests' kernels are made of uniform branches and joins: the
    // analysis's, all of them.
    let results = Walk::corpus()
        .and_dir("tests/divergence")
        .functions(|file, func| check(&format!("{file} {}", func.name), &func));
    settled_some("the corpus", &results);
}

#[test]
fn proven_branches_are_the_analysis_branches_on_random_kernels() {
    let results: Vec<bool> = (0..SEEDS)
        .map(|seed| {
            check(
                &format!("seed {seed}"),
                &GeneratedCase::from_seed(seed).func,
            )
        })
        .collect();
    settled_some("random kernels", &results);
}

#[test]
fn proven_branches_are_the_analysis_branches_on_the_cfg_family() {
    let results: Vec<bool> = acyclic_cfgs(5)
        .iter()
        .map(|cfg| check(&cfg.name(), &cfg.kernel(KernelStyle { trace: false }).func))
        .collect();
    assert!(!results.is_empty());
    // The family's branches all test thread-dependent directions: every kernel settles.
    assert!(
        results.iter().all(|&s| s),
        "a family kernel left to the analysis"
    );
}
