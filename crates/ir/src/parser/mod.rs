//! The parser of the `.wir` text format (to be written).
