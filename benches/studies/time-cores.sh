#!/usr/bin/env bash
# The speedup of a study on two cores over one (docs/studies.md, "Speed"): runs each spec
# with -j 1 and -j 2 in turn, pinned to two CPUs when `taskset` is there, and prints the
# median wall-clock time of each and their ratio. Run it on an otherwise idle machine.
#
#   bash benches/studies/time-cores.sh [WARPLIFT] [REPS]
#
# WARPLIFT defaults to target/release/warplift (build it with
# `cargo build --release -p warplift-cli`), REPS to 5.
set -euo pipefail
bin=${1:-target/release/warplift}
reps=${2:-5}
pin=()
if command -v taskset > /dev/null; then
    pin=(taskset -c 0,1)
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Median of the numbers on standard input.
median() {
    sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# Wall-clock seconds of one run.
seconds() {
    local start end
    start=$(date +%s.%N)
    "${pin[@]}" "$bin" study "$@" --fresh -q --out "$out/run" 2> /dev/null > /dev/null || true
    end=$(date +%s.%N)
    awk -v a="$start" -v b="$end" 'BEGIN { print b - a }'
}

printf '%-40s %6s %10s %10s %8s\n' spec runs "-j 1 (s)" "-j 2 (s)" speedup
for spec in benches/studies/hundred.toml benches/studies/hundred-tiny.toml studies/anantpur-tables.toml; do
    runs=$("$bin" study "$spec" --dry-run | head -1 | sed 's/.*: \([0-9]*\) runs.*/\1/')
    one=()
    two=()
    for _ in $(seq "$reps"); do
        one+=("$(seconds "$spec" -j 1)")
        two+=("$(seconds "$spec" -j 2)")
    done
    a=$(printf '%s\n' "${one[@]}" | median)
    b=$(printf '%s\n' "${two[@]}" | median)
    printf '%-40s %6s %10.3f %10.3f %7.2fx\n' "$spec" "$runs" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { print a / b }')"
done
