//! Graphviz drawings of a machine function's CFG (`warplift cfg --dot`): one node per
//! block in block order, labelled with the IR block it implements; guard blocks made by
//! linearization are shaded and edge-split blocks dashed, so the shape a pass gave the CFG
//! can be seen; divergent branches' edges are drawn bold, uniform ones plain.

use super::{BlockKind, MInstKind, MirFunction};
use core::fmt::Write;

/// The CFG of `func` in Graphviz `dot` syntax.
pub fn to_dot(func: &MirFunction) -> String {
    to_dot_marked(func, &|_| None)
}

/// [`to_dot`], with the code blocks whose IR origin `mark` names filled in a colour and
/// labelled (a pass's annotation: `meld` marks the blocks it melded): `mark` gives the
/// label and the Graphviz colour.
pub fn to_dot_marked(
    func: &MirFunction,
    mark: &dyn Fn(warplift_ir::Block) -> Option<(&'static str, &'static str)>,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "digraph \"{}\" {{", escape(&func.name));
    let _ = writeln!(out, "    node [shape=box, fontname=monospace];");
    for (position, &block) in func.order.iter().enumerate() {
        let data = &func.blocks[block];
        let mut label = format!("{block}");
        if let Some(origin) = data.origin {
            let _ = write!(label, "\\n{origin}");
        }
        if data.kind != BlockKind::Code {
            let _ = write!(label, "\\n({})", data.kind.name());
        }
        let _ = write!(label, "\\n{} insts", data.insts.len());
        let marked = data.origin.and_then(mark);
        if let Some((what, _)) = marked {
            let _ = write!(label, "\\n{what}");
        }
        let fill = marked.map(|(_, colour)| format!(", style=filled, fillcolor={colour}"));
        let style = match data.kind {
            BlockKind::Code => fill.as_deref().unwrap_or(""),
            BlockKind::Guard => ", style=filled, fillcolor=lightgray",
            BlockKind::EdgeSplit => ", style=dashed",
            BlockKind::PassMade => ", style=dotted",
        };
        let entry = if position == 0 { ", penwidth=2" } else { "" };
        let _ = writeln!(out, "    {block} [label=\"{label}\"{style}{entry}];");
    }
    for &block in &func.order {
        let Some(term) = func.terminator(block) else {
            continue;
        };
        match &term.kind {
            MInstKind::Jump { dest } => {
                let _ = writeln!(out, "    {block} -> {};", dest.block);
            }
            MInstKind::Branch {
                negated,
                taken,
                not_taken,
                divergent,
                ..
            } => {
                let style = if *divergent { ", style=bold" } else { "" };
                let (t, f) = if *negated { ("F", "T") } else { ("T", "F") };
                let _ = writeln!(
                    out,
                    "    {block} -> {} [label=\"{t}\"{style}];",
                    taken.block
                );
                let _ = writeln!(
                    out,
                    "    {block} -> {} [label=\"{f}\"{style}];",
                    not_taken.block
                );
            }
            _ => {}
        }
    }
    out.push_str("}\n");
    out
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mir::{BlockTarget, MInst, Reg, RegClass};
    use warplift_ir::SourceLoc;

    #[test]
    fn blocks_edges_and_kinds_are_drawn() {
        let mut f = MirFunction::new("k", vec![]);
        let [a, b, c] = [0, 1, 2].map(|n| f.new_block(Some(warplift_ir::Block::from_u32(n))));
        f.blocks[c].kind = BlockKind::Guard;
        f.order = vec![a, b, c];
        let p = Reg::phys(0, RegClass::Pred);
        let branch = MInstKind::Branch {
            pred: p,
            negated: false,
            taken: BlockTarget::new(b),
            not_taken: BlockTarget::new(c),
            divergent: true,
        };
        f.blocks[a]
            .insts
            .push(MInst::new(branch, SourceLoc::default()));
        for x in [b, c] {
            f.blocks[x]
                .insts
                .push(MInst::new(MInstKind::Ret, SourceLoc::default()));
        }
        let dot = to_dot(&f);
        assert!(dot.starts_with("digraph \"k\" {"));
        assert!(
            dot.contains("mblock0 -> mblock1 [label=\"T\", style=bold];"),
            "{dot}"
        );
        assert!(dot.contains("mblock0 -> mblock2 [label=\"F\", style=bold];"));
        assert!(dot.contains("(guard)") && dot.contains("fillcolor=lightgray"));
    }
}
