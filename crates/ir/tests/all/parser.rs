//! Tests of the `.wir` parser against the printer: round trips over hand-written kernels
//! that cover every opcode and literal form, over random functions built through the
//! DFG with scrambled numbering, robustness against truncated and mutated text, and a
//! large generated kernel.

use std::panic::{catch_unwind, AssertUnwindSafe};
use warplift_ir::condcodes::{AddrSpace, AtomicRmwOp, Dim, FloatCC, IntCC};
use warplift_ir::parser::{parse_function, parse_functions};
use warplift_ir::write::inst_to_string;
use warplift_ir::{
    Block, BlockCall, Function, InstructionData, InstructionFormat, MemVarData, Opcode, Param,
    Signature, Type, Value,
};

const ALL_OPCODES: &str = include_str!("../parser_data/all_opcodes.wir");
const SAXPY: &str = include_str!("../parser_data/saxpy.wir");
const LOOPS: &str = include_str!("../parser_data/loops.wir");

/// A small fixed-seed generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// Checks that `f` survives printing and parsing: the parse is structurally equal and
/// keeps the printed names (a printed function numbers every block's parameters in
/// increasing order, and these functions leave no huge gaps, so nothing falls back to
/// text order), the parse's printing is a fixed point, and every instruction's and
/// block's source location points at its text.
fn check_round_trip(f: &Function) {
    let text = f.to_string();
    let g = parse_function(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(g == *f, "parse(print(f)) != f:\n{text}\n{g}");
    assert_eq!(g.to_string(), text);
    let canonical = g.to_string();
    let h = parse_function(&canonical).unwrap();
    assert_eq!(h.to_string(), canonical);
    assert!(h == g);
    let lines: Vec<&str> = text.lines().collect();
    for &b in g.layout.blocks() {
        let loc = g.block_srclocs[b];
        let line = lines[loc.line as usize - 1];
        let at: String = line.chars().skip(loc.col as usize - 1).collect();
        assert!(
            at.starts_with(&format!("{b}")),
            "srcloc {loc} of {b} points at `{at}`"
        );
    }
    for (fi, gi) in f.layout.insts().zip(g.layout.insts()) {
        let loc = g.srclocs[gi];
        let line = lines[loc.line as usize - 1];
        let at: String = line.chars().skip(loc.col as usize - 1).collect();
        assert!(
            at.starts_with(&inst_to_string(f, fi)),
            "srcloc {loc} of `{}` points at `{at}`",
            inst_to_string(f, fi)
        );
    }
}

#[test]
fn canonical_texts_print_back_identically() {
    for text in [ALL_OPCODES, SAXPY] {
        let f = parse_function(text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(f.to_string(), text);
        check_round_trip(&f);
    }
    let fs = parse_functions(LOOPS).unwrap();
    assert_eq!(fs.len(), 2);
    let printed: Vec<String> = fs.iter().map(|f| f.to_string()).collect();
    assert_eq!(printed.join("\n"), LOOPS);
    for f in &fs {
        check_round_trip(f);
    }
}

#[test]
fn every_opcode_is_covered_by_the_sample() {
    let f = parse_function(ALL_OPCODES).unwrap();
    for &op in Opcode::ALL {
        assert!(
            f.layout.insts().any(|i| f.inst(i).opcode() == op),
            "{op} is missing from all_opcodes.wir"
        );
    }
}

#[test]
fn float_literals_keep_their_bits() {
    let f = parse_function(ALL_OPCODES).unwrap();
    let bits: Vec<u64> = f
        .layout
        .insts()
        .filter_map(|i| match f.inst(i) {
            InstructionData::FloatConst { bits, .. } => Some(*bits),
            _ => None,
        })
        .collect();
    let expected_f32: [u32; 6] = [
        1.5f32.to_bits(),
        (-0.0f32).to_bits(),
        0,
        f32::INFINITY.to_bits(),
        f32::NEG_INFINITY.to_bits(),
        0x7fff_ffff,
    ];
    for (got, want) in bits.iter().zip(expected_f32) {
        assert_eq!(*got, u64::from(want));
    }
    assert!(bits.contains(&0x7fc0_0000));
    assert!(bits.contains(&0xffc0_0001));
    assert!(bits.contains(&1), "smallest f32 subnormal 1e-45");
    assert!(bits.contains(&0xfff0_0000_0000_0001));
    assert!(bits.contains(&(-0.0f64).to_bits()));
}

#[test]
fn several_kernels_in_one_text() {
    let mut texts = vec![ALL_OPCODES.to_string(), SAXPY.to_string()];
    texts.extend(
        parse_functions(LOOPS)
            .unwrap()
            .iter()
            .map(|f| f.to_string()),
    );
    let joined = texts.join("\n; next kernel\n\n");
    let fs = parse_functions(&joined).unwrap();
    assert_eq!(fs.len(), 4);
    for (f, text) in fs.iter().zip(&texts) {
        assert_eq!(&f.to_string(), text);
    }
}

const INT_TYPES: [Type; 5] = [Type::I1, Type::I8, Type::I16, Type::I32, Type::I64];

fn random_type(rng: &mut Rng) -> Type {
    rng.pick(&Type::ALL)
}

/// Integer constants biased towards the extremes of the type.
fn random_imm(rng: &mut Rng, ty: Type) -> u64 {
    let m = ty.mask();
    let x = match rng.below(6) {
        0 => 0,
        1 => m,
        2 => m >> 1,
        3 => (m >> 1) + 1,
        4 => rng.below(5) as u64,
        _ => rng.next(),
    };
    x & m
}

/// Float bits biased towards special values: zeros, infinities, NaNs with payloads,
/// subnormals, extremes.
fn random_float_bits(rng: &mut Rng, f32: bool) -> u64 {
    let special32: [u32; 10] = [
        0,
        0x8000_0000,
        0x7f80_0000,
        0xff80_0000,
        0x7fff_ffff,
        0x7fc0_0000,
        0xff80_0001,
        1,
        0x007f_ffff,
        0x7f7f_ffff,
    ];
    let special64: [u64; 10] = [
        0,
        1 << 63,
        0x7ff0_0000_0000_0000,
        0xfff0_0000_0000_0000,
        0x7fff_ffff_ffff_ffff,
        0x7ff8_0000_0000_0000,
        0xfff0_0000_0000_0001,
        1,
        0x000f_ffff_ffff_ffff,
        0x7fef_ffff_ffff_ffff,
    ];
    match (f32, rng.chance(40)) {
        (true, true) => u64::from(rng.pick(&special32)),
        (true, false) => rng.next() & 0xffff_ffff,
        (false, true) => rng.pick(&special64),
        (false, false) => rng.next(),
    }
}

fn random_offset(rng: &mut Rng) -> i32 {
    let any = rng.next() as i32;
    rng.pick(&[0, 0, 4, -4, i32::MAX, i32::MIN, any])
}

/// Builds a random function through the DFG directly. Every block and every block
/// parameter is created before any instruction, and blocks are laid out in a shuffled
/// order, so the numbering is far from the text order and uses often precede
/// definitions. Instructions are not type-correct (the parser does not check types), but
/// result types follow the text format's inference rules so the text can express them.
fn random_function(rng: &mut Rng, n: usize) -> Function {
    let params: Vec<Param> = (0..rng.below(4))
        .map(|i| Param::new(format!("p{i}"), random_type(rng)))
        .collect();
    let mut f = Function::with_name_signature(format!("random_{n}"), Signature { params });
    for _ in 0..rng.below(3) {
        let data = MemVarData {
            size: rng.next() as u32,
            align: 1 << rng.below(32),
        };
        f.shared_vars.push(data);
    }
    for _ in 0..rng.below(3) {
        let data = MemVarData {
            size: rng.below(1 << 16) as u32,
            align: 1 << rng.below(8),
        };
        f.local_vars.push(data);
    }
    let blocks: Vec<Block> = (0..1 + rng.below(6)).map(|_| f.dfg.make_block()).collect();
    let mut pool: Vec<Value> = Vec::new();
    // Parameters of later blocks first: those values get the lowest numbers.
    for &b in blocks.iter().skip(1).rev() {
        for _ in 0..rng.below(3) {
            let ty = random_type(rng);
            pool.push(f.dfg.append_block_param(b, ty));
        }
    }
    let sig_types: Vec<Type> = f.signature.params.iter().map(|p| p.ty).collect();
    for ty in sig_types {
        pool.push(f.dfg.append_block_param(blocks[0], ty));
    }
    let mut order = blocks.clone();
    for i in (2..order.len()).rev() {
        let j = 1 + rng.below(i);
        order.swap(i, j);
    }
    for &b in &order {
        f.layout.append_block(b);
    }

    let non_terminators: Vec<Opcode> = Opcode::ALL
        .iter()
        .copied()
        .filter(|op| !op.is_terminator())
        .collect();
    for &b in &order {
        for _ in 0..rng.below(14) {
            let op = rng.pick(&non_terminators);
            if let Some((data, ty)) = random_inst(rng, &f, &mut pool, op) {
                let inst = f.dfg.make_inst(data, ty);
                f.layout.append_inst(inst, b);
                if let Some(v) = f.dfg.inst_result(inst) {
                    pool.push(v);
                }
            }
        }
        if rng.chance(10) {
            continue; // a block without terminator: the verifier's problem, not ours
        }
        let term = rng.pick(&[Opcode::Jump, Opcode::Brif, Opcode::BrTable, Opcode::Return]);
        let data = match term {
            Opcode::Return => InstructionData::Nullary { opcode: term },
            Opcode::Jump => InstructionData::Jump {
                opcode: term,
                dest: random_call(rng, &f, &blocks, &mut pool),
            },
            Opcode::Brif => InstructionData::Brif {
                opcode: term,
                arg: operand(rng, &mut f, b, &mut pool),
                dests: [
                    random_call(rng, &f, &blocks, &mut pool),
                    random_call(rng, &f, &blocks, &mut pool),
                ],
            },
            _ => InstructionData::BrTable {
                opcode: term,
                arg: operand(rng, &mut f, b, &mut pool),
                dests: (0..1 + rng.below(5))
                    .map(|_| random_call(rng, &f, &blocks, &mut pool))
                    .collect(),
            },
        };
        let inst = f.dfg.make_inst(data, None);
        f.layout.append_inst(inst, b);
    }
    f
}

/// A random operand; makes a constant in `block` when there is no value yet.
fn operand(rng: &mut Rng, f: &mut Function, block: Block, pool: &mut Vec<Value>) -> Value {
    if pool.is_empty() {
        let data = InstructionData::UnaryImm {
            opcode: Opcode::Iconst,
            imm: 7,
        };
        let inst = f.dfg.make_inst(data, Some(Type::I32));
        f.layout.append_inst(inst, block);
        pool.extend(f.dfg.inst_result(inst));
    }
    rng.pick(pool)
}

fn random_call(rng: &mut Rng, f: &Function, blocks: &[Block], pool: &mut [Value]) -> BlockCall {
    let b = rng.pick(blocks);
    let args = f
        .dfg
        .block_params(b)
        .iter()
        .map(|&p| if pool.is_empty() { p } else { rng.pick(pool) })
        .collect::<Vec<_>>();
    BlockCall::new(b, args)
}

/// Random data for `op` and its result type, or `None` when `op` cannot be built here
/// (an address of a variable the kernel lacks, or no operand yet).
fn random_inst(
    rng: &mut Rng,
    f: &Function,
    pool: &mut [Value],
    op: Opcode,
) -> Option<(InstructionData, Option<Type>)> {
    use InstructionData as D;
    use InstructionFormat as F;
    let needs_operands = !matches!(
        op.format(),
        F::Nullary | F::UnaryImm | F::FloatConst | F::Geometry | F::SharedAddr | F::LocalAddr
    );
    if needs_operands && pool.is_empty() {
        return None;
    }
    let mut v = || {
        if pool.is_empty() {
            Value::from_u32(0) // unused: the format takes no operand
        } else {
            rng.pick(pool)
        }
    };
    let (a, b, c) = (v(), v(), v());
    let data = match op.format() {
        F::Nullary => D::Nullary { opcode: op },
        F::UnaryImm => {
            let ty = rng.pick(&INT_TYPES);
            let imm = random_imm(rng, ty);
            return Some((D::UnaryImm { opcode: op, imm }, Some(ty)));
        }
        F::FloatConst => D::FloatConst {
            opcode: op,
            bits: random_float_bits(rng, op == Opcode::F32const),
        },
        F::Unary => D::Unary { opcode: op, arg: a },
        F::Binary => D::Binary {
            opcode: op,
            args: [a, b],
        },
        F::Ternary => D::Ternary {
            opcode: op,
            args: [a, b, c],
        },
        F::IntCompare => D::IntCompare {
            opcode: op,
            cond: rng.pick(IntCC::ALL),
            args: [a, b],
        },
        F::FloatCompare => D::FloatCompare {
            opcode: op,
            cond: rng.pick(FloatCC::ALL),
            args: [a, b],
        },
        F::Geometry => D::Geometry {
            opcode: op,
            dim: rng.pick(Dim::ALL),
        },
        F::Load => D::Load {
            opcode: op,
            space: rng.pick(AddrSpace::ALL),
            arg: a,
            offset: random_offset(rng),
        },
        F::Store => D::Store {
            opcode: op,
            space: rng.pick(AddrSpace::ALL),
            args: [a, b],
            offset: random_offset(rng),
        },
        F::AtomicRmw => D::AtomicRmw {
            opcode: op,
            op: rng.pick(AtomicRmwOp::ALL),
            space: rng.pick(AddrSpace::ALL),
            args: [a, b],
            offset: random_offset(rng),
        },
        F::AtomicCas => D::AtomicCas {
            opcode: op,
            space: rng.pick(AddrSpace::ALL),
            args: [a, b, c],
            offset: random_offset(rng),
        },
        F::SharedAddr => {
            let keys: Vec<_> = f.shared_vars.keys().collect();
            if keys.is_empty() {
                return None;
            }
            D::SharedAddr {
                opcode: op,
                var: rng.pick(&keys),
            }
        }
        F::LocalAddr => {
            let keys: Vec<_> = f.local_vars.keys().collect();
            if keys.is_empty() {
                return None;
            }
            D::LocalAddr {
                opcode: op,
                var: rng.pick(&keys),
            }
        }
        F::Jump | F::Brif | F::BrTable => return None,
    };
    if !op.has_result() {
        return Some((data, None));
    }
    // The inference rules of the text format, restated independently of the parser.
    let ty = if op.has_explicit_type() {
        random_type(rng)
    } else {
        match op {
            Opcode::Icmp | Opcode::Fcmp => Type::I1,
            Opcode::ThreadId
            | Opcode::BlockId
            | Opcode::BlockDim
            | Opcode::GridDim
            | Opcode::LaneId
            | Opcode::SharedAddr
            | Opcode::LocalAddr => Type::I32,
            Opcode::F32const | Opcode::Fdemote => Type::F32,
            Opcode::F64const | Opcode::Fpromote => Type::F64,
            Opcode::Select | Opcode::AtomicRmw | Opcode::AtomicCas => {
                f.dfg.value_type(data.args()[1])
            }
            _ => f.dfg.value_type(data.args()[0]),
        }
    };
    Some((data, Some(ty)))
}

#[test]
fn random_functions_round_trip() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    for n in 0..400 {
        let f = random_function(&mut rng, n);
        check_round_trip(&f);
    }
}

#[test]
fn random_functions_round_trip_in_one_file() {
    let mut rng = Rng(77);
    let fs: Vec<Function> = (0..20).map(|n| random_function(&mut rng, n)).collect();
    let text: String = fs.iter().map(|f| f.to_string()).collect();
    let parsed = parse_functions(&text).unwrap();
    assert_eq!(parsed.len(), fs.len());
    for (a, b) in fs.iter().zip(&parsed) {
        assert!(a == b);
    }
}

/// Parses `text`, turning a panic into a test failure that shows the input.
fn parse_without_panic(text: &str) {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let _ = parse_functions(text);
        let _ = parse_function(text);
    }));
    assert!(result.is_ok(), "the parser panicked on:\n{text:?}");
}

#[test]
fn every_prefix_parses_without_panic() {
    for sample in [SAXPY, LOOPS, ALL_OPCODES] {
        for end in 0..=sample.len() {
            if sample.is_char_boundary(end) {
                let prefix = &sample[..end];
                parse_without_panic(prefix);
                assert!(
                    end == sample.len() || parse_functions(prefix).is_err() || {
                        // A prefix that ends right after a kernel's `}` is a valid text.
                        prefix.trim_end().ends_with('}')
                    }
                );
            }
        }
    }
}

#[test]
fn mutated_texts_parse_without_panic() {
    const PIECES: &[&str] = &[
        " ",
        "\n",
        ";",
        ",",
        ":",
        "=",
        ".",
        "+",
        "-",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        "%",
        "0",
        "0x",
        "1e",
        "_",
        "v",
        "v0",
        "v1",
        "v99",
        "v4294967296",
        "v01",
        "block",
        "block0",
        "block1",
        "block99",
        "smem0",
        "lmem0",
        "smem9",
        "i1",
        "i64",
        "f32",
        "f64",
        "iconst",
        "iconst.i8",
        "load.i32",
        "nan",
        "inf",
        "-nan",
        "0x7fc00000",
        "99999999999999999999999",
        "-2147483649",
        "4294967296",
        "1e999",
        "kernel",
        "kernel %k() {",
        "%k",
        "é",
        "\t",
        "\r\n",
        "br_table",
        "brif",
        "jump",
        "return",
    ];
    let samples = [SAXPY, LOOPS, ALL_OPCODES];
    let mut rng = Rng(0xdead_beef_cafe_f00d);
    for _ in 0..3000 {
        let mut bytes = rng.pick(&samples).as_bytes().to_vec();
        for _ in 0..1 + rng.below(4) {
            let len = bytes.len();
            let at = rng.below(len + 1);
            match rng.below(5) {
                0 if at < len => bytes[at] = rng.below(128) as u8,
                1 if at < len => {
                    let end = (at + 1 + rng.below(20)).min(len);
                    bytes.drain(at..end);
                }
                2 if at < len => {
                    let end = (at + 1 + rng.below(40)).min(len);
                    let copy = bytes[at..end].to_vec();
                    let to = rng.below(len + 1);
                    bytes.splice(to..to, copy);
                }
                3 if at < len => bytes[at] ^= 1 << rng.below(8),
                _ => {
                    let piece = rng.pick(PIECES).as_bytes();
                    bytes.splice(at..at, piece.iter().copied());
                }
            }
        }
        parse_without_panic(&String::from_utf8_lossy(&bytes));
    }
}

#[test]
fn pathological_texts_give_errors() {
    let deep_brackets = format!(
        "kernel %k() {{\nblock0:\n    br_table v0, block0, {}",
        "[".repeat(100_000)
    );
    let many_args = format!(
        "kernel %k() {{\nblock0(v0: i32):\n    jump block0({}v0)\n}}",
        "v0, ".repeat(100_000)
    );
    let long_word = "x".repeat(1_000_000);
    let long_number = "9".repeat(1_000_000);
    let texts = [
        deep_brackets,
        "(".repeat(100_000),
        "{".repeat(100_000),
        format!("kernel %{long_word}() {{}}"),
        format!("kernel %k() {{\nblock0:\n    v0 = iconst.i64 {long_number}\n}}"),
        format!("kernel %k() {{\nblock0:\n    v0 = f64const {long_number}.5\n}}"),
        format!("kernel %k() {{\nblock0:\n    v0 = load.i8 global v1+{long_number}\n}}"),
        format!("kernel %k() {{\nblock0:\n    {long_word}\n}}"),
        "\u{0}\u{1}\u{7f}".to_string(),
    ];
    for text in &texts {
        let e = parse_functions(text).expect_err("pathological text parsed");
        assert!(
            e.message.len() < 300,
            "overlong message: {}",
            &e.message[..300]
        );
    }
    // Underflow rounds to zero, however far the exponent goes.
    let tiny = format!(
        "kernel %k() {{\nblock0:\n    v0 = f64const 0.{long_number}e-99999999999999999999\n    \
         return\n}}"
    );
    let f = parse_function(&tiny).unwrap();
    let first = f.layout.insts().next().unwrap();
    assert_eq!(
        f.inst(first),
        &InstructionData::FloatConst {
            opcode: Opcode::F64const,
            bits: 0
        }
    );
    // A long argument list is fine: it is not nesting.
    let f = parse_function(&many_args).unwrap();
    assert_eq!(f.layout.num_blocks(), 1);
}

/// A kernel of `blocks * per_block` instructions: a chain of loops whose blocks pass
/// values forward and backward, in canonical numbering.
fn large_kernel_text(blocks: usize, per_block: usize) -> String {
    let mut s = String::from("kernel %large(p: i64) {\nblock0(v0: i64):\n");
    let mut next = 1;
    let mut prev_param = 0;
    for b in 0..blocks {
        if b > 0 {
            s += &format!("\nblock{b}(v{next}: i64):\n");
            prev_param = next;
            next += 1;
        }
        for i in 0..per_block - 1 {
            let v = next;
            next += 1;
            match i % 4 {
                0 => s += &format!("    v{v} = iadd v{prev_param}, v{prev_param}\n"),
                1 => s += &format!("    v{v} = load.i64 global v{}+8\n", v - 1),
                2 => s += &format!("    v{v} = icmp slt v{}, v{prev_param}\n", v - 2),
                _ => s += &format!("    v{v} = select v{}, v{}, v0\n", v - 1, v - 2),
            }
        }
        let target = if b + 1 < blocks { b + 1 } else { 0 };
        if target == 0 {
            s += "    return\n";
        } else {
            s += &format!("    jump block{target}(v{})\n", next - 1);
        }
    }
    s + "}\n"
}

#[test]
fn large_kernel() {
    let text = large_kernel_text(1000, 100);
    let f = parse_function(&text).unwrap();
    assert_eq!(f.num_placed_insts(), 100_000);
    assert_eq!(f.to_string(), text);
}

#[test]
fn examples_in_the_documentation_parse() {
    let doc = include_str!("../../../../docs/text-format.md");
    let mut found = 0;
    for block in doc.split("```").skip(1).step_by(2) {
        let text = block.trim_start_matches(|c| c != '\n');
        if !text.trim_start().starts_with("kernel") && !text.trim_start().starts_with(';') {
            continue;
        }
        let f = parse_function(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        if !text.contains(';') {
            assert_eq!(f.to_string(), text.trim_start());
        }
        found += 1;
    }
    assert_eq!(found, 2);
}
