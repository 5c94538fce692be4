//! The subcommands of `warplift`, one module each.

pub mod cfg;
pub mod compile;
pub mod divergence;
pub mod fmt;
pub mod interp;
pub mod objdump;
pub mod report;
pub mod run;
pub mod verify;
