//! Source locations.
//!
//! Every instruction keeps the place in the `.wir` text it came from (or the place an
//! embedder set through the builder), so verifier errors, interpreter faults and later the
//! DWARF line table of compiled code can point back at the source.

use core::fmt;

/// A line and column in a source text, both counted from 1. The default, line 0, means
/// "unknown".
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceLoc {
    /// The line, from 1; 0 when unknown.
    pub line: u32,
    /// The column, from 1; 0 when unknown.
    pub col: u32,
}

impl SourceLoc {
    /// A location at `line`, `col`.
    pub fn new(line: u32, col: u32) -> Self {
        SourceLoc { line, col }
    }

    /// Is the location unknown?
    pub fn is_unknown(self) -> bool {
        self.line == 0
    }
}

impl fmt::Display for SourceLoc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_unknown() {
            f.write_str("?")
        } else if self.col == 0 {
            write!(f, "{}", self.line)
        } else {
            write!(f, "{}:{}", self.line, self.col)
        }
    }
}
