#!/usr/bin/env bash
# The test command of README.md: everything CI checks, on a fresh machine.
# Installs what the tests need (nothing beyond the Rust toolchain yet), then runs
# formatting, lints and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== toolchain"
cargo --version
rustup component list --installed 2>/dev/null | grep -E '^(rustfmt|clippy)' || true

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

echo "== cargo test"
cargo test --workspace
