//! The stable text format of a divergence analysis (`warplift divergence`).
//!
//! One header line names the kernel and the reconvergence model; then, block by block in
//! layout order, every value the block defines (parameters first, then instruction
//! results) and its conditional branch, each on one line with its flag and, when
//! divergent, the reason; then the loops with a divergent exit, the cycles assumed
//! divergent, and a count:
//!
//! ```text
//! kernel %k (reconvergence: ipdom)
//! block0:
//!   v0 uniform
//!   v1 divergent (source: thread_id)
//!   v2 divergent (data dependence on v1)
//!   brif divergent (data dependence on v2)
//! block3:
//!   v5 divergent (join of branch block0 at block3)
//! loops with a divergent exit: none
//! cycles assumed divergent: none
//! values: 3 divergent of 4; branches: 1 divergent of 1
//! ```
//!
//! The format changes only when the analysis's results do, so tests compare it whole.

use super::Divergence;
use crate::entities::Block;
use crate::function::Function;
use crate::instructions::InstructionData;
use core::fmt;

/// Displays a [`Divergence`] of a function in the stable text format.
pub struct DivergenceDisplay<'a> {
    div: &'a Divergence,
    func: &'a Function,
}

impl<'a> DivergenceDisplay<'a> {
    pub(super) fn new(div: &'a Divergence, func: &'a Function) -> Self {
        DivergenceDisplay { div, func }
    }
}

fn blocks_list(blocks: &[Block]) -> String {
    if blocks.is_empty() {
        "none".to_string()
    } else {
        blocks
            .iter()
            .map(|b| b.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for DivergenceDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (div, func) = (self.div, self.func);
        writeln!(
            f,
            "kernel %{} (reconvergence: {})",
            func.name,
            div.model().name()
        )?;
        let (mut values, mut divergent_values) = (0usize, 0usize);
        let (mut branches, mut divergent_branches) = (0usize, 0usize);
        for &b in func.layout.blocks() {
            if !func.dfg.block_is_valid(b) {
                continue;
            }
            writeln!(f, "{b}:")?;
            let params = func.dfg.block_params(b).iter().copied();
            let results = func
                .layout
                .block_insts(b)
                .iter()
                .filter(|&&i| func.dfg.insts.is_valid(i))
                .filter_map(|&i| func.dfg.inst_result(i));
            for v in params.chain(results) {
                values += 1;
                match div.value_reason(v) {
                    Some(r) => {
                        divergent_values += 1;
                        writeln!(f, "  {v} divergent ({r})")?;
                    }
                    None if div.is_divergent(v) => {
                        divergent_values += 1;
                        writeln!(f, "  {v} divergent (not analysed)")?;
                    }
                    None => writeln!(f, "  {v} uniform")?,
                }
            }
            let Some(term) = func.layout.last_inst(b) else {
                continue;
            };
            if !func.dfg.insts.is_valid(term) {
                continue;
            }
            let data = &func.dfg.insts[term];
            if matches!(
                data,
                InstructionData::Brif { .. } | InstructionData::BrTable { .. }
            ) {
                branches += 1;
                let op = data.opcode();
                match div.branch_reason(b) {
                    Some(r) => {
                        divergent_branches += 1;
                        writeln!(f, "  {op} divergent ({r})")?;
                    }
                    None => writeln!(f, "  {op} uniform")?,
                }
            }
        }
        writeln!(
            f,
            "loops with a divergent exit: {}",
            blocks_list(div.loops_with_divergent_exit())
        )?;
        writeln!(
            f,
            "cycles assumed divergent: {}",
            blocks_list(div.cycles_assumed_divergent())
        )?;
        writeln!(
            f,
            "values: {divergent_values} divergent of {values}; \
             branches: {divergent_branches} divergent of {branches}"
        )
    }
}
