//! Use lists: the instructions reading each value, so that replacing a value after a move
//! costs its uses, not a sweep over the kernel (the pass stays `O(m n²)` over `m` regions,
//! Section 3.3).
//!
//! Every use is one entry of a shared pool, chained to the value's other uses, as LLVM
//! keeps its use lists: the heads and tails are dense tables indexed by value number, and
//! no value owns an allocation. Building the lists of a kernel of 100k instructions is
//! then a pass over it that only appends to the pool (one list per value, each with its
//! own vector, was a tenth of the pass), and replacing a value relinks its chain onto the
//! new value's without copying it.

use cranelift_entity::EntityRef;
use warplift_ir::{Function, Inst, Value};

/// The end of a chain.
const NIL: u32 = u32::MAX;

/// The instructions that read each value. Removed instructions may linger in the lists
/// until the value is replaced; callers check placement where it matters.
#[derive(Clone, Debug, Default)]
pub struct Uses {
    /// The first and last entry of each value's chain, by value number (grown when the
    /// pass makes a value past its end).
    ends: Vec<(u32, u32)>,
    /// Each entry's reader and the next entry of the same value's chain, side by side:
    /// recording a use appends one pair.
    entries: Vec<(Inst, u32)>,
}

impl Uses {
    /// The use lists of every placed instruction of `func`.
    pub fn compute(func: &Function) -> Uses {
        let mut uses = Uses::default();
        // Sized once, with room for the values the pass makes (a few per moved pair):
        // growing the table by one entry per new value cost more than the room.
        let values = func.dfg.num_values();
        uses.ends.resize(values + values / 2, (NIL, NIL));
        // About two reads per instruction, and room for the instructions the pass adds.
        uses.entries.reserve(3 * func.dfg.num_insts());
        for &b in func.layout.blocks() {
            for &inst in func.layout.block_insts(b) {
                uses.add(func, inst);
            }
        }
        uses
    }

    /// Records the reads of `inst`.
    pub fn add(&mut self, func: &Function, inst: Inst) {
        let data = &func.dfg.insts[inst];
        for &v in data.args() {
            self.push(v, inst);
        }
        for call in data.branch_destinations() {
            for &v in &call.args {
                self.push(v, inst);
            }
        }
    }

    /// Records that `inst` reads `v`, unless it was the last reader recorded.
    fn push(&mut self, v: Value, inst: Inst) {
        let k = v.index();
        if k >= self.ends.len() {
            self.ends.resize(k + 1 + k / 2, (NIL, NIL));
        }
        let entry = self.entries.len() as u32;
        let ends = &mut self.ends[k];
        if ends.1 == NIL {
            *ends = (entry, entry);
        } else {
            let last = &mut self.entries[ends.1 as usize];
            if last.0 == inst {
                return;
            }
            last.1 = entry;
            ends.1 = entry;
        }
        self.entries.push((inst, NIL));
    }

    /// The entries of `v`'s chain, in order.
    fn chain(&self, v: Value) -> impl Iterator<Item = u32> + '_ {
        let first = self.ends.get(v.index()).map_or(NIL, |e| e.0);
        core::iter::successors((first != NIL).then_some(first), |&e| {
            let n = self.entries[e as usize].1;
            (n != NIL).then_some(n)
        })
    }

    /// The placed instructions reading `v`, each once.
    pub fn of(&self, func: &Function, v: Value) -> impl Iterator<Item = Inst> {
        let mut out: Vec<Inst> = self
            .chain(v)
            .map(|e| self.entries[e as usize].0)
            .filter(|&i| func.layout.inst_block(i).is_some())
            .collect();
        // A reader appears twice when it read both values of a replacement.
        if out.len() <= 16 {
            let mut k = 0;
            while k < out.len() {
                if out[..k].contains(&out[k]) {
                    out.remove(k);
                } else {
                    k += 1;
                }
            }
        } else {
            let mut seen = rustc_hash::FxHashSet::default();
            out.retain(|&i| seen.insert(i));
        }
        out.into_iter()
    }

    /// Does `f` hold for every placed instruction reading `v`? A reader may be asked
    /// twice (see [`Uses::of`]), so `f` must not count; nothing is allocated, for the
    /// checks the pass makes on every matched pair.
    pub fn all_readers(&self, func: &Function, v: Value, f: impl FnMut(Inst) -> bool) -> bool {
        self.chain(v)
            .map(|e| self.entries[e as usize].0)
            .filter(|&i| func.layout.inst_block(i).is_some())
            .all(f)
    }

    /// Makes every reader of `old` read `new` instead. Readers no longer placed are
    /// dropped from the lists here, so that a value that many moves replace into does not
    /// drag the dead ones along.
    pub fn replace(&mut self, func: &mut Function, old: Value, new: Value) {
        let (mut first, mut last) = (NIL, NIL);
        let mut e = self.ends.get(old.index()).map_or(NIL, |e| e.0);
        if e != NIL {
            self.ends[old.index()] = (NIL, NIL);
        }
        // Keep the placed readers' entries, in order, as one chain.
        while e != NIL {
            let (inst, next) = self.entries[e as usize];
            if func.layout.inst_block(inst).is_some() {
                func.dfg.insts[inst].map_values(|v| if v == old { new } else { v });
                self.entries[e as usize].1 = NIL;
                if last == NIL {
                    first = e;
                } else {
                    self.entries[last as usize].1 = e;
                }
                last = e;
            }
            e = next;
        }
        if first == NIL {
            return;
        }
        let k = new.index();
        if k >= self.ends.len() {
            self.ends.resize(k + 1 + k / 2, (NIL, NIL));
        }
        let (head, tail) = self.ends[k];
        if tail == NIL {
            self.ends[k] = (first, last);
        } else {
            self.entries[tail as usize].1 = first;
            self.ends[k] = (head, last);
        }
    }
}
