#!/usr/bin/env bash
# The functional mode against the timed mode, and on one core against two: the ALU-bound
# and the memory-bound kernel of crates/emu/benches/kernels (256 blocks of 256 threads,
# warp width 32) run timed on CPU 0, functional on CPU 0 (one rayon thread) and functional
# on CPUs 0 and 1 (two rayon threads), each `runs` times; the median wall-clock time is
# shown with the speedups. Run it on an otherwise idle machine with at least two CPUs.
# Usage: scripts/emu-cores.sh [path/to/warplift] [runs] [blocks]
# (default target/release/warplift, 5 runs, 256 blocks).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/warplift}
runs=${2:-5}
blocks=${3:-256}
dir=crates/emu/benches/kernels
# The median wall-clock seconds of `runs` runs of the command.
median() {
  local times=() start end
  for _ in $(seq "$runs"); do
    start=$(date +%s%N)
    "$@" >/dev/null 2>&1
    end=$(date +%s%N)
    times+=("$(awk -v d=$((end - start)) 'BEGIN {printf "%.4f", d / 1e9}')")
  done
  printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p"
}
printf '%-5s %14s %10s %10s %10s %10s %10s %14s\n' kernel thread-insts 'timed 1c' 'func 1c' \
  'func 2c' 'func/timed' '2c/1c' 'M/s timed 1c'
for k in alu mem; do
  run=("$bin" run "$dir/$k.wir" --print none --grid "$blocks")
  insts=$("${run[@]}" --stats | awk '/thread-instructions/ {print $2}')
  t=$(RAYON_NUM_THREADS=1 median taskset -c 0 "${run[@]}")
  f1=$(RAYON_NUM_THREADS=1 median taskset -c 0 "${run[@]}" --functional)
  f2=$(RAYON_NUM_THREADS=2 median taskset -c 0,1 "${run[@]}" --functional)
  awk -v k="$k" -v n="$insts" -v t="$t" -v a="$f1" -v b="$f2" 'BEGIN {
    printf "%-5s %14d %10.3f %10.3f %10.3f %10.2f %10.2f %14.1f\n", k, n, t, a, b, t / a, a / b, n / t / 1e6 }'
done
