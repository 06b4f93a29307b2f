#!/usr/bin/env bash
# Instructions per hold-model event, measured with callgrind by differencing two run lengths:
#   Ir/event = (Ir(E2 events) - Ir(E1 events)) / (E2 - E1)
# so process start-up, set-up of the N pending events and teardown cancel out.
#
# usage: bench/callgrind_per_event.sh BUILD_DIR [N] [E1] [E2] [MODEL...]
#   BUILD_DIR  a build tree holding bench/kdsim_hold_callgrind (Release or RelWithDebInfo)
#   N          pending events (default 1000)
#   E1, E2     the two run lengths (default 1000000 and 2000000)
#   MODEL      engine coroutine queue floor (default: all four)
# Environment:
#   BRANCH_SIM=1  also simulate branch prediction (--branch-sim=yes) and report mispredicted
#                 conditional branches per event (Bcm/event): callgrind's simple predictor, a
#                 guide to how branchy the code is, not the CPU's own figure
#   HOLD_BIN=path run this kdsim_hold_callgrind binary instead of BUILD_DIR's
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR [N] [E1] [E2] [MODEL...]}
n=${2:-1000}
e1=${3:-1000000}
e2=${4:-2000000}
shift $(( $# < 4 ? $# : 4 ))
models=("$@")
[ ${#models[@]} -eq 0 ] && models=(engine coroutine queue floor)

bin=${HOLD_BIN:-$build/bench/kdsim_hold_callgrind}
[ -x "$bin" ] || { echo "no $bin: build the kdsim_hold_callgrind target first" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind not installed (apt-get install valgrind)" >&2; exit 1; }
(( e2 > e1 )) || { echo "E2 must be larger than E1" >&2; exit 1; }

branch=${BRANCH_SIM:-0}
cg_opts=()
[ "$branch" = 1 ] && cg_opts=(--branch-sim=yes)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Totals of one run from the callgrind output's "summary:" line: "Ir" or, with branch
# simulation, "Ir Bcm" (the "events:" line names the columns: Ir Bc Bcm Bi Bim).
totals() {
    local model=$1 events=$2 out="$tmp/cg.$1.$2"
    valgrind --tool=callgrind "${cg_opts[@]}" --callgrind-out-file="$out" \
        "$bin" "$model" "$n" "$events" >/dev/null 2>"$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
    if [ "$branch" = 1 ]; then
        awk '/^summary:/ { print $2, $4 }' "$out"
    else
        awk '/^summary:/ { print $2 }' "$out"
    fi
}

if [ "$branch" = 1 ]; then
    printf '%-10s %8s %16s %16s %10s %10s\n' model N Ir@E1 Ir@E2 Ir/event Bcm/event
else
    printf '%-10s %8s %16s %16s %10s\n' model N Ir@E1 Ir@E2 Ir/event
fi
for m in "${models[@]}"; do
    read -r i1 b1 <<<"$(totals "$m" "$e1")"
    read -r i2 b2 <<<"$(totals "$m" "$e2")"
    per=$(awk -v a="$i1" -v b="$i2" -v x="$e1" -v y="$e2" 'BEGIN { printf "%.1f", (b - a) / (y - x) }')
    if [ "$branch" = 1 ]; then
        bper=$(awk -v a="$b1" -v b="$b2" -v x="$e1" -v y="$e2" 'BEGIN { printf "%.2f", (b - a) / (y - x) }')
        printf '%-10s %8s %16s %16s %10s %10s\n' "$m" "$n" "$i1" "$i2" "$per" "$bper"
    else
        printf '%-10s %8s %16s %16s %10s\n' "$m" "$n" "$i1" "$i2" "$per"
    fi
done
echo "(E1=$e1, E2=$e2 events; Ir/event = (Ir@E2 - Ir@E1) / (E2 - E1))"
