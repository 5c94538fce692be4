//! The integration tests of `warplift-emu`, one module per subject, built as one test binary:
//! each test binary links the whole workspace, so one per crate keeps the build short.
//! `cargo test -p warplift-emu --test all MODULE::` runs one module's tests. A new test file
//! goes in this folder with its `mod` line below (the shared helpers: `use crate::common;`).

mod common;
mod darm;

mod converge;
mod corpus;
mod darm_kernels;
mod divergence_soundness;
mod edge_blocks;
mod functional;
mod kernels;
mod licm;
mod linearize;
mod linearize_ssa;
mod meld;
mod object;
mod random_launches;
mod redundancy;
mod restructure;
mod runaway;
mod stats_golden;
mod uniform_branches;
