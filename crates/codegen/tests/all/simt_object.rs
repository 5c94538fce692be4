//! ELF objects: round trips, DWARF line tables, what `readelf` shows, and the loader's
//! robustness against corrupted input.

use crate::simt_common as common;

use rand::{Rng, SeedableRng};
use std::process::Command;
use warplift_codegen::isa::simt::{
    decode, disassemble_object, disassemble_object_with_source, encode, load_object, write_object,
    KernelCode, LoadError, ObjectError,
};

fn kernels() -> Vec<KernelCode> {
    vec![
        encode(&common::kernel("all_forms")).unwrap(),
        encode(&common::small_kernel("loop")).unwrap(),
    ]
}

fn object() -> Vec<u8> {
    write_object(&kernels(), "tests/kernels.wir").unwrap()
}

#[test]
fn objects_round_trip_with_their_line_tables() {
    let kernels = kernels();
    let bytes = write_object(&kernels, "tests/kernels.wir").unwrap();
    let obj = load_object(&bytes).expect("loads");
    assert_eq!(obj.source_name, "tests/kernels.wir");
    assert_eq!(obj.kernels.len(), 2);
    for (k, loaded) in kernels.iter().zip(&obj.kernels) {
        assert_eq!(loaded.kernel, decode(&k.code, &k.info).unwrap());
        assert_eq!(loaded.kernel.info, k.info);
        // Every instruction's location comes back from the line table.
        for inst in &k.insts {
            assert_eq!(
                loaded.lines.lookup(inst.pc),
                inst.srcloc,
                "{} pc {:#x}",
                k.info.name,
                inst.pc
            );
        }
    }
    assert!(obj.kernel("loop").is_some());
    let text = disassemble_object(&obj);
    assert!(text.contains("kernel %loop(n: i32)"), "{text}");
    assert!(text.contains("; tests/kernels.wir:7:5\n    0x"), "{text}");

    let source: String = (1..=12)
        .map(|i| format!("line {i} of the source\n"))
        .collect();
    let text = disassemble_object_with_source(&obj, &source);
    assert!(text.contains(";     line 7 of the source\n"), "{text}");
}

#[test]
fn an_object_without_kernels_loads() {
    let bytes = write_object(&[], "empty.wir").unwrap();
    let obj = load_object(&bytes).unwrap();
    assert!(obj.kernels.is_empty());
}

#[test]
fn write_object_rejects_bad_names() {
    let k = encode(&common::small_kernel("loop")).unwrap();
    assert!(matches!(
        write_object(&[k.clone(), k.clone()], "a.wir"),
        Err(ObjectError::DuplicateKernel(_))
    ));
    assert!(matches!(
        write_object(std::slice::from_ref(&k), ""),
        Err(ObjectError::BadSourceName(_))
    ));
    let mut bad = k;
    bad.info.name = "a\0b".into();
    assert!(matches!(
        write_object(&[bad], "a.wir"),
        Err(ObjectError::BadKernelName(_))
    ));
}

#[test]
fn loader_rejects_every_truncation() {
    let bytes = object();
    for len in 0..bytes.len() {
        assert!(
            load_object(&bytes[..len]).is_err(),
            "prefix of {len} bytes loaded"
        );
    }
}

#[test]
fn loader_survives_byte_flips_and_garbage() {
    let bytes = object();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(42);
    let mut rejected = 0;
    for _ in 0..3000 {
        let mut b = bytes.clone();
        for _ in 0..rng.random_range(1..4) {
            let i = rng.random_range(0..b.len());
            b[i] ^= 1 << rng.random_range(0..8);
        }
        rejected += load_object(&b).is_err() as u32;
    }
    assert!(rejected > 0);
    for len in [0, 1, 4, 64, 4096] {
        let garbage: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        assert!(load_object(&garbage).is_err());
    }
    // A valid ELF header over garbage.
    let mut b = bytes.clone();
    for x in &mut b[64..] {
        *x = rng.random();
    }
    assert!(load_object(&b).is_err());
}

#[test]
fn loader_checks_the_format_version() {
    let mut bytes = object();
    let magic = bytes
        .windows(4)
        .position(|w| w == warplift_codegen::isa::simt::object::METADATA_MAGIC)
        .unwrap();
    bytes[magic + 4] = 99;
    assert!(matches!(
        load_object(&bytes),
        Err(LoadError::Version { found: 99 })
    ));
}

/// `readelf`, if installed.
fn readelf(args: &[&str], path: &std::path::Path) -> Option<String> {
    match Command::new("readelf").args(args).arg(path).output() {
        Ok(out) => {
            assert!(out.status.success(), "readelf {args:?} failed: {out:?}");
            Some(String::from_utf8_lossy(&out.stdout).into_owned())
        }
        Err(e) => {
            eprintln!("\n!!! readelf not found ({e}): SKIPPING the readelf checks !!!\n");
            None
        }
    }
}

#[test]
fn readelf_shows_the_sections_and_decoded_lines() {
    let kernels = kernels();
    let bytes = write_object(&kernels, "kernels.wir").unwrap();
    let dir = std::env::temp_dir().join(format!("warplift-simt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("kernels.o");
    std::fs::write(&path, &bytes).unwrap();

    let Some(sections) = readelf(&["-S", "-W"], &path) else {
        return;
    };
    for name in [
        ".text.all_forms",
        ".text.loop",
        ".warplift.kernels",
        ".debug_line",
        ".debug_info",
        ".symtab",
    ] {
        assert!(sections.contains(name), "{name} missing:\n{sections}");
    }
    let symbols = readelf(&["-s", "-W"], &path).unwrap();
    assert!(
        symbols.contains("FUNC    GLOBAL DEFAULT") && symbols.contains(" loop"),
        "{symbols}"
    );

    let lines = readelf(&["--debug-dump=decodedline"], &path).unwrap();
    assert!(!lines.contains("Warning"), "{lines}");
    // The loop kernel's rows: `kernels.wir  LINE  ADDRESS`.
    let small = &kernels[1];
    for inst in &small.insts {
        let row = format!(
            "kernels.wir {:>10} {:>18}",
            inst.srcloc.line,
            if inst.pc == 0 {
                "0".to_string()
            } else {
                format!("{:#x}", inst.pc)
            }
        );
        let compact: String = lines.split_whitespace().collect::<Vec<_>>().join(" ");
        let want: String = row.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(compact.contains(&want), "{want} missing:\n{lines}");
    }
    let info = readelf(&["--debug-dump=info"], &path).unwrap();
    assert!(
        info.contains("DW_AT_name") && info.contains("kernels.wir"),
        "{info}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_listing_of_a_small_kernel() {
    let code = encode(&common::small_kernel("loop")).unwrap();
    let obj = load_object(&write_object(&[code], "kernels.wir").unwrap()).unwrap();
    let expected = "\
; object compiled from kernels.wir

kernel %loop(n: i32)
    ; registers: 2 b32, 0 b64, 1 pred; shared 0 bytes; local 0 bytes + 0 spill slots; 40 bytes of code
block0:  ; block0
    ; kernels.wir:2:5
    0x0000:  ldparam.i32 $r0, 0
    ; kernels.wir:3:5
    0x0004:  sreg $r1, %tid.x
    ; kernels.wir:4:5
    0x0007:  jump 0x000c
block1:  ; block1
    ; kernels.wir:6:5
    0x000c:  bin.add.i32 $r1, $r1, 32
    ; kernels.wir:7:5
    0x0013:  setp.slt.i32 $p0, $r1, $r0
    ; kernels.wir:8:5
    0x0019:  br.div $p0, 0x000c, 0x0027, reconv 0x0027
block2:  ; block2
    ; kernels.wir:10:5
    0x0027:  ret
";
    assert_eq!(disassemble_object(&obj), expected);
}
