//! Unit tests of the parser: what it accepts, what it builds, and the exact wording and
//! position of its errors.

use super::{parse_function, parse_functions};
use crate::dfg::ValueDef;
use crate::instructions::{InstructionData, Opcode};
use crate::srcloc::SourceLoc;
use crate::types::Type;
use crate::verifier::verify_function;
use crate::{Block, Function, Value};

fn parse(text: &str) -> Function {
    parse_function(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// The error message, with its position, for `text`.
fn err(text: &str) -> String {
    match parse_functions(text) {
        Ok(_) => panic!("parsed without error:\n{text}"),
        Err(e) => e.to_string(),
    }
}

/// Wraps instructions in a kernel with one `i32` parameter `v0`; the first instruction
/// is on line 3, at column 5.
fn body(insts: &str) -> String {
    format!("kernel %k(a: i32) {{\nblock0(v0: i32):\n    {insts}\n    return\n}}\n")
}

#[test]
fn minimal_kernel() {
    let f = parse("kernel %k() {\nblock0:\n    return\n}\n");
    assert_eq!(f.name, "k");
    assert!(f.signature.params.is_empty());
    assert_eq!(f.layout.num_blocks(), 1);
    assert_eq!(f.to_string(), "kernel %k() {\nblock0:\n    return\n}\n");
}

#[test]
fn whitespace_and_comments_are_insignificant() {
    let f = parse(
        "; leading comment\nkernel %k(a:i32,b:i64){block0(v0:i32,v1:i64): v2=iadd v0,v0 \
         ;c\n v3 = iconst.i64 -0x10 return}",
    );
    assert_eq!(
        f.to_string(),
        "kernel %k(a: i32, b: i64) {\nblock0(v0: i32, v1: i64):\n    v2 = iadd v0, v0\n    \
         v3 = iconst.i64 -16\n    return\n}\n"
    );
}

#[test]
fn source_locations_point_at_instruction_starts() {
    let text = "kernel %k(a: i32) {\nblock0(v0: i32):\n    v1 = iadd v0, v0\n  barrier\n\
                \tv2 = ineg v1 ; x\n    return\n}\n";
    let f = parse(text);
    let locs: Vec<SourceLoc> = f.layout.insts().map(|i| f.srclocs[i]).collect();
    assert_eq!(
        locs,
        [
            SourceLoc::new(3, 5),
            SourceLoc::new(4, 3),
            SourceLoc::new(5, 2),
            SourceLoc::new(6, 5)
        ]
    );
}

#[test]
fn names_need_not_be_dense_or_ordered() {
    let f = parse(
        "kernel %k(a: i32) {\nblock7(v10: i32):\n    v3 = iadd v10, v10\n    jump block2(v3)\n\
         block2(v1: i32):\n    return\n}\n",
    );
    // Entities keep the text's numbers.
    assert_eq!(
        f.to_string(),
        "kernel %k(a: i32) {\nblock7(v10: i32):\n    v3 = iadd v10, v10\n    jump block2(v3)\n\
         \nblock2(v1: i32):\n    return\n}\n"
    );
    assert_eq!(f.entry_block(), Some(Block::from_u32(7)));
    assert!(verify_function(&f).is_ok());
}

#[test]
fn forward_references_and_inferred_types() {
    // v5 and v6 are used before their definitions, and v6's type comes from v5, a
    // parameter of a later block.
    let f = parse(
        "kernel %k() {\nblock0:\n    v1 = iconst.i64 0\n    jump block1(v1)\n\
         block2:\n    v6 = iadd v5, v5\n    jump block1(v6)\n\
         block1(v5: i64):\n    v7 = bnot v6\n    brif v8, block2, block3\n\
         block3:\n    v8 = icmp eq v7, v5\n    return\n}\n",
    );
    let types: Vec<Type> = [1, 5, 6, 7, 8]
        .map(|n| f.dfg.value_type(Value::from_u32(n)))
        .into();
    assert_eq!(
        types,
        [Type::I64, Type::I64, Type::I64, Type::I64, Type::I1]
    );
    let entry = f.entry_block().unwrap();
    let jump = f.layout.block_insts(entry)[1];
    let InstructionData::Jump { dest, .. } = f.inst(jump) else {
        panic!()
    };
    assert_eq!(f.layout.blocks()[2], dest.block);
    assert_eq!(
        f.dfg.value_def(dest.args[0]),
        ValueDef::Result(f.layout.block_insts(entry)[0])
    );
}

#[test]
fn inference_follows_long_chains_without_recursion() {
    // Each value takes its type from the next one, defined later; the chain ends at an
    // explicitly typed constant.
    let n = 50_000;
    let mut text = String::from("kernel %k() {\nblock0:\n");
    for i in 1..n {
        text += &format!("    v{i} = ineg v{}\n", i + 1);
    }
    text += &format!("    v{n} = iconst.i16 1\n    return\n}}\n");
    let f = parse(&text);
    assert!((1..=n).all(|i| f.dfg.value_type(Value::from_u32(i)) == Type::I16));
}

#[test]
fn result_types_by_opcode() {
    let f = parse(
        "kernel %k(p: i64) {\n    smem0 = shared 8, align 8\nblock0(v0: i64):\n\
         v1 = iconst.i8 1\n v2 = icmp eq v1, v1\n v3 = lane_id\n v4 = shared_addr smem0\n\
         v5 = f64const 1.0\n v6 = fdemote v5\n v7 = fpromote v6\n v8 = select v2, v5, v5\n\
         v9 = atomic_rmw add global v0, v0\n v10 = atomic_cas shared v4, v3, v3\n\
         v11 = load.i16 global v0\n v12 = grid_dim z\n return\n}\n",
    );
    let types: Vec<Type> = f.dfg.values().map(|v| f.dfg.value_type(v)).collect();
    use Type::*;
    assert_eq!(
        types,
        [I64, I8, I1, I32, I32, F64, F32, F64, F64, I64, I32, I16, I32]
    );
}

#[test]
fn literals_are_stored_as_masked_bits() {
    let f = parse(&body(
        "v1 = iconst.i8 -1\n v2 = iconst.i32 4294967295\n v3 = f32const -0.0",
    ));
    let data: Vec<&InstructionData> = f.layout.insts().map(|i| f.inst(i)).collect();
    assert_eq!(
        data[0],
        &InstructionData::UnaryImm {
            opcode: Opcode::Iconst,
            imm: 0xff
        }
    );
    assert_eq!(
        data[1],
        &InstructionData::UnaryImm {
            opcode: Opcode::Iconst,
            imm: 0xffff_ffff
        }
    );
    assert_eq!(
        data[2],
        &InstructionData::FloatConst {
            opcode: Opcode::F32const,
            bits: 0x8000_0000
        }
    );
}

#[test]
fn memory_declarations() {
    let f = parse(
        "kernel %k() {\n    lmem3 = local 12\n    smem5 = shared 0x100, align 256\n\
         smem1 = shared 4, align 4\nblock0:\n    v0 = shared_addr smem1\n\
         v1 = local_addr lmem3\n    return\n}\n",
    );
    assert_eq!(f.shared_vars.len(), 2);
    assert_eq!(f.local_vars.len(), 1);
    let text = f.to_string();
    assert!(text.contains("    lmem0 = local 12, align 1\n"), "{text}");
    assert!(
        text.contains("    smem0 = shared 256, align 256\n"),
        "{text}"
    );
    assert!(text.contains("v0 = shared_addr smem1\n"), "{text}");
    assert!(text.contains("v1 = local_addr lmem0\n"), "{text}");
}

#[test]
fn several_kernels() {
    let text =
        "kernel %a() {\nblock0:\n    return\n}\n\nkernel %b(x: f64) {\nblock0(v0: f64):\n    \
                return\n}\n";
    let fs = parse_functions(text).unwrap();
    assert_eq!(fs.len(), 2);
    assert_eq!(fs[1].name, "b");
    assert_eq!(
        parse_function(text).unwrap_err().to_string(),
        "6:1: expected the end of the input after kernel %a (the text must hold exactly one \
         kernel), found `kernel`"
    );
}

#[test]
fn kernel_names_may_hold_dots() {
    assert_eq!(
        parse("kernel %lib.f_2() {\nblock0:\n return\n}").name,
        "lib.f_2"
    );
}

#[test]
fn errors_name_position_and_expectation() {
    let cases: &[(&str, &str)] = &[
        (
            "v1 = iadd v0 v0",
            "3:18: expected `,` after the first operand of `iadd`, found `v0`",
        ),
        ("v1 = iad v0, v0", "3:10: unknown opcode `iad`"),
        ("v1 = iadd v0, v9", "3:19: use of undefined value v9"),
        (
            "v1 = iadd v0, v0\n v1 = iadd v0, v0",
            "4:2: value v1 is defined twice (first at 3:5)",
        ),
        (
            "v0 = iadd v0, v0",
            "3:5: value v0 is defined twice (first at 2:8)",
        ),
        ("jump block7", "3:10: unknown block block7"),
        (
            "v1 = iconst.i8 300",
            "3:20: integer literal 300 does not fit in i8",
        ),
        (
            "v1 = iconst.i8 -129",
            "3:20: integer literal -129 does not fit in i8",
        ),
        (
            "v1 = iconst.i64 99999999999999999999999",
            "3:21: integer literal 99999999999999999999999 does not fit in i64",
        ),
        (
            "v1 = iconst.i1 2",
            "3:20: integer literal 2 does not fit in i1",
        ),
        (
            "v1 = iconst.i33 2",
            "3:17: unknown type `i33`: expected i1, i8, i16, i32, i64, f32 or f64",
        ),
        (
            "v1 = iconst.f32 2",
            "3:17: `iconst` needs an integer type, found `f32`",
        ),
        (
            "v1 = iconst.i32 12abc",
            "3:21: invalid integer literal `12abc`: expected decimal digits, or hex digits \
             after `0x`",
        ),
        (
            "v1 = shared_addr smem2",
            "3:22: unknown shared variable smem2",
        ),
        (
            "v1 = local_addr lmem0",
            "3:21: unknown local variable lmem0",
        ),
        (
            "v1 = load.i32 global v0+2147483648",
            "3:28: offset +2147483648 of `load` does not fit in i32",
        ),
        (
            "v1 = load.i32 global v0-99999999999999999999999999",
            "3:28: offset -99999999999999999999999999 of `load` does not fit in i32",
        ),
        (
            "v1 = load global v0",
            "3:15: expected `.` and the result type after `load`, as in `load.i32`, found \
             `global`",
        ),
        (
            "v1 = iadd.i32 v0, v0",
            "3:14: `iadd` takes no type suffix: its result type is implied",
        ),
        (
            "v1 = store global v0, v0",
            "3:10: `store` has no result to assign to v1",
        ),
        (
            "iadd v0, v0",
            "3:5: `iadd` defines a value: write it as `vN = iadd ...`",
        ),
        (
            "v1 = icmp lt v0, v0",
            "3:15: unknown integer condition code `lt` after `icmp`: expected one of eq, ne, \
             slt, sle, sgt, sge, ult, ule, ugt, uge",
        ),
        (
            "v1 = thread_id w",
            "3:20: unknown dimension `w` after `thread_id`: expected one of x, y, z",
        ),
        (
            "v1 = load.i32 heap v0",
            "3:19: unknown address space `heap` after `load`: expected one of global, shared, \
             local",
        ),
        (
            "v1 = atomic_rmw nand global v0, v0",
            "3:21: unknown atomic operation `nand` after `atomic_rmw`: expected one of add, \
             smin, smax, umin, umax, and, or, xor, xchg",
        ),
        (
            "v1 = f32const 1e39",
            "3:19: float literal 1e39 is out of range for f32 (write `inf` for infinity)",
        ),
        (
            "v1 = f32const -nan",
            "3:19: `nan` takes no sign; write other NaNs as raw bits, such as `0xffc00000`",
        ),
        (
            "v1 = f32const 0x100000000",
            "3:19: float bits 0x100000000 do not fit in f32",
        ),
        (
            "v1 = f64const v0",
            "3:19: expected a f64 literal after `f64const`, found `v0`",
        ),
        (
            "br_table v0, block0, [block0 block0]",
            "3:34: expected `,` or `]` after entry 0 of the table of `br_table`, found \
             `block0`",
        ),
        (
            "brif v0, v0, block0",
            "3:14: expected a block such as `block1` as the first destination of `brif`, \
             found `v0`",
        ),
        (
            "jump block0(v0 v0)",
            "3:20: expected `,` or `)` after an argument of block0, found `v0`",
        ),
        ("v1 = iadd v0, v0 #", "3:22: unexpected character `#`"),
        (
            "v01 = iadd v0, v0",
            "3:5: invalid name `v01`: entity numbers have no leading zeros and fit in 32 bits",
        ),
        ("v1 iadd v0, v0", "3:8: expected `=` after v1, found `iadd`"),
        (
            "v1 = iadd v0, v0, v0",
            "3:21: unexpected `,`: `iadd` takes no more operands",
        ),
        (
            "jump block0, block0",
            "3:16: unexpected `,`: `jump` takes no more operands",
        ),
        (
            "smem0 = shared 4",
            "3:5: memory declarations must come before the first block",
        ),
    ];
    for (insts, expected) in cases {
        assert_eq!(&err(&body(insts)), expected, "for {insts:?}");
    }
}

#[test]
fn kernel_level_errors() {
    let cases: &[(&str, &str)] = &[
        ("", "1:1: unexpected end of input: expected `kernel`"),
        (
            "  ; only a comment\n",
            "2:1: unexpected end of input: expected `kernel`",
        ),
        ("func %k() {}", "1:1: expected `kernel`, found `func`"),
        (
            "kernel k() {}",
            "1:8: expected a kernel name such as `%main` after `kernel`, found `k`",
        ),
        ("kernel %k() {\n}", "1:1: kernel %k has no blocks"),
        (
            "kernel %k() {\nblock0:\n    return\n",
            "4:1: unexpected end of input: expected `}` to close kernel %k",
        ),
        (
            "kernel %k() {\nblock0:\n    return\nblock0:\n    return\n}",
            "4:1: block0 is defined twice (first at 2:1)",
        ),
        (
            "kernel %k() {\nblock0:\n    return\n}\nkernel %k() {\nblock0:\n    return\n}",
            "5:8: kernel %k is defined twice (first at 1:8)",
        ),
        (
            "kernel %k(a: i32, a: i64) {\nblock0:\n    return\n}",
            "1:19: parameter `a` of kernel %k is declared twice (first at 1:11)",
        ),
        (
            "kernel %k(a: i32 b: i64) {}",
            "1:18: expected `,` or `)` after parameter `a`, found `b`",
        ),
        (
            "kernel %k(a: u32) {}",
            "1:14: unknown type `u32`: expected i1, i8, i16, i32, i64, f32 or f64",
        ),
        (
            "kernel %k() {\n    return\n}",
            "2:5: expected a block header such as `block0:`, found `return`",
        ),
        (
            "kernel %k() {\n    smem0 = shared 16, align 12\nblock0:\n    return\n}",
            "2:30: alignment 12 of smem0 is not a power of two",
        ),
        (
            "kernel %k() {\n    smem0 = shared 16, align 0\nblock0:\n    return\n}",
            "2:30: alignment 0 of smem0 is not a power of two",
        ),
        (
            "kernel %k() {\n    lmem0 = local 4294967296\nblock0:\n    return\n}",
            "2:19: size 4294967296 of lmem0 does not fit in 32 bits",
        ),
        (
            "kernel %k() {\n    lmem0 = shared 4\nblock0:\n    return\n}",
            "2:13: expected `local` after `lmem0 =`, found `shared`",
        ),
        (
            "kernel %k() {\n    smem0 = shared 4\n    smem0 = shared 4\nblock0:\n    return\n}",
            "3:5: smem0 is defined twice (first at 2:5)",
        ),
        (
            "kernel %k() {\nblock0:\n    v1 = iadd v2, v2\n    v2 = iadd v1, v1\n    return\n}",
            "3:5: cannot infer the type of v1: it takes the type of v2, whose type in turn \
             depends, through a cycle of operands, on values with no known type",
        ),
        (
            "kernel %k() {\nblock0:\n    v1 = iadd v1, v1\n    return\n}",
            "3:5: cannot infer the type of v1: it is an operand of its own definition",
        ),
        (
            "kernel %k() {\nblock0:\n    jump block1(v5)\nblock1(v1: i32):\n    return\n}",
            "3:17: use of undefined value v5",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(&err(text), expected, "for {text:?}");
    }
}

#[test]
fn first_undefined_name_in_an_instruction_is_reported() {
    assert_eq!(
        err(&body("brif v0, block9(v7), block8")),
        "3:14: unknown block block9"
    );
    assert_eq!(
        err(&body("brif v0, block0(v7), block8")),
        "3:21: use of undefined value v7"
    );
}

// ---------------------------------------------------------------------------------------
// Numbering: the text's numbers are kept when possible.

/// A kernel whose values are numbered against the text order.
const OUT_OF_ORDER: &str = "kernel %k(a: i64) {\nblock0(v0: i64):\n    v3 = iconst.i64 1\n    \
                            v2 = iadd v0, v3\n    jump block1(v2)\n\nblock1(v1: i64):\n    \
                            return\n}\n";

#[test]
fn out_of_order_numbers_are_kept() {
    let f = parse(OUT_OF_ORDER);
    assert_eq!(f.to_string(), OUT_OF_ORDER);
    let entry = f.entry_block().unwrap();
    let first = f.layout.block_insts(entry)[0];
    assert_eq!(f.dfg.inst_result(first), Some(Value::from_u32(3)));
    assert_eq!(f.dfg.num_values(), 4);
    assert!(verify_function(&f).is_ok());
    let again = parse(&f.to_string());
    assert_eq!(again, f);
    assert_eq!(again.to_string(), OUT_OF_ORDER);
}

#[test]
fn verifier_messages_name_the_texts_values() {
    let text = "kernel %k(a: i64) {\nblock0(v0: i64):\n    v3 = iconst.i32 1\n    \
                v2 = iadd v0, v3\n    return\n}\n";
    let e = verify_function(&parse(text)).unwrap_err().to_string();
    assert_eq!(
        e,
        "4:5: v2 = iadd v0, v3: operands have different types (i64, i32)"
    );
}

#[test]
fn gaps_become_placeholders_nothing_uses() {
    // v1..v4 and block1..block3 are not defined.
    let text = "kernel %k(out: i64) {\nblock0(v0: i64):\n    v5 = iconst.i32 7\n    \
                jump block4(v5)\n\nblock4(v6: i32):\n    store global v6, v0\n    \
                return\n}\n";
    let f = parse(text);
    assert_eq!(f.to_string(), text);
    assert_eq!(f.layout.blocks(), [Block::from_u32(0), Block::from_u32(4)]);
    // Blocks 0 to 4, and one outside the layout holding the placeholder values.
    assert_eq!(f.dfg.num_blocks(), 6);
    assert_eq!(f.dfg.num_values(), 7);
    let holder = Block::from_u32(5);
    assert!(!f.layout.is_block_inserted(holder));
    assert_eq!(
        f.dfg.block_params(holder),
        [1, 2, 3, 4].map(Value::from_u32)
    );
    assert!(verify_function(&f).is_ok());

    // The placeholders disturb neither the interpreter nor a round trip.
    let mut launch = crate::launch::Launch::default();
    launch.add_buffer("out=i32[1]").unwrap();
    let mut prepared = launch.prepare(&f).unwrap();
    crate::interp::run(&f, &mut prepared, &Default::default()).unwrap();
    assert_eq!(
        prepared.memory.buffer_values("out").unwrap(),
        [crate::launch::TypedValue::Signed(7)]
    );
    assert_eq!(parse(&f.to_string()), f);
}

#[test]
fn parameters_numbered_out_of_order_fall_back_to_text_order() {
    // `v5` before `v3` in one block: values are numbered in text order instead, blocks
    // keep their numbers.
    let f = parse(
        "kernel %k(a: i32) {\nblock0(v0: i32):\n    jump block2(v0, v0)\n\
         block2(v5: i32, v3: i32):\n    v9 = iadd v5, v3\n    return\n}\n",
    );
    assert_eq!(
        f.to_string(),
        "kernel %k(a: i32) {\nblock0(v0: i32):\n    jump block2(v0, v0)\n\
         \nblock2(v1: i32, v2: i32):\n    v3 = iadd v1, v2\n    return\n}\n"
    );
    assert!(verify_function(&f).is_ok());
}

#[test]
fn huge_numbers_fall_back_to_text_order() {
    let f = parse(
        "kernel %k(a: i32) {\nblock4000000000(v4000000000: i32):\n    \
         v7 = iadd v4000000000, v4000000000\n    jump block3\n\
         block3:\n    return\n}\n",
    );
    // Nothing of the size of the numbers was allocated.
    assert_eq!(f.dfg.num_values(), 2);
    assert_eq!(f.dfg.num_blocks(), 2);
    assert_eq!(
        f.to_string(),
        "kernel %k(a: i32) {\nblock0(v0: i32):\n    v1 = iadd v0, v0\n    jump block1\n\
         \nblock1:\n    return\n}\n"
    );
    // Only the kind of entity with huge numbers falls back.
    let f = parse(
        "kernel %k(a: i32) {\nblock0(v4000000000: i32):\n    jump block3\nblock3:\n    \
         return\n}\n",
    );
    assert_eq!(f.dfg.num_values(), 1);
    assert_eq!(f.layout.blocks(), [Block::from_u32(0), Block::from_u32(3)]);
}

#[test]
fn the_fallback_threshold_is_four_per_definition_plus_1024() {
    // One definition: numbers up to 4 + 1024 are kept.
    let kernel = |n: u32| format!("kernel %k(a: i32) {{\nblock0(v{n}: i32):\n    return\n}}\n");
    let kept = parse(&kernel(1028));
    assert_eq!(kept.dfg.num_values(), 1029);
    assert_eq!(kept.to_string(), kernel(1028));
    let renumbered = parse(&kernel(1029));
    assert_eq!(renumbered.dfg.num_values(), 1);
    assert_eq!(renumbered.to_string(), kernel(0));
}

#[test]
fn block_source_locations_are_their_headers() {
    let f = parse("kernel %k() {\nblock0:\n    jump block1\n\n  block1:\n    return\n}\n");
    let locs: Vec<SourceLoc> = f
        .layout
        .blocks()
        .iter()
        .map(|&b| f.block_srclocs[b])
        .collect();
    assert_eq!(locs, [SourceLoc::new(2, 1), SourceLoc::new(5, 3)]);
}
