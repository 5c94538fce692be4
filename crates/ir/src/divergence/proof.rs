//! Which branches of a kernel may split a warp, settled without the whole analysis when a
//! cheap proof covers every one of them.
//!
//! Lowering and the convergence pass ask one question of the divergence analysis: may
//! the `brif` or `br_table` ending a block split the warp? The analysis answers it for
//! every value and branch at once, a fixpoint over data dependence, sync dependence and
//! temporal divergence that needs the post-dominator tree and the loop forest and costs
//! about a twelfth of a plain compilation of branchy code. Most kernels' branches need
//! none of that. The analysis's other rules only ever add divergent values, never remove
//! one, so a value divergent by *data dependence* alone — computed from a source
//! (`thread_id`, ...), through instructions and block parameters, by any chain of
//! operands and branch arguments — is divergent whatever the joins, loops and irreducible
//! cycles add, under either reconvergence model. When every conditional branch of the
//! kernel tests such a value, each is divergent in the analysis too and no other block
//! ends in one: the answer is the analysis's without running it. When a single branch is
//! not settled that way (its condition is uniform, or divergent only by a join or a loop
//! exit), the caller's analysis decides, exactly as before.
//!
//! # How
//!
//! Data dependence is propagated forward over the layout: an instruction's result is
//! divergent when the instruction is a source or reads a divergent operand, and a block
//! parameter when any branch passes it a divergent argument. One walk in layout order
//! carries divergence along every edge that goes forward in the layout; only an argument
//! passed back (a loop's back edge) to a parameter not yet divergent asks for another
//! walk. The walks stop as soon as every branch condition is divergent (more walks could
//! only add divergent values), when a walk adds nothing a later block could not already
//! see, or after [`MAX_WALKS`] (a deeply nested loop that needs more is left to the
//! analysis): each walk is linear in the kernel, so the proof is too.
//!
//! The sources are the analysis's ("Sources" in [`crate::divergence`]): `thread_id`,
//! `lane_id`, atomics, `local_addr`, loads from local memory, and loads from global or
//! shared memory when the kernel writes that space anywhere ([`WrittenSpaces`]).

use super::{Divergence, WrittenSpaces};
use crate::entities::{Block, Value};
use crate::function::Function;
use crate::instructions::InstructionData;
use cranelift_entity::EntityRef;
use std::sync::Arc;

/// The most walks over the kernel the proof makes before it leaves the kernel to the
/// analysis: each back edge that carries divergence to a parameter needs one more, and
/// loops nested this deep with divergence entering only by their back edges are rare.
pub const MAX_WALKS: usize = 4;

/// The divergent branches of a kernel: proven by data dependence, or the analysis's.
#[derive(Clone, Debug)]
pub enum DivergentBranches {
    /// Every conditional branch of the kernel, each proven divergent by data dependence
    /// (a flag per block).
    Proven(Vec<bool>),
    /// The divergence analysis's answer.
    Analysis(Arc<Divergence>),
}

impl DivergentBranches {
    /// The divergent branches of `func`: proven from their conditions when every one of
    /// them can be ([`prove_divergent_branches`]), else by the analysis `analysis` returns
    /// (called only then).
    pub fn find_with(func: &Function, analysis: impl FnOnce() -> Arc<Divergence>) -> Self {
        match prove_divergent_branches(func) {
            Some(blocks) => DivergentBranches::Proven(blocks),
            None => DivergentBranches::Analysis(analysis()),
        }
    }

    /// Does `block` end with a branch that may split the warp?
    pub fn is_divergent_branch(&self, block: Block) -> bool {
        match self {
            DivergentBranches::Proven(blocks) => blocks.get(block.index()) == Some(&true),
            DivergentBranches::Analysis(d) => d.is_divergent_branch(block),
        }
    }

    /// The blocks ending in a divergent branch, in block order.
    pub fn blocks(&self) -> Vec<Block> {
        match self {
            DivergentBranches::Proven(blocks) => blocks
                .iter()
                .enumerate()
                .filter(|&(_, &d)| d)
                .map(|(b, _)| Block::new(b))
                .collect(),
            DivergentBranches::Analysis(d) => d.divergent_branches(),
        }
    }
}

/// A flag per block: does it end in a conditional branch proven divergent by data
/// dependence? `Some` only when every conditional branch of `func` ends its block and is
/// proven so, and then the flags are exactly the divergence analysis's divergent branches
/// under either reconvergence model; `None` leaves the question to the analysis (as does
/// anything malformed: an instruction, value or block that is not the function's).
pub fn prove_divergent_branches(func: &Function) -> Option<Vec<bool>> {
    let dfg = &func.dfg;
    // One look at every instruction first: which spaces the kernel writes (a load's being
    // a source depends on it), where each block sits in the layout, and the conditions to
    // prove. The walks read values and blocks only through checked lookups: anything that
    // is not the function's ends the proof.
    let mut written = WrittenSpaces::default();
    let mut position = vec![u32::MAX; dfg.num_blocks()];
    let mut conditions: Vec<(Block, Value)> = Vec::new();
    for (k, &b) in func.layout.blocks().iter().enumerate() {
        *position.get_mut(b.index())? = k as u32;
        let insts = func.layout.block_insts(b);
        for (i, &inst) in insts.iter().enumerate() {
            if !dfg.insts.is_valid(inst) {
                return None;
            }
            match &dfg.insts[inst] {
                InstructionData::Brif { arg, .. } | InstructionData::BrTable { arg, .. } => {
                    // A branch before the end of its block is the analysis's to judge.
                    if i + 1 != insts.len() {
                        return None;
                    }
                    conditions.push((b, *arg));
                }
                data => written.note(data),
            }
        }
    }

    let mut divergent = vec![false; dfg.num_values()];
    for _ in 0..MAX_WALKS {
        // Did the walk make divergent a parameter of a block it had already passed?
        let mut passed_back = false;
        for (k, &b) in func.layout.blocks().iter().enumerate() {
            for &inst in func.layout.block_insts(b) {
                let data = &dfg.insts[inst];
                if let Some(r) = dfg.inst_result(inst) {
                    if !*divergent.get(r.index())? {
                        let mut d = written.is_source(data);
                        for a in data.args() {
                            d |= *divergent.get(a.index())?;
                        }
                        divergent[r.index()] = d;
                    }
                }
                for call in data.branch_destinations() {
                    if !dfg.block_is_valid(call.block) {
                        return None;
                    }
                    let params = dfg.block_params(call.block);
                    for (a, p) in call.args.iter().zip(params) {
                        if *divergent.get(a.index())? && !*divergent.get(p.index())? {
                            divergent[p.index()] = true;
                            // A block not in the layout has no instructions to reach.
                            passed_back |= position[call.block.index()] <= k as u32;
                        }
                    }
                }
            }
        }
        if conditions
            .iter()
            .all(|&(_, c)| divergent.get(c.index()) == Some(&true))
        {
            let mut blocks = vec![false; dfg.num_blocks()];
            for &(b, _) in &conditions {
                blocks[b.index()] = true;
            }
            return Some(blocks);
        }
        if !passed_back {
            return None;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::divergence::Reconvergence;
    use crate::parser::parse_function;

    fn proof_and_analysis(text: &str) -> (Option<Vec<Block>>, Vec<Block>) {
        let func = parse_function(text).expect("parse");
        crate::verifier::verify_function(&func).expect("valid IR");
        let proven = prove_divergent_branches(&func).map(|f| DivergentBranches::Proven(f).blocks());
        let analysis = Divergence::compute_for(&func, Reconvergence::Ipdom);
        (proven, analysis.divergent_branches())
    }

    /// Divergence reaches a branch through a join's parameters and a loop's back edge; the
    /// proof follows both, in as many walks as the back edges need.
    #[test]
    fn divergence_through_block_parameters_and_back_edges() {
        let (proven, analysis) = proof_and_analysis(
            "kernel %k(n: i32) {
            block0(v0: i32):
                v1 = thread_id x
                v2 = iconst.i32 0
                jump block1(v2, v2)
            block1(v3: i32, v4: i32):
                v5 = icmp slt v4, v0
                brif v5, block2, block3
            block2:
                v6 = iadd v3, v1
                v7 = iconst.i32 1
                v8 = iadd v4, v7
                jump block1(v8, v6)
            block3:
                return
            }",
        );
        // v4 turns divergent on the back edge (v6 reads thread_id), after the first walk
        // has passed the branch that tests it: the second walk proves the branch.
        assert_eq!(proven, Some(analysis));
    }

    /// A condition that is divergent only by sync dependence (a join's parameter with
    /// uniform arguments) is not proven: the analysis decides.
    #[test]
    fn a_join_of_uniform_arguments_is_left_to_the_analysis() {
        let (proven, analysis) = proof_and_analysis(
            "kernel %k(n: i32) {
            block0(v0: i32):
                v1 = thread_id x
                v6 = iconst.i32 0
                v7 = icmp eq v1, v6
                brif v7, block1, block2
            block1:
                v2 = iconst.i32 1
                jump block3(v2)
            block2:
                v3 = iconst.i32 2
                jump block3(v3)
            block3(v4: i32):
                v8 = icmp eq v4, v6
                brif v8, block4, block5
            block4:
                jump block5
            block5:
                return
            }",
        );
        assert_eq!(proven, None);
        assert_eq!(analysis, vec![Block::new(0), Block::new(3)]);
    }

    /// A uniform branch anywhere leaves the kernel to the analysis.
    #[test]
    fn a_uniform_branch_is_left_to_the_analysis() {
        let (proven, analysis) = proof_and_analysis(
            "kernel %k(n: i32) {
            block0(v0: i32):
                v1 = thread_id x
                v2 = iconst.i32 0
                v3 = icmp eq v1, v2
                brif v3, block1, block2
            block1:
                v4 = icmp eq v0, v2
                brif v4, block2, block3
            block2:
                jump block3
            block3:
                return
            }",
        );
        assert_eq!(proven, None);
        assert_eq!(analysis, vec![Block::new(0)]);
    }

    /// A loop whose parameters pass divergence one to the next round the back edge, `n`
    /// of them: the condition, the first, turns divergent only in the `n`th walk.
    fn shifting_loop(n: usize) -> String {
        let mut text = String::from(
            "kernel %k(n: i32) {\nblock0(v0: i32):\n    v3 = iconst.i32 0\n    v1 = icmp eq v0, v3\n",
        );
        text.push_str(&format!("    jump block1({})\n", vec!["v1"; n].join(", ")));
        let params: Vec<String> = (0..n).map(|i| format!("v{}: i1", 10 + i)).collect();
        text.push_str(&format!("block1({}):\n", params.join(", ")));
        text.push_str("    v4 = thread_id x\n    v2 = icmp eq v4, v3\n");
        text.push_str("    brif v10, block2, block3\nblock2:\n");
        // Each parameter takes the next one's value round the back edge, the last v2.
        let mut args: Vec<String> = (1..n).map(|i| format!("v{}", 10 + i)).collect();
        args.push("v2".to_string());
        text.push_str(&format!("    jump block1({})\n", args.join(", ")));
        text.push_str("block3:\n    return\n}\n");
        text
    }

    /// Divergence that needs more walks than [`MAX_WALKS`] to reach a condition is left to
    /// the analysis rather than walked again and again; one walk fewer is proven.
    #[test]
    fn the_walks_are_bounded() {
        let (proven, analysis) = proof_and_analysis(&shifting_loop(MAX_WALKS));
        assert_eq!(proven, Some(analysis));
        let (proven, analysis) = proof_and_analysis(&shifting_loop(MAX_WALKS + 1));
        assert_eq!(proven, None);
        assert_eq!(analysis, vec![Block::new(1)]);
    }

    /// Malformed functions are left to the analysis, without a panic.
    #[test]
    fn unknown_values_and_blocks_are_left_to_the_analysis() {
        let mut func = parse_function(
            "kernel %k() {
            block0:
                v0 = thread_id x
                brif v0, block1, block1
            block1:
                return
            }",
        )
        .unwrap();
        assert!(prove_divergent_branches(&func).is_some());
        let brif = func.layout.last_inst(Block::new(0)).unwrap();
        func.dfg.insts[brif].args_mut()[0] = Value::new(999);
        assert_eq!(prove_divergent_branches(&func), None);
    }
}
