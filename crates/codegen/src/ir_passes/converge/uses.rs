//! Use lists: the instructions reading each value, so that replacing a value after a move
//! costs its uses, not a sweep over the kernel (the pass stays `O(m n²)` over `m` regions,
//! Section 3.3).
//!
//! The lists are indexed by value number (a dense table, not a hash map): the pass looks
//! them up for every instruction it moves, and on a kernel of 100k instructions hashing
//! was a fifth of its time.

use cranelift_entity::SecondaryMap;
use warplift_ir::{Function, Inst, Value};

/// The instructions that read each value. Removed instructions may linger in the lists
/// until the value is replaced; callers check placement where it matters.
#[derive(Clone, Debug, Default)]
pub struct Uses {
    map: SecondaryMap<Value, Vec<Inst>>,
}

impl Uses {
    /// The use lists of every placed instruction of `func`.
    pub fn compute(func: &Function) -> Uses {
        let mut uses = Uses::default();
        for inst in func.layout.insts() {
            uses.add(func, inst);
        }
        uses
    }

    /// Records the reads of `inst`.
    pub fn add(&mut self, func: &Function, inst: Inst) {
        for v in func.dfg.insts[inst].all_values() {
            let list = &mut self.map[v];
            if list.last() != Some(&inst) {
                list.push(inst);
            }
        }
    }

    /// The placed instructions reading `v`, each once.
    pub fn of(&self, func: &Function, v: Value) -> impl Iterator<Item = Inst> {
        let list = self.map.get(v).map_or(&[][..], Vec::as_slice);
        let mut out: Vec<Inst> = list
            .iter()
            .copied()
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

    /// Makes every reader of `old` read `new` instead. Readers no longer placed are
    /// dropped from the lists here, so that a value that many moves replace into does not
    /// drag the dead ones along.
    pub fn replace(&mut self, func: &mut Function, old: Value, new: Value) {
        let mut readers = core::mem::take(&mut self.map[old]);
        readers.retain(|&i| func.layout.inst_block(i).is_some());
        for &inst in &readers {
            func.dfg.insts[inst].map_values(|v| if v == old { new } else { v });
        }
        self.map[new].extend(readers);
    }
}
