//! The build pass: a [`RawKernel`] to a [`Function`].
//!
//! The syntax pass has read the whole kernel, so every definition is known and uses may
//! be resolved in any order. The pass runs in four linear steps:
//!
//! 1. collect the definitions of blocks and values in text order, rejecting duplicates;
//!    the `i`-th block defined gets `Block::from_u32(i)` and the `i`-th value defined
//!    `Value::from_u32(i)`, exactly the entities step 4 will create in that order;
//! 2. map every use from its text name to that entity, rejecting undefined names;
//! 3. infer the result types the text leaves implicit (`v3 = iadd v1, v2` has the type of
//!    `v1`, which may be defined further down);
//! 4. create blocks, parameters and instructions in text order.
//!
//! Type inference: a result whose type is not written or fixed by its opcode takes the
//! type of exactly one operand. Following these "takes its type from" links from any value
//! ends at a value of known type or goes round a cycle (`v1 = iadd v2, v2` and
//! `v2 = iadd v1, v1`, which no execution could reach but text can say). Each value is
//! walked at most once, with an explicit path instead of recursion, so long chains cost
//! linear time and no stack.

use super::syntax::RawKernel;
use super::ParseError;
use crate::entities::{Block, Value};
use crate::function::Function;
use crate::srcloc::SourceLoc;
use crate::types::Type;
use std::collections::hash_map::Entry;
use std::collections::HashMap;

/// Marks "no type source" in the inference links.
const NO_SOURCE: u32 = u32::MAX;

/// Builds the function `k` describes, or says why it cannot.
pub(crate) fn build(k: RawKernel<'_>) -> Result<Function, ParseError> {
    // Step 1: definitions.
    let mut blocks: HashMap<u32, (Block, SourceLoc)> = HashMap::with_capacity(k.blocks.len());
    for (i, b) in k.blocks.iter().enumerate() {
        match blocks.entry(b.name) {
            Entry::Occupied(e) => {
                return Err(ParseError::new(
                    b.loc,
                    format!("block{} is defined twice (first at {})", b.name, e.get().1),
                ))
            }
            Entry::Vacant(e) => {
                e.insert((Block::from_u32(index_u32(i)?), b.loc));
            }
        }
    }

    // Text names of definitions in order, their positions, and what is known of their
    // types: a type, or the definition index of the value the type comes from.
    let mut values: HashMap<u32, u32> = HashMap::with_capacity(k.insts.len());
    let mut def_names: Vec<u32> = Vec::with_capacity(k.insts.len());
    let mut def_locs: Vec<SourceLoc> = Vec::with_capacity(k.insts.len());
    let mut types: Vec<Option<Type>> = Vec::with_capacity(k.insts.len());
    let mut define = |name: u32, loc: SourceLoc, ty: Option<Type>| -> Result<(), ParseError> {
        let index = index_u32(def_names.len())?;
        match values.entry(name) {
            Entry::Occupied(e) => Err(ParseError::new(
                loc,
                format!(
                    "value v{name} is defined twice (first at {})",
                    def_locs[*e.get() as usize]
                ),
            )),
            Entry::Vacant(e) => {
                e.insert(index);
                def_names.push(name);
                def_locs.push(loc);
                types.push(ty);
                Ok(())
            }
        }
    };
    for b in &k.blocks {
        for &(name, loc, ty) in &b.params {
            define(name, loc, Some(ty))?;
        }
        for inst in k.insts.get(b.insts.clone()).unwrap_or_default() {
            if let Some((name, loc)) = inst.result {
                let op = inst.data.opcode();
                define(name, loc, inst.explicit_type.or(op.fixed_result_type()))?;
            }
        }
    }

    // Step 2: uses. Inference links are recorded on the way, now that operands name
    // definition indices.
    let mut insts = k.insts;
    let mut type_source = vec![NO_SOURCE; types.len()];
    let mut next_def = 0usize;
    for b in &k.blocks {
        next_def += b.params.len();
        for inst in insts.get_mut(b.insts.clone()).unwrap_or_default() {
            let mut undefined: Option<(SourceLoc, String)> = None;
            let mut n = 0;
            inst.data.map_values(|v| {
                let loc = k
                    .value_uses
                    .get(inst.value_uses.start + n)
                    .copied()
                    .unwrap_or(inst.loc);
                n += 1;
                match values.get(&v.as_u32()) {
                    Some(&d) => Value::from_u32(d),
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
                match blocks.get(&call.block.as_u32()) {
                    Some(&(b, _)) => call.block = b,
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
            if inst.result.is_some() {
                if types[next_def].is_none() {
                    let src = inst.data.opcode().result_type_operand();
                    if let Some(v) = inst.data.args().get(src) {
                        type_source[next_def] = v.as_u32();
                    }
                }
                next_def += 1;
            }
        }
    }

    // Step 3: inference. `mark[d] == start + 1` while `d` is on the path walked from
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

    // Step 4: creation, in text order, so entities get the numbers step 1 promised.
    let mut func = Function::with_name_signature(k.name, k.signature);
    func.shared_vars = k.shared_vars;
    func.local_vars = k.local_vars;
    let mut insts = insts.into_iter();
    let mut next_def = 0usize;
    let ty_of = |next_def: &mut usize| {
        let ty = types.get(*next_def).copied().flatten().unwrap_or(Type::I64);
        *next_def += 1;
        ty
    };
    for b in &k.blocks {
        let block = func.dfg.make_block();
        func.layout.append_block(block);
        for _ in &b.params {
            let ty = ty_of(&mut next_def);
            func.dfg.append_block_param(block, ty);
        }
        for raw in insts.by_ref().take(b.insts.len()) {
            let result = raw.result.map(|_| ty_of(&mut next_def));
            let inst = func.dfg.make_inst(raw.data, result);
            func.layout.append_inst(inst, block);
            func.srclocs[inst] = raw.loc;
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
