//! The integration tests of `warplift`, one module per subject, built as one test binary:
//! each test binary links the whole workspace, so one per crate keeps the build short.
//! `cargo test -p warplift --test all MODULE::` runs one module's tests. A new test file
//! goes in this folder with its `mod` line below.

mod corpus;
mod docs;
mod layout;
mod malformed;
