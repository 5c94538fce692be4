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
//!
//! `MP_S` ranks candidate pairs; whether a pair is melded is decided on cycles
//! ([`Timing`]): a warp's time through the two subgraphs as they are, against its time
//! through the melded code, each as the emulator issues it (one instruction per cycle,
//! an operand waits for its producer's latency, a taken branch delays the next issue by
//! the branch latency). Melding costs selects, address arithmetic, and for every
//! unaligned run a branch and a jump per side, and a move for each zero an arm passes to
//! the run's tail for a value the other arm defines (block arguments become moves: they
//! made SB1-R's and SB4-R's melds issue more than the sides did, before such runs were
//! speculated); it pays only when the branch it melds
//! diverges. The divergence analysis says a branch *may* diverge, not how often: a
//! data-dependent branch (merge sort's take-left test, DCT's sign test) is often uniform
//! in a warp, and then the warp runs one side, not both. So the time compared is the
//! expectation with the branch divergent half the time ([`DIVERGENT_SHARE`]) and uniform
//! (either way, equally) otherwise: melding must beat the average of running both sides
//! and running one. A branch whose condition is a function of the thread index and the
//! block size is evaluated lane by lane ([`divergent_share`]) at the block sizes the
//! pass considers: SB1's lane parity and SB4's lane modulo 3 split every warp, so those
//! branches diverge every time (halving their gain would decline melds the emulator
//! measures faster, the paper's -R variants); SRAD's tile edges split one warp of a
//! block and leave the others all false, and its tile corners, on a uniform row test
//! too, fewer still, so melding what they guard pays in fewer warps than half.

use crate::converge::cost::{
    ALU_LATENCY, GLOBAL_LATENCY, MUL_LATENCY, SFU_LATENCY, SHARED_LATENCY,
};
use std::collections::HashMap;
use warplift_ir::cfg::{ControlFlowGraph, DominatorTree};
use warplift_ir::divergence::Divergence;
use warplift_ir::{
    AddrSpace, Block, Dim, Function, Inst, InstructionData, IntCC, Opcode, Value, ValueDef,
};

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

/// How many of a speculated run's next instructions (in the arms' alternating order)
/// [`speculated_order`] chooses from at each issue: a window, so that a run of `n`
/// instructions is ordered in `O(n · SCHEDULE_WINDOW)`.
const SCHEDULE_WINDOW: usize = 32;

/// The order in which a speculated run of unaligned instructions issues (`ts` of the
/// true side, `fs` of the false side). The arms are independent (neither reads what the
/// other defines: a value of one side does not reach the other), and each is often a
/// chain in which every instruction waits for the one before: SB1-R's arms, `iadd;
/// bxor; sshr; iadd` against `isub; iadd; ushr; bxor`, melded only at their loads,
/// multiplication and stores. One arm after the other, every issue of the run waits
/// the ALU latency of its producer, and the two chains' latencies add up. So the run is
/// list scheduled, as the emulator issues (one instruction per cycle, in order, each
/// when its operands are ready): starting from the two arms taken alternately, at each
/// issue the instruction (among the next [`SCHEDULE_WINDOW`] whose producers in the run
/// have issued) that can issue soonest, the one with the longest chain of latencies
/// after it among equals, then the earlier: each arm's instructions issue while the
/// other's results are on their way, and an instruction that waits for nothing in the
/// run (SB1-R's `isub b, a`, written after the chain) fills a cycle the chain would
/// have stalled. Values from outside the run count as ready.
pub fn speculated_order(func: &Function, ts: &[Inst], fs: &[Inst]) -> Vec<Inst> {
    let mut base = Vec::with_capacity(ts.len() + fs.len());
    for k in 0..ts.len().max(fs.len()) {
        base.extend(ts.get(k));
        base.extend(fs.get(k));
    }
    let n = base.len();
    // Each instruction's producers in the run, by index into `base`.
    let index: HashMap<Value, usize> = base
        .iter()
        .enumerate()
        .filter_map(|(k, &i)| func.dfg.inst_result(i).map(|r| (r, k)))
        .collect();
    let producers: Vec<Vec<usize>> = base
        .iter()
        .map(|&i| {
            func.inst(i)
                .all_values()
                .filter_map(|v| index.get(&v).copied())
                .collect()
        })
        .collect();
    let lat: Vec<u64> = base
        .iter()
        .map(|&i| u64::from(latency(func.inst(i))))
        .collect();
    // The longest chain of latencies from each instruction to the end of the run.
    let mut height = lat.clone();
    for k in (0..n).rev() {
        for &p in &producers[k] {
            height[p] = height[p].max(lat[p] + height[k]);
        }
    }
    let mut ready = vec![0u64; n];
    let mut done = vec![false; n];
    let mut out = Vec::with_capacity(n);
    let (mut now, mut first) = (0u64, 0usize);
    while out.len() < n {
        while done[first] {
            first += 1;
        }
        let mut best: Option<(u64, std::cmp::Reverse<u64>, usize)> = None;
        for k in (first..n).filter(|&k| !done[k]).take(SCHEDULE_WINDOW) {
            if producers[k].iter().any(|&p| !done[p]) {
                continue;
            }
            let at = producers[k].iter().map(|&p| ready[p]).fold(now, u64::max);
            let key = (at, std::cmp::Reverse(height[k]), k);
            if best.is_none_or(|b| key < b) {
                best = Some(key);
            }
        }
        // The earliest unscheduled instruction always qualifies (its producers come
        // before it in the run), so there is a choice.
        let (at, _, k) = best.expect("the first unscheduled instruction can issue");
        done[k] = true;
        ready[k] = at + lat[k];
        now = at + 1;
        out.push(base[k]);
    }
    out
}

/// The share of a divergent region's executions in which its branch is assumed to
/// diverge within a warp (the rest run one side, either side equally often).
pub const DIVERGENT_SHARE: f64 = 0.5;

/// A warp's issue timeline through straight-line code, as the emulator times it: one
/// issue per cycle, an instruction issues when its operands are ready (its producers'
/// latencies), and a taken branch makes the next issue wait the branch latency. Values
/// defined outside the timed code are ready at once.
#[derive(Clone, Debug, Default)]
pub struct Timing {
    now: u64,
    issued: u64,
    ready: HashMap<Value, u64>,
}

impl Timing {
    /// The cycle at which the next instruction could issue: the time taken so far.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// The instructions issued so far: what the warp takes of its SM's issue slots,
    /// which other warps would otherwise use (stalls, unlike issues, other warps hide).
    pub fn issued(&self) -> u64 {
        self.issued
    }

    /// When `v` is ready.
    pub fn ready(&self, v: Value) -> u64 {
        self.ready.get(&v).copied().unwrap_or(0)
    }

    /// Records that `v` is ready at `at`.
    pub fn define(&mut self, v: Value, at: u64) {
        self.ready.insert(v, at);
    }

    /// Issues an instruction whose operands are ready at `operands`, with result
    /// latency `latency`; returns when its result is ready.
    pub fn issue(&mut self, operands: impl IntoIterator<Item = u64>, latency: u32) -> u64 {
        let t = operands.into_iter().fold(self.now, u64::max);
        self.now = t + 1;
        self.issued += 1;
        t + u64::from(latency)
    }

    /// A taken branch was just issued: the next issue waits the branch latency.
    pub fn transfer(&mut self) {
        self.now += u64::from(BRANCH_LATENCY).saturating_sub(1);
    }

    /// Issues `inst` of `func` as it is (a branch is taken). A branch waits for its
    /// block arguments too: they become moves, or the block they enter reads them, as
    /// the melded terminator's selected arguments are waited for.
    pub fn run(&mut self, func: &Function, inst: Inst) {
        let data = func.inst(inst);
        let ops: Vec<u64> = data.all_values().map(|v| self.ready(v)).collect();
        let at = self.issue(ops, latency(data));
        if let Some(r) = func.dfg.inst_result(inst) {
            self.define(r, at);
        }
        if data.opcode().is_branch() {
            self.transfer();
        }
    }

    /// Runs every instruction of `blocks` in order (each block's terminator taken).
    pub fn run_blocks(&mut self, func: &Function, blocks: &[Block]) {
        for &b in blocks {
            for &i in func.layout.block_insts(b) {
                self.run(func, i);
            }
        }
    }
}

/// How a warp that runs a region's branch finds it: divergent, or all its lanes going
/// the first way, or all the second way (shares of the region's executions, summing to 1).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Shares {
    /// The share of executions in which the branch diverges within the warp.
    pub divergent: f64,
    /// The share in which every lane takes the first (true) side.
    pub first: f64,
    /// The share in which every lane takes the second (false) side.
    pub second: f64,
    /// Whether, at some block size the model evaluates, the branch splits no warp and
    /// some warp takes the first / the second side: melding can only cost there (LUD's
    /// `tid < block_dim / 2` from block 64 on), so the cost model bounds what it costs.
    pub uniform_at: [bool; 2],
}

impl Shares {
    /// What the divergence analysis alone says (the branch *may* diverge): divergent
    /// [`DIVERGENT_SHARE`] of the time, uniform either way equally otherwise.
    pub const UNKNOWN: Shares = Shares {
        divergent: DIVERGENT_SHARE,
        first: (1.0 - DIVERGENT_SHARE) / 2.0,
        second: (1.0 - DIVERGENT_SHARE) / 2.0,
        uniform_at: [false, false],
    };

    /// The expected time of a region's code given its time when the branch diverges and
    /// when all lanes go the first or the second way.
    pub fn expected(&self, divergent: u64, first: u64, second: u64) -> f64 {
        self.divergent * divergent as f64 + self.first * first as f64 + self.second * second as f64
    }
}

/// The block sizes at which [`divergent_share`] evaluates a condition on the thread
/// index when the launch's is not known (the `block_size_hint` setting is 0): the tile
/// sizes of the paper's benchmarks (and of SRAD and LUD in the corpus) range over these.
pub const BLOCKS: [u64; 5] = [16, 32, 64, 128, 256];

/// The warp width at which [`divergent_share`] looks for uniform warps when the
/// machine's is not known (the `warp_width_hint` setting is 0): NVIDIA's. A warp of 64
/// holds two of them, so it diverges whenever one of them does; judged in warps of 32,
/// a branch that splits only warps of 64 (LUD's `tid < block_dim / 2` at block 64) looks
/// uniform, and melding it is bounded as for a uniform branch.
pub const WARP: u64 = 32;

/// How often the branch on `cond` diverges in a warp ([`Shares`]). When `cond` is a
/// function of the thread's x index, the block's x size and constants alone (SB1's lane
/// parity, SB4's lane modulo 3, SRAD's tile edges `tid == 0` and
/// `tid == block_dim - 1`, LUD's `tid < block_dim / 2`), it is evaluated lane by lane at
/// each block size of [`BLOCKS`], among the lanes that reach the branch, in every warp
/// of [`WARP`] lanes: the shares are those of the warps that split, that are all true and
/// that are all false, averaged over the block sizes. `block_size` is the launch's block
/// size in x when the compiler is told it (the `block_size_hint` setting, as CUDA's
/// `__launch_bounds__` or PTX's `.reqntid`): the condition is then evaluated at that size
/// alone, so a branch that splits no warp there is judged uniform (melding it can only
/// cost) and one that splits every warp divergent, where the sizes of [`BLOCKS`] would
/// average the two (LUD's `tid < block_dim / 2`, divergent at blocks 16 and 32, uniform
/// from 64 on in warps of 32). `warp_width` is the machine's warp width when the
/// compiler is told it (the `warp_width_hint` setting): the warps are of that many
/// lanes instead of [`WARP`] (LUD's branch at block 64 splits its one warp of 64).
/// SB1's parity splits every warp
/// (divergent every time); SRAD's `tid == 0` splits one warp of a block and leaves the
/// others all false, so melding its sides pays in that warp only and costs in the others.
/// A condition `u & p` or `u | p` whose operand `u` is uniform (by `divergence`; SRAD's
/// corner tests, `y == 0 & tid == 0`, on the row a loop walks) and `p` such a function
/// is `p` when `u` lets it decide (as often as [`true_share`] finds), and uniform
/// otherwise. Any other
/// condition has [`Shares::UNKNOWN`]. `guards` are the branches the region's entry is
/// control dependent on, as [`guards`] finds them: a lane reaches the region only where
/// each guard that is also such a function has the value given (the others cannot be
/// evaluated and filter no lane).
pub fn divergent_share(
    func: &Function,
    divergence: &Divergence,
    cond: Value,
    guards: &[(Value, bool)],
    block_size: Option<u64>,
    warp_width: Option<u64>,
) -> Shares {
    let warp = warp_width.filter(|&w| w > 0).unwrap_or(WARP);
    let hinted = block_size.map(|b| [b]);
    let blocks: &[u64] = match &hinted {
        Some(b) => b,
        None => &BLOCKS,
    };
    let probe = Lane {
        tid: 0,
        bdim: blocks[0],
    };
    // The lane part of the condition, and the uniform operand with which it is combined
    // (`true` for `&`, `false` for `|`).
    let (lane_part, uniform) = if lane_value(func, cond, probe, 0).is_some() {
        (cond, None)
    } else {
        let ValueDef::Result(inst) = func.dfg.value_def(cond) else {
            return Shares::UNKNOWN;
        };
        let InstructionData::Binary { opcode, args } = *func.inst(inst) else {
            return Shares::UNKNOWN;
        };
        let and = match opcode {
            Opcode::Band => true,
            Opcode::Bor => false,
            _ => return Shares::UNKNOWN,
        };
        if func.dfg.value_type(cond).bits() != 1 {
            return Shares::UNKNOWN;
        }
        let lane = |v: Value| lane_value(func, v, probe, 0).is_some();
        let (part, u) = match (lane(args[0]), lane(args[1])) {
            (true, false) if divergence.is_uniform(args[1]) => (args[0], args[1]),
            (false, true) if divergence.is_uniform(args[0]) => (args[1], args[0]),
            _ => return Shares::UNKNOWN,
        };
        // How often `u` lets `p` decide: `u` true for `&`, false for `|`.
        let decides = if and {
            true_share(func, u)
        } else {
            1.0 - true_share(func, u)
        };
        (part, Some((and, decides)))
    };
    let (mut sum, mut sizes) = ([0.0f64; 3], 0u32);
    let mut uniform_at = [false, false];
    for &bdim in blocks {
        // Warps that split, that are all true, all false.
        let mut count = [0u64; 3];
        for w in 0..bdim.div_ceil(warp) {
            let mut seen = [false; 2];
            for tid in w * warp..((w + 1) * warp).min(bdim) {
                let lane = Lane { tid, bdim };
                let runs = guards.iter().all(|&(g, want)| {
                    lane_value(func, g, lane, 0).is_none_or(|x| (x & 1 == 1) == want)
                });
                if !runs {
                    continue;
                }
                match lane_value(func, lane_part, lane, 0) {
                    Some(x) => seen[usize::from(x & 1 == 1)] = true,
                    None => return Shares::UNKNOWN,
                }
            }
            match seen {
                [true, true] => count[0] += 1,
                [false, true] => count[1] += 1,
                [true, false] => count[2] += 1,
                [false, false] => {}
            }
        }
        let reached: u64 = count.iter().sum();
        if reached > 0 && count[0] == 0 {
            uniform_at[0] |= count[1] > 0;
            uniform_at[1] |= count[2] > 0;
        }
        if reached > 0 {
            sizes += 1;
            for (s, c) in sum.iter_mut().zip(count) {
                *s += c as f64 / reached as f64;
            }
        }
    }
    if sizes == 0 {
        return Shares::UNKNOWN;
    }
    let [d, t, f] = sum.map(|s| s / f64::from(sizes));
    match uniform {
        None => Shares {
            divergent: d,
            first: t,
            second: f,
            uniform_at,
        },
        // `u & p`: all false when `u` is; `p` otherwise (`q`: how often `u` is true).
        Some((true, q)) => Shares {
            divergent: q * d,
            first: q * t,
            second: (1.0 - q) + q * f,
            uniform_at,
        },
        // `u | p`: all true when `u` is; `p` otherwise (`q`: how often `u` is false).
        Some((false, q)) => Shares {
            divergent: q * d,
            first: (1.0 - q) + q * t,
            second: q * f,
            uniform_at,
        },
    }
}

/// How often the uniform condition `u` is true, over the passes through the code that
/// tests it: where `u` is `x == k` (or `x != k`) with `k` a constant and `x` a loop's
/// counter, running from a constant `a` by steps of 1 while `x < n` for a constant `n`
/// (SRAD's corner tests `y == 0` and `y == 7` on the 8 rows its loop walks), once in
/// `n - a` passes (never when `k` is outside); half the time otherwise.
fn true_share(func: &Function, u: Value) -> f64 {
    let unknown = 0.5;
    let ValueDef::Result(inst) = func.dfg.value_def(u) else {
        return unknown;
    };
    let InstructionData::IntCompare { cond, args, .. } = *func.inst(inst) else {
        return unknown;
    };
    let equal = match cond {
        IntCC::Equal => true,
        IntCC::NotEqual => false,
        _ => return unknown,
    };
    let (x, k) = match (constant(func, args[0]), constant(func, args[1])) {
        (None, Some(k)) => (args[0], k),
        (Some(k), None) => (args[1], k),
        _ => return unknown,
    };
    let Some((a, n)) = counter(func, x) else {
        return unknown;
    };
    let hit = if (a..n).contains(&k) {
        1.0 / (n - a) as f64
    } else {
        0.0
    };
    if equal {
        hit
    } else {
        1.0 - hit
    }
}

/// The value of a small non-negative integer constant.
fn constant(func: &Function, v: Value) -> Option<i64> {
    let ValueDef::Result(inst) = func.dfg.value_def(v) else {
        return None;
    };
    match *func.inst(inst) {
        InstructionData::UnaryImm {
            opcode: Opcode::Iconst,
            imm,
        } if imm < 1 << 31 => i64::try_from(imm).ok(),
        _ => None,
    }
}

/// The range `[a, n)` of a loop counter `x`: a parameter of a block that ends in
/// `brif (x < n), stay, leave` (`ult` or `slt`, `n` a constant) and is entered with the
/// constant `a` from one edge and with `x + 1` from every other.
fn counter(func: &Function, x: Value) -> Option<(i64, i64)> {
    let ValueDef::Param(header, index) = func.dfg.value_def(x) else {
        return None;
    };
    let term = func.terminator(header)?;
    let InstructionData::Brif { arg, .. } = func.inst(term) else {
        return None;
    };
    let ValueDef::Result(test) = func.dfg.value_def(*arg) else {
        return None;
    };
    let InstructionData::IntCompare { cond, args, .. } = *func.inst(test) else {
        return None;
    };
    if !matches!(cond, IntCC::UnsignedLessThan | IntCC::SignedLessThan) || args[0] != x {
        return None;
    }
    let n = constant(func, args[1])?;
    let (mut start, mut steps) = (None, 0);
    for &b in func.layout.blocks() {
        let Some(t) = func.terminator(b) else {
            continue;
        };
        for dest in func.inst(t).branch_destinations() {
            if dest.block != header {
                continue;
            }
            let v = *dest.args.get(usize::try_from(index).ok()?)?;
            if let Some(c) = constant(func, v) {
                if start.replace(c).is_some() {
                    return None;
                }
                continue;
            }
            let ValueDef::Result(step) = func.dfg.value_def(v) else {
                return None;
            };
            match *func.inst(step) {
                InstructionData::Binary {
                    opcode: Opcode::Iadd,
                    args: [y, one],
                } if y == x && constant(func, one) == Some(1) => steps += 1,
                _ => return None,
            }
        }
    }
    let a = start?;
    (steps > 0 && a < n).then_some((a, n))
}

/// A thread, for [`lane_value`]: its x index and its block's x size.
#[derive(Copy, Clone, Debug)]
struct Lane {
    tid: u64,
    bdim: u64,
}

/// The branches that decide whether `block` runs: for each block `D` that dominates it
/// and ends in a two-way branch, when one successor `S` dominates `block` and has `D` as
/// its only predecessor (every path to `block` takes the edge `D → S`), that branch's
/// condition and the value it must have. A successor that dominates `block` but is also
/// reached from the other edge (the join of an if-then, SRAD's block after its
/// `tid < 8` loads) decides nothing: lanes of both edges reach `block`.
pub fn guards(
    func: &Function,
    cfg: &ControlFlowGraph<Block>,
    domtree: &DominatorTree<Block>,
    block: Block,
) -> Vec<(Value, bool)> {
    let mut out = Vec::new();
    let mut d = block;
    while let Some(up) = domtree.idom(d) {
        d = up;
        let Some(t) = func.terminator(d) else {
            continue;
        };
        if let InstructionData::Brif { arg, dests, .. } = func.inst(t) {
            let on = |k: usize| {
                domtree.dominates(dests[k].block, block) && cfg.preds(dests[k].block) == [up]
            };
            match (on(0), on(1)) {
                (true, false) => out.push((*arg, true)),
                (false, true) => out.push((*arg, false)),
                _ => {}
            }
        }
    }
    out
}

/// The value of `v` on the thread `lane`, when `v` depends on the thread's x index, the
/// block's x size and constants alone; `None` otherwise (or beyond a small depth).
fn lane_value(func: &Function, v: Value, lane: Lane, depth: u32) -> Option<u64> {
    use warplift_ir::interp::ops;
    if depth > 16 {
        return None;
    }
    let ValueDef::Result(inst) = func.dfg.value_def(v) else {
        return None;
    };
    let ty = func.dfg.value_type(v);
    let arg = |a: Value| lane_value(func, a, lane, depth + 1);
    match *func.inst(inst) {
        InstructionData::UnaryImm {
            opcode: Opcode::Iconst,
            imm,
        } => Some(imm & ty.mask()),
        InstructionData::Geometry {
            opcode: Opcode::ThreadId,
            dim: Dim::X,
        } => Some(lane.tid & ty.mask()),
        InstructionData::Geometry {
            opcode: Opcode::BlockDim,
            dim: Dim::X,
        } => Some(lane.bdim & ty.mask()),
        InstructionData::Binary { opcode, args } => {
            ops::binary(opcode, ty, arg(args[0])?, arg(args[1])?)
        }
        InstructionData::Unary { opcode, arg: a } => {
            ops::unary(opcode, func.dfg.value_type(a), ty, arg(a)?)
        }
        InstructionData::Ternary {
            opcode: Opcode::Select,
            args,
        } => {
            if arg(args[0])? & 1 == 1 {
                arg(args[1])
            } else {
                arg(args[2])
            }
        }
        InstructionData::Ternary { opcode, args } => {
            ops::ternary(opcode, ty, arg(args[0])?, arg(args[1])?, arg(args[2])?)
        }
        InstructionData::IntCompare { cond, args, .. } => {
            let t = func.dfg.value_type(args[0]);
            Some(u64::from(ops::icmp(cond, t, arg(args[0])?, arg(args[1])?)))
        }
        _ => None,
    }
}
