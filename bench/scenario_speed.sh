#!/usr/bin/env bash
# Model-level speed of every shipped scenario: wall time (median of REPS runs) of
# `kdsim run --quiet` in timing and in functional mode, simulated time / wall time, model events
# per second, peak RSS; CPU time (user + system, getrusage via GNU time) beside wall time in timing
# mode; then instructions per model event with callgrind on a few scenarios.
#
# usage: bench/scenario_speed.sh [KDSIM_BIN] [SCENARIO.toml ...]
#   KDSIM_BIN  the kdsim binary (default: build/kdsim; a Release build for figures worth quoting)
#   SCENARIO   default: scenarios/*/*.toml except experiment.toml files
# Environment:
#   REPS=3                 runs per scenario and mode (the median wall time is reported)
#   PIN="taskset -c 1"     command prefix that pins each run ("" for none)
#   CALLGRIND="a.toml b.toml"  scenarios measured with callgrind (default: scenarios/e2/fixed-4k.toml
#                          and scenarios/softirq-simd/x86-bh-disable-syscall.toml; "" skips)
#   CG_MODES="timing"      modes measured with callgrind ("timing functional" for both)
#   CG_MERGE="1"           KDSIM_MERGE_EXECS values measured with callgrind ("1 0": merged execs
#                          on and off, docs/performance.md)
#
# Simulated time and events come from the run's --json output (`simulated_us`, `events`: see
# docs/report-format.md); peak RSS from GNU time (%M, KiB). "x real time" is simulated seconds per
# wall second. Callgrind: "Ir/ev in run" counts only instructions inside
# kdsim::engine::Simulation::run (every event handler runs inside it; scenario loading, model
# assembly and reporting do not), divided by the run's events; "Ir/ev whole" divides the whole
# process's instructions by the same events.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${1:-build/kdsim}
shift || true
[ -x "$bin" ] || { echo "no kdsim binary at $bin (tools/build.sh builds build/kdsim)" >&2; exit 1; }
scen=("$@")
if [ ${#scen[@]} -eq 0 ]; then
    for f in scenarios/*/*.toml; do
        [ "$(basename "$f")" = experiment.toml ] || scen+=("$f")
    done
fi
reps=${REPS:-3}
pin=${PIN-taskset -c 1}
timebin=/usr/bin/time
[ -x "$timebin" ] || { echo "GNU time missing: apt-get install time" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

jget() { # key file -> number
    sed -n "s/.*\"$1\": *\([-0-9.eE+]*\).*/\1/p" "$2" | head -1
}
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# run MODE SCENARIO -> "wall_s rss_kib sim_us events rc cpu_s" (medians / max over REPS)
measure() {
    local mode=$1 f=$2 walls=() cpus=() rss=0 rc=0
    for ((r = 0; r < reps; r++)); do
        local t0 t1
        rm -f "$tmp/out.json"
        t0=$(date +%s.%N)
        set +e
        # CPU time: getrusage(RUSAGE_CHILDREN) of a subshell that runs only this, through bash's
        # `times` (ms resolution; GNU time's %U/%S have 10 ms)
        (
            $pin "$timebin" -f '%M' -o "$tmp/rss" "$bin" run --quiet --mode="$mode" --json "$tmp/out.json" \
                --root "$root" "$f" >/dev/null 2>"$tmp/err"
            rc=$?
            times >"$tmp/times"
            exit $rc
        )
        rc=$?
        set -e
        t1=$(date +%s.%N)
        walls+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')")
        local m
        m=$(tail -1 "$tmp/rss")
        ((m > rss)) && rss=$m
        # second line of `times`: children's user and system time, as 0m0.052s 0m0.010s
        cpus+=("$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, p, "m"); t += p[1] * 60 + p[2] } printf "%.3f", t }' "$tmp/times")")
    done
    local w c
    w=$(printf '%s\n' "${walls[@]}" | median)
    c=$(printf '%s\n' "${cpus[@]}" | median)
    [ -f "$tmp/out.json" ] || { echo "$w $rss - - $rc $c"; return; }
    echo "$w $rss $(jget simulated_us "$tmp/out.json") $(jget events "$tmp/out.json") $rc $c"
}

# The same scenario cut to 1 us of simulated time (its [scenario] duration replaced): what
# loading, model assembly and reporting cost, to subtract from the whole-process wall time.
cut_scenario() {
    awk 'BEGIN { s = 0 }
         /^\[scenario\]/ { print; print "duration = \"1 us\""; s = 1; next }
         /^\[/ { s = 0 }
         s && /^[ \t]*duration[ \t]*=/ { next }
         { print }' "$1" >"$tmp/cut.toml"
    echo "$tmp/cut.toml"
}

root=$(pwd)
w=52
printf "%-${w}s %8s %8s | %7s %7s %6s %7s %6s %6s | %7s %7s %6s %6s | %7s %7s %6s | %5s %s\n" scenario events "sim ms" \
    "tim ms" "start" "x real" "x real" "M ev/s" "RSS" "fun ms" "x real" "M ev/s" "RSS" "cpu ms" "x real" "M ev/s" "f/t" "exit"
printf "%-${w}s %8s %8s | %7s %7s %6s %7s %6s %6s | %7s %7s %6s %6s | %7s %7s %6s | %5s %s\n" "" "" "" \
    "whole" "ms" "whole" "run" "run" "MiB" "whole" "run" "run" "MiB" "whole" "cpu run" "cpu" "run" "t/f"
for f in "${scen[@]}"; do
    # The whole run and its 1 us cut alternate, one run of each at a time, so that a drift of this
    # machine's speed between blocks of runs does not enter their difference (the run's part).
    cut=$(cut_scenario "$f")
    tws=() tcs=() sws=() scs=() trss=0
    for ((k = 0; k < reps; k++)); do
        read -r w1 rss1 sim ev rc_t c1 <<<"$(reps=1 measure timing "$f")"
        [ "$sim" = - ] && break
        read -r w2 _ _ _ _ c2 <<<"$(reps=1 measure timing "$cut")"
        tws+=("$w1") tcs+=("$c1") sws+=("$w2") scs+=("$c2")
        ((rss1 > trss)) && trss=$rss1
    done
    tw=$(printf '%s\n' "${tws[@]}" | median) tc=$(printf '%s\n' "${tcs[@]}" | median)
    sw=$(printf '%s\n' "${sws[@]}" | median) sc=$(printf '%s\n' "${scs[@]}" | median)
    if [ "$sim" = - ]; then
        printf "%-${w}s  not run: exit %s: %s\n" "$f" "$rc_t" "$(head -1 "$tmp/err")"
        continue
    fi
    read -r fw frss sim_f ev_f rc_f _ <<<"$(measure functional "$f")"
    awk -v f="$f" -v w="$w" -v ev="$ev" -v sim="$sim" -v tw="$tw" -v trss="$trss" -v fw="$fw" -v frss="$frss" \
        -v sw="$sw" -v rct="$rc_t" -v rcf="$rc_f" -v evf="$ev_f" -v tc="$tc" -v sc="$sc" 'BEGIN {
        note = (evf != ev) ? sprintf(" (functional: %s events)", evf) : ""
        # The run part is whole - start-up; when that is under a fifth of the whole, it is lost in
        # the noise of two wall-time medians and is not shown ("-"); f/t then compares whole times ("w").
        tr = tw - sw; fr = fw - sw
        tok = tr >= 0.2 * tw; fok = fr >= 0.2 * fw
        xr = tok ? sprintf("%7.1f", (sim / 1e6) / tr) : sprintf("%7s", "-")
        er = tok ? sprintf("%6.2f", ev / tr / 1e6) : sprintf("%6s", "-")
        xf = fok ? sprintf("%7.2f", (sim / 1e6) / fr) : sprintf("%7s", "-")
        ef = fok ? sprintf("%6.2f", ev / fr / 1e6) : sprintf("%6s", "-")
        ft = (tok && fok) ? sprintf("%5.1f", fr / tr) : sprintf("%4.1fw", fw / tw)
        # CPU time of the run: timing whole - start-up, both in CPU seconds (same fifth rule)
        cr = tc - sc; cok = cr >= 0.2 * tc && cr > 0
        xc = cok ? sprintf("%7.1f", (sim / 1e6) / cr) : sprintf("%7s", "-")
        ec = cok ? sprintf("%6.2f", ev / cr / 1e6) : sprintf("%6s", "-")
        printf "%-" w "s %8d %8.1f | %7.1f %7.1f %6.1f %s %s %6.1f | %7.1f %s %s %6.1f | %7.1f %s %s | %s %s/%s%s\n",
            f, ev, sim / 1e3, tw * 1e3, sw * 1e3, (sim / 1e6) / tw, xr, er, trss / 1024,
            fw * 1e3, xf, ef, frss / 1024, tc * 1e3, xc, ec, ft, rct, rcf, note }'
done
echo "(tim ms / fun ms: median wall time of $reps runs of the whole process in timing / functional mode;"
echo " start ms: median wall of the same scenario cut to 1 us (loading, model assembly, report), its runs"
echo " alternating with the whole runs': the"
echo " start-up; run = whole - start; x real = simulated s / wall s; M ev/s = events / run wall s;"
echo " \"-\": run under a fifth of the whole, lost in the noise; RSS = max over runs (GNU time);"
echo " cpu ms: median CPU time (user + system, getrusage) of the timing runs; x real cpu run = simulated s"
echo " / CPU s of the run (whole - start-up's CPU time); M ev/s cpu = events / those CPU s;"
echo " f/t = functional run wall / timing run wall (\"w\": whole-process walls instead); exit = kdsim's exit"
echo " code, timing/functional: 1 = the scenario reports a failed invariant, by design)"

cg=${CALLGRIND-scenarios/e2/fixed-4k.toml scenarios/softirq-simd/x86-bh-disable-syscall.toml}
[ -z "$cg" ] && exit 0
command -v valgrind >/dev/null || { echo "valgrind not installed: callgrind part skipped" >&2; exit 0; }
echo
printf '%-44s %-10s %5s %9s %14s %14s %12s %12s\n' scenario mode merge events "Ir in run" "Ir whole" "Ir/ev in run" "Ir/ev whole"
for f in $cg; do
    for mode in ${CG_MODES:-timing}; do
    for merge in ${CG_MERGE:-1}; do
        set +e
        KDSIM_MERGE_EXECS=$merge valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.run" \
            --toggle-collect='kdsim::engine::Simulation::run*' \
            "$bin" run --quiet --mode="$mode" --json "$tmp/cg.json" "$f" >/dev/null 2>"$tmp/cg.log"
        KDSIM_MERGE_EXECS=$merge valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.all" \
            "$bin" run --quiet --mode="$mode" "$f" >/dev/null 2>>"$tmp/cg.log"
        set -e
        ir_run=$(awk '/^summary:/ { print $2 }' "$tmp/cg.run")
        ir_all=$(awk '/^summary:/ { print $2 }' "$tmp/cg.all")
        ev=$(jget events "$tmp/cg.json")
        awk -v f="$f" -v m="$mode" -v g="$merge" -v ev="$ev" -v a="$ir_run" -v b="$ir_all" 'BEGIN {
            printf "%-44s %-10s %5s %9d %14d %14d %12.1f %12.1f\n", f, m, g, ev, a, b, a / ev, b / ev }'
    done
    done
done
echo "(Ir in run: instructions executed inside kdsim::engine::Simulation::run, i.e. handling the events;"
echo " merge: KDSIM_MERGE_EXECS; events are the same either way, merged execs counted as the events they replace)"
