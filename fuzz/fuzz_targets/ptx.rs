//! PTX fuzzing: every generated kernel compiles to PTX, and `ptxas` accepts that PTX.
//!
//! Each input is compiled in-process (the emitter must not fail on a valid kernel); the
//! kernels are then assembled by `ptxas` in batches, as one module, because `ptxas` costs
//! far more than compiling a kernel ([`PtxBatches`]: a batch is emitted from the kernels'
//! own compilation, assembled without optimisation for one of the checked architectures,
//! taken in turn, and a kernel whose PTX was assembled before is not assembled again). A
//! rejected batch is checked kernel by kernel, fully, and the failing kernel printed, so
//! the report names the culprit even though the crash is raised on the input that
//! completed the batch (the last partial batch of a run is not assembled). Without
//! `ptxas` (see `scripts/install-ptxas.sh`) the PTX is generated but not assembled, and a
//! message says so.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use warplift_codegen::isa::ptx::ptxas::find_ptxas;
use warplift_fuzzgen::{generate, PtxBatches};

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

static BATCHES: Mutex<Option<PtxBatches>> = Mutex::new(None);

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(case) = generate(&mut u) else {
        return;
    };
    let mut batches = BATCHES.lock().unwrap_or_else(|e| e.into_inner());
    let batches = batches.get_or_insert_with(|| PtxBatches::new(ptxas().cloned()));
    if let Err(m) = batches.add(case) {
        panic!("{m}");
    }
});
