//! Prints the case of one seed and checks it.
fn main() {
    let seed: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let case = warplift_fuzzgen::GeneratedCase::from_seed(seed);
    println!("{}\n{}", case.text, case.launch_text);
    match warplift_fuzzgen::check_case(&case, &warplift_fuzzgen::CheckConfig::default()) {
        Ok(()) => println!("ok"),
        Err(m) => println!("MISMATCH: {m}"),
    }
}
