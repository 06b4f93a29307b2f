#!/usr/bin/env bash
# Merged execs (issue 17) change no result: every shipped experiment (`kdsim experiments --dir
# scenarios`) and every reality case (`--dir scenarios/reality`), run with merging on and with
# it off (KDSIM_MERGE_EXECS=0), gives the same exit statuses and byte-identical JSON files.
# usage: merged_execs.sh KDSIM SOURCE_DIR WORK_DIR
set -euo pipefail
kdsim=$1 src=$2 work=$3
rm -rf "$work"
mkdir -p "$work/on" "$work/off"
status() { # MODE DIR: runs the experiments of DIR, prints the exit status
    local rc=0
    if [ "$1" = off ]; then
        KDSIM_MERGE_EXECS=0 "$kdsim" experiments --dir "$2" --brief --out "$work/off" >"$work/off.log" 2>&1 || rc=$?
    else
        env -u KDSIM_MERGE_EXECS "$kdsim" experiments --dir "$2" --brief --out "$work/on" >"$work/on.log" 2>&1 || rc=$?
    fi
    echo "$rc"
}
for d in "$src/scenarios" "$src/scenarios/reality"; do
    on=$(status on "$d")
    off=$(status off "$d")
    if [ "$on" != "$off" ]; then
        echo "FAIL: experiments --dir $d exit $on merged, $off unmerged"
        exit 1
    fi
done
n_on=$(find "$work/on" -name '*.json' | wc -l)
n_off=$(find "$work/off" -name '*.json' | wc -l)
if [ "$n_on" -eq 0 ] || [ "$n_on" != "$n_off" ]; then
    echo "FAIL: $n_on JSON files merged, $n_off unmerged"
    exit 1
fi
if ! diff -r "$work/on" "$work/off" >"$work/diff.txt"; then
    echo "FAIL: results differ with merged execs:"
    head -20 "$work/diff.txt"
    exit 1
fi
# The run trace shows every exec, interrupt and context slice with its times: the finest view of
# the interleavings. A build without trace hooks rejects --trace and skips this part.
traces=0
if "$kdsim" run --help 2>&1 | grep -q -- --trace; then
    for f in e2/yield-4k-probe e5/imx6qp-mtu-partial-sync e1/wg-g2h-softirq; do
        env -u KDSIM_MERGE_EXECS "$kdsim" run --quiet "$src/scenarios/$f.toml" --trace "$work/on.trace.json" \
            --trace-until 20ms >/dev/null 2>&1 || true
        KDSIM_MERGE_EXECS=0 "$kdsim" run --quiet "$src/scenarios/$f.toml" --trace "$work/off.trace.json" \
            --trace-until 20ms >/dev/null 2>&1 || true
        if [ ! -s "$work/on.trace.json" ] || ! cmp "$work/on.trace.json" "$work/off.trace.json"; then
            echo "FAIL: the trace of $f differs with merged execs (or was not written)"
            exit 1
        fi
        traces=$((traces + 1))
        rm -f "$work/on.trace.json" "$work/off.trace.json"
    done
fi
echo "merged and unmerged runs agree byte for byte on $n_on of $n_off JSON files and $traces traces"
