//! Guard optimisations (Section 4.2 of the paper), enabled by `linearize_opt`.

use super::{GuardRegs, Linearized};
use crate::mir::MirFunction;

/// What the optimisations did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct OptStats {
    /// Guard blocks removed.
    pub guards_removed: u64,
    /// Guard tests removed.
    pub tests_removed: u64,
    /// Edges redirected past a guard (O1).
    pub edges_redirected: u64,
}

/// Optimises the guards of one linearized region at `level` (1 to 3).
pub fn optimize(
    _func: &mut MirFunction,
    _lin: &Linearized,
    _regs: GuardRegs,
    _level: u32,
) -> OptStats {
    OptStats::default()
}
