//! The PTX target as a [`TargetIsa`].

use super::{emit_ptx_module, min_ptx_version, PtxOptions};
use crate::isa::{capped_register_file, EmitError, TargetIsa};
use crate::mir::MirFunction;
use crate::regalloc::RegisterFile;
use crate::settings::Settings;
use core::str::FromStr;
use target_lexicon::Triple;
use warplift_ir::divergence::Reconvergence;

/// NVIDIA PTX, for `nvptx64-nvidia-cuda`.
pub struct PtxIsa {
    triple: Triple,
    settings: Settings,
}

impl PtxIsa {
    /// The PTX target for `triple` with `settings`.
    pub fn new(triple: Triple, settings: Settings) -> Self {
        PtxIsa { triple, settings }
    }

    /// `nvptx64-nvidia-cuda`.
    pub fn default_triple() -> Triple {
        Triple::from_str("nvptx64-nvidia-cuda").expect("a triple target-lexicon knows")
    }

    /// The emitter options the settings ask for.
    pub fn options(&self, source_name: Option<&str>) -> PtxOptions {
        PtxOptions {
            version: min_ptx_version(&self.settings.ptx_target).unwrap_or((7, 0)),
            target: self.settings.ptx_target.clone(),
            file_name: source_name.map(str::to_string),
            ..PtxOptions::default()
        }
    }
}

impl TargetIsa for PtxIsa {
    fn name(&self) -> &'static str {
        "ptx"
    }

    fn reconvergence(&self) -> Reconvergence {
        Reconvergence::Independent
    }

    fn triple(&self) -> &Triple {
        &self.triple
    }

    fn settings(&self) -> &Settings {
        &self.settings
    }

    /// PTX has 255 registers per thread, but the allocator handles at most 64 per class.
    fn register_file(&self) -> RegisterFile {
        capped_register_file(&self.settings, RegisterFile::MAX)
    }

    fn emits_text(&self) -> bool {
        true
    }

    fn emit_module(
        &self,
        kernels: &[MirFunction],
        source_name: Option<&str>,
    ) -> Result<Vec<u8>, EmitError> {
        emit_ptx_module(kernels, &self.options(source_name))
            .map(String::into_bytes)
            .map_err(|e| EmitError {
                target: "ptx",
                message: e.to_string(),
            })
    }
}
