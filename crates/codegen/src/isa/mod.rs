//! The targets: each turns final machine IR into something a machine runs.
//!
//! A target is a [`TargetIsa`], chosen by a `target-lexicon` triple and [`Settings`]
//! with [`lookup`] (or by its short name with [`lookup_by_name`]):
//!
//! | name | triple | output |
//! |---|---|---|
//! | `ptx` | `nvptx64-nvidia-cuda` | PTX text for NVIDIA GPUs, checked by NVIDIA's `ptxas` ([`ptx`]) |
//! | `simt` | `unknown-warplift-unknown` | SIMT bytecode in an ELF object, run by the emulator ([`simt`]) |
//!
//! What a target supplies is exactly what differs between targets: its register file (how
//! many registers of each class the allocator may use) and its emitter. Lowering, register
//! allocation and every mid-level pass are shared.

pub mod ptx;
pub mod simt;

use crate::mir::MirFunction;
use crate::regalloc::RegisterFile;
use crate::settings::Settings;
use core::str::FromStr;
use target_lexicon::Triple;
use thiserror::Error;
use warplift_ir::divergence::Reconvergence;

/// A compilation target.
pub trait TargetIsa {
    /// The target's short name (`ptx`, `simt`).
    fn name(&self) -> &'static str;

    /// The target triple.
    fn triple(&self) -> &Triple;

    /// The settings the target was built with.
    fn settings(&self) -> &Settings;

    /// The registers of each class the allocator may use: the settings' sizes, capped by
    /// what the target has.
    fn register_file(&self) -> RegisterFile;

    /// Does [`TargetIsa::emit_module`] produce text (PTX) rather than a binary object?
    fn emits_text(&self) -> bool;

    /// Where the threads of a split warp run together again on this target's machines,
    /// which decides the branches the divergence analysis may prove uniform: the SIMT
    /// machine reconverges at immediate post-dominators; PTX runs on machines with
    /// independent thread scheduling ([`Reconvergence::Independent`]).
    fn reconvergence(&self) -> Reconvergence {
        Reconvergence::Ipdom
    }

    /// Emits a module holding `kernels` (final machine IR). `source_name` names the `.wir`
    /// file for line information.
    fn emit_module(
        &self,
        kernels: &[MirFunction],
        source_name: Option<&str>,
    ) -> Result<Vec<u8>, EmitError>;
}

/// A target's emitter failed.
#[derive(Debug, Error)]
#[error("{target}: {message}")]
pub struct EmitError {
    /// The target's name.
    pub target: &'static str,
    /// What went wrong.
    pub message: String,
}

/// No target matches.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LookupError {
    /// The triple names no supported target.
    #[error("no warplift target for the triple `{0}` (supported: nvptx64-nvidia-cuda, unknown-warplift-unknown)")]
    Unsupported(String),
    /// The name is neither a target name nor a triple.
    #[error("unknown target `{0}` (targets: ptx, simt; or a triple such as nvptx64-nvidia-cuda)")]
    UnknownName(String),
}

/// The target for `triple`, with `settings`.
pub fn lookup(triple: Triple, settings: Settings) -> Result<Box<dyn TargetIsa>, LookupError> {
    use target_lexicon::{Architecture, OperatingSystem};
    match (triple.architecture, triple.operating_system) {
        (Architecture::Nvptx64, OperatingSystem::Cuda | OperatingSystem::Unknown) => {
            Ok(Box::new(ptx::PtxIsa::new(triple, settings)))
        }
        (Architecture::Unknown, _) if triple.vendor.as_str() == "warplift" => {
            Ok(Box::new(simt::SimtIsa::new(triple, settings)))
        }
        _ => Err(LookupError::Unsupported(triple.to_string())),
    }
}

/// The target called `name` (`ptx`, `simt`), or named by the triple `name`.
pub fn lookup_by_name(name: &str, settings: Settings) -> Result<Box<dyn TargetIsa>, LookupError> {
    let triple = match name {
        "ptx" => ptx::PtxIsa::default_triple(),
        "simt" => simt::SimtIsa::default_triple(),
        _ => Triple::from_str(name).map_err(|_| LookupError::UnknownName(name.to_string()))?,
    };
    lookup(triple, settings)
}

/// `settings`' register counts capped by `max`, per class.
pub(crate) fn capped_register_file(settings: &Settings, max: RegisterFile) -> RegisterFile {
    RegisterFile::new(
        settings.regs_b32.min(max.b32),
        settings.regs_b64.min(max.b64),
        settings.regs_pred.min(max.pred),
    )
}
