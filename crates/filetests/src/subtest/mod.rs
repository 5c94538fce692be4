//! The test kinds a filetest header can name, one module each.

pub(crate) mod compile;
pub(crate) mod divergence;
pub(crate) mod interpret;
pub mod run;
pub(crate) mod verify;

use crate::{Command, Failure, TestFile};
use warplift_codegen::Settings;

/// The settings of `command` in `file`: the file's `; set` lines, then the command's own
/// `name=value` words, minus `skip` (the options the runner reads itself).
pub(crate) fn settings(
    file: &TestFile,
    command: &Command,
    skip: &[&str],
) -> Result<Settings, Failure> {
    let mut b = Settings::builder();
    for (name, value, line) in &file.header.settings {
        b.set(name, value)
            .map_err(|e| Failure::at(*line, e.to_string()))?;
    }
    for (name, value) in &command.options {
        if skip.contains(&name.as_str()) {
            continue;
        }
        b.set(name, value)
            .map_err(|e| Failure::at(command.line, e.to_string()))?;
    }
    Ok(b.finish())
}

/// The warp widths of `command`'s `widths=` option, or `default`.
pub(crate) fn widths(command: &Command, default: &[u32]) -> Result<Vec<u32>, Failure> {
    match command.option("widths") {
        None => Ok(default.to_vec()),
        Some(list) => list
            .split(',')
            .map(|w| {
                w.parse::<u32>().map_err(|_| {
                    Failure::at(
                        command.line,
                        format!("`widths={list}`: `{w}` is not a warp width"),
                    )
                })
            })
            .collect(),
    }
}

/// The targets of `command`'s `target=` option (`simt` or `ptx`), or `default`.
pub(crate) fn targets(
    command: &Command,
    default: &[&'static str],
) -> Result<Vec<&'static str>, Failure> {
    match command.option("target") {
        None => Ok(default.to_vec()),
        Some("simt") => Ok(vec!["simt"]),
        Some("ptx") => Ok(vec!["ptx"]),
        Some(other) => Err(Failure::at(
            command.line,
            format!("unknown target `{other}` (known: simt, ptx)"),
        )),
    }
}

/// The label of an expectation block of `command` for `target`: the kind, the target and
/// the command's other options (`compile --target simt passes=linearize`), so that two
/// commands of a file never share a block.
pub(crate) fn label(kind: &str, target: &str, command: &Command) -> String {
    let mut label = format!("{kind} --target {target}");
    for (name, value) in &command.options {
        if name != "target" {
            label.push_str(&format!(" {name}={value}"));
        }
    }
    label
}
