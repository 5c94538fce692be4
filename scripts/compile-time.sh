#!/usr/bin/env bash
# Compile time side by side: warplift against llc on the same kernels.
#
# Generates the "straight" and "branchy" kernels of the compile benches (benches/codegen.rs)
# at 1k, 10k and 100k IR instructions, each also as the equivalent LLVM function, and
# prints the whole-process CPU time (user + system, median of RUNS paired runs) of:
#   warplift compile -t ptx                        (the plain compile)
#   warplift compile -t ptx --passes linearize     (machine-level linearization)
#   warplift compile -t ptx --passes linearize_ssa (SSA-level linearization)
#   llc -O2 -march=nvptx64                         (LLVM's NVPTX back end)
# with the ratios the project aims at: warplift/llc at most 0.1, each linearization at
# most 2x the plain compile, and branchy 100k within 12x of branchy 10k.
#
# Usage: scripts/compile-time.sh [RUNS] [SIZE...]   (LLC=llc-14 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-5}"
shift || true
SIZES=("${@:-1000}")
if [ $# -eq 0 ]; then SIZES=(1000 10000 100000); fi
LLC="${LLC:-llc-14}"
command -v "$LLC" >/dev/null || { echo "compile-time.sh: $LLC not found (set LLC)" >&2; exit 1; }

cargo build -q --release -p warplift-cli
DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
cargo run -q --release --example bench_kernels -- "$DIR" "${SIZES[@]}"

python3 - "$DIR" "$RUNS" "$LLC" "${SIZES[@]}" <<'PY'
import os, resource, statistics, subprocess, sys

d, runs, llc, sizes = sys.argv[1], int(sys.argv[2]), sys.argv[3], [int(s) for s in sys.argv[4:]]
warplift = os.path.join("target", "release", "warplift")

def cpu(cmd):
    """User + system CPU seconds of one run of cmd (a child process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

def insts(path):
    """IR instructions of a .wir kernel: its non-blank lines that are not labels."""
    n = 0
    for line in open(path):
        s = line.strip()
        if s and not s.startswith(("kernel", "block", "}")):
            n += 1
    return n

cols = ["plain", "linearize", "linearize_ssa", "llc"]
print(f"{'shape':9} {'insts':>7} {'plain ms':>9} {'us/inst':>8} {'lin ms':>9} {'x':>5} "
      f"{'lin_ssa ms':>10} {'x':>5} {'llc ms':>9} {'wl/llc':>7}")
medians = {}
for shape in ["straight", "branchy"]:
    for size in sizes:
        wir = os.path.join(d, f"{shape}-{size}.wir")
        ll = os.path.join(d, f"{shape}-{size}.ll")
        out = os.path.join(d, "out.ptx")
        cmds = {
            "plain": [warplift, "compile", "-t", "ptx", wir, "-o", out],
            "linearize": [warplift, "compile", "-t", "ptx", "--passes", "linearize", wir, "-o", out],
            "linearize_ssa": [warplift, "compile", "-t", "ptx", "--passes", "linearize_ssa", wir, "-o", out],
            "llc": [llc, "-O2", "-march=nvptx64", ll, "-o", out],
        }
        times = {c: [] for c in cols}
        for _ in range(runs):
            for c in cols:
                times[c].append(cpu(cmds[c]))
        m = {c: statistics.median(times[c]) for c in cols}
        medians[(shape, size)] = m
        n = insts(wir)
        print(f"{shape:9} {n:7} {m['plain']*1e3:9.1f} {m['plain']*1e6/n:8.2f} "
              f"{m['linearize']*1e3:9.1f} {m['linearize']/m['plain']:5.2f} "
              f"{m['linearize_ssa']*1e3:10.1f} {m['linearize_ssa']/m['plain']:5.2f} "
              f"{m['llc']*1e3:9.1f} {m['plain']/m['llc']:7.3f}", flush=True)
for shape in ["straight", "branchy"]:
    for a, b in zip(sizes, sizes[1:]):
        ra = medians[(shape, b)]["plain"] / medians[(shape, a)]["plain"]
        print(f"{shape} {b} / {a}: {ra:.1f}x the time for {b / a:.0f}x the instructions")
PY
