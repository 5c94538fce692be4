//! The differential test in `cargo test`: generated kernels over a fixed range of seeds,
//! each run on the reference interpreter and, after every pipeline, on the emulator, must
//! leave the same memory. Each seed runs every pipeline at one warp width (1, 7, 32 or 64)
//! with one register file (full or tiny), taking turns ([`CheckConfig::rotating`]), so
//! every pipeline meets every width and register file on dozens of kernels.
//! `WARPLIFT_FUZZ_SEEDS=N` runs N seeds instead of the default; `WARPLIFT_FUZZ_ALL=1`
//! runs every width and register file on every seed.

use arbitrary::Unstructured;
use std::collections::HashSet;
use std::time::Instant;
use warplift_fuzzgen::{check_case, CheckConfig, GeneratedCase};

/// Seeds run by default: enough kernels to cover every opcode class, CFG shape and launch
/// shape many times, in well under a minute.
const DEFAULT_SEEDS: u64 = 300;

fn seeds() -> u64 {
    std::env::var("WARPLIFT_FUZZ_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEEDS)
}

#[test]
fn generated_kernels_agree_on_interpreter_and_emulator() {
    let all = std::env::var_os("WARPLIFT_FUZZ_ALL").is_some_and(|v| v == "1");
    let start = Instant::now();
    let mut failures = Vec::new();
    for seed in 0..seeds() {
        let case = GeneratedCase::from_seed(seed);
        let config = if all {
            CheckConfig::default()
        } else {
            CheckConfig::rotating(seed as usize)
        };
        if let Err(m) = check_case(&case, &config) {
            failures.push(format!("seed {seed}: {m}"));
        }
    }
    eprintln!("{} seeds in {:.1?}", seeds(), start.elapsed());
    assert!(
        failures.is_empty(),
        "{} of {} seeds fail; the first:\n{}",
        failures.len(),
        seeds(),
        failures[0]
    );
}

#[test]
fn generation_is_deterministic() {
    for seed in [0, 1, 99] {
        let (a, b) = (
            GeneratedCase::from_seed(seed),
            GeneratedCase::from_seed(seed),
        );
        assert_eq!(a.text, b.text);
        assert_eq!(a.launch_text, b.launch_text);
    }
}

/// The checks of one kernel: (pipeline, warp width, register file).
fn checks(c: &CheckConfig) -> Vec<(String, u32, String)> {
    let mut out = Vec::new();
    for p in &c.pipelines {
        for &w in &c.warp_widths {
            for r in &c.register_files {
                out.push((p.name.clone(), w, format!("{r:?}")));
            }
        }
    }
    out
}

#[test]
fn the_rotation_the_single_checks_and_the_fuzz_targets_sampling_cover_every_check() {
    let all: HashSet<_> = checks(&CheckConfig::default()).into_iter().collect();
    let rotated: HashSet<_> = (0..8)
        .flat_map(|i| checks(&CheckConfig::rotating(i)))
        .collect();
    assert_eq!(rotated, all);
    let single: HashSet<_> = (0..CheckConfig::num_single_checks())
        .flat_map(|i| checks(&CheckConfig::single(i)))
        .collect();
    assert_eq!(single, all);
    let mut sampled = HashSet::new();
    for first in 0..=255u8 {
        for second in 0..8u8 {
            for third in 0..4u8 {
                let bytes = [first, second, third];
                let c = CheckConfig::sample(&mut Unstructured::new(&bytes)).unwrap();
                assert_eq!(checks(&c).len(), 1);
                sampled.extend(checks(&c));
            }
        }
    }
    assert_eq!(sampled, all);
}
