#!/usr/bin/env bash
# kdsim sweep as a user runs it.   usage: sweep.sh CASE KDSIM SOURCE_DIR WORK_DIR
# Each case asserts what the sweep's definition implies (points, their order, which one fails),
# never figures copied from kdsim's output.
set -u
case_=$1; kdsim=$2; src=$3; work=$4/sweep-$1
rm -rf "$work"; mkdir -p "$work"
e5=$src/scenarios/e5/x86-mtu-partial-sync.toml
unsafe=$src/scenarios/e5-unsafe/imx6qp-short-sync.toml
fail() { echo "FAIL: $*"; exit 1; }
# 4 points: duration 2 ms or 10 ms x max_duration 5 ms or 20 ms; the grid varies the last key
# fastest, so point 2 is (10 ms, 5 ms): a duration above max_duration, refused by the loader.
grid=(--set 'scenario.duration=2ms,10ms' --set 'scenario.max_duration=5ms,20ms')

case $case_ in
failed-point-is-kept)
  "$kdsim" sweep "$e5" "${grid[@]}" -j 2 --out "$work/out" >"$work/stdout" 2>"$work/stderr"; rc=$?
  [ $rc = 1 ] || fail "exit $rc, expected 1 (a point failed)"
  grep -q "RESULT: 3 of 4 point(s) ok, 1 failed" "$work/stdout" || fail "no verdict line for 3 ok + 1 failed"
  grep -q "point 2 (failed): .*duration: expected at most max_duration" "$work/stdout" || fail "point 2's reason missing"
  for i in 0 1 3; do
    [ -f "$work/out/point-$i.json" ] || fail "point-$i.json missing"
  done
  [ ! -e "$work/out/point-2.json" ] || fail "the failed point has a results file"
  grep -q '"key": "scenario.duration"' "$work/out/point-3.json" || fail "point 3 does not record its values"
  python3 - "$work/out" <<'EOF' || fail "sweep.json"
import json, sys
s = json.load(open(sys.argv[1] + "/sweep.json"))
assert [p["status"] for p in s["points"]] == ["ok", "ok", "failed", "ok"], s["points"]
assert [[v["value"] for v in p["set"]] for p in s["points"]] == [["2ms", "5ms"], ["2ms", "20ms"], ["10ms", "5ms"], ["10ms", "20ms"]]
r = json.load(open(sys.argv[1] + "/point-3.json"))
assert abs(r["simulated_us"] - 10000) < 1e-6, r["simulated_us"]   # duration 10 ms
r = json.load(open(sys.argv[1] + "/point-0.json"))
assert abs(r["simulated_us"] - 2000) < 1e-6, r["simulated_us"]
EOF
  ;;
violated-invariant-is-kept)
  # short-sync reads stale payloads (e5-unsafe); partial-sync of the same buffers does not
  "$kdsim" sweep "$unsafe" --set 'machine[0].nic.rx_strategy=short-sync,partial-sync' \
      --set 'scenario.duration=20ms' -j 2 >"$work/stdout" 2>&1; rc=$?
  [ $rc = 1 ] || fail "exit $rc, expected 1"
  grep -q "point 0 (findings): .*stale" "$work/stdout" || fail "point 0's findings missing"
  grep -q "RESULT: 1 of 2 point(s) ok, 1 with violated invariants" "$work/stdout" || fail "verdict"
  ;;
replications-give-mean-and-interval)
  # module_load draws its sample of module sizes from the seed, so the seeds give different runs
  e2=$src/scenarios/e2/yield-4k-alone.toml
  "$kdsim" sweep "$e2" --set 'machine[0].workload[0].sample=20,40' --seeds 1..3 --out "$work/out" \
      --metric modprobe.bytes_hashed --metric modprobe.modules >"$work/stdout" 2>&1 || fail "sweep exit $?"
  python3 - "$work" <<'EOF' || fail "interval"
import json, math, statistics, sys
w = sys.argv[1]
s = json.load(open(w + "/out/sweep.json"))
assert len(s["points"]) == 6 and [p["seed"] for p in s["points"]] == [1, 2, 3, 1, 2, 3]
text = open(w + "/stdout").read()
t = 4.302652729911275  # Student t, 97.5 % quantile, 2 degrees of freedom
varied = False
for c in range(2):
    metrics = [{m["key"]: m["value"] for m in json.load(open(w + "/out/" + p["results"]))["workloads"][0]["metrics"]}
               for p in s["points"][3 * c: 3 * c + 3]]
    xs = [m["bytes_hashed"] for m in metrics]
    varied |= len(set(xs)) > 1
    mean, hw = statistics.mean(xs), t * statistics.stdev(xs) / math.sqrt(3)
    want = "%.6g ± %.6g" % (mean, hw)
    assert want in text, (want, text)
    assert "%d ± 0" % (20 * (c + 1)) in text, text  # the module count does not vary: a zero-width interval
assert varied, "every seed gave the same value: the test shows nothing"
EOF
  ;;
db-stores-every-point-that-ran)
  # the grid's point 2 fails (duration above max_duration): 3 of the 4 points are stored
  "$kdsim" sweep "$e5" "${grid[@]}" --db "$work/r.sqlite" >"$work/stdout" 2>&1; rc=$?
  [ $rc = 1 ] || fail "exit $rc, expected 1"
  "$kdsim" db "$work/r.sqlite" --format json >"$work/runs.json" || fail "kdsim db"
  python3 - "$work/runs.json" <<'EOF' || fail "stored runs"
import json, sys
runs = json.load(open(sys.argv[1]))
runs = runs["runs"] if isinstance(runs, dict) else runs
assert len(runs) == 3, len(runs)
assert sorted(tuple(r["overrides"]) for r in runs) == sorted([
    ("scenario.duration=2ms", "scenario.max_duration=5ms"), ("scenario.duration=2ms", "scenario.max_duration=20ms"),
    ("scenario.duration=10ms", "scenario.max_duration=20ms")]), runs
assert all(r["command"] == "sweep" for r in runs)
EOF
  echo "not a database" >"$work/bad.sqlite"
  "$kdsim" sweep "$e5" "${grid[@]}" --db "$work/bad.sqlite" --out "$work/none" >"$work/stdout" 2>&1; rc=$?
  [ $rc = 2 ] || fail "a file that is not a kdsim database: exit $rc, expected 2"
  [ ! -e "$work/none" ] || fail "wrote --out for a refused --db"
  ;;
parallel-equals-serial)
  "$kdsim" sweep "$e5" "${grid[@]}" --seeds 1..2 -j 1 --out "$work/a" >"$work/a.txt" 2>&1
  "$kdsim" sweep "$e5" "${grid[@]}" --seeds 1..2 -j 2 --out "$work/b" >"$work/b.txt" 2>&1
  cmp "$work/a.txt" "$work/b.txt" || fail "summaries differ"
  diff -r "$work/a" "$work/b" || fail "files differ"
  [ "$(ls "$work/a" | wc -l)" = 7 ] || fail "expected 6 results files (8 points, 2 failed) and sweep.json"
  ;;
mpi-equals-serial)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  "$kdsim" sweep "$e5" "${grid[@]}" --seeds 1..2 -j 1 --out "$work/serial" >"$work/serial.txt" 2>&1
  mpirun --allow-run-as-root --oversubscribe --mca btl self,vader -np 3 \
      "$kdsim" sweep "$e5" "${grid[@]}" --seeds 1..2 --out "$work/mpi" >"$work/mpi.txt" 2>"$work/mpi.err"
  cmp "$work/serial.txt" "$work/mpi.txt" || { cat "$work/mpi.err"; fail "summaries differ"; }
  diff -r "$work/serial" "$work/mpi" || fail "files differ"
  ;;
mpi-more-ranks-than-points)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  out=$(mpirun --allow-run-as-root --oversubscribe --mca btl self,vader -np 3 \
      "$kdsim" sweep "$e5" --set 'scenario.duration=2ms,3ms' --out "$work/out" 2>&1); rc=$?
  [ $rc != 0 ] || fail "accepted 3 ranks for 2 points"
  grep -q "mpirun started 3 ranks for 2 point(s)" <<<"$out" || fail "no message: $out"
  [ ! -e "$work/out" ] || fail "wrote $work/out"
  ;;
progress-silent-when-not-a-terminal)
  "$kdsim" run "$e5" >"$work/stdout" 2>"$work/stderr"; rc=$?
  [ $rc = 0 ] || fail "run exit $rc"
  [ ! -s "$work/stderr" ] || fail "stderr not empty: $(head -c 200 "$work/stderr")"
  "$kdsim" sweep "$e5" --set 'scenario.duration=2ms,3ms' >"$work/stdout" 2>"$work/stderr" || fail "sweep failed"
  [ ! -s "$work/stderr" ] || fail "sweep stderr not empty"
  # the control: on a terminal (script gives the command a pseudo-terminal) the line is there
  script -qec "$kdsim run $e5 --json $work/r.json" /dev/null >"$work/tty" 2>&1
  grep -q "events/s" "$work/tty" || fail "no progress line on a terminal"
  script -qec "$kdsim run --quiet $e5" /dev/null >"$work/tty-quiet" 2>&1
  ! grep -q "events/s" "$work/tty-quiet" || fail "--quiet shows progress"
  # a sweep on a terminal counts its points, up to the last
  script -qec "$kdsim sweep $e5 --set scenario.duration=2ms,3ms --out $work/sweep-tty" /dev/null >"$work/tty-sweep" 2>&1
  grep -q "kdsim sweep: 2/2 points done" "$work/tty-sweep" || fail "no sweep progress line on a terminal"
  script -qec "$kdsim sweep --quiet $e5 --set scenario.duration=2ms,3ms --out $work/sweep-tty-quiet" /dev/null >"$work/tty-sweep-quiet" 2>&1
  grep -q "2 point(s)" "$work/tty-sweep-quiet" || fail "sweep --quiet did not run"
  ! grep -q "points done" "$work/tty-sweep-quiet" || fail "sweep --quiet shows progress"
  ;;
*) fail "unknown case $case_" ;;
esac
echo "ok: $case_"
