//! The work per input of the `differential` and `ptx` fuzz targets (fuzz/fuzz_targets),
//! on random inputs for a fixed time, and the executions per second it allows: what a
//! fuzzing run can reach at most, without libFuzzer's mutation and instrumentation. The
//! differential part also prints how many inputs chose each pipeline and warp width, to
//! show that a run covers all of them.
//!
//! `cargo run --release -p warplift-fuzzgen --example fuzz_rate -- [seconds] [ptxas] [part]`
//! (10 s each by default; `part` is `differential` or `ptx` to run only that one, so that
//! `/usr/bin/time` gives its CPU time, `ptxas` included; the PTX part assembles with `ptxas` when its path is given, in
//! batches, unoptimised and for each checked architecture in turn, as the target does). Run it with `RAYON_NUM_THREADS=1` for a one-core rate.
use arbitrary::Unstructured;
use rand::{Rng, RngCore, SeedableRng};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use warplift_fuzzgen::{check_case, generate, CheckConfig, PtxBatches};

fn main() {
    let mut args = std::env::args().skip(1);
    let seconds: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(10.0);
    let ptxas = args.next().filter(|p| !p.is_empty()).map(PathBuf::from);
    let part = args.next().unwrap_or_default();
    let limit = Duration::from_secs_f64(seconds);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    // An input as libFuzzer's default maximum length allows: up to 4096 bytes.
    let mut input = move || {
        let mut bytes = vec![0u8; rng.random_range(16..4096)];
        rng.fill_bytes(&mut bytes);
        bytes
    };

    if part != "ptx" {
        differential(limit, &mut input);
    }
    if part != "differential" {
        ptx(limit, &mut input, ptxas);
    }
}

/// The `differential` target's work on random inputs for `limit`.
fn differential(limit: Duration, input: &mut impl FnMut() -> Vec<u8>) {
    let start = Instant::now();
    let (mut execs, mut failures) = (0u64, 0u64);
    let mut pipelines: BTreeMap<String, u64> = BTreeMap::new();
    let mut widths: BTreeMap<u32, u64> = BTreeMap::new();
    while start.elapsed() < limit {
        let data = input();
        let mut u = Unstructured::new(&data);
        execs += 1;
        let Ok(config) = CheckConfig::sample(&mut u) else {
            continue;
        };
        let Ok(case) = generate(&mut u) else {
            continue;
        };
        *pipelines
            .entry(config.pipelines[0].name.clone())
            .or_default() += 1;
        *widths.entry(config.warp_widths[0]).or_default() += 1;
        if let Err(m) = check_case(&case, &config) {
            failures += 1;
            eprintln!("{m}");
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "differential: {execs} executions in {secs:.1} s = {:.1}/s, {failures} mismatches",
        execs as f64 / secs
    );
    println!(
        "  {} of {} pipelines chosen: {pipelines:?}",
        pipelines.len(),
        CheckConfig::default().pipelines.len()
    );
    println!("  widths: {widths:?}");
}

/// The `ptx` target's work on random inputs for `limit`.
fn ptx(limit: Duration, input: &mut impl FnMut() -> Vec<u8>, ptxas: Option<PathBuf>) {
    let start = Instant::now();
    let mut execs = 0u64;
    let assembling = ptxas.is_some();
    let mut batches = PtxBatches::new(ptxas);
    while start.elapsed() < limit {
        let data = input();
        execs += 1;
        let Ok(case) = generate(&mut Unstructured::new(&data)) else {
            continue;
        };
        if let Err(m) = batches.add(case) {
            eprintln!("{m}");
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "ptx: {execs} executions in {secs:.1} s = {:.1}/s ({})",
        execs as f64 / secs,
        if assembling {
            format!(
                "{} kernels assembled in batches of {}",
                batches.assembled(),
                PtxBatches::SIZE
            )
        } else {
            "not assembled: no ptxas given".into()
        }
    );
}
