//! Unit tests of the parser.
