//! The build pass: a [`RawKernel`] to a [`Function`].
//!
//! The syntax pass has read the whole kernel, so every definition is known and uses may
//! be resolved in any order. The pass runs in five linear steps:
//!
//! 1. collect the definitions of blocks and values in text order, rejecting duplicates;
//! 2. choose the entity each definition becomes (see *Numbering* below);
//! 3. map every use from its text name to that entity, rejecting undefined names;
//! 4. infer the result types the text leaves implicit (`v3 = iadd v1, v2` has the type of
//!    `v1`, which may be defined further down);
//! 5. create blocks, then values in increasing entity number, then lay out blocks and
//!    instructions in text order.
//!
//! Numbering: `vN` becomes `Value` N and `blockN` becomes `Block` N, so what the verifier
//! or the interpreter says about `v7` names the `v7` of the text, and printing a parsed
//! kernel keeps its names. Numbers left unused by the text become placeholders nobody
//! refers to: blocks created but not placed in the layout, and values that are
//! parameters of one extra block, also outside the layout. Two cases cannot or should not
//! be numbered exactly, and fall back to numbering in text order (the `i`-th block or
//! value defined gets number `i`), for blocks and values independently:
//!
//! - a block whose parameters are not numbered in increasing order
//!   (`block1(v5: i32, v3: i32)`): parameters are appended in position order, and values
//!   are created in number order, so `v3` could not be the second parameter; values then
//!   fall back;
//! - a largest number above `4 * definitions + 1024` (`v4000000000`), which would cost
//!   tables of that size for nothing; that kind of entity then falls back.
//!
//! Type inference: a result whose type is not written or fixed by its opcode takes the
//! type of exactly one operand. Following these "takes its type from" links from any value
//! ends at a value of known type or goes round a cycle (`v1 = iadd v2, v2` and
//! `v2 = iadd v1, v1`, which no execution could reach but text can say). Each value is
//! walked at most once, with an explicit path instead of recursion, so long chains cost
//! linear time and no stack.

use super::syntax::RawKernel;
use super::ParseError;
use crate::entities::{Block, Inst, Value};
use crate::function::Function;
use crate::instructions::InstructionData;
use crate::srcloc::SourceLoc;
use crate::types::Type;
use rustc_hash::FxHashMap;
use std::collections::hash_map::Entry;

/// Marks "no type source" in the inference links.
const NO_SOURCE: u32 = u32::MAX;

/// The type of placeholder values; it does not matter, as nothing uses them.
const PLACEHOLDER_TYPE: Type = Type::I32;

/// Where a value is defined in the text.
#[derive(Copy, Clone)]
enum DefSite {
    /// A parameter of the block with this index in [`RawKernel::blocks`].
    Param(usize),
    /// The result of the instruction with this index in [`RawKernel::insts`].
    Result(usize),
}

/// Can `numbers` (the text numbers of `count` definitions) be kept as entity numbers
/// without allocating far more entities than the text defines? Returns how many
/// entities exact numbering creates, or `None` to number in text order.
fn exact_entity_count(numbers: impl Iterator<Item = u32>, count: usize) -> Option<usize> {
    let max = numbers.max()?;
    let limit = 4 * count as u64 + 1024;
    (u64::from(max) <= limit).then(|| max as usize + 1)
}

/// The definition index (position in text order) of each text number `N` of `vN`, in a
/// table indexed by number when the numbers are small enough for exact numbering (the
/// usual case, and then no number is hashed), in a hash map otherwise.
enum Names {
    /// `table[n]` is the index of `n`'s definition, or `NO_SOURCE`.
    Dense(Vec<u32>),
    Sparse(FxHashMap<u32, u32>),
}

impl Names {
    /// A map for `count` definitions whose numbers are at most `max`.
    fn new(max: Option<u32>, count: usize) -> Names {
        match max {
            Some(max) if u64::from(max) <= 4 * count as u64 + 1024 => {
                Names::Dense(vec![NO_SOURCE; max as usize + 1])
            }
            _ => Names::Sparse(FxHashMap::with_capacity_and_hasher(
                count,
                Default::default(),
            )),
        }
    }

    /// The definition index of `name`, if it is defined.
    fn get(&self, name: u32) -> Option<u32> {
        match self {
            Names::Dense(t) => t.get(name as usize).copied().filter(|&d| d != NO_SOURCE),
            Names::Sparse(m) => m.get(&name).copied(),
        }
    }

    /// Records that `name` is defined by definition `index`; if it already was, returns
    /// that first definition instead.
    fn define(&mut self, name: u32, index: u32) -> Result<(), u32> {
        match self {
            Names::Dense(t) => match t.get_mut(name as usize) {
                Some(slot) if *slot != NO_SOURCE => Err(*slot),
                Some(slot) => {
                    *slot = index;
                    Ok(())
                }
                // Numbers above the table's bound never reach it (see `new`).
                None => Ok(()),
            },
            Names::Sparse(m) => match m.entry(name) {
                Entry::Occupied(e) => Err(*e.get()),
                Entry::Vacant(e) => {
                    e.insert(index);
                    Ok(())
                }
            },
        }
    }
}

/// Builds the function `k` describes, or says why it cannot.
pub(crate) fn build(k: RawKernel<'_>) -> Result<Function, ParseError> {
    // Step 1: definitions. Blocks map their text number to their index in `k.blocks`,
    // values to their definition index (text order).
    let mut blocks: FxHashMap<u32, usize> =
        FxHashMap::with_capacity_and_hasher(k.blocks.len(), Default::default());
    for (i, b) in k.blocks.iter().enumerate() {
        match blocks.entry(b.name) {
            Entry::Occupied(e) => {
                let first = k.blocks.get(*e.get()).map_or(b.loc, |f| f.loc);
                return Err(ParseError::new(
                    b.loc,
                    format!("block{} is defined twice (first at {first})", b.name),
                ));
            }
            Entry::Vacant(e) => {
                e.insert(i);
            }
        }
    }

    // Text names of definitions in order, their positions and sites, and what is known
    // of their types: a type, or the definition index of the value the type comes from.
    let value_names = k
        .blocks
        .iter()
        .flat_map(|b| {
            k.block_params
                .get(b.params.clone())
                .unwrap_or_default()
                .iter()
                .map(|p| p.0)
        })
        .chain(k.insts.iter().filter_map(|i| i.result.map(|r| r.0)));
    let (max_name, count) = value_names.fold((None, 0usize), |(m, c), n| {
        (Some(m.map_or(n, |m: u32| m.max(n))), c + 1)
    });
    let mut values = Names::new(max_name, count);
    let mut def_names: Vec<u32> = Vec::with_capacity(k.insts.len());
    let mut def_locs: Vec<SourceLoc> = Vec::with_capacity(k.insts.len());
    let mut def_sites: Vec<DefSite> = Vec::with_capacity(k.insts.len());
    let mut types: Vec<Option<Type>> = Vec::with_capacity(k.insts.len());
    let mut define = |name: u32, loc: SourceLoc, site: DefSite, ty: Option<Type>| {
        let index = index_u32(def_names.len())?;
        match values.define(name, index) {
            Err(first) => Err(ParseError::new(
                loc,
                format!(
                    "value v{name} is defined twice (first at {})",
                    def_locs[first as usize]
                ),
            )),
            Ok(()) => {
                def_names.push(name);
                def_locs.push(loc);
                def_sites.push(site);
                types.push(ty);
                Ok(())
            }
        }
    };
    let mut params_in_order = true;
    for (bi, b) in k.blocks.iter().enumerate() {
        let params = k.block_params.get(b.params.clone()).unwrap_or_default();
        params_in_order &= params.windows(2).all(|w| w[0].0 < w[1].0);
        for &(name, loc, ty) in params {
            define(name, loc, DefSite::Param(bi), Some(ty))?;
        }
        for ii in b.insts.clone() {
            let Some(inst) = k.insts.get(ii) else { break };
            if let Some((name, loc)) = inst.result {
                let op = inst.data.opcode();
                let ty = inst.explicit_type.or(op.fixed_result_type());
                define(name, loc, DefSite::Result(ii), ty)?;
            }
        }
    }

    // Step 2: numbering. `block_of[i]` is the entity of the `i`-th block of the text,
    // `value_of[d]` the number of the `d`-th value defined.
    let block_names = k.blocks.iter().map(|b| b.name);
    let (block_of, num_blocks): (Vec<Block>, usize) =
        match exact_entity_count(block_names, k.blocks.len()) {
            Some(n) => (
                k.blocks.iter().map(|b| Block::from_u32(b.name)).collect(),
                n,
            ),
            None => {
                let seq = (0..k.blocks.len()).map(index_u32);
                (
                    seq.map(|i| i.map(Block::from_u32))
                        .collect::<Result<_, _>>()?,
                    k.blocks.len(),
                )
            }
        };
    let exact_values =
        exact_entity_count(def_names.iter().copied(), def_names.len()).filter(|_| params_in_order);
    let (value_of, num_values): (Vec<u32>, usize) = match exact_values {
        Some(n) => (def_names.clone(), n),
        None => (
            (0..def_names.len())
                .map(index_u32)
                .collect::<Result<_, _>>()?,
            def_names.len(),
        ),
    };

    // Step 3: uses. Inference links, by definition index, are recorded on the way.
    let mut insts = k.insts;
    let mut type_source = vec![NO_SOURCE; types.len()];
    let mut next_def = 0usize;
    for b in &k.blocks {
        next_def += b.params.len();
        for inst in insts.get_mut(b.insts.clone()).unwrap_or_default() {
            if inst.result.is_some() {
                if types.get(next_def).is_some_and(Option::is_none) {
                    let src = inst.data.opcode().result_type_operand();
                    if let Some(d) = inst
                        .data
                        .args()
                        .get(src)
                        .and_then(|v| values.get(v.as_u32()))
                    {
                        type_source[next_def] = d;
                    }
                }
                next_def += 1;
            }
            let mut undefined: Option<(SourceLoc, String)> = None;
            let mut n = 0;
            inst.data.map_values(|v| {
                let loc = k
                    .value_uses
                    .get(inst.value_uses.start + n)
                    .copied()
                    .unwrap_or(inst.loc);
                n += 1;
                match values
                    .get(v.as_u32())
                    .and_then(|d| value_of.get(d as usize))
                {
                    Some(&number) => Value::from_u32(number),
                    None => {
                        if undefined.as_ref().is_none_or(|(first, _)| loc < *first) {
                            undefined = Some((loc, format!("use of undefined value {v}")));
                        }
                        v
                    }
                }
            });
            for (n, call) in inst.data.branch_destinations_mut().iter_mut().enumerate() {
                let loc = k
                    .block_uses
                    .get(inst.block_uses.start + n)
                    .copied()
                    .unwrap_or(inst.loc);
                match blocks
                    .get(&call.block.as_u32())
                    .and_then(|&i| block_of.get(i))
                {
                    Some(&b) => call.block = b,
                    None => {
                        if undefined.as_ref().is_none_or(|(first, _)| loc < *first) {
                            undefined = Some((loc, format!("unknown block {}", call.block)));
                        }
                    }
                }
            }
            if let Some((loc, message)) = undefined {
                return Err(ParseError::new(loc, message));
            }
        }
    }

    // Step 4: inference. `mark[d] == start + 1` while `d` is on the path walked from
    // `start`, so meeting a marked value means the path has closed a cycle.
    let mut mark = vec![0u32; types.len()];
    let mut path = Vec::new();
    for start in 0..types.len() {
        if types[start].is_some() {
            continue;
        }
        let epoch = index_u32(start + 1)?;
        path.clear();
        let mut cur = start;
        let ty = loop {
            if let Some(ty) = types[cur] {
                break ty;
            }
            let src = type_source[cur];
            if mark[cur] == epoch || src == NO_SOURCE {
                let name = def_names[start];
                let from = def_names.get(type_source[start] as usize);
                let msg = match from {
                    Some(&from) if from == name => format!(
                        "cannot infer the type of v{name}: it is an operand of its own \
                         definition"
                    ),
                    Some(&from) => format!(
                        "cannot infer the type of v{name}: it takes the type of v{from}, \
                         whose type in turn depends, through a cycle of operands, on values \
                         with no known type"
                    ),
                    None => format!("cannot infer the type of v{name}"),
                };
                return Err(ParseError::new(def_locs[start], msg));
            }
            mark[cur] = epoch;
            path.push(cur);
            cur = src as usize;
        };
        for &d in &path {
            types[d] = Some(ty);
        }
    }

    // Step 5: creation. Blocks first, all of them, so the values' placeholder block comes
    // after them. Then values in number order, each creation taking the next number:
    // parameters are appended to their block (in position order, as numbering checked),
    // results come with their instruction.
    let mut func = Function::with_name_signature(k.name, k.signature);
    func.shared_vars = k.shared_vars;
    func.local_vars = k.local_vars;
    // Every table is sized once, from the counts the text gives: filled entity by
    // entity, each would grow (and be copied) one doubling at a time, and every block's
    // parameter and instruction lists several times over.
    func.dfg.reserve(insts.len(), num_values);
    func.layout.reserve(num_blocks, insts.len());
    for _ in 0..num_blocks {
        func.dfg.make_block();
    }
    for (bi, b) in k.blocks.iter().enumerate() {
        if let (false, Some(&block)) = (b.params.is_empty(), block_of.get(bi)) {
            func.dfg.reserve_block_params(block, b.params.len());
        }
    }
    let mut by_number: Vec<Option<u32>> = vec![None; num_values];
    for (d, &number) in value_of.iter().enumerate() {
        if let Some(slot) = by_number.get_mut(number as usize) {
            *slot = Some(index_u32(d)?);
        }
    }
    let (locs, mut datas): (Vec<SourceLoc>, Vec<Option<InstructionData>>) = insts
        .into_iter()
        .map(|raw| (raw.loc, Some(raw.data)))
        .unzip();
    let mut created: Vec<Option<Inst>> = vec![None; datas.len()];
    let mut placeholders: Option<Block> = None;
    for slot in by_number {
        let Some(d) = slot else {
            let block = *placeholders.get_or_insert_with(|| func.dfg.make_block());
            func.dfg.append_block_param(block, PLACEHOLDER_TYPE);
            continue;
        };
        let ty = types
            .get(d as usize)
            .copied()
            .flatten()
            .unwrap_or(Type::I64);
        match def_sites.get(d as usize) {
            Some(&DefSite::Param(bi)) => {
                if let Some(&block) = block_of.get(bi) {
                    func.dfg.append_block_param(block, ty);
                }
            }
            Some(&DefSite::Result(ii)) => {
                if let Some(data) = datas.get_mut(ii).and_then(Option::take) {
                    created[ii] = Some(func.dfg.make_inst(data, Some(ty)));
                }
            }
            None => {}
        }
    }
    // Sized once: filled entity by entity, the maps would grow by a call per entity.
    func.srclocs.resize(datas.len());
    func.block_srclocs.resize(num_blocks);
    for (bi, b) in k.blocks.iter().enumerate() {
        let Some(&block) = block_of.get(bi) else {
            continue;
        };
        func.layout.append_block(block);
        func.layout.reserve_block_insts(block, b.insts.len());
        func.block_srclocs[block] = b.loc;
        for ii in b.insts.clone() {
            let inst = match created.get(ii).copied().flatten() {
                Some(inst) => inst,
                None => match datas.get_mut(ii).and_then(Option::take) {
                    Some(data) => func.dfg.make_inst(data, None),
                    None => continue,
                },
            };
            func.layout.append_inst(inst, block);
            func.srclocs[inst] = locs.get(ii).copied().unwrap_or_default();
        }
    }
    Ok(func)
}

/// `i` as a `u32` entity index; a kernel with more than 4 billion entities is refused
/// rather than silently wrapped.
fn index_u32(i: usize) -> Result<u32, ParseError> {
    u32::try_from(i)
        .ok()
        .filter(|&i| i < u32::MAX)
        .ok_or_else(|| ParseError::new(SourceLoc::default(), "too many entities in one kernel"))
}
