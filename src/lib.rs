//! x
pub use warplift_ir as ir;
