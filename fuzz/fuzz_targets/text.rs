//! Text fuzzing: the parser never panics on arbitrary text, and whatever parses prints to
//! text that parses back to the same kernels (`parse(print(parse(x))) == parse(x)`); the
//! verifier takes every parsed kernel without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Err(e) = warplift_fuzzgen::check_text_round_trip(&text) {
        panic!("{e}");
    }
});
