#!/usr/bin/env bash
# Compile time side by side: warplift against llc and Cranelift on the same kernels.
#
# Generates the "straight", "branchy" and "loops" kernels of the compile benches (benches/codegen.rs)
# at 1k, 10k and 100k IR instructions, each also as the equivalent LLVM function, and
# prints the whole-process CPU time (user + system, median of RUNS paired runs) of:
#   warplift compile -t ptx                        (the plain compile)
#   warplift compile -t ptx --passes linearize     (machine-level linearization)
#   the same with --set linearize_opt=3            (and the guard optimisations)
#   warplift compile -t ptx --passes linearize_ssa (SSA-level linearization)
#   llc -O2 -march=nvptx64                         (LLVM's NVPTX back end)
#   benches/cranelift (cranelift-codegen for x86-64, the same shapes built in memory)
# with the ratios the project aims at: warplift/llc at most 0.1, each linearization at
# most 2x the plain compile, each shape's 100k within 12x of its 10k, and warplift's time
# per IR instruction within 2x of Cranelift's per Cranelift instruction (whole process
# both: warplift parses its text, the Cranelift program builds its function in memory).
#
# Usage: scripts/compile-time.sh [RUNS] [SIZE...]   (LLC=llc-14 by default; CRANELIFT=0
# leaves Cranelift out, e.g. where crates.io cannot be reached to build it; an llc run past
# LLC_TIMEOUT seconds, 120 by default, is stopped and printed as inf, and one that crashes
# is printed as crashed; STAT=min prints each command's fastest run instead of its median,
# the figure that other load on the machine disturbs least: interference only ever adds
# time)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-5}"
shift || true
SIZES=("${@:-1000}")
if [ $# -eq 0 ]; then SIZES=(1000 10000 100000); fi
LLC="${LLC:-llc-14}"
command -v "$LLC" >/dev/null || { echo "compile-time.sh: $LLC not found (set LLC)" >&2; exit 1; }

cargo build -q --release -p warplift-cli
CL=""
if [ "${CRANELIFT:-1}" != 0 ]; then
  if cargo build -q --release --manifest-path benches/cranelift/Cargo.toml; then
    CL=benches/cranelift/target/release/cranelift-shapes
  else
    echo "compile-time.sh: benches/cranelift did not build; Cranelift left out" >&2
  fi
fi
DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
cargo run -q --release --example bench_kernels -- "$DIR" "${SIZES[@]}"

STAT="${STAT:-median}"
case "$STAT" in median|min) ;; *) echo "compile-time.sh: STAT is median or min" >&2; exit 1 ;; esac
STAT="$STAT" python3 - "$DIR" "$RUNS" "$LLC" "$CL" "${SIZES[@]}" <<'PY'
import math, os, resource, statistics, subprocess, sys

d, runs, llc, cl = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
# llc-14 takes minutes on the loops kernel of 10k instructions (3.3 s at 1k); its time is
# printed as inf past this many seconds.
llc_timeout = float(os.environ.get("LLC_TIMEOUT", "120"))
sizes = [int(s) for s in sys.argv[5:]]
stat = os.environ["STAT"]
warplift = os.path.join("target", "release", "warplift")

last_stdout = {}

def cpu(cmd, keep=None, timeout=None, may_crash=False):
    """User + system CPU seconds of one run of cmd (a child process); its output is kept
    under `keep` when given. A run past `timeout` wall seconds is stopped and counts as
    infinite. With `may_crash`, a run that fails (llc-14 overflows its stack in
    ScalarEvolution on the loops kernel of 100k instructions) counts as not a number and
    its messages are not shown."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        r = subprocess.run(cmd, check=True, timeout=timeout,
                           stdout=subprocess.PIPE if keep else subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL if may_crash else None)
    except subprocess.TimeoutExpired:
        return float("inf")
    except subprocess.CalledProcessError:
        if not may_crash:
            raise
        return float("nan")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if keep:
        last_stdout.setdefault(keep, []).append(r.stdout.decode())
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

def insts(path):
    """IR instructions of a .wir kernel: its non-blank lines that are not labels."""
    n = 0
    for line in open(path):
        s = line.strip()
        if s and not s.startswith(("kernel", "block", "}")):
            n += 1
    return n

cols = ["plain", "linearize", "linearize_o3", "linearize_ssa", "llc"] + (["cranelift"] if cl else [])
print(f"{'shape':9} {'insts':>7} {'plain ms':>9} {'us/inst':>8} {'lin x':>6} {'linO3 x':>7} "
      f"{'ssa x':>6} {'llc ms':>8} {'wl/llc':>7}"
      + (f" {'cl insts':>8} {'cl ms':>8} {'cl us/i':>8} {'wl/cl':>6}" if cl else ""))
print(f"whole-process CPU time, the {'median' if stat == 'median' else 'fastest'} of {runs} paired runs")
medians = {}
for shape in ["straight", "branchy", "loops"]:
    for size in sizes:
        wir = os.path.join(d, f"{shape}-{size}.wir")
        ll = os.path.join(d, f"{shape}-{size}.ll")
        out = os.path.join(d, "out.ptx")
        lin = [warplift, "compile", "-t", "ptx", "--passes", "linearize", wir, "-o", out]
        cmds = {
            "plain": [warplift, "compile", "-t", "ptx", wir, "-o", out],
            "linearize": lin,
            "linearize_o3": lin + ["--set", "linearize_opt=3"],
            "linearize_ssa": [warplift, "compile", "-t", "ptx", "--passes", "linearize_ssa", wir, "-o", out],
            "llc": [llc, "-O2", "-march=nvptx64", ll, "-o", out],
            "cranelift": [cl, shape, str(size)],
        }
        times = {c: [] for c in cols}
        last_stdout.clear()
        for _ in range(runs):
            for c in cols:
                if times[c] and not math.isfinite(times[c][-1]):
                    times[c].append(times[c][-1])  # it timed out or crashed once: not again
                    continue
                # Each command is timed right after an untimed run of itself, so that
                # no tool pays for the caches the one before it filled (run first in
                # a round after llc, the plain compile read 20-40% slower than the
                # same command run again); runs of a second or more are not repeated.
                if times[c] and times[c][-1] < 1.0:
                    cpu(cmds[c], timeout=llc_timeout if c == "llc" else None,
                        may_crash=c == "llc")
                times[c].append(cpu(cmds[c], keep=c if c == "cranelift" else None,
                                    timeout=llc_timeout if c == "llc" else None,
                                    may_crash=c == "llc"))
        # min() of a list holding nan (a crashed llc) is not defined: nan stays nan.
        m = {c: (statistics.median(times[c]) if stat == "median"
                 else (math.nan if any(map(math.isnan, times[c])) else min(times[c])))
             for c in cols}
        medians[(shape, size)] = m
        n = insts(wir)
        line = (f"{shape:9} {n:7} {m['plain']*1e3:9.1f} {m['plain']*1e6/n:8.2f} "
                f"{m['linearize']/m['plain']:6.2f} {m['linearize_o3']/m['plain']:7.2f} "
                f"{m['linearize_ssa']/m['plain']:6.2f} "
                + (f"{m['llc']*1e3:8.1f} {m['plain']/m['llc']:7.3f}" if not math.isnan(m["llc"])
                   else f"{'crashed':>8} {'-':>7}"))
        if cl:
            # The program prints its function's instruction count first.
            cn = int(last_stdout["cranelift"][0].split()[0])
            per_wl = m["plain"] / n
            per_cl = m["cranelift"] / cn
            line += (f" {cn:8} {m['cranelift']*1e3:8.1f} {per_cl*1e6:8.2f} "
                     f"{per_wl/per_cl:6.2f}")
        print(line, flush=True)
for shape in ["straight", "branchy", "loops"]:
    for a, b in zip(sizes, sizes[1:]):
        ra = medians[(shape, b)]["plain"] / medians[(shape, a)]["plain"]
        print(f"{shape} {b} / {a}: {ra:.1f}x the time for {b / a:.0f}x the instructions")
PY
