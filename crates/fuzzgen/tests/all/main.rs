//! The integration tests of `warplift-fuzzgen`, one module per subject, built as one test binary:
//! each test binary links the whole workspace, so one per crate keeps the build short.
//! `cargo test -p warplift-fuzzgen --test all MODULE::` runs one module's tests. A new test file
//! goes in this folder with its `mod` line below.

mod cfg_family;
mod cfg_family_linearize;
mod cfg_family_restructure;
mod coverage;
mod differential;
mod divergence_proof;
mod linearize_claims;
mod linearize_redundancy;
mod ptx;
mod regressions;
