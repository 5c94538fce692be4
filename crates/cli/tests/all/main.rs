//! The integration tests of `warplift-cli`, one module per subject, built as one test binary:
//! each test binary links the whole workspace, so one per crate keeps the build short.
//! `cargo test -p warplift-cli --test all MODULE::` runs one module's tests. A new test file
//! goes in this folder with its `mod` line below (the shared helpers: `use crate::common;`).

mod common;

mod cli;
mod converge;
mod divergence;
mod linearize_ssa;
mod meld;
mod restructure;
mod scale;
mod study;
