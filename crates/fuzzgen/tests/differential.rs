//! The differential test in `cargo test`: generated kernels over a fixed range of seeds,
//! each run on the reference interpreter and, after every pipeline, on the emulator at
//! warp widths 1, 7, 32 and 64 with the full and a tiny register file, must leave the same
//! memory. `WARPLIFT_FUZZ_SEEDS=N` runs N seeds instead of the default.

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
    let config = CheckConfig::default();
    let start = Instant::now();
    let mut failures = Vec::new();
    for seed in 0..seeds() {
        let case = GeneratedCase::from_seed(seed);
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
