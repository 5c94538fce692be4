//! The cost model: what converging an instruction is worth, and what a renamed operand
//! costs, in the emulator's latency cycles.
//!
//! The benefit of executing a matched pair of instructions once, convergently, instead of
//! once per arm is the issue-to-result latency of the instruction the warp no longer runs
//! twice: the weights are the emulator's default latency classes (its `Latencies`: `alu`
//! 4, `mul` 4, `sfu` 20, `shared` 30, `global` 400 cycles), so a matched global load is
//! worth a hundred matched additions, as the paper's weighted benefit asks
//! (Section 3.1: "biased towards convergent execution of more expensive instructions").
//! The emulator crate depends on this one, not the other way round, so the numbers are
//! repeated here; a test of the umbrella crate checks that they stay equal.
//!
//! The cost of a renamed operand is what the warp issues for it: a hoist's `select`
//! before the branch is one ALU instruction run once; a sink's new parameter of the
//! reconvergence point is a move at the end of each arm, two for a divergent warp. A sink
//! also frees the parameter that received the pair's results (both arms now pass nothing
//! there): each matched expression rooted at the arms' jumps gets those two moves back.

use warplift_ir::{AddrSpace, InstructionData, Opcode};

/// The emulator's default latency of its `alu` class (cycles).
pub const ALU_LATENCY: u32 = 4;
/// The emulator's default latency of its `mul` class (cycles).
pub const MUL_LATENCY: u32 = 4;
/// The emulator's default latency of its `sfu` class (cycles).
pub const SFU_LATENCY: u32 = 20;
/// The emulator's default latency of shared-memory loads and atomics (cycles).
pub const SHARED_LATENCY: u32 = 30;
/// The emulator's default latency of global- and local-memory loads and atomics (cycles).
pub const GLOBAL_LATENCY: u32 = 400;

/// The emulator's default latency of a taken control transfer (cycles): what a branch or
/// jump that Split adds costs by default (the `converge_split_cost` setting).
pub const BRANCH_LATENCY: u32 = 4;

/// The benefit of converging one instruction: its latency class's cycles.
pub fn benefit(data: &InstructionData) -> i64 {
    use Opcode::*;
    let cycles = match data.opcode() {
        Imul | Smulhi | Umulhi | Fma => MUL_LATENCY,
        Sdiv | Udiv | Srem | Urem | Fdiv | Sqrt => SFU_LATENCY,
        Load | AtomicRmw | AtomicCas => match data.addr_space() {
            Some(AddrSpace::Shared) => SHARED_LATENCY,
            _ => GLOBAL_LATENCY,
        },
        _ => ALU_LATENCY,
    };
    i64::from(cycles)
}

/// The cost of one renamed operand: one ALU instruction (a `select` or a move).
pub fn copy_cost() -> i64 {
    i64::from(ALU_LATENCY)
}

/// The cost of a parameter of a reconvergence point: a move on each of the two edges
/// into it, and a divergent warp runs both arms.
pub fn join_param_cost() -> i64 {
    2 * copy_cost()
}

#[cfg(test)]
mod tests {
    use super::*;
    use warplift_ir::Value;

    #[test]
    fn loads_weigh_by_space_and_divisions_by_the_sfu() {
        let v = Value::from_u32(0);
        let load = |space| InstructionData::Load {
            opcode: Opcode::Load,
            space,
            arg: v,
            offset: 0,
        };
        assert_eq!(benefit(&load(AddrSpace::Global)), 400);
        assert_eq!(benefit(&load(AddrSpace::Local)), 400);
        assert_eq!(benefit(&load(AddrSpace::Shared)), 30);
        let bin = |opcode| InstructionData::Binary {
            opcode,
            args: [v, v],
        };
        assert_eq!(benefit(&bin(Opcode::Fdiv)), 20);
        assert_eq!(benefit(&bin(Opcode::Imul)), 4);
        assert_eq!(benefit(&bin(Opcode::Iadd)), 4);
        assert_eq!(copy_cost(), 4);
    }
}
