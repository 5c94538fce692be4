//! Generated kernels compile to PTX that `ptxas` accepts (for every checked architecture).
//! Without `ptxas` the test says so and only emits the PTX (on CI a missing `ptxas` fails).

use warplift_codegen::isa::ptx::ptxas::ptxas_for_tests;
use warplift_codegen::{lookup_by_name, Context, Settings};
use warplift_fuzzgen::{check_ptx, GeneratedCase, PtxBatches};

const SEEDS: u64 = 25;

#[test]
fn generated_kernels_assemble_with_ptxas() {
    let ptxas = ptxas_for_tests();
    let isa = lookup_by_name("ptx", Settings::default()).unwrap();
    for seed in 0..SEEDS {
        let case = GeneratedCase::from_seed(seed);
        match &ptxas {
            Some(p) => check_ptx(&case, p).unwrap_or_else(|m| panic!("seed {seed}: {m}")),
            None => {
                Context::new()
                    .compile(&case.func, isa.as_ref())
                    .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", case.text));
            }
        }
    }
}

/// The `ptx` fuzz target's batches: a kernel is queued once however often it comes, and a
/// batch emitted from the kernels' own compilations assembles (the kernels renamed apart).
#[test]
fn ptx_batches_assemble_each_distinct_kernel_once() {
    let Some(ptxas) = ptxas_for_tests() else {
        return;
    };
    let mut batches = PtxBatches::new(Some(ptxas));
    for seed in 0..4 {
        // Every kernel twice: the second is the same PTX and is not queued.
        for _ in 0..2 {
            batches.add(GeneratedCase::from_seed(seed)).unwrap();
        }
    }
    assert_eq!(
        batches.assembled(),
        0,
        "a batch is assembled only when full"
    );
    batches.flush().unwrap();
    assert_eq!(batches.assembled(), 4);
    batches.flush().unwrap();
    assert_eq!(batches.assembled(), 4, "nothing left to assemble");
}
