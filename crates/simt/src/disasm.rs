//! Disassembly: text listings of kernels and objects.
//!
//! A listing shows one instruction per line with its pc, in the syntax the opcode table
//! generates (`mnemonic.modifiers operands`), block labels with the IR block each block
//! implements, and, for objects, the source location of each run of instructions from
//! the line table, like `objdump -dl` (`-S` with [`disassemble_object_with_source`]).

use crate::decode::DecodedKernel;
use crate::object::{LineTable, LoadedObject};
use crate::ops::display_guard;
use crate::regs::RegClass;
use core::fmt::Write;
use warplift_ir::SourceLoc;

/// The listing of one kernel, without source information.
pub fn disassemble(kernel: &DecodedKernel) -> String {
    let mut out = String::new();
    listing(kernel, None, "", None, &mut out);
    out
}

/// The listing of every kernel of `object`, with source locations.
pub fn disassemble_object(object: &LoadedObject) -> String {
    object_listing(object, None)
}

/// The listing of every kernel of `object`, with source locations and the text of the
/// source lines, taken from `source` (the `.wir` file the object was compiled from).
pub fn disassemble_object_with_source(object: &LoadedObject, source: &str) -> String {
    object_listing(object, Some(source))
}

fn object_listing(object: &LoadedObject, source: Option<&str>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "; object compiled from {}", object.source_name);
    let lines: Option<Vec<&str>> = source.map(|s| s.lines().collect());
    for k in &object.kernels {
        out.push('\n');
        listing(
            &k.kernel,
            Some(&k.lines),
            &object.source_name,
            lines.as_deref(),
            &mut out,
        );
    }
    out
}

fn listing(
    k: &DecodedKernel,
    lines: Option<&LineTable>,
    source_name: &str,
    source: Option<&[&str]>,
    out: &mut String,
) {
    let info = &k.info;
    let _ = write!(out, "kernel %{}(", info.name);
    for (i, p) in info.params.iter().enumerate() {
        let _ = write!(out, "{}{}: {}", if i > 0 { ", " } else { "" }, p.name, p.ty);
    }
    let _ = writeln!(out, ")");
    let regs: Vec<String> = RegClass::ALL
        .iter()
        .map(|c| format!("{} {}", info.num_regs[c.index()], c.name()))
        .collect();
    let _ = writeln!(
        out,
        "    ; registers: {}; shared {} bytes; local {} bytes + {} spill slots; {} bytes of code",
        regs.join(", "),
        info.shared_size,
        info.local_size,
        info.spill_slots,
        k.code_len
    );
    let mut last_loc: Option<SourceLoc> = None;
    let mut next_block = 0;
    for (i, inst) in k.insts.iter().enumerate() {
        if k.block_starts.get(next_block) == Some(&i) {
            let b = next_block;
            next_block += 1;
            let _ = write!(out, "block{b}:");
            if let Some(o) = info.blocks[b].origin {
                let _ = write!(out, "  ; {o}");
            }
            out.push('\n');
        }
        if let Some(lines) = lines {
            let loc = lines.lookup(inst.pc);
            if last_loc != Some(loc) {
                last_loc = Some(loc);
                let _ = writeln!(out, "    ; {source_name}:{loc}");
                let text = source
                    .and_then(|s| s.get((loc.line as usize).wrapping_sub(1)))
                    .map(|t| t.trim());
                if let Some(t) = text {
                    let _ = writeln!(out, "    ;     {t}");
                }
            }
        }
        let _ = writeln!(
            out,
            "    {:#06x}:  {}{}",
            inst.pc,
            display_guard(inst.guard),
            inst.op.display()
        );
    }
}
