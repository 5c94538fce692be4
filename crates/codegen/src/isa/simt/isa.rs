//! The SIMT bytecode target as a [`TargetIsa`]: the machine the in-tree emulator runs.
//!
//! Its triple is `unknown-warplift-unknown`: target-lexicon knows no architecture for a
//! bytecode of our own, so the architecture is `unknown` and the vendor (a custom one,
//! `warplift`) says whose it is.

use super::{encode, write_object};
use crate::isa::{capped_register_file, EmitError, TargetIsa};
use crate::mir::MirFunction;
use crate::regalloc::RegisterFile;
use crate::settings::Settings;
use core::str::FromStr;
use target_lexicon::Triple;

/// The triple of the SIMT bytecode target.
pub const SIMT_TRIPLE: &str = "unknown-warplift-unknown";

/// warplift's SIMT bytecode in an ELF object.
pub struct SimtIsa {
    triple: Triple,
    settings: Settings,
}

impl SimtIsa {
    /// The SIMT target for `triple` with `settings`.
    pub fn new(triple: Triple, settings: Settings) -> Self {
        SimtIsa { triple, settings }
    }

    /// [`SIMT_TRIPLE`].
    pub fn default_triple() -> Triple {
        Triple::from_str(SIMT_TRIPLE).expect("a triple target-lexicon parses")
    }
}

impl TargetIsa for SimtIsa {
    fn name(&self) -> &'static str {
        "simt"
    }

    fn triple(&self) -> &Triple {
        &self.triple
    }

    fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The bytecode encodes 64 registers per class.
    fn register_file(&self) -> RegisterFile {
        capped_register_file(&self.settings, RegisterFile::MAX)
    }

    fn emits_text(&self) -> bool {
        false
    }

    fn emit_module(
        &self,
        kernels: &[MirFunction],
        source_name: Option<&str>,
    ) -> Result<Vec<u8>, EmitError> {
        let err = |message: String| EmitError {
            target: "simt",
            message,
        };
        let codes = kernels
            .iter()
            .map(|k| encode(k).map_err(|e| err(e.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        // Kernels built through the API have no source file; DWARF still needs a name.
        write_object(&codes, source_name.unwrap_or("<unknown>")).map_err(|e| err(e.to_string()))
    }
}
