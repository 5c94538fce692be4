//! Region replication (Section IV-C of the paper, case 2 of Definition 6 and Fig. 2):
//! melding a single basic block `A` of one side with a block `Y` inside a larger SESE
//! region `M` of the other side.
//!
//! The control structure of `M` is replicated around `A`: every block `X` of `M` other
//! than `Y` gets an empty copy `R_X` with the same terminator kind and parameter types,
//! and `A` itself stands at `Y`'s place. The copies' branches are *concretized*: along the
//! path of `M` from its entry to `Y`, each `R_X` branches, on a constant, to the copy of
//! the successor leading to `Y`, so a lane of `A`'s side always runs `A` and nothing else
//! (the paper's bold edge `%R1 → %A`); the copies off that path are never run by those
//! lanes. The replica `L'` is then isomorphic to `M` and the two meld as in case 1: the
//! lanes of both sides reconverge at every block of `M` on the path to `Y`, where before
//! they ran `A` and `M` one after the other.
//!
//! In block-parameter form the paper's φ nodes at `A`'s dominance frontier are the
//! arguments of `A`'s jump, which leaves the replica exactly where `Y`'s jump leaves
//! `M`. So that no other value of `A` needs carrying, `A` is replicated only when it
//! takes no parameters, ends in a jump, and its results are used only inside it; `Y` must
//! end in a jump out of `M` and take no parameters, and `M`'s entry no parameters either
//! (the edge into `A` enters `R_entry` unchanged). `Y` is the block of `M` with the
//! largest melding profitability `MP_B(A, Y)` (the paper: "the most melding
//! profitability"); `MP_S` of `L'` and `M` counts `A`'s shared cycles over the latencies of
//! `A` and all of `M` (the copies are empty).
//!
//! Melding a copy off the path with its block of `M` is no melding at all: only lanes of
//! `M`'s side reach it, so the melded block is that block as it was (no select, no
//! unpredication: the paper applies unpredication "only to the melded basic blocks").
//! The caller replicates in place and, when the cost model declines the melding, undoes
//! the replica ([`undo`]): copying the kernel for every candidate would make the pass
//! quadratic in the kernel's size on kernels with many candidates.

use super::cost::{block_latency, mp_block, shared_cycles};
use super::subgraph::Subgraph;
use std::collections::{HashMap, HashSet};
use warplift_ir::cfg::ControlFlowGraph;
use warplift_ir::{Block, BlockCall, Function, Inst, InstructionData, Opcode, Type, Value};

/// Where a single block would be placed in the other side's region.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Plan {
    /// The single block `A`.
    pub block: Block,
    /// The block `Y` of the region whose place `A` takes.
    pub at: Block,
    /// `MP_S` of the replica and the region.
    pub mp: f64,
}

/// The replica made by [`replicate`].
#[derive(Clone, Debug)]
pub struct Replica {
    /// The single block `A`.
    a: Block,
    /// The replicated subgraph `L'` (its blocks: the copies, and `A` at `Y`'s place).
    pub subgraph: Subgraph,
    /// The copies that the lanes of `A`'s side never run (off the path to `A`).
    pub absent: HashSet<Block>,
    /// The blocks made (the copies), the constants placed in the entry block, and the
    /// branches redirected from `A` to the replica's entry (instruction, destination):
    /// what [`undo`] takes back.
    made: (Vec<Block>, Vec<Inst>, Vec<(Inst, usize)>),
}

/// Takes back a replica that is not melded: the kernel's layout and branches are as
/// before [`replicate`] (the entities it made stay unused in the data-flow graph).
pub fn undo(func: &mut Function, rep: &Replica) {
    let (blocks, constants, redirected) = &rep.made;
    for &(inst, k) in redirected {
        func.dfg.insts[inst].branch_destinations_mut()[k].block = rep.a;
    }
    for &c in constants {
        func.layout.remove_inst(c);
    }
    func.layout.remove_blocks(blocks);
}

/// Can `single` (a one-block subgraph) be melded into `region` by replication, and where?
/// `side` holds the blocks of `single`'s side: every block `A` dominates is among them
/// (the region's join is reached by the other side too), so only they can read `A`'s
/// results.
pub fn plan(
    func: &Function,
    single: &Subgraph,
    region: &Subgraph,
    side: &HashSet<Block>,
) -> Option<Plan> {
    if !single.is_block() || region.is_block() {
        return None;
    }
    let a = single.entry;
    let jump_out = |b: Block, next: Block| {
        func.terminator(b).is_some_and(|t| {
            let d = func.inst(t);
            d.opcode() == Opcode::Jump && d.branch_destinations()[0].block == next
        }) && func.dfg.block_params(b).is_empty()
    };
    if !jump_out(a, single.next) || !func.dfg.block_params(region.entry).is_empty() {
        return None;
    }
    // `A`'s results are read only inside `A` (its jump's arguments included). Looking at
    // the side only keeps the pass linear in the kernel's size.
    let results: HashSet<Value> = func
        .layout
        .block_insts(a)
        .iter()
        .filter_map(|&i| func.dfg.inst_result(i))
        .collect();
    let escapes = side.iter().any(|&b| {
        b != a
            && func
                .layout
                .block_insts(b)
                .iter()
                .any(|&i| func.inst(i).all_values().any(|v| results.contains(&v)))
    });
    if escapes {
        return None;
    }
    let total: u64 = block_latency(func, a)
        + region
            .blocks
            .iter()
            .map(|&b| block_latency(func, b))
            .sum::<u64>();
    // The placement of the largest `MP_B(A, Y)` (the first, among equals).
    let mut best: Option<(f64, u64, Block)> = None;
    for &y in &region.blocks {
        if !jump_out(y, region.next) {
            continue;
        }
        let shared = shared_cycles(func, a, y);
        let mp = mp_block(func, a, y);
        if best.is_none_or(|(m, _, _)| mp > m) {
            best = Some((mp, shared, y));
        }
    }
    let (_, shared, at) = best?;
    let mp = if total == 0 {
        0.0
    } else {
        shared as f64 / total as f64
    };
    Some(Plan { block: a, at, mp })
}

/// The blocks of `region` on a shortest path from its entry to `at` (`at` excluded), each
/// mapped to the next block of the path.
fn path(cfg: &ControlFlowGraph<Block>, region: &Subgraph, at: Block) -> HashMap<Block, Block> {
    let inside: HashSet<Block> = region.blocks.iter().copied().collect();
    let mut parent: HashMap<Block, Block> = HashMap::new();
    let mut queue = std::collections::VecDeque::from([region.entry]);
    let mut seen = HashSet::from([region.entry]);
    while let Some(b) = queue.pop_front() {
        if b == at {
            break;
        }
        for &s in cfg.succs(b) {
            if inside.contains(&s) && seen.insert(s) {
                parent.insert(s, b);
                queue.push_back(s);
            }
        }
    }
    // Each block on the path, mapped to the next block towards `at`.
    let mut next = HashMap::new();
    let mut b = at;
    while let Some(&p) = parent.get(&b) {
        next.insert(p, b);
        b = p;
    }
    next
}

/// Replicates `region`'s control structure around `plan.block` (see the module
/// documentation); `single` is `A`'s subgraph. The edges into `A` enter the replica.
pub fn replicate(
    func: &mut Function,
    cfg: &ControlFlowGraph<Block>,
    single: &Subgraph,
    region: &Subgraph,
    plan: &Plan,
) -> Replica {
    let a = plan.block;
    let toward = path(cfg, region, plan.at);
    let mut copy: HashMap<Block, Block> = HashMap::from([(plan.at, a)]);
    let mut made_blocks = Vec::new();
    for &x in &region.blocks {
        if x == plan.at {
            continue;
        }
        let r = func.dfg.make_block();
        // A copy is made by whoever made the original (a pass's control-flow block
        // stays one, which the code generator may drop when it is a lone jump).
        func.dfg.set_block_origin(r, func.dfg.block_origin(x));
        made_blocks.push(r);
        func.layout.insert_block_after(r, a);
        for &p in &func.dfg.block_params(x).to_vec() {
            let ty = func.dfg.value_type(p);
            func.dfg.append_block_param(r, ty);
        }
        copy.insert(x, r);
    }
    let mut constants: HashMap<(Type, u64), Value> = HashMap::new();
    let mut made_consts: Vec<Inst> = Vec::new();
    let mut constant = |func: &mut Function, ty: Type, imm: u64| -> Value {
        if let Some(&v) = constants.get(&(ty, imm)) {
            return v;
        }
        let data = if imm == 0 {
            InstructionData::zero(ty)
        } else {
            InstructionData::UnaryImm {
                opcode: Opcode::Iconst,
                imm,
            }
        };
        let inst = func.dfg.make_inst(data, Some(ty));
        let block = func.layout.entry_block().expect("a kernel has an entry");
        let at = func.layout.block_insts(block).len().saturating_sub(1);
        func.layout.insert_inst(inst, block, at);
        made_consts.push(inst);
        let v = func.dfg.inst_result(inst).expect("a constant has a result");
        constants.insert((ty, imm), v);
        v
    };
    let mut absent = HashSet::new();
    for &x in &region.blocks {
        if x == plan.at {
            continue;
        }
        let r = copy[&x];
        if !toward.contains_key(&x) {
            absent.insert(r);
        }
        let term = func.terminator(x).expect("a side block ends in a branch");
        let mut data = func.inst(term).clone();
        let mut calls = Vec::new();
        for call in data.branch_destinations() {
            let (target, params) = match copy.get(&call.block) {
                Some(&c) => (c, call.block),
                None => (single.next, single.next),
            };
            let types: Vec<Type> = func
                .dfg
                .block_params(params)
                .iter()
                .map(|&p| func.dfg.value_type(p))
                .collect();
            let args: Vec<Value> = types.iter().map(|&ty| constant(func, ty, 0)).collect();
            calls.push(BlockCall::new(target, args));
        }
        for (d, call) in data.branch_destinations_mut().iter_mut().zip(calls) {
            *d = call;
        }
        if let InstructionData::Brif { arg, dests, .. } = &mut data {
            // Concretized: always towards `A` (off the path, never run by `A`'s side).
            let go_first = toward.get(&x).is_none_or(|&n| {
                let first = dests[0].block;
                first == copy[&n]
            });
            let ty = func.dfg.value_type(*arg);
            *arg = constant(func, ty, u64::from(go_first));
        }
        let inst = func.dfg.make_inst(data, None);
        func.layout.append_inst(inst, r);
    }
    // The edges into `A` enter the replica's entry (`A`'s predecessors are outside the
    // region and the replica: `A` is a subgraph of its own).
    let entry = copy[&region.entry];
    let mut redirected = Vec::new();
    let mut preds: Vec<Block> = cfg.preds(a).to_vec();
    preds.dedup();
    for b in preds {
        if let Some(t) = func.terminator(b) {
            for (k, call) in func.dfg.insts[t]
                .branch_destinations_mut()
                .iter_mut()
                .enumerate()
            {
                if call.block == a {
                    call.block = entry;
                    redirected.push((t, k));
                }
            }
        }
    }
    let blocks = region.blocks.iter().map(|x| copy[x]).collect();
    Replica {
        a,
        subgraph: Subgraph {
            entry,
            next: single.next,
            blocks,
        },
        absent,
        made: (made_blocks, made_consts, redirected),
    }
}
