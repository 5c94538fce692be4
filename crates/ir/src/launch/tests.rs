//! Tests of launch descriptions: file schema, command-line specs, binding.

use super::*;
use crate::function::{Param, Signature};

fn kernel(params: &[(&str, Type)]) -> Function {
    Function::with_name_signature(
        "k",
        Signature {
            params: params.iter().map(|&(n, t)| Param::new(n, t)).collect(),
        },
    )
}

fn parse(text: &str) -> Result<Launch, LaunchError> {
    Launch::from_toml_str(text, Path::new("dir/k.launch.toml"))
}

const EXAMPLE: &str = r#"
grid = [2]            # 1 to 3 entries; missing ones are 1
block = [64, 1, 1]
[args]
n = 100
alpha = 1.5
[buffers.x]
type = "f32"
len = 128
init = "random"
seed = 7
[buffers.y]
type = "i32"
values = [1, 2, 3, 4]
[expect]
y = [2, 4, 6, 8]
"#;

#[test]
fn example_file() {
    let l = parse(EXAMPLE).unwrap();
    assert_eq!(l.grid, [2, 1, 1]);
    assert_eq!(l.block, [64, 1, 1]);
    assert_eq!(l.args["n"], Literal::Int(100));
    assert_eq!(l.args["alpha"], Literal::Float(1.5));
    assert_eq!(
        l.buffers["x"],
        BufferSpec {
            elem: ElemType::F32,
            len: Some(128),
            init: BufferInit::Random {
                seed: 7,
                range: None
            }
        }
    );
    let f = kernel(&[
        ("x", Type::I64),
        ("y", Type::I64),
        ("alpha", Type::F32),
        ("n", Type::I32),
    ]);
    let p = l.prepare(&f).unwrap();
    assert_eq!(p.kernel, "k");
    assert_eq!(p.threads_per_block(), 64);
    assert_eq!(p.num_blocks(), 2);
    // x: 512 bytes at the base; y after a 256-byte guard gap.
    assert_eq!(p.args[0], BUFFER_BASE);
    assert_eq!(p.args[1], BUFFER_BASE + 512 + GUARD_GAP);
    assert_eq!(p.args[2], u64::from(1.5f32.to_bits()));
    assert_eq!(p.args[3], 100);
    let y = p.memory.buffer("y").unwrap();
    assert_eq!(
        y.values(),
        (1..=4).map(TypedValue::Signed).collect::<Vec<_>>()
    );
    assert_eq!(y.expect, Some(vec![2, 4, 6, 8]));
    assert!(p.memory.buffers.iter().all(|b| b.print));
    // Random contents are in [0, 1) and reproducible.
    let x = p.memory.buffer_values("x").unwrap();
    assert!(x
        .iter()
        .all(|v| matches!(v, TypedValue::F32(f) if (0.0..1.0).contains(f))));
    assert_eq!(x, l.prepare(&f).unwrap().memory.buffer_values("x").unwrap());
    assert!(p.memory.check_expectations().is_err());
}

#[test]
fn random_is_stable() {
    // The generator's output is part of the launch format: every tool, every version,
    // must produce the same buffer for the same seed.
    let mut l = Launch::default();
    l.add_buffer("a=u32[4]:random:1").unwrap();
    l.add_buffer("b=i8[6]:random:2:-3:3").unwrap();
    let p = l
        .prepare(&kernel(&[("a", Type::I64), ("b", Type::I64)]))
        .unwrap();
    let b = p.memory.buffer_values("b").unwrap();
    assert!(b
        .iter()
        .all(|v| matches!(v, TypedValue::Signed(i) if (-3..=3).contains(i))));
    let a = p.memory.buffer_values("a").unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    for v in a {
        let want = (u128::from(rng.next_u64()) * (1u128 << 32)) >> 64;
        assert_eq!(v, TypedValue::Unsigned(want as u64));
    }
}

#[test]
fn path_next_to() {
    assert_eq!(
        Launch::path_next_to(Path::new("a/b/saxpy.wir")),
        PathBuf::from("a/b/saxpy.launch.toml")
    );
    assert_eq!(
        Launch::path_next_to(Path::new("k")),
        PathBuf::from("k.launch.toml")
    );
}

#[test]
fn file_errors_name_file_and_key() {
    let e = parse("grid = [1]\nbogus = 3\n").unwrap_err().to_string();
    assert!(
        e.starts_with("dir/k.launch.toml: 2:1: unknown field `bogus`"),
        "{e}"
    );
    let e = parse("[buffers.x]\ntype = \"f32\"\nlen = 4\ncolour = 1\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown field `colour`"), "{e}");
    let e = parse("[buffers.x]\ntype = \"f16\"\nlen = 4\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("buffers.x.type: unknown element type `f16`"),
        "{e}"
    );
    let e = parse("[buffers.x]\ntype = \"f32\"\nlen = 4\nseed = 3\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("buffers.x.seed: only allowed with init = \"random\""),
        "{e}"
    );
    let e = parse("[buffers.x]\ntype = \"f32\"\ninit = \"gauss\"\nlen = 4\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("buffers.x.init: unknown init `gauss`"), "{e}");
    let e = parse("grid = [1, 2, 3, 4]").unwrap_err().to_string();
    assert!(e.contains("grid: expected 1 to 3 dimensions"), "{e}");
    let e = parse("block = [-1]").unwrap_err().to_string();
    assert!(
        e.contains("block: `-1` is not a block dimension (an integer 1 to 1024)"),
        "{e}"
    );
    // The messages state the real limits, not those of a u32.
    let e = parse("grid = [2147483648]").unwrap_err().to_string();
    assert!(
        e.ends_with("grid: `2147483648` is not a grid dimension (an integer 1 to 2147483647)"),
        "{e}"
    );
    let e = parse("block = [1, 1025]").unwrap_err().to_string();
    assert!(e.ends_with("(an integer 1 to 1024)"), "{e}");
    assert!(parse("grid = [0]").is_err());
    assert_eq!(
        parse("grid = [2147483647]\nblock = 1024").unwrap().grid,
        [2147483647, 1, 1]
    );
    let e = parse("[args]\nn = [1]").unwrap_err().to_string();
    assert!(e.contains("args.n: expected a number"), "{e}");
    let e = parse("[expect]\ny = [1, \"x\"]").unwrap_err().to_string();
    assert!(e.contains("expect.y[1]: `x` is not a number"), "{e}");
    assert!(parse("grid = ").is_err());
    assert!(parse("[buffers.x]\nlen = 3").is_err());
    assert!(
        parse("[buffers.x]\ntype = \"i32\"\ninit = \"random\"\nrange = [1]")
            .unwrap_err()
            .to_string()
            .contains("buffers.x.range: expected [lo, hi]")
    );
}

#[test]
fn file_relative_paths() {
    let l =
        parse("[buffers.x]\ntype = \"u8\"\nfile = \"x.bin\"\n[save]\nx = \"out/x.bin\"\n").unwrap();
    assert_eq!(
        l.buffers["x"].init,
        BufferInit::File(PathBuf::from("dir/x.bin"))
    );
    assert_eq!(l.save["x"], PathBuf::from("dir/out/x.bin"));
}

#[test]
fn special_float_literals() {
    let l = parse(
        "[buffers.x]\ntype = \"f32\"\nvalues = [nan, inf, -inf, \"nan\", \"0x7fc00000\", -0.0, 3]\n",
    )
    .unwrap();
    let p = l.prepare(&kernel(&[("x", Type::I64)])).unwrap();
    let b = p.memory.buffer("x").unwrap();
    let bits: Vec<u64> = (0..b.len()).map(|i| b.elem_bits(i)).collect();
    assert_eq!(
        bits,
        vec![
            0x7fff_ffff,
            0x7f80_0000,
            0xff80_0000,
            0x7fff_ffff,
            0x7fc0_0000,
            0x8000_0000,
            u64::from(3f32.to_bits())
        ]
    );
}

#[test]
fn cli_specs() {
    let mut l = parse(EXAMPLE).unwrap();
    l.set_grid("4,2").unwrap();
    assert_eq!(l.grid, [4, 2, 1]);
    l.set_block("32").unwrap();
    assert_eq!(l.block, [32, 1, 1]);
    assert!(l.set_grid("1,2,3,4").is_err());
    assert!(l.set_grid("a").is_err());
    assert!(l.set_grid("-1").is_err());
    assert!(l.set_block("").is_err());
    l.add_arg("n=7").unwrap();
    assert_eq!(l.args["n"], Literal::Int(7));
    assert!(l.add_arg("n").is_err());
    assert!(l.add_arg("=3").is_err());
    assert!(l.add_arg("n=x").is_err());
    l.add_buffer("x=f32[16]:iota").unwrap();
    assert_eq!(l.buffers["x"].len, Some(16));
    assert_eq!(l.buffers["x"].init, BufferInit::Iota);
    l.add_print("y").unwrap();
    l.add_save("y=out.bin").unwrap();
    l.add_expect("y=1,2,3,4").unwrap();
    l.set_kernel("%k");
    assert_eq!(l.kernel.as_deref(), Some("k"));
    let f = kernel(&[
        ("x", Type::I64),
        ("y", Type::I64),
        ("alpha", Type::F32),
        ("n", Type::I32),
    ]);
    let p = l.prepare(&f).unwrap();
    assert_eq!(p.grid, [4, 2, 1]);
    assert_eq!(p.args[3], 7);
    let x = p.memory.buffer_values("x").unwrap();
    assert_eq!(x[5], TypedValue::F32(5.0));
    assert!(!p.memory.buffer("x").unwrap().print);
    assert!(p.memory.buffer("y").unwrap().print);
    assert_eq!(
        p.memory.buffer("y").unwrap().save,
        Some(PathBuf::from("out.bin"))
    );
    assert!(p.memory.check_expectations().is_ok());
}

#[test]
fn buffer_spec_syntax() {
    use super::spec::parse_buffer_spec;
    let ok = |s: &str| parse_buffer_spec(s).unwrap().1;
    assert_eq!(ok("x=i32[4]").init, BufferInit::Zeros);
    assert_eq!(ok("x=i32[4]:zeros").init, BufferInit::Zeros);
    assert_eq!(
        ok("x=f64[4]:random").init,
        BufferInit::Random {
            seed: 0,
            range: None
        }
    );
    assert_eq!(
        ok("x=f64[4]:random:9:-1.5:2").init,
        BufferInit::Random {
            seed: 9,
            range: Some((
                Literal::Decimal {
                    f32: -1.5,
                    f64: -1.5
                },
                Literal::Int(2)
            ))
        }
    );
    assert_eq!(
        ok("x=u8:file:a:b.bin").init,
        BufferInit::File(PathBuf::from("a:b.bin"))
    );
    let v = ok("x=i16:values:1,-2,0x10");
    assert_eq!(v.len, None);
    assert_eq!(
        v.init,
        BufferInit::Values(vec![Literal::Int(1), Literal::Int(-2), Literal::Hex(16)])
    );
    for bad in [
        "x",
        "x=",
        "x=i32",
        "x=i32[",
        "x=i32[a]",
        "x=i32[-1]",
        "x=q32[4]",
        "x=i32[4]:bogus",
        "x=i32[4]:random:1:2",
        "x=i32[4]:random:-1",
        "x=i32[4]:file:",
        "x=i32[4]:values:1,,2",
        "x y=i32[4]",
    ] {
        assert!(parse_buffer_spec(bad).is_err(), "{bad}");
    }
}

/// Errors found only when the launch is bound to a kernel still name the launch file the
/// setting came from, and the key; a flag that overrides the setting drops the file.
#[test]
fn toml_error_columns_count_characters() {
    // `é` is two bytes: `x` is byte 15 but character 14 of its line.
    let e = parse("[args]\n\"éü\" = 1\nn = @").unwrap_err().to_string();
    assert!(e.starts_with("dir/k.launch.toml: 3:5: "), "{e}");
    let e = parse("kernel = \"é\" x").unwrap_err().to_string();
    assert!(e.starts_with("dir/k.launch.toml: 1:14: "), "{e}");
}

#[test]
fn binding_errors_name_the_launch_file() {
    let f = kernel(&[("x", Type::I64), ("n", Type::I32)]);
    let err = |text: &str| {
        let l = parse(text).unwrap();
        l.prepare(&f).unwrap_err().to_string()
    };
    let x = "[args]\nn = 1\n[buffers.x]\ntype = \"u8\"\n";
    assert_eq!(
        err(&format!("{x}values = [1, 256]")),
        "dir/k.launch.toml: buffers.x.values[1]: 256 does not fit in 8 bits"
    );
    assert_eq!(
        err(&format!("{x}values = [1]\n[expect]\nx = [0x1ff]")),
        "dir/k.launch.toml: expect.x[0]: 511 does not fit in 8 bits"
    );
    assert_eq!(
        err(&format!("{x}values = [1]\n[expect]\nx = [1, 2]")),
        "dir/k.launch.toml: expect.x: 2 values given for a buffer of 1 element"
    );
    assert_eq!(
        err("[args]\nn = 1.5\nx = 0"),
        "dir/k.launch.toml: kernel %k: argument n for a i32 parameter: float 1.5 given for a \
         32-bit integer"
    );
    assert_eq!(
        err("[args]\nn = 1\nx = 0\nm = 2"),
        "dir/k.launch.toml: kernel %k: m: not a parameter of the kernel"
    );
    assert_eq!(
        err(&format!("{x}len = 1\n[buffers.n]\ntype = \"i32\"\nlen = 1")),
        "dir/k.launch.toml: kernel %k: n: bound both to a scalar argument and to a buffer"
    );
    assert_eq!(
        err(&format!("{x}len = 1\nrange = [0, 300]\ninit = \"random\"")),
        "dir/k.launch.toml: buffers.x.range: 300 is outside the range of u8 (0..=255)"
    );
    assert_eq!(
        err(&format!("{x}len = 1\n[save]\ny = \"y.bin\"")),
        "dir/k.launch.toml: save.y: no buffer of that name"
    );
    assert_eq!(
        err(&format!("print = [\"y\"]\n{x}len = 1")),
        "dir/k.launch.toml: print.y: no buffer of that name"
    );
    let l = parse(&format!("kernel = \"q\"\n{x}len = 1")).unwrap();
    assert_eq!(
        l.select_kernel(std::slice::from_ref(&f))
            .unwrap_err()
            .to_string(),
        "dir/k.launch.toml: kernel: no kernel %q (have %k)"
    );
    assert_eq!(
        err(&format!("block = [1024, 2]\n{x}len = 1")),
        "dir/k.launch.toml: block: 1024x2x1 is not a block of 1 to 1024 threads"
    );
    // A flag replaces the setting: the error no longer names the file.
    let mut l = parse(&format!("block = [1024, 2]\n{x}values = [1]")).unwrap();
    l.set_block("1024,2").unwrap();
    assert_eq!(
        l.prepare(&f).unwrap_err().to_string(),
        "block: 1024x2x1 is not a block of 1 to 1024 threads"
    );
    l.set_block("1").unwrap();
    l.add_buffer("x=u8:values:1,256").unwrap();
    assert_eq!(
        l.prepare(&f).unwrap_err().to_string(),
        "buffers.x.values[1]: 256 does not fit in 8 bits"
    );
}

#[test]
fn binding_errors() {
    let f = kernel(&[("p", Type::I64), ("n", Type::I32), ("b", Type::I1)]);
    let mut l = Launch::default();
    l.add_buffer("p=f32[4]").unwrap();
    l.add_arg("n=1").unwrap();
    let e = l.prepare(&f).unwrap_err().to_string();
    assert_eq!(e, "kernel %k: b: parameter `b: i1` is not bound");
    l.add_arg("b=true").unwrap();
    assert_eq!(l.prepare(&f).unwrap().args[2], 1);
    l.add_arg("b=2").unwrap();
    assert!(l.prepare(&f).is_err());
    l.add_arg("b=1").unwrap();
    l.add_arg("q=1").unwrap();
    let e = l.prepare(&f).unwrap_err().to_string();
    assert_eq!(e, "kernel %k: q: not a parameter of the kernel");
    l.args.remove("q");
    // An i64 parameter may take a scalar.
    l.add_arg("p=5").unwrap();
    assert_eq!(l.prepare(&f).unwrap().args[0], 5);
    // A name bound twice.
    l.buffers.insert(
        "p".into(),
        BufferSpec {
            elem: ElemType::I8,
            len: Some(1),
            init: BufferInit::Zeros,
        },
    );
    assert!(l
        .prepare(&f)
        .unwrap_err()
        .to_string()
        .contains("bound both"));
    l.args.remove("p");
    // A buffer bound to a non-i64 parameter.
    l.buffers.remove("p");
    l.add_arg("p=0").unwrap();
    l.args.remove("n");
    l.add_buffer("n=i32[1]").unwrap();
    assert!(l
        .prepare(&f)
        .unwrap_err()
        .to_string()
        .contains("buffer addresses are i64"));
    l.buffers.remove("n");
    // Out-of-range and mistyped scalars.
    l.add_arg("n=4294967296").unwrap();
    assert!(l.prepare(&f).is_err());
    l.add_arg("n=1.5").unwrap();
    assert!(l.prepare(&f).is_err());
    l.add_arg("n=-2147483648").unwrap();
    assert_eq!(l.prepare(&f).unwrap().args[1], 0x8000_0000);
    // Print, save and expect must name buffers.
    l.add_print("zz").unwrap();
    assert!(l.prepare(&f).is_err());
    l.print = None;
    l.add_expect("p=1").unwrap();
    assert!(l.prepare(&f).is_err());
}

#[test]
fn expect_length_and_types() {
    let f = kernel(&[("y", Type::I64)]);
    let mut l = Launch::default();
    l.add_buffer("y=u8[3]").unwrap();
    l.add_expect("y=0,0").unwrap();
    assert!(l
        .prepare(&f)
        .unwrap_err()
        .to_string()
        .contains("2 values given for a buffer of 3 elements"));
    l.add_expect("y=0,0,256").unwrap();
    assert!(l
        .prepare(&f)
        .unwrap_err()
        .to_string()
        .contains("expect.y[2]"));
    l.add_expect("y=0,0,255").unwrap();
    assert!(l.prepare(&f).is_ok());
}

#[test]
fn geometry_and_size_limits() {
    let f = kernel(&[("x", Type::I64)]);
    let mut l = Launch::default();
    l.add_buffer("x=u8[1]").unwrap();
    for (g, b) in [
        ("0", "1"),
        ("1", "0"),
        ("1", "1025"),
        ("1", "32,32,2"),
        ("2147483648", "1"),
        // The product of these overflows a u64 and must not wrap to a small block.
        ("1", "4294967295,4294967295,4294967295"),
        ("1", "65536,65536,65536"),
    ] {
        l.set_grid(g).unwrap();
        l.set_block(b).unwrap();
        assert!(l.prepare(&f).is_err(), "grid {g} block {b}");
    }
    l.set_grid("2147483647,65535,65535").unwrap();
    l.set_block("1024").unwrap();
    assert!(l.prepare(&f).is_ok());
    // 2^64 blocks: a u64 product wraps to 0.
    l.set_grid("2097152,2097152,4194304").unwrap();
    assert_eq!(l.prepare(&f).unwrap().num_blocks(), 1u128 << 64);
    l.set_grid("2147483647,2147483647,2147483647").unwrap();
    assert_eq!(
        l.prepare(&f).unwrap().num_blocks(),
        (1u128 << 31).pow(3) - 3 * (1u128 << 62) + 3 * (1u128 << 31) - 1
    );
    l.add_buffer("x=f64[18446744073709551615]").unwrap();
    assert!(l.prepare(&f).unwrap_err().to_string().contains("at most"));
    l.add_buffer("x=u8[1073741825]").unwrap();
    assert!(l.prepare(&f).is_err());
    let f2 = kernel(&[("x", Type::I64), ("y", Type::I64)]);
    l.add_buffer("x=u8[1073741824]").unwrap();
    l.add_buffer("y=u8[1]").unwrap();
    assert!(l.prepare(&f2).is_err());
}

#[test]
fn random_ranges() {
    let f = kernel(&[("x", Type::I64)]);
    let mut l = Launch::default();
    for bad in [
        "x=i8[4]:random:1:0:200",
        "x=u8[4]:random:1:-1:3",
        "x=i32[4]:random:1:5:4",
        "x=i32[4]:random:1:0.5:4",
        "x=f32[4]:random:1:inf:4",
        "x=f32[4]:random:1:3:2",
        // Finite as an f64 but infinite as an f32.
        "x=f32[4]:random:1:0:1e39",
        "x=f32[4]:values:1,1e39",
    ] {
        l.add_buffer(bad).unwrap();
        assert!(l.prepare(&f).is_err(), "{bad}");
    }
    l.add_buffer("x=u64[64]:random:3").unwrap();
    assert!(l.prepare(&f).is_ok());
    l.add_buffer("x=i64[64]:random:3:-9223372036854775808:9223372036854775807")
        .unwrap();
    assert!(l.prepare(&f).is_ok());
    l.add_buffer("x=f64[64]:random:3:-2:2").unwrap();
    let p = l.prepare(&f).unwrap();
    assert!(p
        .memory
        .buffer_values("x")
        .unwrap()
        .iter()
        .all(|v| matches!(v, TypedValue::F64(x) if (-2.0..2.0).contains(x))));
    // Hexadecimal bounds are raw bits, as for values: 0x3f800000 is 1.0f32.
    l.add_buffer("x=f32[64]:random:0:0x3f800000:2").unwrap();
    let p = l.prepare(&f).unwrap();
    assert!(p
        .memory
        .buffer_values("x")
        .unwrap()
        .iter()
        .all(|v| matches!(v, TypedValue::F32(x) if (1.0..=2.0).contains(x))));
    l.add_buffer("x=f32[4]:random:0:0x7f800000:2").unwrap();
    assert!(l.prepare(&f).is_err(), "an infinite bound");
    // f32 bounds are the f32 values of the decimals, so every element lies within them.
    l.add_buffer("x=f32[256]:random:5:0.1:0.2").unwrap();
    let p = l.prepare(&f).unwrap();
    assert!(p
        .memory
        .buffer_values("x")
        .unwrap()
        .iter()
        .all(|v| matches!(v, TypedValue::F32(x) if (0.1f32..=0.2f32).contains(x))));
}

#[test]
fn file_buffers_and_save() {
    let dir = std::env::temp_dir().join(format!("warplift-launch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("x.bin"), [1u8, 0, 0, 0, 2, 0, 0, 0]).unwrap();
    std::fs::write(dir.join("odd.bin"), [1u8, 2, 3]).unwrap();
    let launch_path = dir.join("k.launch.toml");
    std::fs::write(
        &launch_path,
        "[buffers.x]\ntype = \"i32\"\nfile = \"x.bin\"\n[save]\nx = \"x.out\"\n",
    )
    .unwrap();
    let l = Launch::from_file(&launch_path).unwrap();
    let f = kernel(&[("x", Type::I64)]);
    let p = l.prepare(&f).unwrap();
    assert_eq!(
        p.memory.buffer_values("x").unwrap(),
        vec![TypedValue::Signed(1), TypedValue::Signed(2)]
    );
    p.memory.save_buffers().unwrap();
    assert_eq!(
        std::fs::read(dir.join("x.out")).unwrap(),
        [1, 0, 0, 0, 2, 0, 0, 0]
    );

    let mut l2 = Launch::default();
    l2.add_buffer(&format!("x=i32:file:{}", dir.join("odd.bin").display()))
        .unwrap();
    assert!(l2
        .prepare(&f)
        .unwrap_err()
        .to_string()
        .contains("whole number"));
    l2.add_buffer(&format!("x=i32[3]:file:{}", dir.join("x.bin").display()))
        .unwrap();
    assert!(l2.prepare(&f).unwrap_err().to_string().contains("len is 3"));
    l2.add_buffer("x=i32:file:/nonexistent/warplift.bin")
        .unwrap();
    assert!(matches!(l2.prepare(&f), Err(LaunchError::Io { .. })));
    assert!(Launch::from_file(&dir.join("missing.toml")).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn select_kernel() {
    let a = kernel(&[]);
    let mut b = kernel(&[]);
    b.name = "b".into();
    let funcs = vec![a, b];
    let mut l = Launch::default();
    assert!(l.select_kernel(&funcs).is_err());
    l.set_kernel("b");
    assert_eq!(l.select_kernel(&funcs).unwrap().name, "b");
    l.set_kernel("zz");
    assert!(l.select_kernel(&funcs).is_err());
    l.kernel = None;
    assert_eq!(l.select_kernel(&funcs[..1]).unwrap().name, "k");
    assert!(l.select_kernel(&[]).is_err());
}

/// Mangled launch files and specs must give errors, never panics.
#[test]
fn mangled_inputs_do_not_panic() {
    let f = kernel(&[
        ("x", Type::I64),
        ("y", Type::I64),
        ("alpha", Type::F32),
        ("n", Type::I32),
    ]);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(42);
    let alphabet = b"[]=,.:-+0123456789xyfiu_\"\n #abcdefghijklmnopqrstuvwz";
    for _ in 0..3000 {
        let mut text = EXAMPLE.as_bytes().to_vec();
        for _ in 0..1 + rng.next_u64() % 4 {
            let pos = (rng.next_u64() % text.len() as u64) as usize;
            let c = alphabet[(rng.next_u64() % alphabet.len() as u64) as usize];
            match rng.next_u64() % 3 {
                0 => text[pos] = c,
                1 => text.insert(pos, c),
                _ => {
                    text.remove(pos);
                }
            }
        }
        let text = String::from_utf8_lossy(&text);
        if let Ok(l) = parse(&text) {
            let _ = l.prepare(&f);
        }
        let spec: String = (0..rng.next_u64() % 24)
            .map(|_| alphabet[(rng.next_u64() % alphabet.len() as u64) as usize] as char)
            .collect();
        let mut l = Launch::default();
        for s in [
            format!("x={spec}"),
            format!("x=i32{spec}"),
            format!("x=f32[4]:{spec}"),
        ] {
            let _ = l.add_buffer(&s);
            let _ = l.add_arg(&s);
            let _ = l.set_grid(&spec);
            let _ = l.add_expect(&s);
        }
        let _ = l.prepare(&f);
    }
}

#[test]
fn builder_matches_the_launch_file() {
    let file = parse(
        r#"
grid = [2, 3]
block = 8
[args]
n = 6
alpha = 0.5
[buffers.x]
type = "f32"
values = [1.5, -2.0, 0.25]
[buffers.y]
type = "i32"
len = 4
[buffers.z]
type = "u16"
len = 5
init = "random"
seed = 3
"#,
    )
    .unwrap();
    let built = Launch::builder()
        .grid([2, 3])
        .block(8)
        .arg("n", 6)
        .arg("alpha", 0.5)
        .buffer("x", &[1.5f32, -2.0, 0.25])
        .zeros::<i32>("y", 4)
        .random::<u16>("z", 5, 3)
        .build();
    let f = kernel(&[
        ("x", Type::I64),
        ("y", Type::I64),
        ("z", Type::I64),
        ("alpha", Type::F32),
        ("n", Type::I32),
    ]);
    let (a, b) = (file.prepare(&f).unwrap(), built.prepare(&f).unwrap());
    assert_eq!(a, b);
    assert_eq!(b.grid, [2, 3, 1]);
    assert_eq!(b.memory.read_buffer::<f32>("x").unwrap(), [1.5, -2.0, 0.25]);
    // A loaded object knows its kernel by name and parameters only.
    assert_eq!(built.prepare_for("k", &f.signature.params).unwrap(), b);
}

#[test]
fn builder_errors_surface_when_binding() {
    let f = kernel(&[("x", Type::I64), ("n", Type::I32)]);
    // Bytes that are not a whole number of elements.
    let l = Launch::builder()
        .buffer_bytes("x", ElemType::I32, vec![0u8; 6])
        .arg("n", 1)
        .build();
    assert_eq!(
        l.prepare(&f).unwrap_err().to_string(),
        "buffers.x: 6 bytes are not a whole number of i32 elements"
    );
    // A float for an integer parameter, a value out of range, an unknown name.
    let l = Launch::builder()
        .zeros::<i32>("x", 1)
        .arg("n", 1.5f32)
        .build();
    assert!(l
        .prepare(&f)
        .unwrap_err()
        .to_string()
        .contains("float 1.5 given for a 32-bit integer"));
    let l = Launch::builder()
        .zeros::<i32>("x", 1)
        .arg("n", u64::MAX)
        .build();
    assert!(l.prepare(&f).is_err());
    let l = Launch::builder()
        .zeros::<i32>("x", 1)
        .arg("n", 1)
        .arg("m", 2)
        .build();
    assert!(l
        .prepare(&f)
        .unwrap_err()
        .to_string()
        .contains("not a parameter"));
    // A later setting replaces an earlier one of the same name.
    let l = Launch::builder()
        .arg("x", 0i64)
        .zeros::<i32>("x", 2)
        .arg("n", 7)
        .build();
    assert_eq!(l.prepare(&f).unwrap().memory.buffers.len(), 1);
}
