#!/usr/bin/env bash
# kdsim report refuses bad input with exit status 2, a message naming the file, and no HTML (nor
# temporary file) left behind.   usage: bad_input.sh KDSIM SOURCE_DIR
set -uo pipefail
kdsim=$1; src=$2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
expect="$src/tests/cli/expect.sh"
fail=0
cd "$src"
"$kdsim" run scenarios/e4/daif-built-out.toml --quiet --json "$work/now.json" >/dev/null || exit 1
# the same results, as an older kdsim would have labelled them
sed 's/"format_version": 3/"format_version": 2/' "$work/now.json" > "$work/old.json"
grep -q '"format_version": 2' "$work/old.json" || { echo "FAIL: could not make a format-2 file"; exit 1; }
"$expect" 2 "$work/old.json: format_version 2" --absent "$work/r.html" -- "$kdsim" report "$work/now.json" "$work/old.json" -o "$work/r.html" || fail=1
"$expect" 2 "this kdsim reads format 3" --absent "$work/r.html" -- "$kdsim" report "$work/now.json" "$work/old.json" -o "$work/r.html" || fail=1
"$expect" 2 "1 file(s) of format 3, e.g. $work/now.json" --absent "$work/r.html" -- "$kdsim" report "$work/now.json" "$work/old.json" -o "$work/r.html" || fail=1
echo '{"traceEvents": []}' > "$work/trace.json"
"$expect" 2 "$work/trace.json: error: format: expected \"kdsim-results\" or \"kdsim-sweep\", found none" --absent "$work/r.html" -- "$kdsim" report "$work/trace.json" -o "$work/r.html" || fail=1
echo '{"format": "kdsim-results",' > "$work/cut.json"
"$expect" 2 "$work/cut.json: error: not JSON" --absent "$work/r.html" -- "$kdsim" report "$work/cut.json" -o "$work/r.html" || fail=1
"$expect" 2 "$work/missing.json: error: no such file or directory" --absent "$work/r.html" -- "$kdsim" report "$work/missing.json" -o "$work/r.html" || fail=1
"$expect" 2 "kdsim: --out $work/no/r.html:" -- "$kdsim" report "$work/now.json" -o "$work/no/r.html" || fail=1
# an existing report is left as it was when the new one is refused
echo "previous" > "$work/keep.html"
"$kdsim" report "$work/now.json" "$work/old.json" -o "$work/keep.html" 2>/dev/null; rc=$?
[ "$rc" = 2 ] && [ "$(cat "$work/keep.html")" = previous ] || { echo "FAIL: a refused report changed keep.html (exit $rc)"; fail=1; }
exit $fail
