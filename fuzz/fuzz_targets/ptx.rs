//! PTX fuzzing: every generated kernel compiles to PTX, and `ptxas` accepts that PTX.
//!
//! Each input is compiled in-process (the emitter must not fail on a valid kernel); the
//! kernels are then assembled by `ptxas` in batches of [`BATCH`], as one module, because
//! starting `ptxas` costs far more than compiling a kernel. A batch is assembled without
//! optimisation and for one of the checked architectures, taken in turn, which is what
//! makes the rate (optimising for all three cost 0.25 s per kernel). A rejected batch is
//! checked kernel by kernel, fully, and the failing kernel printed, so the report names
//! the culprit even though the crash is raised on the input that completed the batch (the
//! last partial batch of a run is not assembled). Without `ptxas` (see `scripts/install-ptxas.sh`) the
//! PTX is generated but not assembled, and a message says so.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use warplift_codegen::isa::ptx::ptxas::{find_ptxas, CHECKED_ARCHS};
use warplift_fuzzgen::{check_ptx_batch_quick, generate, GeneratedCase};

/// Kernels assembled per `ptxas` run.
const BATCH: usize = 64;

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

static PENDING: Mutex<Vec<GeneratedCase>> = Mutex::new(Vec::new());

/// Batches assembled so far: the next one's architecture.
static BATCHES: AtomicUsize = AtomicUsize::new(0);

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(case) = generate(&mut u) else {
        return;
    };
    let isa = warplift_codegen::lookup_by_name("ptx", Default::default()).unwrap();
    if let Err(e) = warplift_codegen::Context::new().compile(&case.func, isa.as_ref()) {
        panic!("PTX compilation failed: {e}\n{}", case.text);
    }
    let Some(p) = ptxas() else {
        return;
    };
    let batch = {
        let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        pending.push(case);
        if pending.len() < BATCH {
            return;
        }
        std::mem::take(&mut *pending)
    };
    let arch = CHECKED_ARCHS[BATCHES.fetch_add(1, Ordering::Relaxed) % CHECKED_ARCHS.len()];
    if let Err(m) = check_ptx_batch_quick(&batch, p, arch) {
        panic!("{m}");
    }
});
