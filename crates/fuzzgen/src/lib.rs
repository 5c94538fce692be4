//! Random kernels for differential testing and fuzzing.
//!
//! [`generate`] turns arbitrary bytes into a kernel that passes the verifier, terminates,
//! is free of data races and has defined results, together with a launch (grid and block
//! shape, arguments, buffers); see [`mod@gen`] for how each property is kept by
//! construction. [`check_case`] runs such a case on the reference interpreter and, after
//! every registered [`Pipeline`], on the emulator at several warp widths and register-file
//! sizes, and reports any difference as a [`Mismatch`] that prints the kernel and the
//! launch, ready to be saved as a corpus reproducer.
//!
//! The same code serves `cargo test` (over fixed seeds, [`GeneratedCase::from_seed`]) and
//! the `cargo fuzz` targets in `fuzz/`, which also use [`check_ptx`],
//! [`check_text_round_trip`], [`corrupt`] and [`check_object_bytes`].

pub mod cfg_family;
pub mod gen;
pub mod harness;
pub mod mutate;

pub use gen::{generate, generate_with, GenOptions, GeneratedCase, OUT_SLOTS};
pub use harness::{
    check_case, check_object_bytes, check_ptx, check_ptx_batch, check_text_round_trip, pipelines,
    CheckConfig, Mismatch, Pipeline, PtxBatches,
};
pub use mutate::corrupt;
