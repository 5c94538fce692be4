//! The subcommands of `warplift`, one module each.

pub mod fmt;
pub mod verify;
