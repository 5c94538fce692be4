//! PTX fuzzing: every generated kernel's PTX must be accepted by `ptxas` (skipped, with a
//! message, when no `ptxas` is installed: see `scripts/install-ptxas.sh`).
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;
use warplift_codegen::isa::ptx::ptxas::find_ptxas;
use warplift_fuzzgen::{check_ptx, generate};

fn ptxas() -> Option<&'static PathBuf> {
    static PTXAS: OnceLock<Option<PathBuf>> = OnceLock::new();
    PTXAS
        .get_or_init(|| {
            let found = find_ptxas();
            if found.is_none() {
                eprintln!(
                    "ptxas not found (set WARPLIFT_PTXAS or run scripts/install-ptxas.sh): \
                     the PTX is generated but not assembled"
                );
            }
            found
        })
        .as_ref()
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(case) = generate(&mut u) else {
        return;
    };
    match ptxas() {
        Some(p) => {
            if let Err(m) = check_ptx(&case, p) {
                panic!("{m}");
            }
        }
        None => {
            // Still compile to PTX: the emitter must not fail on a valid kernel.
            let isa = warplift_codegen::lookup_by_name("ptx", Default::default()).unwrap();
            if let Err(e) = warplift_codegen::Context::new().compile(&case.func, isa.as_ref()) {
                panic!("PTX compilation failed: {e}\n{}", case.text);
            }
        }
    }
});
