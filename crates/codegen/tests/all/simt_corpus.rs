//! Every kernel of the corpus, parsed, lowered and allocated, round-trips through the
//! bytecode and an ELF object: parse → lower → allocate → encode → object → load.

use std::path::Path;
use warplift_codegen::isa::simt::{
    decode, decoded_to_mir, disassemble_object, encode, load_object, write_object,
};
use warplift_codegen::lower::lower;
use warplift_codegen::mir::{MBlock, MirFunction};
use warplift_codegen::regalloc::{allocate, RegisterFile, ReservationRequest};
use warplift_filetests::Walk;

fn allocated(path: &Path) -> Vec<MirFunction> {
    let text = std::fs::read_to_string(path).unwrap();
    let funcs = warplift_ir::parser::parse_functions(&text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    funcs
        .iter()
        .map(|f| {
            let mir = lower(f).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            allocate(&mir, &RegisterFile::MAX, &ReservationRequest::none())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
                .func
        })
        .collect()
}

#[test]
fn every_corpus_kernel_round_trips_through_an_object() {
    let kernels: usize = Walk::corpus()
        .each(|file| {
            let path = &file.path;
            let mut kernels = 0;
            let funcs = allocated(path);
            let codes: Vec<_> = funcs
                .iter()
                .map(|f| encode(f).unwrap_or_else(|e| panic!("{}: {e}\n{f}", path.display())))
                .collect();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let bytes = write_object(&codes, &name).unwrap();
            let obj = load_object(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(obj.kernels.len(), funcs.len());
            for ((f, code), loaded) in funcs.iter().zip(&codes).zip(&obj.kernels) {
                assert_eq!(loaded.kernel, decode(&code.code, &code.info).unwrap());
                for inst in &code.insts {
                    assert_eq!(
                        loaded.lines.lookup(inst.pc),
                        inst.srcloc,
                        "{name} {}",
                        f.name
                    );
                }
                // Back to MIR: the allocated function's blocks, in placement order.
                let back = decoded_to_mir(&loaded.kernel, |pc| loaded.lines.lookup(pc));
                let number = |b: MBlock| f.order.iter().position(|&o| o == b).unwrap() as u32;
                for (i, &b) in f.order.iter().enumerate() {
                    let mut want = f.blocks[b].insts.clone();
                    for inst in &mut want {
                        inst.kind
                            .for_each_target_mut(|t| t.block = MBlock::from_u32(number(t.block)));
                    }
                    let got = &back.blocks[MBlock::from_u32(i as u32)];
                    assert_eq!(want, got.insts, "{name} {}", f.name);
                    assert_eq!(f.blocks[b].origin, got.origin);
                }
                kernels += 1;
            }
            assert!(disassemble_object(&obj).contains(&format!("{name}:")));
            kernels
        })
        .into_iter()
        .sum();
    assert!(kernels > 0);
}
