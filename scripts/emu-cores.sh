#!/usr/bin/env bash
# The functional mode against the timed mode, and on one core against two: the ALU-bound
# and the memory-bound kernel of crates/emu/benches/kernels (blocks of 256 threads, warp
# width 32, the buffer sized to the grid) run timed on CPU 0, functional on CPU 0 (one
# rayon thread) and functional on CPUs 0 and 1 (two rayon threads), each `runs` times,
# alternating so that a change in the machine's load touches every column alike. Two
# tables: timed against functional (median wall-clock seconds), then one thread against
# two (median wall-clock and user seconds, and their ratios: the wall-clock speedup, and
# the user time two threads spend for one thread's, which is 1.00 when the second thread
# adds no work). The default grid of 2048 blocks makes a functional run last about a
# second on one core, long enough that process start-up, the kernel's compilation and
# the thread pool's start (a few milliseconds) do not blur the speedup; runs of 0.1 s
# scattered it by a quarter. Run it on an otherwise idle machine with at least two CPUs:
# the load average printed first says how idle it was.
# Usage: scripts/emu-cores.sh [path/to/warplift] [runs] [blocks]
# (default target/release/warplift, 5 runs, 2048 blocks).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/warplift}
runs=${2:-5}
blocks=${3:-2048}
dir=crates/emu/benches/kernels
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); $runs runs of $blocks blocks"
# One run of the command: appends "wall user" (seconds, to the 0.1 ms that wait4 gives,
# where time(1) rounds to 10 ms) to the file $1.
once() {
  local file=$1
  shift
  python3 -c '
import os, sys, time
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
if status != 0:
    sys.exit("failed: " + " ".join(sys.argv[1:]))
print(f"{time.perf_counter() - start:.4f} {usage.ru_utime:.4f}")
' "$@" >>"$file"
}
# The median of column $2 of file $1.
median() {
  sort -n -k"$2" "$1" | sed -n "$(( (runs + 1) / 2 ))p" | cut -d' ' -f"$2"
}
declare -A wall user
insts=()
for k in alu mem; do
  run=("$bin" run "$dir/$k.wir" --print none --grid "$blocks"
    --buffer "out=i32[$((blocks * 256))]:zeros")
  insts[${#insts[@]}]=$("${run[@]}" --stats | awk '/thread-instructions/ {print $2}')
  : >"$tmp/$k.t" && : >"$tmp/$k.f1" && : >"$tmp/$k.f2"
  for _ in $(seq "$runs"); do
    RAYON_NUM_THREADS=1 once "$tmp/$k.t" taskset -c 0 "${run[@]}"
    RAYON_NUM_THREADS=1 once "$tmp/$k.f1" taskset -c 0 "${run[@]}" --functional
    RAYON_NUM_THREADS=2 once "$tmp/$k.f2" taskset -c 0,1 "${run[@]}" --functional
  done
  for m in t f1 f2; do
    wall[$k.$m]=$(median "$tmp/$k.$m" 1)
    user[$k.$m]=$(median "$tmp/$k.$m" 2)
  done
done
echo
echo "timed against functional (one thread, CPU 0; median wall-clock seconds)"
printf '%-6s %14s %10s %10s %11s %14s\n' kernel thread-insts 'timed' 'functional' 'func/timed' 'M/s timed'
i=0
for k in alu mem; do
  awk -v k="$k" -v n="${insts[$i]}" -v t="${wall[$k.t]}" -v f="${wall[$k.f1]}" 'BEGIN {
    printf "%-6s %14d %10.3f %10.3f %10.2fx %14.1f\n", k, n, t, f, t / f, n / t / 1e6 }'
  i=$((i + 1))
done
echo
echo "functional, one thread (CPU 0) against two (CPUs 0 and 1); seconds, medians"
printf '%-6s %9s %9s %9s %9s %9s %13s\n' kernel 'wall 1t' 'wall 2t' speedup 'user 1t' 'user 2t' 'user 2t/1t'
for k in alu mem; do
  awk -v k="$k" -v a="${wall[$k.f1]}" -v b="${wall[$k.f2]}" -v c="${user[$k.f1]}" \
    -v d="${user[$k.f2]}" 'BEGIN {
    printf "%-6s %9.3f %9.3f %8.2fx %9.3f %9.3f %12.2fx\n", k, a, b, a / b, c, d, d / c }'
done
