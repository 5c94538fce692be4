//! The targets: each turns final machine IR into something a machine runs.
//!
//! - [`ptx`]: PTX text for NVIDIA GPUs, checked by NVIDIA's `ptxas`.

pub mod ptx;
