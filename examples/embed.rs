//! Embedding warplift: the whole path from a Rust program, as `docs/embedding.md` walks
//! through it. Run it with `cargo run --example embed`; `cargo test` runs it too.
//!
//! The kernel, written as Rust would write it for one thread `i`:
//!
//! ```text
//! if i < n {
//!     let mut acc = 0;
//!     let mut j = 0;
//!     while j < count[i] {                               // a loop of varying trip count
//!         let v = x[i] + j;
//!         if (v > lo && v < hi) || (v & 7) == 0 {        // two short circuits
//!             acc += v;
//!         }
//!         j += 1;
//!     }
//!     out[i] = acc;
//! }
//! ```
//!
//! It is built with the `FunctionBuilder` and `Variable`s, verified, printed, compiled for
//! PTX (sm_80) and for the SIMT target with and without `linearize`, run on the emulator at
//! warp widths 32 and 8 with a launch built in code, and read back; every result must
//! equal the Rust computation and the reference interpreter's. Last, a study sweeps it over
//! both pipelines and both widths on all cores and writes its tables and plots.

use std::error::Error;
use warplift::codegen::{lookup, lookup_by_name, Context, Settings};
use warplift::emu::MachineConfig;
use warplift::ir::builder::InstBuilder;
use warplift::ir::frontend::{FunctionBuilder, FunctionBuilderContext};
use warplift::ir::interp::InterpConfig;
use warplift::ir::launch::Launch;
use warplift::ir::verifier::verify_function;
use warplift::ir::{AddrSpace, Dim, Function, IntCC, Param, Signature, Type};
use warplift::study::{RunOptions, Study};
use warplift::target_lexicon::triple;

/// Builds the kernel (see the file's documentation).
fn build_kernel() -> Function {
    let params = ["x", "count", "out"]
        .map(|name| Param::new(name, Type::I64))
        .into_iter()
        .chain(["n", "lo", "hi"].map(|name| Param::new(name, Type::I32)))
        .collect();
    let mut func = Function::with_name_signature("accumulate", Signature { params });
    let mut fctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut func, &mut fctx);

    let entry = b.create_block();
    let body = b.create_block(); // i < n
    let header = b.create_block(); // while j < count[i]
    let lo_ok = b.create_block(); // v > lo, test v < hi
    let or_test = b.create_block(); // the `||`'s right side
    let add = b.create_block(); // acc += v
    let latch = b.create_block(); // j += 1
    let store = b.create_block(); // out[i] = acc
    let exit = b.create_block();

    let acc = b.declare_var(Type::I32);
    let j = b.declare_var(Type::I32);

    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    b.seal_block(entry);
    let [x, count, out, n, lo, hi] = b.block_params(entry).try_into().unwrap();
    let tid = b.ins().thread_id(Dim::X);
    let bid = b.ins().block_id(Dim::X);
    let bdim = b.ins().block_dim(Dim::X);
    let base = b.ins().imul(bid, bdim);
    let i = b.ins().iadd(base, tid);
    let in_range = b.ins().icmp(IntCC::SignedLessThan, i, n);
    b.ins().brif(in_range, body, &[], exit, &[]);

    b.switch_to_block(body);
    b.seal_block(body);
    let zero = b.ins().iconst(Type::I32, 0);
    b.def_var(acc, zero);
    b.def_var(j, zero);
    let wide = b.ins().uextend(Type::I64, i);
    let two = b.ins().iconst(Type::I64, 2);
    let offset = b.ins().ishl(wide, two);
    let x_addr = b.ins().iadd(x, offset);
    let count_addr = b.ins().iadd(count, offset);
    let out_addr = b.ins().iadd(out, offset);
    let xi = b.ins().load(Type::I32, AddrSpace::Global, x_addr, 0);
    let trips = b.ins().load(Type::I32, AddrSpace::Global, count_addr, 0);
    b.ins().jump(header, &[]);

    // The header has two predecessors (body and latch); it is sealed once the latch
    // is built.
    b.switch_to_block(header);
    let jv = b.use_var(j);
    let more = b.ins().icmp(IntCC::SignedLessThan, jv, trips);
    b.ins().brif(more, lo_ok, &[], store, &[]);

    // (v > lo && v < hi) || (v & 7) == 0
    b.switch_to_block(lo_ok);
    b.seal_block(lo_ok);
    let jv = b.use_var(j);
    let v = b.ins().iadd(xi, jv);
    let above = b.ins().icmp(IntCC::SignedGreaterThan, v, lo);
    let lo_true = b.create_block();
    b.ins().brif(above, lo_true, &[], or_test, &[]);
    b.switch_to_block(lo_true);
    b.seal_block(lo_true);
    let below = b.ins().icmp(IntCC::SignedLessThan, v, hi);
    b.ins().brif(below, add, &[], or_test, &[]);
    b.switch_to_block(or_test);
    b.seal_block(or_test);
    let seven = b.ins().iconst(Type::I32, 7);
    let low_bits = b.ins().band(v, seven);
    let zero = b.ins().iconst(Type::I32, 0);
    let multiple = b.ins().icmp(IntCC::Equal, low_bits, zero);
    b.ins().brif(multiple, add, &[], latch, &[]);

    b.switch_to_block(add);
    b.seal_block(add);
    let a = b.use_var(acc);
    let sum = b.ins().iadd(a, v);
    b.def_var(acc, sum);
    b.ins().jump(latch, &[]);

    b.switch_to_block(latch);
    b.seal_block(latch);
    let jv = b.use_var(j);
    let one = b.ins().iconst(Type::I32, 1);
    let next = b.ins().iadd(jv, one);
    b.def_var(j, next);
    b.ins().jump(header, &[]);
    b.seal_block(header);

    b.switch_to_block(store);
    b.seal_block(store);
    let total = b.use_var(acc);
    b.ins().store(AddrSpace::Global, total, out_addr, 0);
    b.ins().jump(exit, &[]);

    b.switch_to_block(exit);
    b.seal_block(exit);
    b.ins().return_();
    b.finalize();
    func
}

/// What the kernel computes, in Rust.
fn expected(x: &[i32], count: &[i32], lo: i32, hi: i32) -> Vec<i32> {
    x.iter()
        .zip(count)
        .map(|(&xi, &trips)| {
            (0..trips)
                .map(|j| xi.wrapping_add(j))
                .filter(|&v| (v > lo && v < hi) || v & 7 == 0)
                .fold(0i32, i32::wrapping_add)
        })
        .collect()
}

fn main() -> Result<(), Box<dyn Error>> {
    // Build, verify, print.
    let func = build_kernel();
    verify_function(&func)?;
    println!("{func}");

    // Compile for PTX, choosing the target by triple as Cranelift does.
    let mut settings = Settings::builder();
    settings.set("ptx_target", "sm_80")?;
    let ptx_isa = lookup(triple!("nvptx64-nvidia-cuda"), settings.finish())?;
    let mut ctx = Context::new();
    let ptx = ctx.compile(&func, ptx_isa.as_ref())?;
    let text = ptx.text().ok_or("the PTX target emits text")?;
    assert!(text.contains(".target sm_80"));
    println!("PTX: {} lines", text.lines().count());

    // The launch, built in code: 3 blocks of 32 threads over 90 elements.
    let n = 90;
    let x: Vec<i32> = (0..n).map(|i| (i * 37) % 50 - 10).collect();
    let count: Vec<i32> = (0..n).map(|i| i % 13).collect();
    let (lo, hi) = (5, 30);
    let launch = Launch::builder()
        .grid(3)
        .block(32)
        .buffer("x", &x)
        .buffer("count", &count)
        .zeros::<i32>("out", n as usize)
        .arg("n", n)
        .arg("lo", lo)
        .arg("hi", hi)
        .build();
    let want = expected(&x, &count, lo, hi);

    // The reference interpreter defines what the kernel computes.
    let reference = warplift::interpret(&func, &launch, &InterpConfig::default())?;
    assert_eq!(reference.buffer::<i32>("out")?, want);

    // The SIMT target, without and with linearization, at warp widths 32 and 8.
    for passes in ["", "linearize"] {
        let mut settings = Settings::builder();
        settings.set("passes", passes)?;
        let isa = lookup_by_name("simt", settings.finish())?;
        let object = ctx.compile(&func, isa.as_ref())?;
        for warp_width in [32, 8] {
            let machine = MachineConfig::builder().warp_width(warp_width).build()?;
            let run = warplift::run_object(object.bytes(), &launch, &machine)?;
            assert_eq!(run.buffer::<i32>("out")?, want);
            assert_eq!(run.memory, reference.memory);
            println!(
                "simt passes=[{passes}] warp width {warp_width}: {} cycles, SIMT efficiency {:.2}",
                run.stats.cycles, run.stats.simt_efficiency
            );
        }
    }
    println!("every run equals the Rust computation and the interpreter");

    // A study: the kernel, written to a file, swept over both pipelines and both widths.
    let dir = std::env::temp_dir().join(format!("warplift-embed-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("accumulate.wir"), func.to_string())?;
    let spec = format!(
        r#"
        name = "embed"
        [sweep]
        warp_width = [8, 32]
        [[kernels]]
        files = "accumulate.wir"
        [kernels.launch]
        grid = [3]
        block = [32]
        args = {{ n = {n}, lo = {lo}, hi = {hi} }}
        buffers.x = {{ type = "i32", init = "values", values = {x:?} }}
        buffers.count = {{ type = "i32", init = "values", values = {count:?} }}
        buffers.out = {{ type = "i32", len = {n} }}
        [[pipelines]]
        name = "base"
        [[pipelines]]
        name = "linearize"
        passes = ["linearize"]
        "#
    );
    // Relative paths in a spec start at its path (here a name: the file need not exist).
    let study = Study::from_str(&spec, dir.join("embed.toml"))?;
    let results = study.run(&RunOptions::default())?;
    assert_eq!(results.rows().count(), 4);
    for row in results.rows() {
        assert_eq!(row.status, "ok"); // its memory equals the interpreter's
        println!("{}: {:?} cycles", row.key, row.get("cycles"));
    }
    study.write_outputs(&dir.join("out"), &results)?; // CSV, JSON, summary, plots, index
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
