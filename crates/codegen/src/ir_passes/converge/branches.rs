//! Which branches the pass visits as divergent, found without the whole divergence
//! analysis when a cheaper proof settles every one of them.
//!
//! The pass asks one question of the divergence analysis ([`warplift_ir::divergence`]):
//! may the `brif` or `br_table` ending a block split the warp? The analysis answers it
//! for every value and branch of the kernel at once, a fixpoint over data dependence,
//! sync dependence and temporal divergence that costs a sixth of the pass on the bench
//! kernels. Most kernels' branches need none of that: a condition computed, by a chain of
//! instructions, from `thread_id` (or another source) is divergent by data dependence
//! alone, and the analysis's other rules only ever add divergent values, never remove
//! one. So when every conditional branch of the kernel tests such a condition, each is
//! divergent whatever the rest of the analysis finds, and no other block ends in one: the
//! answer is the analysis's, read off the conditions' operand chains. When a single
//! branch is not settled that way (its chain reaches a block parameter, whose divergence
//! depends on joins and loops, or only uniform values), the whole analysis runs, from the
//! analysis cache, as before. The proof is made on the kernel as the pass receives it,
//! before any move, as the analysis was.
//!
//! The sources are the analysis's ("Sources" in its documentation): `thread_id`,
//! `lane_id`, atomics, `local_addr`, loads from local memory, and loads from global or
//! shared memory when the kernel writes that space anywhere.

use crate::analysis::AnalysisCache;
use std::sync::Arc;
use warplift_ir::divergence::{Divergence, WrittenSpaces};
use warplift_ir::{Block, Function, InstructionData, Value, ValueDef};

/// The divergent branches of a kernel, as the pass found them when it started.
pub enum DivergentBranches {
    /// Every conditional branch of the kernel, each proven divergent by data dependence
    /// (indexed by block).
    Proven(Vec<bool>),
    /// The divergence analysis's answer.
    Analysis(Arc<Divergence>),
}

impl DivergentBranches {
    /// The divergent branches of `func`: proven from their conditions when every one of
    /// them can be, else by the divergence analysis of `analyses`.
    pub fn find(func: &Function, analyses: &mut AnalysisCache) -> DivergentBranches {
        match proven_map(func) {
            Some(blocks) => DivergentBranches::Proven(blocks),
            None => DivergentBranches::Analysis(analyses.divergence(func)),
        }
    }

    /// Does `block` end with a branch that may split the warp?
    pub fn is_divergent_branch(&self, block: Block) -> bool {
        match self {
            DivergentBranches::Proven(blocks) => blocks.get(block.as_u32() as usize) == Some(&true),
            DivergentBranches::Analysis(d) => d.is_divergent_branch(block),
        }
    }
}

/// What is known of a value while its operand chain is searched.
#[derive(Copy, Clone, PartialEq, Eq)]
enum State {
    Unseen,
    /// On the search's stack (a cycle of operands, in a malformed kernel, proves nothing).
    Open,
    Divergent,
    /// Not proven divergent by data dependence (it may still be, by another rule).
    Unproven,
}

/// The blocks ending in a divergent conditional branch, when every conditional branch of
/// `func` ends its block and tests a value divergent by data dependence from a source;
/// `None` otherwise (the analysis must decide).
pub fn proven(func: &Function) -> Option<Vec<Block>> {
    proven_map(func).map(|blocks| {
        blocks
            .iter()
            .enumerate()
            .filter(|&(_, &d)| d)
            .map(|(b, _)| Block::from_u32(b as u32))
            .collect()
    })
}

/// [`proven`], as a flag per block.
fn proven_map(func: &Function) -> Option<Vec<bool>> {
    let dfg = &func.dfg;
    let mut conditions: Vec<(Block, Value)> = Vec::new();
    let mut written = WrittenSpaces::default();
    for &b in func.layout.blocks() {
        let insts = func.layout.block_insts(b);
        for (k, &inst) in insts.iter().enumerate() {
            if !dfg.insts.is_valid(inst) {
                return None;
            }
            match &dfg.insts[inst] {
                InstructionData::Brif { arg, .. } | InstructionData::BrTable { arg, .. } => {
                    // A branch before the end of its block is the analysis's to judge.
                    if k + 1 != insts.len() {
                        return None;
                    }
                    conditions.push((b, *arg));
                }
                data => written.note(data),
            }
        }
    }
    let source = |data: &InstructionData| written.is_source(data);
    let mut state = vec![State::Unseen; dfg.num_values()];
    let mut stack: Vec<Value> = Vec::new();
    let mut divergent = vec![false; dfg.num_blocks()];
    for (b, cond) in conditions {
        // Depth first through the operands: a value is divergent when its instruction is
        // a source or any operand is divergent; a block parameter proves nothing.
        let state_of = |state: &[State], v: Value| state.get(v.as_u32() as usize).copied();
        // A condition that is no value of the kernel is the analysis's to judge.
        state_of(&state, cond)?;
        stack.clear();
        stack.push(cond);
        while let Some(&v) = stack.last() {
            let k = v.as_u32() as usize;
            let inst = match dfg.value_def(v) {
                ValueDef::Result(inst) if func.layout.inst_block(inst).is_some() => inst,
                _ => {
                    state[k] = State::Unproven;
                    stack.pop();
                    continue;
                }
            };
            let data = &dfg.insts[inst];
            match state[k] {
                State::Unseen if source(data) => {
                    state[k] = State::Divergent;
                    stack.pop();
                }
                State::Unseen => {
                    state[k] = State::Open;
                    // Operands are searched before the value is settled.
                    for &a in data.args() {
                        match state_of(&state, a) {
                            Some(State::Unseen) => stack.push(a),
                            Some(_) => {}
                            None => return None,
                        }
                    }
                }
                State::Open => {
                    let any = data
                        .args()
                        .iter()
                        .any(|&a| state[a.as_u32() as usize] == State::Divergent);
                    state[k] = if any {
                        State::Divergent
                    } else {
                        State::Unproven
                    };
                    stack.pop();
                }
                State::Divergent | State::Unproven => {
                    stack.pop();
                }
            }
        }
        if state[cond.as_u32() as usize] != State::Divergent {
            return None;
        }
        divergent[b.as_u32() as usize] = true;
    }
    Some(divergent)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the proof settles a corpus kernel, its divergent branches are exactly the
    /// divergence analysis's (under both reconvergence models); and it settles some
    /// kernels and leaves others to the analysis.
    #[test]
    fn proven_branches_are_the_analysis_branches() {
        let (mut settled, mut left) = (0, 0);
        for (path, func) in super::super::corpus_functions() {
            let Some(blocks) = proven(&func) else {
                left += 1;
                continue;
            };
            settled += 1;
            for model in [
                warplift_ir::divergence::Reconvergence::Ipdom,
                warplift_ir::divergence::Reconvergence::Independent,
            ] {
                let full = Divergence::compute_for(&func, model);
                assert_eq!(blocks, full.divergent_branches(), "{path:?} {model:?}");
            }
        }
        assert!(
            settled >= 10 && left >= 10,
            "{settled} settled, {left} left"
        );
    }
}
