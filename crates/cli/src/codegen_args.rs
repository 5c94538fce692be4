//! Code-generator options shared by every command that compiles (`compile`, `run`, `cfg`):
//! settings by name and the pipeline of optional passes.

use anyhow::{Context, Result};
use clap::Args;
use warplift_codegen::{lookup_by_name, Settings, TargetIsa};

/// `--set` and `--passes`.
#[derive(Args, Debug, Default)]
pub struct CodegenArgs {
    /// A code-generator setting, `name=value` (repeatable; see `warplift settings`).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub settings: Vec<String>,
    /// The optional passes to run, comma-separated, in order (see `warplift passes`);
    /// shorthand for `--set passes=LIST`.
    #[arg(long, value_name = "LIST")]
    pub passes: Option<String>,
}

impl CodegenArgs {
    /// Were any code-generator options given?
    pub fn is_empty(&self) -> bool {
        self.settings.is_empty() && self.passes.is_none()
    }

    /// The settings: defaults, then each `--set`, then `--passes`.
    pub fn settings(&self) -> Result<Settings> {
        let mut builder = Settings::builder();
        for s in &self.settings {
            builder.set_assignment(s).context("--set")?;
        }
        if let Some(list) = &self.passes {
            builder.set("passes", list).context("--passes")?;
        }
        Ok(builder.finish())
    }

    /// The target called `name` (or named by a triple) with these settings.
    pub fn target(&self, name: &str) -> Result<Box<dyn TargetIsa>> {
        Ok(lookup_by_name(name, self.settings()?)?)
    }
}
