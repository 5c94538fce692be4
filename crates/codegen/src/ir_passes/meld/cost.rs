//! The cost model: per-opcode latencies and the melding profitability of the paper,
//! `MP_B` of two basic blocks and `MP_S` of two subgraphs (Section IV-C).
//!
//! The latencies are the emulator's default latency classes, as [`crate::converge::cost`]
//! states them (an ALU operation 4 cycles, a multiplication 4, the special-function unit
//! 20, shared memory 30, global and local memory 400). The paper weighs each LLVM opcode
//! by its latency from LLVM's cost model; warplift weighs each opcode by the class the
//! emulator charges it with, memory operations by their address space.
//!
//! `MP_B(b1, b2) = Σ_i min(freq(i, b1), freq(i, b2)) · w_i / (lat(b1) + lat(b2))`: the
//! fraction of the two blocks' cycles saved if every instruction kind they share were
//! melded, whatever its position. Two blocks with the same opcode profile score 0.5.
//! `MP_S` averages `MP_B` over the corresponding blocks of two isomorphic subgraphs,
//! weighted by their latencies.

use crate::converge::cost::{
    ALU_LATENCY, GLOBAL_LATENCY, MUL_LATENCY, SFU_LATENCY, SHARED_LATENCY,
};
use std::collections::HashMap;
use warplift_ir::{AddrSpace, Block, Function, InstructionData, Opcode};

/// The latency of a branch (`jump`, `brif`): one ALU issue.
pub const BRANCH_LATENCY: u32 = ALU_LATENCY;

/// The latency of a `select` that melding inserts for differing operands.
pub const SELECT_LATENCY: u32 = ALU_LATENCY;

/// The instruction kinds of `MP_B`'s sum: an opcode, with the address space for memory
/// operations (a shared load and a global load cost differently).
pub type Kind = (Opcode, Option<AddrSpace>);

/// The kind of an instruction.
pub fn kind(data: &InstructionData) -> Kind {
    (data.opcode(), data.addr_space())
}

/// The latency of an instruction, in the emulator's cycles.
pub fn latency(data: &InstructionData) -> u32 {
    latency_of_kind(kind(data))
}

/// The static latency of a block: the sum of its instructions' latencies.
pub fn block_latency(func: &Function, block: Block) -> u64 {
    func.layout
        .block_insts(block)
        .iter()
        .map(|&i| u64::from(latency(func.inst(i))))
        .sum()
}

/// The frequency of every instruction kind in a block.
fn profile(func: &Function, block: Block) -> HashMap<Kind, u64> {
    let mut freq = HashMap::new();
    for &i in func.layout.block_insts(block) {
        *freq.entry(kind(func.inst(i))).or_insert(0) += 1;
    }
    freq
}

/// The cycles two blocks could save if all their common instruction kinds were melded:
/// the numerator of `MP_B`.
pub fn shared_cycles(func: &Function, a: Block, b: Block) -> u64 {
    let (pa, pb) = (profile(func, a), profile(func, b));
    pa.iter()
        .filter_map(|(k, &n)| {
            pb.get(k).map(|&m| {
                let w = latency_of_kind(*k);
                n.min(m) * u64::from(w)
            })
        })
        .sum()
}

fn latency_of_kind((opcode, space): Kind) -> u32 {
    use Opcode::*;
    match opcode {
        Imul | Smulhi | Umulhi | Fma => MUL_LATENCY,
        Sdiv | Udiv | Srem | Urem | Fdiv | Sqrt => SFU_LATENCY,
        Load | Store | AtomicRmw | AtomicCas => match space {
            Some(AddrSpace::Shared) => SHARED_LATENCY,
            _ => GLOBAL_LATENCY,
        },
        _ => ALU_LATENCY,
    }
}

/// `MP_B(a, b)`, the melding profitability of two blocks (0 when both are empty).
pub fn mp_block(func: &Function, a: Block, b: Block) -> f64 {
    let total = block_latency(func, a) + block_latency(func, b);
    if total == 0 {
        return 0.0;
    }
    shared_cycles(func, a, b) as f64 / total as f64
}

/// `MP_S` of two isomorphic subgraphs, given their corresponding blocks:
/// `Σ MP_B(b1, b2) · (lat(b1) + lat(b2)) / Σ (lat(b1) + lat(b2))`, which is the shared
/// cycles of all pairs over the latency of both subgraphs.
pub fn mp_subgraph(func: &Function, pairs: &[(Block, Block)]) -> f64 {
    let (mut shared, mut total) = (0u64, 0u64);
    for &(a, b) in pairs {
        shared += shared_cycles(func, a, b);
        total += block_latency(func, a) + block_latency(func, b);
    }
    if total == 0 {
        0.0
    } else {
        shared as f64 / total as f64
    }
}
