#!/usr/bin/env bash
# The test command of README.md: everything CI checks, on a fresh machine.
# Installs what the tests need (NVIDIA's ptxas, from PyPI, to assemble every PTX the tests
# emit), then runs formatting, lints and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== toolchain"
cargo --version
rustup component list --installed 2>/dev/null | grep -E '^(rustfmt|clippy)' || true

echo "== ptxas"
WARPLIFT_PTXAS="$(bash scripts/install-ptxas.sh)"
export WARPLIFT_PTXAS
"$WARPLIFT_PTXAS" --version | tail -n 1

echo "== readelf (the object tests read ELF and DWARF with it)"
if ! command -v readelf >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        (apt-get update -qq && apt-get install -y -qq binutils) >/dev/null
    fi
fi
readelf --version | head -n 1

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

echo "== cargo test"
cargo test --workspace
