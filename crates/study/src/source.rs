//! Reading kernel files: a `.wir` path becomes parsed (and optionally verified) functions,
//! with every error prefixed by the file name so it reads `file.wir:3:17: message`.

use anyhow::{bail, Context, Result};
use std::path::Path;
use warplift_ir::parser::parse_functions;
use warplift_ir::verifier::verify_function;
use warplift_ir::Function;

/// Reads `path` as UTF-8 text.
pub fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{}: not UTF-8 text (invalid byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

/// Reads and parses every kernel of `path`.
pub fn parse_file(path: &Path) -> Result<Vec<Function>> {
    parse_text(path, &read_text(path)?)
}

/// Parses every kernel of `text`, read from `path`.
pub fn parse_text(path: &Path, text: &str) -> Result<Vec<Function>> {
    parse_functions(text).map_err(|e| anyhow::anyhow!("{}:{e}", path.display()))
}

/// Reads, parses and verifies every kernel of `path`.
pub fn load_verified(path: &Path) -> Result<Vec<Function>> {
    let funcs = parse_file(path)?;
    verify_all(path, &funcs)?;
    Ok(funcs)
}

/// Verifies every kernel, reporting all errors of all kernels at once.
pub fn verify_all(path: &Path, funcs: &[Function]) -> Result<()> {
    let mut report = String::new();
    let mut count = 0;
    for func in funcs {
        if let Err(errors) = verify_function(func) {
            for e in &errors.0 {
                count += 1;
                report.push_str(&format!(
                    "\n{}:{e} (in kernel %{})",
                    path.display(),
                    func.name
                ));
            }
        }
    }
    if count > 0 {
        bail!(
            "{} failed verification with {count} error{}:{report}",
            path.display(),
            if count == 1 { "" } else { "s" }
        );
    }
    Ok(())
}
