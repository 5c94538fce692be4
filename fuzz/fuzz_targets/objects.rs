//! Object and verifier fuzzing: the SIMT object loader (ELF, metadata, bytecode decoder,
//! line tables) never panics on arbitrary bytes, and the verifier never panics on a
//! generated kernel corrupted by arbitrary edits.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (selector, rest) = data.split_first().unwrap_or((&0, &[]));
    if selector & 1 == 0 {
        warplift_fuzzgen::check_object_bytes(rest);
    } else {
        let mut u = Unstructured::new(rest);
        let Ok(mut case) = warplift_fuzzgen::generate(&mut u) else {
            return;
        };
        if warplift_fuzzgen::corrupt(&mut case.func, &mut u).is_ok() {
            let _ = warplift_ir::verifier::verify_function(&case.func);
        }
    }
});
