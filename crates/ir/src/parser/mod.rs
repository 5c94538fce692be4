//! The parser of the `.wir` text format.
//!
//! It reads exactly what the printer ([`crate::write`]) writes, so `parse(print(f))`
//! equals `f` for every function, and it is the way tests, the corpus and the command-line
//! tools get kernels in. The grammar, with examples, is in `docs/text-format.md`.
//!
//! Parsing runs in two passes per kernel:
//!
//! - the syntax pass (`syntax.rs`) checks the grammar and literals and records every
//!   definition and use with its position, leaving names unresolved: the text may use a
//!   value or a block before defining it (loop-carried block parameters, forward
//!   branches), and name values and blocks with any numbers in any order;
//! - the build pass (`build.rs`) resolves names, infers the result types the text leaves
//!   implicit, and creates the function's entities, keeping the text's numbers when it
//!   can (`v7` is `Value` 7, `block3` is `Block` 3; the rules are in `build.rs` and
//!   `docs/text-format.md`).
//!
//! Every instruction's [`Function::srclocs`] entry is the line and column where it starts,
//! and every block's [`Function::block_srclocs`] entry where its header starts.
//!
//! The parser checks what it must to build a function: syntax, literal ranges, names, and
//! result types. Whether operand types fit their instructions, and every other rule of a
//! well-formed kernel, is the [verifier](crate::verifier)'s job, so a parsed function may
//! still be invalid. No input makes the parser panic or recurse: errors are
//! [`ParseError`]s naming the line and column and what was expected there.

mod build;
mod lexer;
mod literals;
mod syntax;

#[cfg(test)]
mod tests;

use crate::function::Function;
use crate::srcloc::SourceLoc;
use std::collections::HashMap;
use syntax::Parser;

/// Why a text could not be parsed, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{loc}: {message}")]
pub struct ParseError {
    /// The line and column of the problem.
    pub loc: SourceLoc,
    /// What is wrong, typically what was expected and what was found instead.
    pub message: String,
}

impl ParseError {
    /// An error at `loc`.
    pub(crate) fn new(loc: SourceLoc, message: impl Into<String>) -> Self {
        ParseError {
            loc,
            message: message.into(),
        }
    }
}

/// Parses a text holding one or more kernels, returned in text order. Kernel names must
/// be distinct.
pub fn parse_functions(text: &str) -> Result<Vec<Function>, ParseError> {
    let mut parser = Parser::new(text)?;
    if parser.at_eof() {
        return Err(parser.expected("`kernel`"));
    }
    let mut funcs = Vec::new();
    let mut names: HashMap<&str, SourceLoc> = HashMap::new();
    while !parser.at_eof() {
        let raw = parser.kernel()?;
        if let Some(first) = names.insert(raw.name, raw.name_loc) {
            return Err(ParseError::new(
                raw.name_loc,
                format!(
                    "kernel %{} is defined twice (first at {first})",
                    lexer::shorten(raw.name)
                ),
            ));
        }
        funcs.push(build::build(raw)?);
    }
    Ok(funcs)
}

/// Parses a text holding exactly one kernel.
pub fn parse_function(text: &str) -> Result<Function, ParseError> {
    let mut parser = Parser::new(text)?;
    let raw = parser.kernel()?;
    if !parser.at_eof() {
        return Err(parser.expected(&format!(
            "the end of the input after kernel %{} (the text must hold exactly one kernel)",
            lexer::shorten(raw.name)
        )));
    }
    build::build(raw)
}
