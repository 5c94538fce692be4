//! Linearization never makes a block run redundantly more often: over random kernels with
//! unstructured and irreducible control flow, at warp widths 4 and 32, the redundant
//! executions of the kernel's own blocks (the emulator's `RunOptions::redundancy`
//! counter) after `linearize` in every region mode (`divergent`, the default; `all`; and
//! `kernel`, whose loop nests are merged only where the cost model expects a gain) and
//! after `linearize_ssa` are at most what the plain pipeline runs.

use warplift_codegen::isa::simt::encode;
use warplift_codegen::Settings;
use warplift_emu::{run_with, MachineConfig, Program, RunOptions};
use warplift_fuzzgen::{GeneratedCase, Pipeline};

fn pipeline(name: &str, settings: &[(&'static str, &'static str)]) -> Pipeline {
    Pipeline {
        name: name.to_string(),
        settings: settings.to_vec(),
    }
}

/// Redundant executions of the kernel's own IR blocks (machine-made `codeN` blocks and
/// the guard blocks `linearize_ssa` adds left out), summed.
fn redundant(case: &GeneratedCase, p: &Pipeline, width: u32) -> u64 {
    let mir = p
        .compile(&case.func, Settings::default())
        .unwrap_or_else(|e| panic!("{}: {e}", p.name));
    let program = Program::from_code(&encode(&mir).unwrap()).unwrap();
    let machine = MachineConfig::builder()
        .warp_width(width)
        .warp_slots(1024)
        .build()
        .unwrap();
    let mut memory = case.launch.prepare(&case.func).unwrap();
    let options = RunOptions {
        redundancy: true,
        ..RunOptions::default()
    };
    let stats = run_with(&program, &mut memory, &machine, options)
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", p.name, case.text));
    let own: Vec<String> = case
        .func
        .layout
        .blocks()
        .iter()
        .map(|b| b.to_string())
        .collect();
    stats
        .redundant_block_executions
        .expect("counted")
        .iter()
        .filter(|(b, _)| own.contains(b))
        .map(|(_, n)| n)
        .sum()
}

#[test]
fn random_kernels_run_no_block_more_redundantly_linearized() {
    let plain = pipeline("plain", &[]);
    let linearized = [
        pipeline("linearize", &[("passes", "linearize")]),
        pipeline(
            "linearize[all,O3]",
            &[
                ("passes", "linearize"),
                ("linearize_regions", "all"),
                ("linearize_opt", "3"),
            ],
        ),
        pipeline(
            "linearize[kernel]",
            &[("passes", "linearize"), ("linearize_regions", "kernel")],
        ),
        pipeline(
            "linearize[kernel,O3]",
            &[
                ("passes", "linearize"),
                ("linearize_regions", "kernel"),
                ("linearize_opt", "3"),
            ],
        ),
        pipeline("linearize_ssa", &[("passes", "linearize_ssa")]),
    ];
    let (mut before_total, mut improved) = (0, 0);
    let mut worse = Vec::new();
    for seed in 0..30 {
        let case = GeneratedCase::from_seed(seed);
        for width in [4, 32] {
            let before = redundant(&case, &plain, width);
            before_total += before;
            for p in &linearized {
                let after = redundant(&case, p, width);
                if after > before {
                    worse.push(format!(
                        "seed {seed}, w{width}, {}: {before} -> {after}",
                        p.name
                    ));
                }
                improved += u64::from(after < before);
            }
        }
    }
    assert!(worse.is_empty(), "{}", worse.join("\n"));
    // The seeds do make blocks run redundantly, and linearization removes some of it.
    assert!(
        before_total > 0 && improved > 0,
        "{before_total} {improved}"
    );
    eprintln!("{before_total} redundant executions before; {improved} runs improved");
}

#[test]
fn linearized_redundancy_does_not_depend_on_the_order_of_a_branchs_successors() {
    // The same random kernels (unstructured and irreducible control flow) with every
    // branch's successors named the other way round (`brif !c, E, T`): linearization
    // orders the blocks it guards by dominance and by loops, not by which successor a
    // branch names first, so it leaves as many redundant executions either way.
    let linearized = [
        pipeline("linearize", &[("passes", "linearize")]),
        pipeline(
            "linearize[kernel,O3]",
            &[
                ("passes", "linearize"),
                ("linearize_regions", "kernel"),
                ("linearize_opt", "3"),
                ("linearize_predicate", "0"),
            ],
        ),
        pipeline("linearize_ssa", &[("passes", "linearize_ssa")]),
    ];
    let mut differ = Vec::new();
    let mut compared = 0;
    for seed in 0..30 {
        let case = GeneratedCase::from_seed(seed);
        let Some(text) = warplift_filetests::with_branch_successors_swapped(&case.text) else {
            continue;
        };
        let func = warplift_ir::parser::parse_functions(&text)
            .unwrap_or_else(|e| panic!("seed {seed}: {e:?}\n{text}"))
            .remove(0);
        let swapped = GeneratedCase {
            func,
            text,
            ..case.clone()
        };
        for width in [4, 32] {
            for p in &linearized {
                let (a, b) = (redundant(&case, p, width), redundant(&swapped, p, width));
                compared += 1;
                if a != b {
                    differ.push(format!("seed {seed}, w{width}, {}: {a} vs {b}", p.name));
                }
            }
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    assert!(compared >= 100, "{compared}");
}
