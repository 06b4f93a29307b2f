#!/bin/sh
# run.sh KDSIM SOURCE_DIR BASELINE_DIR OUT_DIR: runs every shipped experiment into OUT_DIR and
# compares each baseline file with its namesake; then checks that one altered figure is caught.
set -eu
kdsim=$1 src=$2 baseline=$3 out=$4
rm -rf "$out" && mkdir -p "$out"
"$kdsim" experiments --dir "$src/scenarios" --brief --out "$out" >/dev/null
python3 "$src/tools/compare_results.py" "$baseline" "$out"
# the comparison must fail when one statistic differs by one
mkdir -p "$out/altered"
python3 - "$out/E4-daif-built-out.json" "$out/altered/E4-daif-built-out.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
next(s for s in j["statistics"] if s["path"].endswith("/hardirqs"))["value"] += 1
json.dump(j, open(sys.argv[2], "w"))
PY
mkdir -p "$out/one"
cp "$baseline/E4-daif-built-out.json" "$out/one/"
if python3 "$src/tools/compare_results.py" "$out/one" "$out/altered" >/dev/null; then
    echo "compare_results.py did not catch an altered hardirqs count" >&2
    exit 1
fi
echo "a changed figure is caught"
