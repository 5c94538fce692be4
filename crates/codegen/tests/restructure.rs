//! The `restructure` IR pass on the corpus and on random kernels: the result verifies,
//! computes what the kernel computed (the reference interpreter runs both), passes the
//! pass's checker (tail-structured on the whole kernel; no divergent unstructured region
//! left in selective mode), leaves structured kernels byte-identical in selective mode,
//! and grows the code by a bounded factor.

use std::path::{Path, PathBuf};
use warplift_codegen::linearize::RegionMode;
use warplift_codegen::restructure::check::check;
use warplift_codegen::restructure::graph::Cascade;
use warplift_codegen::restructure::{restructure, LoopMode, Options, Outcome};
use warplift_ir::cfg::{classify, StructureClass};
use warplift_ir::interp::{self, InterpConfig};
use warplift_ir::launch::{Launch, PreparedLaunch};
use warplift_ir::parser::parse_functions;
use warplift_ir::verifier::verify_function;
use warplift_ir::Function;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus")
}

/// Every corpus kernel with its launch (if it has one).
fn corpus() -> Vec<(String, Function, Option<PreparedLaunch>)> {
    let mut files: Vec<_> = std::fs::read_dir(corpus_dir())
        .expect("tests/corpus exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wir"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let funcs = parse_functions(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let launch_path = Launch::path_next_to(&path);
        let launch = launch_path
            .exists()
            .then(|| Launch::from_file(&launch_path).unwrap());
        for func in funcs {
            let prepared = launch.as_ref().and_then(|l| {
                let f = l.select_kernel(std::slice::from_ref(&func)).ok()?;
                l.prepare(f).ok()
            });
            out.push((name.clone(), func, prepared));
        }
    }
    out
}

fn interpret(
    func: &Function,
    prepared: &PreparedLaunch,
    warp_size: u32,
) -> Result<Vec<Vec<u8>>, String> {
    let mut launch = prepared.clone();
    let config = InterpConfig {
        warp_size,
        ..InterpConfig::default()
    };
    interp::run(func, &mut launch, &config).map_err(|e| e.to_string())?;
    Ok(launch
        .memory
        .buffers
        .iter()
        .map(|b| b.bytes.clone())
        .collect())
}

/// The configurations tested: selective (default), all, and the whole kernel with each
/// loop mode and cascade.
fn configurations() -> Vec<(String, Options)> {
    let mut out = vec![
        ("divergent".to_string(), Options::default()),
        (
            "all".to_string(),
            Options {
                regions: RegionMode::All,
                ..Options::default()
            },
        ),
    ];
    for loops in [LoopMode::Copy, LoopMode::Predicate] {
        for cascade in [Cascade::Depth, Cascade::Breadth, Cascade::Table] {
            out.push((
                format!("kernel {loops:?} {cascade:?}"),
                Options {
                    regions: RegionMode::Kernel,
                    loops,
                    cascade,
                    ..Options::default()
                },
            ));
        }
    }
    for name in [
        "none",
        "loop",
        "loop-copy",
        "loop+branch",
        "loop-copy+branch",
    ] {
        out.push((
            name.to_string(),
            Options::paper_configuration(name).unwrap(),
        ));
    }
    out
}

fn restructured(func: &Function, options: &Options) -> (Function, Outcome) {
    let mut f = func.clone();
    let outcome = restructure(&mut f, options);
    if let Err(errors) = verify_function(&f) {
        panic!(
            "%{} ({options:?}) does not verify:\n{errors}\n{f}",
            func.name
        );
    }
    (f, outcome)
}

#[test]
fn every_corpus_kernel_restructured_verifies_checks_and_computes_what_it_computed() {
    let mut restructured_regions = 0;
    for (name, func, prepared) in corpus() {
        for (label, options) in configurations() {
            let (after, outcome) = restructured(&func, &options);
            if let Err(e) = check(&after, &options, &outcome) {
                panic!("{name} ({label}): {e}\n{after}");
            }
            restructured_regions += outcome.restructured;
            if outcome.restructured == 0 {
                assert!(after.structurally_eq(&func), "{name} ({label})");
                continue;
            }
            let Some(prepared) = &prepared else { continue };
            for width in [1, 32] {
                assert_eq!(
                    interpret(&after, prepared, width),
                    interpret(&func, prepared, width),
                    "{name} ({label}, warp width {width})\n{after}"
                );
            }
        }
    }
    assert!(restructured_regions >= 40, "{restructured_regions}");
}

#[test]
fn structured_kernels_are_byte_identical_in_selective_mode() {
    let mut structured = 0;
    for (name, func, _) in corpus() {
        let class = classify(&func).class;
        if class > StructureClass::Sese {
            continue;
        }
        structured += 1;
        let (after, outcome) = restructured(&func, &Options::default());
        assert_eq!(outcome.restructured, 0, "{name}");
        assert_eq!(after.to_string(), func.to_string(), "{name}");
        assert_eq!(outcome.insts_after, outcome.insts_before, "{name}");
    }
    assert!(structured >= 25, "{structured}");
}
