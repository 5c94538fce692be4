//! The paper's claims about linearization on random kernels: unstructured and irreducible
//! control flow, divergent and uniform branches, loops with divergent exits. For every
//! region mode, optimisation level and interleaving, the pass keeps its promises about
//! registers, structure and code growth (`check_linearized`: Section 6, Claims 1 and 3);
//! the differential test checks that the programs compute what the interpreter computes.

use warplift_codegen::linearize::check::check_linearized;
use warplift_codegen::linearize::Linearize;
use warplift_codegen::lower::lower;
use warplift_codegen::passes::MachinePass;
use warplift_codegen::regalloc::{allocate, RegisterFile};
use warplift_codegen::Settings;
use warplift_fuzzgen::GeneratedCase;

#[test]
fn random_kernels_linearize_within_the_claims() {
    let configs: [&[&str]; 5] = [
        &["linearize_regions=divergent"],
        &["linearize_regions=all", "linearize_opt=3"],
        &["linearize_regions=kernel"],
        &["linearize_regions=kernel", "linearize_opt=2"],
        &["linearize_regions=kernel", "linearize_interleave=true"],
    ];
    let (mut linearized, mut region_blocks, mut retreating) = (0, 0, 0);
    for seed in 0..240 {
        let case = GeneratedCase::from_seed(seed);
        let mir = lower(&case.func).expect("generated kernels lower");
        for config in configs {
            let mut b = Settings::builder();
            for a in config {
                b.set_assignment(a).unwrap();
            }
            let s = b.finish();
            let allocated = allocate(&mir, &RegisterFile::MAX, &Linearize.reservation(&s, &mir))
                .expect("allocates");
            let mut after = allocated.func.clone();
            let report = Linearize
                .run(&mut after, &allocated.reserved, &s)
                .unwrap_or_else(|e| panic!("seed {seed}, {config:?}: {e}"));
            let growth =
                check_linearized(&allocated.func, &after, &allocated.reserved, &report, &s)
                    .unwrap_or_else(|e| {
                        panic!("seed {seed}, {config:?}: {e}\n{}\n{after}", case.text)
                    });
            if report.get("regions").unwrap_or(0) > 0 {
                linearized += 1;
                region_blocks += growth.region_blocks;
                retreating += growth.retreating_edges;
            }
        }
    }
    // The generator makes unstructured and irreducible control flow often enough that
    // a good share of the runs linearize something, loops included (kernel mode leaves a
    // kernel alone where linearizing it can gain nothing, so more seeds than runs).
    assert!(linearized >= 200, "{linearized}");
    eprintln!("{linearized} runs linearized: {region_blocks} region blocks, {retreating} retreating edges");
    assert!(
        retreating >= 100,
        "{retreating} retreating edges in {region_blocks} blocks"
    );
}
