//! Differential fuzzing: a generated kernel must leave the same memory on the reference
//! interpreter and, after every pipeline, on the emulator (warp widths 1, 7, 32, 64; full
//! and tiny register files). On a mismatch the kernel and its launch are printed.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use warplift_fuzzgen::{check_case, generate, CheckConfig};

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(case) = generate(&mut u) else {
        return;
    };
    if let Err(m) = check_case(&case, &CheckConfig::default()) {
        panic!("{m}");
    }
});
