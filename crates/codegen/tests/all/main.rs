//! The integration tests of `warplift-codegen`, one module per subject, built as one test binary:
//! each test binary links the whole workspace, so one per crate keeps the build short.
//! `cargo test -p warplift-codegen --test all MODULE::` runs one module's tests. A new test file
//! goes in this folder with its `mod` line below (the shared bytecode helpers:
//! `use crate::simt_common as common;`).

mod simt_common;
// The restructuring bench's kernel: Figure 1's short circuit in sequence.
#[path = "../../../../benches/common/short_circuit.rs"]
mod short_circuit;

mod analysis_cache;
mod context;
mod converge;
mod divergence;
mod linearize;
mod linearize_ssa;
mod lower;
mod mir_exec;
mod pipeline;
mod restructure;
mod simt_bytecode;
mod simt_corpus;
mod simt_object;
mod verify_mir;
