//! The subcommands of `warplift`, one module each.

pub mod cfg;
pub mod classify;
pub mod compile;
pub mod divergence;
pub mod fmt;
pub mod interp;
pub mod objdump;
pub mod report;
pub mod restructure_experiment;
pub mod run;
pub mod study;
pub mod verify;
