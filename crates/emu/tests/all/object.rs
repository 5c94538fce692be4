//! The bytecode path: every corpus kernel compiled for the SIMT target into an ELF object,
//! loaded back and run from its bytecode, behaves exactly as the machine IR it was encoded
//! from — the same program, the same memory and the same statistics — and leaves the
//! interpreter's memory. Faults on this path name the source file and line from DWARF.

use warplift_codegen::isa::simt::load_object;
use warplift_codegen::{lookup_by_name, Context, Settings};
use warplift_emu::{run, MachineConfig, Program};
use warplift_filetests::{Failure, Walk};
use warplift_ir::launch::Launch;
use warplift_ir::parser::parse_functions;

#[test]
fn every_corpus_kernel_runs_from_its_object_as_from_its_machine_ir() {
    let runs: usize = Walk::corpus()
        .with_launch()
        .run(|file| {
            let isa = lookup_by_name("simt", Settings::default()).unwrap();
            let name = file.name.clone();
            let funcs = file.functions()?;
            let launch = file.launch()?;
            let mut runs = 0;
            let func = launch.select_kernel(&funcs).unwrap();
            let index = funcs.iter().position(|f| f.name == func.name).unwrap();
            let module = Context::new()
                .compile_module(&funcs, isa.as_ref(), Some(&name))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let object = load_object(&module.code).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(object.source_name, name);
            let loaded = object
                .kernel(&func.name)
                .expect("the kernel is in the object");
            let from_object =
                Program::from_loaded(loaded, &object.source_name).unwrap_or_else(|e| panic!("{e}"));
            let from_mir = Program::from_code(
                &warplift_codegen::isa::simt::encode(&module.kernels[index].mir).unwrap(),
            )
            .unwrap();

            // The same program, but for where it came from.
            assert_eq!(from_object.insts, from_mir.insts, "{name}");
            assert_eq!(from_object.blocks, from_mir.blocks, "{name}");
            assert_eq!(from_object.num_regs, from_mir.num_regs, "{name}");
            assert_eq!(from_object.local_size, from_mir.local_size, "{name}");
            assert_eq!(from_object.pcs.len(), from_object.insts.len());
            assert!(
                from_object.insts.iter().any(|i| !i.srcloc.is_unknown()),
                "{name}: no source locations from DWARF"
            );

            let prepared = launch.prepare(func).unwrap();
            for width in [1, 7, 32] {
                let config = MachineConfig::builder().warp_width(width).build().unwrap();
                let mut reference = prepared.clone();
                let interp = warplift_ir::interp::run(
                    func,
                    &mut reference,
                    &warplift_ir::interp::InterpConfig {
                        warp_width: width,
                        ..Default::default()
                    },
                );
                let mut a = prepared.clone();
                let mut b = prepared.clone();
                let ra = run(&from_object, &mut a, &config);
                let rb = run(&from_mir, &mut b, &config);
                match (&ra, &rb) {
                    (Ok(sa), Ok(sb)) => assert_eq!(sa, sb, "{name}: statistics at width {width}"),
                    (Err(ea), Err(eb)) => {
                        let (fa, fb) = (ea.fault().unwrap(), eb.fault().unwrap());
                        assert_eq!((fa.pc, &fa.kind), (fb.pc, &fb.kind), "{name}");
                    }
                    _ => panic!("{name}: width {width}: {ra:?} vs {rb:?}"),
                }
                for ((x, y), r) in a
                    .memory
                    .buffers
                    .iter()
                    .zip(&b.memory.buffers)
                    .zip(&reference.memory.buffers)
                {
                    assert!(x.bytes == y.bytes, "{name}: buffer {} differs", x.name);
                    if interp.is_ok() {
                        assert!(
                            x.bytes == r.bytes,
                            "{name}: buffer {} differs from the interpreter's at width {width}",
                            x.name
                        );
                    }
                }
                assert_eq!(interp.is_ok(), ra.is_ok(), "{name}: width {width}");
                runs += 1;
            }
            Ok::<_, Failure>(runs)
        })
        .into_iter()
        .sum();
    assert!(runs >= 60, "only {runs} runs");
}

const OOB: &str = "\
kernel %oob(out: i64) {
block0(v0: i64):
    v1 = thread_id x
    v2 = uextend.i64 v1
    v3 = iconst.i64 2
    v4 = ishl v2, v3
    v5 = iadd v0, v4
    v6 = load.i32 global v5
    v7 = iadd v6, v1
    store global v7, v5
    return
}
";

#[test]
fn a_fault_in_an_object_names_the_source_file_line_pc_and_instruction() {
    let funcs = parse_functions(OOB).unwrap();
    let isa = lookup_by_name("simt", Settings::default()).unwrap();
    let module = Context::new()
        .compile_module(&funcs, isa.as_ref(), Some("oob.wir"))
        .unwrap();
    let object = load_object(&module.code).unwrap();
    let prog = Program::from_loaded(&object.kernels[0], &object.source_name).unwrap();
    let mut launch = Launch::default();
    launch.set_block("4").unwrap();
    launch.add_buffer("out=i32[3]:zeros").unwrap();
    let mut prepared = launch.prepare(&funcs[0]).unwrap();
    let config = MachineConfig::builder().warp_width(4).build().unwrap();
    let err = run(&prog, &mut prepared, &config).unwrap_err();
    let fault = err.fault().expect("a fault");
    assert_eq!(fault.thread, [3, 0, 0]);
    assert_eq!(fault.srcloc.line, 8);
    assert_eq!(
        fault.pc_label,
        format!("{:#06x}", prog.pcs[fault.pc as usize])
    );
    let msg = err.to_string();
    for part in [
        "out-of-bounds global load of 4 bytes",
        "in kernel %oob",
        "block (0,0,0)",
        "thread (3,0,0)",
        "pc 0x",
        "(`ld.global.i32 $r",
        "oob.wir:8:",
    ] {
        assert!(msg.contains(part), "{part:?} missing from: {msg}");
    }

    // Encoded in memory, without an object naming the source file, the same fault shows
    // its pc and the line alone.
    let prog =
        Program::from_code(&warplift_codegen::isa::simt::encode(&module.kernels[0].mir).unwrap())
            .unwrap();
    let mut prepared = launch.prepare(&funcs[0]).unwrap();
    let msg = run(&prog, &mut prepared, &config).unwrap_err().to_string();
    assert!(msg.contains("pc 0x") && msg.contains(", line 8:"), "{msg}");
    assert!(msg.contains("(`ld.global.i32 $r"), "{msg}");
}
