//! Differential fuzzing: a generated kernel must leave the same memory on the reference
//! interpreter and, after a pipeline, on the emulator. The input's first bytes choose one
//! pipeline (every registered pass in every variant, or none), one warp width (1, 7, 32,
//! 64) and one register file (full or tiny); the rest generate the kernel and its launch.
//! One compilation and two runs per input keep the rate high, and a run covers every
//! combination. On a mismatch the kernel and its launch are printed.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use warplift_fuzzgen::{check_case, generate, CheckConfig};

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(config) = CheckConfig::sample(&mut u) else {
        return;
    };
    let Ok(case) = generate(&mut u) else {
        return;
    };
    if let Err(m) = check_case(&case, &config) {
        panic!("{m}");
    }
});
