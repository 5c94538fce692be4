//! Helpers that more than one pass uses, kept out of the passes themselves so that no
//! pass imports from inside another (and no IR pass from inside a machine pass).
//!
//! - `loop_order`: the loop-aware block order of a region (cycles kept whole), shared
//!   by the two linearizations;
//! - `region_order`: a region's reverse post-order and its nested back edges (Algorithm 1's
//!   order), shared by the two linearizations;
//! - `ssa_regions`: the regions of an SSA kernel the IR-level restructurings work on;
//! - `ssa_repair`: rebuilds SSA form for the variables a restructuring of the IR made
//!   (`linearize_ssa`, `restructure`).

pub(crate) mod loop_order;
pub(crate) mod region_order;
pub mod ssa_regions;
pub(crate) mod ssa_repair;
