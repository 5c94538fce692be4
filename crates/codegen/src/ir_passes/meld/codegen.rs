//! Melding two corresponding subgraphs into one (Algorithm 2 and Section IV-D of the
//! paper), with unpredication (Section IV-E) and the paper's pre-processing (Section
//! IV-F) in block-parameter form.
//!
//! For each pair of corresponding blocks `(bt, bf)` a melded block `m` takes their place;
//! its parameters stand for both blocks' parameters. Walking the instruction alignment:
//!
//! - an aligned pair becomes one instruction; an operand on which the two differ becomes
//!   `select c, x_t, x_f` on the region's branch condition `c` (Fig. 3b);
//! - a run of unaligned instructions goes under a branch on `c` (unpredication, Fig. 3c):
//!   `m` ends in `brif c, P_t, P_f`, the true side's instructions in `P_t`, the false
//!   side's in `P_f`, both jumping to a tail block that continues `m` and whose parameters
//!   carry the values the run defines (the other path passes a zero, never read — the
//!   paper's `undef`). So every store, atomic, load or division runs exactly on the lanes
//!   that ran it before. Only a run of instructions that can neither fault nor touch
//!   memory may instead stay in `m`, run by every lane (speculated: the if-conversion the
//!   paper's Fig. 4e shows, a setting), when [`speculate`] finds it cheaper than the
//!   branches and moves of unpredication, by the cost model's count, its two arms
//!   interleaved as [`super::cost::speculated_order`] schedules them;
//! - the terminators (paired by the isomorphism) become one, with a `select`ed condition
//!   and arguments; an edge leaving the subgraph goes to a new block `brif c, n_t, n_f`
//!   that sends each lane on along its own side — or, when both sides continue at the
//!   region's join, straight there with `select`ed arguments: the lanes stay converged.
//!
//! Pre-processing: a value defined on one side before the subgraph (no longer dominating
//! its uses once both sides flow into `m`) becomes a parameter of the melded entry, with a
//! zero from the other side (the paper's Fig. 5); when the subgraphs are loops, their
//! back edges to the melded entry pass those parameters on unchanged.
//!
//! Melded loops need nothing more: a lane runs the melded loop exactly as its own
//! side's loop, every condition and operand selected from its side, so it leaves the
//! loop at its own side's exit, on its own turn (the lanes of the two sides may iterate
//! different numbers of times; a lane that has left is inactive until the exit's
//! reconvergence). Unaligned instructions stay under a branch on `c`, as anywhere.

use super::align::{address, body, offset_mut, Step};
use super::cost::{speculated_order, Shares, BRANCH_LATENCY};
use super::subgraph::Subgraph;
use std::collections::{HashMap, HashSet};
use warplift_ir::{
    Block, BlockCall, Function, Inst, InstructionData, Opcode, Type, Value, ValueDef,
};

/// What one melding did.
#[derive(Clone, Debug, Default)]
pub struct Melded {
    /// Blocks made by melding two blocks.
    pub melded_blocks: Vec<Block>,
    /// Instruction pairs melded into one.
    pub aligned: u64,
    /// `select`s inserted.
    pub selects: u64,
    /// Blocks made to run unaligned instructions under a branch.
    pub unpredicated: Vec<Block>,
    /// Every block this melding made.
    pub created: Vec<Block>,
}

/// The two sides of a region around the subgraphs being melded.
pub struct Sides<'a> {
    /// The region's branch condition.
    pub cond: Value,
    /// The region's entry (where constants go if the kernel has no entry block).
    pub entry: Block,
    /// The subgraphs being melded: true side, false side.
    pub subgraphs: [&'a Subgraph; 2],
    /// The blocks of each side before the subgraph.
    pub before: [HashSet<Block>; 2],
    /// The blocks of each side after the subgraph.
    pub after: [HashSet<Block>; 2],
    /// Blocks of a replicated subgraph that the lanes of their side never run (see
    /// [`super::replicate`]): each melds with its partner by taking the partner as it is.
    pub absent: HashSet<Block>,
    /// How often the region's branch diverges or goes one way ([`super::cost::divergent_share`]).
    pub shares: Shares,
}

/// Where a branch to `call` leads once blocks that only jump on (no parameters, no
/// instruction but the jump) are passed through.
pub fn resolve(func: &Function, call: &BlockCall) -> BlockCall {
    let mut c = call.clone();
    // A chain of forwarding blocks is short; the bound guards against a cycle of them.
    for _ in 0..8 {
        if !c.args.is_empty() || !func.dfg.block_params(c.block).is_empty() {
            break;
        }
        let insts = func.layout.block_insts(c.block);
        if insts.len() != 1 || func.inst(insts[0]).opcode() != Opcode::Jump {
            break;
        }
        let next = func.inst(insts[0]).branch_destinations()[0].clone();
        if next.block == c.block {
            break;
        }
        c = next;
    }
    c
}

/// Can `data` run on a lane that would not have run it? Only when it touches no memory,
/// cannot fault and has no effect but its result (integer division is kept under its
/// branch as a target may trap on it).
pub fn speculatable(data: &InstructionData) -> bool {
    use Opcode::*;
    !data.opcode().has_side_effects()
        && !matches!(data.opcode(), Load | Sdiv | Udiv | Srem | Urem | Barrier)
}

/// Whether a run of unaligned instructions (`ts` of the true side, `fs` of the false
/// side) is better run by every lane, in the melded block, than unpredicated. Each
/// instruction must be [`speculatable`], and speculation (every instruction of both
/// arms, for every warp) may cost no more than the expectation, by `shares`, of
/// unpredication, counted both ways the cost model counts ([`super::cost::Timing`]):
/// in issues (a warp's share of its SM's issue slots) and in cycles (a lone warp's
/// time, where every taken branch adds the branch latency). Unpredication issues the
/// `brif c`, and for each arm a warp runs (both when the branch diverges, its own
/// side's otherwise) the arm's instructions, a move for each zero it passes to the
/// tail for a value the other arm defines (`zeros[side]`) and its jump. DCT's
/// negations (an `ineg` on the negative side before and after the division both sides
/// share) are one issue each instead of a branch around them. A long run in a branch
/// that is often uniform stays unpredicated: a uniform warp would issue both arms.
/// With `if_convert` off nothing is speculated.
pub fn speculate(
    func: &Function,
    ts: &[Inst],
    fs: &[Inst],
    zeros: [usize; 2],
    shares: Shares,
    if_convert: bool,
) -> bool {
    if !if_convert || !ts.iter().chain(fs).all(|&i| speculatable(func.inst(i))) {
        return false;
    }
    // An arm's issues: its instructions, moves and jump (an empty arm without moves is
    // the `brif`'s edge straight to the tail); `transfer` is what a taken branch adds.
    let cost = |transfer: f64| {
        let arm = |n: usize, z: usize| -> f64 {
            if n == 0 && z == 0 {
                0.0
            } else {
                (n + z + 1) as f64 + transfer
            }
        };
        let (at, af) = (arm(ts.len(), zeros[0]), arm(fs.len(), zeros[1]));
        let branch = 1.0 + transfer;
        shares.divergent * (branch + at + af)
            + shares.first * (branch + at)
            + shares.second * (branch + af)
    };
    let speculated = (ts.len() + fs.len()) as f64;
    speculated <= cost(0.0) && speculated <= cost(f64::from(BRANCH_LATENCY - 1))
}

struct Melder<'f> {
    func: &'f mut Function,
    cond: Value,
    entry: Block,
    map: HashMap<Value, Value>,
    zeros: HashMap<Type, Value>,
    consts: HashMap<(Type, u64), Value>,
    /// Addresses made for melded accesses with differing offsets, by base and the two
    /// offset differences, in the block pair being melded (where they dominate).
    addresses: HashMap<(Value, Value, i64, i64), Value>,
    out: Melded,
    if_convert: bool,
    /// How often the region's branch diverges: whether a run is speculated.
    shares: Shares,
    /// The users of every value in the subgraphs and after them.
    users: HashMap<Value, Vec<Inst>>,
}

impl Melder<'_> {
    fn get(&self, v: Value) -> Value {
        self.map.get(&v).copied().unwrap_or(v)
    }

    fn zero(&mut self, ty: Type) -> Value {
        if let Some(&z) = self.zeros.get(&ty) {
            return z;
        }
        let z = self.place_constant(InstructionData::zero(ty), ty);
        self.zeros.insert(ty, z);
        z
    }

    /// The integer constant `imm` of type `ty` (an address offset).
    fn int_constant(&mut self, ty: Type, imm: i64) -> Value {
        if imm == 0 {
            return self.zero(ty);
        }
        let bits = ty.bits();
        let imm = if bits >= 64 {
            imm as u64
        } else {
            (imm as u64) & ((1u64 << bits) - 1)
        };
        if let Some(&c) = self.consts.get(&(ty, imm)) {
            return c;
        }
        let data = InstructionData::UnaryImm {
            opcode: Opcode::Iconst,
            imm,
        };
        let c = self.place_constant(data, ty);
        self.consts.insert((ty, imm), c);
        c
    }

    /// Places a constant in the kernel's entry block, which dominates every block and
    /// runs once (the region's entry may sit in a loop); before its terminator.
    fn place_constant(&mut self, data: InstructionData, ty: Type) -> Value {
        let inst = self.func.dfg.make_inst(data, Some(ty));
        let block = self.func.layout.entry_block().unwrap_or(self.entry);
        let at = self.func.layout.block_insts(block).len().saturating_sub(1);
        self.func.layout.insert_inst(inst, block, at);
        self.func
            .dfg
            .inst_result(inst)
            .expect("a constant has a result")
    }

    /// `x` where both sides agree, else `select c, x, y` appended to `block`.
    fn select(&mut self, block: Block, x: Value, y: Value) -> Value {
        if x == y {
            return x;
        }
        let ty = self.func.dfg.value_type(x);
        let inst = self.func.dfg.make_inst(
            InstructionData::Ternary {
                opcode: Opcode::Select,
                args: [self.cond, x, y],
            },
            Some(ty),
        );
        self.place(inst, block);
        self.out.selects += 1;
        self.func
            .dfg
            .inst_result(inst)
            .expect("select has a result")
    }

    /// Appends `inst` (a select or address arithmetic, which cannot fault) to `block` —
    /// or, when every operand is defined in the kernel's entry block, places it there,
    /// run once instead of on every pass through the region (SB1's selected offset on
    /// the lane parity is the same in every iteration of its loop).
    fn place(&mut self, inst: Inst, block: Block) {
        let entry = self.func.layout.entry_block();
        let func = &*self.func;
        let at_entry = |v: Value| match func.dfg.value_def(v) {
            ValueDef::Result(i) => func.layout.inst_block(i) == entry,
            ValueDef::Param(b, _) => Some(b) == entry,
        };
        match entry {
            Some(e) if self.func.inst(inst).args().iter().all(|&v| at_entry(v)) => {
                let at = self.func.layout.block_insts(e).len().saturating_sub(1);
                self.func.layout.insert_inst(inst, e, at);
            }
            _ => self.func.layout.append_inst(inst, block),
        }
    }

    fn new_block(&mut self, after: Block) -> Block {
        let b = self.func.dfg.make_block();
        self.func.layout.insert_block_after(b, after);
        self.out.created.push(b);
        b
    }

    /// Appends a copy of `inst` with mapped operands to `block`; maps its result.
    fn clone_into(&mut self, inst: Inst, block: Block) -> Option<Value> {
        let mut data = self.func.inst(inst).clone();
        data.map_values(|v| self.map.get(&v).copied().unwrap_or(v));
        let ty = self
            .func
            .dfg
            .inst_result(inst)
            .map(|v| self.func.dfg.value_type(v));
        let new = self.func.dfg.make_inst(data, ty);
        self.func.layout.append_inst(new, block);
        self.func.srclocs[new] = self.func.srclocs[inst];
        let res = self.func.dfg.inst_result(new);
        if let (Some(old), Some(r)) = (self.func.dfg.inst_result(inst), res) {
            self.map.insert(old, r);
        }
        res
    }

    /// Melds the aligned pair `(a, b)` into `block`.
    fn meld_pair(&mut self, a: Inst, b: Inst, block: Block) {
        let (da, db) = (self.func.inst(a).clone(), self.func.inst(b).clone());
        let mut data = da.clone();
        let pairs: Vec<(Value, Value)> = da
            .args()
            .iter()
            .zip(db.args())
            .map(|(&x, &y)| (self.get(x), self.get(y)))
            .collect();
        // Accesses at different offsets: the address operand is made below.
        let moved = match (address(&da), address(&db)) {
            (Some((oa, k)), Some((ob, _))) if oa != ob => Some((oa, ob, k)),
            _ => None,
        };
        let mut args = Vec::with_capacity(pairs.len());
        for (n, &(x, y)) in pairs.iter().enumerate() {
            let v = match moved {
                Some((_, _, k)) if k == n => x,
                _ => self.select(block, x, y),
            };
            args.push(v);
        }
        if let Some((oa, ob, k)) = moved {
            // Both accesses at one address: the selected base plus the selected
            // difference of the offsets, at the smaller offset; shared by the accesses
            // of this block pair with the same bases and differences.
            let low = oa.min(ob);
            let (x, y) = pairs[k];
            let key = (
                x,
                y,
                i64::from(oa) - i64::from(low),
                i64::from(ob) - i64::from(low),
            );
            let addr = match self.addresses.get(&key) {
                Some(&v) => v,
                None => {
                    let base = self.select(block, x, y);
                    let ty = self.func.dfg.value_type(base);
                    let (ca, cb) = (self.int_constant(ty, key.2), self.int_constant(ty, key.3));
                    let d = self.select(block, ca, cb);
                    let add = self.func.dfg.make_inst(
                        InstructionData::Binary {
                            opcode: Opcode::Iadd,
                            args: [base, d],
                        },
                        Some(ty),
                    );
                    self.place(add, block);
                    let v = self.func.dfg.inst_result(add).expect("iadd has a result");
                    self.addresses.insert(key, v);
                    v
                }
            };
            args[k] = addr;
            *offset_mut(&mut data).expect("a memory access has an offset") = low;
        }
        data.args_mut().copy_from_slice(&args);
        let ty = self
            .func
            .dfg
            .inst_result(a)
            .map(|v| self.func.dfg.value_type(v));
        let new = self.func.dfg.make_inst(data, ty);
        self.func.layout.append_inst(new, block);
        self.func.srclocs[new] = self.func.srclocs[a];
        if let Some(r) = self.func.dfg.inst_result(new) {
            for old in [a, b] {
                if let Some(v) = self.func.dfg.inst_result(old) {
                    self.map.insert(v, r);
                }
            }
        }
        self.out.aligned += 1;
    }

    /// Places a run of unaligned instructions (`ts` from the true side, `fs` from the
    /// false side) after `cur`; returns the block that continues.
    fn gap_run(&mut self, cur: Block, ts: &[Inst], fs: &[Inst]) -> Block {
        let all: Vec<Inst> = ts.iter().chain(fs).copied().collect();
        let run: HashSet<Inst> = all.iter().copied().collect();
        // The values of each arm read outside the run: the other arm passes a zero for
        // each to the tail.
        let escaping = |list: &[Inst]| {
            list.iter()
                .filter_map(|&i| self.func.dfg.inst_result(i))
                .filter(|r| {
                    self.users
                        .get(r)
                        .is_some_and(|us| us.iter().any(|u| !run.contains(u)))
                })
                .count()
        };
        let zeros = [escaping(fs), escaping(ts)];
        if speculate(self.func, ts, fs, zeros, self.shares, self.if_convert) {
            for i in speculated_order(self.func, ts, fs) {
                self.clone_into(i, cur);
            }
            return cur;
        }
        let mut arms = [None, None];
        let mut defined: Vec<(usize, Value, Value)> = Vec::new();
        let mut last = cur;
        for (side, list) in [ts, fs].into_iter().enumerate() {
            if list.is_empty() {
                continue;
            }
            let p = self.new_block(last);
            last = p;
            self.out.unpredicated.push(p);
            arms[side] = Some(p);
            for &i in list {
                let old = self.func.dfg.inst_result(i);
                let new = self.clone_into(i, p);
                if let (Some(o), Some(n)) = (old, new) {
                    let escapes = self
                        .users
                        .get(&o)
                        .is_some_and(|us| us.iter().any(|u| !run.contains(u)));
                    if escapes {
                        defined.push((side, o, n));
                    }
                }
            }
        }
        let tail = self.new_block(last);
        // The tail's parameters carry the run's escaping values: each path passes its own
        // value, or a zero where the value was not computed (never read there).
        let mut zeros = Vec::with_capacity(defined.len());
        for &(_, old, new) in &defined {
            let ty = self.func.dfg.value_type(new);
            let p = self.func.dfg.append_block_param(tail, ty);
            zeros.push(self.zero(ty));
            self.map.insert(old, p);
        }
        let mut dests = Vec::with_capacity(2);
        for (side, arm) in arms.iter().enumerate() {
            let args: Vec<Value> = defined
                .iter()
                .zip(&zeros)
                .map(|(&(s, _, n), &z)| if s == side { n } else { z })
                .collect();
            match *arm {
                Some(p) => {
                    self.jump(p, tail, args);
                    dests.push(BlockCall::new(p, []));
                }
                None => dests.push(BlockCall::new(tail, zeros.clone())),
            }
        }
        let [d0, d1]: [BlockCall; 2] = dests.try_into().expect("two sides");
        let br = self.func.dfg.make_inst(
            InstructionData::Brif {
                opcode: Opcode::Brif,
                arg: self.cond,
                dests: [d0, d1],
            },
            None,
        );
        self.func.layout.append_inst(br, cur);
        tail
    }

    fn jump(&mut self, from: Block, to: Block, args: Vec<Value>) {
        let j = self.func.dfg.make_inst(
            InstructionData::Jump {
                opcode: Opcode::Jump,
                dest: BlockCall::new(to, args),
            },
            None,
        );
        self.func.layout.append_inst(j, from);
    }
}

/// Melds the subgraphs `sides.subgraphs`, whose blocks correspond as `pairs` (in the
/// true side's pre-order) with the instruction alignments `steps`, into one.
pub fn meld(
    func: &mut Function,
    sides: &Sides,
    pairs: &[(Block, Block)],
    steps: &[Vec<Step>],
    if_convert: bool,
) -> Melded {
    let [st, sf] = sides.subgraphs;
    let in_sub: [HashSet<Block>; 2] = [
        st.blocks.iter().copied().collect(),
        sf.blocks.iter().copied().collect(),
    ];
    // The users of every value, in the subgraphs and the blocks after them.
    let mut users: HashMap<Value, Vec<Inst>> = HashMap::new();
    let later: Vec<Block> = in_sub
        .iter()
        .chain(&sides.after)
        .flat_map(|s| s.iter().copied())
        .collect();
    for &b in &later {
        for &i in func.layout.block_insts(b) {
            for v in func.inst(i).all_values() {
                users.entry(v).or_default().push(i);
            }
        }
    }
    let mut m = Melder {
        func,
        cond: sides.cond,
        entry: sides.entry,
        map: HashMap::new(),
        zeros: HashMap::new(),
        consts: HashMap::new(),
        addresses: HashMap::new(),
        out: Melded::default(),
        if_convert,
        shares: sides.shares,
        users,
    };
    // The melded blocks, with parameters standing for both blocks' parameters.
    let mut melded: HashMap<Block, Block> = HashMap::new();
    for &(bt, bf) in pairs {
        let mb = m.new_block(bt);
        m.out.melded_blocks.push(mb);
        let (pt, pf) = (
            m.func.dfg.block_params(bt).to_vec(),
            m.func.dfg.block_params(bf).to_vec(),
        );
        for (&x, &y) in pt.iter().zip(&pf) {
            let p = m.func.dfg.append_block_param(mb, m.func.dfg.value_type(x));
            m.map.insert(x, p);
            m.map.insert(y, p);
        }
        melded.insert(bt, mb);
        melded.insert(bf, mb);
    }
    let entry = melded[&st.entry];
    // Pre-processing: values defined on a side before the subgraphs and used in or after
    // them enter the melded entry as parameters.
    let mut carried: Vec<(usize, Value)> = Vec::new();
    for side in 0..2 {
        let mut defs: Vec<Value> = Vec::new();
        for &b in &sides.before[side] {
            defs.extend_from_slice(m.func.dfg.block_params(b));
            defs.extend(
                m.func
                    .layout
                    .block_insts(b)
                    .iter()
                    .filter_map(|&i| m.func.dfg.inst_result(i)),
            );
        }
        defs.sort();
        for v in defs {
            if m.users.contains_key(&v) {
                carried.push((side, v));
            }
        }
    }
    let mut extra_args: [Vec<Value>; 2] = [Vec::new(), Vec::new()];
    // The melded entry's parameters for carried values, which a back edge to the entry
    // (the subgraphs are loops) passes on unchanged.
    let mut carried_params: Vec<Value> = Vec::new();
    for &(side, v) in &carried {
        let ty = m.func.dfg.value_type(v);
        let p = m.func.dfg.append_block_param(entry, ty);
        carried_params.push(p);
        let z = m.zero(ty);
        for (k, args) in extra_args.iter_mut().enumerate() {
            args.push(if k == side { v } else { z });
        }
        m.map.insert(v, p);
    }
    // Every edge into a subgraph's entry now enters the melded entry.
    for (side, sub) in [st, sf].into_iter().enumerate() {
        let preds: Vec<Block> = m
            .func
            .layout
            .blocks()
            .iter()
            .copied()
            .filter(|&b| sides.before[side].contains(&b) || b == sides.entry)
            .collect();
        for p in preds {
            let Some(t) = m.func.terminator(p) else {
                continue;
            };
            for call in m.func.dfg.insts[t].branch_destinations_mut() {
                if call.block == sub.entry {
                    call.block = entry;
                    call.args.extend_from_slice(&extra_args[side]);
                }
            }
        }
    }
    // The bodies and terminators, dominators first.
    let mut exit: Option<Block> = None;
    let mut bypassed: Vec<Block> = Vec::new();
    for (k, &(bt, bf)) in pairs.iter().enumerate() {
        let mb = melded[&bt];
        m.addresses.clear();
        if sides.absent.contains(&bt) || sides.absent.contains(&bf) {
            // Only the lanes of the other side run this block: it is that block as it was.
            let present = if sides.absent.contains(&bt) { bf } else { bt };
            for i in body(m.func, present) {
                m.clone_into(i, mb);
            }
            let t = m
                .func
                .terminator(present)
                .expect("a side block ends in a branch");
            let mut data = m.func.inst(t).clone();
            data.map_values(|v| m.map.get(&v).copied().unwrap_or(v));
            for call in data.branch_destinations_mut() {
                if let Some(&target) = melded.get(&call.block) {
                    if call.block == st.entry || call.block == sf.entry {
                        call.args.extend_from_slice(&carried_params);
                    }
                    call.block = target;
                } else {
                    // Out of the subgraph: past blocks that only jump on.
                    let to = resolve(m.func, call);
                    if to.block != call.block {
                        bypassed.push(call.block);
                        *call = to;
                    }
                }
            }
            let term = m.func.dfg.make_inst(data, None);
            m.func.layout.append_inst(term, mb);
            m.func.srclocs[term] = m.func.srclocs[t];
            continue;
        }
        let (a, b) = (body(m.func, bt), body(m.func, bf));
        let mut cur = mb;
        let mut run: (Vec<Inst>, Vec<Inst>) = (Vec::new(), Vec::new());
        for step in &steps[k] {
            match *step {
                Step::GapA(i) => run.0.push(a[i]),
                Step::GapB(j) => run.1.push(b[j]),
                Step::Match(i, j) => {
                    if !run.0.is_empty() || !run.1.is_empty() {
                        cur = m.gap_run(cur, &run.0, &run.1);
                        run = (Vec::new(), Vec::new());
                    }
                    m.meld_pair(a[i], b[j], cur);
                }
            }
        }
        if !run.0.is_empty() || !run.1.is_empty() {
            cur = m.gap_run(cur, &run.0, &run.1);
        }
        // The terminator.
        let tt = m
            .func
            .terminator(bt)
            .expect("a side block ends in a branch");
        let tf = m
            .func
            .terminator(bf)
            .expect("a side block ends in a branch");
        let (dt, df) = (m.func.inst(tt).clone(), m.func.inst(tf).clone());
        let mut data = dt.clone();
        if let (Some(&x), Some(&y)) = (dt.args().first(), df.args().first()) {
            let (x, y) = (m.get(x), m.get(y));
            data.args_mut()[0] = m.select(cur, x, y);
        }
        let mut new_dests = Vec::new();
        for (ct, cf) in dt
            .branch_destinations()
            .iter()
            .zip(df.branch_destinations())
        {
            let at: Vec<Value> = ct.args.iter().map(|&v| m.get(v)).collect();
            let af: Vec<Value> = cf.args.iter().map(|&v| m.get(v)).collect();
            let (rt, rf) = (resolve(m.func, ct), resolve(m.func, cf));
            if in_sub[0].contains(&ct.block) {
                // Into a block only one side's lanes run: that side's arguments.
                let mut args: Vec<Value> = if sides.absent.contains(&ct.block) {
                    af
                } else if sides.absent.contains(&cf.block) {
                    at
                } else {
                    at.iter()
                        .zip(&af)
                        .map(|(&x, &y)| m.select(cur, x, y))
                        .collect()
                };
                if ct.block == st.entry {
                    // A back edge of melded loops: the carried values go round.
                    args.extend_from_slice(&carried_params);
                }
                new_dests.push(BlockCall::new(melded[&ct.block], args));
            } else if rt.block == rf.block {
                // Both sides continue at the same block (the region's join, perhaps
                // through blocks that only jump on): stay converged.
                let (at, af): (Vec<Value>, Vec<Value>) = (
                    rt.args.iter().map(|&v| m.get(v)).collect(),
                    rf.args.iter().map(|&v| m.get(v)).collect(),
                );
                let args: Vec<Value> = at
                    .iter()
                    .zip(&af)
                    .map(|(&x, &y)| m.select(cur, x, y))
                    .collect();
                bypassed.extend([ct.block, cf.block].into_iter().filter(|&b| b != rt.block));
                new_dests.push(BlockCall::new(rt.block, args));
            } else {
                // Each lane goes back to its own side, through one block for all the
                // subgraph's exits, whose parameters carry both sides' arguments.
                let q = match exit {
                    Some(q) => q,
                    None => {
                        let q = m.new_block(cur);
                        let mut qt = Vec::new();
                        let mut qf = Vec::new();
                        for (list, target) in [(&mut qt, ct.block), (&mut qf, cf.block)] {
                            for &p in &m.func.dfg.block_params(target).to_vec() {
                                let ty = m.func.dfg.value_type(p);
                                list.push(m.func.dfg.append_block_param(q, ty));
                            }
                        }
                        let br = m.func.dfg.make_inst(
                            InstructionData::Brif {
                                opcode: Opcode::Brif,
                                arg: sides.cond,
                                dests: [BlockCall::new(ct.block, qt), BlockCall::new(cf.block, qf)],
                            },
                            None,
                        );
                        m.func.layout.append_inst(br, q);
                        m.func.srclocs[br] = m.func.srclocs[tt];
                        exit = Some(q);
                        q
                    }
                };
                let mut args = at;
                args.extend(af);
                new_dests.push(BlockCall::new(q, args));
            }
        }
        for (d, call) in data.branch_destinations_mut().iter_mut().zip(new_dests) {
            *d = call;
        }
        let term = m.func.dfg.make_inst(data, None);
        m.func.layout.append_inst(term, cur);
        m.func.srclocs[term] = m.func.srclocs[tt];
    }
    // Later blocks of the sides read the melded values.
    for side in &sides.after {
        for &b in side {
            for &i in m.func.layout.block_insts(b) {
                let map = &m.map;
                m.func.dfg.insts[i].map_values(|v| map.get(&v).copied().unwrap_or(v));
            }
        }
    }
    for &(bt, bf) in pairs {
        m.func.layout.remove_block(bt);
        m.func.layout.remove_block(bf);
    }
    // Forwarding blocks that melding bypassed, when nothing branches to them any more.
    for b in bypassed {
        let used = m.func.layout.blocks().iter().any(|&p| {
            m.func.terminator(p).is_some_and(|t| {
                m.func
                    .inst(t)
                    .branch_destinations()
                    .iter()
                    .any(|c| c.block == b)
            })
        });
        if m.func.layout.is_block_inserted(b) && !used {
            m.func.layout.remove_block(b);
        }
    }
    m.out
}
