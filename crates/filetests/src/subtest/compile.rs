//! `test compile`: the kernels compiled with the file's pipeline give exactly the
//! expected output: the final machine IR for `target=simt` (the default), the PTX text
//! for `target=ptx`. The block is `; expect compile --target T`.

use crate::subtest::{settings, targets};
use crate::{Command, Failure, TestFile};
use warplift_codegen::{lookup_by_name, Context};

/// The outputs of one `test compile` command of `file`: (label, text) per target.
pub(crate) fn outputs(
    file: &TestFile,
    command: &Command,
) -> Result<Vec<(String, String)>, Failure> {
    let funcs = file.functions()?;
    let mut out = Vec::new();
    for target in targets(command, &["simt"])? {
        let settings = settings(file, command, &["target"])?;
        let isa = lookup_by_name(target, settings)
            .map_err(|e| Failure::at(command.line, e.to_string()))?;
        let mut ctx = Context::new();
        let mut text = String::new();
        if target == "ptx" {
            let module = ctx
                .compile_module(&funcs, &*isa, Some(&file.name))
                .map_err(|e| Failure::at(command.line, e.to_string()))?;
            text.push_str(module.text().unwrap_or_default());
        } else {
            for func in &funcs {
                let kernel = ctx
                    .compile_kernel(func, &*isa)
                    .map_err(|e| Failure::at(command.line, format!("%{}: {e}", func.name)))?;
                text.push_str(&kernel.mir.to_string());
            }
        }
        out.push((super::label("compile", target, command), text));
    }
    Ok(out)
}
