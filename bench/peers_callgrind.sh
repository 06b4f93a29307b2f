#!/usr/bin/env bash
# Instructions per model event for kdsim, the floor, ns-3 and SimGrid on the peers workloads,
# with valgrind's callgrind. Each case runs twice, at K1 and K2 (K = firings per timer, packets
# per stream or round trips), through `kdsim_peers_bench --one=CASE --workload=W --n=N --k=K`:
#   Ir/event = (Ir(K2) - Ir(K1)) / (events(K2) - events(K1))
# so process start-up (loading ns-3 and SimGrid), set-up (initial events, actor creation) and
# teardown cancel out. Instruction counts do not move with machine load: the figure to compare
# across runs and machines of the same ISA.
#
# usage: bench/peers_callgrind.sh BUILD_DIR [CONFIG...]
#   BUILD_DIR  a build tree configured with -DKDSIM_BUILD_PEERS=ON (Release)
#   CONFIG     hold1e3 hold1e5 queue pingpong (default: hold1e3 queue pingpong; hold1e5 takes
#              longer, SimGrid actors at 1e5 several minutes)
# Environment:
#   CASES="kdsim-cb ns3-pq ..."   only these cases (default: every case that runs the workload)
#   JOBS=2                        run this many callgrind processes at once (default 1)
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR [hold1e3|hold1e5|queue|pingpong ...]}
shift
configs=("$@")
[ ${#configs[@]} -eq 0 ] && configs=(hold1e3 queue pingpong)
bin=$build/bench/peers/kdsim_peers_bench
[ -x "$bin" ] || { echo "no $bin: configure with -DKDSIM_BUILD_PEERS=ON and build kdsim_peers_bench" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind not installed (apt-get install valgrind)" >&2; exit 1; }
jobs=${JOBS:-1}

all_cases=$("$bin" --list | awk '{ print $1 }')
[ -n "${CASES:-}" ] && all_cases=$CASES

# config -> "workload n k1 k2"
spec() {
    case $1 in
        hold1e3) echo "hold 1000 100 200" ;;      # 1e5 and 2e5 events
        hold1e5) echo "hold 100000 2 4" ;;        # 2e5 and 4e5 events
        queue) echo "queue 100 200 400" ;;        # 4e4 and 8e4 events
        pingpong) echo "pingpong 2 20000 40000" ;; # 4e4 and 8e4 events
        *) echo "unknown config $1" >&2; exit 2 ;;
    esac
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One callgrind run; writes "Ir events" to $tmp/res.<tag>.
one() {
    local tag=$1 c=$2 w=$3 n=$4 k=$5 out="$tmp/cg.$1"
    if ! valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$bin" --one="$c" --workload="$w" --n="$n" --k="$k" >"$tmp/stdout.$tag" 2>"$tmp/log.$tag"; then
        echo "FAIL" >"$tmp/res.$tag"
        return 0
    fi
    local ir ev
    ir=$(awk '/^summary:/ { print $2 }' "$out")
    ev=$(sed -n 's/.* events=\([0-9]*\).*/\1/p' "$tmp/stdout.$tag")
    echo "$ir $ev" >"$tmp/res.$tag"
    rm -f "$out"
}

# Every (config, case) pair that the program accepts.
pairs=()
for cfg in "${configs[@]}"; do
    read -r w n k1 k2 <<<"$(spec "$cfg")"
    for c in $all_cases; do
        # a case that does not run this workload (e.g. ns3-list at 1e5) exits 2 at once
        if [ "$c" = ns3-list ] && [ "$n" -gt 10000 ] && [ "$w" = hold ]; then continue; fi
        if [ "$c" = sg-actors-exec ] && [ "$w" != queue ]; then continue; fi
        pairs+=("$cfg $c $w $n $k1 $k2")
    done
done

running=0
for p in "${pairs[@]}"; do
    read -r cfg c w n k1 k2 <<<"$p"
    for k in "$k1" "$k2"; do
        one "$cfg.$c.$k" "$c" "$w" "$n" "$k" &
        running=$((running + 1))
        if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
    done
done
wait

printf '%-9s %-15s %8s %8s %16s %16s %10s\n' config case K1 K2 Ir@K1 Ir@K2 Ir/event
for p in "${pairs[@]}"; do
    read -r cfg c w n k1 k2 <<<"$p"
    r1=$(cat "$tmp/res.$cfg.$c.$k1") r2=$(cat "$tmp/res.$cfg.$c.$k2")
    if [ "$r1" = FAIL ] || [ "$r2" = FAIL ]; then
        printf '%-9s %-15s %8s %8s %16s %16s %10s\n' "$cfg" "$c" "$k1" "$k2" - - FAILED
        sed -n '1,5p' "$tmp/log.$cfg.$c.$k1" >&2 || true
        continue
    fi
    read -r i1 e1 <<<"$r1"
    read -r i2 e2 <<<"$r2"
    per=$(awk -v a="$i1" -v b="$i2" -v x="$e1" -v y="$e2" 'BEGIN { printf "%.1f", (b - a) / (y - x) }')
    printf '%-9s %-15s %8s %8s %16s %16s %10s\n' "$cfg" "$c" "$k1" "$k2" "$i1" "$i2" "$per"
done
echo "(Ir/event = (Ir@K2 - Ir@K1) / (events@K2 - events@K1); events are model events)"
