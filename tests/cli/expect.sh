#!/usr/bin/env bash
# Runs a command and checks its exit status, a text its output must contain, and files it must
# not have left behind.   usage: expect.sh STATUS PATTERN [--absent FILE]... -- COMMAND...
set -u
want_status=$1; pattern=$2; shift 2
absent=()
while [ "$1" != "--" ]; do
  case "$1" in
    --absent) absent+=("$2"); shift 2 ;;
    *) echo "expect.sh: bad option $1"; exit 99 ;;
  esac
done
shift
for f in "${absent[@]}"; do rm -f "$f"; done
out=$("$@" 2>&1); status=$?
fail=0
if [ "$status" != "$want_status" ]; then echo "exit status $status, expected $want_status"; fail=1; fi
if ! grep -qF -- "$pattern" <<<"$out"; then echo "output lacks: $pattern"; fail=1; fi
for f in "${absent[@]}"; do
  if [ -e "$f" ]; then echo "file left behind: $f"; fail=1; fi
  dir=$(dirname "$f"); base=$(basename "$f")
  if ls -a "$dir" 2>/dev/null | grep -q "^\.$base\.tmp"; then echo "temporary file left behind for $f"; fail=1; fi
done
if [ $fail = 1 ]; then echo "--- command: $*"; echo "--- output:"; echo "$out" | head -40; exit 1; fi
echo "ok: $*"
