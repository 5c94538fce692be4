//! Branch flattening: Algorithm 1's `FlattenBranches` (line 18), which lets the enclosing
//! region see a nested divergent if-then(-else) as straight-line code (the paper's
//! Listings 1.10/1.11).
//!
//! A divergent `brif c, T, E` flattens when each side either goes straight to a common
//! block `J` (with arguments) or is a block that only the branch enters, holds short,
//! side-effect-free, non-faulting code, and jumps to `J`. Both sides' code then runs in
//! the branch's block, for every lane, and the arguments to `J` that differ become
//! `select c, x, y` — the branch becomes `jump J(...)`. Take Listing 1.10's even arm:
//!
//! ```text
//! block2:                                  block2:
//!     v15 = urem v2, v14                       v15 = urem v2, v14
//!     v93 = icmp ne v15, v92                   v93 = icmp ne v15, v92
//!     brif v93, block3, block4(v16)    ==>     v17 = imul v4, v6
//! block3:                                      v94 = select v93, v17, v16
//!     v17 = imul v4, v6                        jump block4(v94)
//!     jump block4(v17)
//! ```
//!
//! The enclosing branch's arms are now single blocks that both compute `b * c` from
//! values defined before it, and the next visit hoists it (the flattened common code of
//! Listing 1.11; the predicate `p` of the listing is the `select`'s condition). Flattening
//! also finishes what a Hoist or Sink left: Listing 1.3, once its product is sunk, keeps
//! only `b = 10` in one arm, and becomes one `select` — what LLVM's SimplifyCFG makes of it.
//!
//! This is the one transformation of the pass that runs instructions on lanes that would
//! not have run them, so it is limited to what cannot fault or write: no loads, stores,
//! atomics, barriers, and nothing slower than a multiplication (a division would trade a
//! divergent instruction for a slow convergent one). The cost model: with the branch
//! divergent, the flattened code issues `n_T + n_E + selects` instructions against
//! `1 + n_T + n_E` plus one jump per side block; flattening is done when it issues fewer
//! (at as many, the `select`s' latency before the jump makes it slower: a `brif` whose two
//! edges pass different arguments to one block costs as much as its `select`) and speculates at most [`MAX_SPECULATED`] instructions (what a warp that does not
//! diverge at run time pays in the worst case).

use super::cost::{benefit, MUL_LATENCY};
use super::edges::Edges;
use super::uses::Uses;
use cranelift_entity::packed_option::ReservedValue;
use warplift_ir::{Block, BlockCall, Function, Inst, InstructionData, Opcode};

/// The most instructions a flattening runs on lanes that would not have run them.
pub const MAX_SPECULATED: usize = 4;

/// What a flattening did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Flattened {
    /// The blocks whose edges changed.
    pub touched: Vec<Block>,
    /// Instructions moved from the sides into the branch's block.
    pub speculated: u64,
    /// `select`s made for the arguments to the join that differ.
    pub selects: u64,
    /// The jump that replaced the branch.
    pub jump: Option<Inst>,
}

/// One side of the branch: its block when it has one of its own, and where it goes.
struct Side {
    block: Option<Block>,
    /// Its instructions (a side of more is never flattened, so they fit in place).
    insts: [Inst; MAX_SPECULATED],
    len: usize,
    to: BlockCall,
}

impl Side {
    fn insts(&self) -> &[Inst] {
        &self.insts[..self.len]
    }
}

/// Flattens the divergent branch ending `block` when its shape and the cost model allow.
pub fn flatten(
    func: &mut Function,
    uses: &mut Uses,
    cfg: &Edges,
    block: Block,
) -> Option<Flattened> {
    let term = func.terminator(block)?;
    let InstructionData::Brif { arg, dests, .. } = func.dfg.insts[term].clone() else {
        return None;
    };
    let [t, e] = dests;
    let (st, se) = (side(func, cfg, block, &t)?, side(func, cfg, block, &e)?);
    let one_block = st.block.is_some() && st.block == se.block;
    if st.to.block != se.to.block || st.to.block == block || one_block {
        return None;
    }
    let speculated = st.len + se.len;
    let selects = st
        .to
        .args
        .iter()
        .zip(&se.to.args)
        .filter(|(x, y)| x != y)
        .count();
    let side_blocks = usize::from(st.block.is_some()) + usize::from(se.block.is_some());
    // Fewer instructions: `selects < 1 + side_blocks`.
    if speculated > MAX_SPECULATED || selects > side_blocks {
        return None;
    }
    let mut done = Flattened::default();
    let at_term = |func: &Function| func.layout.block_insts(block).len() - 1;
    for inst in st.insts().iter().chain(se.insts()) {
        func.layout.remove_inst(*inst);
        let at = at_term(func);
        func.layout.insert_inst(*inst, block, at);
        done.speculated += 1;
    }
    let mut args = Vec::with_capacity(st.to.args.len());
    for (&x, &y) in st.to.args.iter().zip(&se.to.args) {
        if x == y {
            args.push(x);
            continue;
        }
        let sel = func.dfg.make_inst(
            InstructionData::Ternary {
                opcode: Opcode::Select,
                args: [arg, x, y],
            },
            Some(func.dfg.value_type(x)),
        );
        func.srclocs[sel] = func.srclocs[term];
        let at = at_term(func);
        func.layout.insert_inst(sel, block, at);
        uses.add(func, sel);
        args.push(func.dfg.inst_result(sel).expect("a select has a result"));
        done.selects += 1;
    }
    let jump = func.dfg.make_inst(
        InstructionData::Jump {
            opcode: Opcode::Jump,
            dest: BlockCall::new(st.to.block, args),
        },
        None,
    );
    func.srclocs[jump] = func.srclocs[term];
    func.layout.remove_inst(term);
    func.layout.append_inst(jump, block);
    uses.add(func, jump);
    done.jump = Some(jump);
    done.touched = vec![block];
    for b in [st.block, se.block].into_iter().flatten() {
        done.touched.push(b);
        let jump = func.terminator(b).expect("a side ends in its jump");
        // Left empty: the pass removes its emptied blocks at the end, all at once.
        func.layout.remove_inst(jump);
    }
    Some(done)
}

/// Removes the divergent `br_table` ending `block` when every lane would go on from it to
/// one block with the same arguments: each destination is that block, or a block only
/// the table enters, without parameters, that only jumps there. That is what a
/// multi-way hoist leaves when every arm's code rose to the table. The table becomes
/// that jump; nothing is speculated (no arm holds an instruction), and the warp no
/// longer runs the arms' jumps one path after another.
pub fn flatten_table(
    func: &mut Function,
    uses: &mut Uses,
    cfg: &Edges,
    block: Block,
) -> Option<Flattened> {
    let term = func.terminator(block)?;
    let InstructionData::BrTable { dests, .. } = &func.dfg.insts[term] else {
        return None;
    };
    let mut to: Option<BlockCall> = None;
    let mut sides: Vec<Block> = Vec::new();
    for call in dests {
        let b = call.block;
        // A block that the table alone enters (however many entries name it), without
        // parameters, holding only a jump, is passed through.
        let own = call.args.is_empty()
            && func.dfg.block_params(b).is_empty()
            && b != block
            && cfg.preds(b).iter().all(|&p| p == block);
        let next = match func.terminator(b).map(|t| &func.dfg.insts[t]) {
            Some(InstructionData::Jump { dest, .. })
                if own && func.layout.block_insts(b).len() == 1 =>
            {
                if !sides.contains(&b) {
                    sides.push(b);
                }
                dest.clone()
            }
            _ => call.clone(),
        };
        if next.block == block || to.as_ref().is_some_and(|t| *t != next) {
            return None;
        }
        to = Some(next);
    }
    let to = to?;
    let jump = func.dfg.make_inst(
        InstructionData::Jump {
            opcode: Opcode::Jump,
            dest: to,
        },
        None,
    );
    func.srclocs[jump] = func.srclocs[term];
    func.layout.remove_inst(term);
    func.layout.append_inst(jump, block);
    uses.add(func, jump);
    let mut done = Flattened {
        touched: vec![block],
        jump: Some(jump),
        ..Flattened::default()
    };
    for b in sides {
        done.touched.push(b);
        let jump = func.terminator(b).expect("a side ends in its jump");
        // Left empty: the pass removes its emptied blocks at the end, all at once.
        func.layout.remove_inst(jump);
    }
    Some(done)
}

/// The side of `branch` that `dest` starts, when it can be flattened: the join itself, or
/// a block only `branch` enters, without parameters, of speculable instructions, ending
/// in a jump.
fn side(func: &Function, cfg: &Edges, branch: Block, dest: &BlockCall) -> Option<Side> {
    let b = dest.block;
    let own = dest.args.is_empty()
        && func.dfg.block_params(b).is_empty()
        && b != branch
        && cfg.preds(b) == [branch];
    if !own {
        return Some(Side {
            block: None,
            insts: [Inst::reserved_value(); MAX_SPECULATED],
            len: 0,
            to: dest.clone(),
        });
    }
    let term = func.terminator(b)?;
    let InstructionData::Jump { dest: to, .. } = &func.dfg.insts[term] else {
        return None;
    };
    let all = func.layout.block_insts(b);
    let body = &all[..all.len() - 1];
    // More than the flattening ever speculates: it declines the branch whatever the
    // other side is.
    if body.len() > MAX_SPECULATED {
        return None;
    }
    let mut insts = [Inst::reserved_value(); MAX_SPECULATED];
    insts[..body.len()].copy_from_slice(body);
    body.iter()
        .all(|&i| speculable(&func.dfg.insts[i]))
        .then(|| Side {
            block: Some(b),
            insts,
            len: body.len(),
            to: to.clone(),
        })
}

/// May the instruction run on lanes that would not have run it, at no more than a
/// multiplication's cost?
pub fn speculable(data: &InstructionData) -> bool {
    let op = data.opcode();
    !op.has_side_effects()
        && op.has_result()
        && op != Opcode::Load
        && benefit(data) <= i64::from(MUL_LATENCY)
}
