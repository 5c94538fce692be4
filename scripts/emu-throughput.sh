#!/usr/bin/env bash
# Whole-process emulator throughput through the CLI: the ALU-bound and the memory-bound
# kernel of crates/emu/benches/kernels (blocks of 256 threads, warp width 32, the buffer
# sized to the grid), timed and functional, in thread-instructions per second of CPU time
# (user + system) and of wall-clock time. time(1) gives CPU time to 10 ms, so grids whose
# runs last a second or more (1024 blocks and up) read to about 1%.
# Usage: scripts/emu-throughput.sh [path/to/warplift] [runs] [blocks]
# (default target/release/warplift, 3 runs, 256 blocks; the median run by CPU time is
# shown).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/warplift}
runs=${2:-3}
blocks=${3:-256}
dir=crates/emu/benches/kernels
printf '%-6s %-11s %14s %8s %8s %12s %12s\n' kernel mode thread-insts cpu-s wall-s 'M/s (cpu)' 'M/s (wall)'
for k in alu mem; do
  for mode in timed functional; do
    flags=(--print none --stats --grid "$blocks" --buffer "out=i32[$((blocks * 256))]:zeros")
    [ "$mode" = functional ] && flags+=(--functional)
    results=()
    for _ in $(seq "$runs"); do
      out=$( { /usr/bin/time -f 'TIME %U %S %e' "$bin" run "$dir/$k.wir" "${flags[@]}"; } 2>&1 )
      insts=$(awk '/thread-instructions/ {print $2}' <<<"$out")
      read -r u s e < <(awk '/^TIME/ {print $2, $3, $4}' <<<"$out")
      cpu=$(awk -v u="$u" -v s="$s" 'BEGIN {print u + s}')
      results+=("$cpu $e $insts")
    done
    read -r cpu wall insts < <(printf '%s\n' "${results[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
    awk -v k="$k" -v m="$mode" -v n="$insts" -v c="$cpu" -v w="$wall" 'BEGIN {
      printf "%-6s %-11s %14d %8.2f %8.2f %12.1f %12.1f\n", k, m, n, c, w, n / c / 1e6, n / w / 1e6 }'
  done
done
