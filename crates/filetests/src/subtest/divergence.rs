//! `test divergence`: the divergence analysis of every kernel of the file, for each
//! target's reconvergence model, exactly as `warplift divergence --target T` prints it
//! (the stable format documented in docs/divergence.md). The blocks are
//! `; expect divergence --target T`, for `simt` and `ptx` unless `target=` names one.

use crate::subtest::{settings, targets};
use crate::{Command, Failure, TestFile};
use warplift_codegen::lookup_by_name;
use warplift_ir::divergence::Divergence;
use warplift_ir::verifier::verify_function;

/// The outputs of one `test divergence` command of `file`: (label, text) per target.
pub(crate) fn outputs(
    file: &TestFile,
    command: &Command,
) -> Result<Vec<(String, String)>, Failure> {
    let funcs = file.functions()?;
    for f in &funcs {
        verify_function(f).map_err(|e| Failure::new(format!("%{}: {e}", f.name)))?;
    }
    let mut out = Vec::new();
    for target in targets(command, &["simt", "ptx"])? {
        let settings = settings(file, command, &["target"])?;
        let model = lookup_by_name(target, settings)
            .map_err(|e| Failure::at(command.line, e.to_string()))?
            .reconvergence();
        let text = funcs
            .iter()
            .map(|f| Divergence::compute_for(f, model).display(f).to_string())
            .collect::<Vec<_>>()
            .join("\n");
        out.push((super::label("divergence", target, command), text));
    }
    Ok(out)
}
