#!/usr/bin/env bash
# The sweep goal of issue 15: 200 E5-like points (rx buffer x rx strategy x board x link rate,
# 20 ms of simulated time each) run serially (-j 1), on the local cores (-j 2) and under MPI
# (mpirun -np 2, one point at a time per rank); prints wall and CPU time of each and checks that
# the three give byte-identical summaries and results files.   usage: bench/sweep_speed.sh [BUILD]
set -euo pipefail
build=${1:-build}
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
grid=(--set 'machine[0].nic.rx_buffer=1536B,2KiB,4KiB,9KiB,16KiB'
      --set 'machine[0].nic.rx_strategy=full-sync,partial-sync'
      --set 'machine[0].profile=x86/intel-icelake-server,arm64/cortex-a53,arm/cortex-a9-imx6qp,arm64/cortex-a72'
      --set 'link[0].rate=100Mbit/s,1Gbit/s,2.5Gbit/s,5Gbit/s,10Gbit/s'
      --set 'scenario.duration=20ms')
sweep=("$build/kdsim" sweep "$src/scenarios/e5/x86-mtu-partial-sync.toml" -q "${grid[@]}")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
TIMEFORMAT='%R %U %S'
measure() { # NAME COMMAND...: runs it, prints "NAME wall W s, CPU C s (user U + sys S)"
  local name=$1; shift
  local t; t=$( { time "$@" >"$work/$name.txt" 2>"$work/$name.err"; } 2>&1 ) || { cat "$work/$name.err"; exit 1; }
  read -r wall user sys <<<"$t"
  printf '%-9s wall %7.2f s, CPU %7.2f s (user %.2f + sys %.2f)\n' "$name" "$wall" "$(echo "$user + $sys" | bc)" "$user" "$sys"
}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
measure serial "${sweep[@]}" -j 1 --out "$work/serial"
measure j2 "${sweep[@]}" -j 2 --out "$work/j2"
measure mpi-np2 mpirun --allow-run-as-root --oversubscribe --mca btl self,vader -np 2 "${sweep[@]}" --out "$work/mpi"
for v in j2 mpi; do
  cmp -s "$work/serial.txt" "$work/${v/mpi/mpi-np2}.txt" && diff -rq "$work/serial" "$work/$v" >/dev/null \
    && echo "$v: summary and $(ls "$work/$v" | wc -l) files identical to the serial run" \
    || { echo "$v: DIFFERS from the serial run"; exit 1; }
done
tail -1 "$work/serial.txt" | grep -q . && grep '^RESULT' "$work/serial.txt"
