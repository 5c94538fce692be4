//! The subcommands of `warplift`, one module each.

pub mod fmt;
pub mod interp;
pub mod verify;
