#!/usr/bin/env bash
# A signal during `kdsim run` leaves no hidden temporary output file, and a run killed by SIGKILL
# has its temporary file removed by the next run that writes the same path.
#   usage: signal_cleanup.sh KDSIM SCENARIO WORKDIR SIGNAL     (SIGNAL: INT, TERM, HUP or KILL)
# The run is held before its simulation deterministically: --json names a regular file (its
# temporary file is created at once) and --csv a FIFO without a reader, whose open() blocks.
set -u
set -m # job control: a background job would otherwise start with SIGINT ignored
kdsim=$1; scenario=$2; dir=$3; sig=$4
exec </dev/null
rm -rf "$dir"; mkdir -p "$dir"
mkfifo "$dir/fifo"
"$kdsim" run --quiet "$scenario" --json "$dir/out.json" --csv "$dir/fifo" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 500); do
  ls -a "$dir" | grep -q '^\.out\.json\.tmp\.' && break
  sleep 0.01
done
if ! ls -a "$dir" | grep -q '^\.out\.json\.tmp\.'; then echo "the run never created its temporary file"; kill -KILL $pid; exit 1; fi
kill -"$sig" $pid
for _ in $(seq 1 500); do kill -0 $pid 2>/dev/null || break; sleep 0.01; done
if kill -0 $pid 2>/dev/null; then echo "SIG$sig did not end the run"; kill -KILL $pid; wait $pid; exit 1; fi
wait $pid; status=$?
left=$(ls -A "$dir" | grep -v '^fifo$')
if [ "$sig" = KILL ]; then
  [ -n "$left" ] || { echo "SIGKILL cannot be caught, yet no temporary file was left: the test proves nothing"; exit 1; }
  "$kdsim" run --quiet "$scenario" --json "$dir/out.json" >/dev/null 2>&1 || { echo "the next run failed"; exit 1; }
  left=$(ls -A "$dir" | grep -v '^fifo$' | grep -v '^out\.json$')
  [ -f "$dir/out.json" ] || { echo "the next run did not write out.json"; exit 1; }
else
  want=$((128 + $(kill -l "$sig")))
  [ "$status" = "$want" ] || { echo "exit status $status, expected $want (ended by SIG$sig)"; exit 1; }
fi
if [ -n "$left" ]; then echo "left behind after SIG$sig: $left"; exit 1; fi
echo "ok: nothing left after SIG$sig"
