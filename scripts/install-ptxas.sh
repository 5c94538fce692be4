#!/usr/bin/env bash
# Installs NVIDIA's PTX assembler (ptxas) under .tools/ in the repository, for the tests
# that assemble emitted PTX. ptxas comes from the PyPI wheel nvidia-cuda-nvcc-cu12 and runs
# without a GPU. Idempotent: does nothing when it is already there. Prints the path.
set -euo pipefail

VERSION=12.9.86
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/.tools/cuda-nvcc-$VERSION"
PTXAS="$DEST/nvidia/cuda_nvcc/bin/ptxas"

if [ ! -x "$PTXAS" ]; then
    WHEELS="$ROOT/.tools/wheels"
    mkdir -p "$WHEELS" "$DEST"
    if ! ls "$WHEELS"/nvidia_cuda_nvcc_cu12-"$VERSION"-*.whl >/dev/null 2>&1; then
        python3 -m pip download --no-deps --only-binary=:all: \
            "nvidia-cuda-nvcc-cu12==$VERSION" -d "$WHEELS" >&2
    fi
    WHEEL="$(ls "$WHEELS"/nvidia_cuda_nvcc_cu12-"$VERSION"-*.whl | head -n 1)"
    # A wheel is a zip; unzip(1) may be missing, Python is not.
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
        "$WHEEL" "$DEST"
    chmod +x "$PTXAS"
fi
"$PTXAS" --version >/dev/null
echo "$PTXAS"
